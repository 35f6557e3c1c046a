"""Training against evaluation noise: the two-way split recovers known variance components."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ropebook import train
from ropebook.present import noise as show_noise
from ropebook.stats import noise


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
    losses = train.window_losses(result.params, config, VAL, **args)
    assert losses.shape == (12,) and np.ptp(losses) > 0
    assert losses.mean() == pytest.approx(
        train.evaluate(result.params, config, VAL, **args)["loss"], rel=1e-5
    )
