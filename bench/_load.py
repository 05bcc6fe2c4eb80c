"""A small HTTP/1.1 load generator: N keep-alive connections, each sending one request in a loop.

Raw asyncio streams, not an HTTP client library, so the generator costs as little CPU as possible
on a machine it shares with the server under test: the request bytes are built once, and a
response is read as a header block plus ``Content-Length`` bytes (the servers measured here always
send one). Every connection runs closed-loop (send, wait for the whole answer, send again) for a
fixed duration after a short warm-up that is not counted.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field

__all__ = ["LoadResult", "build_request", "run_load"]


@dataclass
class LoadResult:
    seconds: float
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    #: every response, warm-up and late ones included (what the server did meanwhile)
    completed: int = 0
    #: CPU seconds the server used over the whole run, when the caller measured it
    cpu: float = 0.0
    #: a generator that keeps no per-request list (wrk) gives its rate and quantiles instead
    measured_rate: float | None = None
    quantiles: dict[float, float] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        if self.measured_rate is not None:
            return self.measured_rate
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        """The ``q`` quantile (0 to 1) of the latencies, in seconds."""
        if q in self.quantiles:
            return self.quantiles[q]
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def build_request(
    method: str, path: str, *, headers: dict[str, str] | None = None, body: object = None
) -> bytes:
    """The bytes of one keep-alive request (a JSON body when ``body`` is given)."""
    lines = [f"{method} {path} HTTP/1.1", "host: 127.0.0.1"]
    payload = b""
    if body is not None:
        payload = json.dumps(body).encode()
        lines += ["content-type: application/json", f"content-length: {len(payload)}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
            break
    if length:
        await reader.readexactly(length)
    return status


async def _connection(
    port: int, request: bytes, warmup_until: float, until: float, result: LoadResult
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while True:
            started = time.perf_counter()
            if started >= until:
                return
            writer.write(request)
            status = await _read_response(reader)
            finished = time.perf_counter()
            result.completed += 1
            if started >= warmup_until and finished <= until:
                result.latencies.append(finished - started)
                result.statuses[status] = result.statuses.get(status, 0) + 1
    except (OSError, asyncio.IncompleteReadError, ValueError):
        result.errors += 1
    finally:
        writer.close()
        await writer.wait_closed()


async def run_load(
    port: int, request: bytes, *, connections: int, seconds: float, warmup: float = 0.5
) -> LoadResult:
    """Drive ``request`` at 127.0.0.1:``port`` over ``connections`` connections for ``seconds``."""
    start = time.perf_counter()
    warmup_until = start + warmup
    until = warmup_until + seconds
    result = LoadResult(seconds=seconds)
    await asyncio.gather(
        *(_connection(port, request, warmup_until, until, result) for _ in range(connections))
    )
    return result
