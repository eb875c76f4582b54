"""Pages and JSON API on seeded real data: plots are real images, flood groups fold, the inbox orders
unacknowledged first, card plots cannot be used to read other files."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import matplotlib.image
import pytest
import redis

from linewatch.contract import StreamNames
from linewatch.service_settings import AlertsSettings
from tests.services.support import wait_for
from tests.web import seed
from tests.web.support import WebStack, csrf_of, web_stack


@pytest.fixture
def stack(redis_client: redis.Redis, stream_names: StreamNames, tmp_path: Path) -> Iterator[WebStack]:
    with web_stack(redis_client, stream_names, tmp_path,
                   alerts_settings=AlertsSettings(block_ms=100, flood_threshold=3)) as s:
        yield s


def _image(data: bytes) -> tuple[int, int]:
    img = matplotlib.image.imread(io.BytesIO(data), format="png")
    return int(img.shape[0]), int(img.shape[1])


def test_plots_are_images_of_the_data(stack: WebStack) -> None:
    h = stack.http("erin")
    empty = _image(h.get("/api/v1/assets/PMP-01/thermal.png").content)  # "no thermal frame" message
    seed.seed_plc_hour(stack.client, stack.names, "PMP-01")
    feats = seed.seed_features(stack.client, stack.names, "PMP-01")
    vid = seed.add(stack.client, stack.names.verdicts("PMP-01"), seed.verdict("PMP-01", "bearing_wear"))
    seed.add(stack.client, stack.names.explanations(), seed.explanation(vid, "PMP-01", "bearing_wear", "", feats))
    seed.seed_drift(stack.client, stack.names)
    for path in ("/api/v1/assets/PMP-01/thermal.png", "/api/v1/assets/PMP-01/spectrogram.png",
                 "/api/v1/assets/PMP-01/plc.png", f"/api/v1/explanations/{vid}/heatmap/thermal.png",
                 f"/api/v1/explanations/{vid}/heatmap/audio.png", f"/api/v1/explanations/{vid}/bars/plc.png",
                 "/api/v1/drift/pvalues.png", "/api/v1/drift/shadow.png",
                 "/api/v1/drift/distribution.png?modality=thermal&feature=motor_body.mean_rise"):
        r = h.get(path)
        assert r.status_code == 200 and r.headers["content-type"] == "image/png", path
        height, width = _image(r.content)
        assert height > 2 * empty[0] and width > 300, (path, height, width)
    body = h.get(f"/api/v1/explanations/{vid}").json()
    assert body["rule_hits"][0]["action"].startswith("Check drive-end bearing")
    assert body["thermal_heatmap"]["shape"] == [120, 160]
    # the router keeps the *latest* verdict's entry id; the explanation names the raising verdict and no
    # alert id: the inbox still links them (same asset and fault, explained while the alert is open)
    wait_for(lambda: stack.store.list(asset_id="PMP-01"), 15, "alert")
    later = seed.add(stack.client, stack.names.verdicts("PMP-01"), seed.verdict("PMP-01", "bearing_wear", severity=0.7))
    wait_for(lambda: stack.store.list(asset_id="PMP-01")[0].verdict_entry_id == later, 15, "alert update")
    assert f'href="/explanations/{vid}"' in h.get("/alerts").text
    assert f'href="/explanations/{vid}"' not in stack.http("olga").get("/alerts").text  # operators: no link
    asset = h.get("/assets/PMP-01").text
    assert "bearing_temp_c" in asset and "bearing_wear" in asset
    assert h.get("/api/v1/explanations/0-0").status_code == 404


def test_asset_page_says_what_a_modality_could_not_judge(stack: WebStack) -> None:
    """A verdict whose audio was read without the machine's healthy sound shows audio's withheld
    imbalance as a badge on that verdict's row, in the page and the API; a verdict without one shows none.
    So does a verdict whose thermal model extrapolated for the machine."""
    t = 1_700_000_000_000
    far = ["global.hot_outside_regions_frac", "motor_body.mean_rise", "rel.de_minus_body"]
    seed.add(stack.client, stack.names.verdicts("PRS-02"),
             seed.verdict("PRS-02", "normal", state="normal", t_ms=t, withheld={"audio": ["imbalance"]},
                          extrapolating={"thermal": far}))
    seed.add(stack.client, stack.names.verdicts("PRS-02"), seed.verdict("PRS-02", "normal", state="normal", t_ms=t + 1000))
    h = stack.http("olga")
    page = h.get("/assets/PRS-02").text
    assert page.count('class="badge withheld"') == 1
    assert "not judged: imbalance" in page and 'title="audio could not judge imbalance' in page
    assert page.count('class="badge extrapolating"') == 1
    assert "thermal's model reads 3 inputs far outside its training range here (global.hot_outside_regions_frac" in page
    verdicts = h.get("/api/v1/assets/PRS-02").json()["verdicts"]
    assert sorted(str(v["withheld"]) for v in verdicts) == ["{'audio': ['imbalance']}", "{}"]
    assert sorted(str(v["extrapolating"]) for v in verdicts) == ["{'thermal': " + str(far) + "}", "{}"]


def test_inbox_orders_unacknowledged_first_and_folds_flood_groups(stack: WebStack) -> None:
    assets = ["PMP-01", "PRS-02", "CNV-03", "PMP-04", "PRS-05", "CNV-06"]
    for a in assets:  # more than flood_threshold (3) new alerts: the rest join one flood group
        seed.add(stack.client, stack.names.verdicts(a), seed.verdict(a, "bearing_wear"))
    wait_for(lambda: any(r.is_group and len(r.members) == 3 for r in stack.store.list()), 15, "flood group")
    h = stack.http("olga")
    alerts = h.get("/api/v1/alerts").json()
    first = next(a for a in alerts if not a["is_group"] and not a["group_id"])
    h.post(f"/alerts/{first['alert_id']}/ack", data={"csrf_token": csrf_of(h)})
    states = [a["state"] for a in h.get("/api/v1/alerts").json()]
    assert states.index("acknowledged") > max(i for i, s in enumerate(states) if s == "unacknowledged")
    page = h.get("/alerts").text
    assert "Flood group: 3 alerts folded" in page
    assert page.count('class="alert-card') == 4  # 3 alerts + 1 group; members only inside the group
    assert page.index(f"alert-{first['alert_id']}\"") > page.index("unacknowledged")
    # shelve with expiry and a reason; invalid durations are refused with the store's reason
    token = csrf_of(h)
    r = h.post(f"/alerts/{first['alert_id']}/shelve", data={"csrf_token": token, "minutes": "30", "comment": "parts"})
    assert r.status_code == 303
    rec = stack.store.get(first["alert_id"])
    assert rec is not None and rec.shelved_by == "olga" and rec.shelve_reason == "parts"
    assert h.post(f"/alerts/{first['alert_id']}/shelve", data={"csrf_token": token, "minutes": "5000"}).status_code == 422
    assert "Shelved (1)" in h.get("/alerts").text


def test_model_cards_and_no_path_tricks(stack: WebStack) -> None:
    h = stack.http("erin")
    cards = h.get("/api/v1/models").json()
    assert {c["modality"] for c in cards} == {"plc", "thermal", "audio"}
    thermal = next(c for c in cards if c["modality"] == "thermal")
    assert thermal["gates"]["passed"] in (True, False) and thermal["metrics"]
    plot = next(p for p in thermal["plots"] if p.startswith("confusion"))
    assert h.get(f"/api/v1/models/thermal/{thermal['version']}/plots/{plot}").content[:4] == b"\x89PNG"
    for bad in ("..%2Fcard.json", "card.json", "..%2F..%2Ffusion_recall_vs_severity.png"):
        assert h.get(f"/api/v1/models/thermal/{thermal['version']}/plots/{bad}").status_code == 404
    assert "Gates: passed" in h.get("/models").text or "Gates: FAILED" in h.get("/models").text


def test_newest_features_of_an_asset_are_found_behind_other_assets(redis_client: redis.Redis,
                                                                   stream_names: StreamNames) -> None:
    from linewatch.contract import Modality
    from services.web.data import LineReader
    from tests.services.support import features

    feats = seed.seed_features(redis_client, stream_names, "PMP-01")
    other = next(a for a in (f"PMP-{i:02d}" for i in range(2, 99))
                 if stream_names.shard_of(a) == stream_names.shard_of("PMP-01"))
    for t in range(40):  # 40 newer frames of another asset on the same shard: more than two pages
        seed.add(redis_client, stream_names.features("thermal", other), features("thermal", other, t))
    reader = LineReader(redis_client, stream_names)
    got = reader.latest_features(Modality.THERMAL, "PMP-01")
    assert got is not None and got[0] == feats["thermal"]
    assert reader.latest_features(Modality.THERMAL, "PMP-01", scan=32) is None  # the bound holds
    assert reader.latest_features(Modality.THERMAL, "PRS-77") is None


def test_asset_page_lists_the_inputs_the_line_refused_and_why(stack: WebStack) -> None:
    """A covered lens and a frozen microphone of one asset are dead letters; its page and API list them
    with the reason and what to check, newest first; another asset's are not shown."""
    from linewatch.contract import DeadLetter, DeadLetterReason

    def letter(asset: str, source: str, reason: DeadLetterReason, detail: str, ref: str, at: int) -> DeadLetter:
        return DeadLetter(source=source, reason=reason, detail=detail, raw_ref=ref, asset_id=asset, failed_at_ms=at)

    t = 1_700_000_000_000
    for d in (letter("PMP-01", "pipeline.thermal", DeadLetterReason.NO_SIGNAL,
                     "the frame has no contrast: check the camera's view", "thermal/frames/PMP-01/a.tiff", t),
              letter("PRS-02", "pipeline.plc", DeadLetterReason.SCHEMA_ERROR, "no timestamp column", "plc/b.csv", t + 1),
              letter("PMP-01", "pipeline.audio", DeadLetterReason.DUPLICATE,
                     "the clip is bit for bit the last accepted audio clip: check that the microphone updates",
                     "audio/clips/PMP-01/c.wav", t + 2)):
        seed.add(stack.client, stack.names.deadletter, d)
    h = stack.http("olga")
    page = h.get("/assets/PMP-01").text
    assert "Inputs refused" in page and page.count('class="badge refused"') == 2
    assert page.index("check that the microphone updates") < page.index("check the camera&#39;s view")
    assert "no timestamp column" not in page
    refused = h.get("/api/v1/assets/PMP-01").json()["refused_inputs"]
    assert [(r["reason"], r["raw_ref"]) for r in refused] == [("duplicate", "audio/clips/PMP-01/c.wav"),
                                                             ("no_signal", "thermal/frames/PMP-01/a.tiff")]
    assert "Inputs refused" not in h.get("/assets/CNV-03").text  # nothing refused: no section
