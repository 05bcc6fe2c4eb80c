"""The closed vocabulary of audit actions (:mod:`hub.audit.actions`), checked against the code.

Every ``record``/``record_for``/``record_failure`` call (and the helpers that forward an action)
passes an ``Action`` member, never a string; every authenticated route's name is an action, since
a refused or failed request is recorded under its route's name.
"""

from __future__ import annotations

import ast
from pathlib import Path

from fastapi import FastAPI

from hub.audit.actions import Action, action_of_route
from tests.support.route_world import app_routes

HUB = Path(__file__).resolve().parents[2] / "hub"
RECORDERS = {"record", "record_for", "record_failure", "_audit"}
#: Routes that answer without authentication: no caller, so never audited.
PUBLIC = {
    "healthz",
    "readyz",
    "metrics",
    "openapi",
    "swagger_ui_html",
    "swagger_ui_redirect",
    "redoc_html",
    "docs_asset",
}


def _called_name(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _action_arguments(tree: ast.AST) -> list[tuple[int, ast.expr]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called_name(node) in RECORDERS:
            for keyword in node.keywords:
                if keyword.arg == "action":
                    found.append((node.lineno, keyword.value))
            found.extend(
                (node.lineno, arg)
                for arg in node.args
                if isinstance(arg, ast.Constant)
                or (isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name))
            )
    return found


def test_no_action_is_a_string_literal() -> None:
    offences = []
    calls = 0
    for path in HUB.rglob("*.py"):
        for line, value in _action_arguments(ast.parse(path.read_text())):
            calls += 1
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                offences.append(f"{path.relative_to(HUB.parent)}:{line} {value.value!r}")
            if (
                isinstance(value, ast.Attribute)
                and isinstance(value.value, ast.Name)
                and value.value.id == "Action"
            ):
                assert value.attr in Action.__members__, f"{path}:{line}"
    assert offences == []
    assert calls > 20  # the walk really sees the recording calls


def test_every_authenticated_route_name_is_an_action(app: FastAPI) -> None:
    names = set(app_routes(app)) - PUBLIC
    missing = sorted(name for name in names if action_of_route(name) is Action.REQUEST)
    assert missing == []


def test_actions_are_noun_dot_verb_and_unique() -> None:
    values = [a.value for a in Action]
    assert len(values) == len(set(values))
    for value in values:
        assert value == "whoami" or value == "request" or value.count(".") == 1, value
