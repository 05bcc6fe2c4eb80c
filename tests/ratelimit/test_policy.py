"""``HUB_RATE_LIMITS`` parsing and the IETF header fields (hub/ratelimit/policy.py, headers.py)."""

from __future__ import annotations

import pytest

from hub.core.settings import ConfigError
from hub.ratelimit import DEFAULT_LIMITS, KINDS, RateLimitConfigError, parse_policies
from hub.ratelimit.headers import policy_field, state_field
from hub.wiring import rate_limiter
from tests.conftest import make_settings


def test_defaults_cover_every_class() -> None:
    policies = parse_policies("")
    assert set(policies) == set(KINDS) == set(DEFAULT_LIMITS)
    assert policy_field(policies["rest"].items) == '"rest";q=600;w=60'
    assert policy_field(policies["tool_call"].items) == '"tool_call";q=120;w=60'
    assert policy_field(policies["discovery"].items) == '"discovery";q=30;w=60'
    assert policy_field(policies["snapshot"].items) == '"snapshot";q=30;w=60'


def test_overrides_several_limits_and_off() -> None:
    policies = parse_policies("rest=20/second|600 per 10 minutes, snapshot=off")
    assert policy_field(policies["rest"].items) == '"rest-1";q=20;w=1, "rest-2";q=600;w=600'
    assert not policies["snapshot"].enabled
    assert policy_field(policies["discovery"].items) == '"discovery";q=30;w=60'  # untouched


@pytest.mark.parametrize(
    "text",
    ["rest", "rests=1/minute", "rest=1/fortnight", "rest=", "rest=1/minute,rest=2/minute"],
)
def test_bad_entries_are_refused(text: str) -> None:
    with pytest.raises(RateLimitConfigError):
        parse_policies(text)


def test_a_bad_setting_stops_the_hub_without_quoting_it() -> None:
    with pytest.raises(ConfigError) as info:
        rate_limiter(make_settings(rate_limits="rest=SECRETISH/minute"), None)  # type: ignore[arg-type]
    assert "SECRETISH" not in str(info.value)


def test_state_field() -> None:
    assert state_field("rest", 0, 17) == '"rest";r=0;t=17'
    assert state_field("rest", -1, -3) == '"rest";r=0;t=0'


def test_a_bad_storage_url_is_refused_without_echo() -> None:
    with pytest.raises(ValueError, match="HUB_RATE_LIMIT_STORAGE_URL") as info:
        make_settings(rate_limit_storage_url="memcached://user:hunter2@host")
    assert "hunter2" not in str(info.value)
