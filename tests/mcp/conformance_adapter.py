"""The MCP conformance suite's client command, over ``hub mcp probe`` and ``hub mcp call``.

The runner (``tests.peers.conformance``) starts a mock server per scenario and runs
``<command> <server-url>``; this module is that command::

    env HUB_ALLOW_LOOPBACK=true python -m tests.mcp.conformance_adapter http://localhost:PORT/mcp

(the mock listens on loopback, so the hub's egress must allow it). It reads:

- ``MCP_CONFORMANCE_PROTOCOL_VERSION``: passed as ``--protocol-version``, so the client speaks
  the scenario's wire (≤ 2025-11-25: the handshake; 2026-07-28: per-request ``_meta``);
- ``MCP_CONFORMANCE_CONTEXT``: JSON scenario data; its ``toolCalls`` (``[{name, arguments}]``,
  e.g. ``http-custom-headers``) are the calls to make;
- ``MCP_CONFORMANCE_SCENARIO``: only echoed on stderr, for the run's logs.

It runs ``hub mcp probe URL --json`` and then ``hub mcp call`` for each context tool call, or,
without one, for every tool the probe kept, with arguments made up from the tool's required
properties (``tools_call``'s ``add_numbers``, ``http-standard-headers``' tools,
``http-invalid-tool-headers``' one valid tool; dropped tools are never called). The commands
run in this process through the typer app, exactly as ``hub mcp …`` would run them. The exit
code is the worst of theirs.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from typing import Any

import typer

from hub.cli.mcp import mcp_app

SAMPLE_VALUES: dict[str, Any] = {
    "string": "sample",
    "integer": 1,
    "number": 2,
    "boolean": True,
    "array": [],
    "object": {},
}


def sample_arguments(tool: dict[str, Any]) -> dict[str, Any]:
    """Arguments for a tool: a sample value for each required property of a simple type."""
    schema = tool.get("inputSchema") or {}
    properties = schema.get("properties") or {}
    required = schema.get("required") or []
    arguments: dict[str, Any] = {}
    for name in required:
        kind = (properties.get(name) or {}).get("type")
        if isinstance(kind, str) and kind in SAMPLE_VALUES:
            arguments[name] = SAMPLE_VALUES[kind]
    return arguments


def hub_mcp(*args: str) -> tuple[int, str]:
    """Run ``hub mcp <args>`` in this process; its exit code and stdout (stderr passes through)."""
    command = typer.main.get_command(mcp_app)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = command.main(args=list(args), prog_name="hub mcp", standalone_mode=False)
    return (code if isinstance(code, int) else 0), out.getvalue()


def main(argv: list[str]) -> int:
    url = argv[-1]
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "?")
    sys.stderr.write(f"conformance adapter: scenario {scenario}, version {version}\n")
    version_args = ["--protocol-version", version] if version else []

    code, out = hub_mcp("probe", url, "--json", *version_args)
    sys.stdout.write(out)
    if code != 0:
        return code
    found = json.loads(out)
    calls = context.get("toolCalls") or [
        {"name": tool["name"], "arguments": sample_arguments(tool)} for tool in found["tools"]
    ]
    worst = 0
    for call in calls:
        arguments = json.dumps(call.get("arguments") or {})
        code, out = hub_mcp("call", url, call["name"], "--arguments", arguments, *version_args)
        sys.stdout.write(out)
        worst = max(worst, code)
    return worst


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
