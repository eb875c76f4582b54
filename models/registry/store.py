"""The model registry: ``<root>/<modality>/v<N>/`` directories, each with ONNX files and a card.

>>> import tempfile
>>> reg = ModelRegistry(tempfile.mkdtemp())
>>> reg.versions("thermal")
[]
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from models.registry.card import CARD_JSON, FileEntry, ModelCard
from models.specs import check_modality

_VERSION = re.compile(r"^v(\d+)$")
DEFAULT_ROOT = Path(__file__).resolve().parent.parent / "default"


def sha256_file(path: Path) -> str:
    """SHA-256 hex digest of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def file_entry(directory: Path, name: str) -> FileEntry:
    path = Path(directory) / name
    return FileEntry(path=name, bytes=path.stat().st_size, sha256=sha256_file(path))


@dataclass(frozen=True)
class RegisteredModel:
    """One version of one modality's model: its directory and card."""

    modality: str
    version: str
    directory: Path
    card: ModelCard

    def path(self, role: str | None = None) -> Path:
        """Absolute path of the file with ``role`` (default: the card's ``serving_role``)."""
        role = role or self.card.serving_role
        if role not in self.card.files:
            raise KeyError(f"{self.modality} {self.version} has no file with role {role!r}; roles: {sorted(self.card.files)}")
        return self.directory / self.card.files[role].path


class IntegrityError(RuntimeError):
    """A registered file does not match the SHA-256 recorded in its card."""


class ModelRegistry:
    """Versioned model directories under ``root`` (``models/default`` ships with the project)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def versions(self, modality: str) -> list[str]:
        """Complete versions of ``modality``, oldest first (``v1``, ``v2``, ...)."""
        base = self.root / check_modality(modality)
        if not base.is_dir():
            return []
        found = [p.name for p in base.iterdir() if _VERSION.match(p.name) and (p / CARD_JSON).is_file()]
        return sorted(found, key=lambda v: int(v[1:]))

    def modalities(self) -> list[str]:
        """Modalities with at least one version."""
        from models.specs import MODALITIES

        return [m for m in MODALITIES if self.versions(m)]

    def _resolve(self, modality: str, version: str | None) -> str:
        versions = self.versions(modality)
        if not versions:
            raise LookupError(
                f"no {modality} model in registry {self.root}: run `linewatch train --modality {modality}` "
                f"or point at the shipped models ({DEFAULT_ROOT})"
            )
        if version is None:
            return versions[-1]
        if version not in versions:
            raise LookupError(f"{modality} has no version {version!r} in {self.root}; available: {versions}")
        return version

    def version_dir(self, modality: str, version: str | None = None) -> Path:
        return self.root / modality / self._resolve(modality, version)

    def load_card(self, modality: str, version: str | None = None) -> ModelCard:
        """The card of ``version`` (default: latest)."""
        return ModelCard.load(self.version_dir(modality, version))

    def get(self, modality: str, version: str | None = None) -> RegisteredModel:
        v = self._resolve(modality, version)
        directory = self.root / modality / v
        return RegisteredModel(modality, v, directory, ModelCard.load(directory))

    def latest(self, modality: str) -> RegisteredModel:
        """The newest version of ``modality``."""
        return self.get(modality, None)

    def path_of(self, modality: str, role: str | None = None, version: str | None = None) -> Path:
        """Absolute path of a file (default role: the card's ``serving_role``, the CPU INT8 student)."""
        return self.get(modality, version).path(role)

    def verify(self, modality: str, version: str | None = None) -> None:
        """Raise :class:`IntegrityError` if any file differs from its recorded SHA-256."""
        model = self.get(modality, version)
        for role, entry in model.card.files.items():
            path = model.directory / entry.path
            if not path.is_file():
                raise IntegrityError(f"{path} ({role}) is missing: the model directory is incomplete; re-train or re-copy it")
            digest = sha256_file(path)
            if digest != entry.sha256:
                raise IntegrityError(
                    f"{path} ({role}) has sha256 {digest[:16]}…, card says {entry.sha256[:16]}…: "
                    "the file was modified after registration; re-train or restore it"
                )

    def next_version(self, modality: str) -> str:
        base = self.root / check_modality(modality)
        taken = [int(m.group(1)) for p in (base.iterdir() if base.is_dir() else []) if (m := _VERSION.match(p.name))]
        return f"v{max(taken, default=0) + 1}"

    def publish(self, modality: str, staging: Path) -> tuple[str, Path]:
        """Move a finished ``staging`` directory (with its card) in as the next version.

        The rename is atomic, so readers never see a half-written version. The card's
        ``version`` field is rewritten to the version actually assigned.
        """
        base = self.root / check_modality(modality)
        base.mkdir(parents=True, exist_ok=True)
        while True:
            version = self.next_version(modality)
            target = base / version
            try:
                target.mkdir()  # claim the name (fails if another trainer took it)
            except FileExistsError:
                continue
            break
        card = ModelCard.load(staging)
        card = card.model_copy(update={"version": version})
        card.save(staging)
        os.chmod(staging, 0o755)  # mkdtemp made it private; a registry is read by other services
        os.replace(staging, target)  # POSIX: renaming onto the empty claimed directory is atomic
        return version, target

    def remove(self, modality: str, version: str) -> None:
        shutil.rmtree(self.version_dir(modality, version))


def default_registry() -> ModelRegistry:
    """The registry of models shipped with the project (``models/default``)."""
    return ModelRegistry(DEFAULT_ROOT)
