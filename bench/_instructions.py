"""A server process's CPU instructions per request, counted by callgrind around a window of calls.

Times and CPU seconds on this shared two-core machine move by half again within one session
(stop 37 saw the bare proxy's CPU per call go from 1.16 to 2.06 ms), so a change of a few percent
in the hub's own work cannot be seen in them. Instructions do not move with the machine's load:
valgrind's callgrind counts them, the same for the same code and inputs.

:func:`instructions_per_call` starts the server under ``valgrind --tool=callgrind`` with
instrumentation off (start-up runs at a few times native speed, not fifty), lets the caller set
up and warm up its calls, switches instrumentation on with ``callgrind_control``, makes ``COUNT``
calls (sequential, one client outside valgrind), waits ``SETTLE_S`` for the work a call leaves
behind (the audit rows written after the answer), switches it off and dumps; then the next
setup's window, in the same process. Each count is its window's total over ``COUNT``; what
the idle server does in the window (uvicorn's tick, the job runner's polls) is in it too, well
under 0.5% of it at this count.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from bench._serving import free_port, stop, wait_healthy

__all__ = ["COUNT", "Setup", "instructions_per_call", "valgrind_present"]

COUNT = 200
WARMUP = 30
SETTLE_S = 0.5
STARTUP_S = 300.0
_TOTALS = re.compile(r"^(?:summary|totals): (\d+)", re.MULTILINE)

Call = Callable[[], Awaitable[None]]
#: given the server's base URL: the call to count, ready to make, and what closes it after
Setup = Callable[[str], Awaitable[tuple[Call, Callable[[], Awaitable[None]]]]]


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} is not installed")
    return found


def valgrind_present() -> bool:
    return shutil.which("valgrind") is not None and shutil.which("callgrind_control") is not None


def _control(pid: int, *args: str) -> None:
    subprocess.run(  # noqa: S603 - valgrind's own tool on our own child
        [_tool("callgrind_control"), *args, str(pid)], check=True, capture_output=True, timeout=60
    )


async def _windows(pid: int, base: str, setups: Sequence[Setup]) -> None:
    for setup in setups:
        call, close = await setup(base)
        try:
            for _ in range(WARMUP):
                await call()
            await asyncio.sleep(SETTLE_S)
            _control(pid, "-i", "on")
            for _ in range(COUNT):
                await call()
            await asyncio.sleep(SETTLE_S)
            _control(pid, "-i", "off")
            _control(pid, "-d")  # a dump of its own (``….N``), and the counters zeroed
        finally:
            await close()


def _dumped(workdir: Path, stem: str, pid: int) -> list[int]:
    """The totals of each dump of process ``pid``, in order (its file ends in its number)."""
    numbered = []
    for path in workdir.glob(f"{stem}.{pid}.*"):
        totals = _TOTALS.findall(path.read_text())
        if totals:
            numbered.append((int(path.suffix[1:]), max(int(t) for t in totals)))
    return [total for _, total in sorted(numbered)]


def instructions_per_call(
    argv: list[str],
    env: dict[str, str],
    cwd: Path,
    workdir: Path,
    name: str,
    setups: Sequence[Setup],
) -> list[float]:
    """Instructions per call of the server ``argv`` (given ``--port``), one count for each of
    ``setups``, each over ``COUNT`` calls in a window of its own (see the module docstring)."""
    port = free_port()
    stem = f"{name}.callgrind"
    log = workdir / f"{name}-valgrind.log"
    valgrind = [_tool("valgrind"), "--tool=callgrind", "--instr-atstart=no"]
    with log.open("w") as sink:
        process = subprocess.Popen(  # noqa: S603 - valgrind on our own interpreter and module
            [*valgrind, f"--callgrind-out-file={workdir / stem}.%p", *argv, "--port", str(port)],
            cwd=cwd,
            env=env,
            stdout=sink,
            stderr=sink,
        )
    try:
        wait_healthy(process, port, log, f"{name} under valgrind", startup_s=STARTUP_S, poll_s=0.5)
        asyncio.run(_windows(process.pid, f"http://127.0.0.1:{port}", setups))
        totals = _dumped(workdir, stem, process.pid)
        if len(totals) != len(setups):
            raise RuntimeError(f"callgrind wrote {len(totals)} dumps for {name}, not {len(setups)}")
        return [total / COUNT for total in totals]
    finally:
        stop(process, grace_s=60)
