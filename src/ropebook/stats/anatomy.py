"""The anatomy of a paired comparison's noise: where the spread of ``loss_a − loss_b`` over seeds
comes from, and so which lever can shrink it.

Input: two arms (say RoPE and 0.75-RoPE) trained on the same ``n`` seeds, and each run's
validation loss at its last ``K`` evaluations, every evaluation on the same held-out windows
(``ropebook.evaluation.window_losses`` gives one evaluation's per-window losses; their mean is the
evaluation's loss). Everything is in percent: 100 × nats, the log-ratio scale on which the book's
paired s.d.s live (≈ % of perplexity; :func:`ropebook.stats.power.paired_log_percent`).

- **Within-run jitter**: how far one run's loss moves between its last evaluations once the
  arm's common descent (the schedule, the same for every seed) and the run's own level are taken
  out: the residual s.d. of each arm's seeds × evaluations table (two-way, no replication),
  pooled over both arms on ``2 (n−1)(K−1)`` degrees of freedom. It treats the evaluations as
  independent; consecutive ones are not quite, so its interval is optimistic. Jitter is what
  tail averaging or a learning rate decayed to zero can remove.
- **Each arm's between-seed s.d.** of the final loss (the last iterate, what the book reports).
- **The correlation** of the two arms' final losses across seeds: what pairing buys, since
  ``var(a − b) = var a + var b − 2 cov``. :attr:`Anatomy.pairing_gain` is
  ``(var a + var b) / var(a − b)``, the factor by which pairing cuts the seeds a comparison needs.
- **The paired s.d.** of the final differences; with per-window losses also its split into
  training and evaluation noise (:func:`ropebook.stats.noise.split`).

Intervals (``confidence``, 95 % by default), each saying how it was made (:attr:`Estimate.method`):
chi-square for an s.d. (normal data; :func:`ropebook.stats.power.sd_interval`), Fisher's z for the
correlation (``n ≥ 4``), a seeded percentile bootstrap over seeds for the pairing gain (a ratio of
two dependent variances has no closed form; over 8 seeds it covered ~89 % of simulated truths,
``tests/test_anatomy.py``, so read it as rough), and the F distribution for the ratio of two s.d.s
(:func:`sd_ratio`, which assumes the two are independent), or for two samples on the same seeds
(two recipes trained on the same seeds share initialisations and batches) Pitman and Morgan's
interval, which uses their correlation (:func:`paired_sd_ratio`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ropebook.stats import noise, power


@dataclass(frozen=True)
class Estimate:
    """A value with its ``confidence`` interval, the ``method`` that made the interval, and for
    an s.d. the degrees of freedom it rests on (what :func:`sd_ratio` needs)."""

    value: float
    low: float
    high: float
    method: str  # "chi-square", "Fisher z", "bootstrap" or "F"
    df: int | None = None

    def __str__(self) -> str:
        return f"{self.value:.3g} [{self.low:.3g}, {self.high:.3g}]"


@dataclass(frozen=True)
class Anatomy:
    """The noise of a paired comparison over ``n_seeds`` seeds, in percent (module docstring)."""

    n_seeds: int
    n_evals: int
    jitter: Estimate  # within-run s.d. over the last evaluations, pooled over both arms
    seed_sd_a: Estimate  # between-seed s.d. of arm a's final loss
    seed_sd_b: Estimate
    correlation: Estimate  # of the two arms' final losses across seeds
    paired_sd: Estimate  # s.d. over seeds of the final difference a − b
    pairing_gain: Estimate  # (var a + var b) / var(a − b)
    split: noise.NoiseSplit | None  # training and evaluation noise of a − b (per-window input)

    @property
    def jitter_share(self) -> float:
        """Jitter variance over the mean of the two arms' between-seed variances: near 1, the
        seeds differ mostly by where the last iterate happens to be; near 0, runs end apart."""
        return self.jitter.value**2 / ((self.seed_sd_a.value**2 + self.seed_sd_b.value**2) / 2)


def sd_estimate(sd: float, df: int, confidence: float = 0.95) -> Estimate:
    """An s.d. on ``df`` degrees of freedom with its chi-square interval."""
    low, high = power.sd_interval(sd, df + 1, confidence)
    return Estimate(float(sd), low, high, "chi-square", int(df))


def correlation_estimate(a: np.ndarray, b: np.ndarray, confidence: float = 0.95) -> Estimate:
    """Pearson's correlation of paired samples with Fisher's z interval
    ``tanh(atanh r ± z_{1−α/2} / √(n − 3))`` (``nan`` bounds with fewer than 4 pairs)."""
    n = len(a)
    r = float(np.corrcoef(a, b)[0, 1])
    if n < 4 or not math.isfinite(r):
        return Estimate(r, math.nan, math.nan, "Fisher z")
    half = stats.norm.ppf(0.5 + confidence / 2) / math.sqrt(n - 3)
    z = math.atanh(min(max(r, -1 + 1e-15), 1 - 1e-15))  # r = ±1 would be infinite
    return Estimate(r, math.tanh(z - half), math.tanh(z + half), "Fisher z")


def sd_ratio(numerator: Estimate, denominator: Estimate, confidence: float = 0.95) -> Estimate:
    """The ratio of two s.d.s (e.g. a candidate recipe's paired s.d. over today's) with the
    F interval ``√(R / F_{1−α/2}(d₁, d₂)) .. √(R / F_{α/2}(d₁, d₂))``, ``R`` the variance ratio,
    for independent samples (module docstring)."""
    for estimate in (numerator, denominator):
        if estimate.method != "chi-square" or not estimate.df:
            raise ValueError(
                f"sd_ratio needs two s.d. estimates with degrees of freedom, got {estimate}"
            )
    d1, d2, tail = numerator.df, denominator.df, (1 - confidence) / 2
    ratio = numerator.value / denominator.value
    return Estimate(
        ratio,
        ratio / math.sqrt(stats.f.ppf(1 - tail, d1, d2)),
        ratio / math.sqrt(stats.f.ppf(tail, d1, d2)),
        "F",
    )


def paired_sd_ratio(x: np.ndarray, y: np.ndarray, confidence: float = 0.95) -> Estimate:
    """The ratio s.d.(x) / s.d.(y) of two samples taken on the same seeds (say one comparison's
    paired differences under two recipes), with the Pitman-Morgan interval (Pitman 1939), which
    uses their correlation ρ where :func:`sd_ratio` assumes none: with ``F`` the variance ratio,
    ``K = 1 + 2 t² (1 − ρ²) / (n − 2)`` (``t`` the two-sided t quantile on ``n − 2`` degrees of
    freedom), the variance ratio lies in ``F (K ∓ √(K² − 1))``; these are the ratios at which
    the test of ``corr(x + y', x − y') = 0`` (``y'`` = y rescaled to the ratio) is just rejected."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    n = len(x)
    if x.shape != y.shape or x.ndim != 1 or n < 3:
        raise ValueError(f"need two samples of one length >= 3, got shapes {x.shape}, {y.shape}")
    variance_ratio = np.var(x, ddof=1) / np.var(y, ddof=1)
    rho = float(np.corrcoef(x, y)[0, 1])
    t = stats.t.ppf((1 + confidence) / 2, n - 2)
    k = 1 + 2 * t**2 * (1 - rho**2) / (n - 2)
    spread = math.sqrt(k**2 - 1)
    return Estimate(
        math.sqrt(variance_ratio),
        math.sqrt(variance_ratio * (k - spread)),
        math.sqrt(variance_ratio * (k + spread)),
        "Pitman-Morgan",
    )


def jitter_sd(losses: np.ndarray) -> tuple[float, int]:
    """``(s.d., degrees of freedom)`` of the residual of ``losses[seeds, evaluations]`` once each
    seed's mean and each evaluation's mean are taken out (the interaction mean square)."""
    x = np.asarray(losses, np.float64)
    residual = x - x.mean(axis=1, keepdims=True) - x.mean(axis=0, keepdims=True) + x.mean()
    df = (x.shape[0] - 1) * (x.shape[1] - 1)
    return math.sqrt(float((residual**2).sum()) / df), df


def _pairing_gain(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(var a + var b) / var(a − b)`` along the last axis (``inf`` where ``var(a − b) = 0``)."""
    paired = np.var(a - b, axis=-1, ddof=1)
    both = np.var(a, axis=-1, ddof=1) + np.var(b, axis=-1, ddof=1)
    return np.divide(both, paired, out=np.full_like(paired, math.inf), where=paired > 0)


def pairing_gain_estimate(
    a: np.ndarray, b: np.ndarray, confidence: float = 0.95, *, resamples: int = 2000, seed: int = 0
) -> Estimate:
    """``(var a + var b) / var(a − b)`` with a percentile bootstrap over seeds (``resamples``
    draws from ``numpy.random.default_rng(seed)``; draws whose paired variance is 0 are dropped)."""
    draws = np.random.default_rng(seed).integers(0, len(a), (resamples, len(a)))
    gains = _pairing_gain(a[draws], b[draws])
    gains = gains[np.isfinite(gains)]
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(gains, [tail, 100 - tail]) if len(gains) else (math.nan, math.nan)
    return Estimate(float(_pairing_gain(a, b)), float(low), float(high), "bootstrap")


def anatomy(
    losses_a: np.ndarray,
    losses_b: np.ndarray,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> Anatomy:
    """The :class:`Anatomy` of a paired comparison from each arm's validation losses (nats):
    ``[seeds, evaluations]``, or ``[seeds, evaluations, windows]`` per-window losses (then also the
    noise split). Row ``s`` of both arms is seed ``s``; the last evaluation is each run's final
    one. ``resamples`` and ``seed`` drive the pairing gain's bootstrap."""
    a, b = (100 * np.asarray(x, np.float64) for x in (losses_a, losses_b))
    if a.shape != b.shape or a.ndim not in (2, 3):
        raise ValueError(
            "need both arms' losses as [seeds, evaluations] or [seeds, evaluations, windows] of "
            f"one shape, got {a.shape} and {b.shape}"
        )
    if a.shape[0] < 3 or a.shape[1] < 2 or a.ndim == 3 and a.shape[2] < 2:
        raise ValueError(f"need at least 3 seeds, 2 evaluations (and 2 windows), got {a.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("losses must be finite")
    split = noise.split(a[:, -1] - b[:, -1]) if a.ndim == 3 else None
    a, b = (x.mean(axis=2) if x.ndim == 3 else x for x in (a, b))
    n, k = a.shape
    jitters = [jitter_sd(x) for x in (a, b)]
    df = sum(d for _, d in jitters)
    jitter = math.sqrt(sum(sd**2 * d for sd, d in jitters) / df)
    final_a, final_b = a[:, -1], b[:, -1]
    return Anatomy(
        n_seeds=n,
        n_evals=k,
        jitter=sd_estimate(jitter, df, confidence),
        seed_sd_a=sd_estimate(float(np.std(final_a, ddof=1)), n - 1, confidence),
        seed_sd_b=sd_estimate(float(np.std(final_b, ddof=1)), n - 1, confidence),
        correlation=correlation_estimate(final_a, final_b, confidence),
        paired_sd=sd_estimate(float(np.std(final_a - final_b, ddof=1)), n - 1, confidence),
        pairing_gain=pairing_gain_estimate(
            final_a, final_b, confidence, resamples=resamples, seed=seed
        ),
        split=split,
    )
