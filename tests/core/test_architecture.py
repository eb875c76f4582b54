"""The dependency direction of docs/architecture.md, checked on every import in the tree."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STAGES = ("pipeline", "models", "services", "governance")

# stage -> top-level packages (or dotted prefixes) it may import
ALLOWED: dict[str, tuple[str, ...]] = {
    "linewatch": ("linewatch",),
    "pipeline": ("linewatch", "pipeline"),
    "models": ("linewatch", "models", "pipeline.features", "pipeline.decoders"),
    "services": ("linewatch", "services", "models"),
    "governance": ("linewatch", "governance", "models", "pipeline.features"),
}
PROJECT_PACKAGES = ("linewatch", *STAGES)


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return [n for n in names if n.split(".")[0] in PROJECT_PACKAGES]


def _allowed(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_imports_point_upstream_only() -> None:
    violations: list[str] = []
    for package, allowed in ALLOWED.items():
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if package == "linewatch" and rel.parts[1] == "cli":
                continue  # the CLI is the composition root
            for module in _imports(path):
                if not _allowed(module, allowed):
                    violations.append(f"{rel} imports {module}")
    assert not violations, "imports against docs/architecture.md:\n" + "\n".join(violations)
