"""The upstream call path shared by discovery, catalogs, servers, the gateway and OAuth.

Resolve a target (static URL checks, the credential if any, the pin), then run one MCP operation
against it with the credential decrypted only for the call that sends it, under one deadline:

- :mod:`~hub.upstream.context` — :class:`UpstreamContext`: the MCP client, keyring, egress policy
  and deadlines one replica uses for every upstream call;
- :mod:`~hub.upstream.target` — :class:`Target` and :func:`resolve_target` (400 / 404 / 422 before
  any I/O);
- :mod:`~hub.upstream.pinning` — which origin a credential may be sent to (DESIGN §5 "Pin");
- :mod:`~hub.upstream.tokens` — :func:`with_fresh_credential`: an OAuth credential refreshed when
  due, one refresh and one retry on an upstream 401, ``insufficient_scope`` recorded (the
  :class:`TokenKeeper` doing the OAuth part is plugged in by the wiring);
- :mod:`~hub.upstream.calls` — discovery and ``tools/call`` against a resolved target.
"""

from hub.upstream.calls import call_tool, discover
from hub.upstream.context import UpstreamContext
from hub.upstream.keeper import TokenKeeper
from hub.upstream.target import Target, resolve_keyless, resolve_target
from hub.upstream.tokens import InsufficientScope, TokenUnavailable, with_fresh_credential

__all__ = [
    "InsufficientScope",
    "Target",
    "TokenKeeper",
    "TokenUnavailable",
    "UpstreamContext",
    "call_tool",
    "discover",
    "resolve_keyless",
    "resolve_target",
    "with_fresh_credential",
]
