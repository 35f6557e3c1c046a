"""Training against evaluation noise: the two-way split recovers known variance components; the
anatomy's table reads zoo runs' tail evaluations and says what a profile cannot measure."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from ropebook import evaluation, train
from ropebook.present import noise as show_noise
from ropebook.stats import anatomy, noise


def simulated(n_seeds, n_windows, seed_sd, window_sd, resid_sd, mean=0.5, seed=0):
    rng = np.random.default_rng(seed)
    return (
        mean
        + rng.normal(0, seed_sd, (n_seeds, 1))
        + rng.normal(0, window_sd, (1, n_windows))
        + rng.normal(0, resid_sd, (n_seeds, n_windows))
    )


def test_split_recovers_known_components():
    x = simulated(400, 400, seed_sd=0.3, window_sd=2.0, resid_sd=1.5)
    s = noise.split(x)
    assert s.seed_sd == pytest.approx(0.3, rel=0.1)
    assert s.window_sd == pytest.approx(math.hypot(2.0, 1.5), rel=0.1)
    assert s.eval_sd == pytest.approx(math.hypot(2.0, 1.5) / 20, rel=0.1)
    assert s.mean == pytest.approx(x.mean())


def test_split_without_seed_noise_clips_at_zero_and_needs_no_windows():
    x = simulated(5, 50, seed_sd=0.0, window_sd=1.0, resid_sd=0.0)  # rows identical
    s = noise.split(x)
    assert s.seed_sd == 0.0 and s.windows_needed() is None and math.isnan(s.eval_share)


def test_windows_needed_is_the_fewest_meeting_the_share():
    s = noise.NoiseSplit(n_seeds=3, n_windows=16, mean=0.0, seed_sd=0.5, window_sd=4.0)
    n = s.windows_needed(0.1)
    assert (s.eval_sd_at(n) / s.seed_sd) ** 2 <= 0.1 < (s.eval_sd_at(n - 1) / s.seed_sd) ** 2
    assert not s.negligible and s.eval_share == pytest.approx((4.0 / 4 / 0.5) ** 2)


def test_one_seed_reports_window_spread_only():
    x = np.array([[1.0, 2.0, 4.0]])
    s = noise.split(x)
    assert math.isnan(s.seed_sd) and s.window_sd == pytest.approx(np.std(x, ddof=1))
    row = show_noise.noise_rows({("matched", "a vs b"): s}, {"matched": 9}, context=4)[0]
    assert row["train s.d. %"] == "—" and row["win. for ≤ 10%"] == "—"


def test_split_rejects_a_single_window():
    with pytest.raises(ValueError, match="windows ≥ 2"):
        noise.split(np.ones((3, 1)))


def test_paired_differences_pair_on_shared_seeds():
    a = {0: np.array([1.0, 2.0]), 1: np.array([3.0, 3.0]), 2: np.array([0.0, 0.0])}
    b = {1: np.array([1.0, 1.0]), 0: np.array([1.0, 1.0])}
    np.testing.assert_allclose(noise.paired_differences(a, b), [[0.0, 100.0], [200.0, 200.0]])
    with pytest.raises(ValueError, match="no seed"):
        noise.paired_differences({5: np.zeros(2)}, b)


def test_window_losses_average_to_evaluate():
    from test_train import TRAIN, VAL, schedule, tiny

    config = tiny()
    result = train.train(config, schedule(4), TRAIN, progress=False)
    args = dict(seq_len=32, batch_size=4, n_batches=3, seed=5)
    losses = evaluation.window_losses(result.params, config, VAL, **args)
    assert losses.shape == (12,) and np.ptp(losses) > 0
    assert losses.mean() == pytest.approx(
        evaluation.evaluate(result.params, config, VAL, **args)["loss"], rel=1e-5
    )


# ---------------------------------------------------------------- the anatomy's table


def runs_of(losses: np.ndarray, steps=(8, 9, 10)) -> list[SimpleNamespace]:
    """Zoo-model stand-ins whose history holds ``losses[seed, evaluation]`` as tail evaluations,
    the last also as the final validation loss."""
    return [
        SimpleNamespace(
            history={
                "val": [{"step": steps[-1], "loss": float(row[-1])}],
                "tail": [{"step": s, "loss": float(x)} for s, x in zip(steps, row, strict=True)],
            }
        )  # fmt: skip
        for row in losses
    ]


def test_anatomy_of_zoo_runs_reads_their_tail_evaluations():
    rng = np.random.default_rng(0)
    a, b = 1.5 + rng.normal(0, 0.01, (2, 6, 3))
    result, missing = show_noise.measure_anatomy(runs_of(a), runs_of(b))
    assert missing == "" and (result.n_seeds, result.n_evals) == (6, 3)
    expected = anatomy.anatomy(a, b)
    assert result.jitter == expected.jitter and result.paired_sd == expected.paired_sd
    rows = show_noise.anatomy_rows(result, missing, ("A", "B"))
    assert [r["value"] for r in rows] == [
        f"{expected.jitter.value:.2f} %", f"{expected.seed_sd_a.value:.2f} %",
        f"{expected.seed_sd_b.value:.2f} %", f"{expected.correlation.value:.2f}",
        f"{expected.paired_sd.value:.2f} %", f"{expected.pairing_gain.value:.2f}×",
    ]  # fmt: skip
    assert rows[0]["rests on"] == f"6 seeds × 3 evaluations, {expected.jitter.df} d.f."
    assert rows[3]["method"] == "Fisher z" and rows[5]["method"] == "bootstrap"
    values = show_noise.anatomy_values(result)
    assert values["paired_sd"] == (
        f"{expected.paired_sd.value:.2f} % "
        f"[{expected.paired_sd.low:.2f}, {expected.paired_sd.high:.2f}]"
    )
    assert values["evals"] == "3" and values["jitter_share"] == f"{expected.jitter_share:.2g}"


def test_anatomy_without_tail_evaluations_measures_all_but_the_jitter():
    rng = np.random.default_rng(1)
    a, b = 1.5 + rng.normal(0, 0.01, (2, 5, 3))
    old_a, old_b = runs_of(a), runs_of(b)
    del old_a[2].history["tail"]  # one model trained before tail evaluations were recorded
    result, missing = show_noise.measure_anatomy(old_a, old_b)
    full = anatomy.anatomy(a, b)
    assert "within-run jitter" in missing and math.isnan(result.jitter.value)
    for part in ("seed_sd_a", "seed_sd_b", "correlation", "paired_sd", "pairing_gain"):
        assert getattr(result, part).value == pytest.approx(getattr(full, part).value, rel=1e-12)
        assert getattr(result, part).high == pytest.approx(getattr(full, part).high, rel=1e-12)
    rows = show_noise.anatomy_rows(result, missing, ("A", "B"))
    assert rows[0]["value"] == "—" and rows[0]["rests on"] == f"not measured: {missing}"
    assert all(r["value"] != "—" for r in rows[1:])
    assert show_noise.anatomy_values(result)["jitter"] == "—"


def test_anatomy_with_too_few_seeds_says_what_is_missing():
    one = runs_of(np.ones((1, 3)))
    result, missing = show_noise.measure_anatomy(one, one)
    assert result is None and missing == "1 paired seed: the anatomy needs at least 3"
    rows = show_noise.anatomy_rows(result, missing, ("A", "B"))
    assert len(rows) == 6 and {r["rests on"] for r in rows} == {f"not measured: {missing}"}
    assert set(show_noise.anatomy_values(None).values()) == {"—"}
    with pytest.raises(ValueError, match="same seeds on both arms"):
        show_noise.measure_anatomy(one, runs_of(np.ones((2, 3))))
    assert show_noise.tail_losses(runs_of(np.ones((2, 3)), steps=(4, 5, 6))).shape == (2, 3)
    mixed = runs_of(np.ones((1, 3))) + runs_of(np.ones((1, 3)), steps=(4, 5, 6))
    assert show_noise.tail_losses(mixed) is None  # tails at different steps do not line up


def test_anatomy_numbers_drop_decimals_from_100_up():
    wide = anatomy.Estimate(29.03, 2.98, 18890.7, "bootstrap")
    result = SimpleNamespace(pairing_gain=wide, n_seeds=4, n_evals=5, jitter_share=0.0044)
    for part in ("jitter", "seed_sd_a", "seed_sd_b", "correlation", "paired_sd"):
        setattr(result, part, anatomy.Estimate(math.nan, math.nan, math.nan, "chi-square"))
    rows = show_noise.anatomy_rows(result, "", ("A", "B"))
    assert rows[5]["value"] == "29.03×" and rows[5]["95% interval"] == "2.98× – 18,891×"
    values = show_noise.anatomy_values(result)
    assert values["pairing_gain"] == "29.03× [2.98, 18,891]" and values["jitter_share"] == "0.0044"


# ---------------------------------------------------------------- verdicts on the noise


@pytest.mark.parametrize(
    ("sd", "n", "margin", "verdict"),
    [
        (0.5, 64, None, "held"),  # the whole chi-square interval below 1 %
        (1.5, 64, None, "not held"),  # wholly above
        (1.0, 4, None, "cannot decide"),  # straddles, wide
        (1.0, 4000, 0.1, "bounded"),  # straddles, inside 1 ± 0.1
        (1.0, 1, None, "cannot decide"),  # one value: no s.d., measured and open
        (1.0, 0, None, "not testable here"),  # nothing measured
    ],
)
def test_sd_target_reaches_every_verdict(sd, n, margin, verdict):
    got, (low, high) = show_noise.sd_target(sd, n, 1.0, 0.95, margin)
    assert got == verdict
    if n >= 2:
        assert low < sd < high


def test_estimate_target_reads_an_interval_already_formed():
    def e(low, high):
        return anatomy.Estimate(1.0, low, high, "chi-square")

    assert show_noise.estimate_target(e(0.5, 0.9)) == "held"
    assert show_noise.estimate_target(e(1.1, 1.5)) == "not held"
    assert show_noise.estimate_target(e(0.5, 1.5)) == "cannot decide"
    assert show_noise.estimate_target(e(0.95, 1.05), margin=0.1) == "bounded"
    assert show_noise.estimate_target(e(math.nan, math.nan)) == "not testable here"


@pytest.mark.parametrize(
    ("n_seeds", "seed_sd", "window_sd", "margin", "verdict"),
    [
        (64, 1.0, 2.0, None, "held"),  # eval s.d. 2/√512 ≈ 0.09: share ≈ 0.008
        (64, 0.1, 8.0, None, "not held"),  # eval s.d. 0.35 > the training s.d.
        (3, 1.0, 6.0, None, "cannot decide"),  # share ≈ 0.07 at 3 seeds: interval spans 0.1
        (5000, 1.0, math.sqrt(noise.NEGLIGIBLE * 512), 0.01, "bounded"),  # at 0.1, tightly
        (1, math.nan, 1.0, None, "cannot decide"),  # one seed: measured, no interval
    ],
)
def test_eval_noise_verdict_reaches_every_verdict(n_seeds, seed_sd, window_sd, margin, verdict):
    split = noise.NoiseSplit(n_seeds, 512, 0.0, seed_sd, window_sd)
    assert show_noise.eval_noise_verdict(split, 0.95, margin) == verdict
    low, high = show_noise.eval_share_interval(split)
    if n_seeds >= 2:
        assert low <= split.eval_share <= high
