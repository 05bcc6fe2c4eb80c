"""Login profiles: where the key lives (a 0600 file), where it comes from, what refuses it."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hub.cli import app
from hub.cli.remote.profiles import (
    Profile,
    ProfileError,
    config_dir,
    delete_profile,
    load_key,
    load_profile,
    save_profile,
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "mcp-hub"


def test_the_key_file_is_0600_in_a_0700_directory_and_the_profile_holds_no_key(
    home: Path,
) -> None:
    key_file = save_profile(Profile("prod", "https://hub.example.com", None, "acme"), "hub_secret")
    assert config_dir() == home
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "profiles.json").stat().st_mode) == 0o600
    assert "hub_secret" not in (home / "profiles.json").read_text()
    assert load_key("prod") == "hub_secret"
    assert load_profile("prod") == Profile("prod", "https://hub.example.com", None, "acme")


def test_a_key_file_others_can_read_is_refused(home: Path) -> None:
    key_file = save_profile(Profile("default", "https://hub.example.com"), "hub_secret")
    os.chmod(key_file, 0o644)
    with pytest.raises(ProfileError, match="readable by others"):
        load_key("default")


def test_logout_forgets_the_profile_and_its_key(home: Path) -> None:
    save_profile(Profile("default", "https://hub.example.com"), "hub_secret")
    assert delete_profile("default")
    assert not (home / "keys" / "default").exists()
    with pytest.raises(ProfileError, match="not logged in"):
        load_profile("default")


def test_a_command_without_a_login_says_how_to_log_in(home: Path) -> None:
    done = CliRunner().invoke(app, ["tenants", "list"])
    assert done.exit_code == 1
    assert done.output.strip() == "hub: not logged in (run: hub login --url URL)"


def test_login_refuses_plain_http_to_a_remote_host(home: Path) -> None:
    done = CliRunner().invoke(
        app, ["login", "--url", "http://hub.example.com"], env={"HUB_API_KEY": "hub_x"}
    )
    assert done.exit_code == 1
    assert "must be https" in done.output
    assert not (home / "keys").exists()


def test_login_has_no_key_flag() -> None:
    done = CliRunner().invoke(app, ["login", "--url", "https://h.example", "--key", "hub_x"])
    assert done.exit_code == 2  # no such option: a key never goes on a command line


def test_an_unreachable_hub_is_one_line(home: Path) -> None:
    with socket.socket() as sock:  # a loopback port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    save_profile(Profile("default", f"http://127.0.0.1:{port}", None, "acme"), "hub_x")
    done = CliRunner().invoke(app, ["principals", "list"])
    assert done.exit_code == 1
    assert done.output.count("\n") == 1
    assert done.output.startswith(f"hub: cannot reach http://127.0.0.1:{port}: connection refused")
