"""A JSON body is UTF-8 text sent as it is (RFC 8259 §8.1), and one that is not is refused with
what to fix, before it is parsed.

Without this check FastAPI's parse (``json.loads`` of the bytes) guessed: a UTF-16 or UTF-32
body, which ``json.detect_encoding`` recognises by its NUL bytes, was accepted; a body in
another charset, or compressed (``content-encoding: gzip``), failed as undecodable and got the
bare "the request is invalid", with nothing to say that the encoding was the problem.

- ``Content-Encoding`` other than ``identity``: 415 (RFC 9110 §15.5.16), the hub decodes none;
- a ``charset`` other than ``utf-8`` on the content type: 415;
- a body that starts with a UTF-16/32 byte order mark or holds a NUL in its first four bytes
  (which UTF-8 JSON never does: a NUL in a string is escaped): 400 "must be UTF-8 JSON".

A body whose bytes are not valid UTF-8 fails in the parse itself, and its 400 says the same
(:mod:`hub.core.handlers`). What the check costs a JSON route: two header look-ups and a
glance at the first four bytes of a body FastAPI reads anyway (cached on the request).
"""

from __future__ import annotations

from fastapi import Request

from hub.core.errors import BadRequest, UnsupportedMediaType

__all__ = ["NOT_UTF8", "refuse_undecodable"]

#: the 400 of a body that is not UTF-8 (invalid bytes, or UTF-16/32)
NOT_UTF8 = "the request body must be UTF-8 JSON (RFC 8259 §8.1)"
_ENCODED = (
    "the request body must be sent as it is: the hub accepts no content-encoding "
    "(send it uncompressed, without a content-encoding header)"
)
_CHARSET = "the request body must be UTF-8 JSON: send charset=utf-8, or no charset"
_WIDE_BOMS = (b"\xff\xfe", b"\xfe\xff")


def _charset(content_type: str) -> str | None:
    """The ``charset`` parameter of a content type, lower-cased and unquoted, or None."""
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"').lower()
    return None


async def refuse_undecodable(request: Request) -> None:
    """Refuse a JSON route's body that is not UTF-8 JSON sent as it is (see the module)."""
    headers = request.headers
    coding = headers.get("content-encoding")
    if coding is not None and coding.strip().lower() not in ("", "identity"):
        raise UnsupportedMediaType(_ENCODED)
    content_type = headers.get("content-type")
    if content_type is not None and ";" in content_type:
        charset = _charset(content_type)
        if charset is not None and charset not in ("utf-8", "utf8"):
            raise UnsupportedMediaType(_CHARSET)
    head = (await request.body())[:4]
    if b"\x00" in head or head.startswith(_WIDE_BOMS):
        raise BadRequest(NOT_UTF8)
