"""The per-plane causal map: one plane removed or unrotated, paired intervals, the reading."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import numpy as np
import pytest

from ropebook import model, rope
from ropebook.analysis import dynamics, planes, probes
from ropebook.analysis.frequencies import zoo_frequencies

CONFIG = model.ModelConfig(
    vocab_size=32, n_layers=1, n_heads=2, d_model=32, d_ff=64, context=16, head_dim=8,
    rope_base=20.0,
)  # fmt: skip
NOPE = model.ModelConfig(
    vocab_size=32, n_layers=1, n_heads=2, d_model=32, d_ff=64, context=16, head_dim=8,
    encoding="nope",
)  # fmt: skip


@dataclass
class Fake:
    seed: int
    params: dict
    config: model.ModelConfig = CONFIG
    name: str = "rope"


def _internals(config, params, tokens, intervention=None):
    return model.forward(params, tokens, config, return_internals=True, intervention=intervention)[
        1
    ]


def test_removing_one_plane_takes_exactly_its_term_out_of_every_score():
    params = model.init_params(jax.random.key(0), CONFIG)
    tokens = np.random.default_rng(0).integers(0, 32, (2, 10))
    intact = _internals(CONFIG, params, tokens)[0]
    pairs = rope.chunk_indices(CONFIG.head_dim, CONFIG.pairing)
    for k in range(CONFIG.head_dim // 2):
        removed = _internals(
            CONFIG, params, tokens, model.Intervention(keep_chunks=planes.removal_mask(4, k))
        )[0]
        dims = pairs[k]
        others = np.setdiff1d(np.arange(CONFIG.head_dim), dims)
        for x in ("q_rot", "k_rot"):
            np.testing.assert_array_equal(np.asarray(removed[x])[..., dims], 0.0)
            np.testing.assert_allclose(
                np.asarray(removed[x])[..., others], np.asarray(intact[x])[..., others]
            )
        # the score loses exactly plane k's term q_k · k_k (scaled as the model scales scores)
        q, kk = np.asarray(intact["q_rot"])[..., dims], np.asarray(intact["k_rot"])[..., dims]
        term = np.einsum("bqhd,bkhd->bhqk", q, kk)
        causal = np.tril(np.ones((10, 10), bool))  # masked scores are -inf in both
        lost = np.where(causal, np.asarray(intact["scores"]), 0) - np.where(
            causal, np.asarray(removed["scores"]), 0
        )
        scale = (
            lost[..., causal].ravel()
            @ term[..., causal].ravel()
            / (term[..., causal].ravel() @ term[..., causal].ravel())
        )
        np.testing.assert_allclose(lost[..., causal], scale * term[..., causal], atol=1e-5)
        assert scale == pytest.approx(1 / np.sqrt(CONFIG.head_dim), rel=1e-4)


def test_unrotating_one_plane_leaves_it_unturned_and_the_others_as_they_were():
    params = model.init_params(jax.random.key(1), CONFIG)
    tokens = np.random.default_rng(1).integers(0, 32, (1, 12))
    grid = zoo_frequencies(CONFIG)
    intact = _internals(CONFIG, params, tokens)[0]
    pairs = rope.chunk_indices(CONFIG.head_dim, CONFIG.pairing)
    k = 3  # the slowest plane
    changed = _internals(
        CONFIG, params, tokens, model.Intervention(frequencies=planes.unrotated_grid(grid, k))
    )[0]
    others = np.setdiff1d(np.arange(CONFIG.head_dim), pairs[k])
    for rotated, raw in (("q_rot", "q"), ("k_rot", "k")):
        np.testing.assert_allclose(
            np.asarray(changed[rotated])[..., pairs[k]], np.asarray(intact[raw])[..., pairs[k]],
            atol=1e-6,
        )  # fmt: skip
        np.testing.assert_allclose(
            np.asarray(changed[rotated])[..., others], np.asarray(intact[rotated])[..., others],
            atol=1e-5,
        )  # fmt: skip


def _sequences(seed, n=2, period=5):
    return dynamics.repeated_random_tokens(np.random.default_rng(seed), n, period, 32)


def test_a_model_without_rope_reports_no_planes():
    assert planes.rope_planes(NOPE).size == 0
    params = model.init_params(jax.random.key(0), NOPE)
    windows = np.random.default_rng(0).integers(0, 32, (3, 12)).astype(np.int32)
    result = planes.map_planes(
        [Fake(0, params, NOPE, "nope")], windows, windows[:, :-1], _sequences(0), _sequences(1), 5
    )
    assert result.n_planes == 0
    assert result.delta("loss").shape == (1, 0, 3)
    assert result.norm_share.shape == (1, 0)


def test_map_of_two_seeds_measures_every_plane_paired_on_the_same_windows():
    models = [Fake(s, model.init_params(jax.random.key(s), CONFIG)) for s in (0, 1)]
    windows = np.random.default_rng(2).integers(0, 32, (3, 12)).astype(np.int32)
    result = planes.map_planes(models, windows, windows[:, :-1], _sequences(3), _sequences(4), 5)
    assert result.n_planes == 4 and result.seeds == (0, 1)
    np.testing.assert_allclose(result.norm_share.sum(1), 1.0, rtol=1e-6)  # all planes rotate
    np.testing.assert_allclose(result.turns, rope.turns_per_context(8, 20.0, 16))
    for metric in planes.METRICS:
        assert result.delta(metric).shape[:2] == (2, 4)
    # removing plane k is the same as keeping all other planes (a direct recomputation)
    k = 2
    direct = model.token_losses(
        models[1].params, windows, CONFIG, model.Intervention(keep_chunks=planes.removal_mask(4, k))
    )
    np.testing.assert_allclose(result.changed["loss"][1, k], np.asarray(direct).mean(-1), rtol=1e-5)
    assert len(planes.classify(result)) == 4 and len(planes.classify(result, ablation="mean")) == 4
    # mean-ablating plane k: its queries and keys replaced by their means on the select windows
    means = probes.qk_means(models[1].params, CONFIG, windows[:, :-1])
    direct = model.token_losses(
        models[1].params, windows, CONFIG,
        model.Intervention(keep_chunks=planes.removal_mask(4, k), means=means),
    )  # fmt: skip
    np.testing.assert_allclose(
        result.changed["loss_mean"][1, k], np.asarray(direct).mean(-1), rtol=1e-5
    )


def _map(intact, changed):
    intact, changed = np.asarray(intact, float), np.asarray(changed, float)
    k = changed.shape[1]
    return planes.PlaneMap(
        name="rope", seeds=tuple(range(intact.shape[0])), planes=np.arange(k),
        frequencies=np.linspace(1.0, 0.1, k), turns=np.linspace(3.0, 0.1, k),
        intact={m: intact for m in planes.METRICS}, changed={m: changed for m in planes.METRICS},
        norm_share=np.full((intact.shape[0], k), 1 / k), heads=[],
    )  # fmt: skip


def test_intervals_are_paired_so_a_constant_shift_is_exact_despite_noisy_windows():
    rng = np.random.default_rng(0)
    intact = rng.normal(5.0, 2.0, (4, 6))  # windows and seeds differ a lot
    shift = np.array([0.1, 0.0, -0.03])
    changed = intact[:, None, :] + shift[None, :, None] + rng.normal(0, 1e-4, (4, 3, 6))
    estimates = _map(intact, changed).estimates("loss")
    for e, s in zip(estimates, shift, strict=True):
        assert e.low < s < e.high and e.high - e.low < 1e-3  # unpaired: ±2 wide
        assert "over 4 seeds" in e.text


def test_classify_follows_the_stated_rule():
    intact = np.zeros((3, 4))
    noise = np.random.default_rng(1).normal(0, 1e-4, (3, 4, 4))
    # planes: 0 drops both attention scores; 1 raises loss only; 2 does nothing; 3 straddles
    shift = np.array([-0.5, 0.05, 0.0, 0.0])
    changed = shift[None, :, None] + noise
    changed[:, 3, :] = np.array([0.1, -0.1, 0.0])[:, None]  # seeds disagree: wide interval
    m = _map(intact, changed)
    m.changed["loss"] = np.abs(changed)  # a drop in attention comes with a loss rise
    assert planes.classify(m)[:3] == ["positional and semantic", "used, neither score", "unused"]
    assert planes.classify(m)[3] == "undecided"


def test_band_verdict_reaches_held_not_held_and_cannot_decide_on_either_reading():
    """The plane map's band claims (Barbero, Hong, Chiang) read :func:`planes.band_verdict` on
    the mean-ablated metric; each verdict is reachable, and the zeroed twin is read apart."""
    rng = np.random.default_rng(4)
    intact = np.zeros((3, 6))

    def contrast(slow_minus_fast, spread=1e-4):
        changed = np.zeros((3, 4, 6)) + rng.normal(0, spread, (3, 4, 6))
        changed[:, 3, :] += slow_minus_fast  # plane 3 is the slowest (frequencies decrease)
        return changed

    cases = {"held": contrast(0.3), "not held": contrast(0.0)}
    wide = contrast(0.02)
    wide[:, 3, :] += np.array([-0.3, 0.0, 0.3])[:, None]  # seeds disagree
    cases["cannot decide"] = wide
    for verdict, changed in cases.items():
        m = _map(intact, changed)
        got, e = planes.band_verdict(m, "content_mean", 0.02, above=True)
        assert got == verdict, (verdict, e)
    # zeroing and mean-ablation are separate metrics: a norm artefact shows in one only
    m = _map(intact, cases["not held"])
    m.changed["content"] = cases["held"]
    assert planes.band_verdict(m, "content", 0.02, above=True)[0] == "held"
    assert planes.band_verdict(m, "content_mean", 0.02, above=True)[0] == "not held"
    assert planes.ablated("content", "mean") == "content_mean"
    assert planes.ablated("loss", "zeroed") == "loss"
    with pytest.raises(ValueError):
        planes.ablated("unrotated", "mean")


def test_count_verdict_reads_sure_and_possible_counts():
    assert planes.count_verdict((0, 1), limit=1) == "held"
    assert planes.count_verdict((2, 3), limit=1) == "not held"
    assert planes.count_verdict((1, 3), limit=1) == "cannot decide"


def test_a_checkpoints_planes_unrotated_in_its_rotary_module():
    """``checkpoint_plane_map`` on a transformers model: the intact losses are transformers' own,
    unrotating plane k is turning it at g = 0 (its rotated queries equal the unrotated ones there,
    and every other plane still turns), and the model is left as it was."""
    torch = pytest.importorskip("torch")
    from ropebook import capture, tiny_models

    checkpoint = tiny_models.tiny_random_model("llama", seed=4)
    windows = np.random.default_rng(2).integers(0, checkpoint.config.vocab_size, (3, 10))
    ids = torch.as_tensor(windows)
    with torch.no_grad():
        before = checkpoint(ids).logits
        own = [float(checkpoint(ids[w : w + 1], labels=ids[w : w + 1]).loss) for w in range(3)]
    plane_map = planes.checkpoint_plane_map(checkpoint, windows, "tiny")
    np.testing.assert_allclose(plane_map.intact["unrotated"][0], own, rtol=1e-5)
    with torch.no_grad():
        np.testing.assert_array_equal(checkpoint(ids).logits, before)  # restored
    (rotary,) = [m for m in checkpoint.modules() if "inv_freq" in dict(m.named_buffers())]
    half = plane_map.n_planes
    for k in (0, half - 1):
        rotary.inv_freq[k] = 0.0
        layer = capture.capture(checkpoint, windows[:, :-1]).layers[0]
        rotary.inv_freq.copy_(torch.as_tensor(plane_map.frequencies, dtype=rotary.inv_freq.dtype))
        dims = [k, k + half]
        np.testing.assert_allclose(layer["q_rot"][..., dims], layer["q"][..., dims], atol=1e-6)
        other = [(k + 1) % half, (k + 1) % half + half]
        assert not np.allclose(layer["q_rot"][:, 1:, :, other], layer["q"][:, 1:, :, other])
    assert plane_map.delta("unrotated").shape == (1, half, 3)
    assert np.all(plane_map.delta("unrotated")[0, 0] != 0)  # the fastest plane's turn mattered
    assert plane_map.norm_share.sum() == pytest.approx(1)


def test_each_reading_has_its_own_table_with_mean_and_half_width():
    from ropebook.present import planes as show

    rng = np.random.default_rng(2)
    intact = rng.normal(5.0, 2.0, (4, 6))
    changed = intact[:, None, :] + np.array([0.1, 0.0, -0.03])[None, :, None]
    plane_map = _map(intact, changed)
    mean_rows = show.plane_rows(plane_map, ["a", "b", "c"])
    zeroed_rows = show.plane_rows(plane_map, ["x", "y", "z"], reading="zeroed")
    assert "Δ loss, mean-abl." in mean_rows[0] and "Δ loss, zeroed" not in mean_rows[0]
    assert "Δ loss, zeroed" in zeroed_rows[0] and "Δ loss, unrotated" in zeroed_rows[0]
    assert mean_rows[0]["Δ loss, mean-abl."] == "+0.100 ± 0.000"
    assert [r["class"] for r in zeroed_rows] == ["x", "y", "z"]
    with pytest.raises(ValueError, match="valid readings"):
        show.plane_rows(plane_map, ["a", "b", "c"], reading="both")
