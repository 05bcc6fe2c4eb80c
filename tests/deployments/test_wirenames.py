"""Wire names: valid, unique, stable, and unchanged when a server is added (DESIGN §13)."""

from __future__ import annotations

from hub.deployments.wirenames import WIRE_NAME, assign_wire_names


def _tools(prefix: str, n: int) -> list[str]:
    names = [f"{prefix}.tool.{i}" for i in range(n - 4)]
    names += ["x" * 100, "search", "a b", "a_b"]  # long, plain, space, collides with "a b"
    return names


def test_two_hundred_tools_get_unique_valid_names() -> None:
    servers = [("linear", _tools("lin", 100)), ("git-hub", _tools("gh", 100))]
    names = assign_wire_names(servers)
    assert len(names) == 200
    assert len(set(names.values())) == 200
    assert all(WIRE_NAME.match(n) for n in names.values())
    assert names[("linear", "search")] == "linear__search"
    assert names[("linear", "a_b")] == "linear__a_b"
    assert names[("linear", "a b")].startswith("linear__a_b_")
    assert len(names[("linear", "x" * 100)]) == 64
    assert names[("linear", "lin.tool.0")].startswith("linear__lin_tool_0_")


def test_names_are_stable_and_adding_a_server_renames_nothing() -> None:
    base = [("a", ["x__y", "z"]), ("b", ["q"])]
    first = assign_wire_names(base)
    assert first == assign_wire_names(base)
    # "a__x__y" and "a__x" + "__y" from a new server "a__x" collide: the newcomer yields
    grown = assign_wire_names([*base, ("a__x", ["y", "q"])])
    for key, name in first.items():
        assert grown[key] == name
    assert grown[("a__x", "y")] != first[("a", "x__y")]
    assert WIRE_NAME.match(grown[("a__x", "y")])
