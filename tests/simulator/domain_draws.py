"""A domain option that is off in the shipped domains draws its ``Asset.extra`` key per machine only when
set, as the last draw of the machine's stream: every other key of every machine is what it was."""

from __future__ import annotations

from dataclasses import replace

from linewatch.simulator.domain import TRAIN_DOMAIN, domain_fleet


def assert_drawn_only_when_set(field: str, key: str, lo: float, hi: float, seed: int, machines: int = 30) -> None:
    shipped = domain_fleet(machines, seed)
    drawn = domain_fleet(machines, seed, replace(TRAIN_DOMAIN, **{field: (lo, hi)}))
    assert all(key not in a.extra for a in shipped)
    assert all(lo <= a.extra[key] <= hi for a in drawn)
    assert [a.extra for a in shipped] == [{k: v for k, v in a.extra.items() if k != key} for a in drawn]
