"""The decay chapter's checks (``analysis.decay``) and their tables and figures
(``present.decay``), on hand-made cases."""

import jax
import matplotlib
import numpy as np
import pytest

from ropebook import model
from ropebook.analysis import decay
from ropebook.present import decay as show

matplotlib.use("Agg")


def test_setup_vectors_shapes_norms_and_randomness():
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    q, k = decay.setup_vectors("all-ones", 2, 5, 4, rng)
    np.testing.assert_allclose(q, 0.5)  # 1 / sqrt(4)
    assert rng.bit_generator.state == state  # all-ones draws nothing
    q, k = decay.setup_vectors("Gaussian, fresh per position", 3, 5, 4, rng)
    assert q.shape == k.shape == (3, 5, 4)
    np.testing.assert_allclose(np.linalg.norm(q, axis=-1), 1)
    assert not np.allclose(q[:, 0], q[:, 1])  # fresh at every position
    q, k = decay.setup_vectors("Gaussian, repeated", 3, 5, 4, rng)
    np.testing.assert_allclose(np.linalg.norm(k, axis=-1), 1)
    np.testing.assert_array_equal(q[:, 0], q[:, 4])  # one vector along the sequence
    assert not np.allclose(q[0, 0], q[1, 0])  # but a different one per draw
    with pytest.raises(ValueError, match="unknown set-up"):
        decay.setup_vectors("zeros", 1, 1, 2, rng)


def test_closest_return():
    # 1 - cos m for m = 1..7: 6 is nearest a whole turn (2 pi = 6.28)
    assert decay.closest_return(8) == (6, pytest.approx(1 - np.cos(6)))
    n, gap = decay.closest_return(256)  # 44 rad = 7.003 turns
    assert n == 44 and gap == pytest.approx(1 - np.cos(44)) and 0 < gap < 2e-4


def test_prop31_grid_and_softmax_peaks():
    np.testing.assert_array_equal(
        decay.prop31_grid(256), [0, 1, 2, 3, 5, 9, 15, 27, 48, 83, 146, 255]
    )
    check = decay.prop31_softmax_peaks(np.random.default_rng(0), 64, 3, 16, base=10_000.0)
    grid = decay.prop31_grid(64)
    assert check.total == 3 * len(grid) and check.hits == check.total
    assert check.max_distance == 63 and len(check.rows) == len(grid)
    assert 0 < check.worst_gap < 1
    assert all(row["max |a(r)/‖q‖² − 1|"] < 1e-5 for row in check.rows)
    assert all(row["argmax = r"] == "3 of 3" for row in check.rows)
    assert "| 63 | 3 of 3 |" in show.peak_table(check).data


def test_zero_mean_check_on_a_hand_made_sample():
    samples = np.array([[-1.0, 10.0], [0.0, 11.0], [1.0, 12.0]])  # means 0 and 11, s.e. 1/sqrt 3
    check = decay.zero_mean_check(samples)
    assert check.covered == 1 and check.expected == pytest.approx(1.9)
    assert check.largest_z == pytest.approx(11 * np.sqrt(3))
    np.testing.assert_allclose(check.variance, [1.0, 1.0])
    # Binomial(2, 0.95): P(X = 0) = 0.0025 < 0.005 < P(X <= 1), so the 99% range is 1..2
    assert (check.binomial_low, check.binomial_high) == (1, 2) and check.held
    assert not decay.zero_mean_check(samples + 20).held  # no interval contains 0
    assert show.zero_mean_summary(check).startswith("1 of 2 intervals contain 0 (expected 2;")


def test_decay_ratios_and_table():
    curves = {"a": np.tile([2.0, 2.0, 1.0, 1.0], (3, 1)), "b": np.ones((3, 4))}
    ratios = decay.decay_ratios(curves, slice(0, 2), slice(2, 4), np.random.default_rng(0))
    assert ratios["a"] == pytest.approx((0.25, 0.25, 0.25))
    assert ratios["b"] == pytest.approx((1.0, 1.0, 1.0))
    table = show.ratio_table(ratios, 0.5).data
    assert "| a | 0.25 | [0.250, 0.250] | True |" in table
    assert "| b | 1 | [1.000, 1.000] | False |" in table


def _row(halves, gaussian_low):
    return [
        decay.RandomRopeRow(f, f * 10, h, 0.0, 0.0, (1.0, low, 1.5))
        for f, h, low in zip((1, 2, 4), halves, gaussian_low, strict=True)
    ]


def test_random_rope_summary_on_hand_made_curves():
    ones = np.array([[1.0, 0.8, 0.4, 0.3], [1.0, 0.4, 0.2, 0.1]])  # halve at r = 2 and r = 1
    never = np.array([[1.0, 0.9, 0.8, 0.7], [1.0, 0.9, 0.8, 0.7]])  # never halves: counts as N = 4
    gaussian = np.tile([1.0, 1.0, 2.0, 2.0], (2, 1))  # mean-square ratio 4 in every resample
    curves = {(1, "all-ones"): ones, (2, "all-ones"): never}
    curves |= {(f, "Gaussian, fresh per position"): gaussian for f in (1, 2)}
    rows = decay.random_rope_summary(
        curves, [1, 2], 3, slice(0, 2), slice(2, 4), np.random.default_rng(0)
    )
    assert rows[0].half[0] == pytest.approx(1.5) and rows[0].half[1] < 1.5 < rows[0].half[2]
    assert rows[1].half == pytest.approx((4.0, 4.0, 4.0))
    assert [r.length for r in rows] == [4, 8] and [r.plain_half for r in rows] == [3.0, 1.5]
    assert rows[0].far_mean == pytest.approx(np.mean([0.4, 0.3, 0.2, 0.1]))
    assert rows[1].gaussian == pytest.approx((4.0, 4.0, 4.0))
    tables = show.random_rope_tables(rows).data
    assert "| 2N = 8 | 4 | [4.0, 4.0] | 1.5 | 0.75 |" in tables
    assert "| 1N = 4 | 4 | [4.00, 4.00] |" in tables


def test_random_rope_verdict():
    falling = [(40.0, 38.0, 42.0), (20.0, 18.0, 22.0), (10.0, 9.0, 11.0)]
    assert decay.random_rope_verdict(_row(falling, [0.8, 0.8, 0.8]), 0.5) == "held"
    # the Gaussian curves decay at one L: only half the claim
    assert decay.random_rope_verdict(_row(falling, [0.8, 0.4, 0.8]), 0.5) == "partly"
    # falling means whose largest-L interval overlaps plain RoPE's: not separated
    overlapping = [(40.0, 10.0, 70.0), (30.0, 5.0, 60.0), (20.0, 0.0, 45.0)]
    assert decay.random_rope_verdict(_row(overlapping, [0.8, 0.8, 0.8]), 0.5) == "partly"
    rising = [(10.0, 9.0, 11.0), (20.0, 18.0, 22.0), (40.0, 38.0, 42.0)]
    assert decay.random_rope_verdict(_row(rising, [0.8, 0.8, 0.8]), 0.5) == "partly"
    assert decay.random_rope_verdict(_row(rising, [0.4, 0.8, 0.8]), 0.5) == "not held"
    assert decay.gaussian_unchanged(_row(rising, [0.6, 0.6, 0.6]), 0.5)
    assert not decay.gaussian_unchanged(_row(rising, [0.6, 0.6, 0.6]), 0.7)


def test_trained_activation_curves_match_the_model_internals():
    config = model.ModelConfig(
        vocab_size=32, n_layers=2, n_heads=2, d_model=16, d_ff=32, context=8
    )  # fmt: skip
    params = model.init_params(jax.random.key(0), config)
    windows = np.random.default_rng(0).integers(0, 32, size=(5, 8))
    whole = decay.trained_activation_curves(params, config, windows)
    batched = decay.trained_activation_curves(params, config, windows, max_tokens=16)  # 2 a batch
    assert whole.shape == (2, 5, 8)
    np.testing.assert_allclose(batched, whole, rtol=1e-5, atol=1e-6)
    _, internals = model.forward(params, windows, config, return_internals=True)
    q, k = np.asarray(internals[1]["q_rot"]), np.asarray(internals[1]["k_rot"])  # [B, T, H, D]
    expected = np.mean(
        [[q[3, i, h] @ k[3, i - 2, h] for i in range(2, 8)] for h in range(2)]
    )  # mean over queries at distance 2 and heads
    assert whole[1, 3, 2] == pytest.approx(expected, rel=1e-4, abs=1e-6)


def _curves(short_value, long_value, windows=4, t=8, noise=0.0, seed=0):
    """[layers=1, windows, t]: ``short_value`` at r = 1, 2, ``long_value`` over the last quarter."""
    rng = np.random.default_rng(seed)
    curve = np.zeros((1, windows, t))
    curve[..., 1:3] = short_value
    curve[..., (3 * t) // 4 :] = long_value
    return curve + noise * rng.standard_normal(curve.shape)


def test_trained_decay_classifies_layers():
    trained = {
        ("down", 0): _curves(1.0, 0.0, noise=0.01),
        ("up", 0): _curves(0.0, 1.0, noise=0.01),
        ("level", 0): _curves(1.0, 1.0, noise=0.01),
        ("noisy", 0): _curves(1.0, 1.0, noise=0.5),
    }
    result = decay.trained_decay(trained, ["down", "up", "level", "noisy"], (0,), short=2)
    assert [r["behaviour"] for r in result.rows] == ["decays", "grows", "flat", "uncertain"]
    # relative contrast: (1 − 0) over the mean |a| at r >= 1 (2 of 7 distances at 1, 2 at 0 ...)
    assert result.rows[0][decay.CONTRAST] == pytest.approx(1.0 / (2 / 7), rel=0.05)
    assert result.over == "4 windows (1 seed)" and not result.all_decay and result.n == 4
    assert result.counts()["down"] == {"decays": 1, "flat": 0, "uncertain": 0, "grows": 0}
    assert show.trained_summary(result) == (
        "down: 1 of 1 layers decays; up: 1 of 1 layers grows; level: 1 of 1 layers flat; "
        "noisy: 1 of 1 layers uncertain"
    )
    assert show.trained_summary(result, ["up"]) == "up: 1 of 1 layers grows"
    measured = show.trained_measured(result, ["down"])
    assert measured.startswith("down: 1 of 1 layers decays (short r = 1-2 vs last quarter of 8")
    assert "±0.1 of the layer's mean |activation|" in measured
    table = show.trained_table(result).data
    assert "95 % intervals over 4 windows (1 seed); *flat*" in table and "| low |" not in table
    assert "noisy layer 0" in show.trained_to_decide(result, ["noisy"])


def test_trained_decay_over_seeds():
    trained = {("m", s): _curves(1.0 + 0.1 * s, 0.0, seed=s) for s in range(3)}
    result = decay.trained_decay(trained, ["m"], (0, 1, 2), short=2)
    assert result.over == "3 seeds" and result.all_decay and result.n == 3
    assert result.rows[0][decay.CONTRAST] == pytest.approx(3.5)  # each seed: 1 over 2/7 of it


def test_behaviour_against_the_margin():
    m = decay.TRAINED_MARGIN
    assert decay.behaviour(0.01, 0.2) == "decays"
    assert decay.behaviour(-0.3, -0.01) == "grows"
    assert decay.behaviour(-m / 2, m / 2) == "flat"
    assert decay.behaviour(-m / 2, 2 * m) == "uncertain"
    assert decay.behaviour(-0.5, 0.5, margin=1.0) == "flat"


def _layer(values):
    """One layer's curves over seeds whose relative contrasts are ``values`` (one per seed)."""
    t = 8
    out = {}
    for s, v in enumerate(values):
        curve = np.ones((1, 2, t))  # mean |a| = 1, short and long at 1 ...
        curve[..., 1:3] += v / 2  # ... then the short distances raised by v/2 and the
        curve[..., (3 * t) // 4 :] -= v / 2  # long ones lowered by v/2: contrast v / mean |a|
        out["rope", s] = curve
    return out


@pytest.mark.parametrize(
    ("values", "verdict", "classes"),
    [
        ([0.5, 0.6, 0.55], "not held", ["decays"]),  # every layer decays
        ([-0.5, -0.6, -0.55], "held", ["grows"]),  # shown to grow
        ([0.02, -0.02, 0.0], "held", ["flat"]),  # bounded within the margin: held on flat
        ([0.5, -0.5, 0.0], "cannot decide", ["uncertain"]),  # merely uncertain
    ],
)
def test_trained_verdict_reaches_every_verdict(values, verdict, classes):
    result = decay.trained_decay(_layer(values), ["rope"], (0, 1, 2), short=2)
    assert result.behaviours(["rope"]) == classes
    assert decay.trained_verdict(result.behaviours(["rope"])) == verdict


def test_some_layer_is_shown_at_the_familys_confidence():
    """A layer bounded at 95 % on its own need not be once the claim may pick any of several
    layers: the family-wise (Bonferroni) interval is wider, and the verdict follows it."""
    assert decay.family_confidence(1) == pytest.approx(0.95)
    assert decay.family_confidence(4) == pytest.approx(0.9875)
    with pytest.raises(ValueError, match="at least 1"):
        decay.family_confidence(0)
    values = [0.03, -0.01, 0.01]  # mean 0.01, s.d. 0.02: inside ±0.1 at 95 %, not at 99.75 %
    alone = decay.trained_decay(_layer(values), ["rope"], (0, 1, 2), short=2)
    assert decay.trained_verdict(alone.behaviours(["rope"])) == "held"
    family = decay.trained_decay(
        _layer(values), ["rope"], (0, 1, 2), short=2, confidence=decay.family_confidence(20)
    )
    assert family.behaviours(["rope"]) == ["uncertain"] and family.confidence == 0.9975
    assert decay.trained_verdict(family.behaviours(["rope"])) == "cannot decide"
    assert "99.75 % intervals" in show.trained_table(family).data
    assert "rope layer 0" in show.trained_to_decide(family, ["rope"])


def test_trained_verdict_over_several_layers():
    assert decay.trained_verdict(["decays", "uncertain", "flat"]) == "held"
    assert decay.trained_verdict(["decays", "uncertain"]) == "cannot decide"  # not "held"
    assert decay.trained_verdict(["decays", "decays"]) == "not held"
    assert decay.trained_verdict([]) == "not testable here"
    with pytest.raises(ValueError, match="unknown"):
        decay.trained_verdict(["level"])


def test_samples_to_bound():
    # mean 0, s.d. of one sample 1 (interval over 3 samples): t_{m-1}/sqrt(m) <= 0.1 near 400
    sd_half = 4.302652729911275 / np.sqrt(3)  # t_{2, 0.975} / sqrt(3)
    need = decay.samples_to_bound(0.0, -sd_half, sd_half, 3, margin=0.1)
    assert 380 < need < 420
    assert decay.samples_to_bound(0.2, 0.0, 0.4, 3, margin=0.1) is None  # mean past the margin
    assert decay.samples_to_bound(0.0, 0.0, 0.0, 1) is None  # one sample: no s.d.


def test_ones_contrast_is_a_third_of_a_unit_or_more_at_every_profile():
    """The margin is under a third of the decay the all-ones argument predicts, everywhere."""
    from ropebook import zoo

    for profile in zoo.PROFILES:
        for regime in ("lesson", "matched"):
            config, _ = zoo.configs("rope", profile=profile, regime=regime)
            contrast = decay.ones_contrast(config.head_dim, config.rope_base, config.context, 8)
            assert contrast > 3 * decay.TRAINED_MARGIN


def test_figures_keep_their_titles():
    curves = {kind: np.full((3, 16), 0.5) for kind in decay.SETUPS}
    fig = show.plot_setups(curves, head_dim=8, base=100.0)
    assert fig._suptitle.get_text() == "RoPE activation vs distance, d = 8, θ = 100"
    assert [ax.get_title() for ax in fig.axes][2] == "Gaussian q, k repeated (Fig. 9)"
    random_curves = {(f, kind): curves[kind] for f in (1, 2) for kind in decay.SETUPS[:2]}
    fig = show.plot_random_rope(random_curves, [1, 2], short_window=4, head_dim=8)
    assert fig._suptitle.get_text().endswith("N = 16")
    fig = show.plot_prop31_examples(np.ones(8), (2, 5), 16, base=100.0)
    assert fig.axes[0].get_title().endswith("(d = 8)")
    check = decay.zero_mean_check(np.random.default_rng(0).standard_normal((10, 16)))
    assert "10 fresh pairs" in show.plot_zero_mean(check, 10).axes[0].get_title()


def test_trained_chart_has_one_title_above_narrow_panels():
    trained = {(n, 0): np.ones((2, 3, 40)) for n in ("rope", "p-rope-0.75")}
    spec = show.trained_chart(trained, ["rope", "p-rope-0.75"], (0,)).to_dict()
    assert spec["title"][0] == "Trained models: mean activation qᵢᵀRʲ⁻ⁱkⱼ vs distance"
    assert "title" not in spec["spec"]  # not repeated above each panel
    assert 2 * spec["spec"]["width"] <= 500
    rows = next(iter(spec["datasets"].values()))
    assert len(rows) == 2 * 2 * 40  # models x layers x distances (all 40 < 32 + 96)
