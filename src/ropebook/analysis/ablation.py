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
from ropebook.analysis.power import (
    bound_text,
    min_detectable_effect,
    percent_of_perplexity,
    sd_interval,
)

# ---------------------------------------------------------------- estimates over seeds


@dataclass(frozen=True)
class Estimate:
    """Mean and ``confidence`` interval of independent samples (one per seed).

    ``scale`` says how it was formed: ``linear`` (Student t on the values), ``log`` (on the log
    of positive values such as perplexities, then exponentiated: the mean is geometric and the
    interval never reaches below 0), ``percent`` (a difference of logs, e.g. of losses, shown as
    the relative change ``100 (e^Δ - 1)``).
    """

    mean: float
    low: float
    high: float
    values: tuple[float, ...]
    confidence: float = 0.95
    scale: str = "linear"

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def overlaps(self, other: Estimate) -> bool:
        return self.low <= other.high and other.low <= self.high

    def format(self, digits: int = 4) -> str:
        sign, unit = ("+", " %") if self.scale == "percent" else ("", "")
        if self.n < 2:
            return f"{self.mean:{sign}.{digits}f}{unit} (1 seed)"
        if self.scale == "linear":
            return f"{self.mean:.{digits}f} ± {self.half_width:.{digits}f}"
        return f"{self.mean:{sign}.{digits}f}{unit} [{self.low:{sign}.{digits}f}, {self.high:{sign}.{digits}f}]"


def estimate(samples: Sequence[float], confidence: float = 0.95, *, log: bool = False) -> Estimate:
    """:class:`Estimate` of ``samples`` (Student-t interval; a point when there is one sample).

    ``log=True`` for positive quantities such as perplexity: the interval is formed on the logs
    (for perplexity: on the loss) and exponentiated.
    """
    values = tuple(float(v) for v in np.asarray(samples, dtype=np.float64).ravel())
    if not values:
        raise ValueError("estimate needs at least one sample")
    if not log:
        return Estimate(*mean_interval(values, confidence), values, confidence)
    if min(values) <= 0:
        raise ValueError(f"log-scale estimate needs positive samples, got {min(values)}")
    mean, low, high = np.exp(mean_interval(np.log(values), confidence))
    return Estimate(float(mean), float(low), float(high), values, confidence, "log")


def percent_estimate(log_differences: Sequence[float], confidence: float = 0.95) -> Estimate:
    """Differences of logs (of losses: ``log ppl_a - log ppl_b``), interval formed on them and
    shown as relative changes in percent."""
    mean, low, high = mean_interval(log_differences, confidence)
    values = tuple(percent_of_perplexity(d) for d in np.ravel(log_differences))
    return Estimate(
        *(percent_of_perplexity(x) for x in (mean, low, high)), values, confidence, "percent"
    )


def seed_table(
    values: Mapping[str, Sequence[float]], confidence: float = 0.95, *, log: bool = False
) -> dict[str, Estimate]:
    """``{variant: Estimate}`` from ``{variant: [value of seed 0, seed 1, ...]}``."""
    return {name: estimate(v, confidence, log=log) for name, v in values.items()}


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

    @property
    def bound(self) -> str:
        """The paired difference's interval read as a bound on the effect (``|Δ| < X``)."""
        unit = "%" if self.difference.scale == "percent" else ""
        return bound_text(self.difference.low, self.difference.high, unit=unit)

    def min_detectable(self, confidence: float = 0.95, power: float = 0.8) -> float:
        """Smallest true paired difference this many seeds detect with ``power`` (paired t-test;
        in percent of perplexity for a ``log`` comparison); ``nan`` without two paired seeds."""
        if not self.paired:
            return math.nan
        d = self.difference
        if d.scale != "percent":
            return min_detectable_effect(
                float(np.std(d.values, ddof=1)), d.n, confidence=confidence, power=power
            )
        logs = np.log1p(np.asarray(d.values) / 100)
        mde = min_detectable_effect(
            float(np.std(logs, ddof=1)), d.n, confidence=confidence, power=power
        )
        return percent_of_perplexity(mde)

    def verdict(self, claimed_lower: str, *, test: str = "paired") -> str:
        """Verdict on "``claimed_lower`` has the lower value": ``held`` if the ``test`` separates
        the two in that direction, ``not held`` if the other way, ``cannot decide`` if it does
        not separate them (:attr:`bound` says how large the effect can be), ``not testable here``
        with a single seed.

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
                return "cannot decide"
            lower = self.a if self.difference.mean < 0 else self.b
        elif not self.separated:
            return "cannot decide"
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
    a: str,
    a_values: Sequence[float],
    b: str,
    b_values: Sequence[float],
    confidence: float = 0.95,
    *,
    log: bool = False,
) -> Comparison:
    """Compare two variants' per-seed values (lower is better); see :class:`Comparison`.

    The difference is paired seed by seed when both lists have the same length; otherwise it is the
    difference of means with a Welch-style interval. ``log=True`` (perplexities): intervals are
    formed on the log scale and the paired difference is ``log a - log b`` (a difference of
    losses), shown in percent of perplexity.
    """
    a_est, b_est = estimate(a_values, confidence, log=log), estimate(b_values, confidence, log=log)
    if log and len(a_values) == len(b_values):
        difference = percent_estimate(np.log(a_values) - np.log(b_values), confidence)
    elif log:
        raise ValueError("a log-scale comparison needs the same seeds on both sides")
    elif len(a_values) == len(b_values):
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
        est = estimate([c.ppl_between(start, stop) for c in curves], confidence, log=True)
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
    """One verdict for a claim tested several times (e.g. on two domains):
    :func:`ropebook.claims.combine`."""
    from ropebook.claims import combine

    return combine(verdicts)


# ---------------------------------------------------------------- the p-RoPE chapter
# One function per table or figure of chapters/p_rope.py. The chapter keeps the paper's quoted
# numbers and its claims; these turn measured values into rows, charts and verdicts.

TABLE1_VARIANTS: dict[str, tuple[str, float]] = {
    "NoPE": ("p-rope", 0.0),  # p = 0 rotates nothing: exactly NoPE
    "RoPE": ("rope", 1.0),
    "0.75-RoPE": ("p-rope", 0.75),
}
ALL_PLANES, FAST_PLANES, FREE_PLANES = "all planes", "fast planes", "free planes"


def plane_rows(frequencies: np.ndarray, rotating: np.ndarray, label: str = "0.75-RoPE") -> list:
    """One row per plane (fastest first): RoPE's frequency ``g_k``, its wavelength ``2π/g_k`` and
    whether the variant ``label`` (which rotates the planes in ``rotating``) turns it."""
    return [
        {
            "plane k": k,
            "g_k (rad/token)": float(g),
            "wavelength (tokens)": float(2 * math.pi / g),
            f"{label} rotates it": "yes" if r else "no (free)",
        }
        for k, (g, r) in enumerate(zip(frequencies, rotating, strict=True))
    ]


def construction_row(
    label: str,
    planes: np.ndarray,
    n: int,
    *,
    where: str,
    head_dim: int,
    base: float,
    epsilon: float,
    variants: Mapping[str, tuple[str, float]] = TABLE1_VARIANTS,
) -> dict:
    """The Thm 5.3 construction with ψ spread over ``planes``, for sequences of ``n`` tokens.

    The scale is the smallest that the margin ``δ`` guarantees to reach ``1 − epsilon``
    (:func:`positional_margin`); with no margin (nothing rotates) any scale gives the same uniform
    attention, and ``1000`` is shown. ``min α``: the worst query's attention on its target, for
    the diagonal and the previous-token head."""
    variant, proportion = variants[label]
    grid = rope.frequencies(head_dim, base, variant=variant, proportion=proportion)
    psi = plane_vector(head_dim, planes)
    weights = np.asarray(planes, float) / np.sum(planes)
    margin = positional_margin(weights, grid, n)
    sharp = margin > 1e-9
    scale = math.log(n * (1 - epsilon) / epsilon) / margin if sharp else 1e3
    worst = [
        min_target_attention(
            positional_attention(
                psi,
                n,
                scale=scale,
                offset=offset,
                base=base,
                variant=variant,
                proportion=proportion,
            ),
            offset,
        )  # fmt: skip
        for offset in (0, 1)
    ]
    return {
        "encoding": label,
        "ψ on": where,
        "N": n,
        "δ": margin,
        "scale s": scale if sharp else f"any ({scale:g} shown)",
        "min α diag.": worst[0],
        "min α prev.": worst[1],
    }


@dataclass(frozen=True)
class PositionalCheck:
    """What the constructions of :func:`construction_row` show.

    ``ok``: RoPE and p-RoPE's fast planes reach ``1 − ε`` in every row; for NoPE, *no* row does.
    ``fast_worst``: the worst target attention on p-RoPE's fast planes; ``uniform_best``: the best
    one with NoPE or on p-RoPE's free planes."""

    ok: dict[str, bool]
    fast_worst: float
    uniform_best: float


def positional_check(rows: Sequence[dict], epsilon: float, p_label: str = "0.75-RoPE"):
    """:class:`PositionalCheck` of the rows of :func:`construction_row` (``ψ on`` one of
    :data:`ALL_PLANES`, :data:`FAST_PLANES`, :data:`FREE_PLANES`)."""

    def pick(encoding: str, where: str | None = None) -> list[dict]:
        return [r for r in rows if r["encoding"] == encoding and where in (None, r["ψ on"])]

    def worst(row: dict) -> float:
        return min(row["min α diag."], row["min α prev."])

    def reaches(row: dict) -> bool:
        return worst(row) > 1 - epsilon

    fast, free = pick(p_label, FAST_PLANES), pick(p_label, FREE_PLANES)
    ok = {
        "RoPE": all(map(reaches, pick("RoPE"))),
        p_label: all(map(reaches, fast)),
        "NoPE": not any(map(reaches, pick("NoPE"))),
    }
    best = max(max(r["min α diag."], r["min α prev."]) for r in pick("NoPE") + free)
    return PositionalCheck(ok, min(map(worst, fast)), best)


def first_negative(distances: np.ndarray, scores: np.ndarray) -> int | None:
    """The first distance whose score is below zero (``None`` if none is)."""
    negative = np.flatnonzero(np.asarray(scores) < 0)
    return int(np.asarray(distances)[negative[0]]) if len(negative) else None


def match_scale(n_keys: int, epsilon: float) -> float:
    """The scale ``s`` at which one key scoring ``s`` (a perfect match, cos = 1) among ``n_keys``
    keys whose other ``n_keys − 1`` score 0 takes exactly ``1 − epsilon`` of the attention:
    ``s = ln((n − 1)(1 − ε)/ε)``."""
    return math.log((n_keys - 1) * (1 - epsilon) / epsilon)


def match_attention(score: float, n_keys: int, scale: float) -> float:
    """Attention on a key scoring ``scale · score`` among ``n_keys − 1`` keys scoring 0:
    ``e^{s·c} / (e^{s·c} + n − 1)``."""
    from scipy.special import expit

    return float(expit(scale * score - math.log(n_keys - 1)))


def score_distance_chart(head_dim: int, base: float, *, proportion: float = 0.75, turns=4):
    """Figure: the score ``⟨R^r ψ, ψ⟩`` of a matching key ``r`` tokens back, on RoPE's slowest
    plane and on p-RoPE's free planes, over ``turns`` turns of the slowest plane."""
    import altair as alt

    slowest = rope.base_frequencies(head_dim, base)[-1]
    shown = np.unique(np.round(np.geomspace(1, turns * 2 * math.pi / slowest, 600)))
    free = ~rotating_planes(head_dim, base, variant="p-rope", proportion=proportion)
    scores = {
        "RoPE, slowest plane": plane_scores(
            plane_vector(head_dim, [head_dim // 2 - 1]), shown, base=base
        ),
        f"{proportion:g}-RoPE, free planes (= NoPE)": plane_scores(
            plane_vector(head_dim, free), shown, base=base, variant="p-rope", proportion=proportion
        ),
    }
    values = [
        {"distance r (tokens)": int(r), "score": float(s), "channel": name}
        for name, row in scores.items()
        for r, s in zip(shown, row, strict=True)
    ]
    return (
        alt.Chart(
            alt.InlineData(values=values),
            title=f"Score of a matching key r tokens back (d = {head_dim}, θ = {base:,.0f})",
        )
        .mark_line()
        .encode(
            x=alt.X("distance r (tokens):Q", scale=alt.Scale(type="log"), title="distance r (tokens)"),
            y=alt.Y("score:Q", title="⟨R^r ψ, ψ⟩ / ‖ψ‖²"),
            color=alt.Color("channel:N", legend=alt.Legend(orient="bottom")),
            tooltip=["channel:N", "distance r (tokens):Q", alt.Tooltip("score:Q", format=".4f")],
        )
        .properties(width=560, height=260)
    )  # fmt: skip


def table1_measured(
    positional_ok: Mapping[str, bool], semantic_ok: Mapping[str, bool], p_label: str = "0.75-RoPE"
) -> dict[str, dict[str, bool]]:
    """Table 1's marks as the constructions found them. ``positional_ok`` is
    :attr:`PositionalCheck.ok` (for NoPE: the construction *fails*); ``semantic_ok``: RoPE's
    slowest plane turns a match negative, and NoPE's and p-RoPE's free planes never move."""
    return {
        "positional": {
            "NoPE": not positional_ok["NoPE"],
            "RoPE": positional_ok["RoPE"],
            p_label: positional_ok[p_label],
        },
        "semantic": {
            "NoPE": semantic_ok["NoPE"],
            "RoPE": not semantic_ok["RoPE"],
            p_label: semantic_ok[p_label],
        },
    }


def table1_rows(measured: Mapping[str, Mapping[str, bool]], paper: Mapping) -> list[dict]:
    """Table 1, one row per property: each encoding's measured mark and the paper's."""

    def mark(ok: bool) -> str:
        return "✓" if ok else "✗"

    return [
        {"property": prop}
        | {enc: f"{mark(measured[prop][enc])} (paper {mark(ok)})" for enc, ok in marks.items()}
        for prop, marks in paper.items()
    ]


def table1_text(rows: Sequence[dict]) -> str:
    """Table 1's rows on one line: ``positional: NoPE ✗ (paper ✗), ...; semantic: ...``."""
    return "; ".join(
        f"{r['property']}: " + ", ".join(f"{k} {v}" for k, v in r.items() if k != "property")
        for r in rows
    )


# -------- Table 2: the trained models


def load_runs(
    names: Sequence[str],
    domains: Sequence[str],
    *,
    profile: str,
    extra: Sequence = (),
    regime: str = "lesson",
) -> dict[tuple[str, str], list]:
    """``{(name, domain): [zoo model of each default seed]}`` for every name on every domain,
    then the ``extra`` ``(name, domain)`` pairs not already there (trained if not cached)."""
    from ropebook import zoo

    jobs = [(n, d) for d in domains for n in names]
    jobs += [job for job in extra if job not in jobs]
    return {
        (name, domain): [
            zoo.load(name, seed=s, profile=profile, domain=domain, regime=regime, progress=False)
            for s in zoo.seeds_for(name, profile=profile, domain=domain, regime=regime)
        ]
        for name, domain in jobs
    }


def budget_rows(models: Mapping[tuple[str, str], Sequence], labels: Mapping[str, str]) -> list:
    """Per model: its corpus, seeds, training tokens and mean training time."""
    return [
        {
            "model": labels[name],
            "corpus": domain,
            "seeds": len(runs),
            "tokens/model": ", ".join(f"{t:,}" for t in sorted({m.tokens_seen for m in runs})),
            "train s (mean)": float(np.mean([m.seconds for m in runs])),
        }
        for (name, domain), runs in models.items()
    ]


def tokens_seen(models: Mapping[tuple[str, str], Sequence]) -> list[int]:
    """The distinct numbers of training tokens the models saw (one, if trained identically)."""
    return sorted({m.tokens_seen for runs in models.values() for m in runs})


def n_parameters(params) -> int:
    """Number of scalars in a parameter tree."""
    return sum(int(np.size(leaf)) for leaf in jax.tree.leaves(params))


def profile_rows(current: str) -> list[dict]:
    """What each zoo profile trains (the RoPE model; every Table 2 model has the same shape)."""
    from ropebook import zoo

    rows = []
    for name in zoo.PROFILES:
        mc, tc = zoo.configs("rope", profile=name)
        rows.append(
            {
                "profile": name + (" (this run)" if name == current else ""),
                "L × H × d_h": f"{mc.n_layers} × {mc.n_heads} × {mc.head_dim}",
                "width": mc.d_model,
                "context": mc.context,
                "tokens/model": f"{tc.steps * tc.batch_size * tc.seq_len:,}",
                "seeds": len(zoo.seeds_for("rope", profile=name, domain="python")),
            }
        )
    return rows


def ranks(values: Mapping[str, float]) -> dict[str, int]:
    """``{name: rank}``, 1 for the lowest value (ties keep the mapping's order)."""
    return {n: i + 1 for i, n in enumerate(rank_order(values))}


def means(table: Mapping[str, Estimate]) -> dict[str, float]:
    return {n: e.mean for n, e in table.items()}


def table2_rows(
    table: Mapping[str, Estimate], paper: Mapping[str, float], labels: Mapping[str, str]
) -> list[dict]:
    """One domain of Table 2: our perplexity (mean ± half-width over seeds) and rank, next to the
    paper's single-run perplexity and rank in the column we compare with."""
    ours, theirs = ranks(means(table)), ranks(paper)
    return [
        {
            "encoding": labels[name],
            "ours": est.format(3),
            "rank": ours[name],
            "paper": f"{paper[name]:.4f}",
            "paper rank": theirs[name],
        }
        for name, est in table.items()
    ]


def dropped_turn(head_dim: int, length: int, base: float, proportion: float = 0.75) -> float:
    """Largest angle (rad) that a plane p-RoPE frees turns, under RoPE, over ``length`` tokens."""
    freed = rope.frequencies(head_dim, base, variant="p-rope", proportion=proportion) == 0
    return float(rope.base_frequencies(head_dim, base)[freed].max() * length)


def kendall_taus(
    tables: Mapping[str, Mapping[str, Estimate]],
    paper: Mapping[str, Mapping[str, float]],
    confidence: float = 0.95,
) -> dict[tuple[str, str], tuple[float, float, Estimate]]:
    """``{(domain, paper column): (τ, p-value, Estimate of the per-seed τ)}``: our ranking of
    the mean perplexities against each column of the paper, and each seed's own ranking."""
    taus = {}
    for domain, table in tables.items():
        for column, reference in paper.items():
            tau, pvalue = kendall_tau(means(table), reference)
            per_seed = per_seed_tau({n: e.values for n, e in table.items()}, reference)
            taus[domain, column] = (tau, pvalue, estimate(per_seed, confidence))
    return taus


def tau_rows(
    taus: Mapping[tuple[str, str], tuple[float, float, Estimate]],
    paper: Mapping[str, Mapping[str, float]],
) -> list[dict]:
    """The τ table: the paper's first two columns against each other, then every (domain,
    column) of :func:`kendall_taus`."""
    first, second = list(paper)[:2]
    tau, pvalue = kendall_tau(paper[first], paper[second])
    rows = [{"ranking": f"paper {first} vs paper {second}", "τ": tau, "p-value": pvalue,
             "τ per seed": "—"}]  # fmt: skip
    rows += [
        {"ranking": f"ours {d} vs paper {c}", "τ": t, "p-value": p, "τ per seed": e.format(2)}
        for (d, c), (t, p, e) in taus.items()
    ]
    return rows


def rank_verdict(matched: Sequence[tuple[float, float, object]], alpha: float = 0.05) -> str:
    """``held`` if every ``(τ, p, ...)`` is positive with ``p < alpha``, ``not held`` if none is
    positive, else ``partly``."""
    if all(t > 0 and p < alpha for t, p, _ in matched):
        return "held"
    if all(t <= 0 for t, _, _ in matched):
        return "not held"
    return "partly"


def worst_rival(table: Mapping[str, Estimate], name: str) -> str:
    """The variant other than ``name`` with the highest mean."""
    return rank_order({n: e.mean for n, e in table.items() if n != name})[-1]


def _relation(status: str, c: Comparison) -> str:
    """A comparison status as ``<`` / ``>`` (``a`` against ``b``, separated) or as it is."""
    return {f"{c.a} < {c.b}": "< (separated)", f"{c.a} > {c.b}": "> (separated)"}.get(
        status, status
    )


def pair_rows(
    comparisons: Mapping[tuple[str, str, str], Comparison],
    paper: Mapping[str, float],
    domain: str,
) -> list[dict]:
    """The orderings the paper argues about, on one domain: the paper's difference, our paired
    difference, both tests (as ``a`` against ``b``) and the verdict on "``a`` is lower".
    ``comparisons``: ``{(a name, b name, domain): compare(a label, ..., b label, ...)}``."""
    return [
        {
            "paper's order": f"{c.a} < {c.b}",
            "paper Δ": f"{paper[better] - paper[worse]:+.4f}",
            "our Δ (paired)": c.difference.format(3),
            "paired test": _relation(c.paired_status, c),
            "intervals": _relation(c.status, c),
            "verdict": c.verdict(c.a),
        }
        for (better, worse, d), c in comparisons.items()
        if d == domain
    ]


def pair_verdicts(
    comparisons: Mapping[tuple[str, str, str], Comparison], pairs: Sequence[tuple[str, str, str]]
) -> dict[str, str]:
    """``{claim id: verdict}`` for ``pairs`` of ``(better, worse, claim id)``: "better is lower"
    on every domain of ``comparisons``, combined with :func:`combine_verdicts`."""
    return {
        cid: combine_verdicts(
            [c.verdict(c.a) for (b, w, _), c in comparisons.items() if (b, w) == (better, worse)]
        )
        for better, worse, cid in pairs
    }


def ordering_summary(comparisons: Mapping[tuple[str, str, str], Comparison], profile: str) -> str:
    """One paragraph: which of the paper's orderings our runs confirm, reverse or cannot
    resolve."""
    if not all(c.testable for c in comparisons.values()):
        return (
            f"With a single seed in the `{profile}` profile there is no interval, so no ordering "
            "can be confirmed or ruled out; run the `cpu` or `gpu` profile for the verdicts."
        )

    def listing(verdict: str) -> str:
        found = [f"{c.a} < {c.b} on {d}" for (_, _, d), c in comparisons.items()
                 if c.verdict(c.a) == verdict]  # fmt: skip
        return "; ".join(found) or "none"

    return (
        f"**Confirmed** (paired difference separated from 0, in the paper's direction): "
        f"{listing('held')}. **Reversed** (separated, opposite direction): "
        f"{listing('not held')}. **Cannot decide** (the paired interval contains 0): "
        f"{listing('cannot decide')}. Of these orderings, "
        f"{sum(c.separated for c in comparisons.values())} of {len(comparisons)} also pass the "
        "unpaired test (non-overlapping intervals)."
    )


def pair_text(by_domain: Mapping[str, Comparison], digits: int = 3, *, names: bool = True) -> str:
    """A comparison per domain on one line: ``domain: a mean ± hw vs b ... (paired: status)``."""

    def side(name: str, est: Estimate) -> str:
        return f"{name} {est.format(digits)}" if names else est.format(digits)

    return "; ".join(
        f"{d}: {side(c.a, c.a_est)} vs {side(c.b, c.b_est)} (paired: {c.paired_status})"
        for d, c in by_domain.items()
    )


def difference_text(by_domain: Mapping[str, Comparison], digits: int = 3) -> str:
    """The paired differences per domain on one line: ``domain paired Δ mean ± hw; ...``."""
    return "; ".join(f"{d} paired Δ {c.difference.format(digits)}" for d, c in by_domain.items())


def relative_rows(
    tables: Mapping[str, Mapping[str, Estimate]],
    paper: Mapping[str, Mapping[str, float]],
    domains: Mapping[str, str],
    labels: Mapping[str, str],
    confidence: float = 0.95,
    reference: str = "rope",
) -> list[dict]:
    """Each encoding's perplexity relative to ``reference`` in %, ours paired seed by seed (mean
    and interval) and the paper's (one run), for every ``domain -> paper column``."""
    rows = []
    for domain, column in domains.items():
        table, quoted = tables[domain], paper[column]
        for name, est in table.items():
            ratios = np.asarray(est.values) / np.asarray(table[reference].values)
            ours = estimate(100 * (ratios - 1), confidence)
            rows.append(
                {
                    "encoding": labels[name],
                    "domain": f"{domain} (paper: {column})",
                    "ours (%)": ours.mean,
                    "low": ours.low,
                    "high": ours.high,
                    "paper (%)": 100 * (quoted[name] / quoted[reference] - 1),
                }
            )
    return rows


def relative_chart(rows: Sequence[dict], order: Sequence[str], confidence: float = 0.95):
    """Figure: :func:`relative_rows` as dots with interval bars (ours) and diamonds (the paper),
    one panel per domain."""
    import altair as alt

    base = alt.Chart()
    y = alt.Y("encoding:N", sort=list(order), title=None)
    ours = base.mark_point(filled=True, size=50).encode(
        y=y, x="ours (%):Q",
        tooltip=["encoding:N", *(alt.Tooltip(f, format="+.2f") for f in ("ours (%):Q", "low:Q",
                                                                        "high:Q"))],
    )  # fmt: skip
    return (
        alt.layer(
            base.mark_rule().encode(
                y=y, x=alt.X("low:Q", title="perplexity relative to RoPE θ=10k (%)"), x2="high:Q"
            ),
            ours,
            base.mark_point(shape="diamond", color="black", size=60).encode(
                y=y,
                x="paper (%):Q",
                tooltip=["encoding:N", alt.Tooltip("paper (%):Q", format="+.2f")],
            ),  # fmt: skip
            data=alt.InlineData(values=list(rows)),
        )
        .properties(width=230, height=200)
        .facet(
            column=alt.Column("domain:N", title=None),
            title=f"Perplexity relative to RoPE: ours (dots, {confidence:.0%} interval) vs the "
            "paper (diamonds)",
        )
        .resolve_scale(x="independent")
    )


# -------- seed noise


@dataclass(frozen=True)
class SeedNoise:
    """Seed noise against the differences between encodings, per domain.

    ``unpaired``: :func:`noise_vs_differences`; ``paired``: :func:`paired_noise` (``None`` unless
    every variant has the same ≥ 2 seeds); ``seed_cv``: median over variants of the seed s.d. as
    a fraction of the mean (nan with one seed); ``paper_gap``: per paper column, the median
    relative gap ``|a/b − 1|`` between two of its encodings."""

    unpaired: dict[str, dict[str, float]]
    paired: dict[str, dict[str, float] | None]
    seed_cv: dict[str, float]
    paper_gap: dict[str, float]


def paper_gap(values: Mapping[str, float]) -> float:
    """Median over pairs of the relative gap ``|a/b − 1|`` (``a`` listed before ``b``)."""
    v = list(values.values())
    return float(np.median([abs(a / b - 1) for i, a in enumerate(v) for b in v[i + 1 :]]))


def seed_noise(
    tables: Mapping[str, Mapping[str, Estimate]], paper: Mapping[str, Mapping[str, float]]
) -> SeedNoise:
    """:class:`SeedNoise` of per-domain seed tables and the paper's columns."""

    def paired(table: Mapping[str, Estimate]) -> dict[str, float] | None:
        sizes = {e.n for e in table.values()}
        if len(sizes) != 1 or min(sizes) < 2:
            return None
        return paired_noise({n: e.values for n, e in table.items()})

    def cv(table: Mapping[str, Estimate]) -> float:
        values = [np.std(e.values, ddof=1) / e.mean for e in table.values() if e.n > 1]
        return float(np.median(values)) if values else float("nan")

    return SeedNoise(
        unpaired={d: noise_vs_differences(t) for d, t in tables.items()},
        paired={d: paired(t) for d, t in tables.items()},
        seed_cv={d: cv(t) for d, t in tables.items()},
        paper_gap={c: paper_gap(v) for c, v in paper.items()},
    )


def noise_rows(noise: SeedNoise, domains: Mapping[str, str]) -> list[dict]:
    """The seed-noise table, one row per measure and one column per domain."""
    nan = float("nan")
    measures = {
        "median seed s.d.": lambda d: noise.unpaired[d]["seed_sd"],
        "median gap between variants": lambda d: noise.unpaired[d]["gap"],
        "gap / seed s.d.": lambda d: noise.unpaired[d]["ratio"],
        "paired: |Δ| / s.d. of Δ": lambda d: noise.paired[d]["ratio"] if noise.paired[d] else nan,
        "our seed s.d. (% of ppl)": lambda d: 100 * noise.seed_cv[d],
        "paper column": lambda d: domains[d],
        "paper's median gap (% of ppl)": lambda d: 100 * noise.paper_gap[domains[d]],
    }
    return [{"measure": m} | {d: f(d) for d in domains} for m, f in measures.items()]


def noise_verdict(noise: SeedNoise) -> str:
    """ "Seed noise is smaller than the differences": on every domain the median paired gap
    exceeds the median s.d. of paired differences (``held``), on some (``partly``), on none
    (``not held``); ``not testable here`` without paired seeds."""
    if any(p is None for p in noise.paired.values()):
        return "not testable here"
    above = [p["ratio"] > 1 for p in noise.paired.values()]
    return "held" if all(above) else "partly" if any(above) else "not held"


# -------- the matched regime: what the runs can resolve


def regime_rows(settings: Mapping[str, tuple[int, float, int]], proportion: float = 0.75) -> list:
    """Per setting ``label -> (head_dim, base, context)``: how far the planes that p-RoPE frees
    turn under RoPE over the context (fastest and slowest freed plane, in turns), and the share
    of all planes that complete at least one turn."""
    rows = []
    for label, (head_dim, base, context) in settings.items():
        turns = rope.turns_per_context(head_dim, base, context)
        freed = rope.frequencies(head_dim, base, variant="p-rope", proportion=proportion) == 0
        rows.append(
            {
                "setting": label,
                "head_dim, θ, context": f"{head_dim}, {base:,.0f}, {context:,}",
                "freed planes": int(freed.sum()),
                "their turns over the context": f"{turns[freed].min():.3g} – {turns[freed].max():.3g}",
                "planes with ≥ 1 turn": f"{(turns >= 1).mean():.0%}",
            }
        )
    return rows


def paired_sd_percent(c: Comparison) -> float:
    """Standard deviation over seeds of a log-scale comparison's paired difference of losses,
    in percent of perplexity (nan without two paired seeds)."""
    if not c.paired or c.difference.scale != "percent":
        return math.nan
    return 100 * float(np.std(np.log1p(np.asarray(c.difference.values) / 100), ddof=1))


def _percent(value: float) -> str:
    return f"{value:.2f} %" if np.isfinite(value) else "—"


def resolution_rows(
    comparisons: Mapping[tuple[str, str], Comparison],
    paper: Mapping[str, float],
    confidence: float = 0.95,
    power: float = 0.8,
) -> list[dict]:
    """What each ordering's run can resolve: the paper's gap and our paired difference (both in
    % of perplexity), the s.d. of our paired difference, the smallest effect the seeds detect
    with ``power`` (paired t-test, two-sided at ``confidence``), the verdict on the paper's order
    and, where the run cannot decide, the bound it puts on the effect."""
    rows = []
    for (better, worse), c in comparisons.items():
        verdict = c.verdict(c.a)
        rows.append(
            {
                "paper's order": f"{c.a} < {c.b}",
                "paper Δ": f"{100 * (paper[better] / paper[worse] - 1):+.2f} %",
                "our paired Δ": c.difference.format(2),
                "s.d. of Δ": _percent(paired_sd_percent(c)),
                f"detectable ({c.difference.n} seeds)": _percent(
                    c.min_detectable(confidence, power)
                ),
                "verdict": verdict,
                "reading": c.bound if verdict == "cannot decide" else verdict,
            }
        )
    return rows


def resolution_text(c: Comparison, confidence: float = 0.95, power: float = 0.8) -> str:
    """A claim's basis: seeds and the smallest effect they can detect."""
    if not c.paired:
        return f"{c.difference.n} seed(s): no paired interval"
    mde = c.min_detectable(confidence, power)
    return f"{c.difference.n} paired seeds; detectable |Δ| ≥ {mde:.2g} % ({power:.0%} power)"


def matched_noise(comparisons: Mapping[tuple[str, str], Comparison]) -> float:
    """Median over orderings of the paired s.d. in % of perplexity (the book's target: ≤ 1 %)."""
    values = [paired_sd_percent(c) for c in comparisons.values()]
    values = [v for v in values if np.isfinite(v)]
    return float(np.median(values)) if values else math.nan


def noise_target_verdict(noise_percent: float, target: float = 1.0) -> str:
    """``held`` if the paired noise is at most ``target`` % of perplexity, ``not held`` above,
    ``not testable here`` without two paired seeds (nan)."""
    if not np.isfinite(noise_percent):
        return "not testable here"
    return "held" if noise_percent <= target else "not held"


# -------- paired noise over training (flagship runs)


def validation_curve(runs: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """``(tokens [S], losses [seeds, S])``: the validation losses a zoo model's seeds recorded
    while training (at every evaluation and snapshot step, on the same windows), at the steps all
    seeds recorded."""
    if not runs:
        raise ValueError("validation_curve needs at least one run")
    recorded = [{e["step"]: e["loss"] for e in m.history["val"]} for m in runs]
    steps = sorted(set.intersection(*(set(r) for r in recorded)))
    if not steps:
        raise ValueError(f"the seeds of {runs[0].name!r} share no validation step")
    final = int(runs[0].history["train"][-1]["step"])
    tokens = np.array([runs[0].tokens_seen * s // final for s in steps])
    return tokens, np.array([[r[s] for s in steps] for r in recorded])


def comparisons_over_training(
    a: str, runs_a: Sequence, b: str, runs_b: Sequence, confidence: float = 0.95
) -> dict[int, Comparison]:
    """``{tokens seen: paired log-scale Comparison of a vs b}`` at every validation step both
    models' seeds recorded (same seeds on both sides)."""
    if [m.seed for m in runs_a] != [m.seed for m in runs_b]:
        raise ValueError(f"{a} and {b} must be trained on the same seeds to be paired")
    tokens_a, losses_a = validation_curve(runs_a)
    tokens_b, losses_b = validation_curve(runs_b)
    shared = np.intersect1d(tokens_a, tokens_b)
    pick_a, pick_b = np.searchsorted(tokens_a, shared), np.searchsorted(tokens_b, shared)
    return {
        int(t): compare(a, np.exp(losses_a[:, i]), b, np.exp(losses_b[:, j]), confidence, log=True)
        for t, i, j in zip(shared, pick_a, pick_b, strict=True)
    }


def training_noise_rows(
    series: Mapping[str, Mapping[int, Comparison]], confidence: float = 0.95, power: float = 0.8
) -> list[dict]:
    """One row per comparison and validation step: tokens seen, the paired difference, the s.d.
    of the paired difference (% of perplexity) with its ``confidence`` interval (chi-square,
    :func:`~ropebook.analysis.power.sd_interval`), the detectable effect and the verdict on the
    comparison's first model being better."""
    rows = []
    for label, by_tokens in series.items():
        for tokens, c in by_tokens.items():
            sd = paired_sd_percent(c)
            low, high = sd_interval(sd, c.difference.n, confidence) if c.paired else (sd, sd)
            rows.append(
                {
                    "comparison": label,
                    "tokens": tokens,
                    "paired Δ": c.difference.format(2),
                    "s.d. of Δ (%)": round(sd, 3),
                    "s.d. low": round(low, 3),
                    "s.d. high": round(high, 3),
                    "detectable": _percent(c.min_detectable(confidence, power)),
                    "verdict": c.verdict(c.a),
                }
            )
    return rows


def training_noise_chart(rows: Sequence[dict], target: float = 1.0, confidence: float = 0.95):
    """Figure: :func:`training_noise_rows`' s.d. of the paired difference against tokens seen
    (log axes, ``confidence`` band), one line per comparison, the target as a dashed rule."""
    import altair as alt

    shown = [r for r in rows if r["s.d. of Δ (%)"] > 0 and r["tokens"] > 0]
    x = alt.X("tokens:Q", scale=alt.Scale(type="log"), title="tokens seen")
    y = alt.Y("s.d. of Δ (%):Q", scale=alt.Scale(type="log"),
              title="s.d. of the paired difference (% of perplexity)")  # fmt: skip
    color = alt.Color("comparison:N", legend=alt.Legend(orient="bottom", title=None))
    base = alt.Chart(alt.InlineData(values=shown))
    return (
        alt.layer(
            base.mark_area(opacity=0.15).encode(x=x, y="s.d. low:Q", y2="s.d. high:Q", color=color),
            base.mark_line(point=True).encode(
                x=x,
                y=y,
                color=color,
                tooltip=["comparison:N", "tokens:Q", "paired Δ:N", "s.d. of Δ (%):Q"],
            ),  # fmt: skip
            alt.Chart(alt.InlineData(values=[{"target": target}]))
            .mark_rule(strokeDash=[4, 4], color="grey")
            .encode(y="target:Q"),
        ).properties(
            width=520,
            height=260,
            title=f"Paired seed noise over training ({confidence:.0%} band from the chi-square "
            "distribution; dashed: the 1 % target)",
        )  # fmt: skip
    )


def training_noise_text(
    by_tokens: Mapping[int, Comparison],
    earlier: Comparison,
    earlier_tokens: int,
    paper_gap_percent: float,
    confidence: float = 0.95,
    power: float = 0.8,
) -> str:
    """A paragraph on one comparison's paired noise over training (``by_tokens`` from
    :func:`comparisons_over_training`): its last step against an ``earlier`` run of the same
    comparison (the matched regime), the range of the s.d. over the second half of training in
    log tokens, the rank correlation of s.d. with tokens there, and the paired seeds the paper's
    gap (``paper_gap_percent``, a log-ratio in %) would need at the last step's noise."""
    from scipy import stats

    from ropebook.analysis.power import seeds_needed

    last_tokens, last = max(by_tokens.items())
    sd = paired_sd_percent(last)
    if not np.isfinite(sd):
        return "One seed per model: no paired noise to follow over training in this profile."
    half = math.sqrt(min(t for t in by_tokens if t > 0) * last_tokens)
    late = {t: paired_sd_percent(c) for t, c in by_tokens.items() if t >= half}
    rho = stats.spearmanr(list(late), list(late.values())).statistic if len(late) > 2 else math.nan
    trend = (
        "falls steadily"
        if rho <= -0.8
        else "rises steadily"
        if rho >= 0.8
        else "does not fall steadily"
    )
    low, high = sd_interval(sd, last.difference.n, confidence)
    return (
        f"At the last step ({last_tokens:,} tokens, {last_tokens / earlier_tokens:.1f}× the "
        f"matched runs) {last.a} vs {last.b} differs by {last.difference.format(2)}, with a "
        f"paired s.d. of **{sd:.2f} %** of perplexity ({confidence:.0%} interval "
        f"{low:.2f}–{high:.2f} %; matched runs: {paired_sd_percent(earlier):.2f} %). Over the "
        f"second half of training (from {min(late):,} tokens) the s.d. ranges "
        f"{min(late.values()):.2f}–{max(late.values()):.2f} % and {trend} (Spearman ρ = "
        f"{rho:.2f} with tokens). The smallest effect {last.difference.n} seeds detect is "
        f"{last.min_detectable(confidence, power):.2f} %, against the paper's gap of "
        f"{paper_gap_percent:.2f} %, which would need about "
        f"{seeds_needed(sd, paper_gap_percent, confidence=confidence, power=power)} paired "
        f"seeds at this noise ({power:.0%} power)."
    )


# -------- length extrapolation and the p sweep


def length_factors(max_factor: int, *also: int) -> list[int]:
    """Context multiples to report: the powers of two up to ``max_factor``, ``max_factor``
    itself and any of ``also`` that fit (sorted)."""
    powers = {2**k for k in range(max(max_factor, 1).bit_length()) if 2**k <= max_factor}
    return sorted(powers | {max_factor} | {f for f in also if 1 <= f <= max_factor})


def extrapolation_table(
    curves: Mapping[tuple[str, str], Sequence[ExtrapolationCurve]],
    factors: Sequence[int],
    confidence: float = 0.95,
) -> dict[tuple[str, str], dict[int, Estimate]]:
    """``{key: {factor: Estimate over seeds of the perplexity of factor × context windows}}``."""
    return {
        key: {f: estimate([c.ppl_at(f) for c in cs], confidence, log=True) for f in factors}
        for key, cs in curves.items()
    }


def extrapolation_rows(
    table: Mapping[tuple[str, str], Mapping[int, Estimate]],
    names: Sequence[str],
    domain: str,
    labels: Mapping[str, str],
    context: int,
) -> list[dict]:
    """One domain of :func:`extrapolation_table`: a row per encoding, a column per length."""
    return [
        {"encoding": labels[name]}
        | {f"{f}× ({f * context})": e.format(2) for f, e in table[name, domain].items()}
        for name in names
    ]


def compare_curves(
    a: str,
    a_curves: Sequence[ExtrapolationCurve],
    b: str,
    b_curves: Sequence[ExtrapolationCurve],
    factor: float,
    confidence: float = 0.95,
) -> Comparison:
    """:func:`compare` of the perplexities at ``factor × context`` (one curve per seed)."""
    return compare(
        a, [c.ppl_at(factor) for c in a_curves], b, [c.ppl_at(factor) for c in b_curves],
        confidence, log=True,
    )  # fmt: skip


def extrapolation_summary(
    table: Mapping[tuple[str, str], Mapping[int, Estimate]],
    names: Sequence[str],
    domain: str,
    factor: int,
) -> dict:
    """On ``domain`` at ``factor × context``: the name with the lowest perplexity, and the
    smallest and largest growth of perplexity from ``1×`` over ``names``."""
    growth = [table[n, domain][factor].mean / table[n, domain][1].mean for n in names]
    best = min(names, key=lambda n: table[n, domain][factor].mean)
    return {"best": best, "growth_min": min(growth), "growth_max": max(growth)}


def extrapolation_chart(
    curves: Mapping[tuple[str, str], Sequence[ExtrapolationCurve]],
    labels: Mapping[str, str],
    *,
    max_factor: int,
    confidence: float = 0.95,
):
    """Figure: perplexity at each position (bins of half the training context; mean and interval
    over seeds) for every ``(name, domain)`` of ``curves``, one panel per domain, with the end of
    the training context dashed."""
    import altair as alt

    context = next(iter(curves.values()))[0].context
    rows = [
        row | {"encoding": labels[name], "domain": domain, "edge": 1.0}
        for (name, domain), cs in curves.items()
        for row in binned_ppl(cs, max(context // 2, 1), confidence)
    ]
    color = alt.Color("encoding:N", sort=list(labels.values()), legend=alt.Legend(orient="bottom"))
    band = alt.Chart().mark_area(opacity=0.2).encode(
        x=alt.X("x context:Q", title="position (multiples of the training context)"),
        y=alt.Y("low:Q", scale=alt.Scale(type="log"), title="perplexity at the position (log)"),
        y2="high:Q", color=color,
    )  # fmt: skip
    tips = [alt.Tooltip(f"{f}:Q", format=".2f") for f in ("ppl", "low", "high")]
    line = alt.Chart().mark_line().encode(
        x="x context:Q", y="ppl:Q", color=color,
        tooltip=["encoding:N", "start:Q", "stop:Q", *tips],
    )  # fmt: skip
    edge = alt.Chart().mark_rule(strokeDash=[4, 4], color="gray").encode(x="edge:Q")
    return (
        alt.layer(band, line, edge, data=alt.InlineData(values=rows))
        .properties(width=270, height=260)
        .facet(
            column=alt.Column("domain:N", title=None),
            title=f"Perplexity vs position, trained on {context} tokens, evaluated on "
            f"{max_factor * context}",
        )
        .resolve_scale(y="independent")
    )


def sweep_rows(
    table: Mapping[tuple[str, str], Mapping[int, Estimate]],
    sweep: Mapping[float, str],
    factors: Sequence[int],
    labels: Mapping[str, str],
    context: int,
    domain: str = "shakespeare",
) -> list[dict]:
    """The p sweep: perplexity (mean, interval) of each ``p -> model`` at each length."""
    return [
        {
            "p": p,
            "length": f"{f}× context ({f * context} tokens)",
            "ppl": e.mean,
            "low": e.low,
            "high": e.high,
            "model": labels[name],
        }
        for p, name in sweep.items()
        for f in factors
        for e in [table[name, domain][f]]
    ]


def sweep_chart(rows: Sequence[dict], title: str):
    """Figure: :func:`sweep_rows` as perplexity against ``p`` with interval bars, one panel per
    length (each with its own perplexity axis)."""
    import altair as alt

    base = alt.Chart()
    color = alt.Color("length:N", title="evaluated on", legend=alt.Legend(orient="bottom"))
    tips = [alt.Tooltip(f"{f}:Q", format=".3f") for f in ("ppl", "low", "high")]
    line = base.mark_line(point=True).encode(
        x=alt.X("p:Q", title="p (fraction of frequencies kept, fastest first)",
                scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("ppl:Q", scale=alt.Scale(zero=False), title="perplexity"),
        color=color, tooltip=["model:N", "length:N", *tips],
    )  # fmt: skip
    bars = base.mark_errorbar().encode(
        x="p:Q", y=alt.Y("low:Q", title="perplexity"), y2="high:Q", color=color
    )
    return (
        alt.layer(line, bars, data=alt.InlineData(values=list(rows)))
        .properties(width=270, height=260)
        .facet(column=alt.Column("length:N", title=None), title=title)
        .resolve_scale(y="independent")
    )
