"""``hub sidecar``'s command line: a deployment name is looked up in the ``--tenant`` it runs
for, option values it cannot take are usage errors, and ``--help`` reads like every other
command's."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx2
from typer.testing import CliRunner

from hub.cli import app
from tests.gateway.support import Deployed, Upstream
from tests.peers.fixtures import SdkPeerStarter
from tests.sidecar.support import LiveHub, deploy_on, error_lines, live_hub, run_sidecar

NAME = "bot-github"


async def _named(hub: LiveHub, deployed: Deployed, name: str) -> str:
    """The deployment renamed ``name``; its tenant's slug."""
    admin = deployed.setup.admin.headers
    async with httpx2.AsyncClient(base_url=hub.url, timeout=30) as http:
        path = deployed.setup.url("deployments", deployed.deployment_id)
        assert (await http.patch(path, json={"name": name}, headers=admin)).is_success
        me = await http.get("/whoami", headers=deployed.agent.headers)
    slug = me.json()["data"]["tenant_slug"]
    assert isinstance(slug, str)
    return slug


async def test_a_name_is_looked_up_in_the_tenant_given_by_tenant(
    tmp_path: Path, sdk_peer: SdkPeerStarter
) -> None:
    """Two tenants each have a deployment named bot-github: ``--tenant beta`` with beta's agent
    serves beta's; with acme's agent it is one line naming the key's tenant, never acme's id
    looked for in beta (nor remembered as beta's)."""
    peer = await sdk_peer("stateless-json")
    with live_hub(tmp_path) as hub:
        acme = await deploy_on(hub, [Upstream("docs", peer.url)])
        beta = await deploy_on(hub, [Upstream("docs", peer.url)])
        acme_slug = await _named(hub, acme, NAME)
        beta_slug = await _named(hub, beta, NAME)

        def by_name(workdir: Path, key: str) -> subprocess.CompletedProcess[str]:
            workdir.mkdir()
            return run_sidecar(
                workdir, "--stdio", key=key, hub=hub.url, tenant=beta_slug, deployment=NAME
            )

        # stdin at EOF: it resolves the name, syncs the bundle once and ends cleanly
        served = by_name(tmp_path / "beta", beta.agent.key)
        assert served.returncode == 0, served.stderr
        assert beta.deployment_id in served.stderr
        assert acme.deployment_id not in served.stderr

        refused = by_name(tmp_path / "acme", acme.agent.key)
        assert refused.returncode == 1, refused.stderr
        assert "Traceback" not in refused.stderr
        lines = error_lines(refused)
        assert len(lines) == 1, refused.stderr
        assert f"tenant {acme_slug!r}" in lines[0], lines[0]
        assert f"--tenant {beta_slug}" in lines[0], lines[0]
        assert acme.deployment_id not in refused.stderr
        remembered = list((tmp_path / "acme" / "cache").glob("names-*.json"))
        assert all(acme.deployment_id not in p.read_text() for p in remembered)


def _usage_error(done: subprocess.CompletedProcess[str], option: str, value: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert option in done.stderr
    assert repr(value) in done.stderr


def test_an_unknown_log_level_is_a_usage_error(tmp_path: Path) -> None:
    done = run_sidecar(tmp_path, "--stdio", "--log-level", "bogus", key="hub_x")
    _usage_error(done, "--log-level", "bogus")


def test_an_unknown_mode_is_a_usage_error(tmp_path: Path) -> None:
    done = run_sidecar(tmp_path, "--stdio", "--mode", "sideways", key="hub_x")
    _usage_error(done, "--mode", "sideways")


def test_tenant_has_the_short_form_t(tmp_path: Path) -> None:
    """``-t`` is taken as ``--tenant`` (checked: not a slug), as in every tenant command."""
    done = run_sidecar(tmp_path, "--stdio", "-t", "Not_A_Slug", key="hub_x")
    assert done.returncode == 1, done.stderr
    assert error_lines(done) == ["hub sidecar: --tenant 'Not_A_Slug': not a tenant id or slug"]


def test_help_names_what_each_option_takes() -> None:
    done = CliRunner().invoke(app, ["sidecar", "--help"], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    options = {
        line.split()[1 if line.split()[0] == "*" else 0]: line
        for line in (row.strip("│ ") for row in done.output.splitlines())
        if line.startswith(("--", "* "))
    }
    expected = {
        "--hub": "URL",
        "--tenant": "-t  ",
        "--deployment": "DEPLOYMENT",
        "--listen": "HOST:PORT",
        "--token-file": "<file>",
        "--mode": "<relay|direct>",
        "--sync-interval": "SECONDS",
        "--hub-ca": "<file>",
        "--log-level": "<debug|info|warning|error>",
    }
    for option, shown in expected.items():
        assert shown in options[option], options[option]
    assert "SLUG" in options["--tenant"]
    assert "<str>" not in done.output
