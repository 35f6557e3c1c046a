"""Estimates over seeds and what they decide: intervals, paired comparisons, rankings, seed noise.

- :func:`estimate` / :func:`seed_table`: a mean and a Student-t interval over seeds per variant;
- :func:`compare`: is ``a`` lower than ``b``? Two tests: the *paired* difference (seed ``s`` of
  ``a`` minus seed ``s`` of ``b``; zoo models with the same seed share the initialisation key and
  every batch, so pairing removes the noise the two runs have in common, and its Student-t
  interval excluding 0 is the verdict's test), and the stricter, unpaired one (the two variants'
  own intervals do not overlap);
- :func:`kendall_tau`, :func:`rank_order`: agreement of a ranking with a reference (the paper's);
- :func:`seed_noise`, :func:`matched_noise`: seed noise against the differences it must resolve.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ropebook.analysis import mean_interval
from ropebook.claims import too_few_runs
from ropebook.recipes import MARGIN
from ropebook.stats.power import bound_text, min_detectable_effect, percent_of_perplexity

# The margin, fixed before the data, inside which a perplexity comparison's paired interval is a
# decided null (*bounded*), in % of perplexity; ropebook.recipes says why it is what it is.
PERPLEXITY_MARGIN = MARGIN

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

    def verdict(
        self, claimed_lower: str, *, test: str = "paired", margin: float | None = None
    ) -> str:
        """Verdict on "``claimed_lower`` has the lower value": ``held`` if the ``test`` separates
        the two in that direction, ``not held`` if the other way; when it does not separate them,
        ``bounded`` if the difference's interval lies within ``± margin`` (in its units: percent
        of perplexity for a ``log`` comparison; a margin fixed before the data), else ``cannot
        decide`` (:attr:`bound` says how large the effect can be), as also with a single seed on
        a side (:func:`ropebook.claims.too_few_runs`).

        ``test="paired"``: the paired difference's interval excludes 0 (falls back to
        ``"intervals"`` when the seeds differ); ``test="intervals"``: the two intervals do not
        overlap."""
        if claimed_lower not in (self.a, self.b):
            raise ValueError(f"{claimed_lower!r} is neither {self.a!r} nor {self.b!r}")
        if test not in ("paired", "intervals"):
            raise ValueError(f"unknown test {test!r}; valid tests: paired, intervals")
        if not self.testable:
            return too_few_runs(min(self.a_est.n, self.b_est.n))
        if test == "paired" and self.paired:
            if not self.paired_separated:
                return "bounded" if self.within(margin) else "cannot decide"
            lower = self.a if self.difference.mean < 0 else self.b
        elif not self.separated:
            return "bounded" if self.within(margin) else "cannot decide"
        else:
            lower = self.lower
        return "held" if lower == claimed_lower else "not held"

    def within(self, margin: float | None) -> bool:
        """The difference's interval lies inside ``± margin`` (never, without a margin)."""
        d = self.difference
        return margin is not None and -margin <= d.low and d.high <= margin


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


def shared_seeds(values: Mapping[str, Sequence]) -> dict[str, Sequence]:
    """Each variant's per-seed values (seed order) cut to the seeds every variant has: the first
    ``min(len)``, since seeds added by power come after the profile's own
    (:func:`ropebook.seedplan.extend_seeds`). What the paired, seed-by-seed measures read."""
    shared = min(len(v) for v in values.values())
    return {name: v[:shared] for name, v in values.items()}


def per_seed_tau(values: Mapping[str, Sequence[float]], reference: Mapping[str, float]) -> list:
    """τ of each seed's own ranking against ``reference``, over :func:`shared_seeds`."""
    values = shared_seeds(values)
    n_seeds = len(next(iter(values.values())))
    return [kendall_tau({n: v[s] for n, v in values.items()}, reference)[0] for s in range(n_seeds)]


def ranks(values: Mapping[str, float]) -> dict[str, int]:
    """``{name: rank}``, 1 for the lowest value (ties keep the mapping's order)."""
    return {n: i + 1 for i, n in enumerate(rank_order(values))}


def means(table: Mapping[str, Estimate]) -> dict[str, float]:
    return {n: e.mean for n, e in table.items()}


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


def rank_verdict(matched: Sequence[tuple[float, float, Estimate]]) -> str:
    """Verdict on "our ranking agrees with the paper's" from :func:`kendall_taus`' entries
    ``(τ, p, per-seed τ)`` (one per domain), the seed the unit of replication: per domain, the
    interval over seeds of each seed's own τ against 0 (:func:`ropebook.claims
    .verdict_from_interval`: ``held`` above 0, ``not held`` below, ``cannot decide`` if it
    contains 0), the domains combined by :func:`ropebook.claims.combine`; ``cannot decide`` on a
    domain with one seed (no interval). The τ and p of the mean ranking are not used: that
    p treats the seven encodings as the replicates, and says nothing of another seed's ranking."""
    return combine_verdicts([tau_verdict(per_seed) for _, _, per_seed in matched])


def tau_verdict(per_seed: Estimate) -> str:
    """One domain of :func:`rank_verdict`: the per-seed τ's interval against 0 (one seed:
    :func:`ropebook.claims.too_few_runs`)."""
    from ropebook.claims import verdict_from_interval

    if per_seed.n < 2:
        return too_few_runs(per_seed.n)
    return verdict_from_interval(per_seed.low, per_seed.high, threshold=0.0)


def worst_rival(table: Mapping[str, Estimate], name: str) -> str:
    """The variant other than ``name`` with the highest mean."""
    return rank_order({n: e.mean for n, e in table.items() if n != name})[-1]


def relative_change(
    table: Mapping[str, Estimate], reference: str, confidence: float = 0.95
) -> dict[str, Estimate]:
    """Each variant relative to ``reference`` in %, paired seed by seed: the :class:`Estimate` of
    ``100 (a_s / ref_s − 1)`` over the seeds ``s`` both have (:func:`shared_seeds`);
    ``reference`` against itself is exactly 0."""

    def paired(values) -> np.ndarray:
        a, ref = shared_seeds({"a": values, "ref": table[reference].values}).values()
        return 100 * (np.asarray(a) / np.asarray(ref) - 1)

    return {name: estimate(paired(est.values), confidence) for name, est in table.items()}


def combine_verdicts(verdicts: Sequence[str]) -> str:
    """One verdict for a claim tested several times (e.g. on two domains):
    :func:`ropebook.claims.combine`."""
    from ropebook.claims import combine

    return combine(verdicts)


def informative_combine(parts: Sequence[tuple[bool, str]]) -> str:
    """One verdict for a claim of several parts ``(informative, verdict)`` of which some are null
    by construction in their regime (e.g. steps of a p sweep whose planes never pass a quarter
    turn, :func:`~ropebook.analysis.ablation.constructions.freed_planes_informative`): those
    are *uninformative here* and left out, the rest combined by :func:`combine_verdicts`;
    ``uninformative here`` when no part can fail."""
    scored = [verdict for informative, verdict in parts if informative]
    return combine_verdicts(scored) if scored else "uninformative here"


def pair_verdicts(
    comparisons: Mapping[tuple[str, str, str], Comparison],
    pairs: Sequence[tuple[str, str, str]],
    *,
    margin: float | None = None,
) -> dict[str, str]:
    """``{claim id: verdict}`` for ``pairs`` of ``(better, worse, claim id)``: "better is lower"
    on every domain of ``comparisons`` (``bounded`` within ``± margin``, see
    :meth:`Comparison.verdict`), combined with :func:`combine_verdicts`."""
    return {
        cid: combine_verdicts(
            [
                c.verdict(c.a, margin=margin)
                for (b, w, _), c in comparisons.items()
                if (b, w) == (better, worse)
            ]
        )
        for better, worse, cid in pairs
    }


# ---------------------------------------------------------------- seed noise


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
    median over pairs of its mean's absolute value; ``ratio = gap / seed_sd``; ``n``: the seeds.
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
    ratio = gap / seed_sd if seed_sd > 0 else math.inf
    return {"seed_sd": seed_sd, "gap": gap, "ratio": ratio, "n": len(diffs[0])}


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
        values = shared_seeds({n: e.values for n, e in table.items()})
        return paired_noise(values) if min(map(len, values.values())) >= 2 else None

    def cv(table: Mapping[str, Estimate]) -> float:
        values = [np.std(e.values, ddof=1) / e.mean for e in table.values() if e.n > 1]
        return float(np.median(values)) if values else float("nan")

    return SeedNoise(
        unpaired={d: noise_vs_differences(t) for d, t in tables.items()},
        paired={d: paired(t) for d, t in tables.items()},
        seed_cv={d: cv(t) for d, t in tables.items()},
        paper_gap={c: paper_gap(v) for c, v in paper.items()},
    )


def noise_ratio_interval(
    paired: Mapping[str, float], confidence: float = 0.95
) -> tuple[float, float]:
    """The paired gap over the s.d. of paired differences (:func:`paired_noise`), as an
    interval: the gap taken as measured, over the s.d.'s chi-square interval on ``n`` seeds
    (:func:`ropebook.stats.power.sd_interval`; with 3 seeds it spans 0.52× to 6.3× the sample
    s.d., so the ratio's interval spans a factor of 12). The median over pairs counts as one
    s.d. of ``n`` values: every pair shares the same seeds, so the pairs add no replicates."""
    from ropebook.stats.power import sd_interval

    low, high = sd_interval(paired["seed_sd"], int(paired["n"]), confidence)
    gap = paired["gap"]

    def over(sd: float) -> float:  # no noise: any gap is beyond it, a zero gap undecidable
        return gap / sd if sd > 0 else math.inf if gap > 0 else math.nan

    return over(high), over(low)


def noise_domain_verdict(paired: Mapping[str, float] | None, confidence: float = 0.95) -> str:
    """One domain of :func:`noise_verdict`: ``held`` if the s.d.'s chi-square interval lies
    wholly below the gap (the ratio's interval above 1), ``not held`` if wholly above it,
    ``cannot decide`` if it contains the gap, as also without paired seeds (measured, but not on
    the same ≥ 2 seeds: :func:`ropebook.claims.too_few_runs`)."""
    from ropebook.claims import verdict_from_interval

    if paired is None:
        return too_few_runs(1)
    return verdict_from_interval(*noise_ratio_interval(paired, confidence), threshold=1.0)


def noise_verdict(noise: SeedNoise, confidence: float = 0.95) -> str:
    """ "Seed noise is smaller than the differences": per domain, the median paired gap against
    the ``confidence`` chi-square interval of the median s.d. of paired differences
    (:func:`noise_domain_verdict`; 3 seeds give that s.d. 2 degrees of freedom, so its point
    value alone decides nothing), the domains combined by :func:`ropebook.claims.combine`
    (``held`` on every domain, ``partly`` on some, ``not held`` where none holds and one is
    established false, else ``cannot decide``, as also without paired seeds)."""
    return combine_verdicts([noise_domain_verdict(p, confidence) for p in noise.paired.values()])


def noise_seeds_to_decide(
    paired: Mapping[str, float], confidence: float = 0.95, max_seeds: int = 1000
) -> int | None:
    """The fewest seeds whose chi-square interval, at the measured s.d., would leave the gap
    outside it (:func:`noise_domain_verdict` decided); ``None`` if none up to ``max_seeds``
    would (a ratio of exactly 1 never is)."""
    for n in range(max(int(paired["n"]), 2), max_seeds + 1):
        if noise_domain_verdict({**paired, "n": n}, confidence) != "cannot decide":
            return n
    return None


def seeds_to_buy(
    comparisons: Mapping,
    have: Mapping,
    *,
    max_seeds: int,
    seconds_per_model: float,
    budget_seconds: float,
) -> dict:
    """``model -> seeds`` to train within a budget, for comparisons keyed by the pair of models
    they compare (``(model_a, model_b) -> Comparison``; ``have``: each model's seeds now).

    Each comparison asks for :func:`seeds_by_power`; those that ask are served cheapest first (a
    model raised for an earlier one costs nothing more), each only if all of it fits in what is
    left: a partial spend would leave it undecided. Models nobody asks for are left out."""
    asked = {k: n for k, n in seeds_by_power(comparisons, max_seeds=max_seeds).items()
             if n > min(have[m] for m in k)}  # fmt: skip
    counts: dict = {}

    def cost(pair, n) -> float:
        missing = sum(max(0, n - counts.get(m, have[m])) for m in pair)
        return seconds_per_model * missing if missing else 0.0

    left = float(budget_seconds)
    for pair in sorted(asked, key=lambda k: (cost(k, asked[k]), str(k))):
        if (c := cost(pair, asked[pair])) <= left:
            left -= c
            counts |= {m: max(counts.get(m, have[m]), asked[pair]) for m in pair}
    return counts


def seeds_by_power(comparisons: Mapping, *, max_seeds: int) -> dict:
    """``key -> paired seeds`` each comparison asks for: one its seeds cannot decide, whose
    measured paired difference at most ``max_seeds`` paired seeds would detect (95 %, 80 % power,
    on the log scale of its test), asks for those; every other keeps the seeds it has (a larger
    need would leave it a bound at any spend up to the cap)."""
    from ropebook.stats import power

    wanted = {}
    for key, c in comparisons.items():
        n, needed = c.difference.n, None
        if c.paired and c.verdict(c.a) == "cannot decide":
            needed = power.seeds_to_decide(power.paired_log_percent(c)).needed
        wanted[key] = needed if needed is not None and n < needed <= max_seeds else n
    return wanted


def paired_sd_percent(c: Comparison) -> float:
    """Standard deviation over seeds of a log-scale comparison's paired difference of losses,
    in percent of perplexity (nan without two paired seeds)."""
    if not c.paired or c.difference.scale != "percent":
        return math.nan
    return 100 * float(np.std(np.log1p(np.asarray(c.difference.values) / 100), ddof=1))


def matched_noise(comparisons: Mapping[tuple[str, str], Comparison]) -> float:
    """Median over orderings of the paired s.d. in % of perplexity (the book's target: ≤ 1 %)."""
    values = [paired_sd_percent(c) for c in comparisons.values()]
    values = [v for v in values if np.isfinite(v)]
    return float(np.median(values)) if values else math.nan


def seeds_grown(before: Mapping, after: Mapping) -> list:
    """The keys of comparisons whose paired seeds grew between ``before`` (the comparisons the
    first seeds gave) and ``after`` (the same keys once :func:`seeds_to_buy` added seeds). Those
    seeds were bought from the *observed* difference of the runs being judged, so a verdict read
    on them is exploratory, not confirmatory: a design that looks twice."""
    return [k for k, c in after.items() if c.difference.n > before[k].difference.n]
