"""Unit tests: the base64 sentinel, ``x-mcp-header`` validation and ``Mcp-Param-*`` mirroring."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from hub.mcp.headers import (
    decode_header_value,
    encode_header_value,
    has_invalid_x_mcp_header,
    header_params,
    needs_encoding,
    param_headers,
)


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


# ------------------------------------------------------------------------------- sentinel
@pytest.mark.parametrize(
    "value",
    ["us-west1", "us west 1", "", "SELECT * FROM users", "my-hyphenated-tool", "a.b_c~!#"],
)
def test_header_safe_values_go_as_they_are(value: str) -> None:
    assert not needs_encoding(value)
    assert encode_header_value(value) == value


@pytest.mark.parametrize(
    "value",
    [
        "Hello, 世界",
        " padded ",
        " us-west1",
        "us-west1 ",
        "line1\nline2",
        "line1\r\nline2",
        "\tindented",
        "in\tside",
        "bell\x07",
        "del\x7f",
        "=?base64?aGk=?=",
        "=?BASE64?aGk=?=",
    ],
)
def test_unsafe_values_become_the_base64_sentinel(value: str) -> None:
    assert needs_encoding(value)
    encoded = encode_header_value(value)
    assert encoded == b64(value)
    assert encoded.isascii()
    assert encoded.isprintable()
    assert decode_header_value(encoded) == value


def test_decoding_a_plain_value_is_the_identity() -> None:
    assert decode_header_value("us-west1") == "us-west1"


# ------------------------------------------------------------------------------- validity
def schema(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def marked(kind: Any, name: Any = "Region") -> dict[str, Any]:
    return {"type": kind, "x-mcp-header": name}


def test_valid_markings_on_string_integer_boolean_properties() -> None:
    found = header_params(
        schema(
            region=marked("string"),
            priority=marked("integer", "Priority"),
            verbose=marked("boolean", "Verbose"),
            query={"type": "string"},
        )
    )
    assert found == [
        (("region",), "Region"),
        (("priority",), "Priority"),
        (("verbose",), "Verbose"),
    ]


def test_a_marking_nested_through_properties_only_is_valid() -> None:
    nested = schema(outer={"type": "object", "properties": {"inner": marked("string", "Inner")}})
    assert header_params(nested) == [(("outer", "inner"), "Inner")]


def test_a_property_named_x_mcp_header_is_not_a_marking() -> None:
    assert header_params(schema(**{"x-mcp-header": {"type": "object"}})) == []


def test_unmarked_schemas_and_odd_shapes_are_valid() -> None:
    assert header_params({"type": "object"}) == []
    assert header_params({"type": "object", "properties": {"a": True, "b": []}}) == []
    assert header_params({"type": "object", "enum": [{"x-mcp-header": "Data"}]}) == []


@pytest.mark.parametrize(
    ("case", "input_schema"),
    [
        ("empty name", schema(value=marked("string", ""))),
        ("space in name", schema(value=marked("string", "My Region"))),
        ("colon in name", schema(value=marked("string", "Region:Primary"))),
        ("non-ASCII name", schema(value=marked("string", "Région"))),
        ("control char in name", schema(value=marked("string", "Region\t1"))),
        ("CRLF in name", schema(value=marked("string", "Region\r\nX-Evil: 1"))),
        ("non-string name", schema(value=marked("string", 7))),
        ("number type", schema(score=marked("number", "Score"))),
        ("object type", schema(data=marked("object", "Data"))),
        ("array type", schema(items=marked("array", "Items"))),
        ("null type", schema(nil=marked("null", "Nil"))),
        ("type list", schema(value=marked(["string", "null"]))),
        ("no type", schema(value={"x-mcp-header": "Region"})),
        ("same name twice", schema(a=marked("string"), b=marked("string"))),
        (
            "names differing in case",
            schema(a=marked("string", "MyField"), b=marked("string", "myfield")),
        ),
        ("on the root", {"type": "object", "x-mcp-header": "Root"}),
        ("under items", schema(list={"type": "array", "items": marked("string")})),
        ("under prefixItems", schema(list={"type": "array", "prefixItems": [marked("string")]})),
        ("under anyOf", schema(v={"anyOf": [marked("string")]})),
        ("under oneOf", {"type": "object", "oneOf": [schema(v=marked("string"))]}),
        ("under allOf", {"type": "object", "allOf": [schema(v=marked("string"))]}),
        ("under not", schema(v={"not": marked("string")})),
        ("under if/then", {"type": "object", "if": schema(v=marked("string")), "then": {}}),
        ("under $defs (what $ref reaches)", {"type": "object", "$defs": {"r": marked("string")}}),
        (
            "under additionalProperties",
            {"type": "object", "additionalProperties": marked("string")},
        ),
        (
            "under patternProperties",
            {"type": "object", "patternProperties": {"^a": marked("string")}},
        ),
    ],
)
def test_invalid_markings(case: str, input_schema: dict[str, Any]) -> None:
    assert has_invalid_x_mcp_header(input_schema), case
    with pytest.raises(ValueError, match="x-mcp-header"):
        header_params(input_schema)


# ------------------------------------------------------------------------------- mirroring
TOOL: dict[str, Any] = {
    "name": "t",
    "inputSchema": schema(
        region=marked("string", "Region"),
        priority=marked("integer", "Priority"),
        verbose=marked("boolean", "Verbose"),
        debug=marked("boolean", "Debug"),
        note=marked("string", "Note"),
        where={"type": "object", "properties": {"zone": marked("string", "Zone")}},
        float_val={"type": "number"},
        query={"type": "string"},
    ),
}


def test_param_headers_mirror_marked_arguments_only() -> None:
    arguments = {
        "region": "us-west1",
        "priority": 42,
        "verbose": False,
        "debug": True,
        "where": {"zone": "b"},
        "float_val": 3.14,
        "query": "SELECT 1",
    }
    assert param_headers(TOOL, arguments) == {
        "Mcp-Param-Region": "us-west1",
        "Mcp-Param-Priority": "42",
        "Mcp-Param-Verbose": "false",
        "Mcp-Param-Debug": "true",
        "Mcp-Param-Zone": "b",
    }


def test_param_headers_omit_null_and_absent_values_and_encode_unsafe_strings() -> None:
    headers = param_headers(TOOL, {"region": " padded ", "priority": None, "note": "Hello, 世界"})
    assert headers == {"Mcp-Param-Region": b64(" padded "), "Mcp-Param-Note": b64("Hello, 世界")}


def test_param_headers_skip_values_of_the_wrong_type() -> None:
    headers = param_headers(TOOL, {"region": {"not": "a string"}, "priority": 7.0, "where": "x"})
    assert headers == {"Mcp-Param-Priority": "7"}


def test_no_tool_definition_means_no_param_headers() -> None:
    assert param_headers(None, {"region": "x"}) == {}
    assert param_headers({"name": "t"}, {"region": "x"}) == {}


def test_a_tool_with_invalid_markings_cannot_be_mirrored() -> None:
    bad = {"name": "t", "inputSchema": schema(score=marked("number", "Score"))}
    with pytest.raises(ValueError, match="x-mcp-header"):
        param_headers(bad, {"score": 1})
