"""The house's shape, checked: domains meet only through public modules, and the import-linter
contracts in ``pyproject.toml`` really fail when a bad import is added (STYLE, "Shape")."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HUB = ROOT / "hub"
INFRASTRUCTURE = {"core", "models", "egress", "mcp", "ratelimit"}
DOMAINS = {
    p.name for p in HUB.iterdir() if p.is_dir() and (p / "__init__.py").exists()
} - INFRASTRUCTURE
ENTRY_POINTS = {"api.py", "app.py", "wiring.py", "cli"}

#: What any domain may import from another: its rules, its bodies, its dependency aliases.
PUBLIC_EVERYWHERE = {"service", "schemas", "deps"}
#: Further modules a domain offers to the others, by name (each one a deliberate public API).
PUBLIC_MODULES: dict[str, set[str]] = {
    "auth": {"caller", "key_format", "console_sessions"},
    "approvals": {"links"},
    "authz": {"decider", "throttle"},
    "audit": {"failures", "actions", "chain", "writer"},
    "grants": {"cache", "policy", "templates", "effective"},
    "credentials": {"vault", "rotation", "readiness", "constants", "exceptions"},
    "catalogs": {"canonical", "diff"},
    "deployments": {"bundle", "wirenames"},
    "principals": {"bootstrap"},
    "upstream": {"context", "target", "pinning", "calls", "tokens", "keeper"},
    "health": set(),
    "gateway": {"engine"},
}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return names


def _is_module(domain: str, name: str) -> bool:
    return (HUB / domain / f"{name}.py").exists() or (HUB / domain / name).is_dir()


def test_domains_meet_only_through_public_modules() -> None:
    offences = []
    for path in HUB.rglob("*.py"):
        own = path.relative_to(HUB).parts[0]
        if own in ENTRY_POINTS or own in INFRASTRUCTURE:
            continue
        for name in _imports(path):
            parts = name.split(".")
            if len(parts) < 3 or parts[0] != "hub" or parts[1] not in DOMAINS:
                continue
            other, module = parts[1], parts[2]
            if other == own or not _is_module(other, module):
                continue  # its own package, or a name re-exported by the other's __init__
            if module not in PUBLIC_EVERYWHERE | PUBLIC_MODULES.get(other, set()):
                offences.append(f"{path.relative_to(ROOT)} imports {name}")
    assert offences == []


def test_http_exception_is_raised_only_by_the_body_limit() -> None:
    """Domain code raises HubError; only the body-size middleware uses Starlette's exception
    (FastAPI re-raises it from body reading, turning anything else into a 400)."""
    allowed = {HUB / "core" / "middleware.py"}
    for path in HUB.rglob("*.py"):
        if path not in allowed:
            assert "HTTPException(" not in path.read_text(), path


def test_only_components_and_deps_read_app_state() -> None:
    """One typed ``Components`` object on the app: nothing else reads ``app.state``."""
    allowed = {HUB / "core" / "components.py", HUB / "core" / "deps.py", HUB / "app.py"}
    readers = {p for p in HUB.rglob("*.py") if "app.state" in p.read_text()}
    assert readers <= allowed


# --- the import-linter contracts fail when they should ------------------------------------

BAD_IMPORTS: list[tuple[str, str, str]] = [
    # (contract id, file to append to, the offending import)
    ("layers", "hub/core/canonical.py", "import hub.grants.policy"),
    ("layers", "hub/egress/urls.py", "import hub.mcp.wire"),
    ("layers", "hub/ratelimit/policy.py", "import hub.auth.caller"),
    ("acyclic", "hub/catalogs/diff.py", "import hub.deployments.wirenames"),
    ("pure-engine", "hub/gateway/engine/__init__.py", "import sqlalchemy"),
    ("pure-engine", "hub/sidecar/__init__.py", "import hub.models"),
    ("pure-engine", "hub/gateway/engine/__init__.py", "from hub.grants import repository"),
    ("console-services", "hub/console/approvals.py", "from hub.approvals import repository"),
    ("console-services", "hub/console/web.py", "import hub.models"),
]
CONTRACTS = sorted({contract for contract, _, _ in BAD_IMPORTS})


@pytest.fixture(scope="module")
def linted_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package and of the import-linter configuration, to break on purpose."""
    root = tmp_path_factory.mktemp("layering")
    shutil.copytree(HUB, root / "hub", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")  # the contracts, verbatim
    return root


def _lint(root: Path, contract: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    lint = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [
            str(lint),
            "--no-logo",
            "--no-cache",
            "--contract",
            contract,
            str(root / "pyproject.toml"),
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("contract", CONTRACTS)
def test_contract_holds_on_the_real_tree(linted_copy: Path, contract: str) -> None:
    result = _lint(linted_copy, contract)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(("contract", "target", "statement"), BAD_IMPORTS)
def test_contract_breaks_on_one_bad_import(
    linted_copy: Path, tmp_path: Path, contract: str, target: str, statement: str
) -> None:
    broken = tmp_path / "tree"
    shutil.copytree(linted_copy, broken)
    path = broken / target
    path.write_text(path.read_text() + f"\n{statement}  # deliberately bad\n")
    result = _lint(broken, contract)
    assert result.returncode != 0, result.stdout
    assert "BROKEN" in result.stdout
