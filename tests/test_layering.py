"""Domains import each other only through ``service`` and ``schemas`` (STYLE, "Shape")."""

from __future__ import annotations

import ast
from pathlib import Path

HUB = Path(__file__).resolve().parents[1] / "hub"
DOMAINS = {p.name for p in HUB.iterdir() if p.is_dir() and (p / "__init__.py").exists()} - {
    "core",
    "models",
    "egress",
    "mcp",
}
PRIVATE = ("repository", "endpoints")


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


def test_no_domain_reaches_into_another_domains_repository_or_endpoints() -> None:
    offences = []
    for domain in DOMAINS:
        for path in (HUB / domain).rglob("*.py"):
            for name in _imports(path):
                parts = name.split(".")
                if (
                    len(parts) >= 3
                    and parts[0] == "hub"
                    and parts[1] in DOMAINS
                    and parts[1] != domain
                    and parts[2] in PRIVATE
                ):
                    offences.append(f"{path.relative_to(HUB.parent)} imports {name}")
    assert offences == []


def test_http_exception_is_raised_only_by_the_body_limit() -> None:
    """Domain code raises HubError; only the body-size middleware uses Starlette's exception
    (FastAPI re-raises it from body reading, turning anything else into a 400)."""
    allowed = {HUB / "core" / "middleware.py"}
    for path in HUB.rglob("*.py"):
        if path not in allowed:
            assert "HTTPException(" not in path.read_text(), path
