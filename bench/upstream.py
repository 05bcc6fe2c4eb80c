"""The gateway's upstream leg in instructions: the hub's MCP client vs plain httpx2, same peer.

Every allowed tool call ends in one ``tools/call`` to the upstream server, and that leg is about
a third of the hub's CPU per call. This bench counts what it costs in CPU instructions, which
do not move with the machine's load the way times do (valgrind's callgrind counts them; the peer
runs outside it). Three ways make the same call to one official SDK server
(``tests.peers.sdk_server``, stateless, JSON answers), each in a process of its own
(:mod:`bench._upstream_calls`): plain ``httpx2`` (the baseline: the library the fetcher is built
on, nothing of ours), the egress ``fetcher`` (one operation per call) and the hub's MCP
``client``. Each runs ``FEW`` and ``MANY`` calls; the difference over ``MANY - FEW`` is the cost
of one call, start-up left out. Printed: instructions per call and the ratio to httpx2.

Without valgrind, the same runs are timed by the process's CPU seconds instead (noisier; said so
in the output). A report, not a test: ``python -m bench upstream``.
"""

from __future__ import annotations

import re
import resource
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench._peer import REPO_ROOT, start_sdk_peer

FEW, MANY = 10, 110
WAYS = ("httpx2", "fetcher", "client")
TOOLS = [
    {
        "name": "echo",
        "description": "Returns its arguments.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    }
]
_COLLECTED = re.compile(r"Collected : (\d+)")


def _cost(way: str, url: str, count: int, valgrind: str | None) -> float:
    """Instructions (or, without valgrind, CPU seconds) of one process making ``count`` calls."""
    argv = [sys.executable, "-m", "bench._upstream_calls", way, url, str(count)]
    if valgrind is None:  # run one at a time: the children's CPU is summed as they exit
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, cwd=REPO_ROOT, check=True)  # noqa: S603 - our own module
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    done = subprocess.run(  # noqa: S603 - valgrind on our own interpreter and module
        [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"{way}: {done.stderr[-2000:]}")
    return float(found.group(1))


def main() -> None:
    valgrind = shutil.which("valgrind")
    with tempfile.TemporaryDirectory() as tmp:
        peer, url = start_sdk_peer(Path(tmp), TOOLS, mode="stateless-json", page_size=50)
        try:
            jobs = [(way, count) for way in WAYS for count in (FEW, MANY)]
            with ThreadPoolExecutor(max_workers=2 if valgrind else 1) as pool:
                costs = list(pool.map(lambda job: _cost(job[0], url, job[1], valgrind), jobs))
        finally:
            peer.terminate()
            peer.wait(timeout=10)
    per_call = {way: (costs[2 * i + 1] - costs[2 * i]) / (MANY - FEW) for i, way in enumerate(WAYS)}
    unit, scale = ("M instructions", 1e6) if valgrind else ("ms CPU (no valgrind)", 1e-3)
    print(f"one tools/call to the SDK peer, per call ({MANY} - {FEW} calls in each process)")
    print(f"{'way':<10} {unit:>22} {'vs httpx2':>10}")
    for way, cost in per_call.items():
        print(f"{way:<10} {cost / scale:>22.3f} {cost / per_call['httpx2']:>9.2f}x")


if __name__ == "__main__":
    main()
