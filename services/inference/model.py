"""The model an inference service serves: found in the registry, verified, opened with a runtime.

A model whose files do not match the SHA-256 in its card is refused at start
(:class:`ModelRefused`): a service never serves a model nobody can trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from linewatch.contract import ModelRef
from linewatch.service_settings import InferenceSettings
from models.missing_tags import HealthyFill
from models.registry import ModelRegistry
from models.registry.card import ModelCard
from models.registry.store import DEFAULT_ROOT, IntegrityError
from models.runtime import Runtime, RuntimeSettings, load_runtime
from models.runtime.model_dir import canonical_flavour
from models.runtime.onnxruntime_runner import OrtOptions
from models.training_range import TrainingRange


class ModelRefused(RuntimeError):
    """The model cannot be served (missing, card does not verify, wrong modality)."""


@dataclass
class ServedModel:
    """A verified model and its open runtime."""

    modality: str
    directory: Path
    card: ModelCard
    runtime: Runtime
    ref: ModelRef
    flavour: str
    #: What a PLC tag the historian lacks reads as (:mod:`models.missing_tags`); None: inputs as they are.
    fill: HealthyFill | None = field(default=None)
    #: The range of the model's reference sample of training inputs; None: the card has none.
    training_range: TrainingRange | None = field(default=None)

    @property
    def classes(self) -> list[str]:
        return list(self.runtime.classes or self.card.classes)

    @property
    def sample_shape(self) -> tuple[int | None, ...]:
        return self.runtime.input_spec.sample_shape

    def model_input(self, x: np.ndarray) -> np.ndarray:
        """What the model reads for the features message's vector ``x``: a PLC tag the machine's historian
        lacks at the model's healthy median (:class:`~models.missing_tags.HealthyFill`), else ``x``."""
        return x if self.fill is None else self.fill.apply(x)

    def beyond_training(self, model_input: np.ndarray) -> dict[str, int]:
        """The inputs of ``model_input`` (:meth:`model_input`'s vector) far outside the training range:
        ``{input name: +1 above, -1 below}`` (:mod:`models.training_range`); none without a reference sample."""
        return {} if self.training_range is None else self.training_range.beyond(model_input)

    def fit(self, x: np.ndarray) -> np.ndarray:
        """``x`` shaped as the model's sample (a pure reshape, e.g. adding a channel axis), or ValueError."""
        want = self.sample_shape
        if x.shape == tuple(want):
            return x
        if all(d is not None for d in want) and int(np.prod(want)) == x.size:  # type: ignore[arg-type]
            return x.reshape(want)  # type: ignore[arg-type]
        wanted = "(" + ", ".join("?" if d is None else str(d) for d in want) + ")"
        raise ValueError(f"input of shape {x.shape} does not fit model input {wanted}")


def _served_role(card: ModelCard, flavour: str, path: Path | None) -> str | None:
    for role, entry in card.files.items():
        if path is not None and entry.path == path.name:
            return role
    for role in card.files:
        if canonical_flavour(role) == flavour:
            return role
    return None


def load_served_model(settings: InferenceSettings, modality: str) -> ServedModel:
    """Find, verify and open the ``modality`` model named by ``settings`` (see InferenceSettings)."""
    registry = ModelRegistry(settings.registry or DEFAULT_ROOT)
    try:
        registered = registry.get(modality, settings.model_version)
        registry.verify(modality, registered.version)
    except (LookupError, FileNotFoundError) as exc:
        raise ModelRefused(f"no servable {modality} model: {exc}") from exc
    except IntegrityError as exc:
        raise ModelRefused(f"refusing to serve {modality} {registered.version}: its card does not verify: {exc}") from exc
    card = registered.card
    if card.modality != modality:
        raise ModelRefused(f"{registered.directory} is a {card.modality} model, not {modality}: fix the registry")
    rt_settings = RuntimeSettings(
        kind=settings.backend, flavour=settings.flavour, ort=OrtOptions(intra_op_threads=settings.intra_op_threads),
        triton_url=settings.triton_url, triton_protocol=settings.triton_protocol,
        triton_model_name=settings.triton_model_name,
    )
    runtime = load_runtime(registered.directory, settings=rt_settings)
    path = getattr(runtime, "model_path", None) or getattr(runtime, "engine_path", None)
    flavour = settings.flavour
    if flavour is None:
        from models.runtime.factory import default_flavour

        flavour = default_flavour(registered.directory, settings.backend)
    role = _served_role(card, canonical_flavour(flavour), Path(path).with_suffix(".onnx") if path else None)
    if role is None:
        raise ModelRefused(f"{registered.directory}: the served file ({flavour}) is not listed in the card; "
                           "its SHA-256 cannot be verified")
    ref = ModelRef(name=card.name, version=card.version, sha256=card.files[role].sha256)
    classes = tuple(runtime.classes or ())
    if classes and list(classes) != list(card.classes):
        raise ModelRefused(f"runtime classes {classes} differ from the card's {card.classes}")
    return ServedModel(modality, registered.directory, card, runtime, ref, canonical_flavour(flavour),
                       HealthyFill.of_model(registered), TrainingRange.of_model(registered))
