"""The console in a real browser: Debian's Chromium, headless, driven by Playwright, against a
live ``hub serve`` and the official SDK server as the upstream (DESIGN §14).

One journey, in one browser: sign in; a pending call made by the official SDK client through the
gateway appears in the queue by itself (htmx polling), is approved, and the same call then
succeeds; another is denied and the call is then refused; a catalog diff shows each changed
field before and after; a grant is added and deleted; the audit trail is filtered and its chain
verified. Every page is screenshotted at 1280 and 390 px wide into the run's artifacts
directory (``HUB_TEST_ARTIFACTS``, default ``.pytest-artifacts/console``), and at 390 px no page
scrolls sideways.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from playwright import async_api as playwright_api

from tests.console.live import ServedHub, served_hub
from tests.peers.fixtures import SdkPeerStarter, default_tools

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",  # no name resolves
]
ROOT = Path(__file__).resolve().parents[2]
WIDTHS = {"wide": (1280, 900), "narrow": (390, 844)}


def _artifacts() -> Path:
    base = Path(os.environ.get("HUB_TEST_ARTIFACTS") or ROOT / ".pytest-artifacts")
    path = base / "console"
    path.mkdir(parents=True, exist_ok=True)
    return path


class Api:
    """The REST API with one key (the setup an operator would do with the CLI)."""

    def __init__(self, http: httpx2.AsyncClient, key: str) -> None:
        self.http = http
        self.headers = {"authorization": f"Bearer {key}"}

    async def post(self, path: str, body: dict[str, Any] | None = None, status: int = 201) -> Any:
        response = await self.http.post(path, json=body or {}, headers=self.headers)
        assert response.status_code == status, response.text
        return response.json()["data"]


async def _setup(hub: ServedHub, http: httpx2.AsyncClient, peer_url: str) -> dict[str, Any]:
    platform = Api(http, hub.platform_key)
    tenant = await platform.post("/tenants", {"slug": "acme", "name": "Acme"})
    t = f"/tenants/{tenant['id']}"
    owner = await platform.post(
        f"{t}/principals", {"kind": "user", "name": "owner", "role": "tenant_admin"}
    )
    owner_key = (await platform.post(f"{t}/principals/{owner['id']}/keys"))["key"]
    admin = Api(http, owner_key)
    bot = await admin.post(f"{t}/principals", {"kind": "agent", "name": "bot", "role": "agent"})
    bot_key = (await admin.post(f"{t}/principals/{bot['id']}/keys"))["key"]
    await admin.post(f"{t}/servers", {"handle": "peer", "url": peer_url})
    # a row on the credentials page, whose hidden labels must not widen it at 390 px
    await admin.post(
        f"{t}/credentials",
        {
            "name": "a-credential-with-a-rather-long-name",
            "type": "secret",
            "secret": "not-sent-anywhere-0123456789",
        },
    )
    await admin.post(f"{t}/servers/peer/catalogs")
    await admin.post(
        f"{t}/grants",
        {"principal_id": bot["id"], "resource": "tool:peer.*", "action": "call", "effect": "allow"},
    )
    deployment = await admin.post(
        f"{t}/deployments",
        {
            "agent_id": bot["id"],
            "name": "support-bot",
            "entries": [{"server": "peer", "catalog_version": 1, "allow_without_ask": []}],
        },
    )
    return {
        "tenant": tenant["id"],
        "t": t,
        "admin": admin,
        "owner_key": owner_key,
        "bot": bot,
        "bot_key": bot_key,
        "deployment": deployment["id"],
    }


@contextlib.asynccontextmanager
async def _agent(hub: ServedHub, world: dict[str, Any]) -> AsyncIterator[Client]:
    headers = {"authorization": f"Bearer {world['bot_key']}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        url = f"{hub.url}{world['t']}/deployments/{world['deployment']}/mcp"
        async with Client(streamable_http_client(url, http_client=http), cache=None) as mcp:
            yield mcp


def _pending(result: Any) -> str:
    assert result.is_error is True
    approval = (result.meta or {})["io.mcphub/approval"]
    assert approval["status"] == "pending"
    assert approval["url"].endswith(f"/approvals/{approval['id']}")
    assert "/console/t/" in approval["url"]
    return str(approval["id"])


#: form controls without a label (``<label for>`` or ``aria-label``)
UNLABELLED = """() => [...document.querySelectorAll(
    'input:not([type=hidden]), select, textarea')].filter(
    e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label'))
    .map(e => e.name || e.id)"""

#: visible text whose WCAG contrast ratio against its (nearest opaque) background is below 4.5
LOW_CONTRAST = """() => {
  const rgb = s => s.match(/[0-9.]+/g).map(Number);
  const lum = ([r, g, b]) => {
    const f = c => {
      c /= 255;
      return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
    };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = e => {
    for (; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || c[3] > 0.99) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const bad = [];
  for (const e of document.querySelectorAll('body *')) {
    const own = [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own || !e.getClientRects().length || e.closest('.sr-only, .skip')) continue;
    const a = lum(rgb(getComputedStyle(e).color).slice(0, 3)), b = lum(background(e));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const text = e.textContent.trim().slice(0, 40);
    if (ratio < 4.5) bad.push(`${e.tagName}: ${text} ${ratio.toFixed(2)}`);
  }
  return bad;
}"""


async def _shots(page: Any, name: str) -> None:
    """The page at both widths, and no sideways scrolling on the narrow one; every control
    labelled and all text at WCAG AA contrast."""
    assert await page.evaluate(UNLABELLED) == [], name
    assert await page.evaluate(LOW_CONTRAST) == [], name
    for label, (width, height) in WIDTHS.items():
        await page.set_viewport_size({"width": width, "height": height})
        await page.screenshot(path=str(_artifacts() / f"{name}-{label}.png"), full_page=True)
        if label == "narrow":
            overflow = await page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, (name, overflow)
    await page.set_viewport_size({"width": 1280, "height": 900})


@pytest.mark.slow
async def test_the_console_in_chromium(tmp_path: Path, sdk_peer: SdkPeerStarter) -> None:
    peer = await sdk_peer("stateless")
    settings = {"HUB_ALLOW_LOOPBACK": "true", "HUB_APPROVAL_WAIT_S": "0"}
    with served_hub(tmp_path, _artifacts() / "hub-serve.log", **settings) as hub:
        async with httpx2.AsyncClient(base_url=hub.url, timeout=30) as http:
            world = await _setup(hub, http, peer.url)
            async with playwright_api.async_playwright() as pw:
                browser = await pw.chromium.launch(
                    executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
                )
                try:
                    page = await browser.new_page(viewport={"width": 1280, "height": 900})
                    await _journey(page, hub, http, world, peer)
                finally:
                    await browser.close()


async def _journey(
    page: Any, hub: ServedHub, http: httpx2.AsyncClient, world: dict[str, Any], peer: Any
) -> None:
    expect = playwright_api.expect
    console = f"{hub.url}/console/t/{world['tenant']}"

    # sign in: the console sends an anonymous visitor to the form, then back
    await page.goto(f"{console}/approvals")
    await expect(page.get_by_label("API key")).to_be_focused()
    await _shots(page, "01-sign-in")
    await page.get_by_label("API key").fill(world["owner_key"])
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("heading", name="Approvals", exact=True)).to_be_visible()
    # the contrast check is not vacuous: pale text added to the page is caught
    pale = "() => { const p = document.createElement('p'); p.id = 'pale'; p.textContent = 'pale';"
    pale += " p.style.color = '#bbbbbb'; document.querySelector('main').append(p); }"
    await page.evaluate(pale)
    assert any("pale" in found for found in await page.evaluate(LOW_CONTRAST))
    await page.evaluate("() => document.getElementById('pale').remove()")
    # keyboard: the first Tab reaches the skip link, which moves focus to the content
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(page.locator("main")).to_be_focused()
    cookies = await page.context.cookies()
    session = next(c for c in cookies if c["name"] == "hub_console")
    assert session["httpOnly"]
    assert session["sameSite"] == "Strict"
    assert session["path"] == "/console"

    async with _agent(hub, world) as agent:
        # the queue refreshes by itself when the SDK client's call starts waiting
        await expect(page.get_by_text("Nothing is waiting.")).to_be_visible()
        first = _pending(await agent.call_tool("peer__echo", {"text": "hello <b>world</b>"}))
        review = page.get_by_role("link", name="Review peer.echo")
        await expect(review).to_be_visible(timeout=10_000)
        await _shots(page, "02-approvals-queue")
        await review.click()
        await expect(page.locator("#arguments")).to_contain_text('"text": "hello <b>world</b>"')
        await _shots(page, "03-approval")
        await page.get_by_label("Note (optional)").fill("looks fine")
        await page.get_by_role("button", name="Approve").click()
        await expect(page.locator("#approval-status")).to_have_text("approved")
        done = await agent.call_tool("peer__echo", {"text": "hello <b>world</b>"})
        assert done.is_error is False
        text = done.content[0].text  # type: ignore[union-attr]
        assert json.loads(text) == {"text": "hello <b>world</b>"}

        # another call is denied: the agent's repeat is refused at once
        await page.goto(f"{console}/approvals")
        second = _pending(await agent.call_tool("peer__echo", {"text": "drop everything"}))
        assert second != first
        await page.goto(f"{console}/approvals/{second}")
        await page.get_by_role("button", name="Deny").click()
        await expect(page.locator("#approval-status")).to_have_text("denied")
        with pytest.raises(MCPError) as refused:
            await agent.call_tool("peer__echo", {"text": "drop everything"})
        assert refused.value.error.code == 40300

    # the deployment: each tool with its effective decision
    await page.get_by_role("link", name="Deployments").click()
    await page.get_by_role("link", name="support-bot").click()
    await expect(page.get_by_role("cell", name="peer.echo")).to_be_visible()
    await _shots(page, "04-deployment")

    # a catalog diff: the upstream changes, a second snapshot, the diff page
    tools = default_tools()
    tools[0] = {**tools[0], "description": "Returns its arguments, loudly."}
    peer.set_tools(tools[:-1])
    await world["admin"].post(f"{world['t']}/servers/peer/catalogs")
    await page.get_by_role("link", name="Servers").click()
    await _shots(page, "05-servers")
    await page.get_by_role("link", name="peer").click()
    await expect(page.get_by_role("link", name="v2")).to_be_visible()
    await _shots(page, "06-server")
    await page.get_by_role("button", name="Show the diff").click()
    await expect(page.get_by_role("heading", name="peer: v1 → v2")).to_be_visible()
    changed = page.locator("section.changed", has_text="echo")
    await expect(changed.locator(".diff-before")).to_contain_text("Returns its arguments.")
    await expect(changed.locator(".diff-after")).to_contain_text("loudly")
    await expect(page.locator("li", has_text="search_region")).to_be_visible()  # removed
    await _shots(page, "07-catalog-diff")

    # a grant added to the agent, then deleted
    await page.get_by_role("link", name="Grants").click()
    await page.locator("#show-principal").select_option(label="bot (agent, agent)")
    await page.get_by_role("button", name="Show").click()
    await page.get_by_label("Resource").first.fill("tool:peer.add")
    await page.locator("#add-action").select_option("call")
    await page.locator("#add-effect").select_option("deny")
    await page.get_by_role("button", name="Add", exact=True).click()
    row = page.locator("#grants tr", has_text="tool:peer.add")
    await expect(row).to_contain_text("deny")
    await _shots(page, "08-grants")
    await row.get_by_role("button").click()  # asks first, saying what a deny's going means
    await expect(page.get_by_role("heading", name="Delete this grant?")).to_be_visible()
    await expect(page.locator("main")).to_contain_text("effect is deny: once it is deleted")
    await page.get_by_role("button", name="Delete the grant").click()
    await expect(page.locator("#grants tr", has_text="tool:peer.add")).to_have_count(0)
    await page.locator("#check-resource").fill("tool:peer.echo")
    await page.locator("#check-action").select_option("call")
    await page.get_by_role("button", name="Check").click()
    await expect(page.locator("#check-result")).to_contain_text("allow")

    # credentials: metadata only
    await page.get_by_role("link", name="Credentials").click()
    await expect(page.get_by_role("heading", name="Credentials")).to_be_visible()
    await _shots(page, "09-credentials")

    # the audit trail, filtered, and its chain verified
    await page.get_by_role("link", name="Audit").click()
    await page.locator("#f-action").select_option("approval.decide")
    await page.get_by_role("button", name="Filter").click()
    rows = page.locator("#audit tbody tr")
    await expect(rows).to_have_count(2)
    for index in range(2):
        await expect(rows.nth(index)).to_contain_text("approval.decide")
    numbers = [int(await rows.nth(i).locator("td").first.inner_text()) for i in range(2)]
    assert numbers == sorted(numbers, reverse=True)  # newest first
    await _shots(page, "10-audit")
    await page.get_by_role("link", name="Verify the hash chain").click()
    await expect(page.locator("#verify-result")).to_contain_text("The chain is intact")
    await expect(page.locator("#anchor")).to_contain_text("hub audit verify --after ")
    await _shots(page, "11-audit-verify")

    # a 403 page and signing out
    await page.goto(f"{hub.url}/console/t/00000000-0000-4000-8000-000000000000/approvals")
    await expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await page.goto(f"{console}/approvals")
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
