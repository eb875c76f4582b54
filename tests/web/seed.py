"""A seeded line for the web tests, screenshots and benchmark: real feature messages (simulator frames and
clips through pipeline.features), verdicts, explanations and drift reports written with the contract classes.
"""

from __future__ import annotations

import time

import numpy as np
import redis

from linewatch.contract import (
    DriftFeature,
    DriftReport,
    Explanation,
    FeatureWeight,
    ModalityExplanation,
    ModelRef,
    PlcFeatures,
    RuleHit,
    StreamNames,
    Verdict,
    encode_message,
)
from linewatch.contract.plc_tags import PLC_TAGS

TYPES = {"PMP": "pump", "PRS": "press", "CNV": "conveyor"}


def asset_type(asset_id: str) -> str:
    return TYPES.get(asset_id[:3], "pump")


def add(client: redis.Redis, stream: str, msg: object, entry_id: str = "*") -> str:
    eid = client.xadd(stream, encode_message(msg), id=entry_id)  # type: ignore[arg-type]
    return eid.decode() if isinstance(eid, bytes) else str(eid)


def verdict(asset_id: str, label: str, state: str = "raised", severity: float = 0.8, confidence: float = 0.85,
            t_ms: int | None = None, withheld: dict[str, list[str]] | None = None,
            extrapolating: dict[str, list[str]] | None = None) -> Verdict:
    t = t_ms if t_ms is not None else int(time.time() * 1000)
    mods = {m: label for m in ("plc", "thermal", "audio")}
    return Verdict(asset_id=asset_id, event_time_ms=t, label=label, confidence=confidence, state=state,  # type: ignore[arg-type]
                   severity=severity if label != "normal" else 0.05, asset_type=asset_type(asset_id),
                   modalities=mods, instant_label=label, decided_at_ms=t, withheld=withheld or {},
                   extrapolating=extrapolating or {},
                   models={m: ModelRef(name=f"{m}-student", version="v4", sha256="ab" * 32) for m in mods})


def seed_features(client: redis.Redis, names: StreamNames, asset_id: str, fault: str = "bearing_wear",
                  severity: float = 0.8) -> dict[str, str]:
    """A simulator thermal frame and audio clip of ``asset_id`` with ``fault``, through pipeline.features."""
    from linewatch.simulator.config import SimulatorConfig
    from linewatch.simulator.dataset import SampleRenderer, dataset_fleet, make_spec
    from pipeline.features.messages import audio_features_message, thermal_features_message

    cfg = SimulatorConfig()
    fleet = dataset_fleet(cfg)
    asset = next((a for a in fleet if a.asset_id == asset_id), fleet[0])
    sample = SampleRenderer(cfg, fleet).render(make_spec(asset, fault, severity))
    now = int(time.time() * 1000)
    th = thermal_features_message(asset_id, asset_type(asset_id), now, sample.frame, source=f"thermal/{asset_id}")
    au = audio_features_message(asset_id, asset_type(asset_id), now, sample.clip.astype(np.float32) / 32768.0,
                                16_000, source=f"audio/{asset_id}")
    return {"thermal": add(client, names.features("thermal", asset_id), th),
            "audio": add(client, names.features("audio", asset_id), au)}


def seed_plc_hour(client: redis.Redis, names: StreamNames, asset_id: str, minutes: int = 60) -> int:
    """One PLC feature window a minute over the last hour (entry ids in the past: call on a fresh stream)."""
    from pipeline.features.plc_window import plc_feature_names

    fnames = plc_feature_names()
    now = int(time.time() * 1000)
    rng = np.random.default_rng(7)
    stream = names.features("plc", asset_id)
    base = {"motor_current_a": 12.0, "speed_rpm": 1480.0, "bearing_temp_c": 45.0, "winding_temp_c": 60.0,
            "vibration_rms_mm_s": 2.0, "pressure_bar": 4.0, "run_state": 1.0}
    for i in range(minutes):
        t = now - (minutes - i) * 60_000
        values = np.zeros(len(fnames), np.float32)
        for tag in PLC_TAGS:
            trend = 1.0 + (0.25 * i / minutes if tag in ("bearing_temp_c", "vibration_rms_mm_s") else 0.0)
            values[fnames.index(f"{tag}.mean")] = base[tag] * trend * (1 + 0.01 * rng.normal())
        msg = PlcFeatures(asset_id=asset_id, asset_type=asset_type(asset_id), window_start_ms=t - 1000,
                          window_end_ms=t, event_time_ms=t, features_version=3, feature_names=fnames, values=values,
                          n_samples=10, source=f"plc/{asset_id}")
        add(client, stream, msg, f"{t}-0")
    return minutes


def explanation(verdict_entry_id: str, asset_id: str, label: str, alert_id: str = "",
                features: dict[str, str] | None = None) -> Explanation:
    features = features or {}
    yy, xx = np.mgrid[0:120, 0:160]
    thermal_hm = (np.exp(-((yy - 60) ** 2 + (xx - 100) ** 2) / 300.0) - 0.15 * np.exp(
        -((yy - 30) ** 2 + (xx - 40) ** 2) / 500.0)).astype(np.float32)
    audio_hm = np.zeros((64, 101), np.float32)
    audio_hm[30:45, :] = 0.4
    ref = {m: ModelRef(name=f"{m}-student", version="v4", sha256="ab" * 32) for m in ("thermal", "audio", "plc")}
    mods = [
        ModalityExplanation(modality="thermal", model=ref["thermal"], explained_label=label, probability=0.82,
                            top_features=[FeatureWeight(name="de_bearing.max_rise", weight=0.31, value=18.2),
                                          FeatureWeight(name="motor_body.p90_rise", weight=0.12, value=9.5),
                                          FeatureWeight(name="coupling.mean_rise", weight=-0.05, value=2.1)],
                            stability=0.86, num_samples=500, seed=0, features_entry_id=features.get("thermal", "")),
        ModalityExplanation(modality="audio", model=ref["audio"], explained_label=label, probability=0.74,
                            top_features=[FeatureWeight(name="env_ratio_bpfo", weight=0.27, value=0.41),
                                          FeatureWeight(name="spectral_kurtosis_max", weight=0.15, value=7.9)],
                            stability=0.71, num_samples=500, seed=0, features_entry_id=features.get("audio", "")),
        ModalityExplanation(modality="plc", model=ref["plc"], explained_label=label, probability=0.66,
                            top_features=[FeatureWeight(name="bearing_temp_c.mean", weight=0.22, value=56.3),
                                          FeatureWeight(name="vibration_rms_mm_s.max", weight=0.18, value=4.9),
                                          FeatureWeight(name="speed_rpm.std", weight=-0.04, value=3.0)],
                            stability=0.9, num_samples=500, seed=0),
    ]
    hit = RuleHit(rule_id="bearing-outer-race", label=label, cause="Outer-race bearing defect: envelope energy at BPFO "
                  "and a hot drive-end bearing", action="Check drive-end bearing lubrication; plan replacement "
                  "within 2 weeks", conditions=["env_ratio_bpfo > 0.3", "de_bearing.max_rise > 12 K"])
    return Explanation(explanation_id=verdict_entry_id, verdict_entry_id=verdict_entry_id, alert_id=alert_id,
                       asset_id=asset_id, asset_type=asset_type(asset_id), label=label,
                       event_time_ms=int(time.time() * 1000), modalities=mods, rule_hits=[hit], agreement=True,
                       agreement_detail="LIME's top thermal and audio features are the rule's conditions",
                       explained_at_ms=int(time.time() * 1000), thermal_heatmap=thermal_hm, audio_heatmap=audio_hm)


def seed_drift(client: redis.Redis, names: StreamNames, windows: int = 12) -> None:
    now = int(time.time() * 1000)
    for i in range(windows):
        end = now - (windows - i) * 60_000
        shift = i / windows
        feats = [DriftFeature(name="motor_body.mean_rise", statistic=0.1 + 0.5 * shift, p_value=10 ** (-4 * shift),
                              p_adjusted=min(1.0, 3 * 10 ** (-4 * shift)), effect_size=shift, drifted=shift > 0.5),
                 DriftFeature(name="ambient_c_over_40", statistic=0.05, p_value=0.6, p_adjusted=1.0, effect_size=0.02,
                              drifted=False)]
        drifted = shift > 0.5
        add(client, names.drift(), DriftReport(
            kind="feature", scope="asset", asset_id="PMP-01", modality="thermal", window_start_ms=end - 60_000,
            window_end_ms=end, n_live=120, n_reference=256, drifted=drifted, state="raised" if drifted else "normal",
            cause="sensor" if drifted else "", cause_detail="only PMP-01's camera shifts; its PLC temperatures do not"
            if drifted else "", correction="bh", alpha=0.05, features=feats, detector="ks", decided_at_ms=end))
        add(client, names.drift(), DriftReport(
            kind="shadow", scope="fleet", asset_id="fleet", modality="thermal", window_start_ms=end - 60_000,
            window_end_ms=end, n_live=40, n_reference=0, drifted=False, error_rate=0.05 + 0.1 * shift,
            detector="ADWIN", model=ModelRef(name="thermal-student", version="v4"), decided_at_ms=end))
