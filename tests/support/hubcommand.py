"""``python -m hub.cli ARG...`` for tests that start the command many times (live ``hub serve``
processes, sidecars): the same command line, run by a fork of a process that imported the hub
once (:mod:`tests.support.forkserver`), instead of a fresh interpreter importing it for 1.5-3 s
each time.

What the command sees is what a fresh ``python -m hub.cli`` sees: its arguments, environment
(settings are read when a command runs, never at import: every live hub's own ``HUB_PORT`` and
database prove it), working directory, standard streams and exit code; SIGTERM, SIGINT and SIGHUP
sent to the returned process reach the command, so graceful shutdowns run as they would. The
server is started at the first use in a test process and stopped when the process exits.
"""

from __future__ import annotations

import atexit
import contextlib
import threading

from tests.support.forkserver import ForkServer, fork_server

__all__ = ["hub_argv"]

#: what the commands the tests run import when they start (``serve``, ``sidecar``,
#: ``bootstrap``): imported by the server so that no fork imports them again
PRELOAD = (
    "hub.app",
    "hub.cli.workers",
    "hub.core.components",
    "hub.core.workers",
    "hub.principals.bootstrap",
    "hub.sidecar.run",
    "uvicorn",
)

_lock = threading.Lock()
_server: ForkServer | None = None


def _started() -> ForkServer:
    global _server
    with _lock:
        if _server is None:
            stack = contextlib.ExitStack()
            _server = stack.enter_context(fork_server("hub.cli", *PRELOAD))
            atexit.register(stack.close)
        return _server


def hub_argv(*args: str) -> list[str]:
    """The command line that runs ``hub ARG...`` (as ``python -m hub.cli ARG...`` would)."""
    return [*_started().argv, *args]
