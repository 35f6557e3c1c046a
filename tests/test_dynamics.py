"""Training dynamics: statistics along snapshots, the induction score and the trend test."""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import numpy as np
import pytest

from ropebook import model
from ropebook.analysis import dynamics as dy
from ropebook.present import dynamics as show

CONFIG = model.ModelConfig(
    vocab_size=32, n_layers=2, n_heads=2, d_model=32, d_ff=64, context=16, head_dim=16,
    rope_base=50.0,
)  # fmt: skip


def causal_uniform(t: int) -> np.ndarray:
    mask = np.tril(np.ones((t, t)))
    return mask / mask.sum(-1, keepdims=True)


# ---------------------------------------------------------------- induction


def test_induction_targets_point_to_the_successor_of_the_earlier_occurrence():
    rng = np.random.default_rng(0)
    tokens = dy.repeated_random_tokens(rng, 3, 7, 50)
    queries, keys = dy.induction_targets(7, start=1)
    assert tokens.shape == (3, 15) and (tokens[:, 0] == 0).all()
    assert (tokens[:, 1:8] == tokens[:, 8:]).all()
    assert (tokens[:, 1:] > 0).all()
    assert all(len(set(row[1:8])) == 7 for row in tokens)  # no repeats inside a period
    # the key follows the earlier occurrence of the query's token
    assert (tokens[:, keys - 1] == tokens[:, queries]).all()


def test_perfect_induction_head_scores_one_and_uniform_scores_about_one_over_n():
    period, start = 10, 1
    t = start + 2 * period
    queries, keys = dy.induction_targets(period, start)
    perfect = causal_uniform(t)
    perfect[queries] = 0.0
    perfect[queries, keys] = 1.0
    assert dy.induction_score(perfect, period, start) == pytest.approx(1.0)
    uniform = dy.induction_score(causal_uniform(t), period, start)
    assert uniform == pytest.approx(np.mean(1.0 / (queries + 1)))
    assert 1 / t < uniform < 1 / period
    # a previous-token head scores 0, and leading axes are kept
    previous = np.zeros((t, t))
    previous[np.arange(1, t), np.arange(t - 1)] = 1
    stacked = np.stack([perfect, previous])
    np.testing.assert_allclose(dy.induction_score(stacked, period, start), [1.0, 0.0])


def test_induction_score_rejects_short_attention():
    with pytest.raises(ValueError, match="shorter"):
        dy.induction_score(np.eye(8), period=5)


def test_repeated_random_tokens_needs_enough_vocabulary():
    with pytest.raises(ValueError, match="distinct"):
        dy.repeated_random_tokens(np.random.default_rng(0), 1, 40, 32)


def test_induction_scores_of_a_model_are_attention_weights():
    params = model.init_params(jax.random.key(0), CONFIG)
    seqs = dy.repeated_random_tokens(np.random.default_rng(1), 2, 7, CONFIG.vocab_size)
    scores = dy.induction_scores(params, CONFIG, seqs, 7)
    assert scores.shape == (2, 2)
    assert ((scores > 0) & (scores < 1)).all()


# ---------------------------------------------------------------- statistics


def test_pair_share_is_one_over_pairs_when_isotropic():
    assert dy.pair_share(np.ones((3, 2, 8))) == pytest.approx(1 / 8)
    slow_only = np.zeros(8)
    slow_only[-2:] = 1.0
    assert dy.pair_share(slow_only, 0.25) == pytest.approx(0.5)  # 2 slowest pairs share it all
    fast_only = np.zeros(8)
    fast_only[0] = 1.0
    assert dy.pair_share(fast_only, 0.25) == 0.0


def test_decay_contrast_is_positive_for_decay_and_zero_when_flat():
    t = 32
    falling = np.broadcast_to(np.linspace(2.0, 1.0, t), (2, 3, t))
    flat = np.ones((1, 3, t))
    assert (dy.decay_contrast(falling, short=4) > 0).all()
    np.testing.assert_allclose(dy.decay_contrast(flat, short=4), 0.0, atol=1e-12)


# ---------------------------------------------------------------- trajectories


@dataclass
class FakeModel:
    seed: int
    name: str = "rope"
    config: model.ModelConfig = CONFIG
    steps: tuple = (0, 1, 3, 10)
    history: dict = field(default_factory=dict)

    def __post_init__(self):
        self.history.setdefault(
            "snapshots", [{"step": s, "tokens_seen": s * 100} for s in self.steps]
        )

    @property
    def snapshot_steps(self):
        return list(self.steps)

    def snapshot(self, step):
        return {"step": step, "seed": self.seed}, step * 100


def test_over_training_measures_every_snapshot_of_every_seed():
    def measure(params, config):
        return {"a": params["step"] + params["seed"], "b": -params["step"]}

    out = dy.over_training(
        [FakeModel(0), FakeModel(1)], measure, toward={"a": 1, "b": -1}, reference={"a": 0.5}
    )
    a, b = out["a"], out["b"]
    np.testing.assert_array_equal(a.tokens, [0, 100, 300, 1000])
    np.testing.assert_array_equal(a.values, [[0, 1, 3, 10], [1, 2, 4, 11]])
    np.testing.assert_array_equal(a.untrained, [0, 1])
    assert a.reference == 0.5 and b.reference is None and a.seeds == (0, 1)
    assert dy.trend_test(a).verdict == dy.TOWARD
    assert dy.trend_test(b).verdict == dy.TOWARD  # b falls, and its Gemma side is below


def test_over_training_refuses_mixed_models_and_steps():
    def measure(params, config):
        return {"a": 0.0}

    with pytest.raises(ValueError, match="same zoo spec"):
        dy.over_training([FakeModel(0), FakeModel(1, name="nope")], measure, toward={"a": 1})
    with pytest.raises(ValueError, match="snapshot steps"):
        dy.over_training([FakeModel(0), FakeModel(1, steps=(0, 2))], measure, toward={"a": 1})


def test_snapshots_without_kept_steps_rebuild_the_untrained_model():
    trained = model.init_params(jax.random.key(9), CONFIG)
    fake = FakeModel(3, steps=())
    fake.params, fake.tokens_seen = trained, 4096
    fake.history = {"train": [{"step": 20}], "snapshots": []}
    first, last = dy.snapshots(fake)
    expected = model.init_params(jax.random.key(3), CONFIG)
    assert (first.step, first.tokens, last.step, last.tokens) == (0, 0, 20, 4096)
    np.testing.assert_array_equal(first.params["embed"], expected["embed"])
    assert last.params is trained


# ---------------------------------------------------------------- the trend test


def trajectory(values, toward=1):
    values = np.atleast_2d(values)
    return dy.Trajectory(
        "stat", "rope", tuple(range(len(values))), np.arange(values.shape[1]),
        np.r_[0, np.geomspace(10, 1000, values.shape[1] - 1)].astype(int), values, toward,
    )  # fmt: skip


def test_trend_test_on_constructed_monotone_series():
    rising = np.array([[0.0, 1, 2, 3], [0.1, 1.2, 2.1, 3.3], [-0.1, 0.9, 2.2, 2.9]])
    up = dy.trend_test(trajectory(rising, toward=1))
    assert up.verdict == dy.TOWARD and up.claim_verdict == "held"
    np.testing.assert_allclose(up.spearman, 1.0)
    assert up.change.mean == pytest.approx(3.0666, abs=1e-3) and up.change.low > 0
    assert 0 < up.mde < 3
    down = dy.trend_test(trajectory(rising, toward=-1))
    assert down.verdict == dy.AWAY and down.claim_verdict == "not held"
    assert "3 seeds" in down.basis()


def test_trend_test_cannot_decide_with_noise_or_one_seed():
    noisy = np.array([[0.0, 1.0], [0.0, -1.0], [0.0, 0.2]])
    assert dy.trend_test(trajectory(noisy)).verdict == dy.UNDECIDED
    one = dy.trend_test(trajectory([[0.0, 1, 2, 3]]))
    assert one.verdict == dy.UNDECIDED and one.mde is None and one.n_seeds == 1
    assert "1 seed" in one.basis()


def test_uniform_induction_score_is_that_of_uniform_causal_attention():
    period, start = 7, 1
    n = start + 2 * period
    uniform = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]
    assert dy.induction_score(uniform, period, start) == pytest.approx(
        dy.uniform_induction_score(period, start)
    )


def test_growing_a_head_needs_the_level_not_only_a_rise():
    rising_low = np.array([[0.010, 0.012, 0.017], [0.011, 0.013, 0.018], [0.010, 0.014, 0.016]])
    trend = dy.trend_test(trajectory(rising_low))
    assert trend.verdict == dy.TOWARD  # it rises on every seed ...
    verdict, final = dy.level_verdict(trend, 0.5)
    assert verdict == "not held" and final.high < 0.5  # ... but ends far below a head's level
    assert final.mean == pytest.approx(0.017) and trend.finals == pytest.approx(
        (0.017, 0.018, 0.016)
    )
    assert dy.level_verdict(trend, 0.012)[0] == "held"  # past a low level, and risen
    straddling = dy.trend_test(trajectory(np.array([[0.0, 0.2], [0.0, 0.8], [0.0, 0.5]])))
    assert dy.level_verdict(straddling, 0.5)[0] == "cannot decide"
    flat_high = dy.trend_test(trajectory(np.array([[0.9, 0.9], [0.8, 0.8], [0.85, 0.85]])))
    assert dy.level_verdict(flat_high, 0.5)[0] == "cannot decide"  # there, but not grown
    assert dy.level_verdict(dy.trend_test(trajectory([[0.0, 0.9]])), 0.5) == ("cannot decide", None)


def test_growing_a_head_judges_the_rise_given_against_the_control():
    high = dy.trend_test(trajectory(np.array([[0.0, 0.9], [0.1, 0.8], [0.0, 0.85]])))
    assert dy.level_verdict(high, 0.5, rise=dy.TOWARD)[0] == "held"
    assert dy.level_verdict(high, 0.5, rise=dy.AWAY)[0] == "partly"  # there, grew less than NoPE
    assert dy.level_verdict(high, 0.5, rise=dy.UNDECIDED)[0] == "cannot decide"
    assert dy.level_verdict(high, 1.5, rise=dy.TOWARD)[0] == "not held"  # short of the level


def test_a_rise_short_of_the_control_with_the_level_straddled_is_not_held():
    """One part of the conjunction (rises more than NoPE) is false and the other (ends at the
    level) is not established: no part holds, so not held, not cannot decide."""
    straddling = dy.trend_test(trajectory(np.array([[0.0, 0.2], [0.0, 0.8], [0.0, 0.5]])))
    verdict, final = dy.level_verdict(straddling, 0.5, rise=dy.AWAY)
    assert verdict == "not held" and final.low < 0.5 < final.high
    assert dy.level_verdict(straddling, 0.5, rise=dy.TOWARD)[0] == "cannot decide"
    assert dy.level_verdict(straddling, 0.5, rise=dy.UNDECIDED)[0] == "cannot decide"


def named(values, model, seeds=None, toward=1, statistic="stat"):
    values = np.atleast_2d(values)
    seeds = tuple(range(len(values))) if seeds is None else seeds
    return dy.Trajectory(
        statistic, model, seeds, np.arange(values.shape[1]),
        np.r_[0, np.geomspace(10, 1000, values.shape[1] - 1)].astype(int), values, toward,
    )  # fmt: skip


def test_controlled_trend_judges_rope_against_nope_seed_by_seed():
    nope = named([[0.0, 1.0], [0.0, 2.0], [0.0, 3.0]], "nope")  # NoPE rises too
    # RoPE rises by more than NoPE on every seed (same seed paired): toward → held
    rope = named([[0.0, 1.5], [0.0, 2.6], [0.0, 3.4]], "rope")
    more = dy.controlled_trend(rope, nope)
    assert more.verdict == dy.TOWARD and more.claim_verdict == "held"
    assert more.changes == pytest.approx((0.5, 0.6, 0.4)) and more.seeds == (0, 1, 2)
    assert dy.trend_test(rope).verdict == dy.TOWARD
    # RoPE rises, but less than NoPE: its own trend says toward, the controlled one away
    less = dy.controlled_trend(named([[0.0, 0.5], [0.0, 1.4], [0.0, 2.6]], "rope"), nope)
    assert less.verdict == dy.AWAY and less.claim_verdict == "not held"
    # as much as NoPE, give or take: cannot decide
    same = dy.controlled_trend(named([[0.0, 1.5], [0.0, 1.5], [0.0, 3.0]], "rope"), nope)
    assert same.verdict == dy.UNDECIDED and same.claim_verdict == "cannot decide"
    assert 0 < same.mde and "3 paired seeds (rope and nope of the same seed)" in same.basis()
    # toward = -1: a larger fall than NoPE's is toward
    fall = dy.controlled_trend(
        named([[0.0, -1.5], [0.0, -2.6], [0.0, -3.4]], "rope", toward=-1),
        named([[0.0, -1.0], [0.0, -2.0], [0.0, -3.0]], "nope", toward=-1),
    )
    assert fall.verdict == dy.TOWARD
    assert "rope minus nope, paired by seed: -0.500 (rope -2.500, nope -2.000)" in fall.measured()


def test_controlled_trend_pairs_common_seeds_and_checks_its_inputs():
    rope = named([[0.0, 1.0], [0.0, 2.0]], "rope", seeds=(0, 1))
    nope = named([[0.0, 0.5], [0.0, 0.0]], "nope", seeds=(1, 2))
    one = dy.controlled_trend(rope, nope)  # seed 1 only
    assert one.seeds == (1,) and one.changes == (1.5,) and one.verdict == dy.UNDECIDED
    assert one.mde is None and one.basis().startswith("1 seed")
    with pytest.raises(ValueError, match="share no seed"):
        dy.controlled_trend(rope, named([[0.0, 1.0]], "nope", seeds=(5,)))
    with pytest.raises(ValueError, match="does not match"):
        dy.controlled_trend(rope, named([[0.0, 1.0]], "nope", statistic="other"))
    runs = {"rope": {"stat": rope}, "nope": {"stat": nope}}
    assert set(dy.controlled_trends(runs, ["stat"])) == {"stat"}
    assert dy.controlled_trends({"rope": {"stat": rope}}, ["stat"]) == {}


def test_control_table_and_claim_fields():
    nope = named([[0.0, 1.0], [0.0, 2.0], [0.0, 3.0]], "nope")
    rope = named([[0.0, 1.5], [0.0, 2.6], [0.0, 3.4]], "rope")
    controlled = dy.controlled_trend(rope, nope)
    row = show.control_table([controlled])[0]
    assert row["rope − nope"].startswith("+0.500 [") and row["verdict"] == dy.TOWARD
    assert row["rope change"] == pytest.approx(2.5) and row["nope change"] == pytest.approx(2.0)
    fields = show.control_claim([controlled], [dy.trend_test(rope)])
    assert fields["evidence"] == "held" and fields["seeds"] == 3
    assert "alone: rope stat: untrained" in fields["measured"]
    assert "paired seeds" in fields["to_decide"]
    missing = show.control_claim([], [dy.trend_test(rope)], regime="lesson")
    assert missing["evidence"] == "not testable here"
    assert "nope control trained in the lesson regime" in missing["to_decide"]


def test_trajectory_checks_shapes_and_direction():
    with pytest.raises(ValueError, match="toward"):
        trajectory([[0.0, 1.0]], toward=2)
    with pytest.raises(ValueError, match="values must be"):  # only descriptive ones may be 3-D
        dy.Trajectory("s", "m", (0,), np.arange(2), np.arange(2), np.zeros((1, 2, 4)), 1)
    with pytest.raises(ValueError, match="values must be"):
        dy.Trajectory("s", "m", (0,), np.arange(3), np.arange(3), np.zeros((2, 3)), 1)


def test_combined_verdict():
    def trend(verdict):
        return dy.Trend("s", "m", 3, 0, 0, None, np.zeros(3), 1, verdict, 0.1)

    assert dy.combined_verdict([trend(dy.TOWARD), trend(dy.TOWARD)]) == "held"
    assert dy.combined_verdict([trend(dy.AWAY), trend(dy.AWAY)]) == "not held"
    assert dy.combined_verdict([trend(dy.TOWARD), trend(dy.AWAY)]) == "partly"
    assert dy.combined_verdict([trend(dy.TOWARD), trend(dy.UNDECIDED)]) == "partly"
    assert dy.combined_verdict([trend(dy.AWAY), trend(dy.UNDECIDED)]) == "not held"
    assert dy.combined_verdict([trend(dy.UNDECIDED), trend(dy.UNDECIDED)]) == "cannot decide"


def test_trend_table_and_chart():
    series = trajectory(np.array([[0.0, 1, 2, 3], [0.1, 1.2, 2.1, 3.3]]))
    rows = show.trend_table([dy.trend_test(series)])
    assert rows[0]["verdict"] == dy.TOWARD and "[" in rows[0]["change"]
    points, summary, untrained = show.chart_rows([series])
    assert len(summary) == 3 and len(points) == 6  # step 0 is the dashed rule, not a point
    assert untrained == [{"model": "rope", "untrained": pytest.approx(0.05)}]
    spec = show.norm_share_chart([series]).to_dict()
    assert spec["width"] <= 520 and spec["title"]["text"]
    line = next(layer for layer in spec["layer"] if layer["mark"].get("type") == "line")
    assert line["encoding"]["x"]["scale"]["type"] == "log"
    assert line["encoding"]["x"]["title"] == "tokens seen (log scale)"
    other = dy.Trajectory(**{**series.__dict__, "statistic": "other"})
    stacked = show.positional_chart([series, other]).to_dict()
    assert len(stacked["vconcat"]) == 2 and stacked["title"]["text"]
    with pytest.raises(ValueError, match="width"):
        show.trajectory_chart([series], title="t", y_title="y", width=700)


def test_every_measure_runs_on_a_tiny_model_and_gives_finite_values():
    params = model.init_params(jax.random.key(1), CONFIG)
    rng = np.random.default_rng(3)
    windows = rng.integers(1, 32, (3, 16)).astype(np.int32)
    bos_windows = windows.copy()
    bos_windows[:, 0] = 0
    bos_windows[:, 3::4] = 5  # a class token every fourth position
    seqs = dy.repeated_random_tokens(rng, 2, 7, CONFIG.vocab_size)
    found = {
        **dy.norm_share_measure(list(windows))(params, CONFIG),
        **dy.decay_measure(windows, short=3)(params, CONFIG),
        **dy.positional_measure(windows, seqs, 7)(params, CONFIG),
        **dy.apostrophe_measure(bos_windows[:2], bos_windows[1:], np.array([5]))(params, CONFIG),
    }
    assert set(found) == {
        "queries", "keys", "queries per pair", "keys per pair", "least-decaying layer",
        "previous-token", "diagonal", "induction", "apostrophe lift",
    }  # fmt: skip
    assert all(np.isfinite(v).all() for v in found.values())
    np.testing.assert_allclose(found["queries per pair"].mean(), 1.0)
    assert 0 < found["queries"] < 1 and 0 < found["previous-token"] <= 1
    assert -1 <= found["apostrophe lift"] <= 1


def test_descriptive_statistics_are_kept_without_a_direction_and_drawn_as_heatmaps():
    def measure(params, config):
        profile = np.array([1.0, 1.0, 2.0, 4.0]) * (1 + params["step"])
        return {"a": float(params["step"]), "a per pair": dy.relative_shares(profile)}

    out = dy.over_training([FakeModel(0), FakeModel(1)], measure, toward={"a": 1})
    profile = out["a per pair"]
    assert profile.toward == 0 and np.shape(profile.values) == (2, 4, 4)
    np.testing.assert_allclose(profile.values[0, 0], [0.5, 0.5, 1.0, 2.0])  # mean 1 = isotropic
    with pytest.raises(ValueError, match="descriptive"):
        dy.trend_test(profile)
    spec = show.pair_heatmap([profile, profile]).to_dict()
    assert len(spec["hconcat"]) == 2 and spec["title"]["text"]
    assert spec["hconcat"][0]["encoding"]["color"]["scale"]["domainMid"] == 1.0
    with pytest.raises(ValueError, match="pair_heatmap"):
        show.pair_heatmap([out["a"]])


def test_relative_shares_of_an_isotropic_profile_are_one():
    np.testing.assert_allclose(dy.relative_shares(np.full((2, 3, 8), 0.7)), np.ones(8))
