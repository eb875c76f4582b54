"""Screenshots of every page of the web app into docs/screenshots/, from a seeded line.

    PYTHONPATH=. .venv/bin/python scripts/web_screenshots.py [--redis-url redis://127.0.0.1:6379/0]

Seeds a unique stream prefix on the given Redis (deleted afterwards): ten assets' verdicts (three faults,
raised as alerts by the real alerts service), simulator thermal frames and audio clips through
pipeline.features, an hour of PLC windows, an explanation and drift reports; then drives Debian's
Chromium with Playwright through each page.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from playwright.sync_api import expect, sync_playwright  # noqa: E402

from linewatch.redis_connection import RedisConnectionSettings, redis_client  # noqa: E402
from linewatch.contract import StreamNames  # noqa: E402
from tests.services.support import wait_for  # noqa: E402
from tests.web import seed  # noqa: E402
from tests.web.support import PASSWORDS, web_stack  # noqa: E402

ASSETS = ["PMP-01", "PRS-02", "CNV-03", "PMP-04", "PRS-05", "CNV-06", "PMP-07", "PRS-08", "CNV-09", "PMP-10"]
FAULTS = {"PMP-01": ("bearing_wear", 0.85), "PRS-05": ("electrical_overheating", 0.6), "CNV-09": ("imbalance", 0.35)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    client = redis_client(RedisConnectionSettings(url=args.redis_url))
    names = StreamNames(f"shot{uuid.uuid4().hex[:8]}", 4)
    try:
        with tempfile.TemporaryDirectory() as tmp, web_stack(client, names, Path(tmp)) as stack:
            seed.seed_plc_hour(client, names, "PMP-01")
            feats = seed.seed_features(client, names, "PMP-01")
            verdict_ids = {}
            for asset in ASSETS:
                label, sev = FAULTS.get(asset, ("normal", 0.0))
                verdict_ids[asset] = seed.add(client, names.verdicts(asset), seed.verdict(
                    asset, label, "raised" if label != "normal" else "normal", severity=sev or 0.05))
            wait_for(lambda: len(stack.store.list()) == len(FAULTS), 15, "alerts")
            rec = stack.store.list(asset_id="PMP-01")[0]
            stack.store.ack(stack.store.list(asset_id="CNV-09")[0].alert_id, "olga", "checking the belt")
            seed.add(client, names.explanations(), seed.explanation(verdict_ids["PMP-01"], "PMP-01", "bearing_wear",
                                                                     rec.alert_id, feats))
            seed.seed_drift(client, names)
            shots = [("overview", "/"), ("inbox", "/alerts"), ("asset", "/assets/PMP-01"),
                     ("explanation", f"/explanations/{verdict_ids['PMP-01']}"), ("drift", "/drift"),
                     ("models", "/models"), ("users", "/admin/users"), ("api-docs", "/api/v1/docs")]
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=args.chromium, headless=True)
                for name, viewport in (("desktop", {"width": 1280, "height": 900}),
                                       ("tablet", {"width": 768, "height": 1024})):
                    page = browser.new_page(viewport=viewport)  # type: ignore[arg-type]
                    page.goto(stack.url + "/login")
                    if name == "desktop":
                        page.screenshot(path=str(args.out / "login.png"))
                    page.get_by_label("User name").fill("adam")
                    page.get_by_label("Password").fill(PASSWORDS["adam"])
                    page.get_by_role("button", name="Log in").click()
                    expect(page.locator("#live-status")).to_contain_text("updates arrive")
                    for shot, path in shots if name == "desktop" else shots[:2]:
                        page.goto(stack.url + path)
                        page.wait_for_load_state("networkidle")
                        out = args.out / (f"{shot}.png" if name == "desktop" else f"{shot}-tablet.png")
                        page.screenshot(path=str(out), full_page=shot not in ("api-docs",))
                        print(out.relative_to(REPO))
                browser.close()
    finally:
        keys = list(client.scan_iter(match=f"{names.prefix}:*", count=1000))
        if keys:
            client.delete(*keys)


if __name__ == "__main__":
    main()
