"""The web app in a real browser: Debian's headless Chromium driven by Playwright, against the real server,
the real alerts service and a real Redis. Live updates are awaited with Playwright's polling ``expect``."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Browser, Page, expect, sync_playwright

from linewatch.contract import StreamNames
from tests.services.support import wait_for
from tests.web import seed
from tests.web.support import PASSWORDS, VENDOR, WebStack, web_stack

CHROMIUM = os.environ.get("LINEWATCH_CHROMIUM", "/usr/bin/chromium")
AXE = (VENDOR / "axe.min.js").read_text()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        raise RuntimeError(f"no Chromium at {CHROMIUM}: `apt-get install chromium` (scripts/install.sh does it as "
                           "root) or set LINEWATCH_CHROMIUM")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield b
        b.close()


@pytest.fixture
def stack(redis_client: redis.Redis, stream_names: StreamNames, tmp_path: Path) -> Iterator[WebStack]:
    with web_stack(redis_client, stream_names, tmp_path) as s:
        yield s


def log_in(page: Page, stack: WebStack, user: str, path: str = "/") -> None:
    page.goto(stack.url + path)
    expect(page).to_have_url(re.compile(r"/login\?next="))
    page.get_by_label("User name").fill(user)
    page.get_by_label("Password").fill(PASSWORDS[user])
    page.get_by_role("button", name="Log in").click()
    expect(page).not_to_have_url(re.compile(r"/login"))


def serious_violations(page: Page) -> list[str]:
    page.evaluate(AXE)
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
            for v in result["violations"] if v["impact"] in ("serious", "critical")]


def test_fault_appears_live_is_acknowledged_by_keyboard_and_explained(browser: Browser, stack: WebStack) -> None:
    seed.add(stack.client, stack.names.verdicts("CNV-03"), seed.verdict("CNV-03", "normal", "normal"))
    context = browser.new_context(viewport={"width": 1024, "height": 768})  # a tablet in landscape
    page = context.new_page()
    csp_errors: list[str] = []
    page.on("console", lambda m: csp_errors.append(m.text) if "Content Security Policy" in m.text else None)
    log_in(page, stack, "erin")
    expect(page.get_by_role("heading", name="Line overview")).to_be_visible()
    expect(page.locator("#live-status")).to_contain_text("updates arrive")
    expect(page.locator("#asset-CNV-03")).to_contain_text("normal")

    # a fault appears: fusion's verdict -> the real alerts service -> lw:alerts -> server-sent event
    verdict_id = seed.add(stack.client, stack.names.verdicts("PMP-07"), seed.verdict("PMP-07", "bearing_wear"))
    row = page.locator("#asset-PMP-07")
    expect(row.locator("td.verdict")).to_contain_text("bearing_wear", timeout=15_000)
    expect(row.locator("td.alert")).to_contain_text("unacknowledged", timeout=15_000)
    rec = stack.store.list(asset_id="PMP-07")[0]
    expect(row.locator("td.alert")).to_contain_text(rec.priority.upper())

    # the inbox, by keyboard only: j focuses the first (unacknowledged) alert, Tab its Acknowledge, Enter
    page.get_by_role("link", name="Alerts", exact=True).click()
    expect(page.get_by_role("heading", name="Alert inbox")).to_be_visible()
    page.keyboard.press("j")
    card = page.locator(f"#alert-{rec.alert_id}")
    expect(card).to_be_focused()
    page.keyboard.press("Tab")
    expect(card.locator("button.ack")).to_be_focused()
    page.keyboard.press("Enter")
    expect(card.locator(".state")).to_have_text("acknowledged")
    acked = stack.store.get(rec.alert_id)
    assert acked is not None and acked.acked_by == "erin"
    assert [(e.event, e.user) for _, e in stack.store.events(20, rec.alert_id)][-1] == ("acknowledged", "erin")

    # a second fault arrives while the inbox is open: it shows up live, unacknowledged first
    seed.add(stack.client, stack.names.verdicts("PRS-02"), seed.verdict("PRS-02", "electrical_overheating"))
    expect(page.locator("article.alert-card").first).to_contain_text("PRS-02: electrical_overheating",
                                                                     timeout=15_000)
    expect(card).to_be_focused()  # the re-render kept the keyboard focus where it was

    # explain arrives (governance writes it); the inbox links to it without a reload
    feats = seed.seed_features(stack.client, stack.names, "PMP-07")
    seed.add(stack.client, stack.names.explanations(),
             seed.explanation(verdict_id, "PMP-07", "bearing_wear", rec.alert_id, feats))
    page.locator(f"#alert-{rec.alert_id}").get_by_role("link", name="Explanation").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Why PMP-07: bearing_wear")
    expect(page.get_by_text("Outer-race bearing defect")).to_be_visible()
    expect(page.get_by_text("Rules and LIME agree")).to_be_visible()
    heatmap = page.locator("img[src$='/heatmap/thermal.png']")
    expect(heatmap).to_be_visible()
    page.wait_for_function("img => img.complete && img.naturalWidth > 300", arg=heatmap.element_handle())
    assert not csp_errors, csp_errors
    context.close()


def test_operator_cannot_open_admin_or_engineer_pages_and_anonymous_is_sent_to_login(browser: Browser,
                                                                                    stack: WebStack) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.goto(stack.url + "/admin/users")
    expect(page).to_have_url(re.compile(r"/login\?next=/admin/users"))
    log_in(page, stack, "olga", "/alerts")
    expect(page.get_by_role("heading", name="Alert inbox")).to_be_visible()
    expect(page.get_by_role("link", name="Users")).to_have_count(0)
    for path in ("/admin/users", "/admin/settings", "/drift"):
        response = page.goto(stack.url + path)
        assert response is not None and response.status == 403, path
        expect(page.get_by_text("olga (operator) may not open this")).to_be_visible()
    context.close()


def test_every_page_has_no_serious_accessibility_violations(browser: Browser, stack: WebStack) -> None:
    names, client = stack.names, stack.client
    seed.seed_plc_hour(client, names, "PMP-01")
    feats = seed.seed_features(client, names, "PMP-01")
    for asset in ("PRS-02", "CNV-03"):
        seed.add(client, names.verdicts(asset), seed.verdict(asset, "normal", "normal"))
    vid = seed.add(client, names.verdicts("PMP-01"), seed.verdict("PMP-01", "bearing_wear"))
    rec = wait_for(lambda: next(iter(stack.store.list(asset_id="PMP-01")), None), 15, "alert")
    seed.add(client, names.explanations(), seed.explanation(vid, "PMP-01", "bearing_wear", rec.alert_id, feats))  # type: ignore[attr-defined]
    seed.seed_drift(client, names)
    # axe is injected into the page: this context lets it in past the app's Content-Security-Policy
    context = browser.new_context(bypass_csp=True)
    page = context.new_page()
    page.goto(stack.url + "/login")
    found = {"/login": serious_violations(page)}
    log_in(page, stack, "adam")
    for path in ("/", "/alerts", "/assets/PMP-01", "/explanations", f"/explanations/{vid}", "/drift", "/models",
                 "/admin/users", "/admin/settings"):
        response = page.goto(stack.url + path)
        assert response is not None and response.status == 200, path
        page.wait_for_load_state("load")
        found[path] = serious_violations(page)
    context.close()
    assert not any(found.values()), {p: v for p, v in found.items() if v}
