"""Load from wrk (C, one thread), when it is on PATH: the same closed loop as :mod:`bench._load`
(N keep-alive connections, a fixed duration) for far less CPU. On a two-core machine the load
generator shares the cores with the servers it measures; the Python generator costs a
noticeable part of one (more for the faster bare route), wrk a small fraction.

wrk reports the rate, the latency percentiles and the count of responses outside 2xx/3xx; a
non-zero count, or socket errors, fail the run as a wrong status does with the Python
generator. Its request is given by a Lua script of the method, headers and body.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from bench._load import LoadResult

__all__ = ["available", "run_wrk"]

_RATE = re.compile(r"^Requests/sec:\s+([\d.]+)", re.MULTILINE)
_TOTAL = re.compile(r"^\s*(\d+) requests in", re.MULTILINE)
_PERCENTILE = re.compile(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", re.MULTILINE)
_NON_2XX = re.compile(r"Non-2xx or 3xx responses: (\d+)")
_SOCKET_ERRORS = re.compile(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def available() -> str | None:
    """wrk's path, or None."""
    return shutil.which("wrk")


def _lua(method: str, headers: dict[str, str], body: object) -> str:
    lines = [f"wrk.method = {json.dumps(method)}"]
    for name, value in headers.items():
        lines.append(f"wrk.headers[{json.dumps(name)}] = {json.dumps(value)}")
    if body is not None:
        lines.append('wrk.headers["content-type"] = "application/json"')
        lines.append(f"wrk.body = {json.dumps(json.dumps(body))}")
    return "\n".join(lines) + "\n"


def run_wrk(
    wrk: str,
    port: int,
    method: str,
    path: str,
    *,
    headers: dict[str, str],
    body: object,
    connections: int,
    seconds: float,
) -> LoadResult:
    """One wrk run against 127.0.0.1:``port``; its rate, p50 and p99 (no per-request list)."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "request.lua"
        script.write_text(_lua(method, headers, body))
        done = subprocess.run(  # noqa: S603 - wrk from PATH, on loopback
            [
                wrk,
                "-t1",
                f"-c{connections}",
                f"-d{max(1, round(seconds))}s",
                "--latency",
                "-s",
                str(script),
                f"http://127.0.0.1:{port}{path}",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
    out = done.stdout
    rate, total = _RATE.search(out), _TOTAL.search(out)
    if rate is None or total is None:
        raise RuntimeError(f"wrk: unexpected output: {out[-1000:]}")
    result = LoadResult(seconds=seconds, completed=int(total.group(1)))
    result.measured_rate = float(rate.group(1))
    for quantile, value, unit in _PERCENTILE.findall(out):
        result.quantiles[int(quantile) / 100] = float(value) * _UNITS[unit]
    wrong = _NON_2XX.search(out)
    if wrong is not None:
        result.statuses[0] = int(wrong.group(1))  # "not 2xx/3xx": the caller refuses the run
    errors = _SOCKET_ERRORS.search(out)
    if errors is not None:
        result.errors = sum(int(n) for n in errors.groups())
    return result
