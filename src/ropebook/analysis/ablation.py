"""Trained ablations over seeds: perplexity tables, pairwise orderings, rankings, extrapolation.

The p-RoPE chapter (Barbero et al. 2025, Sec. 6.1, Table 2) trains several encodings with the same
data, steps and seeds and asks which differences are real. The pieces here are generic:

- :func:`estimate` / :func:`seed_table`: a mean and a Student-t interval over seeds per variant;
- :func:`compare`: is ``a`` lower than ``b``? Two tests: the *paired* difference (seed ``s`` of
  ``a`` minus seed ``s`` of ``b``; zoo models with the same seed share the initialisation key and
  every batch, so pairing removes the noise the two runs have in common, and its Student-t
  interval excluding 0 is the verdict's test), and the stricter, unpaired one (the two variants'
  own intervals do not overlap), shown beside it;
- :func:`kendall_tau`, :func:`rank_order`: agreement of a ranking with a reference (the paper's);
- :func:`extrapolation_curve`, :func:`binned_ppl`: loss by position at several times the
  training context, from one long window per sample (a causal model's loss at position ``t``
  does not depend on the tokens after ``t``, so the first ``L`` positions of a long window *are* a
  window of length ``L``);
- :func:`positional_attention`, :func:`plane_scores`: the Thm 5.3 and Thm 6.1 constructions for
  any RoPE variant of :mod:`ropebook.rope` (which planes rotate decides what each can build).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ropebook import rope
from ropebook.analysis import mean_interval

# ---------------------------------------------------------------- estimates over seeds


@dataclass(frozen=True)
class Estimate:
    """Mean and ``confidence`` interval of independent samples (one per seed)."""

    mean: float
    low: float
    high: float
    values: tuple[float, ...]
    confidence: float = 0.95

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def overlaps(self, other: Estimate) -> bool:
        return self.low <= other.high and other.low <= self.high

    def format(self, digits: int = 4) -> str:
        if self.n < 2:
            return f"{self.mean:.{digits}f} (1 seed)"
        return f"{self.mean:.{digits}f} ± {self.half_width:.{digits}f}"


def estimate(samples: Sequence[float], confidence: float = 0.95) -> Estimate:
    """:class:`Estimate` of ``samples`` (Student-t interval; a point when there is one sample)."""
    values = tuple(float(v) for v in np.asarray(samples, dtype=np.float64).ravel())
    if not values:
        raise ValueError("estimate needs at least one sample")
    mean, low, high = mean_interval(values, confidence)
    return Estimate(mean, low, high, values, confidence)


def seed_table(
    values: Mapping[str, Sequence[float]], confidence: float = 0.95
) -> dict[str, Estimate]:
    """``{variant: Estimate}`` from ``{variant: [value of seed 0, seed 1, ...]}``."""
    return {name: estimate(v, confidence) for name, v in values.items()}


# ---------------------------------------------------------------- pairwise orderings


@dataclass(frozen=True)
class Comparison:
    """``a`` versus ``b`` (lower is better, e.g. perplexity)."""

    a: str
    b: str
    a_est: Estimate
    b_est: Estimate
    difference: Estimate  # a - b, paired by seed when both have the same seeds

    @property
    def testable(self) -> bool:
        return min(self.a_est.n, self.b_est.n) >= 2

    @property
    def separated(self) -> bool:
        """Both have ≥ 2 seeds and their intervals do not overlap."""
        return self.testable and not self.a_est.overlaps(self.b_est)

    @property
    def paired(self) -> bool:
        """Both have the same ≥ 2 seeds, so :attr:`difference` is paired seed by seed."""
        return self.testable and self.a_est.n == self.b_est.n

    @property
    def paired_separated(self) -> bool:
        """The interval of the paired difference excludes 0."""
        d = self.difference
        return self.paired and (d.high < 0 or d.low > 0)

    @property
    def lower(self) -> str:
        return self.a if self.a_est.mean < self.b_est.mean else self.b

    @property
    def status(self) -> str:
        """``"a < b"`` / ``"a > b"`` when separated, else ``"within noise"`` or ``"single seed"``."""
        if not self.testable:
            return "single seed"
        if not self.separated:
            return "within noise"
        return f"{self.a} < {self.b}" if self.lower == self.a else f"{self.a} > {self.b}"

    @property
    def paired_status(self) -> str:
        """Like :attr:`status`, from the paired difference's interval."""
        if not self.paired:
            return self.status
        if not self.paired_separated:
            return "within noise"
        return f"{self.a} < {self.b}" if self.difference.mean < 0 else f"{self.a} > {self.b}"

    def verdict(self, claimed_lower: str, *, test: str = "paired") -> str:
        """Verdict on "``claimed_lower`` has the lower value": ``held`` if the ``test`` separates
        the two in that direction, ``not held`` if the other way, ``partly`` if it does not
        separate them, ``not testable here`` with a single seed.

        ``test="paired"``: the paired difference's interval excludes 0 (falls back to
        ``"intervals"`` when the seeds differ); ``test="intervals"``: the two intervals do not
        overlap."""
        if claimed_lower not in (self.a, self.b):
            raise ValueError(f"{claimed_lower!r} is neither {self.a!r} nor {self.b!r}")
        if test not in ("paired", "intervals"):
            raise ValueError(f"unknown test {test!r}; valid tests: paired, intervals")
        if not self.testable:
            return "not testable here"
        if test == "paired" and self.paired:
            if not self.paired_separated:
                return "partly"
            lower = self.a if self.difference.mean < 0 else self.b
        elif not self.separated:
            return "partly"
        else:
            lower = self.lower
        return "held" if lower == claimed_lower else "not held"

    def row(self, digits: int = 4) -> dict[str, str]:
        return {
            "pair": f"{self.a} vs {self.b}",
            f"{self.a}": self.a_est.format(digits),
            f"{self.b}": self.b_est.format(digits),
            "paired Δ (a − b)": self.difference.format(digits),
            "paired Δ": self.paired_status,
            "intervals": self.status,
        }


def compare(
    a: str, a_values: Sequence[float], b: str, b_values: Sequence[float], confidence: float = 0.95
) -> Comparison:
    """Compare two variants' per-seed values (lower is better); see :class:`Comparison`.

    The difference is paired seed by seed when both lists have the same length; otherwise it is the
    difference of means with a Welch-style interval.
    """
    a_est, b_est = estimate(a_values, confidence), estimate(b_values, confidence)
    if len(a_values) == len(b_values):
        difference = estimate(np.subtract(a_values, b_values), confidence)
    else:
        from scipy import stats

        va = np.var(a_values, ddof=1) / len(a_values) if len(a_values) > 1 else 0.0
        vb = np.var(b_values, ddof=1) / len(b_values) if len(b_values) > 1 else 0.0
        mean = a_est.mean - b_est.mean
        dof = max(min(len(a_values), len(b_values)) - 1, 1)
        half = float(stats.t.ppf(0.5 + confidence / 2, dof) * math.sqrt(va + vb))
        difference = Estimate(mean, mean - half, mean + half, (mean,), confidence)
    return Comparison(a, b, a_est, b_est, difference)


# ---------------------------------------------------------------- rankings


def rank_order(values: Mapping[str, float]) -> list[str]:
    """Names sorted from lowest to highest value (ties keep the mapping's order)."""
    return sorted(values, key=lambda n: values[n])


def kendall_tau(
    measured: Mapping[str, float], reference: Mapping[str, float]
) -> tuple[float, float]:
    """Kendall's τ (and its two-sided p-value) between two scorings of the names they share."""
    from scipy import stats

    names = [n for n in reference if n in measured]
    if len(names) < 2:
        raise ValueError("Kendall's τ needs at least two common names")
    result = stats.kendalltau([measured[n] for n in names], [reference[n] for n in names])
    return float(result.statistic), float(result.pvalue)


def per_seed_tau(values: Mapping[str, Sequence[float]], reference: Mapping[str, float]) -> list:
    """τ of each seed's own ranking against ``reference`` (all variants need the same seeds)."""
    n_seeds = {len(v) for v in values.values()}
    if len(n_seeds) != 1:
        raise ValueError(f"variants have different numbers of seeds: {sorted(n_seeds)}")
    return [
        kendall_tau({n: v[s] for n, v in values.items()}, reference)[0]
        for s in range(n_seeds.pop())
    ]


def noise_vs_differences(table: Mapping[str, Estimate]) -> dict[str, float]:
    """Seed noise against the spread between variants.

    ``seed_sd``: median over variants of the standard deviation across seeds; ``gap``: median of
    the absolute differences between the means of all pairs of variants; ``ratio = gap / seed_sd``
    (``inf`` when there is one seed per variant and no measured noise).
    """
    sds = [float(np.std(e.values, ddof=1)) for e in table.values() if e.n >= 2]
    means = [e.mean for e in table.values()]
    gaps = [abs(x - y) for i, x in enumerate(means) for y in means[i + 1 :]]
    seed_sd = float(np.median(sds)) if sds else float("nan")
    gap = float(np.median(gaps)) if gaps else float("nan")
    ratio = gap / seed_sd if sds and seed_sd > 0 else float("inf")
    return {"seed_sd": seed_sd, "gap": gap, "ratio": ratio}


def paired_noise(values: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Seed noise of *paired* differences against their size, over all pairs of variants.

    ``values``: ``{variant: [value of seed 0, seed 1, ...]}``, the same seeds for every variant.
    ``seed_sd``: median over pairs of the s.d. across seeds of the paired difference; ``gap``:
    median over pairs of its mean's absolute value; ``ratio = gap / seed_sd``.
    """
    n_seeds = {len(v) for v in values.values()}
    if len(n_seeds) != 1 or n_seeds.pop() < 2:
        raise ValueError("paired noise needs the same ≥ 2 seeds for every variant")
    rows = [np.asarray(v, dtype=np.float64) for v in values.values()]
    diffs = [a - b for i, a in enumerate(rows) for b in rows[i + 1 :]]
    if not diffs:
        raise ValueError("paired noise needs at least two variants")
    seed_sd = float(np.median([np.std(d, ddof=1) for d in diffs]))
    gap = float(np.median([abs(np.mean(d)) for d in diffs]))
    return {"seed_sd": seed_sd, "gap": gap, "ratio": gap / seed_sd if seed_sd > 0 else math.inf}


# ---------------------------------------------------------------- length extrapolation


@dataclass(frozen=True)
class ExtrapolationCurve:
    """Mean next-token loss (nats) at every position of windows ``factor × context`` long."""

    losses: np.ndarray  # [max(factors) * context]
    context: int
    n_windows: int

    def ppl_at(self, factor: float) -> float:
        """Perplexity of windows of ``factor × context`` tokens (mean loss over their positions)."""
        length = int(round(factor * self.context))
        if not 0 < length <= len(self.losses):
            raise ValueError(f"factor {factor} needs {length} positions, have {len(self.losses)}")
        return math.exp(float(np.mean(self.losses[:length])))

    def ppl_between(self, start: int, stop: int) -> float:
        """Perplexity over positions ``start .. stop-1`` only."""
        return math.exp(float(np.mean(self.losses[start:stop])))


def extrapolation_curve(
    params,
    config,
    tokens: np.ndarray,
    *,
    max_factor: int = 8,
    n_windows: int = 8,
    seed: int = 0,
    batch_size: int = 4,
) -> ExtrapolationCurve:
    """Loss by position over windows of ``max_factor × config.context`` tokens (random starts).

    The first ``L`` positions of a window are themselves a window of length ``L`` for a causal
    model, so :meth:`ExtrapolationCurve.ppl_at` gives the perplexity at every shorter length.
    """
    from ropebook import train

    losses = train.loss_by_position(
        params, config, tokens, seq_len=max_factor * config.context, n_windows=n_windows,
        seed=seed, batch_size=batch_size,
    )  # fmt: skip
    return ExtrapolationCurve(np.asarray(losses, dtype=np.float64), config.context, n_windows)


def binned_ppl(
    curves: Sequence[ExtrapolationCurve], bin_width: int, confidence: float = 0.95
) -> list[dict[str, float]]:
    """Per bin of ``bin_width`` positions: perplexity of the mean loss in the bin for each curve
    (one per seed), then mean and interval over curves. Positions are in tokens; ``x context`` is
    the bin's centre in units of the training context."""
    length = min(len(c.losses) for c in curves)
    rows = []
    for start in range(0, length, bin_width):
        stop = min(start + bin_width, length)
        est = estimate([c.ppl_between(start, stop) for c in curves], confidence)
        rows.append(
            {
                "start": start,
                "stop": stop,
                "centre": (start + stop - 1) / 2,
                "x context": (start + stop) / 2 / curves[0].context,
                "ppl": est.mean,
                "low": est.low,
                "high": est.high,
            }
        )
    return rows


# ---------------------------------------------------------------- constructions (Table 1)


def rotating_planes(
    head_dim: int, base: float = 10_000.0, *, variant: str = "rope", proportion: float = 1.0
) -> np.ndarray:
    """Boolean ``[head_dim/2]``: which planes (chunks, fastest first) the variant rotates."""
    return rope.frequencies(head_dim, base, variant=variant, proportion=proportion) > 0


def plane_vector(head_dim: int, planes: np.ndarray, *, pairing: str = "half") -> np.ndarray:
    """A unit vector spread evenly over the given planes (``planes``: chunk indices or a mask);
    within each plane it points along the plane's first dimension."""
    planes = np.asarray(planes)
    chosen = np.flatnonzero(planes) if planes.dtype == bool else planes
    if len(chosen) == 0:
        raise ValueError("choose at least one plane")
    vector = np.zeros(head_dim)
    vector[rope.chunk_indices(head_dim, pairing)[chosen, 0]] = 1 / math.sqrt(len(chosen))
    return vector


def positional_attention(
    psi: np.ndarray,
    n: int,
    *,
    scale: float,
    offset: int = 0,
    base: float = 10_000.0,
    variant: str = "rope",
    proportion: float = 1.0,
    pairing: str = "half",
) -> np.ndarray:
    """Attention ``[n, n]`` of the Thm 5.3 construction: every query is ``scale·ψ`` and every
    key is ``R^offset ψ`` (``offset=0``: diagonal head; ``1``: previous-token head), rotated by
    ``variant`` at positions ``0..n-1`` and causally masked."""
    kwargs = dict(base=base, pairing=pairing, variant=variant, proportion=proportion)
    psi = jnp.asarray(psi, jnp.float32)[None, None, :]
    key = rope.apply_rope(psi, jnp.asarray([offset]), **kwargs)[0, 0]
    positions = jnp.arange(n)
    q = rope.apply_rope(jnp.broadcast_to(scale * psi[0, 0], (n, 1, len(key))), positions, **kwargs)
    k = rope.apply_rope(jnp.broadcast_to(key, (n, 1, len(key))), positions, **kwargs)
    scores = jnp.einsum("qhd,khd->qk", q, k)
    scores = jnp.where(jnp.tril(jnp.ones((n, n), bool)), scores, -jnp.inf)
    return np.asarray(jax.nn.softmax(scores, axis=-1), dtype=np.float64)


def min_target_attention(attention: np.ndarray, offset: int = 0) -> float:
    """``min_i α[i, i - offset]`` over the queries that have that key (``i ≥ offset``)."""
    rows = np.arange(offset, len(attention))
    return float(attention[rows, rows - offset].min())


def positional_margin(weights: np.ndarray, frequencies: np.ndarray, n: int) -> float:
    """``δ = 1 − max_{1≤r<n} Σ_k w_k cos(r g_k)`` (``Σ w_k = 1``): how far the best wrong
    distance stays below the right one. The construction reaches ``min α ≥ 1 − ε`` once
    ``scale ≥ ln(n (1−ε)/ε) / δ`` (each wrong key weighs at most ``e^{−scale·δ}``)."""
    r = np.arange(1, n)[:, None]
    return float(1 - np.max(np.cos(r * np.asarray(frequencies)[None]) @ np.asarray(weights)))


def plane_scores(
    psi: np.ndarray,
    distances: np.ndarray,
    *,
    base: float = 10_000.0,
    variant: str = "rope",
    proportion: float = 1.0,
    pairing: str = "half",
) -> np.ndarray:
    """``⟨R^r ψ, R^0 ψ⟩`` for each distance ``r``: the score a query ``ψ`` gives a matching key
    ``ψ`` that sits ``r`` tokens earlier (a "semantic" match that should not depend on ``r``)."""
    kwargs = dict(base=base, pairing=pairing, variant=variant, proportion=proportion)
    distances = jnp.asarray(distances)
    x = jnp.broadcast_to(jnp.asarray(psi, jnp.float32), (len(distances), 1, len(psi)))
    q = rope.apply_rope(x, distances, **kwargs)
    k = rope.apply_rope(x, jnp.zeros_like(distances), **kwargs)
    return np.asarray(jnp.sum(q * k, axis=(-1, -2)), dtype=np.float64)


def combine_verdicts(verdicts: Sequence[str]) -> str:
    """One verdict for a claim tested several times (e.g. on two domains): the common verdict if
    all agree, ``not testable here`` if any could not be tested, else ``partly``."""
    verdicts = list(verdicts)
    if not verdicts:
        raise ValueError("no verdicts to combine")
    if "not testable here" in verdicts:
        return "not testable here"
    return verdicts[0] if len(set(verdicts)) == 1 else "partly"
