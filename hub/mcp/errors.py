"""The MCP client's own failures: one exception, one stable ``reason`` per failure (DESIGN §5, §13).

Failures of the HTTP exchange itself (deadline, pin, caps, redirects, TLS…) are the fetcher's
:class:`~hub.egress.EgressError` subclasses and reach the caller unchanged. Everything the client
decides about what came back is an :class:`McpError` whose ``reason`` is one of:

- ``unauthorized``: the upstream answered 401 or 403 (:attr:`McpError.status` says which, and
  :attr:`McpError.challenge` holds its ``Bearer`` challenge, if any: what an OAuth client needs
  to find the authorization server or to step up its scopes);
- ``not_mcp``: an HTML or other non-JSON, non-SSE body (and, for now, 2024-11-05 HTTP+SSE-only
  servers, DESIGN §7);
- ``handshake_failed``: a non-2xx or JSON-RPC error answer to ``initialize`` / ``server/discover``,
  an unsupported protocol version, or a session refused again after re-initializing;
- ``protocol_error``: malformed JSON-RPC, an SSE stream that ended without the answer, a non-2xx
  or JSON-RPC error answer to ``tools/list``;
- ``invalid_result``: a result of the wrong shape (including an unknown ``resultType``, and
  ``input_required``, which the hub does not fulfil yet);
- ``duplicate_tool``: two tools of one server share a name;
- ``tool_error``: ``tools/call`` was answered with a JSON-RPC error (unknown tool, bad params…);
  :attr:`McpError.code` carries the JSON-RPC code so the gateway can map it, and
  :attr:`McpError.upstream_message` the upstream's own message, whole (the response's byte cap
  bounds it), for the gateway to redact and *then* cut to 1,000 characters (a cut first could
  split a secret the redaction would then miss) — it is never part of ``str()`` or ``repr()``;
- ``input_required``: a ``tools/call`` answered with an MRTR ``input_required`` result, which the
  hub cannot fulfil (it offers the server nothing to ask for).

Rules, as for the egress errors: the message is fixed hub text (never upstream text, status or
headers, never the bearer), and the client raises these outside the ``except`` block that saw a
library or parsing exception, so neither ``__cause__`` nor ``__context__`` carries upstream bytes.
"""

from __future__ import annotations

from typing import Final, Literal

from hub.mcp.challenge import BearerChallenge

__all__ = ["REASONS", "McpError", "Reason", "settled"]

Reason = Literal[
    "unauthorized",
    "not_mcp",
    "handshake_failed",
    "protocol_error",
    "invalid_result",
    "duplicate_tool",
    "tool_error",
    "input_required",
]

_MESSAGES: Final[dict[Reason, str]] = {
    "unauthorized": "the MCP server refused the credentials",
    "not_mcp": "the URL does not answer as an MCP server",
    "handshake_failed": "the MCP server did not complete the handshake",
    "protocol_error": "the MCP server broke the protocol",
    "invalid_result": "the MCP server returned a result of the wrong shape",
    "duplicate_tool": "the MCP server lists two tools with the same name",
    "tool_error": "the MCP server answered the tool call with an error",
    "input_required": "the MCP server asked for input the hub cannot provide",
}

REASONS: Final[frozenset[str]] = frozenset(_MESSAGES)


class McpError(Exception):
    """An MCP-level failure: a stable ``reason``, the hub's fixed ``message``, maybe a ``code``.

    ``code`` is set only for ``tool_error``: the JSON-RPC error code of the upstream answer.
    """

    def __init__(
        self,
        reason: Reason,
        *,
        code: int | None = None,
        status: int | None = None,
        challenge: BearerChallenge | None = None,
        upstream_message: str | None = None,
    ) -> None:
        self.reason: Reason = reason
        self.message = _MESSAGES[reason]
        self.code = code
        self.status = status
        self.challenge = challenge
        self.upstream_message = upstream_message or None
        # Internal: set once the server's era is certain, so era negotiation stops falling back.
        self.settled = False
        super().__init__(self.message)

    def __repr__(self) -> str:
        code = "" if self.code is None else f", code={self.code}"
        return f"McpError(reason={self.reason!r}, message={self.message!r}{code})"


def settled(error: McpError) -> McpError:
    """Mark ``error`` as coming from a server whose era is certain (no fallback to the other)."""
    error.settled = True
    return error
