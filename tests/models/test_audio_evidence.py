"""More than one audio clip per decision: the combination rules, per-segment vectors, consecutive clips."""

from __future__ import annotations

import numpy as np
import pytest

from models.fusion.evidence import combine
from pipeline.features.audio_physics import audio_segment_vectors, audio_vector, finish_audio_vector


def test_mean_log_is_the_normalised_geometric_mean_and_keeps_masked_classes_at_zero() -> None:
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(4), size=(3, 5))  # (states, clips, classes)
    p[..., 3] = 0.0  # a class the machine cannot have
    p /= p.sum(axis=-1, keepdims=True)
    got = combine(p, "mean_log")
    geo = np.exp(np.log(p[..., :3]).mean(axis=1))
    np.testing.assert_allclose(got[:, :3], geo / geo.sum(axis=1, keepdims=True), rtol=1e-12)
    assert np.all(got[:, 3] == 0.0)
    np.testing.assert_allclose(combine(p, "mean"), p.mean(axis=1), rtol=1e-12)


def test_agreeing_clips_keep_the_scale_and_one_dissent_is_outvoted() -> None:
    clip = np.array([0.3, 0.7])
    np.testing.assert_allclose(combine(np.stack([clip] * 4)), clip)  # not sharpened like a plain product
    votes = np.array([[0.3, 0.7], [0.3, 0.7], [0.3, 0.7], [0.9, 0.1]])
    assert combine(votes).argmax() == 1
    with pytest.raises(ValueError, match="unknown rule"):
        combine(votes, "max")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one"):
        combine(np.zeros((0, 2)))


def _tone(seconds: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(int(16_000 * seconds)) / 16_000
    return (0.3 * np.sin(2 * np.pi * 25.0 * t) + 0.1 * np.sin(2 * np.pi * 50.0 * t)
            + 0.05 * rng.standard_normal(t.size)).astype(np.float32)


def test_segment_vectors_are_each_seconds_vector_and_their_median_is_the_clip_vector() -> None:
    x = np.concatenate([_tone(1.0, 1), _tone(1.0, 2), 3.0 * _tone(1.0, 3)])
    raw = audio_segment_vectors(x, 16_000, raw=True)
    seg = audio_segment_vectors(x, 16_000)
    assert raw.shape == (3, 79) and seg.shape == (3, 86) and seg.dtype == np.float32
    np.testing.assert_array_equal(audio_vector(x, 16_000), finish_audio_vector(np.median(raw, axis=0)))
    np.testing.assert_array_equal(seg[1], audio_vector(x[16_000:32_000], 16_000))
    assert not np.array_equal(seg[0], seg[1])


def test_consecutive_clips_share_the_state_but_not_the_noise() -> None:
    from linewatch.simulator.domain import DOMAINS, DomainRenderer, domain_fleet, draw_domain_specs

    fleet = domain_fleet(3, 5, DOMAINS["train"])
    spec = draw_domain_specs(1, fleet, 5, DOMAINS["train"])[0]
    renderer = DomainRenderer(fleet, 5)
    clips = renderer.audio_clips(spec, 3)
    assert len(clips) == 3 and all(c.shape == (16_000,) for c in clips)
    np.testing.assert_array_equal(clips[-1], renderer.render(spec, ("audio",)).clip)  # the newest is render's clip
    assert not np.array_equal(clips[0], clips[1])
    with pytest.raises(ValueError, match="fit the window"):
        renderer.audio_clips(spec, 11)
