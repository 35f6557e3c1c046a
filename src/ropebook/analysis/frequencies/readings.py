"""The frequency-usage readings over seeds: intervals (:class:`SeedInterval`), the verdict of
each of the paper's readings (slowest band, edge layers, flat values, high-frequency heads and
whether they are positional, input domains) and of a real checkpoint's (Figs 10, 11).

Each reading is a frozen dataclass of numbers and a verdict word; the sentences and tables that
report them are in ``ropebook/present/frequencies.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ropebook.analysis.frequencies.usage import (
    KINDS,
    FrequencyUsage,
    band_share,
    band_size,
    frequency_trend,
    map_similarity,
)

# ---------------------------------------------------------------------------------------------
# over seeds: intervals and verdicts


@dataclass(frozen=True)
class SeedInterval:
    """Mean and 95% Student-t interval of one number measured on ``n`` seeds."""

    mean: float
    low: float
    high: float
    n: int

    @property
    def text(self) -> str | None:
        """How a claim prints the interval; ``None`` with one seed (there is no interval)."""
        return self.text_over("seeds")

    def text_over(self, unit: str) -> str | None:
        """:attr:`text` for samples of another kind (``"prompts"`` of one trained model, say)."""
        if self.n < 2:
            return None
        return f"95% CI [{self.low:.3f}, {self.high:.3f}] over {self.n} {unit}"


def over_seeds(samples) -> SeedInterval:
    """:func:`ropebook.analysis.mean_interval` of per-seed ``samples`` as a :class:`SeedInterval`."""
    from ropebook.analysis import mean_interval

    mean, low, high = mean_interval(samples)
    return SeedInterval(mean, low, high, int(np.size(samples)))


def combine_verdicts(verdicts: Sequence[str]) -> str:
    """Verdicts of the parts of a claim → one (:func:`ropebook.claims.combine`)."""
    from ropebook.claims import combine

    return combine(verdicts)


def interval_verdict(stats: SeedInterval, threshold: float) -> str:
    """``held`` if the interval lies wholly above ``threshold``, ``not held`` if wholly below,
    ``cannot decide`` if it contains it, as also on a single sample (its "interval" is the point
    itself: :func:`ropebook.claims.too_few_runs`)."""
    from ropebook.claims import too_few_runs, verdict_from_interval

    if stats.n < 2:
        return too_few_runs(stats.n)
    return verdict_from_interval(stats.low, stats.high, threshold=threshold)


def flat_bound(n_layers: int, n_chunks: int) -> float:
    """Twice the spread of a layer-averaged :func:`frequency_trend` under random chunk order.

    One layer's Spearman correlation of ``K`` values in random order has standard deviation
    ``1/sqrt(K-1)``; the mean of ``L`` independent layers ``1/sqrt(L(K-1))``.
    """
    return 2 / np.sqrt(n_layers * (n_chunks - 1))


def flat_verdict(samples, bound: float) -> tuple[str, SeedInterval]:
    """Is a per-seed trend flat? ``held`` if its interval lies within ``±bound``, ``not held`` if
    it lies wholly outside, ``cannot decide`` otherwise (the interval reaches across the bound,
    or a single sample has none: :func:`ropebook.claims.too_few_runs`); with the interval."""
    from ropebook.claims import too_few_runs

    stats = over_seeds(samples)
    if stats.n < 2:
        return too_few_runs(stats.n), stats
    if -bound < stats.low and stats.high < bound:
        return "held", stats
    outside = stats.low > bound or stats.high < -bound
    return ("not held" if outside else "cannot decide"), stats


@dataclass(frozen=True)
class ControlReading:
    """Does rotation make the frequency structure? Decided on the rotary model's trend minus the
    control's, paired seed by seed. The control's flatness is shown beside but not scored: a
    model without rotation has chunks in arbitrary order (nothing tells its dimensions apart), so
    it is flat by construction, fails only by chance, and cannot by itself show that RoPE made
    anything (counting it made *partly* of a RoPE model with no structure at all)."""

    flat: dict[str, str]  # kind -> flat_verdict of the control's trend (shown, not scored)
    contrast: dict[str, SeedInterval]  # kind -> rotary minus control trend, over shared seeds
    verdict: str


def control_reading(
    rotary: dict[str, np.ndarray], control: dict[str, np.ndarray], bound: float
) -> ControlReading:
    """The NoPE control's verdict from per-seed trends ``{kind: [seeds]}`` of the rotary model and
    the control (the same seeds, in order): each kind's rotary − control trend above 0
    (:func:`interval_verdict`), combined over kinds; each control's :func:`flat_verdict` within
    ``±bound`` kept beside."""
    flat, contrast, parts = {}, {}, []
    for kind, trend in control.items():
        paired = min(len(trend), len(rotary[kind]))
        flat[kind] = flat_verdict(trend, bound)[0]
        contrast[kind] = over_seeds(np.asarray(rotary[kind][:paired]) - trend[:paired])
        parts.append(interval_verdict(contrast[kind], 0.0))
    return ControlReading(flat, contrast, combine_verdicts(parts))


# ---------------------------------------------------------------------------------------------
# Readings 1 and 2: bands and trends per layer, over seeds


def band_shares(usages: Sequence[FrequencyUsage], kind: str, fraction: float, band: str):
    """:func:`band_share` of every layer of ``kind`` for each seed's usage: ``[seeds, layers]``."""
    return np.stack([band_share(u.layers(kind), fraction, band) for u in usages])


def trends(usages: Sequence[FrequencyUsage], kind: str) -> np.ndarray:
    """:func:`frequency_trend` of ``kind``, mean over layers, for each seed: ``[seeds]``."""
    return np.stack([frequency_trend(u.layers(kind)).mean() for u in usages])


@dataclass(frozen=True)
class LowBandReading:
    """Reading 1: do queries and keys put more than the uniform share in the slowest band?"""

    q: SeedInterval  # slowest-band share of the queries, mean over layers, over seeds
    k: SeedInterval
    uniform: float
    verdict: str  # both intervals above uniform: held
    every_layer_fraction: float  # of (q/k, seed, layer) cases above uniform (shown)
    every_layer_verdict: str  # every (layer, q/k) interval over seeds above uniform: held
    per_layer: dict[tuple[int, str], SeedInterval]  # (layer, "q"/"k") -> share over seeds


def low_band_reading(q_shares, k_shares, uniform: float) -> LowBandReading:
    """Reading 1 from the slowest-band shares ``[seeds, layers]`` of queries and keys. "At every
    layer" is read per (layer, q/k) over seeds, the replicates (each interval above uniform,
    combined with :func:`combine_verdicts`: all: ``held``, some: ``partly``, none and some below:
    ``not held``), not by counting each seed's point estimates as parts of the claim."""
    q, k = over_seeds(np.mean(q_shares, axis=1)), over_seeds(np.mean(k_shares, axis=1))
    verdict = combine_verdicts([interval_verdict(s, uniform) for s in (q, k)])
    fraction = float((np.stack([q_shares, k_shares]) > uniform).mean())
    per_layer = {
        (layer, kind): over_seeds(np.asarray(shares)[:, layer])
        for kind, shares in (("q", q_shares), ("k", k_shares))
        for layer in range(np.shape(shares)[1])
    }
    every = combine_verdicts([interval_verdict(s, uniform) for s in per_layer.values()])
    return LowBandReading(q, k, uniform, verdict, fraction, every, per_layer)


@dataclass(frozen=True)
class EdgeLayerReading:
    """Are the first and last layers the *strongest* users of the fastest band?"""

    per_layer: np.ndarray  # fastest-band share (mean of q and k) [seeds, layers]
    # per seed, the weaker edge layer minus the strongest middle layer; None under 3 layers
    gap: SeedInterval | None
    verdict: str


def edge_gaps(per_layer) -> np.ndarray:
    """Per seed (row of ``[seeds, layers]``), min(first, last) − max(middle layers): positive
    only if *both* edge layers use the fastest band more than *every* layer between them, the
    paper's "strongest"; a mean over the middle layers would let one middle layer match the
    edges unseen."""
    shares = np.asarray(per_layer, dtype=np.float64)
    return shares[:, [0, -1]].min(axis=1) - shares[:, 1:-1].max(axis=1)


def edge_layer_reading(usages: Sequence[FrequencyUsage], fraction: float) -> EdgeLayerReading:
    """Fastest-band share of queries and keys (averaged) per layer and seed; the claim that the
    first and last layers use it most is ``held`` if the interval over seeds of
    :func:`edge_gaps` lies above 0, ``not held`` if below, ``cannot decide`` if it straddles 0;
    ``not testable here`` with fewer than three layers (there is no middle)."""
    per_layer = (
        band_shares(usages, "q", fraction, "high") + band_shares(usages, "k", fraction, "high")
    ) / 2
    n_layers = per_layer.shape[1]
    if n_layers < 3:
        return EdgeLayerReading(per_layer, None, "not testable here")
    gap = over_seeds(edge_gaps(per_layer))
    return EdgeLayerReading(per_layer, gap, interval_verdict(gap, 0.0))


# ---------------------------------------------------------------------------------------------
# Reading 3: heads that use the fastest frequencies, and whether they are positional


def head_high_share(usage: FrequencyUsage, fraction: float) -> np.ndarray:
    """Per head, the larger of its queries' and keys' fastest-band share: ``[layers, heads]``.

    Keys are repeated over the query heads of their group under grouped-query attention."""
    q = band_share(usage.heads("q"), fraction, "high")
    k = band_share(usage.heads("k"), fraction, "high")
    return np.maximum(q, np.repeat(k, q.shape[1] // k.shape[1], axis=1))


@dataclass(frozen=True)
class FewHeadsReading:
    """How many heads per model use the fastest band strongly, read over seeds."""

    counts: list[int]  # per seed, heads flagged
    n_heads: int  # heads per model
    count: SeedInterval  # the mean count per model, over seeds
    verdict: str

    @property
    def text(self) -> str:
        """The mean count with its interval, for a claim."""
        over = self.count.text or f"{len(self.counts)} seed, no interval"
        return f"{self.count.mean:.2f} of {self.n_heads} heads per model ({over})"


def few_heads_reading(counts: Sequence[int], n_heads: int) -> FewHeadsReading:
    """ "A few heads", the seed the unit of replication: each seed's count of flagged heads, and
    the interval of their mean over seeds. "A few" is at least one head and at most a quarter
    of them: the interval inside [1, n/4] → held; wholly below one head (most models have none)
    or above half of them → not held; inside (n/4, n/2] → partly (more than a few); anything
    else → cannot decide, as one seed (:func:`ropebook.claims.too_few_runs`)."""
    from ropebook.claims import too_few_runs

    count = over_seeds(np.asarray(counts, dtype=np.float64))
    quarter, half = n_heads / 4, n_heads / 2
    if count.n < 2:
        verdict = too_few_runs(count.n)
    elif 1 <= count.low and count.high <= quarter:
        verdict = "held"
    elif count.high < 1 or count.low > half:
        verdict = "not held"
    elif quarter < count.low and count.high <= half:
        verdict = "partly"
    else:
        verdict = "cannot decide"
    return FewHeadsReading([int(c) for c in counts], int(n_heads), count, verdict)


@dataclass(frozen=True)
class PositionalReading:
    """Are the heads that use the fastest frequencies most the positional ones?"""

    top_heads: list[tuple[int, int]]  # per seed, (layer, head) of the largest fastest-band share
    strongest: list[np.ndarray]  # per seed, [layers, heads] max of self / previous attention
    top_is_positional: list[bool]  # per seed
    correlations: list  # per seed, scipy SpearmanrResult over heads (two-sided p)
    rank_positive: list[bool]  # per seed: positive, one-sided p < 0.05
    flagged_positional: float  # share of flagged heads that are positional (nan if none)
    rest_positional: float  # the same for the other heads

    @property
    def evidence(self) -> list[bool]:
        """Every seed's two tests, top head positional and rank correlation positive."""
        return self.top_is_positional + self.rank_positive

    @property
    def verdict(self) -> str:
        """The claim's two parts, each over seeds (replicates, not parts of the claim), combined
        (:func:`ropebook.claims.combine`): the top head is positional in every seed (``held``),
        in none (``not held``), in some (``cannot decide``); share and positional attention rise
        together, the per-seed Spearman ρ's interval over seeds above 0. One seed decides neither
        (:func:`ropebook.claims.too_few_runs`): one model's heads are not training runs."""
        from ropebook.claims import combine, too_few_runs

        tops = self.top_is_positional
        if len(tops) < 2:
            return too_few_runs(len(tops))
        top = "held" if all(tops) else "not held" if not any(tops) else "cannot decide"
        rhos = np.array([c.statistic for c in self.correlations], float)
        return combine([top, interval_verdict(over_seeds(rhos), 0.0)])


def positional_reading(
    shares: Sequence[np.ndarray], positional: Sequence[np.ndarray], flagged, mass: float
) -> PositionalReading:
    """Per seed: is the head with the largest fastest-band share (``shares [layers, heads]``)
    positional (``positional [layers, 2, heads]`` reaches ``mass`` at offset 0 or 1), and do
    share and positional attention rise together over heads (Spearman, one-sided p < 0.05)?"""
    from scipy import stats

    strongest = [p.max(axis=1) for p in positional]
    top = [tuple(int(i) for i in np.unravel_index(np.argmax(s), s.shape)) for s in shares]
    correlations = [
        stats.spearmanr(s.ravel(), p.ravel()) for s, p in zip(shares, strongest, strict=True)
    ]
    flag_pos = np.concatenate([p[f] for p, f in zip(strongest, flagged, strict=True)])
    rest_pos = np.concatenate([p[~f] for p, f in zip(strongest, flagged, strict=True)])
    return PositionalReading(
        top_heads=top,
        strongest=strongest,
        top_is_positional=[bool(p[t] >= mass) for p, t in zip(strongest, top, strict=True)],
        correlations=correlations,
        rank_positive=[bool(c.statistic > 0 and c.pvalue / 2 < 0.05) for c in correlations],
        flagged_positional=float((flag_pos >= mass).mean()) if flag_pos.size else np.nan,
        rest_positional=float((rest_pos >= mass).mean()) if rest_pos.size else np.nan,
    )


# ---------------------------------------------------------------------------------------------
# the input domain


def domain_similarities(
    usages: Sequence[dict[str, FrequencyUsage]], kind: str = "q"
) -> list[dict[tuple[str, str], dict[str, float]]]:
    """Per seed, :func:`map_similarity` of the ``kind`` maps of every pair of domains."""
    names = list(usages[0])
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    return [
        {(a, b): map_similarity(u[a].layers(kind), u[b].layers(kind)) for a, b in pairs}
        for u in usages
    ]


def seed_similarities(
    a: Sequence[FrequencyUsage], a_kind: str, b: Sequence[FrequencyUsage], b_kind: str
) -> list[dict[str, float]]:
    """Per seed, :func:`map_similarity` of ``a``'s ``a_kind`` map and ``b``'s ``b_kind`` map."""
    return [map_similarity(x.layers(a_kind), y.layers(b_kind)) for x, y in zip(a, b, strict=True)]


@dataclass(frozen=True)
class DomainReading:
    """Is query usage "very similar" across domains?"""

    least: SeedInterval  # per seed, the profile correlation of the least similar pair
    verdict: str


def domain_reading(similarity: list[dict], threshold: float) -> DomainReading:
    """``held`` if the interval over seeds of the least similar pair's profile correlation lies
    above ``threshold``, ``not held`` if below, ``cannot decide`` if it contains it. No
    reference map rescues a miss: "very similar" is the threshold's, fixed before the data, and
    being more alike than an unrelated map is a weaker claim than the paper's."""
    least = over_seeds([min(v["profile correlation"] for v in s.values()) for s in similarity])
    return DomainReading(least, interval_verdict(least, threshold))


# ---------------------------------------------------------------------------------------------
# real checkpoints


@dataclass(frozen=True)
class CheckpointLowReading:
    """Do a checkpoint's queries and keys favour the slow chunks? Each number is a mean over the
    prompts (each prompt's value a mean over layers), with its interval over the prompts."""

    low: dict[str, SeedInterval]  # slowest-band share per kind
    trend: dict[str, SeedInterval]  # frequency_trend per kind
    uniform: float
    bound: float  # flat_bound of the checkpoint
    verdict: str

    @property
    def text(self) -> str:
        """The measurements behind the verdict: means with their 95% intervals over prompts."""

        def each(values: dict[str, SeedInterval], spec: str) -> str:
            return ", ".join(
                f"{kind} {v.mean:{spec}}"
                + (f" [{v.low:{spec}}, {v.high:{spec}}]" if v.n > 1 else "")
                for kind, v in values.items()
            )

        n = self.low["q"].n
        return (
            f"slowest-band share {each(self.low, '.3f')} (uniform {self.uniform:.3f}); trend "
            f"{each(self.trend, '+.2f')} (flat bound ±{self.bound:.2f}); "
            + (f"95% intervals over {n} prompts" if n > 1 else "one prompt: no interval")
        )


def low_reading_over_prompts(
    low: dict[str, Sequence[float]], trend: dict[str, Sequence[float]], uniform: float, bound: float
) -> CheckpointLowReading:
    """The reading from per-prompt values (``low``/``trend``: per kind, one number per prompt).
    A kind *favours* the slow chunks (``held``) if the interval over prompts of its slowest-band
    share lies above ``uniform`` and that of its trend above the flat ``bound``; it does not
    (``not held``) if either lies wholly below its line; else ``cannot decide`` (as on a single
    prompt, which has no interval). Queries and keys combine as :func:`combine_verdicts` does:
    ``held`` if both favour, ``partly`` if one does. Values are read the same way and reported,
    not judged: they are never rotated, so their chunks are exchangeable and a trend among them
    can only be chance (or an artefact of the measure, which their reading shows), never evidence
    against the claim."""
    low_seen = {kind: over_seeds(v) for kind, v in low.items()}
    trend_seen = {kind: over_seeds(v) for kind, v in trend.items()}

    def favours(kind: str) -> str:
        both = (
            interval_verdict(low_seen[kind], uniform),
            interval_verdict(trend_seen[kind], bound),
        )
        if "not held" in both:
            return "not held"
        return "held" if both == ("held", "held") else "cannot decide"

    verdict = combine_verdicts([favours("q"), favours("k")])
    return CheckpointLowReading(low_seen, trend_seen, uniform, bound, verdict)


def checkpoint_low_reading(
    prompts: Sequence[FrequencyUsage], fraction: float
) -> CheckpointLowReading:
    """:func:`low_reading_over_prompts` of a checkpoint's usage on each prompt (every layer
    with the same planes), each prompt's share and trend a mean over the layers."""
    usage = prompts[0]
    n_layers, n_chunks = usage.q.shape[0], usage.n_chunks
    per_prompt = {
        name: {kind: [float(read(u.layers(kind)).mean()) for u in prompts] for kind in KINDS}
        for name, read in (
            ("low", lambda p: band_share(p, fraction, "low")),
            ("trend", frequency_trend),
        )
    }
    uniform = band_size(n_chunks, fraction) / n_chunks
    return low_reading_over_prompts(
        per_prompt["low"], per_prompt["trend"], uniform, flat_bound(n_layers, n_chunks)
    )


@dataclass(frozen=True)
class DiagonalHeadReading:
    """Is the last-layer query head that uses the fastest band most the diagonal one of its
    KV group (Fig. 11)?"""

    q_high: np.ndarray  # [heads] fastest-band share of the last layer's query heads
    diagonal: np.ndarray  # [heads] attention on the token itself
    top: int  # the head with the largest fastest-band share
    members: list[int]  # the query heads sharing its KV head
    most_diagonal: int  # the member with the most attention on itself
    verdict: str  # top is the most diagonal member; and it reaches the mass: held


def diagonal_head_reading(
    usage: FrequencyUsage, diagonal: np.ndarray, fraction: float, mass: float
) -> DiagonalHeadReading:
    """:class:`DiagonalHeadReading` from a checkpoint's usage and its last layer's
    :func:`last_layer_self_attention`; a KV group is ``heads / kv_heads`` consecutive heads."""
    from ropebook.claims import graded

    q_high = band_share(usage.heads("q")[-1], fraction, "high")
    group = usage.q.shape[1] // usage.k.shape[1]
    top = int(np.argmax(q_high))
    members = list(range((top // group) * group, (top // group + 1) * group))
    most = members[int(np.argmax(diagonal[members]))]
    verdict = graded([most == top, bool(diagonal[top] >= mass)])
    return DiagonalHeadReading(q_high, np.asarray(diagonal), top, members, most, verdict)
