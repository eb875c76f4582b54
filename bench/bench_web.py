"""Web app: alert written -> visible in a browser (p50/p99) under reference-line verdict traffic, and the
server's CPU with 20 connected server-sent-event clients.

    PYTHONPATH=. .venv/bin/python bench/bench_web.py \
        [--trials 120] [--clients 20] [--cpu-seconds 30] [--verdict-rate 40]

Setup (all real): Redis on 127.0.0.1:6379 (a unique prefix, deleted afterwards); the alerts service's
workers (router) in this process; ``linewatch serve web`` as its own process (its CPU is read from
/proc); verdict traffic of the reference line (10 assets, ``--verdict-rate`` verdicts/s in all: fusion
evaluates each asset on every prediction, 2 thermal + 1 audio + 1 PLC per second); one headless Chromium
page on the line overview; ``--clients`` extra SSE clients (httpx, API token) that read every event.

Latency: an ``AlertRequest`` (raise, new episode) goes to the router; the router writes the alert to
``lw:alerts`` (``Alert.created_at_ms``); the tailer pushes it; the page's DOM shows the alert id in the
asset's row (a MutationObserver in the page stamps ``Date.now()``). Same machine, same clock.
Reported: alert written -> visible, and request written -> visible (includes the router).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402
import redis  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402

from linewatch.redis_connection import RedisConnectionSettings, redis_client  # noqa: E402
from linewatch.contract import Alert, AlertRequest, StreamNames, decode_message, encode_message  # noqa: E402
from linewatch.service_settings import AlertsSettings  # noqa: E402
from services.web.users import UserDB  # noqa: E402
from tests.web import seed  # noqa: E402

ASSETS = ["PMP-01", "PRS-02", "CNV-03", "PMP-04", "PRS-05", "CNV-06", "PMP-07", "PRS-08", "CNV-09", "PMP-10"]
OBSERVER = """() => {
  window.__seen = {};
  const tbody = document.querySelector('#overview tbody');
  const scan = () => {
    for (const td of tbody.querySelectorAll('td.alert')) {
      const m = td.textContent.match(/\\((A-\\d+)\\)/);
      if (m && !(m[1] in window.__seen)) window.__seen[m[1]] = Date.now();
    }
  };
  new MutationObserver(scan).observe(tbody, {subtree: true, childList: true, characterData: true});
  scan();
}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def verdict_load(client: redis.Redis, names: StreamNames, rate: float, stop: threading.Event) -> None:
    i = 0
    period = 1.0 / rate
    next_t = time.monotonic()
    while not stop.is_set():
        asset = ASSETS[i % len(ASSETS)]
        seed.add(client, names.verdicts(asset), seed.verdict(asset, "normal", "normal", confidence=0.9))
        i += 1
        next_t += period
        stop.wait(max(0.0, next_t - time.monotonic()))


def sse_client(url: str, token: str, stop: threading.Event, counts: list[int], k: int) -> None:
    try:
        with httpx.Client(timeout=None) as h, h.stream("GET", url + "/api/v1/events",
                                                       headers={"Authorization": f"Bearer {token}"}) as r:
            for line in r.iter_lines():
                if line.startswith("event:"):
                    counts[k] += 1
                if stop.is_set():
                    break
    except httpx.HTTPError:  # the server went away at the end of the run
        return


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    ap.add_argument("--trials", type=int, default=120)
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--cpu-seconds", type=float, default=30.0)
    ap.add_argument("--verdict-rate", type=float, default=40.0)
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--json", type=Path, default=REPO / "bench" / "results" / "web.json")
    args = ap.parse_args()

    from services.alerts.service import alert_workers

    client = redis_client(RedisConnectionSettings(url=args.redis_url))
    names = StreamNames(f"bweb{uuid.uuid4().hex[:8]}", 4)
    tmp = Path(tempfile.mkdtemp(prefix="bench-web-"))
    users = UserDB(tmp / "web" / "users.db")
    users.add_user("bench", "bench-password", "operator")
    token = users.create_token("bench", "bench")
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(REPO), LINEWATCH_REDIS__URL=args.redis_url,
               LINEWATCH_STREAMS__PREFIX=names.prefix, LINEWATCH_STREAMS__SHARDS="4", LINEWATCH_DATA_DIR=str(tmp),
               LINEWATCH_WEB__PORT=str(port))
    log = open(tmp / "web.log", "wb")  # noqa: SIM115
    server = subprocess.Popen([sys.executable, "-m", "linewatch.cli.app", "serve", "web"], env=env, stdout=log,
                              stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    stop = threading.Event()
    workers = alert_workers(client, names, AlertsSettings(block_ms=100, flood_threshold=100_000), mqtt=False)
    threads = [threading.Thread(target=w.run, daemon=True) for w in workers]
    result: dict[str, object] = {}
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/healthz").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            stop.wait(0.1)
        load = threading.Thread(target=verdict_load, args=(client, names, args.verdict_rate, stop), daemon=True)
        load.start()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, headless=True)
            page = browser.new_page()
            page.goto(url + "/login")
            page.get_by_label("User name").fill("bench")
            page.get_by_label("Password").fill("bench-password")
            page.get_by_role("button", name="Log in").click()
            expect(page.locator("#live-status")).to_contain_text("updates arrive")
            expect(page.locator("#overview tbody tr[data-asset]")).to_have_count(len(ASSETS), timeout=20_000)
            page.evaluate(OBSERVER)

            # CPU with the page only, then with --clients more SSE clients
            stop.wait(3.0)
            c0, t0 = cpu_seconds(server.pid), time.monotonic()
            stop.wait(args.cpu_seconds / 2)
            cpu_page_only = (cpu_seconds(server.pid) - c0) / (time.monotonic() - t0)
            counts = [0] * args.clients
            sse = [threading.Thread(target=sse_client, args=(url, token, stop, counts, k), daemon=True)
                   for k in range(args.clients)]
            for t in sse:
                t.start()
            stop.wait(3.0)
            connected = int(next(line.split()[-1] for line in httpx.get(
                url + "/metrics", headers={"Authorization": f"Bearer {token}"}).text.splitlines()
                if line.startswith("linewatch_web_sse_clients ")).split(".")[0])
            c0, t0, n0 = cpu_seconds(server.pid), time.monotonic(), sum(counts)
            stop.wait(args.cpu_seconds)
            elapsed = time.monotonic() - t0
            cpu_clients = (cpu_seconds(server.pid) - c0) / elapsed
            events_per_s = (sum(counts) - n0) / elapsed / max(1, args.clients)

            # latency: alert written -> visible, with the clients still connected
            written: dict[str, int] = {}
            requested: dict[str, int] = {}
            for i in range(args.trials):
                asset = ASSETS[i % len(ASSETS)]
                t_req = int(time.time() * 1000)
                client.xadd(names.alert_requests(), encode_message(AlertRequest(
                    source="bench", episode_key=f"bench:{i}", asset_id=asset, label="bench_fault", severity=0.7,
                    state="raise", event_time_ms=t_req)))
                alert_id = None
                deadline = time.monotonic() + 10
                while alert_id is None and time.monotonic() < deadline:
                    for _, fields in client.xrevrange(names.alerts, count=20):
                        a = decode_message(fields)
                        if isinstance(a, Alert) and a.event == "raised" and a.episode_key == f"bench:{i}":
                            alert_id = a.alert_id
                            written[alert_id] = a.created_at_ms
                            requested[alert_id] = t_req
                            break
                    else:
                        stop.wait(0.005)
                assert alert_id is not None, f"trial {i}: the router raised no alert"
                page.wait_for_function("id => id in window.__seen", arg=alert_id, timeout=10_000)
                client.xadd(names.alert_requests(), encode_message(AlertRequest(
                    source="bench", episode_key=f"bench:{i}", asset_id=asset, label="bench_fault", severity=0.7,
                    state="clear", event_time_ms=int(time.time() * 1000))))
                stop.wait(0.1 + 0.1 * (i % 3))
            seen = page.evaluate("() => window.__seen")
            browser.close()
        lat = [seen[a] - written[a] for a in written]
        lat_req = [seen[a] - requested[a] for a in written]
        result = {
            "trials": len(lat), "clients": args.clients, "sse_clients_connected": connected,
            "verdict_rate_per_s": args.verdict_rate,
            "alert_written_to_visible_ms": {"p50": statistics.median(lat), "p99": pct(lat, 0.99), "max": max(lat)},
            "request_written_to_visible_ms": {"p50": statistics.median(lat_req), "p99": pct(lat_req, 0.99)},
            "server_cpu_cores": {"one_page": round(cpu_page_only, 3), f"page_plus_{args.clients}_clients":
                                 round(cpu_clients, 3)},
            "events_per_s_per_client": round(events_per_s, 1),
            "cpus": os.cpu_count(),
        }
    finally:
        stop.set()
        for w in workers:
            w.stop()
        for t in threads:
            t.join(timeout=30)
        server.terminate()
        server.wait(timeout=30)
        keys = list(client.scan_iter(match=f"{names.prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
    print(json.dumps(result, indent=2))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
