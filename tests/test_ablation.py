"""Ablation helpers: intervals over seeds, pairwise orderings, Kendall τ, extrapolation, and the
Table 1 constructions, on constructed numbers with known answers; and the p-RoPE chapter's tables,
charts and sentences built from them (:mod:`ropebook.present.ablation`)."""

import math

import jax
import numpy as np
import pytest
from scipy import stats

from ropebook import model, rope, seedplan, table2_study, zoo
from ropebook.analysis import ablation
from ropebook.present import ablation as show


def test_estimate_matches_student_t():
    values = [1.0, 2.0, 4.0]
    est = ablation.estimate(values)
    half = stats.t.ppf(0.975, 2) * np.std(values, ddof=1) / math.sqrt(3)
    assert est.mean == pytest.approx(7 / 3)
    assert (est.low, est.high) == pytest.approx((7 / 3 - half, 7 / 3 + half))
    assert est.n == 3 and est.format(2).startswith("2.33 ± ")
    single = ablation.estimate([5.0])
    assert single.low == single.high == 5.0 and "1 seed" in single.format()


def test_separated_intervals_confirm_the_order():
    c = ablation.compare("a", [1.0, 1.1, 0.9], "b", [2.0, 2.1, 1.9])
    assert c.separated and c.paired_separated and c.lower == "a"
    assert c.status == "a < b"
    assert c.verdict("a") == "held" and c.verdict("b") == "not held"
    assert c.difference.mean == pytest.approx(-1.0) and c.difference.high < 0
    with pytest.raises(ValueError):
        c.verdict("c")


def test_overlapping_intervals_are_within_noise():
    c = ablation.compare("a", [1.0, 2.0, 3.0], "b", [1.5, 2.5, 3.5])
    assert not c.separated and c.status == "within noise"
    assert c.verdict("a", test="intervals") == "cannot decide" == c.verdict("b", test="intervals")
    # ...but the paired difference is exactly -0.5 on every seed: zero spread, excludes 0.
    assert c.difference.mean == pytest.approx(-0.5) and c.paired_separated
    assert c.paired_status == "a < b"
    assert c.verdict("a") == "held" and c.verdict("b") == "not held"


def test_paired_noise_is_within_noise():
    # a - b = (-1, +1, -0.5): the paired interval straddles 0 although means differ
    c = ablation.compare("a", [1.0, 3.0, 2.0], "b", [2.0, 2.0, 2.5])
    assert c.paired and not c.paired_separated and c.paired_status == "within noise"
    assert c.verdict("a") == "cannot decide"
    with pytest.raises(ValueError, match="unknown test"):
        c.verdict("a", test="bayes")


def test_a_paired_null_inside_the_margin_is_bounded():
    # a - b = (-0.1, +0.1, 0.0, +0.05): contains 0, half-width ≈ 0.15
    c = ablation.compare("a", [1.9, 2.1, 2.0, 2.05], "b", [2.0, 2.0, 2.0, 2.0])
    assert c.verdict("a", margin=0.5) == "bounded" == c.verdict("b", margin=0.5)
    assert c.verdict("a", margin=0.1) == "cannot decide"  # the interval reaches past ±0.1
    assert c.verdict("a") == "cannot decide"  # no margin: never bounded
    # separated comparisons keep their direction whatever the margin
    clear = ablation.compare("a", [1.0, 1.1, 0.9], "b", [2.0, 2.1, 1.9])
    assert clear.verdict("a", margin=5.0) == "held" and clear.verdict("b", margin=5.0) == "not held"
    # on the log scale the margin is in percent of perplexity
    ppl = ablation.compare("a", [100.1, 99.9, 100.2], "b", [100.0, 100.0, 100.0], log=True)
    assert ppl.verdict("a", margin=ablation.PERPLEXITY_MARGIN) == "bounded"
    assert ppl.verdict("a", margin=0.01) == "cannot decide"
    assert ablation.pair_verdicts({("a", "b", "x"): c}, [("a", "b", "c.id")], margin=0.5) == {
        "c.id": "bounded"
    }


def test_single_seed_is_measured_but_open():
    """One seed has no interval: the finding is open (more seeds decide it), not untestable."""
    c = ablation.compare("a", [1.0], "b", [2.0])
    assert not c.testable and not c.separated and c.status == "single seed"
    assert c.verdict("a") == "cannot decide" == c.verdict("b", margin=5.0)


def test_unpaired_difference_when_seed_counts_differ():
    c = ablation.compare("a", [1.0, 1.2], "b", [3.0, 3.2, 3.1])
    assert c.difference.mean == pytest.approx(1.1 - 3.1)
    assert c.difference.high < 0
    # not paired: the verdict falls back to the two intervals
    assert not c.paired and c.paired_status == c.status == "a < b" and c.verdict("a") == "held"


def test_kendall_tau_known_values():
    reference = {"x": 1.0, "y": 2.0, "z": 3.0, "w": 4.0}
    assert ablation.kendall_tau({"x": 10, "y": 20, "z": 30, "w": 40}, reference)[0] == 1.0
    assert ablation.kendall_tau({"x": 4, "y": 3, "z": 2, "w": 1}, reference)[0] == -1.0
    # one discordant pair (z, w) out of six: τ = (5 - 1) / 6
    tau, p = ablation.kendall_tau({"x": 1, "y": 2, "z": 4, "w": 3}, reference)
    assert tau == pytest.approx(4 / 6) and 0 < p <= 1
    # names missing from the measurement are skipped
    assert ablation.kendall_tau({"x": 1, "y": 2}, reference)[0] == 1.0
    assert ablation.rank_order({"b": 2.0, "a": 1.0, "c": 3.0}) == ["a", "b", "c"]


def test_per_seed_tau_and_noise_ratio():
    values = {"x": [1.0, 1.1, 2.5], "y": [2.0, 2.1, 1.5], "z": [3.0, 3.1, 3.5]}
    reference = {"x": 1.0, "y": 2.0, "z": 3.0}
    assert ablation.per_seed_tau(values, reference) == pytest.approx([1.0, 1.0, 1 / 3])
    table = ablation.seed_table({"x": [1.0, 1.0 + 1e-3], "y": [5.0, 5.0 + 1e-3]})
    noise = ablation.noise_vs_differences(table)
    assert noise["gap"] == pytest.approx(4.0) and noise["ratio"] > 1000
    more = values | {"x": [1.0, 1.1, 2.5, 9.0]}  # x's added seed: ranked on the shared three only
    assert ablation.per_seed_tau(more, reference) == ablation.per_seed_tau(values, reference)


def test_paired_noise_removes_shared_seed_effects():
    # every variant shares a large per-seed offset (0, 10, 20); the variants differ by 1 and 2
    offsets = np.array([0.0, 10.0, 20.0])
    values = {"x": offsets + 1.0, "y": offsets + 2.0 + [0, 0.1, -0.1], "z": offsets + 3.0}
    unpaired = ablation.noise_vs_differences(ablation.seed_table(values))
    paired = ablation.paired_noise(values)
    assert unpaired["ratio"] < 0.2  # the offsets swamp the gaps...
    # ...pairs (x,y), (x,z), (y,z): |Δ| = 1, 2, 1; s.d. of Δ = 0.1, 0, 0.1
    assert paired["gap"] == pytest.approx(1.0) and paired["seed_sd"] == pytest.approx(0.1)
    assert paired["ratio"] == pytest.approx(10.0)
    with pytest.raises(ValueError, match="same"):
        ablation.paired_noise({"x": [1.0, 2.0], "y": [1.0]})


def test_combine_verdicts():
    assert ablation.combine_verdicts(["held", "held"]) == "held"
    assert ablation.combine_verdicts(["held", "not held"]) == "partly"
    assert ablation.combine_verdicts(["held", "not testable here"]) == "not testable here"
    with pytest.raises(ValueError):
        ablation.combine_verdicts([])


def test_binned_ppl_over_curves():
    curves = [
        ablation.ExtrapolationCurve(np.log(np.full(8, 2.0 + s)), context=4, n_windows=1)
        for s in range(3)
    ]
    assert curves[0].ppl_at(1) == pytest.approx(2.0) and curves[2].ppl_at(2) == pytest.approx(4.0)
    rows = ablation.binned_ppl(curves, bin_width=4)
    assert [r["start"] for r in rows] == [0, 4]
    geometric = 24 ** (1 / 3)  # intervals on the log scale: the mean is geometric
    assert (
        rows[0]["ppl"] == pytest.approx(geometric) and rows[0]["low"] < geometric < rows[0]["high"]
    )
    assert rows[1]["x context"] == pytest.approx(1.5)
    with pytest.raises(ValueError):
        curves[0].ppl_at(4)


@pytest.fixture(scope="module")
def tiny_model():
    config = model.ModelConfig(
        vocab_size=64, n_layers=1, n_heads=2, d_model=16, d_ff=32, context=8,
        encoding="p-rope", proportion=0.75,
    )  # fmt: skip
    params = model.init_params(jax.random.key(0), config)
    tokens = (np.arange(2_000) * 7 % 64).astype(np.uint16)
    return params, config, tokens


def test_extrapolation_curve_is_finite_at_4x_context(tiny_model):
    params, config, tokens = tiny_model
    curve = ablation.extrapolation_curve(
        params, config, tokens, max_factor=4, n_windows=3, seed=0, batch_size=2
    )
    assert curve.losses.shape == (4 * config.context,)
    assert np.all(np.isfinite(curve.losses))
    for factor in (1, 2, 4):
        assert math.isfinite(curve.ppl_at(factor)) and curve.ppl_at(factor) > 1


def test_long_window_prefix_is_a_short_window(tiny_model):
    """Causality: the losses of the first L positions of a 4L window equal those of the L window."""
    params, config, tokens = tiny_model
    window = np.asarray(tokens[None, : 4 * config.context + 1], dtype=np.int32)
    long = np.asarray(model.token_losses(params, window, config))[0]
    short = np.asarray(model.token_losses(params, window[:, : config.context + 1], config))[0]
    np.testing.assert_allclose(long[: config.context], short, rtol=1e-5, atol=1e-5)


def test_p_rope_fast_planes_build_positional_heads():
    d, p, n = 16, 0.75, 64
    rotating = ablation.rotating_planes(d, variant="p-rope", proportion=p)
    assert rotating.sum() == 6 and not rotating[6:].any()
    psi = ablation.plane_vector(d, rotating)
    grid = rope.frequencies(d, variant="p-rope", proportion=p)
    weights = rotating / rotating.sum()
    margin = ablation.positional_margin(weights, grid, n)
    eps = 0.01
    scale = math.log(n * (1 - eps) / eps) / margin
    for offset in (0, 1):
        attention = ablation.positional_attention(
            psi, n, scale=scale, offset=offset, variant="p-rope", proportion=p
        )
        np.testing.assert_allclose(attention.sum(-1), 1, rtol=1e-5)
        assert ablation.min_target_attention(attention, offset) > 1 - eps
    # The same construction on the free (slow) planes is NoPE: uniform over the prefix.
    free = ablation.plane_vector(d, ~rotating)
    attention = ablation.positional_attention(free, n, scale=scale, variant="p-rope", proportion=p)
    np.testing.assert_allclose(np.diag(attention), 1 / np.arange(1, n + 1), rtol=1e-4)


def test_free_planes_score_exactly_position_invariant():
    d = 16
    rotating = ablation.rotating_planes(d, variant="p-rope", proportion=0.75)
    free = ablation.plane_vector(d, ~rotating)
    distances = np.array([0, 1, 10, 10_000, 1_000_000])
    scores = ablation.plane_scores(free, distances, variant="p-rope", proportion=0.75)
    assert np.all(scores == scores[0]) and scores[0] == pytest.approx(1.0)
    # Under RoPE the slowest plane turns: cos(r g) with g = base^(-(d-2)/d).
    slow = ablation.plane_vector(d, [d // 2 - 1])
    g = rope.base_frequencies(d)[-1]
    rope_scores = ablation.plane_scores(slow, distances)
    np.testing.assert_allclose(rope_scores, np.cos(distances * g), atol=2e-3)
    assert rope_scores[-2] < 0  # at 10,000 tokens the slowest plane points backwards


# ---------------------------------------------------------------- the p-RoPE chapter's tables


def test_plane_rows_give_frequency_wavelength_and_rotation():
    rotating = ablation.rotating_planes(8, variant="p-rope", proportion=0.75)
    rows = show.plane_rows(rope.base_frequencies(8), rotating)
    # g_k = 10000^(-2k/8): 1, 0.1, 0.01, 0.001; p-RoPE keeps floor(0.75 · 4) = 3 planes
    assert [r["g_k (rad/token)"] for r in rows] == pytest.approx([1, 0.1, 0.01, 0.001])
    assert rows[2]["wavelength (tokens)"] == pytest.approx(200 * math.pi)
    assert [r["0.75-RoPE rotates it"] for r in rows] == ["yes", "yes", "yes", "no (free)"]


def test_construction_rows_and_positional_check():
    d, n, eps = 16, 32, 0.01
    rotating = ablation.rotating_planes(d, variant="p-rope", proportion=0.75)
    every = np.ones(d // 2, bool)
    cases = [
        ("RoPE", every, ablation.ALL_PLANES),
        ("0.75-RoPE", rotating, ablation.FAST_PLANES),
        ("0.75-RoPE", ~rotating, ablation.FREE_PLANES),
        ("NoPE", every, ablation.ALL_PLANES),
    ]
    built = [
        ablation.construction(label, planes, n, where=where, head_dim=d, base=1e4, epsilon=eps)
        for label, planes, where in cases
    ]
    rows = show.construction_rows(built)
    fast, free, nope = rows[1], rows[2], rows[3]
    weights = rotating / rotating.sum()
    margin = ablation.positional_margin(weights, rope.frequencies(d, variant="p-rope"), n)
    assert fast["δ"] == pytest.approx(margin) and margin > 0
    assert fast["scale s"] == pytest.approx(math.log(n * (1 - eps) / eps) / margin)
    assert min(fast["min α diag."], fast["min α prev."]) > 1 - eps
    # nothing rotates: no margin, uniform attention, the last query gives its target 1/n
    assert free["δ"] == nope["δ"] == 0 and nope["scale s"] == "any (1000 shown)"
    assert nope["min α diag."] == pytest.approx(1 / n, rel=1e-4)
    assert free["min α prev."] == pytest.approx(1 / n, rel=1e-4)
    check = ablation.positional_check(built, eps)
    assert check.ok == {"RoPE": True, "0.75-RoPE": True, "NoPE": True}
    assert check.fast_worst == min(fast["min α diag."], fast["min α prev."])
    assert check.uniform_best == pytest.approx(1 / n, rel=1e-4)
    # a demand the construction was not scaled for: NoPE still never reaches it, RoPE fails it
    strict = ablation.positional_check(built, 1e-6)
    assert strict.ok["NoPE"] and not strict.ok["RoPE"]


def test_first_negative_and_match_attention():
    assert (
        ablation.first_negative(np.array([1, 10, 100, 1000]), np.array([1, 0.2, -0.1, 0.5])) == 100
    )
    assert ablation.first_negative(np.array([1, 2]), np.array([0.0, 1.0])) is None
    n, eps = 512, 0.01
    scale = ablation.match_scale(n, eps)
    assert scale == pytest.approx(math.log(511 * 99))
    # a perfect match takes exactly 1 - ε; a match scoring 0 is one key among n alike
    assert ablation.match_attention(1.0, n, scale) == pytest.approx(1 - eps)
    assert ablation.match_attention(0.0, n, scale) == pytest.approx(1 / n)
    assert ablation.match_attention(-1.0, n, scale) < 1e-6


def _chart_values(spec: dict) -> list[dict]:
    """The one inline data set of an Altair chart's dict (``to_dict`` moves it to datasets)."""
    (values,) = spec["datasets"].values()
    return values


def test_score_distance_chart_data():
    spec = show.score_distance_chart(16, 1e4, proportion=0.75).to_dict()
    assert spec["title"] == "Score of a matching key r tokens back (d = 16, θ = 10,000)"
    rows = _chart_values(spec)
    free = [r for r in rows if r["channel"] == "0.75-RoPE, free planes (= NoPE)"]
    slow = [r for r in rows if r["channel"] == "RoPE, slowest plane"]
    assert len(free) == len(slow) > 100 and len({r["score"] for r in free}) == 1
    assert free[0]["score"] == pytest.approx(1.0)  # ‖ψ‖² at every distance, bit for bit
    g = rope.base_frequencies(16)[-1]
    r = np.array([x["distance r (tokens)"] for x in slow])
    np.testing.assert_allclose([x["score"] for x in slow], np.cos(r * g), atol=2e-3)
    assert r.max() == pytest.approx(4 * 2 * math.pi / g, rel=1e-3)  # four turns


def test_table1_rows_and_text():
    paper = {
        "positional": {"NoPE": False, "RoPE": True, "0.75-RoPE": True},
        "semantic": {"NoPE": True, "RoPE": False, "0.75-RoPE": True},
    }
    ok = {"NoPE": True, "RoPE": True, "0.75-RoPE": True}
    measured = ablation.table1_measured(ok, ok)
    assert measured == paper
    broken = ablation.table1_measured({**ok, "NoPE": False}, ok)  # NoPE built a sharp head
    assert broken["positional"]["NoPE"] and broken != paper
    rows = show.table1_rows(broken, paper)
    assert rows[0] == {"property": "positional", "NoPE": "✓ (paper ✗)", "RoPE": "✓ (paper ✓)",
                       "0.75-RoPE": "✓ (paper ✓)"}  # fmt: skip
    assert show.table1_text(rows).startswith("positional: NoPE ✓ (paper ✗), RoPE ✓ (paper ✓)")
    assert "; semantic: NoPE ✓ (paper ✓), RoPE ✗ (paper ✗)" in show.table1_text(rows)
    assert show.table1_differences(broken, paper) == "positional, NoPE: measured ✓, paper ✗"
    assert show.table1_differences(measured, paper) == "none"


def test_dropped_turn():
    # d = 16: p = 0.75 keeps 6 of 8 planes; the fastest freed one is g_6 = 10000^(-12/16) = 1e-3
    assert ablation.dropped_turn(16, 1000, 1e4) == pytest.approx(1.0)
    assert ablation.dropped_turn(16, 1000, 1e4, proportion=0.5) == pytest.approx(1000 * 0.01)


def _tables():
    """Two domains, three variants, two seeds (shared per-seed offsets)."""
    return {
        "prose": ablation.seed_table({"a": [1.0, 1.2], "b": [2.0, 2.3], "c": [3.0, 3.1]}),
        "code": ablation.seed_table({"a": [5.0, 5.0], "b": [4.0, 4.2], "c": [6.0, 6.4]}),
    }


def test_table2_rows_rank_both_columns():
    paper = {"a": 1.5, "b": 1.0, "c": 2.0}
    rows = show.table2_rows(_tables()["prose"], paper, {"a": "A", "b": "B", "c": "C"})
    assert [(r["encoding"], r["rank"], r["paper rank"]) for r in rows] == [
        ("A", 1, 2), ("B", 2, 1), ("C", 3, 3)
    ]  # fmt: skip
    assert rows[0]["ours"].startswith("1.100 ± ") and rows[1]["paper"] == "1.0000"
    assert ablation.ranks({"x": 3.0, "y": 1.0}) == {"y": 1, "x": 2}
    assert ablation.worst_rival(_tables()["code"], "c") == "a"


def test_kendall_taus_and_rank_verdict():
    paper = {"Wiki": {"a": 1.0, "b": 2.0, "c": 3.0}, "Flan": {"a": 3.0, "b": 2.0, "c": 1.0}}
    taus = ablation.kendall_taus(_tables(), paper)
    assert taus["prose", "Wiki"][0] == pytest.approx(1.0)  # a < b < c on both seeds
    assert taus["prose", "Flan"][0] == pytest.approx(-1.0)
    # code: b < a < c on both seeds: one discordant pair of three against Wiki
    tau, _, per_seed = taus["code", "Wiki"]
    assert tau == pytest.approx(1 / 3) and per_seed.values == pytest.approx((1 / 3, 1 / 3))
    rows = show.tau_rows(taus, paper)
    assert rows[0]["ranking"] == "paper Wiki vs paper Flan" and rows[0]["τ"] == pytest.approx(-1)
    assert [r["ranking"] for r in rows[1:3]] == [
        "ours prose vs paper Wiki",
        "ours prose vs paper Flan",
    ]
    # decided on the per-seed τ's interval, not on the mean ranking's p (every verdict it
    # reaches: tests/test_ablation_verdicts.py): prose agrees with Wiki on both seeds (τ = 1,
    # zero width), code has τ = 1/3 on both seeds, so held on both; against Flan prose is reversed
    assert ablation.rank_verdict([taus["prose", "Wiki"], taus["code", "Wiki"]]) == "held"
    assert ablation.rank_verdict([taus["prose", "Flan"], taus["prose", "Flan"]]) == "not held"


def _comparisons():
    values = {
        ("a", "prose"): [1.0, 1.1, 1.2], ("b", "prose"): [2.0, 2.1, 2.2],
        ("a", "code"): [3.0, 3.1, 3.2], ("b", "code"): [2.0, 2.1, 2.2],
    }  # fmt: skip
    return {
        ("a", "b", d): ablation.compare("A", values["a", d], "B", values["b", d])
        for d in ("prose", "code")
    }


def test_pair_rows_verdicts_and_texts():
    comparisons = _comparisons()
    rows = show.pair_rows(comparisons, {"a": 1.0, "b": 1.25}, "code")
    assert rows == [
        {
            "paper's order": "A < B", "paper Δ": "-0.2500", "our Δ (paired)": "1.000 ± 0.000",
            "paired test": "> (separated)", "intervals": "> (separated)", "verdict": "not held",
        }
    ]  # fmt: skip
    assert ablation.pair_verdicts(comparisons, [("a", "b", "ab")]) == {"ab": "partly"}
    assert show.ordering_counts(comparisons) == {
        "held": 1,  # A < B on prose: paired difference separated, the paper's direction
        "not_held": 1,  # A < B on code: separated, the opposite direction
        "cannot_decide": 0,  # no paired interval contains 0
        "untestable": 0,
        "unpaired": 2,  # both also pass the unpaired test
        "n": 2,
    }
    single = {("a", "b", "prose"): ablation.compare("A", [1.0], "B", [2.0])}
    assert show.ordering_counts(single) == {
        "held": 0, "not_held": 0, "cannot_decide": 0, "untestable": 1, "unpaired": 0, "n": 1,
    }  # fmt: skip
    steps = {1: [comparisons["a", "b", "prose"]], 4: [comparisons["a", "b", "code"]]}
    assert show.step_rows(steps, 32) == [
        {"step": "A vs B", "length": "1× (32 tokens)", "paired Δ": "-1.00 ± 0.00",
         "paired test": "A < B"},
        {"step": "A vs B", "length": "4× (128 tokens)", "paired Δ": "1.00 ± 0.00",
         "paired test": "A > B"},
    ]  # fmt: skip
    by_domain = {d: c for (_, _, d), c in comparisons.items()}
    assert show.pair_text(by_domain, 1).startswith(
        "prose: A 1.1 ± 0.2 vs B 2.1 ± 0.2 (paired: A < B); code: A 3.1"
    )
    assert show.pair_text(by_domain, 1, names=False).startswith("prose: 1.1 ± 0.2 vs 2.1")
    assert show.difference_text(by_domain, 2) == (
        "prose paired Δ -1.00 ± 0.00; code paired Δ 1.00 ± 0.00"
    )


def test_relative_rows_are_paired_ratios():
    tables = _tables()
    rows = show.relative_rows(
        tables, {"W": {"a": 2.0, "b": 1.0, "c": 4.0}, "F": {"a": 1.0, "b": 1.0, "c": 1.0}},
        {"prose": "W", "code": "F"}, {"a": "A", "b": "B", "c": "C"}, reference="b",
    )  # fmt: skip
    prose_a = rows[0]
    assert prose_a["domain"] == "prose (paper: W)" and prose_a["paper (%)"] == pytest.approx(100)
    # a/b per seed: 1/2 and 1.2/2.3
    assert prose_a["ours (%)"] == pytest.approx(100 * ((0.5 + 1.2 / 2.3) / 2 - 1))
    assert rows[1]["ours (%)"] == 0 and rows[1]["low"] == rows[1]["high"] == 0  # b against itself
    spec = show.relative_chart(rows, ["A", "B", "C"]).to_dict()
    assert spec["title"].startswith("Perplexity relative to RoPE: ours (dots, 95% interval)")


def test_seed_noise_rows_and_verdict():
    assert ablation.paper_gap({"a": 1.0, "b": 2.0, "c": 4.0}) == pytest.approx(0.5)
    noise = ablation.seed_noise(_tables(), {"W": {"a": 1.0, "b": 2.0, "c": 4.0}})
    # prose: paired differences (a-b, a-c, b-c) = (-1,-1.1), (-2,-1.9), (-1,-0.8)
    assert noise.paired["prose"]["gap"] == pytest.approx(1.05)
    assert noise.paired["prose"]["seed_sd"] == pytest.approx(np.std([-2, -1.9], ddof=1))
    assert noise.seed_cv["code"] == pytest.approx(np.std([4.0, 4.2], ddof=1) / 4.1)
    rows = show.noise_rows(noise, {"prose": "W", "code": "W"})
    by_measure = {r["measure"]: r for r in rows}
    assert by_measure["paper column"] == {"measure": "paper column", "prose": "W", "code": "W"}
    assert by_measure["paper's median gap (% of ppl)"]["code"] == pytest.approx(50)
    # gaps ≈ 1 against s.d. ≈ 0.07, but 2 seeds put the s.d.'s chi-square interval at up to
    # 32× it: the point ratio alone decides nothing (every verdict: test_ablation_verdicts.py)
    assert noise.paired["prose"]["n"] == 2
    assert ablation.noise_verdict(noise) == "cannot decide"
    single = ablation.seed_noise({"x": ablation.seed_table({"a": [1.0], "b": [2.0]})}, {})
    assert single.paired["x"] is None and ablation.noise_verdict(single) == "cannot decide"
    single_w = ablation.seed_noise({"x": ablation.seed_table({"a": [1.0], "b": [2.0]})},
                                   {"W": {"a": 1.0, "b": 2.0}})  # fmt: skip
    assert show.seed_noise_values(single_w, {"x": "W"}) == {
        "x": {"unpaired": "—", "paired": "—", "seed_cv": "—", "paper_gap": 50.0}
    }  # one seed: no measure of seed noise
    values = show.seed_noise_values(noise, {"prose": "W", "code": "W"})
    assert list(values) == ["prose", "code"]
    assert values["code"]["paired"] == f"{noise.paired['code']['ratio']:.1f}×"
    assert values["prose"] == {
        "unpaired": f"{noise.unpaired['prose']['ratio']:.1f}×",
        "paired": f"{noise.paired['prose']['ratio']:.1f}×",
        "seed_cv": f"{100 * noise.seed_cv['prose']:.2f}%",
        "paper_gap": pytest.approx(50.0),
    }
    assert math.isnan(single.seed_cv["x"])


def test_length_factors():
    assert ablation.length_factors(8, 4) == [1, 2, 4, 8]
    assert ablation.length_factors(1, 4) == [1]
    assert ablation.length_factors(6, 3) == [1, 2, 3, 4, 6]
    assert ablation.length_factors(16) == [1, 2, 4, 8, 16]


def test_table2_runs_are_the_zoos_planned_lesson_models(monkeypatch):
    """Both p-RoPE chapters read these runs: Table 2 on both corpora, the p sweep on Shakespeare,
    every one a model the zoo plans to train (so the build has it before the chapters run)."""
    from ropebook import zoo

    def fake_load(name, *, seed, domain, regime, **_):
        return (name, seed, domain, regime)

    monkeypatch.setattr(zoo, "load", fake_load)
    runs = ablation.table2_runs("cpu")
    expected = {(n, d) for n in zoo.TABLE2 for d in ablation.DOMAINS}
    expected |= {(n, "shakespeare") for n in ablation.SWEEP.values()}
    assert set(runs) == expected and "p-rope-0.5" in ablation.SWEEP.values()
    planned = set(zoo.default_jobs("cpu"))
    loaded = [job for jobs in runs.values() for job in jobs]
    assert loaded and not [job for job in loaded if job not in planned]
    # every model has the profile's seeds first (what the comparisons pair on), then the plan's
    own = zoo.PROFILES["cpu"].seeds
    assert all(tuple(job[1] for job in jobs[: len(own)]) == own for jobs in runs.values())
    for (name, domain), jobs in runs.items():
        planned_n = seedplan.planned_counts("cpu").get(("lesson", name, domain), len(own))
        assert [job[1] for job in jobs] == list(range(planned_n)), (name, domain)
    assert set(show.LABELS) >= {name for name, _ in runs}


def _curve(ppl_first: float, ppl_second: float) -> ablation.ExtrapolationCurve:
    """Context 2, 4 positions: perplexity ppl_first over the first 2, ppl_second over the rest."""
    losses = np.log([ppl_first, ppl_first, ppl_second, ppl_second])
    return ablation.ExtrapolationCurve(losses, context=2, n_windows=1)


def test_extrapolation_tables_comparisons_and_sweep():
    curves = {
        ("a", "prose"): [_curve(2.0, 8.0), _curve(2.0, 8.0)],
        ("b", "prose"): [_curve(3.0, 3.0), _curve(3.0, 3.0)],
    }
    table = ablation.extrapolation_table(curves, [1, 2])
    assert table["a", "prose"][1].mean == pytest.approx(2.0)
    assert table["a", "prose"][2].mean == pytest.approx(4.0)  # exp(mean(ln 2, ln 8))
    rows = show.extrapolation_rows(table, ["a", "b"], "prose", {"a": "A", "b": "B"}, 2)
    assert rows[0] == {
        "encoding": "A",
        "1× (2)": "2.00 [2.00, 2.00]",
        "2× (4)": "4.00 [4.00, 4.00]",
    }
    summary = ablation.extrapolation_summary(table, ["a", "b"], "prose", 2)
    assert summary == {
        "best": "b",
        "growth_min": pytest.approx(1.0),
        "growth_max": pytest.approx(2.0),
    }
    c = ablation.compare_curves("A", curves["a", "prose"], "B", curves["b", "prose"], 2)
    assert c.difference.mean == pytest.approx(100 / 3) and c.verdict("B") == "held"
    more = [*curves["a", "prose"], _curve(100.0, 100.0)]  # a seed B lacks: left out of the pairing
    assert ablation.compare_curves("A", more, "B", curves["b", "prose"], 2) == c
    assert (
        ablation.compare_curves("A", curves["a", "prose"], "B", curves["b", "prose"], 1).lower
        == "A"
    )
    sweep = show.sweep_rows(table, {0.0: "a", 1.0: "b"}, [1, 2], {"a": "A", "b": "B"}, 2, "prose")
    assert [(r["p"], r["length"]) for r in sweep] == [
        (0.0, "1× context (2 tokens)"), (0.0, "2× context (4 tokens)"),
        (1.0, "1× context (2 tokens)"), (1.0, "2× context (4 tokens)"),
    ]  # fmt: skip
    assert [r["ppl"] for r in sweep] == pytest.approx([2.0, 4.0, 3.0, 3.0])
    spec = show.sweep_chart(sweep, title="sweep").to_dict()
    assert spec["title"] == "sweep" and spec["facet"]["column"]["field"] == "length"
    chart = show.extrapolation_chart(curves, {"a": "A", "b": "B"}, max_factor=2).to_dict()
    assert chart["title"] == "Perplexity vs position, trained on 2 tokens, evaluated on 4"
    binned = _chart_values(chart)
    # bins of half the context (1 position): 4 per curve set; A's perplexity is 8 after 2 tokens
    assert len(binned) == 8 and [r["ppl"] for r in binned[:4]] == pytest.approx([2, 2, 8, 8])
    assert {r["encoding"] for r in binned} == {"A", "B"} and binned[0]["edge"] == 1.0


def test_budget_rows_tokens_and_parameters():
    from types import SimpleNamespace as Run

    models = {
        ("a", "prose"): [Run(tokens_seen=100, seconds=2.0), Run(tokens_seen=100, seconds=4.0)],
        ("b", "code"): [Run(tokens_seen=1000, seconds=1.0)],
    }
    rows = show.budget_rows(models, {"a": "A", "b": "B"})
    assert rows[0] == {"model": "A", "corpus": "prose", "seeds": 2, "tokens/model": "100",
                       "train s (mean)": 3.0}  # fmt: skip
    assert rows[1]["tokens/model"] == "1,000"
    assert ablation.tokens_seen(models) == [100, 1000]
    assert ablation.n_parameters({"w": np.zeros((3, 4)), "b": [np.zeros(5)]}) == 17


def test_profile_rows_describe_the_zoo():
    rows = {r["profile"]: r for r in show.profile_rows("smoke")}
    assert set(rows) == {"smoke (this run)", "cpu", "gpu"}
    assert rows["smoke (this run)"]["L × H × d_h"] == "2 × 4 × 16"
    assert rows["cpu"]["seeds"] == 3 and rows["smoke (this run)"]["tokens/model"] == "30,720"


def _val_run(name, seed, losses, steps=(10, 20, 40), tokens_per_step=100):
    from types import SimpleNamespace as Run

    return Run(
        name=name, seed=seed, tokens_seen=tokens_per_step * steps[-1],
        history={"val": [{"step": s, "loss": v} for s, v in zip(steps, losses, strict=True)],
                 "train": [{"step": steps[-1]}]},
    )  # fmt: skip


def test_noise_over_training_pairs_seeds_at_every_recorded_step():
    base = np.array([[3.0, 2.5, 2.0], [3.1, 2.4, 2.1], [2.9, 2.6, 1.9]])
    shift = np.array([[0.0, 0.01, -0.02], [0.0, 0.03, 0.00], [0.0, 0.02, 0.01]])
    runs_a = [_val_run("a", s, base[s] + shift[s]) for s in range(3)]
    runs_b = [_val_run("b", s, base[s]) for s in range(3)]
    tokens, losses = ablation.validation_curve(runs_a)
    assert tokens.tolist() == [1000, 2000, 4000] and losses.shape == (3, 3)
    series = ablation.comparisons_over_training("A", runs_a, "B", runs_b)
    assert list(series) == [1000, 2000, 4000]
    for j, c in enumerate(series.values()):  # paired difference = shift, in % of perplexity
        assert c.difference.mean == pytest.approx(100 * np.expm1(shift[:, j].mean()), rel=1e-6)
        assert ablation.paired_sd_percent(c) == pytest.approx(100 * shift[:, j].std(ddof=1))
    rows = show.training_noise_rows({"A vs B": series})
    last = rows[-1]
    assert last["s.d. of Δ (%)"] == pytest.approx(1.5275, abs=1e-3)  # sd of (-2, 0, 1) %
    assert last["s.d. low"] < last["s.d. of Δ (%)"] < last["s.d. high"]
    assert rows[0]["s.d. of Δ (%)"] == 0 and rows[0]["verdict"] == "cannot decide"
    noise = ablation.training_noise(series, series[2000], effect_percent=0.5)
    assert noise.tokens == 4000 and noise.sd == pytest.approx(1.5275, abs=1e-4)
    assert noise.sd_low < noise.sd < noise.sd_high and noise.late_from == 2000  # √(1000 · 4000)
    assert noise.late_min == pytest.approx(min(noise.sd, noise.earlier_sd))
    assert math.isnan(noise.rho) and noise.trend == "does not fall steadily"  # two late steps
    values = show.training_noise_values(series, noise, 2000)
    assert values["sd"] == "1.53 %" and values["times"] == "2.0×"  # × the matched runs
    assert values["seeds_needed"] == str(noise.seeds_needed)  # paired seeds the gap would need
    assert values["tokens"] == "4,000" and values["rho"] == "—" and values["seeds"] == "3"
    assert values["sd_interval"] == f"{noise.sd_low:.2f}–{noise.sd_high:.2f} %"
    chart = show.training_noise_chart(rows).to_dict()
    # the zero-noise step is not drawn; the other data set is the target rule
    assert sorted(len(v) for v in chart["datasets"].values()) == [1, 2]
    with pytest.raises(ValueError, match="same seeds"):
        ablation.comparisons_over_training("A", runs_a[:2], "B", runs_b[1:])
    one = ablation.comparisons_over_training("A", runs_a[:1], "B", runs_b[:1])
    assert ablation.training_noise(one, one[2000], 0.5) is None
    single = show.training_noise_values(one, None, 2000)  # one seed: no noise to follow
    assert set(single) == set(values) and single["tokens"] == "4,000"
    assert single["seeds"] == "1" and single["difference"].endswith("(1 seed)")
    assert {single[k] for k in ("sd", "sd_interval", "trend", "seeds_needed")} == {"—"}


def test_the_papers_table2_is_quoted_for_every_zoo_model_in_order():
    from ropebook import zoo

    for column in ablation.PAPER_TABLE2.values():
        assert tuple(column) == zoo.TABLE2
    # Table 2's best and worst, as the paper prints them
    assert (
        min(ablation.PAPER_TABLE2["Wiki"], key=ablation.PAPER_TABLE2["Wiki"].get) == "p-rope-0.75"
    )
    assert max(ablation.PAPER_TABLE2["FlanV2"], key=ablation.PAPER_TABLE2["FlanV2"].get) == "nope"


def test_undecided_orderings_buy_the_seeds_power_asks_for_up_to_a_cap():
    from ropebook.stats import power

    clear = ablation.compare("a", [10.0, 11.0, 12.0], "b", [12.0, 13.2, 14.4], log=True)
    near = ablation.compare("a", [10.0, 10.0, 10.0], "b", [10.2, 10.02, 10.3], log=True)
    tiny = ablation.compare("a", [10.0, 10.0, 10.0], "b", [10.05, 9.96, 10.0], log=True)
    assert (
        clear.verdict("a") == "held" and near.verdict("a") == tiny.verdict("a") == "cannot decide"
    )
    needed = power.seeds_to_decide(power.paired_log_percent(near)).needed
    assert 3 < needed <= 8  # the measured gap, 2 s.d.s of the paired differences or so
    wanted = ablation.seeds_by_power({"clear": clear, "near": near, "tiny": tiny}, max_seeds=8)
    assert wanted == {"clear": 3, "near": needed, "tiny": 3}  # tiny needs far more than 8
    assert ablation.seeds_by_power({"near": near}, max_seeds=needed - 1) == {"near": 3}


def test_extended_runs_add_the_next_seeds_and_pair_on_shared_ones(tiny_zoo):
    from ropebook import zoo

    one = lambda name: [zoo.load(name, seed=0, profile="smoke", progress=False)]  # noqa: E731
    runs = {("rope", "shakespeare"): one("rope"), ("nope", "shakespeare"): one("nope")}
    grown = ablation.extend_runs(runs, {("rope", "shakespeare"): 3}, profile="smoke")
    assert [m.seed for m in grown["rope", "shakespeare"]] == [0, 1, 2]
    assert grown["nope", "shakespeare"] == runs["nope", "shakespeare"]  # not asked: unchanged
    assert (
        grown["rope", "shakespeare"][2].val_ppl == zoo.load("rope", seed=2, profile="smoke").val_ppl
    )
    c = ablation.compare_models(
        "RoPE", grown["rope", "shakespeare"], "NoPE", runs["nope", "shakespeare"]
    )
    assert c.a_est.n == c.b_est.n == 1  # paired on the one seed both have


def test_seeds_bought_cheapest_first_each_whole_within_the_budget():
    from ropebook.stats import power

    near = ablation.compare("a", [10.0, 10.0, 10.0], "b", [10.2, 10.02, 10.3], log=True)
    nearer = ablation.compare("a", [10.0, 10.0, 10.0], "b", [10.25, 10.1, 10.3], log=True)
    n_near, n_nearer = (
        power.seeds_to_decide(power.paired_log_percent(c)).needed for c in (near, nearer)
    )
    assert 3 < n_nearer < n_near <= 8
    have = dict.fromkeys("pqrs", 3)
    pairs = {("p", "q"): near, ("r", "s"): nearer}
    buy = lambda budget: ablation.seeds_to_buy(  # noqa: E731
        pairs, have, max_seeds=8, seconds_per_model=10.0, budget_seconds=budget
    )
    cheap = 2 * 10.0 * (n_nearer - 3)  # two models, each n_nearer - 3 seeds more
    assert buy(cheap) == {"r": n_nearer, "s": n_nearer}  # the cheaper one, whole
    assert buy(cheap - 1) == {}  # a part of it would decide nothing: none
    assert buy(1e9) == {"p": n_near, "q": n_near, "r": n_nearer, "s": n_nearer}
    shared = {("p", "q"): near, ("p", "s"): nearer}  # p raised once for both
    assert ablation.seeds_to_buy(
        shared,
        have,
        max_seeds=8,
        seconds_per_model=10.0,
        budget_seconds=cheap + 10.0 * 2 * (n_near - 3),
    ) == {"p": n_near, "q": n_near, "s": n_nearer}
    assert ablation.seeds_to_buy(pairs, have, max_seeds=8, seconds_per_model=float("inf"),
                                 budget_seconds=0.0) == {}  # fmt: skip


def test_per_seed_measures_pair_on_the_seeds_every_variant_has():
    """A variant with seeds added by power (after the profile's own) adds nothing to the measures
    that pair seed by seed: they read the first seeds, which every variant has."""
    tables = _tables()
    more = {d: dict(t) for d, t in tables.items()}
    more["prose"]["a"] = ablation.seed_table({"a": [1.0, 1.2, 50.0]})["a"]  # a third seed of a
    assert ablation.relative_change(more["prose"], "b") == ablation.relative_change(
        tables["prose"], "b"
    )
    paper = {"W": {"a": 1.0, "b": 2.0, "c": 4.0}}
    assert ablation.seed_noise(more, paper).paired == ablation.seed_noise(tables, paper).paired
    assert ablation.seed_noise(more, paper).unpaired != ablation.seed_noise(tables, paper).unpaired


def test_a_p_rope_test_is_informative_only_where_the_freed_planes_pass_a_quarter_turn():
    # d = 16, θ = 10⁴: 0.75-RoPE frees planes 6 and 7; the faster turns at 10⁴^(-12/16) rad/token
    g = 10_000.0 ** (-12 / 16)
    assert ablation.dropped_turn(16, 128, 10_000.0) == pytest.approx(128 * g)
    assert ablation.INFORMATIVE_ANGLE == pytest.approx(math.pi / 2)
    edge = math.ceil(ablation.INFORMATIVE_ANGLE / g)  # the first length past a quarter turn
    assert not ablation.freed_planes_informative(16, edge - 1, 10_000.0)
    assert ablation.freed_planes_informative(16, edge, 10_000.0)
    # the book's regimes: the lesson one cannot tell p-RoPE from RoPE, the matched one can
    assert not ablation.freed_planes_informative(16, 8 * 128, 10_000.0)
    assert ablation.freed_planes_informative(32, 128, 200.0)


def _kept_runs(gap_percent: float, seeds: int = 6) -> dict[tuple[str, str], list]:
    """Every Table 2 model on both corpora: per seed a shared level, NoPE ``gap_percent`` above
    0.25-RoPE, the others a little apart; ``KeptRun``s as the kept study gives them."""
    rng = np.random.default_rng(3)
    runs = {}
    for d in ablation.DOMAINS:
        level = 100 * np.exp(0.05 * rng.standard_normal(seeds))  # shared by every model of a seed
        for i, name in enumerate(zoo.TABLE2):
            factor = 1 + gap_percent / 100 if name == "nope" else 1 + 0.001 * i
            jitter = np.exp(0.001 * rng.standard_normal(seeds))
            runs[name, d] = [table2_study.KeptRun(s, float(level[s] * factor * jitter[s]))
                             for s in range(seeds)]  # fmt: skip
    return runs


def test_seed_tables_pair_comparisons_and_nope_against_its_worst_rival():
    runs = _kept_runs(gap_percent=5.0)
    tables = ablation.seed_tables(runs, zoo.TABLE2)
    assert set(tables) == set(ablation.DOMAINS)
    assert tables["python"]["nope"].values == tuple(m.val_ppl for m in runs["nope", "python"])
    pairs = ablation.pair_comparisons(runs, show.LABELS)
    assert set(pairs) == {(b, w, d) for b, w, _ in ablation.PAIRS for d in ablation.DOMAINS}
    rope_vs_nope = pairs["rope", "nope", "shakespeare"]
    assert rope_vs_nope.paired and rope_vs_nope.difference.high < 0  # RoPE below NoPE, paired
    worst = ablation.nope_against_worst(runs, tables, show.LABELS)
    assert all(c.verdict(c.b) == "held" for c in worst.values())  # NoPE 5 % above every rival
    better = _kept_runs(gap_percent=-5.0)  # NoPE now the best: its worst rival beats it
    worst = ablation.nope_against_worst(
        better, ablation.seed_tables(better, zoo.TABLE2), show.LABELS
    )
    assert all(c.verdict(c.b) == "not held" for c in worst.values())
    assert worst["python"].b == show.LABELS["p-rope-0.75"]  # the highest of the other six


def test_nope_is_highest_only_if_every_rival_is_established_below_it():
    """An intersection: NoPE 5 % above every rival holds; 5 % below them is not held. A noisy
    rival (3 % below NoPE on average, ±10 % seed by seed) leaves the claim open, though NoPE is
    established above the rival with the closest *mean* (1 % below it, tightly), which alone
    would have called it held."""
    tables = lambda runs: ablation.seed_tables(runs, zoo.TABLE2)  # noqa: E731
    above, below = _kept_runs(gap_percent=5.0), _kept_runs(gap_percent=-5.0)
    assert ablation.nope_worst_verdict(above, tables(above), show.LABELS) == "held"
    assert ablation.nope_worst_verdict(below, tables(below), show.LABELS) == "not held"
    noisy = dict(above)
    for d in ablation.DOMAINS:
        nope = above["nope", d]
        noisy["rope", d] = [
            table2_study.KeptRun(m.seed, m.val_ppl * (0.97 + 0.1 * (-1) ** m.seed)) for m in nope
        ]
        noisy["p-rope-0.75", d] = [table2_study.KeptRun(m.seed, m.val_ppl * 0.99) for m in nope]
    closest = ablation.nope_against_worst(noisy, tables(noisy), show.LABELS)
    assert all(
        c.b == show.LABELS["p-rope-0.75"] and c.verdict(c.b) == "held" for c in closest.values()
    )
    assert ablation.nope_worst_verdict(noisy, tables(noisy), show.LABELS) == "cannot decide"
