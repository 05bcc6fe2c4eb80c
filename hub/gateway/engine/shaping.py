"""Results and listed tools as agents receive them (DESIGN §10.1, §10.2 step 6, §15).

- **Verbatim**: an upstream result passes as it came (content blocks, ``structuredContent``,
  ``isError``), after redaction (:mod:`~hub.mcp.redaction`).
- **The hub's namespace**: keys under ``io.mcphub/`` in the result's, each block's and each listed
  tool's ``_meta`` are the hub's; an upstream's are stripped before the hub adds its own. So is
  the upstream's ``io.modelcontextprotocol/serverInfo`` (2026-07-28): the server the agent talks
  to is the hub's endpoint or a sidecar, which names itself.
- **Size**: a result over ``HUB_MAX_TOOL_RESULT_BYTES`` (serialised) has its text blocks cut and
  its other blocks dropped to fit (to the byte, as whole characters allow), marked
  ``_meta["io.mcphub/truncated"] = {"original_bytes"}``; when fitting would remove or alter the
  ``structuredContent`` of a tool that declares an ``outputSchema``, the result is
  ``upstream_failed`` with reason ``result_too_large`` instead (a client validating against the
  schema must not get something else).
- **Older agents**: for a legacy-era agent a non-object-root ``outputSchema`` is removed from the
  listed tool, and a non-object ``structuredContent`` from results (its JSON stays as a text
  block), since those revisions require objects; so is a 2026-07-28 upstream's result envelope
  (``resultType``, ``ttlMs``, ``cacheScope``), which those revisions do not have.
"""

from __future__ import annotations

import json
import unicodedata
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
    "heavy",
    "listed_tool",
    "size_of",
    "strip_hub_meta",
    "upstream_failure",
]

#: A result weighing more than this is shaped off the event loop (:func:`heavy`). Measured
#: (stop 50): redaction and fitting cost about 0.7 µs a JSON value and 35 ns a character of
#: text, so what stays on the loop holds it for about 20 ms at most; a hostile upstream's 3.6 MB
#: of one-character strings held it 0.67 s, every tenant's requests waiting.
OFF_LOOP_WEIGHT: Final = 20_000
_CHARS_PER_WEIGHT: Final = 32

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
    "connection_lost": (
        "the connection to the tool's server broke after the call was sent: the tool may have "
        "run, so the outcome is unknown"
    ),
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


#: characters that continue the grapheme cluster before them (UAX #29 Extend, ZWJ, SpacingMark,
#: as far as the standard library tells): zero-width joiner, variation selectors, emoji modifiers,
#: tags; combining marks are found by their category
_EXTENDING: Final = frozenset(
    "\u200d"
    + "".join(map(chr, range(0xFE00, 0xFE10)))
    + "".join(map(chr, range(0x1F3FB, 0x1F400)))
    + "".join(map(chr, range(0xE0020, 0xE0080)))
    + "".join(map(chr, range(0xE0100, 0xE01F0)))
)
#: how far a cut moves back to keep a grapheme cluster whole; past it (a combining-mark pile), the
#: cut stays on the character boundary
_CLUSTER_LOOKBACK: Final = 32


def _regional(char: str) -> bool:
    return "\U0001f1e6" <= char <= "\U0001f1ff"


def _inside_cluster(text: str, at: int) -> bool:
    """Whether a cut before ``text[at]`` falls inside a grapheme cluster (an approximation of
    UAX #29 with :mod:`unicodedata`: marks and joiners, CR LF, regional-indicator pairs)."""
    before, after = text[at - 1], text[at]
    if after in _EXTENDING or unicodedata.category(after).startswith("M"):
        return True
    if before == "\u200d" or (before == "\r" and after == "\n"):
        return True
    if not (_regional(before) and _regional(after)):
        return False
    start = at - 1  # a flag is a pair: the cut splits one after an odd run of indicators
    while start > 0 and _regional(text[start - 1]):
        start -= 1
    return (at - start) % 2 == 1


def _cluster_start(text: str, end: int) -> int:
    """``end``, moved back (a little) so that ``text[:end]`` does not split a grapheme cluster."""
    cut = end
    while 0 < cut < len(text) and end - cut < _CLUSTER_LOOKBACK and _inside_cluster(text, cut):
        cut -= 1
    if 0 < cut < len(text) and _inside_cluster(text, cut):
        return end  # no cluster boundary near: a character boundary will do
    return cut


def _whole_escapes(body: str) -> str:
    """``body``, a prefix of a JSON string's escaped text, without an escape cut short at its end.

    Python's encoder writes ``\\"``, ``\\\\``, ``\\n``-style and ``\\u00XX`` escapes. A run of
    backslashes begins on an escape's start, so it pairs up from its left: an odd run ends on an
    escape's start (``\\`` alone, or ``\\u`` and its digits when a ``u`` follows)."""
    run = len(body) - len(body.rstrip("\\"))
    if run:
        return body[:-1] if run % 2 else body
    u = body.rfind("\\u", max(0, len(body) - 5))  # an incomplete \u00XX is at most 5 long
    if u >= 0:
        lead = body[: u + 1]
        if (len(lead) - len(lead.rstrip("\\"))) % 2:
            return body[:u]
    return body


def _cut_text(text: str, room: int) -> str:
    """The longest prefix of ``text`` whose serialised string, less its quotes, takes at most
    ``room`` bytes, cut where no grapheme cluster is split (near enough: :func:`_cluster_start`).

    One serialisation: the escaped text is cut at ``room`` bytes, moved back to a UTF-8 boundary
    and to a whole escape, and read back. A prefix serialises to a prefix of the escaped text, so
    the cut is exact whatever the escapes cost (1 to 6 bytes a character)."""
    if room <= 0:
        return ""
    escaped = json.dumps(text[:room], ensure_ascii=False)[1:-1]  # room bytes hold ≤ room chars
    body = escaped.encode()[:room].decode(errors="ignore")  # a split character's bytes dropped
    kept: str = json.loads(f'"{_whole_escapes(body)}"')
    return kept[: _cluster_start(text, len(kept))]


def _cut_texts(result: dict[str, Any], budget: int) -> dict[str, Any]:
    """Text blocks kept in order, the last one cut, the rest dropped, to fit ``budget`` bytes.

    The size is kept as a running sum: serialised compactly, a list is its items' bytes, one
    comma between each two, and its brackets, so adding a block adds its own size and a comma.
    (Serialising the result so far for every block was quadratic in the blocks: a 1.26 MB result
    of 100-character blocks took 24 s of the event loop, stop 43.) The block that does not fit
    whole is cut to the bytes left (:func:`_cut_text`), not to half of them as it was."""
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
            cut = {**block, "text": _cut_text(text, room)}
            if used + comma + size_of(cut) <= budget:  # exact by construction; checked, not trusted
                kept.append(cut)
        break
    return shell


def fit(result: dict[str, Any], max_bytes: int, *, has_output_schema: bool) -> dict[str, Any]:
    """``result`` if it fits in ``max_bytes`` serialised, else cut to fit (see the module).

    The marker's bytes are measured, not guessed: serialised compactly, an object is its members'
    bytes, so the marked result is the cut one plus what the marker adds to it with no content."""
    original = size_of(result)
    if original <= max_bytes:
        return result
    marker = {"original_bytes": original}
    shaped = dict(result)
    if "structuredContent" in shaped and not has_output_schema:
        shaped.pop("structuredContent")
    bare = {**shaped, "content": []}
    budget = max_bytes - (size_of(_with_meta(bare, TRUNCATED_META, marker)) - size_of(bare))
    if has_output_schema and "structuredContent" in shaped and size_of(bare) > budget:
        raise ResultTooLarge()
    cut = _cut_texts(shaped, budget)
    return _with_meta(cut, TRUNCATED_META, marker)


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


def heavy(result: Any) -> bool:
    """Whether shaping ``result`` would hold the event loop too long: one unit a JSON value and
    one per :data:`_CHARS_PER_WEIGHT` characters of its strings, counted no further than
    :data:`OFF_LOOP_WEIGHT` (a small result costs a walk of its few values)."""
    weight, stack = 0, [result]
    while stack:
        item = stack.pop()
        weight += 1
        if isinstance(item, str):
            weight += len(item) // _CHARS_PER_WEIGHT
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        if weight > OFF_LOOP_WEIGHT:
            return True
    return False
