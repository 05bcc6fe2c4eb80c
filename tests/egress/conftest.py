"""Egress test fixtures: a trustme CA, loopback upstreams, fetchers closed after each test."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

import pytest
import trustme

from hub.egress import EgressConfig, Fetcher
from tests.egress.support import Respond, Upstream


class StartUpstream(Protocol):
    def __call__(
        self, respond: Respond, *, tls_names: tuple[str, ...] = ()
    ) -> Awaitable[Upstream]: ...


MakeFetcher = Callable[..., Fetcher]


@pytest.fixture(scope="session")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="session")
def ca_file(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path: Path = tmp_path_factory.mktemp("egress-ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return path


def server_tls(ca: trustme.CA, *names: str) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*names).configure_cert(context)
    return context


@pytest.fixture
async def start_upstream(ca: trustme.CA) -> AsyncIterator[StartUpstream]:
    started: list[Upstream] = []

    async def start(respond: Respond, *, tls_names: tuple[str, ...] = ()) -> Upstream:
        context = server_tls(ca, *tls_names) if tls_names else None
        upstream = await Upstream(respond, ssl_context=context).start()
        started.append(upstream)
        return upstream

    yield start
    for upstream in started:
        await upstream.close()


@pytest.fixture
async def make_fetcher(ca_file: Path) -> AsyncIterator[MakeFetcher]:
    """``make_fetcher(resolver=…, dialer=…, **config)``; trusts the test CA unless overridden."""
    made: list[Fetcher] = []

    def make(*, resolver: Any = None, dialer: Any = None, **overrides: Any) -> Fetcher:
        overrides.setdefault("tls_ca_file", ca_file)
        fetcher = Fetcher(EgressConfig(**overrides), resolver=resolver, dialer=dialer)
        made.append(fetcher)
        return fetcher

    yield make
    for fetcher in made:
        await fetcher.aclose()
