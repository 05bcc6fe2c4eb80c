"""Results and listed tools as agents receive them (DESIGN §10.1, §10.2 step 6, §15).

- **Verbatim**: an upstream result passes as it came (content blocks, ``structuredContent``,
  ``isError``), after redaction (:mod:`~hub.gateway.engine.redaction`).
- **The hub's namespace**: keys under ``io.mcphub/`` in the result's, each block's and each listed
  tool's ``_meta`` are the hub's; an upstream's are stripped before the hub adds its own. So is
  the upstream's ``io.modelcontextprotocol/serverInfo`` (2026-07-28): the server the agent talks
  to is the hub's endpoint or a sidecar, which names itself.
- **Size**: a result over ``HUB_MAX_TOOL_RESULT_BYTES`` (serialised) has its text blocks cut and
  its other blocks dropped to fit, marked ``_meta["io.mcphub/truncated"] = {"original_bytes"}``;
  when fitting would remove or alter the ``structuredContent`` of a tool that declares an
  ``outputSchema``, the result is ``upstream_failed`` with reason ``result_too_large`` instead (a
  client validating against the schema must not get something else).
- **Older agents**: for a legacy-era agent a non-object-root ``outputSchema`` is removed from the
  listed tool, and a non-object ``structuredContent`` from results (its JSON stays as a text
  block), since those revisions require objects; so is a 2026-07-28 upstream's result envelope
  (``resultType``, ``ttlMs``, ``cacheScope``), which those revisions do not have.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from hub.gateway.engine.errors import error_result
from hub.mcp.wire import SERVER_INFO_META_KEY

__all__ = [
    "APPROVAL_META",
    "HUB_META_PREFIX",
    "MODERN_RESULT_KEYS",
    "TRUNCATED_META",
    "ResultTooLarge",
    "fit",
    "for_legacy_result",
    "listed_tool",
    "size_of",
    "strip_hub_meta",
    "upstream_failure",
]

HUB_META_PREFIX: Final = "io.mcphub/"
APPROVAL_META: Final = "io.mcphub/approval"
TRUNCATED_META: Final = "io.mcphub/truncated"

UPSTREAM_MESSAGES: Final[Mapping[str, str]] = {
    "redirect_refused": "the tool's server redirected; redirects are not followed",
    "origin_refused": "the tool's server is outside the origin its credential may be sent to",
    "destination_refused": "the tool's server is at a destination the hub does not reach",
    "response_too_large": "the tool's server answered with more than the hub accepts",
    "result_too_large": "the tool's result is too large to return without altering it",
    "timeout": "the tool's server did not answer in time",
    "connect_failed": "the hub could not connect to the tool's server",
    "tls_failed": "the tool's server failed TLS verification",
    "unauthorized": "the tool's server refused the hub's credential",
    "not_mcp": "the tool's server did not answer as an MCP server",
    "protocol_error": "the tool's server broke the MCP protocol",
    "handshake_failed": "the tool's server refused the MCP handshake",
    "invalid_result": "the tool's server answered with a result of the wrong shape",
    "invalid_secret": "the tool's credential is not a valid header value",
    "credential_unavailable": "the tool's credential cannot be used",
    "token_refresh_failed": "the tool's OAuth token could not be refreshed just now",
    "input_required_unsupported": "the tool asked for input the hub cannot provide",
    "insufficient_scope": "the tool's server needs a credential with more scopes",
    "tool_changed_unconfirmed": (
        "the tool's server said the tool changed, but its listed definition is unchanged"
    ),
}


class ResultTooLarge(Exception):
    """Fitting the result would remove or alter ``structuredContent`` under an ``outputSchema``."""


def size_of(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def _without_hub_keys(meta: Any) -> Any:
    if not isinstance(meta, dict):
        return meta
    return {
        k: v for k, v in meta.items() if not (isinstance(k, str) and k.startswith(HUB_META_PREFIX))
    }


def strip_hub_meta(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` without upstream keys in the hub's ``_meta`` namespace (result and blocks), and
    without the upstream's ``io.modelcontextprotocol/serverInfo``: it names the server the hub
    called, and the agent's server (the hub's endpoint, a sidecar) names itself there."""
    shaped = dict(result)
    if "_meta" in shaped:
        meta = _without_hub_keys(shaped.pop("_meta"))  # a new dict, when it is one
        named = isinstance(meta, dict) and meta.pop(SERVER_INFO_META_KEY, None) is not None
        if meta or not named:
            shaped["_meta"] = meta
    content = shaped.get("content")
    if isinstance(content, list):
        shaped["content"] = [
            {**b, "_meta": _without_hub_keys(b["_meta"])}
            if isinstance(b, dict) and "_meta" in b
            else b
            for b in content
        ]
    return shaped


def _with_meta(result: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    meta = result.get("_meta")
    meta = dict(meta) if isinstance(meta, dict) else {}
    meta[key] = value
    return {**result, "_meta": meta}


def _cut_texts(result: dict[str, Any], budget: int) -> dict[str, Any]:
    """Text blocks kept in order, the last one cut, the rest dropped, to fit ``budget`` bytes.

    The size is kept as a running sum: serialised compactly, a list is its items' bytes, one
    comma between each two, and its brackets, so adding a block adds its own size and a comma.
    (Serialising the result so far for every block was quadratic in the blocks: a 1.26 MB result
    of 100-character blocks took 24 s of the event loop, stop 43.)"""
    content = result.get("content")
    blocks = content if isinstance(content, list) else []
    kept: list[Any] = []
    shell = {**result, "content": kept}
    used = size_of(shell)
    for block in blocks:
        if not (isinstance(block, dict) and block.get("type") == "text"):
            continue  # images, audio, resources: dropped when the result does not fit
        text = block.get("text")
        if not isinstance(text, str):
            continue
        comma = 1 if kept else 0
        whole = size_of(block)
        if used + comma + whole <= budget:
            kept.append(block)
            used += comma + whole
            continue
        room = budget - used - comma - size_of({**block, "text": ""})
        if room > 0:
            cut = {**block, "text": text.encode()[: room // 2].decode(errors="ignore")}
            if used + comma + size_of(cut) <= budget:  # escapes may double a byte, or more
                kept.append(cut)
        break
    return shell


def fit(result: dict[str, Any], max_bytes: int, *, has_output_schema: bool) -> dict[str, Any]:
    """``result`` if it fits in ``max_bytes`` serialised, else cut to fit (see the module)."""
    original = size_of(result)
    if original <= max_bytes:
        return result
    marker_room = 96  # the truncation marker the hub adds
    budget = max_bytes - marker_room
    shaped = dict(result)
    if "structuredContent" in shaped:
        if has_output_schema:
            without = {k: v for k, v in shaped.items() if k != "content"}
            if size_of({**without, "content": []}) > budget:
                raise ResultTooLarge()
        else:
            shaped.pop("structuredContent")
    cut = _cut_texts(shaped, budget)
    return _with_meta(cut, TRUNCATED_META, {"original_bytes": original})


#: the 2026-07-28 result envelope (``resultType``, SEP-2549's cache hints): no field of a result
#: in the handshake eras, so a 2026-07-28 upstream's are not passed to a legacy agent
MODERN_RESULT_KEYS: Final = ("resultType", "ttlMs", "cacheScope")


def for_legacy_result(result: dict[str, Any]) -> dict[str, Any]:
    """The result for a legacy agent: without the 2026-07-28 envelope
    (:data:`MODERN_RESULT_KEYS`), and without a non-object ``structuredContent`` (kept as JSON
    text)."""
    if any(key in result for key in MODERN_RESULT_KEYS):
        result = {k: v for k, v in result.items() if k not in MODERN_RESULT_KEYS}
    structured = result.get("structuredContent")
    if "structuredContent" not in result or isinstance(structured, dict):
        return result
    shaped = {k: v for k, v in result.items() if k != "structuredContent"}
    text = json.dumps(structured, ensure_ascii=False)
    content = list(shaped.get("content") or [])
    if not any(isinstance(b, dict) and b.get("text") == text for b in content):
        content.append({"type": "text", "text": text})
    shaped["content"] = content
    return shaped


def listed_tool(
    tool: Mapping[str, Any], wire_name: str, *, ask: bool, legacy: bool
) -> dict[str, Any]:
    """The Tool object an agent lists: verbatim, under its wire name, with the hub's markers."""
    listed = dict(tool)
    listed["name"] = wire_name
    meta = _without_hub_keys(listed.get("_meta")) if "_meta" in listed else None
    if ask:
        meta = dict(meta or {})
        meta[APPROVAL_META] = "required"
    if meta is not None:
        listed["_meta"] = meta
    if legacy:
        schema = listed.get("outputSchema")
        if schema is not None and not (isinstance(schema, dict) and schema.get("type") == "object"):
            listed.pop("outputSchema")
    return listed


def upstream_failure(reason: str) -> dict[str, Any]:
    """``isError`` with the hub's own text for an upstream failure (never upstream text)."""
    if reason not in UPSTREAM_MESSAGES:
        reason = "protocol_error"
    text = f"upstream_failed ({reason}): {UPSTREAM_MESSAGES[reason]}"
    return error_result("upstream_failed", text, reason=reason)
