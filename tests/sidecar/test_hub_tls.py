"""A hub whose TLS certificate the sidecar cannot verify is named as such: one line saying the
certificate's verification failed and why (as OpenSSL put it), and what to give the sidecar —
not "cannot connect", and at start not the advice about a deployment name never resolved. The
hub is a loopback TLS server in the test's process, its certificate issued by a trustme CA."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trustme

from hub.sidecar.config import SidecarConfig
from hub.sidecar.errors import HubUnreachable, SidecarError
from hub.sidecar.hubclient import HubClient
from hub.sidecar.names import resolved

TENANT = "00000000-0000-4000-8000-000000000001"
DEPLOYMENT = "00000000-0000-4000-8000-000000000002"


@contextlib.asynccontextmanager
async def _tls_hub(ca: trustme.CA, *names: str) -> AsyncIterator[int]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*names).configure_cert(context)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()  # the handshake is all the test needs

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=context)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


def _config(port: int, tmp_path: Path, ca_file: Path | None, deployment: str) -> SidecarConfig:
    return SidecarConfig.checked(
        hub=f"https://127.0.0.1:{port}",
        tenant=TENANT,
        deployment=deployment,
        agent_key="mcphub_test-key",
        cache_dir=tmp_path / "cache",
        hub_ca=str(ca_file) if ca_file else None,
    )


def _ca_file(ca: trustme.CA, path: Path) -> Path:
    ca.cert_pem.write_to_path(str(path))
    return path


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("wrong_ca", "unable to get local issuer certificate"),
        ("no_ca", "unable to get local issuer certificate"),
        ("other_name", "IP address mismatch"),
    ],
)
async def test_an_untrusted_hub_certificate_is_named(
    tmp_path: Path, case: str, reason: str
) -> None:
    hub_ca, other_ca = trustme.CA(), trustme.CA()
    names = ("localhost",) if case == "other_name" else ("127.0.0.1",)
    given = {
        "wrong_ca": _ca_file(other_ca, tmp_path / "other.pem"),
        "no_ca": None,
        "other_name": _ca_file(hub_ca, tmp_path / "hub.pem"),
    }[case]
    async with _tls_hub(hub_ca, *names) as port:
        hub = HubClient(_config(port, tmp_path, given, DEPLOYMENT))
        try:
            with pytest.raises(HubUnreachable) as failed:
                await hub.bundle(None)
        finally:
            await hub.aclose()
    message = str(failed.value)
    assert failed.value.tls is True
    assert message.startswith(f"https://127.0.0.1:{port}: TLS: certificate verify failed: ")
    assert reason in message
    assert "--hub-ca" in message
    assert "cannot connect" not in message


async def test_at_start_a_tls_failure_is_not_blamed_on_the_deployment_name(
    tmp_path: Path,
) -> None:
    hub_ca, other_ca = trustme.CA(), trustme.CA()
    async with _tls_hub(hub_ca, "127.0.0.1") as port:
        config = _config(port, tmp_path, _ca_file(other_ca, tmp_path / "other.pem"), "bot-peer")
        with pytest.raises(SidecarError) as failed:
            await resolved(config)
    message = str(failed.value)
    assert "TLS: certificate verify failed: unable to get local issuer certificate" in message
    assert "never resolved" not in message
