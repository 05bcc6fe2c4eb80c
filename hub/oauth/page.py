"""The callback's answer: a small fixed-text HTML page (DESIGN §15 "OAuth lifecycle").

The browser that followed the authorization server's redirect lands here. The page says what
happened in the hub's own words — never the authorization server's ``error_description`` or any
other upstream text, never a token — and names the tenant, the server and the principal who
started the authorization, so whoever sees it can tell where the token went (and report a
connection they did not start: the residual consent-phishing risk is in ``docs/decisions.md``).
Names are HTML-escaped. It is served with ``Content-Security-Policy: default-src 'none'`` (no
script, style, image or frame can load), ``Referrer-Policy: no-referrer`` (the URL held the code
and state), ``Cache-Control: no-store`` and ``X-Frame-Options: DENY``.
"""

from __future__ import annotations

from html import escape

from fastapi.responses import HTMLResponse

from hub.oauth.callback import CallbackOutcome
from hub.oauth.exceptions import MESSAGES

__all__ = ["SECURITY_HEADERS", "callback_page"]

SECURITY_HEADERS = {
    "content-security-policy": "default-src 'none'",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
}

_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>MCP Hub: {title}</title></head>
<body>
<h1>{title}</h1>
<p>{message}</p>
{facts}
<p>You can close this window.</p>
</body></html>
"""


def _facts(outcome: CallbackOutcome) -> str:
    rows = [
        ("Tenant", outcome.tenant),
        ("Server", outcome.server),
        ("Requested by", outcome.initiator),
        ("Reason code", outcome.reason),
    ]
    items = "".join(
        f"<dt>{label}</dt><dd>{escape(value)}</dd>" for label, value in rows if value is not None
    )
    return f"<dl>{items}</dl>" if items else ""


def callback_page(outcome: CallbackOutcome) -> HTMLResponse:
    if outcome.reason is None:
        title = "Connected"
        message = (
            "The hub received the authorization and stored the credential. No token is shown here."
        )
    else:
        title = "Not connected"
        message = MESSAGES.get(outcome.reason, "the OAuth authorization failed").capitalize() + "."
    body = _TEMPLATE.format(title=title, message=escape(message), facts=_facts(outcome))
    return HTMLResponse(body, status_code=outcome.status_code, headers=SECURITY_HEADERS)
