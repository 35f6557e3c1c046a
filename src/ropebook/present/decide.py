"""What would decide an undecided claim, as the sentence its ``to_decide`` records, and the
scorecard's table of every claim still open.

The numbers come from :mod:`ropebook.stats.power` (:func:`~ropebook.stats.power
.seeds_to_decide`: paired samples that would detect a measured difference); here they become
sentences such as "12 paired seeds would detect the measured difference of 0.54 % (paired s.d.
0.9 %; 95 %, 80 % power)". A claim decided by another kind of evidence (a checkpoint, a task the
models did not learn) writes its own sentence in its chapter, from the chapter's variables.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ropebook.seedplan import MeasuredSd, measured_sd
from ropebook.stats import power
from ropebook.stats.power import SeedsToDecide


def number(x: float, unit: str = "") -> str:
    """``x`` to two significant figures, with its unit (``"0.54 %"``, ``"0.0021 nats"``)."""
    return f"{x:.2g}" + (f" {unit}" if unit else "")


def _level(r: SeedsToDecide) -> str:
    return f"{100 * r.confidence:.0f} %, {100 * r.power:.0f} % power"


def seeds_text(
    r: SeedsToDecide,
    *,
    unit: str = "%",
    what: str = "the measured difference",
    samples: str = "paired seeds",
    sd_name: str = "paired s.d.",
    sd_source: str | None = None,
    one: str = "seed",
) -> str:
    """The sentence for :class:`~ropebook.stats.power.SeedsToDecide`: how many ``samples``
    would detect ``what`` at the measured s.d.; with a single sample (``one``: what it is), that
    a second one is needed to measure the s.d., and (``sd_source`` naming where a supplied s.d.
    comes from) the count that s.d. implies."""
    effect, sd = number(r.effect, unit), number(r.sd, unit)
    if r.n == 0:
        return f"no {samples} to measure: {what} needs models that produce it first"
    if r.sd_measured:
        if r.sd == 0:
            return f"all {r.n} {samples} gave the same value: more of them cannot decide it"
        if not r.effect > 0:
            bigger = 4 * r.n
            return (
                f"{what} is 0: more {samples} can only bound it ({sd_name} {sd}: {r.n} detect "
                f"{number(r.detectable(r.n), unit)}, {bigger} would detect "
                f"{number(r.detectable(bigger), unit)}; {_level(r)})"
            )
        if r.beyond_limit:
            return (
                f"more than {r.limit:,} {samples} would be needed to detect {what} of {effect} "
                f"({sd_name} {sd}; {_level(r)}): no feasible seed count decides it at this noise"
            )
        return (
            f"{r.needed} {samples} would detect {what} of {effect} ({sd_name} {sd}; "
            f"{_level(r)}); this run has {r.n}"
        )
    first = f"1 {one}: a second {one} is needed to measure the {sd_name}"
    if sd_source and math.isfinite(r.sd):
        if r.needed is not None:
            return (
                f"{first}; at {sd} ({sd_source}), {r.needed} {samples} would detect {what} of "
                f"{effect} ({_level(r)})"
            )
        if r.beyond_limit:
            return (
                f"{first}; at {sd} ({sd_source}), even {r.limit:,} {samples} would not detect "
                f"{what} of {effect}"
            )
        bigger = 4 * max(r.n, 1)
        return (
            f"{first}; {what} is 0, so more seeds can only bound it (at {sd}, {sd_source}: "
            f"{bigger} {samples} detect {number(r.detectable(bigger), unit)}; {_level(r)})"
        )
    # No s.d. at all: the counts for a difference of one s.d. and of half of one
    whole, half = (
        power.seeds_needed(1.0, size, confidence=r.confidence, power=r.power) for size in (1, 0.5)
    )
    if not r.effect > 0:
        return (
            f"{first}; {what} is 0, so more {samples} can only bound it (at any s.d. σ, {whole} "
            f"detect a difference of σ, {half} one of σ/2; {_level(r)})"
        )
    return (
        f"{first}; if it is as large as {what} ({effect}), {whole} {samples} would detect it, "
        f"{half} if half as large ({_level(r)})"
    )


def sd_source_text(measured: MeasuredSd) -> str:
    """Where a seed-plan s.d. comes from, for :func:`seeds_text`."""
    if measured.exact:
        return f"the book's measured paired s.d. for {measured.comparison}, seed plan"
    regime = measured.comparison.split(":")[0]
    return (
        f"the largest paired s.d. the book measured in the {regime} regime, "
        f"{measured.comparison}, seed plan"
    )


def comparison_to_decide(comparison, measured: MeasuredSd | None = None) -> str:
    """What would decide a paired comparison (:class:`ropebook.analysis.ablation.Comparison`):
    the paired seeds that detect its measured difference, on the log scale its test uses
    (:func:`~ropebook.stats.power.paired_log_percent`); with one seed, at the book's
    ``measured`` s.d. for that kind of comparison if there is one."""
    if comparison.testable and not comparison.paired:
        return (
            f"{comparison.a} has {comparison.a_est.n} seeds and {comparison.b} "
            f"{comparison.b_est.n}: the same seeds on both sides would pair the comparison"
        )
    percent = getattr(comparison.difference, "scale", "linear") == "percent"
    r = power.seeds_to_decide(
        power.paired_log_percent(comparison), sd=measured.sd if measured else None
    )
    source = sd_source_text(measured) if measured else None
    return seeds_text(r, unit="%" if percent else "", sd_source=source)


def domains_to_decide(by_domain: Mapping[str, object], measured: MeasuredSd | None = None) -> str:
    """:func:`comparison_to_decide` per domain (or any label), ``"label: ...; label: ..."``."""
    return "; ".join(f"{d}: {comparison_to_decide(c, measured)}" for d, c in by_domain.items())


def trend_to_decide(trend, unit: str = "") -> str:
    """What would decide a trend over training (:class:`ropebook.analysis.dynamics.Trend`): the
    seeds whose paired untrained-vs-last change detects the measured change."""
    r = power.seeds_to_decide(trend.changes)
    return seeds_text(
        r,
        unit=unit,
        what=f"the measured {trend.statistic} change",
        samples="seeds",
        sd_name="s.d. of the change over seeds",
    )


def interval_result(estimate, threshold: float = 0.0, scale: float = 1.0) -> SeedsToDecide:
    """:func:`~ropebook.stats.power.seeds_to_decide_interval` of an ``estimate`` (anything
    with ``mean``, ``low``, ``high`` and ``n``), everything times ``scale`` (e.g. 100: points)."""
    mean, low, high = (scale * x for x in (estimate.mean, estimate.low, estimate.high))
    return power.seeds_to_decide_interval(mean, low, high, estimate.n, threshold=scale * threshold)


def interval_to_decide(
    estimate,
    threshold: float = 0.0,
    *,
    unit: str = "",
    what: str | None = None,
    samples: str = "seeds",
    scale: float = 1.0,
    one: str = "seed",
) -> str:
    """What would decide a mean against ``threshold`` when only its t-interval is kept
    (``estimate`` has ``mean``, ``low``, ``high`` and ``n``): the samples that detect its
    measured distance from the threshold (numbers times ``scale``)."""
    r = interval_result(estimate, threshold, scale)
    what = what or f"the measured distance from {scale * threshold:g}"
    return seeds_text(r, unit=unit, what=what, samples=samples, sd_name="s.d.", one=one)


def hardest(parts: Mapping[str, SeedsToDecide]) -> tuple[str, SeedsToDecide]:
    """The part that needs the most samples (one that no count decides first): a claim held
    only when every part is resolved is decided no sooner."""

    def need(item: tuple[str, SeedsToDecide]) -> tuple[float, float]:
        r = item[1]  # without a count (no s.d.), the smallest effect is the hardest to detect
        return (math.inf if r.needed is None else r.needed, -r.effect)

    return max(parts.items(), key=need)


def hardest_to_decide(
    parts: Mapping[str, SeedsToDecide], *, unit: str = "", what: str = "its measured difference",
    samples: str = "seeds", one: str = "seed",
) -> str:  # fmt: skip
    """``"hardest part, <label>: <sentence>"`` of :func:`hardest` (the sentence alone for a
    single part)."""
    label, r = hardest(parts)
    text = seeds_text(r, unit=unit, what=what, samples=samples, sd_name="s.d.", one=one)
    return text if len(parts) == 1 else f"hardest part, {label}: {text}"


def nearest_bound(mean: float, bound: float) -> float:
    """The edge of ``±bound`` nearest ``mean``: the threshold a claim of "within ±bound" (or
    "outside it") is decided against."""
    return math.copysign(bound, mean)


def profile_seeds(name: str, regime: str = "lesson") -> str:
    """The seeds each profile trains for zoo model ``name`` in ``regime``: ``"smoke 1, cpu 3,
    gpu 3"`` (what a run at another profile would bring to a single-seed claim)."""
    from ropebook import zoo  # here, not above: the zoo brings the model code with it

    return ", ".join(
        f"{p} {len(zoo.seeds_for(name, profile=p, regime=regime))}" for p in zoo.PROFILES
    )


def other_profiles(profile: str, name: str = "rope", regime: str = "lesson") -> str:
    """What the other profiles train for ``name`` in ``regime``: ``"cpu: lesson regime, 368,640
    tokens per model, 3 seeds; gpu: ..."`` (what a run there would bring)."""
    from ropebook import zoo  # here, not above: the zoo brings the model code with it

    return "; ".join(
        f"{p}: {zoo.budget(p, regime)}, {len(zoo.seeds_for(name, profile=p, regime=regime))} seeds"
        for p in zoo.PROFILES
        if p != profile
    )


def noise_to_decide(regime: str, models: Sequence[str], n_seeds: int) -> str:
    """What decides a claim about the paired s.d. itself when there is one seed: a second paired
    seed, what the profiles train, and the s.d. the book measured there (seed plan)."""
    text = (
        f"{n_seeds} seed: at least 2 paired seeds per model measure the s.d. (seeds per "
        f"profile: {profile_seeds(models[0], regime)})"
    )
    measured = measured_sd(regime, models)
    if measured:
        text += f"; the book measured {number(measured.sd, '%')} ({sd_source_text(measured)})"
    return text


# ---------------------------------------------------------------- the scorecard's open claims


def undecided_rows(records: Sequence) -> list[dict]:
    """One row per undecided finding of the chapters' records (:class:`ropebook.claims
    .ChapterRecord`): claim id (which names its chapter), verdict and what would decide it."""
    return [
        {
            "claim": c.id,  # its id names its chapter
            "verdict": c.verdict,
            "what would decide it": c.to_decide or "— (not recorded)",
        }
        for r in records
        for c in r.claims
        if c.undecided
    ]


def undecided_values(records: Sequence) -> dict[str, int]:
    """Counts for the scorecard's prose: the findings (proofs and checks are not scored), the
    undecided ones, how many of those are *cannot decide*, *uninformative here* and *not
    testable here*, and how many say what would decide them."""
    findings = [c for r in records for c in r.claims if c.finding]
    open_ = [c for c in findings if c.undecided]
    return {
        "findings": len(findings),
        "undecided": len(open_),
        "cannot_decide": sum(c.verdict == "cannot decide" for c in open_),
        "uninformative": sum(c.verdict == "uninformative here" for c in open_),
        "not_testable": sum(c.verdict == "not testable here" for c in open_),
        "with_plan": sum(bool(c.to_decide) for c in open_),
    }
