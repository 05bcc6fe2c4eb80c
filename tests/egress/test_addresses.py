"""The destination policy table, address by address (SECURITY §1.2; no is_global on 3.11.7)."""

from __future__ import annotations

import ipaddress

import pytest

from hub.egress import DestinationPolicy
from hub.egress.addresses import embedded_ipv4, is_blocked, parse_address

BLOCKED = [
    "0.0.0.0",  # noqa: S104
    "0.1.2.3",
    "10.1.2.3",
    "100.64.0.1",
    "100.100.100.200",
    "127.0.0.1",
    "127.255.255.254",
    "169.254.169.254",
    "169.254.170.2",
    "172.16.0.1",
    "172.31.255.255",
    "192.0.0.8",
    "192.0.2.1",
    "192.88.99.1",
    "192.168.1.1",
    "198.18.0.1",
    "198.51.100.7",
    "203.0.113.9",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "::",
    "::1",
    "::127.0.0.1",
    "::a9fe:a9fe",
    "::ffff:127.0.0.1",
    "::ffff:169.254.169.254",
    "::ffff:8.8.8.8",
    "::ffff:0:a9fe:a9fe",  # IPv4-translated (SIIT) metadata address
    "::ffff:0:808:808",
    "::1:2:3:4",
    "2001:2::1",
    "2001:10::1",
    "2001:20::1",
    "3fff::1",
    "5f00::1",
    "64:ff9b::a9fe:a9fe",
    "64:ff9b::808:808",
    "64:ff9b:1::1",
    "100::1",
    "2001::1",
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    "2001:db8::1",
    "2002:a9fe:a9fe::1",
    "2002:808:808::1",
    "fc00::1",
    "fd00:ec2::254",
    "fe80::1",
    "fe80::1%eth0",
    "fec0::1",
    "ff02::1",
]

PUBLIC = ["8.8.8.8", "93.184.216.34", "1.1.1.1", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e"]


@pytest.mark.parametrize("text", BLOCKED)
def test_blocked_address_is_refused(text: str) -> None:
    address = parse_address(text)
    assert address is not None
    assert is_blocked(address)
    assert not DestinationPolicy().permits(address)


@pytest.mark.parametrize("text", PUBLIC)
def test_public_address_is_allowed(text: str) -> None:
    address = parse_address(text)
    assert address is not None
    assert DestinationPolicy().permits(address)


@pytest.mark.parametrize(
    ("text", "inner"),
    [
        ("::ffff:169.254.169.254", "169.254.169.254"),
        ("64:ff9b::a9fe:a9fe", "169.254.169.254"),
        ("2002:a9fe:a9fe::1", "169.254.169.254"),
        ("::127.0.0.1", "127.0.0.1"),
        ("::ffff:0:a9fe:a9fe", "169.254.169.254"),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "192.0.2.45"),
        ("2606:4700::1", None),
        ("::1", None),
    ],
)
def test_embedded_ipv4_is_unwrapped(text: str, inner: str | None) -> None:
    address = parse_address(text)
    assert address is not None
    found = embedded_ipv4(address)
    assert (str(found) if found else None) == inner


def test_loopback_only_with_the_flag_and_only_canonical_forms() -> None:
    policy = DestinationPolicy(allow_loopback=True)
    assert policy.permits(ipaddress.ip_address("127.0.0.1"))
    assert policy.permits(ipaddress.ip_address("::1"))
    assert not policy.permits(ipaddress.ip_address("::ffff:127.0.0.1"))
    assert not policy.permits(ipaddress.ip_address("::127.0.0.1"))
    assert not policy.permits(ipaddress.ip_address("10.0.0.1"))
    assert not policy.permits(ipaddress.ip_address("169.254.169.254"))


def test_allow_cidrs_open_only_listed_private_ranges() -> None:
    policy = DestinationPolicy(allow_cidrs=(ipaddress.ip_network("10.20.0.0/16"),))
    assert policy.permits(ipaddress.ip_address("10.20.1.2"))
    assert not policy.permits(ipaddress.ip_address("10.21.1.2"))
    assert not policy.permits(ipaddress.ip_address("127.0.0.1"))


def test_allow_cidrs_never_open_unspecified_multicast_or_loopback() -> None:
    everything = (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0"))
    policy = DestinationPolicy(allow_cidrs=everything)
    assert policy.permits(ipaddress.ip_address("10.1.2.3"))
    for text in [
        "0.0.0.0",  # noqa: S104
        "224.0.0.1",
        "255.255.255.255",
        "127.0.0.1",
        "::1",
        "::ffff:127.0.0.1",
        "::ffff:0:7f00:1",
        "ff02::1",
        "::",
    ]:
        assert not policy.permits(ipaddress.ip_address(text)), text


@pytest.mark.parametrize("text", ["not-an-ip", "", "1.2.3", "[::1", "999.1.1.1"])
def test_non_addresses_do_not_parse(text: str) -> None:
    assert parse_address(text) is None
