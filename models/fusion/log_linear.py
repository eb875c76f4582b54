"""Weighted log-linear pooling ("product of experts") of calibrated modality probabilities.

For classes ``c`` and the modalities ``m`` present, the fused distribution is

    log p(c) ∝ b[c] + Σ_m (β[m, c] + w[m, c] · log p_m(c))    (classes impossible for the asset type removed)

where ``p_m`` is renormalised over the classes modality ``m`` may name (``visible``: a microphone
names bearing wear and cavitation, not a loose lug it cannot hear)

with per-modality, per-class weights ``w`` (how far a modality is trusted on a class: a PLC window
barely sees a bearing defect the microphone hears clearly) a per-class log-prior ``b`` (the
fused false-alarm budget: ``b[normal]`` > 0 asks for more evidence before a fault) and per-modality
offsets ``β`` that only count when the modality is present. The fused log-scores are divided by a
temperature ``T`` before the softmax (fitted last, on the validation NLL: the pooled experts are
overconfident, ``models.fusion.fit.fit_fused_temperature``); it never changes the top class. The
shipped values are fitted on the validation split (``models.fusion.fit``, ``models/default/fusion.json``).
Missing modalities are skipped, never waited for; they lower ``confidence`` by the share of weight
that is missing (``coverage``).

>>> r = fuse({"audio": {"normal": 0.1, "bearing_wear": 0.9}, "thermal": {"normal": 0.4, "bearing_wear": 0.6}},
...          classes=("normal", "bearing_wear"), expected=("audio", "thermal", "plc"))
>>> r.label, r.contributing, r.missing
('bearing_wear', ('audio', 'thermal'), ('plc',))
>>> round(r.probabilities["bearing_wear"], 3), round(r.coverage, 3)
(0.931, 0.667)
>>> fuse({}, classes=("normal", "bearing_wear")).label
'normal'
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from models.withheld_classes import drop_withheld

#: Probabilities are floored here before the log, so one confident zero cannot veto a class.
PROBABILITY_FLOOR = 1e-4


@dataclass(frozen=True)
class FusionWeights:
    """``weights[modality][class]`` (missing entries: ``default``); ``bias[class]`` (log-prior,
    missing: 0); ``impossible[asset_type]`` lists classes an asset type cannot have (e.g.
    cavitation on a conveyor): the key is matched exactly, else as a part of the type name
    (``pump`` matches ``centrifugal_pump``), else ``*`` applies to every other known type.

    >>> FusionWeights(impossible={"pump": [], "*": ["cavitation"]}).impossible_for("centrifugal_pump")
    set()
    >>> sorted(FusionWeights(impossible={"pump": [], "*": ["cavitation"]}).impossible_for("fan"))
    ['cavitation']
    """

    weights: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    default: float = 1.0
    impossible: Mapping[str, Sequence[str]] = field(default_factory=dict)
    bias: Mapping[str, float] = field(default_factory=dict)
    #: ``visible[modality]``: the fault classes a modality may name (besides the first class,
    #: ``normal``); its probabilities are renormalised over those before pooling. A modality not
    #: listed may name every class.
    visible: Mapping[str, Sequence[str]] = field(default_factory=dict)
    #: ``modality_bias[modality][class]``: a log-offset added when that modality is present (it
    #: cancels the class prior the modality's own calibration baked in; absent modality: nothing).
    modality_bias: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    #: Divides the fused log-scores before the softmax (> 0; 1: none). Fitted on the validation
    #: split after everything else, so the fused probabilities (``confidence``, the verdict's
    #: ``severity``) mean what they say; the label is the same at any temperature.
    temperature: float = 1.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.temperature) and self.temperature > 0):
            raise ValueError(f"fusion temperature must be a positive number, got {self.temperature!r}: "
                             "refit the fusion (scripts/refit_fusion.py) or remove the key (1: none)")

    def restrict(self, modality: str, probabilities: Mapping[str, float], classes: Sequence[str]) -> dict[str, float]:
        """``probabilities`` renormalised over what ``modality`` may name (see ``visible``).

        >>> w = FusionWeights(visible={"audio": ["bearing_wear"]})
        >>> w.restrict("audio", {"normal": 0.2, "bearing_wear": 0.2, "imbalance": 0.6}, ("normal", "bearing_wear", "imbalance"))
        {'normal': 0.5, 'bearing_wear': 0.5, 'imbalance': 0.0}
        """
        if modality not in self.visible:
            return {c: float(probabilities.get(c, 0.0)) for c in classes}
        allowed = {classes[0], *self.visible[modality]}
        kept = {c: (float(probabilities.get(c, 0.0)) if c in allowed else 0.0) for c in classes}
        total = sum(kept.values())
        return {c: v / total for c, v in kept.items()} if total > 0 else {c: float(probabilities.get(c, 0.0))
                                                                             for c in classes}

    def weight(self, modality: str, cls: str) -> float:
        return float(self.weights.get(modality, {}).get(cls, self.default))

    def impossible_for(self, asset_type: str | None) -> set[str]:
        """Classes ``asset_type`` cannot have (none for an unknown type)."""
        if not asset_type or asset_type == "unknown":
            return set()
        t = asset_type.lower()
        if t in self.impossible:
            return set(self.impossible[t])
        for key, classes in self.impossible.items():
            if key != "*" and key in t:
                return set(classes)
        return set(self.impossible.get("*", ()))

    def modality_weight(self, modality: str, classes: Sequence[str]) -> float:
        """Mean weight of a modality over ``classes`` (its share in ``coverage``)."""
        return sum(self.weight(modality, c) for c in classes) / max(len(classes), 1)

    @classmethod
    def load(cls, path: str | Path) -> FusionWeights:
        """From a JSON file ``{"weights": {...}, "default": 1.0, "impossible": {...}}``."""
        raw = json.loads(Path(path).read_text())
        return cls(weights=raw.get("weights", {}), default=float(raw.get("default", 1.0)),
                   impossible=raw.get("impossible", {}), bias=raw.get("bias", {}), visible=raw.get("visible", {}),
                   modality_bias=raw.get("modality_bias", {}), temperature=float(raw.get("temperature", 1.0)))

    def to_json(self) -> dict:
        return {"weights": {m: dict(w) for m, w in self.weights.items()}, "default": self.default,
                "impossible": {k: list(v) for k, v in self.impossible.items()}, "bias": dict(self.bias),
                "visible": {k: list(v) for k, v in self.visible.items()},
                "modality_bias": {m: dict(b) for m, b in self.modality_bias.items()},
                "temperature": self.temperature}


@dataclass(frozen=True)
class FusionResult:
    """The fused distribution and how much evidence stands behind it."""

    label: str
    probabilities: dict[str, float]
    confidence: float  #: top probability × coverage
    coverage: float  #: share of the expected modalities' weight that was present (0..1)
    contributing: tuple[str, ...]
    missing: tuple[str, ...]


def fuse(
    per_modality: Mapping[str, Mapping[str, float]],
    *,
    classes: Sequence[str],
    weights: FusionWeights | None = None,
    expected: Sequence[str] | None = None,
    asset_type: str | None = None,
    withheld: Mapping[str, Collection[str]] | None = None,
) -> FusionResult:
    """Fuse ``{modality: {class: probability}}`` into one :class:`FusionResult` over ``classes``.

    With no modality present the result is the uniform distribution over the possible classes,
    labelled with the first class (``normal``), confidence 0. ``withheld[modality]``: classes that
    modality's input cannot show (:mod:`models.withheld_classes`): their probability is dropped (the
    rest renormalised) and the modality's term for them equals its term for the first class, so it
    is neutral on them (neither raises nor vetoes what the others say).

    >>> w = FusionWeights(visible={"audio": ["imbalance"]})
    >>> cls = ("normal", "imbalance")
    >>> loud = {"audio": {"normal": 0.1, "imbalance": 0.9}, "plc": {"normal": 0.2, "imbalance": 0.8}}
    >>> fuse(loud, classes=cls, weights=w).label
    'imbalance'
    >>> round(fuse(loud, classes=cls, weights=w, withheld={"audio": ["imbalance"]}).probabilities["imbalance"], 3)
    0.8
    >>> warm = fuse(loud, classes=cls, weights=FusionWeights(visible={"audio": ["imbalance"]}, temperature=2.0))
    >>> warm.label, round(warm.probabilities["imbalance"], 3)   # the same label, less sure
    ('imbalance', 0.857)
    """
    withheld = withheld or {}
    weights = weights or FusionWeights()
    expected = tuple(expected) if expected is not None else tuple(per_modality)
    impossible = weights.impossible_for(asset_type)
    possible = [c for c in classes if c not in impossible] or list(classes)
    present = tuple(m for m in per_modality if per_modality[m])
    scores = {c: float(weights.bias.get(c, 0.0)) if present else 0.0 for c in possible}
    for m in present:
        probs = weights.restrict(m, per_modality[m], classes)
        blind = [c for c in withheld.get(m, ()) if c in possible and c != possible[0]]
        if blind:
            probs = drop_withheld(probs, blind, classes)
        total = sum(max(float(probs.get(c, 0.0)), 0.0) for c in possible) or 1.0
        offsets = weights.modality_bias.get(m, {})
        term = {c: float(offsets.get(c, 0.0)) + weights.weight(m, c) * math.log(
            max(max(float(probs.get(c, 0.0)), 0.0) / total, PROBABILITY_FLOOR)) for c in possible}
        for c in blind:
            term[c] = term[possible[0]]
        for c in possible:
            scores[c] += term[c]
    top = max(scores.values())
    exp = {c: math.exp((s - top) / weights.temperature) for c, s in scores.items()}
    z = sum(exp.values())
    fused = {c: (exp[c] / z if c in exp else 0.0) for c in classes}
    label = max(possible, key=lambda c: fused[c]) if present else possible[0]
    all_mods = tuple(dict.fromkeys((*expected, *present)))
    want = sum(weights.modality_weight(m, possible) for m in all_mods) or 1.0
    have = sum(weights.modality_weight(m, possible) for m in present)
    coverage = min(have / want, 1.0)
    confidence = fused[label] * coverage if present else 0.0
    missing = tuple(m for m in expected if m not in present)
    return FusionResult(label, fused, confidence, coverage, present, missing)


def temper(probabilities: Mapping[str, float], power: float) -> dict[str, float]:
    """``p^power`` renormalised: flattens a distribution (``power`` < 1) when its model is known to
    be extrapolating (input far outside its training range), so that it cannot outvote the other
    modalities with a confident guess.

    >>> {k: round(v, 3) for k, v in temper({"normal": 0.01, "imbalance": 0.99}, 0.3).items()}
    {'normal': 0.201, 'imbalance': 0.799}
    """
    raised = {c: max(float(p), 0.0) ** power for c, p in probabilities.items()}
    total = sum(raised.values()) or 1.0
    return {c: v / total for c, v in raised.items()}
