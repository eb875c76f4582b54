"""One fault verdict → one :class:`~linewatch.contract.Explanation`: LIME per modality on the deployed
models, the rule engine on the same features, and whether the two agree.

The features are the entries the verdict's predictions were made from (the service fetches them);
each modality's model is the exact file that predicted (found in the registry by the prediction's
model version and SHA-256), opened with ONNX Runtime in-process.
"""

from __future__ import annotations

from typing import Any

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from governance.explain.heatmaps import audio_png, audio_weight_map, bars_png, thermal_png, thermal_weight_map
from governance.explain.lime_tabular import LimeResult, VectorLime
from governance.explain.signals import FAULT_SIGNALS, signal_group
from governance.rules import RuleSet
from linewatch.contract import (
    AudioFeatures,
    Explanation,
    FeatureWeight,
    ModalityExplanation,
    ModelRef,
    PlcFeatures,
    RuleHit,
    ThermalFeatures,
    Verdict,
)
from linewatch.explain_settings import ExplainSettings
from models.inputs import InputMismatchError, input_array
from models.missing_tags import HealthyFill
from models.registry import ModelRegistry
from models.registry.store import DEFAULT_ROOT
from pipeline.features.asset_profile import AssetProfile
from pipeline.features.thermal_regions import scaled_regions

log = logging.getLogger("governance.explain")
FeaturesMessage = PlcFeatures | ThermalFeatures | AudioFeatures
MODALITIES = ("plc", "thermal", "audio")


@dataclass(frozen=True)
class ExplainInput:
    """One modality's evidence behind a verdict: its features entry and the model that predicted."""

    modality: str
    features: FeaturesMessage
    features_entry_id: str = ""
    model: ModelRef | None = None


@dataclass
class LoadedModel:
    """A registry model opened for explanation."""

    modality: str
    ref: ModelRef
    classes: tuple[str, ...]
    names: tuple[str, ...]
    lime: VectorLime
    #: What a PLC tag the historian lacks reads as, as the inference service read it (:mod:`models.missing_tags`).
    fill: HealthyFill | None = None

    def model_input(self, x: NDArray[Any]) -> NDArray[Any]:
        """The input the model read for the features vector ``x`` (what LIME explains)."""
        return x if self.fill is None else self.fill.apply(x)


class ModelBank:
    """Opens (once) the registry model a prediction came from: same version, and the file whose
    SHA-256 the prediction names (else the card's serving file)."""

    def __init__(self, registry: Path | None = None, method: str = "mask") -> None:
        self.registry = ModelRegistry(registry or DEFAULT_ROOT)
        self.method = method
        self._open: dict[tuple[str, str, str], LoadedModel] = {}

    def get(self, modality: str, ref: ModelRef | None = None) -> LoadedModel:
        version = ref.version if ref is not None and ref.version in self.registry.versions(modality) else None
        registered = self.registry.get(modality, version)
        card = registered.card
        role = card.serving_role
        if ref is not None and ref.sha256:
            role = next((r for r, f in card.files.items() if f.sha256 == ref.sha256), role)
        key = (modality, registered.version, role)
        if key not in self._open:
            from models.runtime import OnnxRuntimeRunner

            runtime = OnnxRuntimeRunner(registered.path(role))
            ref_npz = np.load(registered.directory / "reference.npz")
            names = tuple(str(n) for n in ref_npz["names"])
            lime = VectorLime(ref_npz["features"], names, card.classes, runtime.predict,
                              reference_labels=ref_npz["labels"], method=self.method)
            fill = (HealthyFill.from_reference(ref_npz["features"], ref_npz["labels"], names,
                                               list(card.classes).index("normal"))
                    if "normal" in card.classes else None)
            self._open[key] = LoadedModel(modality, ModelRef(name=card.name, version=card.version,
                                                             sha256=card.files[role].sha256),
                                          tuple(card.classes), names, lime, fill)
        return self._open[key]


@dataclass
class ModalityResult:
    """What :class:`VerdictExplainer` computed for one modality (kept for the PNG and the message)."""

    explanation: ModalityExplanation
    lime: LimeResult
    heatmap: NDArray[Any] = field(default_factory=lambda: np.zeros(0, np.float32))


class VerdictExplainer:
    """LIME + rules + agreement for one verdict (see the module docstring)."""

    def __init__(self, settings: ExplainSettings, rules: RuleSet, out_dir: Path | None,
                 profiles: Mapping[str, AssetProfile] | None = None, models: ModelBank | None = None) -> None:
        self.settings = settings
        self.rules = rules
        self.out_dir = out_dir
        self.profiles = dict(profiles or {})
        self.models = models or ModelBank(settings.registry)

    def explain(self, verdict: Verdict, verdict_entry_id: str, inputs: Sequence[ExplainInput],
                now_ms: int | None = None) -> Explanation:
        s = self.settings
        label = verdict.label
        results: list[ModalityResult] = []
        rule_features: dict[str, dict[str, float]] = {}
        profile = self.profiles.get(verdict.asset_id)
        skipped: list[str] = []
        for item in sorted(inputs, key=lambda i: MODALITIES.index(i.modality)):
            try:
                model = self.models.get(item.modality, item.model)
                x = input_array(item.modality, item.features)
            except (LookupError, FileNotFoundError, InputMismatchError) as exc:
                skipped.append(f"{item.modality}: {exc}")
                continue
            if x.shape[0] != len(model.names):
                skipped.append(f"{item.modality}: {x.shape[0]} input values, the model reads {len(model.names)}")
                continue
            rule_features[item.modality] = {n: float(v) for n, v in zip(model.names, x, strict=True)}
            if label not in model.classes:
                continue
            n = s.num_samples.get(item.modality, 600)
            res = model.lime.explain(model.model_input(x), model.classes.index(label), n, s.seeds, s.top_k)
            heatmap = self._heatmap(item, res, profile)
            top = [FeatureWeight(name=f"{item.modality}.{name}", weight=round(w, 6), value=round(v, 6))
                   for name, w, v in res.top(s.top_k)]
            results.append(ModalityResult(ModalityExplanation(
                modality=item.modality, model=model.ref, explained_label=label, probability=res.probability,
                top_features=top, stability=round(res.stability, 4), num_samples=n, seed=res.seeds[0],
                features_entry_id=item.features_entry_id, latency_ms=round(res.seconds * 1000.0, 2)), res, heatmap))
        hits = self.rules.evaluate(rule_features)
        agree, detail = agreement(label, results, hits)
        if skipped:
            log.warning("modalities not explained", extra={"asset_id": verdict.asset_id, "why": skipped})
            detail += "; not explained: " + "; ".join(skipped)
        if verdict.extrapolating:  # the fusion counted these for less (Verdict.extrapolating, models.training_range)
            detail += "; " + "; ".join(
                f"{m}'s model extrapolated for this machine ({len(names)} inputs far outside its training range: "
                f"{', '.join(names[:3])}{', …' if len(names) > 3 else ''}): its LIME weights explain a guess"
                for m, names in sorted(verdict.extrapolating.items()))
        png = self._write_pngs(verdict, verdict_entry_id, inputs, results, profile) if s.write_png and self.out_dir else {}
        modalities = [r.explanation.model_copy(update={"heatmap_png": png.get(r.explanation.modality, "")})
                      for r in results]
        maps = {r.explanation.modality: r.heatmap for r in results}
        return Explanation(
            explanation_id=verdict_entry_id, verdict_entry_id=verdict_entry_id, asset_id=verdict.asset_id,
            asset_type=verdict.asset_type, label=label, event_time_ms=verdict.event_time_ms, modalities=modalities,
            rule_hits=hits, agreement=agree, agreement_detail=detail,
            explained_at_ms=now_ms if now_ms is not None else int(time.time() * 1000),
            thermal_heatmap=maps.get("thermal", np.zeros(0, np.float32)),
            audio_heatmap=maps.get("audio", np.zeros(0, np.float32)))

    def boxes(self, profile: AssetProfile | None, shape: tuple[int, int]) -> dict[str, tuple[int, int, int, int]]:
        return scaled_regions(profile, shape) if profile is not None and profile.regions else {}

    def _heatmap(self, item: ExplainInput, res: LimeResult, profile: AssetProfile | None) -> NDArray[Any]:
        msg = item.features
        if isinstance(msg, ThermalFeatures) and msg.frame.ndim == 2:
            shape = (int(msg.frame.shape[0]), int(msg.frame.shape[1]))
            return thermal_weight_map(shape, self.boxes(profile, shape), res.names, res.weights)
        if isinstance(msg, AudioFeatures) and msg.logmel.ndim == 2:
            shape = (int(msg.logmel.shape[0]), int(msg.logmel.shape[1]))
            return audio_weight_map(shape, res.names, res.weights, res.values, profile)
        return np.zeros(0, np.float32)

    def _write_pngs(self, verdict: Verdict, verdict_id: str, inputs: Sequence[ExplainInput],
                    results: Sequence[ModalityResult], profile: AssetProfile | None) -> dict[str, str]:
        assert self.out_dir is not None
        folder = self.out_dir / verdict_id
        by_modality = {i.modality: i.features for i in inputs}
        out: dict[str, str] = {}
        for r in results:
            m = r.explanation.modality
            top = [(n, w) for n, w, _ in r.lime.top(self.settings.top_k)]
            title = (f"{verdict.asset_id} {verdict.label}: {m} p={r.lime.probability:.2f} "
                     f"stability={r.lime.stability:.2f}")
            msg = by_modality[m]
            path = folder / f"{m}.png"
            if isinstance(msg, ThermalFeatures) and r.heatmap.size:
                shape = (int(msg.frame.shape[0]), int(msg.frame.shape[1]))
                thermal_png(path, msg.frame, r.heatmap, self.boxes(profile, shape), top, title)
            elif isinstance(msg, AudioFeatures) and r.heatmap.size:
                audio_png(path, msg.logmel, r.heatmap, top, title)
            else:
                bars_png(path, top, title)
            out[m] = str(path)
        return out


def agreement(label: str, results: Sequence[ModalityResult], hits: Sequence[RuleHit]) -> tuple[bool, str]:
    """LIME and the rules agree when a rule for the verdict's label fired and its conditions read a
    signal group that is among LIME's top features pushing towards that label (positive weight)."""
    lime_groups: dict[str, list[str]] = {}
    for r in results:
        for fw in r.explanation.top_features:
            if fw.weight > 0:
                modality, _, name = fw.name.partition(".")
                group = signal_group(modality, name)
                if group != "context":
                    lime_groups.setdefault(group, []).append(fw.name)
    same_label = [h for h in hits if h.label == label]
    if not hits:
        return False, f"no rule fired; LIME points at {_groups(lime_groups)}"
    if not same_label:
        return False, (f"rules point at {', '.join(sorted({h.label for h in hits}))}, the verdict is {label}; "
                       f"LIME points at {_groups(lime_groups)}")
    for hit in same_label:
        groups = {signal_group(c.split(".", 1)[0], c.split(" ", 1)[0].split(".", 1)[1]) for c in hit.conditions}
        common = groups & set(lime_groups)
        if common:
            return True, (f"rule {hit.rule_id} and LIME both point at {label} through "
                          f"{', '.join(sorted(common))} ({', '.join(sorted({f for g in common for f in lime_groups[g]}))})")
    expected = FAULT_SIGNALS.get(label, frozenset())
    return False, (f"rule {same_label[0].rule_id} fired for {label} but LIME's top features point at "
                   f"{_groups(lime_groups)} (expected signals: {', '.join(sorted(expected)) or 'n/a'})")


def _groups(groups: Mapping[str, list[str]]) -> str:
    return ", ".join(sorted(groups)) or "no located signal"
