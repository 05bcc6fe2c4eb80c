"""``hub serve --workers N``: N uvicorn servers in N processes, each on a socket of its own.

Why not uvicorn's own ``workers``: its workers share one listening socket, and asyncio accepts
every pending connection in one go, so a burst of connections (a client's pool, a load balancer
opening keep-alive connections) lands on whichever worker woke first and stays there. Measured
here: 16 keep-alive connections, one worker at 84% CPU and the other idle. Each worker here binds
its own socket with ``SO_REUSEPORT`` and the kernel spreads new connections across them.

The supervisor binds the address first (with ``SO_REUSEPORT`` too, never listening), so a port
already in use fails at once and ``--port 0`` picks one port for every worker. Workers are
spawned (a fresh interpreter, as uvicorn does) and build their app from the factory; one that
dies is started again. SIGTERM or SIGINT is passed on as SIGTERM, and the supervisor waits for
every worker's graceful shutdown before it exits.

One ``/metrics`` for the port: a scrape reaches whichever worker the kernel picks, so each worker
reporting its own counters would make them jump back and forth between scrapes. The supervisor
makes a fresh directory and names it in ``PROMETHEUS_MULTIPROC_DIR`` before spawning, which
switches prometheus_client into its multiprocess mode in every worker: values are written to
files there and any worker's ``/metrics`` reads them all (:mod:`hub.core.metrics`). A worker that
dies keeps its counts (counters never go back); its live gauges are dropped
(``mark_process_dead``); the directory is removed when the supervisor exits.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

__all__ = ["run_workers"]

_RESTART_PAUSE_S = 1.0
#: prometheus_client's own switch to its multiprocess mode (read by the spawned workers)
METRICS_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


#: runs one server on the given listening sockets: ``(host, port, options, sockets=…)``
ServeOne = Callable[..., None]


def _serve_one(serve_one: ServeOne, host: str, port: int, options: dict[str, Any]) -> None:
    """One worker process: its own listening socket on the shared port, one uvicorn server."""
    serve_one(host, port, options, sockets=[_bind(host, port)])


def run_workers(
    serve_one: ServeOne, *, host: str, port: int, workers: int, options: dict[str, Any]
) -> int:
    """Run ``serve_one`` (a module-level function: it crosses into spawned processes) in
    ``workers`` processes; the exit status."""
    reserved = _bind(host, port)  # fail now if the port is taken; fixes the port for --port 0
    port = reserved.getsockname()[1]
    metrics_dir = tempfile.mkdtemp(prefix="hub-metrics-")
    previous_dir = os.environ.get(METRICS_DIR_VARIABLE)
    os.environ[METRICS_DIR_VARIABLE] = metrics_dir  # inherited by the spawned workers
    try:
        return _supervise(serve_one, host, port, workers, options, metrics_dir)
    finally:
        reserved.close()
        if previous_dir is None:
            os.environ.pop(METRICS_DIR_VARIABLE, None)
        else:
            os.environ[METRICS_DIR_VARIABLE] = previous_dir
        shutil.rmtree(metrics_dir, ignore_errors=True)


def _supervise(
    serve_one: ServeOne,
    host: str,
    port: int,
    workers: int,
    options: dict[str, Any],
    metrics_dir: str,
) -> int:
    from prometheus_client import multiprocess

    context = multiprocessing.get_context("spawn")
    stopping = False

    def start() -> multiprocessing.process.BaseProcess:
        process = context.Process(target=_serve_one, args=(serve_one, host, port, options))
        process.start()
        return process

    def stop(_signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for process in processes:
            if process.is_alive():
                process.terminate()  # SIGTERM: uvicorn's graceful shutdown

    processes = [start() for _ in range(workers)]
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        while not stopping:
            for index, process in enumerate(processes):
                process.join(timeout=0.5 / workers)
                if process.exitcode is not None and not stopping:
                    if process.pid is not None:  # its live gauges go; its counts stay
                        multiprocess.mark_process_dead(process.pid, metrics_dir)  # type: ignore[no-untyped-call]
                    time.sleep(_RESTART_PAUSE_S)  # a worker that cannot start must not spin
                    processes[index] = start()
        for process in processes:
            process.join()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0 if all(p.exitcode in (0, -signal.SIGTERM) for p in processes) else 1
