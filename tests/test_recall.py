"""Recall-chapter measurements (analysis.recall) and their charts (present.recall)."""

from __future__ import annotations

import dataclasses
import types

import numpy as np
import pytest

from ropebook import model, tasks, train, zoo
from ropebook.analysis import recall as rc
from ropebook.present import recall as show


def test_bins_are_powers_of_two_of_the_context():
    np.testing.assert_array_equal(rc.bin_edges(128, 8), [0, 16, 32, 64, 128, 256, 512, 1024])


def test_binned_counts_only_answers_inside_the_bins():
    values = np.array([[0, 5, 10, 15, 20, 99]])
    right = np.array([[True, False, True, True, True, True]])
    mask = np.array([[True, True, True, False, True, True]])  # position 3 is no answer
    got = rc.binned(values, right, mask, [0, 10, 20, 30])
    np.testing.assert_allclose(got, [0.5, 1.0, 1.0])  # 99 lies beyond every bin: left out
    assert np.isnan(rc.binned(values, right, mask, [30, 40, 50])).all()


def test_paired_verdicts_and_equivalence():
    up = rc.paired([0.9, 0.8, 0.85], [0.5, 0.45, 0.52])
    assert up.n == 3 and up.estimate.low > 0 and up.verdict(above=True) == "held"
    assert up.verdict(above=False) == "not held" and up.mde > 0
    same = rc.paired([0.50, 0.51, 0.49], [0.50, 0.50, 0.50])
    assert same.equivalence(0.05) == "held" and same.verdict() == "cannot decide"
    assert up.equivalence(0.05) == "not held"
    assert same.verdict(margin=0.05) == "bounded" and up.verdict(above=True, margin=0.05) == "held"
    assert same.verdict(margin=0.001) == "cannot decide"
    one = rc.paired([0.9, np.nan], [0.1, 0.2])  # a seed with no score (NaN) drops out
    assert one.n == 1 and one.verdict() == "cannot decide" and "no interval" in one.text()


@pytest.fixture(scope="module")
def untrained():
    """Two seeds of an untrained smoke task model (RoPE), with a history that says 'not learnt'."""
    config, _ = zoo.configs("rope", profile="smoke", regime="task")
    return config, [
        types.SimpleNamespace(
            params=model.init_params(train.jax.random.key(s), config), config=config, seed=s
        )
        for s in (0, 1)
    ]


def test_score_pads_chunks_without_changing_answers(untrained):
    _, (m, _) = untrained
    batch = rc.task_batch(tasks.get("recall"), 64, 5)
    a = rc.score(m.params, m.config, batch, chunk=8)
    b = rc.score(m.params, m.config, batch, chunk=2)
    np.testing.assert_array_equal(a, b)
    assert not a[~batch.mask].any()


def test_probe_masks_remove_a_quarter_or_one_plane(untrained):
    config, _ = untrained
    masks = rc.probe_masks(config, np.random.default_rng(0), n_random=3)
    planes = config.head_dim // 2
    assert len(masks["random"]) == 3 and all(len(masks[f"plane {k}"]) == 1 for k in range(planes))
    for name, keeps in masks.items():
        removed = {int((k == 0).sum()) for k in keeps}
        assert removed == ({1} if name.startswith("plane") else {planes // 4}), name
    assert masks["fastest"][0][: planes // 4].sum() == 0  # planes are numbered fastest first
    assert masks["slowest"][0][-(planes // 4) :].sum() == 0


def test_plane_probes_are_paired_changes(untrained):
    _, runs = untrained
    batch = rc.task_batch(tasks.get("kback"), 64, 2)
    probes = rc.plane_probes(runs, batch)
    intact = rc.accuracy(runs, batch)
    np.testing.assert_allclose(probes["intact"], intact)
    assert set(probes) >= {"fastest", "slowest", "random", "plane 0"}
    assert all(v.shape == (2,) and np.all(np.abs(v) <= 1) for v in probes.values())


def test_plane_probes_mean_ablated_keep_the_intact_score(untrained):
    _, runs = untrained
    batch = rc.task_batch(tasks.get("kback"), 64, 2)
    reference = rc.task_batch(tasks.get("kback"), 64, 2, seed=2)
    zeroed = rc.plane_probes(runs, batch)
    mean = rc.plane_probes(runs, batch, ablation="mean", reference=reference)
    assert set(mean) == set(zeroed)
    np.testing.assert_allclose(mean["intact"], zeroed["intact"])
    with pytest.raises(ValueError, match="reference"):
        rc.plane_probes(runs, batch, ablation="mean")


def test_probe_claims_decide_on_their_reading_and_reach_every_verdict():
    """recall.probe_position reads zeroing (k-back: position), recall.probe_content reads
    mean-ablation (recall: content); each can be held, not held or cannot decide."""

    def probes(fast, slow):  # Δ accuracy per seed when the fastest or slowest quarter goes
        return {"fastest": np.asarray(fast, float), "slowest": np.asarray(slow, float)}

    lost, kept = [-0.5, -0.6, -0.55], [0.0, -0.01, 0.01]
    noisy = [-0.5, 0.4, 0.0]
    cases = {  # (zeroed k-back, mean-ablated recall) → verdict of each claim
        "held": ((lost, kept), (kept, lost)),
        "not held": ((kept, lost), (lost, kept)),
        "cannot decide": ((noisy, kept), (kept, noisy)),
    }
    for verdict, ((kf, ks), (rf, rs)) in cases.items():
        by = {
            "zeroed": {("kback", "rope"): probes(kf, ks), ("recall", "rope"): probes(kept, kept)},
            "mean": {("kback", "rope"): probes(kept, kept), ("recall", "rope"): probes(rf, rs)},
        }
        assert rc.probe_verdicts(by, "position")[0] == verdict
        assert rc.probe_verdicts(by, "content")[0] == verdict
    # a norm artefact: recall lost only when the slow planes are zeroed → content not held
    by = {
        "zeroed": {("recall", "rope"): probes(kept, lost)},
        "mean": {("recall", "rope"): probes(kept, kept)},
    }
    verdict, contrasts = rc.probe_verdicts(by, "content")
    assert contrasts["zeroed"].verdict(above=False) == "held" and verdict != "held"
    assert rc.probe_verdicts({"zeroed": {}, "mean": {}}, "position")[0] == "cannot decide"


def test_a_model_that_did_not_learn_is_scored_at_what_it_answers(tmp_path):
    """Failures kept: a model that never reaches the criterion is not learnt, and its accuracy
    still enters the sweep (no NaN row), as :func:`rc.accuracy` scores it."""
    config, tc = zoo.configs("rope", profile="smoke", regime="task")
    tc = dataclasses.replace(tc, steps=12, warmup=2, eval_every=6)
    run = train.train(config, tc, None, task=tasks.get("kback"), checkpoint_dir=tmp_path,
                      progress=False)  # fmt: skip
    m = types.SimpleNamespace(
        path=tmp_path, history=run.history, seconds=run.seconds, params=run.params,
        config=config, seed=0,
    )  # fmt: skip
    learnt = rc.learning(m)
    assert learnt.criterion == tasks.CRITERION and learnt.learnt_at is None and not learnt.learnt
    np.testing.assert_array_equal(learnt.steps, [6, 12])
    assert learnt.final == run.history["val"][-1]["accuracy"] < tasks.CRITERION
    # the same curve against a criterion it met: learnt at its first evaluation at or above it
    best = float(learnt.accuracy.max())
    assert rc.learning(m, criterion=best).learnt_at == int(learnt.steps[learnt.accuracy.argmax()])
    with pytest.raises(ValueError, match="criterion"):
        rc.learning(m, criterion=0.0)
    sweep = rc.length_sweep([m], tasks.get("kback"), [1, 2], by="position", n_sequences=2)
    assert sweep.learnt == (False,) and np.isfinite(sweep.overall).all()
    assert np.isfinite(sweep.beyond[:, -1]).all()
    batch = rc.task_batch(tasks.get("kback"), config.context, 2)
    np.testing.assert_allclose(sweep.overall[:, 0], rc.accuracy([m], batch))


def test_a_failing_seed_counts_in_the_comparison_it_belongs_to():
    """The contrast rules read every seed: an arm whose survivors beat the other arm is held
    only if its failures do not undo it; an arm that mostly fails is not held, where dropping
    its failures left nothing or a survivor to compare."""
    rope = [0.60, 0.62, 0.61]  # learnt on every seed
    cases = {
        "held": [0.90, 0.92, 0.91],  # learnt on every seed, better everywhere
        "cannot decide": [0.90, 0.92, 0.05],  # one seed failed: its 0.05 counts
        "not held": [0.05, 0.06, 0.04],  # failed on every seed
    }
    for verdict, p075 in cases.items():
        beyond = {"p-rope-0.75": p075, "rope": rope, "p-rope-0.75-10k": rope, "rope-10k": rope}
        gap = rc.contrasts(beyond)["matched"]
        assert gap.n == 3 and gap.verdict(above=True) == verdict, (verdict, gap.text())
    # what the old filter said of the middle case: its two survivors alone would hold
    survivors = rc.paired([0.90, 0.92], [0.60, 0.62])
    assert survivors.verdict(above=True) == "held"


def test_learnt_share_has_a_wilson_interval_and_text():
    from scipy import stats as scipy_stats

    from ropebook.stats import proportion

    def run(learnt_at):
        return rc.Learning(np.array([10, 20]), np.array([0.5, 0.9]), 0.99, learnt_at, 1.0)

    runs = [run(10), run(None), run(20)]
    share, low, high = rc.learnt_share(runs, 0.95)
    expected = scipy_stats.binomtest(2, 3).proportion_ci(0.95, method="wilson")
    assert share == pytest.approx(2 / 3)
    assert (low, high) == pytest.approx((expected.low, expected.high))
    assert show.share_text(runs) == f"2/3 (67 % [{100 * low:.0f}, {100 * high:.0f}])"
    # none and all: one end pinned at 0 or 1, the other open (3 seeds prove little)
    assert (
        proportion.share_interval(0, 3)[:2] == (0.0, 0.0) and proportion.share_interval(0, 3)[2] < 1
    )
    all_three = proportion.share_interval(3, 3)
    assert all_three[0] == all_three[2] == 1.0 and 0.4 < all_three[1] < 0.5
    # more seeds, the same share: a narrower interval
    assert np.diff(proportion.share_interval(20, 30)[1:]) < np.diff(
        proportion.share_interval(2, 3)[1:]
    )
    for bad in ((4, 3, 0.95), (1, 0, 0.95), (1, 3, 1.0)):
        with pytest.raises(ValueError):
            proportion.share_interval(*bad)


def test_extension_scales_with_the_length(untrained):
    config, _ = untrained
    pi = rc.extension("pi")
    assert pi(config, config.context) is None  # s = 1: nothing to change
    grid = np.asarray(pi(config, 4 * config.context).frequencies)
    from ropebook import rope

    np.testing.assert_allclose(grid, rope.frequencies(config.head_dim, config.rope_base) / 4, 1e-6)
    fixed = rc.extension("pi", scale=2)(config, 8 * config.context)
    np.testing.assert_allclose(fixed.frequencies, grid * 2, rtol=1e-6)


def test_charts_and_tables_build():
    curve = rc.Learning(np.array([10, 20]), np.array([0.3, 1.0]), 0.99, 20, 1.0)
    stuck = rc.Learning(np.array([10, 20]), np.array([0.1, 0.2]), 0.99, None, 1.0)
    rows = show.learning_rows({("recall", "RoPE"): [curve, stuck]})
    assert {r["learnt"] for r in rows} == {"learnt", "not learnt"}
    assert show.learning_chart(rows, 0.99).to_dict()
    (row,) = show.learning_table({("recall", "rope"): [curve, stuck]}, {"rope": "RoPE"},
                                 {"recall": "recall"})  # fmt: skip
    assert row["learnt (95 % interval)"].startswith("1/2 (50 % [")
    assert row["accuracy at the end (%, per seed)"] == "100.0, 20.0"
    assert row["steps to learn (per seed)"] == "20, —" and row["steps trained"] == "20"
    edges = rc.bin_edges(64, 2)
    values = {"RoPE": np.array([[1.0, 0.9, 0.8, 0.7, np.nan], [1.0, 1.0, 0.6, 0.5, 0.4]])}
    rows = show.interval_rows(values, edges)
    assert [r["to"] for r in rows] == [8, 16, 32, 64, 128] and rows[-1]["seeds"] == 1
    assert show.bin_chart(rows, x_title="d", title="t", context=64).to_dict()
    grid = {"RoPE": np.ones((2, 2, 3))}
    assert show.passkey_chart(show.passkey_rows(grid, [64, 128], [0, 0.5, 1])).to_dict()
    probes = {("recall", "RoPE"): {"intact": np.ones(2), "fastest": -np.ones(2)}}
    assert show.probe_chart(show.probe_rows(probes)).to_dict()
    ext = {("passkey", "PI"): np.full((2, 2), 0.5)}
    assert show.extension_chart(show.extension_rows(ext, [1, 2])).to_dict()
    table = show.extension_table(ext, [1, 2], 64, 0.95)
    assert table[0]["1× (64)"] == "50 [50, 50]"


def test_median_steps_over_the_seeds_that_learnt():
    def run(learnt_at, last=40):
        return rc.Learning(np.array([10, 20, 30, last]), np.zeros(4), 0.99, learnt_at, 1.0)

    learning = {("recall", "rope"): [run(10), run(30), run(None)],
                ("kback", "nope"): [run(None), run(None)]}  # fmt: skip
    assert show.median_steps(learning) == {
        ("recall", "rope"): "20", ("kback", "nope"): "never (in 40 steps)"
    }  # fmt: skip


def test_paired_values_are_the_pieces_of_the_paired_text():
    three = rc.paired([0.9, 0.8, 0.85], [0.5, 0.45, 0.52])
    values = show.paired_values(three)
    assert values["seeds"] == 3 and values["mean"].startswith("+")
    assert three.text() == (
        f"{values['mean']} points {values['interval']} over 3 seeds "
        f"(detectable: {values['detectable']})"
    )
    one = rc.paired([0.9, np.nan], [0.1, 0.2])
    assert show.paired_values(one) == {
        "mean": "+80.0", "interval": "—", "seeds": 1, "detectable": "—"
    }  # fmt: skip
    assert one.text() == "+80.0 points (1 seed, no interval)"
    none = {"mean": "—", "interval": "—", "seeds": 0, "detectable": "—"}
    assert show.paired_values(rc.paired([np.nan], [0.1])) == none
    assert show.paired_values(None) == none


def test_small_gaps_get_the_seeds_a_t_test_needs_large_ones_none():
    from ropebook.stats import power

    small = rc.paired([0.50, 0.58, 0.52], [0.48, 0.50, 0.49])  # gap ~4 points, s.d. ~3
    large = rc.paired([0.90, 0.95, 0.92], [0.40, 0.50, 0.45])  # ~47 points
    assert small.sd == pytest.approx(np.std([0.02, 0.08, 0.03], ddof=1))
    want = power.seeds_needed(small.sd, max(abs(small.estimate.mean), 0.05))
    assert want > 3  # the case worth testing: the gap alone would ask for more seeds
    kw = dict(large=0.15, floor=0.05, n_now=3)
    assert rc.seeds_for_gaps([small, large], max_seeds=100, **kw) == want
    assert rc.seeds_for_gaps([small], max_seeds=5, **kw) == 5  # capped
    assert rc.seeds_for_gaps([large], max_seeds=100, **kw) == 3  # large gap: enough
    one_seed = rc.paired([0.5], [0.4])  # no s.d.: nothing to plan from
    assert rc.seeds_for_gaps([one_seed], max_seeds=100, **kw) == 3


def test_contrasts_and_merged_sweeps_pair_seed_by_seed():
    beyond = {"p-rope-0.75": [0.9, 0.8], "rope": [0.5, 0.6],
              "p-rope-0.75-10k": [0.7, 0.7], "rope-10k": [0.6, 0.8]}  # fmt: skip
    gaps = rc.contrasts(beyond)
    assert gaps["matched"].estimate.mean == pytest.approx(0.3)
    assert gaps["1e4"].estimate.mean == pytest.approx(0.0)
    assert gaps["gap_of_gaps"].estimate.mean == pytest.approx(0.3)
    edges = rc.bin_edges(16, 2)
    a = rc.Sweep((1, 2), edges, np.zeros((2, 2)), np.zeros((2, len(edges) - 1)),
                 np.zeros((2, 2)), (True, False))  # fmt: skip
    b = rc.Sweep((1, 2), edges, np.ones((1, 2)), np.ones((1, len(edges) - 1)),
                 np.ones((1, 2)), (True,))  # fmt: skip
    merged = rc.merge(a, b)
    assert merged.overall.shape == (3, 2) and merged.learnt == (True, False, True)
    np.testing.assert_array_equal(merged.beyond[:, 0], [0, 0, 1])
    with pytest.raises(ValueError, match="cannot be merged"):
        rc.merge(a, rc.Sweep((1, 4), edges, b.overall, b.bins, b.beyond, (True,)))


def test_accuracy_intervals_stay_within_0_and_100_percent():
    values = {("passkey", "PI"): [[1.0, 0.5], [0.9, 0.0], [1.0, 0.0]]}
    (row,) = show.extension_table(values, [1, 2], 128, 0.95)
    assert row["1× (128)"] == "97 [82, 100]"  # t-interval 82-111 %, clipped at 100
    assert row["2× (256)"] == "17 [0, 88]"  # t-interval -55-88 %, clipped at 0


def test_learns_where_other_fails_needs_seeds_that_separate_the_arms():
    """A counterexample decides against; the pattern decides for only where Fisher's exact test
    separates the shares; fewer seeds leave it open."""
    from ropebook.analysis import recall as rc

    assert rc.learns_where_other_fails([True] * 6, [False] * 3) == "held"  # p = 1/84
    assert rc.learns_where_other_fails([True] * 3, [False] * 3) == "cannot decide"  # p = 0.05
    assert rc.learns_where_other_fails([True] * 6, [False, True, False]) == "not held"
    assert rc.learns_where_other_fails([True, False] * 3, [False] * 3) == "not held"
    assert rc.learns_where_other_fails([True] * 6, [False]) == "cannot decide"  # p = 1/7
    assert rc.learns_where_other_fails([True], []) == "not testable here"
    assert rc.seeds_to_separate(6) == 2 and rc.seeds_to_separate(3) == 4  # 1/28; 1/35
    assert rc.learns_where_other_fails([True] * 3, [False] * 4) == "held"
    assert rc.seeds_to_separate(0) is None
