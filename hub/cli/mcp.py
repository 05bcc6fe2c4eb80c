"""``hub mcp``: operator commands running the hub's own MCP client (issue 7; DESIGN §7).

- ``hub mcp probe URL [--bearer-env VAR] [--protocol-version V] [--json] [--timeout S]`` discovers
  the server and prints its era, protocol version, server info and tools (a table, or JSON).
- ``hub mcp call URL TOOL --arguments JSON [--bearer-env VAR] [--protocol-version V]
  [--timeout S]`` discovers the tool's definition (for its ``Mcp-Param-*`` headers), calls it and
  prints the raw result JSON. Exit 1 when the result has ``isError: true``.

Both build the fetcher from the hub settings (``HUB_ALLOW_LOOPBACK`` and the other egress
settings apply, as in the server) and pin every request to the URL's own origin. The bearer is
read from the environment variable named by ``--bearer-env``, never from the command line (where
``ps`` and shell history would show it). A failure prints the hub's fixed message and its
``reason`` on stderr and exits 2. Text from the server is printed with control characters
escaped, so a hostile server cannot drive the operator's terminal.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer

from hub import __version__
from hub.core.invisible import hidden

if TYPE_CHECKING:  # imported when a command runs: every other `hub` command starts faster
    from hub.core.settings import Settings
    from hub.mcp import CallResult, DiscoveryResult, McpClient

__all__ = ["mcp_app"]

T = TypeVar("T")
CLIENT_INFO = {"name": "mcp-hub-cli", "version": __version__}

mcp_app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Probe and call MCP servers with the hub's client.",
)

BEARER_ENV = typer.Option(
    None, "--bearer-env", metavar="VAR", help="Environment variable holding the bearer token."
)
PROTOCOL_VERSION = typer.Option(
    None, "--protocol-version", metavar="V", help="Offer exactly this version (implies its era)."
)
TIMEOUT = typer.Option(
    None, "--timeout", min=0.1, metavar="S", help="Total deadline in seconds (default: settings)."
)


def _die(message: str) -> NoReturn:
    typer.echo(f"hub mcp: {message}", err=True)
    raise typer.Exit(2)


def _settings() -> Settings:
    from hub.core.settings import ConfigError, get_settings

    try:
        return get_settings()
    except ConfigError as exc:
        _die(str(exc))


def _bearer(variable: str | None) -> str | None:
    if variable is None:
        return None
    value = os.environ.get(variable)
    if not value:
        _die(f"the environment variable {variable} is not set")
    return value


def _check_version(version: str | None) -> None:
    from hub.mcp.wire import era_of

    if version is not None:
        try:
            era_of(version)
        except ValueError as exc:
            _die(str(exc))


def _run(settings: Settings, work: Callable[[McpClient], Awaitable[T]]) -> T:
    """Run ``work`` with a fresh fetcher; egress and MCP failures exit 2 with their reason."""
    from hub.egress import EgressConfig, EgressError, Fetcher
    from hub.mcp import McpClient
    from hub.mcp.errors import McpError

    async def main() -> T:
        async with Fetcher(EgressConfig.from_settings(settings)) as fetcher:
            return await work(McpClient(fetcher, client_info=CLIENT_INFO))

    failure: McpError | EgressError | None = None
    try:
        return asyncio.run(main())
    except (McpError, EgressError) as exc:
        failure = exc
    code = getattr(failure, "code", None)
    detail = "" if code is None else f", code: {code}"
    _die(f"{failure.message} (reason: {failure.reason}{detail})")


def _safe(value: Any, width: int | None = None) -> str:
    """Server text for a terminal: control and format characters escaped, maybe shortened."""
    text = "".join(ascii(ch)[1:-1] if hidden(ch) else ch for ch in str(value))
    if width is not None and len(text) > width:
        text = text[: width - 1] + "…"
    return text


def _parameters(tool: Mapping[str, Any]) -> str:
    schema = tool.get("inputSchema") or {}
    properties = schema.get("properties")
    required = schema.get("required")
    required = set(required) if isinstance(required, list) else set()
    if not isinstance(properties, dict):
        return ""
    return ", ".join(f"{name}{'*' if name in required else ''}" for name in properties)


def _table(found: DiscoveryResult) -> str:
    info = found.server_info
    lines = [
        f"era       {found.era}",
        f"protocol  {_safe(found.protocol_version)}",
        f"server    {_safe(info.get('name', '?'))} {_safe(info.get('version', ''))}".rstrip(),
        f"tools     {len(found.tools)} (dropped {found.dropped_total})",
    ]
    if found.tools:
        rows = [
            (
                _safe(tool["name"], 40),
                _safe(_parameters(tool), 40),
                _safe(str(tool.get("description") or "").partition("\n")[0], 60),
            )
            for tool in found.tools
        ]
        widths = [max(len(row[i]) for row in [("NAME", "PARAMETERS", ""), *rows]) for i in (0, 1)]
        lines.append("")
        for name, params, description in [("NAME", "PARAMETERS", "DESCRIPTION"), *rows]:
            lines.append(f"{name:<{widths[0]}}  {params:<{widths[1]}}  {description}".rstrip())
    for dropped in found.dropped_tools:
        lines.append(f"dropped   {_safe(dropped['name'], 40)}: {dropped['reason']}")
    if found.dropped_total > len(found.dropped_tools):
        lines.append(f"dropped   … and {found.dropped_total - len(found.dropped_tools)} more")
    return "\n".join(lines)


def _as_json(found: DiscoveryResult) -> str:
    return json.dumps(
        {
            "era": found.era,
            "protocol_version": found.protocol_version,
            "server_info": found.server_info,
            "capabilities": found.capabilities,
            "instructions": found.instructions,
            "tools": found.tools,
            "dropped_tools": found.dropped_tools,
            "dropped_tools_total": found.dropped_total,
        },
        indent=2,
    )


@mcp_app.command()
def probe(
    url: str = typer.Argument(
        ..., metavar="URL", help="The MCP endpoint (https; http only to loopback)."
    ),
    bearer_env: str | None = BEARER_ENV,
    protocol_version: str | None = PROTOCOL_VERSION,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    timeout: float | None = TIMEOUT,
) -> None:
    """Discover a server: its era, protocol version, server info and tools."""
    _check_version(protocol_version)
    settings = _settings()
    bearer = _bearer(bearer_env)
    deadline = timeout or settings.discovery_timeout_s

    async def work(client: McpClient) -> DiscoveryResult:
        return await client.discover(
            url, pin=url, bearer=bearer, deadline_s=deadline, protocol_version=protocol_version
        )

    found = _run(settings, work)
    typer.echo(_as_json(found) if as_json else _table(found))


class _Dropped(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@mcp_app.command()
def call(
    url: str = typer.Argument(
        ..., metavar="URL", help="The MCP endpoint (https; http only to loopback)."
    ),
    tool_name: str = typer.Argument(..., metavar="TOOL", help="The tool to call."),
    arguments: str = typer.Option("{}", "--arguments", metavar="JSON", help="A JSON object."),
    bearer_env: str | None = BEARER_ENV,
    protocol_version: str | None = PROTOCOL_VERSION,
    timeout: float | None = TIMEOUT,
) -> None:
    """Call one tool and print the raw result JSON (exit 1 when it is an error result)."""
    _check_version(protocol_version)
    from hub.core import portable_json
    from hub.mcp.server.dispatcher import MAX_ARGUMENTS_DEPTH

    try:  # as strictly as the hub's endpoint reads an agent's: what it would send is JSON
        parsed = portable_json.loads(arguments, max_depth=MAX_ARGUMENTS_DEPTH)
    except portable_json.NotPortableJson as refused:
        _die(f"--arguments must be a JSON object{portable_json.why(refused)}")
    if not isinstance(parsed, dict):
        _die("--arguments must be a JSON object")
    settings = _settings()
    bearer = _bearer(bearer_env)

    async def work(client: McpClient) -> CallResult:
        found = await client.discover(
            url,
            pin=url,
            bearer=bearer,
            deadline_s=timeout or settings.discovery_timeout_s,
            protocol_version=protocol_version,
        )
        tool = next((t for t in found.tools if t["name"] == tool_name), None)
        dropped = next((d for d in found.dropped_tools if d["name"] == tool_name), None)
        if tool is None and dropped is not None:
            raise _Dropped(str(dropped["reason"]))
        return await client.call_tool(
            url,
            tool_name,
            parsed,
            pin=url,
            bearer=bearer,
            deadline_s=timeout or settings.tool_call_timeout_s,
            tool=tool,
            protocol_version=found.protocol_version,
        )

    try:
        done = _run(settings, work)
    except _Dropped as exc:
        reason = exc.reason
        _die(f"the server's definition of this tool is invalid, so it was dropped ({reason})")
    typer.echo(json.dumps(done.result, indent=2))
    if done.is_error:
        raise typer.Exit(1)
