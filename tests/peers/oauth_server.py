"""A scriptable OAuth 2.1 authorization server, and a bearer check for the handmade MCP peer.

:class:`AuthServer` runs in the test's event loop (uvicorn on loopback, ephemeral port) and
serves, under ``issuer = http://127.0.0.1:PORT<issuer_path>``:

- RFC 8414 metadata at ``/.well-known/oauth-authorization-server<issuer_path>`` (or, with
  ``oidc=True``, OIDC's ``<issuer_path>/.well-known/openid-configuration``);
- ``GET /authorize``: auto-approves and answers **302** to ``redirect_uri`` with ``code``,
  ``state`` and (``iss_mode``) ``iss``, as a consenting user would;
- ``POST /token``: the code grant (PKCE S256 checked, ``redirect_uri`` and ``resource`` must
  match) and the refresh grant with **refresh-token rotation** (each refresh token works once;
  a reused one is ``invalid_grant``), client authentication as registered;
- ``POST /register``: RFC 7591 dynamic registration.

Knobs (:class:`AuthKnobs`, read per request) make it hostile: a metadata ``issuer`` that is not
its own, no S256, a wrong or missing ``iss``, ``invalid_grant`` on refresh, a slow token
endpoint, short-lived tokens, client ids the hub must not keep. Everything is counted:
``token_requests(grant)``, ``requests(path)``.

:func:`protect` turns a :class:`~tests.peers.handmade.HandmadePeer` into a protected resource:
it serves RFC 9728 metadata at the path-inserted well-known URL and answers every MCP POST
without a live token of this server (or without the required scopes) with 401 (or 403
``insufficient_scope``) and a ``WWW-Authenticate: Bearer`` challenge.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import secrets
import socket
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import Receive, Scope, Send

from tests.peers.handmade import HandmadePeer, _QuietServer
from tests.peers.handmade_wire import RecordedRequest, Reply

__all__ = ["AuthKnobs", "AuthServer", "Grant", "protect"]


@dataclass
class AuthKnobs:
    issuer_path: str = ""
    oidc: bool = False
    metadata_issuer: str | None = None  # publish another issuer than our own
    code_challenge_methods: list[str] | None = field(default_factory=lambda: ["S256"])
    iss_supported: bool = True
    iss_mode: Literal["correct", "wrong", "omit", "slash"] = "correct"
    auth_methods: list[str] = field(default_factory=lambda: ["client_secret_basic"])
    registration: bool = True
    cimd_supported: bool = False
    scopes_supported: list[str] | None = None
    access_ttl_s: int = 3600
    issue_refresh: bool = True
    rotate_refresh: bool = True
    refresh_error: str | None = None  # e.g. "invalid_grant": every refresh fails so
    token_delay_s: float = 0.0
    client_id_suffix: str = ""  # appended to the client ids it registers (e.g. "\x00")


@dataclass
class Grant:
    """An access token this server issued."""

    scopes: tuple[str, ...]
    expires_at: float
    resource: str | None
    client_id: str


@dataclass
class _Code:
    client_id: str
    redirect_uri: str
    challenge: str | None
    method: str | None
    resource: str | None
    scopes: tuple[str, ...]


@dataclass
class _Logged:
    method: str
    path: str
    form: dict[str, str]
    headers: dict[str, str]
    #: when the request arrived (``time.monotonic()``)
    at: float = field(default_factory=time.monotonic)


class AuthServer:
    def __init__(self, **knobs: Any) -> None:
        self.knobs = AuthKnobs(**knobs)
        self.log: list[_Logged] = []
        self.clients: dict[str, dict[str, Any]] = {}
        self.codes: dict[str, _Code] = {}
        self.tokens: dict[str, Grant] = {}
        self.refresh_tokens: dict[str, Grant] = {}
        self.used_refresh_tokens: set[str] = set()
        self._server: _QuietServer | None = None
        self._task: asyncio.Task[None] | None = None
        self.origin = ""

    # ------------------------------------------------------------------ public API
    @property
    def issuer(self) -> str:
        return f"{self.origin}{self.knobs.issuer_path}"

    def add_client(
        self, client_id: str, secret: str | None, method: str, redirect_uri: str | None = None
    ) -> None:
        self.clients[client_id] = {
            "secret": secret,
            "method": method,
            "redirect_uris": [redirect_uri] if redirect_uri else [],
        }

    def requests(self, path: str) -> list[_Logged]:
        return [r for r in self.log if r.path == path]

    def token_requests(self, grant_type: str | None = None) -> list[_Logged]:
        return [
            r
            for r in self.requests("/token")
            if grant_type is None or r.form.get("grant_type") == grant_type
        ]

    def live(self, token: str) -> Grant | None:
        grant = self.tokens.get(token)
        return grant if grant is not None and grant.expires_at > time.time() else None

    def expire_all(self) -> None:
        """Every access token issued so far is now expired (the refresh tokens stay valid)."""
        for grant in self.tokens.values():
            grant.expires_at = 0

    async def start(self) -> AuthServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.asgi,
            interface="asgi3",
            lifespan="off",
            ws="none",
            log_level="warning",
            access_log=False,
        )
        self._server = _QuietServer(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))
        async with asyncio.timeout(5):
            while not self._server.started:
                if self._task.done():
                    await self._task
                    raise RuntimeError("the authorization server exited at startup")
                await asyncio.sleep(0.005)
        self.origin = f"http://127.0.0.1:{port}"
        return self

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await asyncio.wait_for(self._task, 5)
            self._server = self._task = None

    # ------------------------------------------------------------------ HTTP
    async def asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        body = await request.body()
        form: dict[str, str] = {}
        if request.headers.get("content-type", "").startswith("application/x-www-form"):
            form = dict(urllib.parse.parse_qsl(body.decode()))
        elif request.method == "GET":
            form = dict(request.query_params)
        elif body:
            try:
                form = {"_json": json.loads(body)}
            except ValueError:
                form = {}
        self.log.append(_Logged(request.method, request.url.path, form, dict(request.headers)))
        response = await self._route(request, form)
        await response(scope, receive, send)

    async def _route(self, request: Request, form: dict[str, Any]) -> Response:
        k = self.knobs
        path = request.url.path
        if request.method == "GET" and path == self._metadata_path():
            return JSONResponse(self.metadata())
        if request.method == "GET" and path == f"{k.issuer_path}/authorize":
            return self._authorize(form)
        if request.method == "POST" and path == f"{k.issuer_path}/token":
            if k.token_delay_s:
                await asyncio.sleep(k.token_delay_s)
            return self._token(request, form)
        if request.method == "POST" and path == f"{k.issuer_path}/register" and k.registration:
            return self._register(form.get("_json") or {})
        return JSONResponse({"error": "not_found"}, status_code=404)

    def _metadata_path(self) -> str:
        k = self.knobs
        if k.oidc:
            return f"{k.issuer_path}/.well-known/openid-configuration"
        return f"/.well-known/oauth-authorization-server{k.issuer_path}"

    def metadata(self) -> dict[str, Any]:
        k = self.knobs
        base = self.issuer
        document: dict[str, Any] = {
            "issuer": k.metadata_issuer or base,
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": k.auth_methods,
            "authorization_response_iss_parameter_supported": k.iss_supported,
        }
        if k.registration:
            document["registration_endpoint"] = f"{base}/register"
        if k.code_challenge_methods is not None:
            document["code_challenge_methods_supported"] = k.code_challenge_methods
        if k.cimd_supported:
            document["client_id_metadata_document_supported"] = True
        if k.scopes_supported is not None:
            document["scopes_supported"] = k.scopes_supported
        return document

    def _register(self, body: dict[str, Any]) -> Response:
        method = body.get("token_endpoint_auth_method", "client_secret_basic")
        client_id = f"client-{secrets.token_hex(6)}{self.knobs.client_id_suffix}"
        secret = None if method == "none" else f"secret-{secrets.token_hex(16)}"
        self.add_client(client_id, secret, method)
        self.clients[client_id]["redirect_uris"] = list(body.get("redirect_uris") or [])
        self.clients[client_id]["registration"] = body
        answer = {"client_id": client_id, "token_endpoint_auth_method": method, **body}
        if secret is not None:
            answer["client_secret"] = secret
        return JSONResponse(answer, status_code=201)

    def _authorize(self, query: dict[str, str]) -> Response:
        client = self.clients.get(query.get("client_id", ""))
        redirect_uri = query.get("redirect_uri", "")
        if client is None or (
            client["redirect_uris"] and redirect_uri not in client["redirect_uris"]
        ):
            return JSONResponse({"error": "invalid_client"}, status_code=400)
        code = f"code-{secrets.token_hex(8)}"
        scopes = tuple((query.get("scope") or "").split())
        self.codes[code] = _Code(
            query["client_id"],
            redirect_uri,
            query.get("code_challenge"),
            query.get("code_challenge_method"),
            query.get("resource"),
            scopes,
        )
        params = {"code": code, "state": query.get("state", "")}
        mode = self.knobs.iss_mode
        if mode == "correct":
            params["iss"] = self.issuer
        elif mode == "wrong":
            params["iss"] = "https://evil.example.com"
        elif mode == "slash":
            params["iss"] = f"{self.issuer}/"
        separator = "&" if "?" in redirect_uri else "?"
        location = f"{redirect_uri}{separator}{urllib.parse.urlencode(params)}"
        return RedirectResponse(location, status_code=302)

    def _client_of(self, request: Request, form: dict[str, str]) -> str | None:
        header = request.headers.get("authorization", "")
        if header.startswith("Basic "):
            raw = base64.b64decode(header[6:]).decode()
            client_id, _, secret = raw.partition(":")
            client_id, secret = (
                urllib.parse.unquote_plus(client_id),
                urllib.parse.unquote_plus(secret),
            )
            method = "client_secret_basic"
        else:
            client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
            method = "client_secret_post" if secret else "none"
        client = self.clients.get(client_id)
        if client is None or client["method"] != method:
            return None
        if method != "none" and client["secret"] != secret:
            return None
        return client_id

    def _issue(self, client_id: str, scopes: tuple[str, ...], resource: str | None) -> Response:
        token = f"at-{secrets.token_urlsafe(24)}"
        grant = Grant(scopes, time.time() + self.knobs.access_ttl_s, resource, client_id)
        self.tokens[token] = grant
        answer: dict[str, Any] = {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": self.knobs.access_ttl_s,
        }
        if scopes:
            answer["scope"] = " ".join(scopes)
        if self.knobs.issue_refresh:
            refresh = f"rt-{secrets.token_urlsafe(24)}"
            self.refresh_tokens[refresh] = grant
            answer["refresh_token"] = refresh
        return JSONResponse(answer, headers={"cache-control": "no-store"})

    def _token(self, request: Request, form: dict[str, str]) -> Response:
        client_id = self._client_of(request, form)
        if client_id is None:
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            code = self.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            digest = hashlib.sha256(verifier.encode()).digest()
            computed = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            if (
                code is None
                or code.client_id != client_id
                or code.redirect_uri != form.get("redirect_uri")
                or code.method != "S256"
                or code.challenge != computed
                or code.resource != form.get("resource")
            ):
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            return self._issue(client_id, code.scopes, code.resource)
        if grant_type == "refresh_token":
            if self.knobs.refresh_error:
                return JSONResponse({"error": self.knobs.refresh_error}, status_code=400)
            refresh = form.get("refresh_token", "")
            grant = self.refresh_tokens.get(refresh)
            if grant is None or refresh in self.used_refresh_tokens or grant.client_id != client_id:
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            if self.knobs.rotate_refresh:
                self.used_refresh_tokens.add(refresh)
                return self._issue(client_id, grant.scopes, form.get("resource"))
            token = f"at-{secrets.token_urlsafe(24)}"
            self.tokens[token] = Grant(
                grant.scopes, time.time() + self.knobs.access_ttl_s, grant.resource, client_id
            )
            return JSONResponse(
                {
                    "access_token": token,
                    "token_type": "Bearer",
                    "expires_in": self.knobs.access_ttl_s,
                }
            )
        return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)


def protect(
    peer: HandmadePeer,
    auth: AuthServer,
    *,
    required_scopes: Sequence[str] = (),
    call_scopes: Sequence[str] = (),
    challenge_scopes: Sequence[str] | None = None,
    prm_resource: str | None = None,
    scopes_supported: Sequence[str] | None = None,
    prm_in_header: bool = True,
) -> None:
    """Make ``peer`` a protected resource whose tokens ``auth`` issues (see the module doc).

    ``required_scopes`` are needed for every request, ``call_scopes`` too for ``tools/call``
    (a 403 ``insufficient_scope`` names what is missing); ``challenge_scopes`` is the ``scope``
    of the 401 challenge (default ``required_scopes``)."""
    url = urllib.parse.urlsplit(peer.url)
    origin = f"{url.scheme}://{url.netloc}"
    prm_path = f"/.well-known/oauth-protected-resource{url.path}"
    prm_url = f"{origin}{prm_path}"

    def challenge(status: int, error: str | None, scopes: Sequence[str]) -> Reply:
        parts = []
        if error:
            parts.append(f'error="{error}"')
        if scopes:
            parts.append(f'scope="{" ".join(scopes)}"')
        if prm_in_header:
            parts.append(f'resource_metadata="{prm_url}"')
        return Reply(
            status=status,
            headers={"www-authenticate": "Bearer " + ", ".join(parts)},
            body={"error": error or "invalid_token"},
        )

    def guard(rec: RecordedRequest) -> Reply | None:
        if rec.http_method == "GET" and rec.path == prm_path:
            document: dict[str, Any] = {
                "resource": prm_resource or peer.url,
                "authorization_servers": [auth.issuer],
            }
            if scopes_supported is not None:
                document["scopes_supported"] = list(scopes_supported)
            return Reply(status=200, body=document)
        if rec.path != url.path:
            return None
        header = rec.headers.get("authorization", "")
        grant = auth.live(header[7:]) if header.startswith("Bearer ") else None
        wanted = list(challenge_scopes if challenge_scopes is not None else required_scopes)
        if grant is None:
            return challenge(401, None, wanted)
        needed = [*required_scopes, *(call_scopes if rec.rpc_method == "tools/call" else ())]
        if not set(needed) <= set(grant.scopes):
            return challenge(403, "insufficient_scope", needed)
        return None

    peer.override("*", guard)
