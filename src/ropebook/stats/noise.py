"""Training noise against evaluation noise in a paired comparison of two encodings.

A paired comparison scores models ``a`` and ``b`` of each seed ``s`` on the same held-out windows
``w``: ``x[s, w] = 100 (loss_a - loss_b)`` on window ``w`` (percent of perplexity, as
:func:`ropebook.analysis.ablation.paired_sd_percent`). Its per-seed value is the window mean
``d_s``, and the seed-to-seed spread of ``d_s`` mixes two sources: the *training noise* of the seed
(initialisation and batches) and the *evaluation noise* of which windows were drawn. The two-way
random-effects model ``x[s, w] = μ + a_s + b_w + e_sw`` separates them with the mean squares of an
analysis of variance without replication:

- training noise ``σ_a² = (MS_seed - MS_resid) / W``;
- evaluation noise of one seed's ``d_s`` on ``W`` freshly drawn windows:
  ``(σ_b² + σ_e²) / W``, with ``σ_b² = (MS_window - MS_resid) / S`` and ``σ_e² = MS_resid``
  (negative estimates clipped at 0, the usual truncation).

Evaluation noise is negligible when its variance is at most a tenth of the training noise's; then
more seeds, not more held-out tokens, tighten the comparison.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

NEGLIGIBLE = 0.1  # evaluation variance at most this share of the training variance


@dataclass(frozen=True)
class NoiseSplit:
    """The two noise sources of a paired comparison, in percent of perplexity."""

    n_seeds: int
    n_windows: int
    mean: float  # the comparison's paired difference, averaged over seeds and windows
    seed_sd: float  # training noise: s.d. of d_s over seeds (nan with one seed)
    window_sd: float  # s.d. of one window's difference (window effect and residual together)

    @property
    def eval_sd(self) -> float:
        """Evaluation noise: s.d. of one seed's ``d_s`` over draws of ``n_windows`` windows."""
        return self.eval_sd_at(self.n_windows)

    def eval_sd_at(self, n_windows: int) -> float:
        """Evaluation noise of one seed's ``d_s`` measured on ``n_windows`` windows."""
        return self.window_sd / math.sqrt(n_windows)

    @property
    def eval_share(self) -> float:
        """Evaluation variance over training variance (nan with one seed)."""
        return self.eval_sd**2 / self.seed_sd**2 if self.seed_sd > 0 else math.nan

    @property
    def negligible(self) -> bool:
        return self.eval_share <= NEGLIGIBLE

    def windows_needed(self, share: float = NEGLIGIBLE) -> int | None:
        """Fewest windows whose evaluation variance is at most ``share`` of the training variance
        (``None`` when the training noise is not measured or is 0)."""
        if not self.seed_sd > 0:
            return None
        return max(1, math.ceil(self.window_sd**2 / (share * self.seed_sd**2)))


def split(differences: np.ndarray) -> NoiseSplit:
    """Split ``differences[s, w]`` (seeds × windows, the paired per-window differences) into
    training and evaluation noise (module docstring)."""
    x = np.asarray(differences, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] < 2:
        raise ValueError(f"need differences of shape [seeds, windows ≥ 2], got {x.shape}")
    n_seeds, n_windows = x.shape
    if n_seeds == 1:  # no seed noise to measure; the windows' spread is all there is
        return NoiseSplit(1, n_windows, float(x.mean()), math.nan, float(x.std(ddof=1)))
    seed_means, window_means, grand = x.mean(axis=1), x.mean(axis=0), x.mean()
    residual = x - seed_means[:, None] - window_means[None, :] + grand
    ms_seed = n_windows * seed_means.var(ddof=1)
    ms_window = n_seeds * window_means.var(ddof=1)
    ms_resid = float((residual**2).sum() / ((n_seeds - 1) * (n_windows - 1)))
    seed_var = max((ms_seed - ms_resid) / n_windows, 0.0)
    window_var = max((ms_window - ms_resid) / n_seeds, 0.0)
    return NoiseSplit(
        n_seeds, n_windows, float(grand), math.sqrt(seed_var), math.sqrt(window_var + ms_resid)
    )


def paired_differences(losses_a: dict[int, np.ndarray], losses_b: dict[int, np.ndarray]):
    """``100 (loss_a - loss_b)`` per window, ``[seeds, windows]``, on the seeds both have."""
    shared = sorted(set(losses_a) & set(losses_b))
    if not shared:
        raise ValueError("the two encodings share no seed: nothing to pair")
    return np.stack([100 * (losses_a[s] - losses_b[s]) for s in shared])
