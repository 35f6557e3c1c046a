"""Causal probes: removing RoPE planes at inference, paired intervals and the reading."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import numpy as np
import pytest

from ropebook import model, rope
from ropebook.analysis import probes
from ropebook.present import probes as show

CONFIG = model.ModelConfig(
    vocab_size=32, n_layers=2, n_heads=2, d_model=32, d_ff=64, context=16, head_dim=16,
    rope_base=50.0,
)  # fmt: skip


@dataclass
class Fake:
    seed: int
    params: dict
    config: model.ModelConfig = CONFIG


def test_removal_masks_remove_the_fastest_slowest_and_random_quarter():
    g = rope.frequencies(16, 100.0)  # decreasing: chunk 0 is the fastest
    masks = probes.removal_masks(g, 0.25, np.random.default_rng(0))
    np.testing.assert_array_equal(np.flatnonzero(masks["fastest"] == 0), [0, 1])
    np.testing.assert_array_equal(np.flatnonzero(masks["slowest"] == 0), [6, 7])
    assert (masks["random"] == 0).sum() == 2
    assert set(probes.removal_masks(g)) == {"fastest", "slowest"}  # no rng, no random control


def test_removal_masks_rank_by_frequency_not_position():
    g = np.array([0.0, 1.0, 0.5, 0.0, 0.25, 0.1, 0.0, 0.9])  # e.g. unrotated p-RoPE planes
    masks = probes.removal_masks(g, 0.25)
    np.testing.assert_array_equal(np.flatnonzero(masks["fastest"] == 0), [1, 7])
    assert set(np.flatnonzero(masks["slowest"] == 0)) <= {0, 3, 6}


def test_removing_every_plane_makes_attention_uniform_and_keeping_all_changes_nothing():
    params = model.init_params(jax.random.key(0), CONFIG)
    tokens = np.random.default_rng(0).integers(0, 32, (2, 10))
    none = model.Intervention(keep_chunks=np.zeros(8))
    _, layers = model.forward(params, tokens, CONFIG, return_internals=True, intervention=none)
    rows = np.arange(10)
    uniform = np.tril(np.ones((10, 10))) / (rows[:, None] + 1)
    for layer in layers:
        np.testing.assert_allclose(np.asarray(layer["probs"]), np.broadcast_to(uniform, (2, 2, 10, 10)), atol=1e-6)  # fmt: skip
    windows = np.random.default_rng(1).integers(0, 32, (3, 11)).astype(np.int32)
    np.testing.assert_allclose(
        probes.window_losses(params, CONFIG, windows, np.ones(8)),
        probes.window_losses(params, CONFIG, windows),
        rtol=1e-6,
    )
    att = probes.head_attention(params, CONFIG, windows[:, :-1], np.zeros(8))
    assert att.shape == (3, 2, 2)
    np.testing.assert_allclose(att, np.mean(1 / (np.arange(1, 10) + 1)), rtol=1e-5)


def test_random_masks_remove_distinct_planes_per_draw():
    masks = probes.random_masks(8, 3, np.random.default_rng(0), draws=5)
    assert len(masks) == 5 and all((m == 0).sum() == 3 for m in masks)
    assert len({tuple(m) for m in masks}) > 1


def test_strongest_heads_orders_by_mean():
    att = np.zeros((2, 2, 3))
    att[:, 1, 2], att[:, 0, 1] = 0.9, 0.5
    assert probes.strongest_heads(att, 2) == [(1, 2), (0, 1)]


def test_paired_estimate_is_over_seeds_or_over_windows_of_one_seed():
    d = np.array([[1.0, 2.0, 3.0], [2.0, 3.0, 4.0]])
    many = probes.paired_estimate(d)
    assert many.mean == pytest.approx(2.5) and "2 seeds" in many.text
    one = probes.paired_estimate(d[:1])
    assert one.mean == pytest.approx(2.0) and "windows of 1 seed" in one.text
    assert probes.min_detectable(d) > 0


def result(n_seeds: int, fast_drop: float, slow_cost: float) -> probes.ProbeResult:
    rng = np.random.default_rng(0)
    w = 6
    base = rng.normal(0, 0.01, (n_seeds, w))
    loss = {"intact": 4 + base, "fastest": 4.01 + base, "random": 4.01 + base}
    loss["slowest"] = 4.01 + slow_cost + base + rng.normal(0, 0.002, (n_seeds, w))
    prev = {"intact": 0.6 + base, "slowest": 0.58 + base, "random": 0.59 + base}
    prev["fastest"] = 0.6 - fast_drop + base + rng.normal(0, 0.002, (n_seeds, w))
    return probes.ProbeResult(
        tuple(range(n_seeds)), loss, prev, [[(0, 0)]] * n_seeds,
        [{"fastest": [[0]], "slowest": [[7]], "random": [[3], [4], [5]]}] * n_seeds, 8,
    )  # fmt: skip


def reading_of(r: probes.ProbeResult) -> probes.ProbeReading:
    """:func:`probes.probe_reading` at the plane map's material thresholds."""
    return probes.probe_reading(r, attention=0.02, loss=0.005)


def test_material_verdict_reaches_every_verdict():
    """plane_map.quarters's parts: beyond the material threshold (held), within ± it (bounded),
    on its near side reaching the other way (not held), containing it (cannot decide)."""
    t = 0.02
    assert probes.material_verdict(-0.3, -0.1, t, above=False) == "held"
    assert probes.material_verdict(-0.015, -0.001, t, above=False) == "bounded"  # below 0, small
    assert probes.material_verdict(-0.01, 0.05, t, above=False) == "not held"
    assert probes.material_verdict(0.03, 0.05, t, above=False) == "not held"
    assert probes.material_verdict(-0.05, -0.01, t, above=False) == "cannot decide"
    assert probes.material_verdict(0.01, 0.02, 0.005, above=True) == "held"
    assert probes.material_verdict(0.001, 0.004, 0.005, above=True) == "bounded"
    assert probes.material_verdict(0.0, 0.01, 0.005, above=True) == "cannot decide"
    with pytest.raises(ValueError, match="positive"):
        probes.material_verdict(0.0, 1.0, 0.0, above=True)


def test_a_quarter_contrast_separated_from_zero_but_below_the_threshold_is_not_held():
    """The quarters now test against the same material thresholds as the plane-by-plane
    claims: a tiny but clearly negative attention contrast and a tiny positive loss contrast
    are bounded, not held."""
    tiny = reading_of(result(3, fast_drop=0.035, slow_cost=0.002))
    assert tiny.positional.high < 0 and tiny.semantic.low > 0  # against 0 this read held
    assert probes.probe_parts(tiny) == ("bounded", "bounded") and tiny.verdict == "bounded"
    half = reading_of(result(3, fast_drop=0.3, slow_cost=0.002))
    assert half.verdict == "partly"


def test_what_would_decide_a_quarter_reading_is_its_distance_from_the_material_line():
    """The parts are judged against ±their material thresholds, so the seeds that would decide
    one are those that resolve its distance from that line, not from 0: a loss contrast whose
    interval contains +0.005 is named; one bounded within ±0.005 is decided and is not."""
    open_loss = reading_of(result(3, fast_drop=0.3, slow_cost=0.005))
    assert open_loss.semantic.low <= 0.005 <= open_loss.semantic.high
    text = show.reading_to_decide(open_loss)
    assert text.startswith("loss: ") and "material line +0.005" in text and "attention" not in text
    bounded = reading_of(result(3, fast_drop=0.035, slow_cost=0.002))
    assert show.reading_to_decide(bounded) == ""  # both parts bounded: nothing left to decide
    one = show.reading_to_decide(reading_of(result(1, 0.3, 0.2)))
    assert "material line -0.02" in one and "material line +0.005" in one


def test_probe_reading_on_constructed_results():
    held = reading_of(result(3, fast_drop=0.3, slow_cost=0.2))
    assert held.verdict == "held" and held.positional.high < 0 and held.semantic.low > 0
    assert "paired per seed and window" in show.reading_basis(held)
    assert show.reading_measured(held).startswith(
        f"removing the fastest instead of the slowest quarter changes previous-token attention "
        f"by {held.positional.mean:+.3f}"
    )
    against = reading_of(result(3, fast_drop=-0.3, slow_cost=-0.2))
    assert against.verdict == "not held"
    mixed = reading_of(result(3, fast_drop=0.3, slow_cost=-0.2))
    assert mixed.verdict == "partly"
    assert reading_of(result(1, 0.3, 0.2)).verdict == "cannot decide"


def test_probe_table_and_chart():
    r = result(2, 0.3, 0.2)
    rows = show.probe_table(r)
    assert [row["planes removed"] for row in rows] == list(probes.CONDITIONS)
    assert rows[1]["perplexity change"].startswith("+")
    assert rows[2]["planes (first seed)"] == "[3] or [4] … (3 draws)"
    spec = show.probe_chart(r).to_dict()
    assert len(spec["vconcat"]) == 2 and all(p["width"] <= 520 for p in spec["vconcat"])


def test_run_probes_on_untrained_models():
    models = [Fake(s, model.init_params(jax.random.key(s), CONFIG)) for s in (0, 1)]
    rng = np.random.default_rng(2)
    windows = rng.integers(1, 32, (3, 17)).astype(np.int32)
    select = rng.integers(1, 32, (2, 16)).astype(np.int32)
    r = probes.run_probes(models, windows, select, n_heads=2, seed=5)
    assert r.seeds == (0, 1) and r.n_planes == 8 and len(r.heads[0]) == 2
    assert r.loss["intact"].shape == (2, 3) and set(r.previous) == {"intact", *probes.CONDITIONS}
    assert len(r.removed[0]["random"]) == 4 and all(len(d) == 2 for d in r.removed[0]["random"])
    assert r.removed[0]["fastest"] == [[0, 1]]
    np.testing.assert_allclose(r.delta("loss", "fastest"), r.loss["fastest"] - r.loss["intact"])


# ---------------------------------------------------------------- mean-ablation beside zeroing


def constructed_qk(t: int = 24, d: int = 8, seed: int = 0):
    """``q, k [1, T, 1, D]`` (half pairing, 4 planes): plane 3, the slowest, a large vector
    that is the same at every position (norm, no token content); planes 0-2 vary by token."""
    rng = np.random.default_rng(seed)
    q, k = rng.normal(0, 1, (2, 1, t, 1, d))
    pairs = rope.chunk_indices(d, "half")
    for x, v in ((q, (6.0, 2.0)), (k, (5.0, -3.0))):
        x[..., pairs[3]] = v  # constant over positions
    return q.astype(np.float32), k.astype(np.float32)


def probs_of(q, k, base: float = 2.0):
    """Causal softmax attention ``[T, T]`` of rotated ``q, k`` (one head), as the model scores."""
    t = q.shape[1]
    positions = np.arange(t)
    qr, kr = (np.asarray(rope.apply_rope(x, positions, base=base, pairing="half")) for x in (q, k))
    scores = np.einsum("qd,kd->qk", qr[0, :, 0], kr[0, :, 0]) / np.sqrt(q.shape[-1])
    scores = np.where(np.tril(np.ones((t, t), bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_mean_ablation_spares_a_plane_of_constant_norm_that_zeroing_hurts():
    q, k = constructed_qk()
    means = np.stack([q.mean(axis=(0, 1)), k.mean(axis=(0, 1))])  # [2, H, D]
    intact = probs_of(q, k)

    def change(plane: int, ablation: str) -> float:
        keep = np.ones(4, np.float32)
        keep[plane] = 0.0
        if ablation == "zeroed":
            dims = np.repeat(keep, 2)[np.argsort(rope.chunk_indices(8, "half").T.ravel()) % 4 * 2]
            a, b = q * dims, k * dims  # zeroing before rotation = zeroing after (per plane)
        else:
            a, b = (np.asarray(x) for x in model.substitute_means(q, k, keep, means, "half"))
        return float(np.abs(probs_of(a, b) - intact).sum(-1).mean())

    # Constant plane: zeroing moves attention a lot, mean-ablation not at all (the answer).
    assert change(3, "zeroed") > 0.2
    assert change(3, "mean") == pytest.approx(0.0, abs=1e-5)
    # A plane carrying token content: mean-ablation removes it too.
    assert change(0, "mean") > 0.05


def test_removal_through_the_model():
    params = model.init_params(jax.random.key(0), CONFIG)
    for layer in params["layers"]:  # sharper attention than at initialisation
        layer["qkv"] = layer["qkv"] * 6
    rng = np.random.default_rng(3)
    windows = rng.integers(0, 32, (3, 11)).astype(np.int32)
    reference = rng.integers(0, 32, (4, 10)).astype(np.int32)
    means = probes.qk_means(params, CONFIG, reference)
    assert means.shape == (CONFIG.n_layers, 2, CONFIG.n_heads, CONFIG.head_dim)
    mean = probes.removal(params, CONFIG, "mean", reference)
    assert probes.removal(params, CONFIG, "zeroed") is probes.ZEROED
    intact = probes.window_losses(params, CONFIG, windows)
    keep_all = np.ones(8)
    np.testing.assert_allclose(probes.window_losses(params, CONFIG, windows, keep_all, mean), intact, rtol=1e-5)  # fmt: skip
    one = np.ones(8, np.float32)
    one[0] = 0.0
    zeroed = probes.window_losses(params, CONFIG, windows, one)
    ablated = probes.window_losses(params, CONFIG, windows, one, mean)
    assert np.abs(zeroed - ablated).max() > 1e-5  # the two readings differ
    with pytest.raises(ValueError, match="reference"):
        probes.removal(params, CONFIG, "mean")
    with pytest.raises(ValueError, match="not in"):
        probes.Removal("shuffled")
    with pytest.raises(ValueError, match="means"):
        probes.Removal("mean")


def test_run_probes_mean_ablated_reads_the_same_heads_and_masks():
    models = [Fake(s, model.init_params(jax.random.key(s), CONFIG)) for s in (0, 1)]
    rng = np.random.default_rng(2)
    windows = rng.integers(1, 32, (3, 17)).astype(np.int32)
    select = rng.integers(1, 32, (2, 16)).astype(np.int32)
    zeroed = probes.run_probes(models, windows, select, n_heads=2, seed=5)
    mean = probes.run_probes(models, windows, select, n_heads=2, seed=5, ablation="mean")
    assert (zeroed.ablation, mean.ablation) == ("zeroed", "mean")
    assert mean.heads == zeroed.heads and mean.removed == zeroed.removed
    np.testing.assert_allclose(mean.loss["intact"], zeroed.loss["intact"])
    assert not np.array_equal(mean.loss["slowest"], zeroed.loss["slowest"])


def test_controlled_reading_decides_each_part_on_its_reading():
    """plane_map.quarters's rule: the positional part on zeroing, the content part on
    mean-ablation; held, not held, partly and cannot decide are each reachable, and a norm
    artefact (slow planes' loss under zeroing only) does not make the content part hold."""

    def readings(zeroed, mean, n=3):
        return {
            "zeroed": reading_of(result(n, *zeroed)),
            "mean": reading_of(result(n, *mean)),
        }

    held = probes.controlled_reading(readings((0.3, 0.2), (0.0, 0.2)))
    assert held.verdict == "held"
    assert probes.controlled_reading(readings((-0.3, 0.2), (0.3, -0.2))).verdict == "not held"
    artefact = probes.controlled_reading(readings((0.3, 0.2), (0.3, -0.2)))
    assert artefact.verdict == "partly" and artefact.semantic.high < 0
    assert probes.controlled_reading(readings((0.3, 0.2), (0.3, 0.2), n=1)).verdict == (
        "cannot decide"
    )
    text = show.readings_measured(readings((0.3, 0.2), (0.3, -0.2)))
    assert "under mean-ablation, which decides it (not held)" in text
    assert "the readings disagree, zeroing alone would say held" in text
