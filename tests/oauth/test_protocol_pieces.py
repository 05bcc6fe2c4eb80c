"""The protocol pieces, one rule per test: challenges, well-known URLs, the resource check,
scope selection, the authorization URL, RFC 9207, client authentication."""

from __future__ import annotations

import base64
import urllib.parse
from typing import Any

import pytest

from hub.core.errors import OAuthFailed
from hub.egress.operation import _basic_credentials
from hub.mcp import parse_bearer_challenge
from hub.oauth.authorization_request import authorization_url, check_response_issuer
from hub.oauth.pkce import new_state, new_verifier, s256_challenge, state_digest
from hub.oauth.protected_resource import resource_covers, well_known_urls
from hub.oauth.registration import choose_auth_method
from hub.oauth.scopes import select_scopes
from hub.oauth.server_metadata import metadata_urls


def test_bearer_challenge_keeps_scope_resource_metadata_and_error_only() -> None:
    header = (
        'Bearer error="insufficient_scope", scope="files:read files:write", '
        'resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", '
        'error_description="Needs \\"more\\" scope"'
    )
    challenge = parse_bearer_challenge({"www-authenticate": header})
    assert challenge is not None
    assert challenge.insufficient_scope
    assert challenge.scopes == ("files:read", "files:write")
    assert challenge.resource_metadata == (
        "https://mcp.example.com/.well-known/oauth-protected-resource"
    )
    assert not hasattr(challenge, "error_description")


def test_bearer_challenge_is_found_among_other_schemes() -> None:
    header = 'DPoP algs="ES256", Bearer realm="x", scope="a"'
    challenge = parse_bearer_challenge({"www-authenticate": header})
    assert challenge is not None
    assert challenge.scopes == ("a",)


@pytest.mark.parametrize(
    "header", ["Basic realm=x", 'Bearer scope="unterminated', "", "Bearer " + "x" * 9000]
)
def test_unreadable_challenges_are_none(header: str) -> None:
    assert parse_bearer_challenge({"www-authenticate": header}) is None


def test_prm_well_known_is_path_inserted_then_root() -> None:
    assert well_known_urls("https://ex.com/public/mcp") == [
        "https://ex.com/.well-known/oauth-protected-resource/public/mcp",
        "https://ex.com/.well-known/oauth-protected-resource",
    ]
    assert well_known_urls("https://ex.com") == [
        "https://ex.com/.well-known/oauth-protected-resource"
    ]


def test_as_metadata_order_with_and_without_a_path() -> None:
    assert metadata_urls("https://auth.ex.com/tenant1") == [
        "https://auth.ex.com/.well-known/oauth-authorization-server/tenant1",
        "https://auth.ex.com/.well-known/openid-configuration/tenant1",
        "https://auth.ex.com/tenant1/.well-known/openid-configuration",
    ]
    assert metadata_urls("https://auth.ex.com") == [
        "https://auth.ex.com/.well-known/oauth-authorization-server",
        "https://auth.ex.com/.well-known/openid-configuration",
    ]


@pytest.mark.parametrize(
    ("resource", "covers"),
    [
        ("https://mcp.test/mcp", True),
        ("https://mcp.test", True),
        ("https://MCP.test:443/mcp", True),
        ("https://mcp.test/mc", False),
        ("https://other.test/mcp", False),
        ("http://mcp.test/mcp", False),
        ("https://mcp.test:8443/mcp", False),
        ("https://mcp.test/mcp#frag", False),
        ("https://mcp.test/mcp/deeper", False),
    ],
)
def test_prm_resource_must_name_the_server(resource: str, covers: bool) -> None:
    assert resource_covers(resource, "https://mcp.test/mcp") is covers


def test_scopes_come_from_the_challenge_then_the_metadata_then_nowhere() -> None:
    common: dict[str, Any] = {"requested": None, "recorded": (), "server_supported": None}
    assert select_scopes(challenge=("a",), resource_supported=("b",), **common) == ("a",)
    assert select_scopes(challenge=(), resource_supported=("b", "c"), **common) == ("b", "c")
    assert select_scopes(challenge=(), resource_supported=None, **common) == ()


def test_offline_access_only_when_the_server_lists_it() -> None:
    chosen = select_scopes(
        requested=None,
        recorded=(),
        challenge=("a",),
        resource_supported=None,
        server_supported=("a", "offline_access"),
    )
    assert chosen == ("a", "offline_access")
    assert "offline_access" not in select_scopes(
        requested=None,
        recorded=(),
        challenge=("a",),
        resource_supported=None,
        server_supported=("a",),
    )


def test_step_up_asks_for_the_union_of_recorded_and_challenged() -> None:
    chosen = select_scopes(
        requested=None,
        recorded=("mcp:basic", "mcp:write"),
        challenge=("mcp:basic",),
        resource_supported=None,
        server_supported=None,
    )
    assert chosen == ("mcp:basic", "mcp:write")


def test_authorization_url_carries_s256_state_and_the_resource_verbatim() -> None:
    verifier = new_verifier()
    assert 43 <= len(verifier) <= 128
    url = authorization_url(
        "https://as.test/authorize?tenant=x",
        client_id="c",
        redirect_uri="https://hub.test/oauth/callback",
        scopes=("a", "b"),
        state="s",
        code_challenge=s256_challenge(verifier),
        resource="https://mcp.test",
    )
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
    assert query["code_challenge_method"] == "S256"
    assert query["code_challenge"] == s256_challenge(verifier)
    assert query["resource"] == "https://mcp.test"  # no "/" appended
    assert query["tenant"] == "x"
    assert query["scope"] == "a b"
    assert query["response_type"] == "code"


def test_authorization_url_omits_an_empty_scope() -> None:
    url = authorization_url(
        "https://as.test/authorize",
        client_id="c",
        redirect_uri="https://hub.test/cb",
        scopes=(),
        state="s",
        code_challenge="x" * 43,
        resource="https://mcp.test/mcp",
    )
    assert "scope=" not in url


def test_state_is_random_and_stored_only_as_its_digest() -> None:
    a, b = new_state(), new_state()
    assert a != b
    assert len(a) >= 43
    assert state_digest(a) != a
    assert len(state_digest(a)) == 64


@pytest.mark.parametrize(
    ("iss", "required", "ok"),
    [
        ("https://as.test", True, True),
        (None, True, False),
        (None, False, True),
        ("https://as.test/", True, False),
        ("https://AS.test", False, False),
        ("https://evil.test", False, False),
    ],
)
def test_iss_is_compared_without_normalisation(iss: str | None, required: bool, ok: bool) -> None:
    if ok:
        check_response_issuer("https://as.test", iss, required=required)
    else:
        with pytest.raises(OAuthFailed) as refused:
            check_response_issuer("https://as.test", iss, required=required)
        assert refused.value.reason == "iss_mismatch"


def test_auth_method_prefers_basic_then_post_then_none() -> None:
    methods = ["none", "client_secret_post", "client_secret_basic"]
    assert choose_auth_method(methods, has_secret=True) == "client_secret_basic"
    assert (
        choose_auth_method(["none", "client_secret_post"], has_secret=True) == "client_secret_post"
    )
    assert choose_auth_method(["none"], has_secret=True) == "none"
    assert choose_auth_method(methods, has_secret=False) == "none"


def test_basic_client_credentials_are_form_encoded_first() -> None:
    encoded = _basic_credentials(("id:1", "s é+"))
    assert base64.b64decode(encoded).decode() == "id%3A1:s+%C3%A9%2B"
