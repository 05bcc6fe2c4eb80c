"""A Redis server of the test's own, on a free loopback port (never the machine's shared one)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.deploy.serving import free_port

__all__ = ["OwnRedis", "own_redis", "shared_redis_url"]

#: The machine's Redis (``.ci/run`` starts it); these tests use a database number of their own.
SHARED_REDIS_URL = "redis://127.0.0.1:6379/5"


def shared_redis_url() -> str:
    """The machine's Redis; skipped locally when it does not answer, a failure in CI
    (``HUB_TEST_REQUIRE_REDIS``, set by ``.ci/run`` after starting it)."""
    import redis

    client = redis.Redis.from_url(SHARED_REDIS_URL, socket_connect_timeout=1)
    try:
        client.ping()
    except redis.RedisError as exc:
        if os.environ.get("HUB_TEST_REQUIRE_REDIS", "") not in ("", "0", "false"):
            pytest.fail(f"Redis is required (HUB_TEST_REQUIRE_REDIS) but: {exc!r}")
        pytest.skip("no Redis on 127.0.0.1:6379 (.ci/run starts one)")
    finally:
        client.close()
    return SHARED_REDIS_URL


@dataclass
class OwnRedis:
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@contextlib.contextmanager
def own_redis(tmp_path: Path, port: int | None = None) -> Iterator[OwnRedis]:
    """A ``redis-server`` on ``port`` (default: a free one), stopped at the end."""
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("HUB_TEST_REQUIRE_REDIS", "") not in ("", "0", "false"):
            pytest.fail("redis-server is required (HUB_TEST_REQUIRE_REDIS) but not installed")
        pytest.skip("redis-server is not installed")
    port = port or free_port()
    proc = subprocess.Popen(
        [
            *(binary, "--port", str(port), "--bind", "127.0.0.1"),
            *("--save", "", "--appendonly", "no", "--dir", str(tmp_path)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = OwnRedis(port, proc)
    import redis

    client = redis.Redis(port=port, socket_connect_timeout=0.5)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except redis.RedisError:
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
    client.close()
    try:
        yield server
    finally:
        if proc.poll() is None:
            server.stop()
