from __future__ import annotations

import re
from pathlib import Path

import pytest

from linewatch.contract import Modality, StreamNames, shard_of


def test_shard_is_stable_and_in_range() -> None:
    ids = [f"PMP-{i:02d}" for i in range(200)]
    shards = [shard_of(a, 4) for a in ids]
    assert shards == [shard_of(a, 4) for a in ids]
    assert set(shards) == {0, 1, 2, 3}


def test_names_cover_modalities_and_shards() -> None:
    names = StreamNames(prefix="x", shards=3)
    assert names.all_feature_streams() == [f"x:features:{m.value}:{{s{s}}}" for m in Modality for s in range(3)]
    assert names.features("audio", "A") == names.features_shard(Modality.AUDIO, names.shard_of("A"))
    assert names.predictions("plc", "A").startswith("x:predictions:plc:{s")
    with pytest.raises(ValueError, match="out of range"):
        names.features_shard("plc", 3)
    with pytest.raises(ValueError):
        names.features("smell", "A")


def test_keys_written_together_share_a_hash_slot() -> None:
    """Redis Cluster: every key one script touches must hash to one slot (else CROSSSLOT)."""
    from redis.crc import key_slot

    names = StreamNames(prefix="lw", shards=4)
    for shard in range(4):
        together = [names.features_shard(m, shard) for m in Modality] + [
            names.predictions_shard(m, shard) for m in Modality] + [
            names.verdicts_shard(shard), names.lease("fusion", shard), names.stage_state("fusion", shard),
            names.lease("inference.thermal", shard)] + [names.ingest_marks(m, shard) for m in Modality]
        assert len({key_slot(k.encode()) for k in together}) == 1, together
        assert all(k.startswith("lw:") for k in together)  # SCAN MATCH lw:* and ACL ~lw:* still cover them
    assert len({key_slot(names.verdicts_shard(s).encode()) for s in range(4)}) == 4  # shards spread out
    assert key_slot(names.ingest_dedup("0f").encode()) == key_slot(names.deadletter.encode())
    assert key_slot(names.ingest_request_dedup("0f").encode()) == key_slot(names.alert_requests().encode())
    for bad in ("", "l{w", "lw}"):
        with pytest.raises(ValueError, match="brace|non-empty"):
            StreamNames(prefix=bad)


CONTRACT_FAMILIES = ("features", "predictions", "verdicts", "alerts", "deadletter", "audit", "alert-requests",
                     "feedback", "explanations", "drift", "shadow", "lease", "members", "state", "alert-state", "ingest")


def _spelled_keys(path: Path) -> list[str]:
    """String literals (docstrings aside) that spell a contract key: ``"lw:verdicts..."`` or
    ``f"{prefix}:ingest:..."``; such a key would miss the hash tags StreamNames adds."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    family = "|".join(re.escape(f) for f in CONTRACT_FAMILIES)
    literal, formatted = re.compile(rf"^lw:({family})\b"), re.compile(rf"^:({family})\b")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if literal.match(node.value):
                found.append(f"{path}:{node.lineno}: {node.value!r}")
        elif isinstance(node, ast.JoinedStr):
            for before, part in zip(node.values, node.values[1:]):
                if (isinstance(before, ast.FormattedValue) and "prefix" in ast.unparse(before.value)
                        and isinstance(part, ast.Constant) and formatted.match(str(part.value))):
                    found.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_code_spells_a_stream_key() -> None:
    root = Path(__file__).resolve().parents[2]
    found = []
    for folder in ("linewatch", "pipeline", "services", "models", "governance", "bench", "scripts", "deploy", "tests"):
        for path in sorted((root / folder).rglob("*.py")) if (root / folder).is_dir() else []:
            if path.name != "streams.py" or "contract" not in path.parts:
                found += _spelled_keys(path)
    assert not found, "use linewatch.contract.StreamNames methods instead:\n" + "\n".join(found)
