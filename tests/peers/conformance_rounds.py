"""The input requests each interactive tool of :mod:`tests.peers.conformance_upstream` asks the
client for, round by round, as ``@modelcontextprotocol/conformance`` (0.2.0-alpha.12) scenarios
expect them (read from the suite's ``dist/index.js``): elicitation, sampling and roots requests,
keyed as the 2026-07-28 ``inputRequests`` are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ROUNDS", "rounds_of"]


def _elicit(message: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": required}
    return {
        "method": "elicitation/create",
        "params": {"message": message, "requestedSchema": schema},
    }


def _sample(text: str, max_tokens: int) -> dict[str, Any]:
    message = {"role": "user", "content": {"type": "text", "text": text}}
    return {
        "method": "sampling/createMessage",
        "params": {"messages": [message], "maxTokens": max_tokens},
    }


ROOTS = {"method": "roots/list", "params": {}}
NAME_PROPERTY = {"name": {"type": "string"}}

SEP1034_SCHEMA = {
    "name": {"type": "string", "description": "User name", "default": "John Doe"},
    "age": {"type": "integer", "description": "User age", "default": 30},
    "score": {"type": "number", "description": "User score", "default": 95.5},
    "status": {
        "type": "string",
        "description": "User status",
        "enum": ["active", "inactive", "pending"],
        "default": "active",
    },
    "verified": {"type": "boolean", "description": "Verification status", "default": True},
}
SEP1330_SCHEMA = {
    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
    "titledSingle": {
        "type": "string",
        "oneOf": [
            {"const": "value1", "title": "First Option"},
            {"const": "value2", "title": "Second Option"},
            {"const": "value3", "title": "Third Option"},
        ],
    },
    "legacyEnum": {
        "type": "string",
        "enum": ["opt1", "opt2", "opt3"],
        "enumNames": ["Option One", "Option Two", "Option Three"],
    },
    "untitledMulti": {
        "type": "array",
        "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
    },
    "titledMulti": {
        "type": "array",
        "items": {
            "anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"},
            ]
        },
    },
}

# Each interactive tool: its rounds of input requests (key → request), asked one round at a time
# (test_sampling and test_elicitation build theirs from their arguments, in _rounds).
ROUNDS: dict[str, list[dict[str, dict[str, Any]]]] = {
    "test_input_required_result_elicitation": [
        {"user_name": _elicit("What is your name?", NAME_PROPERTY, ["name"])}
    ],
    "test_input_required_result_sampling": [
        {"capital_question": _sample("What is the capital of France?", 100)}
    ],
    "test_input_required_result_list_roots": [{"client_roots": ROOTS}],
    "test_input_required_result_request_state": [
        {"confirm": _elicit("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])}
    ],
    "test_input_required_result_multiple_inputs": [
        {
            "user_name": _elicit("What is your name?", NAME_PROPERTY, ["name"]),
            "greeting": _sample("Generate a greeting", 50),
            "client_roots": ROOTS,
        }
    ],
    "test_input_required_result_multi_round": [
        {"step1": _elicit("Step 1: What is your name?", NAME_PROPERTY, ["name"])},
        {
            "step2": _elicit(
                "Step 2: What is your favorite color?", {"color": {"type": "string"}}, ["color"]
            )
        },
    ],
    "test_input_required_result_tampered_state": [
        {"confirm": _elicit("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])}
    ],
    "test_input_required_result_capabilities": [
        {
            "user_name": _elicit("What is your name?", NAME_PROPERTY, ["name"]),
            "greeting": _sample("Generate a greeting", 50),
            "client_roots": ROOTS,
        }
    ],
    "test_elicitation_sep1034_defaults": [
        {
            "elicitation": _elicit(
                "Please review and update the form fields with defaults", SEP1034_SCHEMA, []
            )
        }
    ],
    "test_elicitation_sep1330_enums": [
        {"elicitation": _elicit("Please select options from the enum fields", SEP1330_SCHEMA, [])}
    ],
    "test_streaming_elicitation": [
        {"elicitation": _elicit("Please provide a value", {"value": {"type": "string"}}, [])}
    ],
    "test_missing_capability": [{"sampling": _sample("Say hello", 20)}],
}
_USER_DETAILS_SCHEMA = {
    "username": {"type": "string", "description": "User's response"},
    "email": {"type": "string", "description": "User's email address"},
}


def rounds_of(name: str, arguments: Mapping[str, Any]) -> list[dict[str, dict[str, Any]]]:
    """The rounds of tool ``name``; ``test_sampling`` and ``test_elicitation`` build theirs from
    their arguments."""
    if name == "test_sampling":
        return [{"sampling": _sample(str(arguments.get("prompt", "")), 100)}]
    if name == "test_elicitation":
        message = str(arguments.get("message", ""))
        return [{"elicitation": _elicit(message, _USER_DETAILS_SCHEMA, ["username", "email"])}]
    return ROUNDS[name]
