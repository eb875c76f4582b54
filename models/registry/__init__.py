"""Model registry and cards (no torch needed).

>>> from models.registry import ModelRegistry, default_registry
"""

from models.registry.card import FileEntry, Latency, ModelCard
from models.registry.store import (
    DEFAULT_ROOT,
    IntegrityError,
    ModelRegistry,
    RegisteredModel,
    default_registry,
    sha256_file,
)

__all__ = [
    "DEFAULT_ROOT", "FileEntry", "IntegrityError", "Latency", "ModelCard", "ModelRegistry", "RegisteredModel",
    "default_registry", "sha256_file",
]
