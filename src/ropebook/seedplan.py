"""Seeds chosen by power: how many seeds each p-RoPE comparison gets, and what that resolves.

``data/seed_plan.json`` records the paired standard deviations the book measured (with the build
and chapter they come from), each comparison's target minimum detectable effect (MDE), the
training time of one model per regime and the build budget. :func:`choose` turns it into seed
counts:

1. each comparison needs ``power.seeds_needed(sd, target)`` paired seeds (95 %, 80 % power);
2. comparisons are served in file order; adding a seed to a model costs its regime's seconds per
   model on each of the comparison's ``domains`` (the corpora it is measured on; Shakespeare if
   it names none), and a model already raised there for an earlier comparison costs nothing
   more;
3. a *headline* comparison (0.75-RoPE vs RoPE) gets the most seeds that fit, up to its need; any
   other gets its need only if all of it fits (a partial spend would still leave it far from its
   target), else it stays at the base seeds;
4. a comparison's ``min_seeds``, if it names any, are bought before step 2 serves anyone: a
   minimum another part of the book relies on (the noise anatomy's paired seeds), so that a
   cheaper comparison served earlier in the file cannot take them.

S.d.s and targets are in the plan's ``units`` (% of perplexity: a paired difference of two
models' perplexities) unless a comparison names its own: a claim read on one model per seed (the
least similar pair of input domains, a correlation) plans its seeds the same way, since the seeds
needed depend on s.d. / target alone.

Chapters then buy seeds of their own, once their first seeds are measured
(:func:`ropebook.analysis.ablation.seeds_to_buy`): ``chapter_minutes`` gives each such chapter
its reference minutes, set aside from the budget before the plan spends the rest
(:func:`chapter_budget`).

**Seeds follow the machine.** The budget is in minutes of the reference CPU (its lesson
benchmark's tokens/s is in the plan, timed with the library of its day; :func:`reference_speed`
is what that CPU reads with today's, so a faster training step shows as a cheaper build instead
of as a faster yardstick); a build on a machine :func:`machine_speedup` times faster
(its own ``python -m ropebook machine`` record, made by ``make book`` before the zoo trains)
spends the same wall minutes on that many more reference minutes, so a fast machine buys the
seeds that decide what the reference CPU can only bound. The speed-up is rounded down to a power
of two and is at least 1: a slower machine keeps the reference plan (and takes longer), and a
benchmark's ±10 % never moves a seed count. ``ROPEBOOK_SPEEDUP`` pins it, to reproduce a plan
made elsewhere.

:func:`seed_counts` gives ``(regime, model, domain) -> seeds`` for :func:`ropebook.zoo.seeds_for`.
Seeds are added after the profile's own (0, 1, 2, then 3, 4, ...), so existing models keep their
spec hashes and a partial zoo still serves every chapter. Nothing here trains or reads a model.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ropebook import REPO_ROOT, buildrecord
from ropebook.data import DOMAINS  # a comparison's corpora: its models train on each
from ropebook.stats import power

PLAN_PATH = REPO_ROOT / "data" / "seed_plan.json"
SPEEDUP_ENV = "ROPEBOOK_SPEEDUP"
PERPLEXITY_PERCENT = "% of perplexity"  # the units of a paired difference of perplexities


@dataclass(frozen=True)
class Choice:
    """One comparison's seed count and what it resolves (s.d.s and MDEs in ``units``)."""

    id: str
    regime: str
    models: tuple[str, ...]
    domains: tuple[str, ...]
    sd: float  # the planning s.d. (what the book measured; its source says where)
    sd_range: tuple[float, float]
    source: str
    target: float
    needed: int
    trained: int
    added_seconds: float  # training time this comparison added (beyond earlier ones)
    min_seeds: int = 0  # bought before any comparison is served (step 4 above)
    units: str = "% of perplexity"  # of ``sd``, ``sd_range`` and ``target``

    @property
    def mde(self) -> float:
        """MDE at the trained seed count, at the planning s.d."""
        return power.min_detectable_effect(self.sd, self.trained)

    @property
    def met(self) -> bool:
        return self.trained >= self.needed


@functools.cache
def load_plan(path: Path | str = PLAN_PATH) -> dict:
    """The seed plan (checked: every comparison names a regime with a cost and base seeds)."""
    plan = json.loads(Path(path).read_text())
    for c in plan["comparisons"]:
        for table in ("seconds_per_model", "base_seeds"):
            if c["regime"] not in plan[table]:
                raise ValueError(f"seed plan {path}: {table} lacks regime {c['regime']!r}")
        domains = c.get("domains", DOMAINS[:1])
        if not domains or not set(domains) <= set(DOMAINS):
            raise ValueError(f"seed plan {path}: comparison {c['id']!r}: domains from {DOMAINS}")
        if not (c["sd"] > 0 and c["target_mde"] > 0):
            raise ValueError(f"seed plan {path}: comparison {c['id']!r} needs s.d. and target > 0")
    return plan


def units_of(comparison: Mapping, plan: Mapping) -> str:
    """The units of a comparison's s.d. and target: its own, else the plan's, else % of
    perplexity."""
    return comparison.get("units", plan.get("units", PERPLEXITY_PERCENT))


def _room(plan: Mapping, speedup: int) -> tuple[float, float]:
    """``(room, chapters)`` in reference minutes on a machine ``speedup`` times the reference:
    what the budget leaves after today's build and every reservation (``speedup × build_minutes -
    build_minutes_measured - Σ reserved``), and what the chapters' purchases ask of it
    (``speedup × Σ chapter_minutes``)."""
    b = plan["budget"]
    spent = b["build_minutes_measured"] + sum(b["reserved_minutes"].values())
    return speedup * b["build_minutes"] - spent, speedup * sum(
        plan.get("chapter_minutes", {}).values()
    )


def chapters_share(plan: Mapping, speedup: int = 1) -> float:
    """The share of their ``chapter_minutes`` the chapters get: all of it where the budget has
    the room, else what room there is, split in proportion (0 when none is left)."""
    room, chapters = _room(plan, speedup)
    return float(min(1.0, max(0.0, room / chapters))) if chapters > 0 else 0.0


def spare_seconds(plan: Mapping, speedup: int = 1) -> float:
    """Training time the budget leaves for the plan's added seeds, in reference seconds, on a
    machine ``speedup`` times the reference: the budget's reference minutes that machine runs in
    the budget's wall time, less today's build, every reservation and the chapters' own
    purchases (:func:`chapter_budget`, served first)."""
    room, chapters = _room(plan, speedup)
    return 60.0 * (room - chapters * chapters_share(plan, speedup))


@dataclass(frozen=True)
class ChapterBudget:
    """What a chapter may spend on seeds it buys by power: ``seconds`` of training (reference
    seconds, this machine's speed-up included) at ``seconds_per_model`` reference seconds each."""

    seconds: float
    seconds_per_model: float
    source: str  # for the page


def chapter_budget(
    chapter: str, regime: str, profile: str, plan: Mapping | None = None
) -> ChapterBudget:
    """``chapter``'s budget for ``regime`` models in a ``profile`` build: its ``chapter_minutes``
    in the plan times :func:`machine_speedup` and :func:`chapters_share`, a model costing the
    plan's ``chapter_seconds_per_model`` (trained inside a chapter). Nothing for a chapter the
    plan lists no minutes for, or a profile the plan was not measured on."""
    plan = plan or load_plan()
    minutes = plan.get("chapter_minutes", {}).get(chapter, 0.0)
    per_model = float(plan.get("chapter_seconds_per_model", {}).get(regime, math.inf))
    if profile != plan["profile"] or not minutes:
        return ChapterBudget(0.0, per_model, f"none (no {profile} minutes for {chapter})")
    speedup = machine_speedup(plan)
    share = chapters_share(plan, speedup.factor)
    shared = f" × {share:.2f}, the share the build budget has room for" if share < 1 else ""
    return ChapterBudget(
        60.0 * minutes * speedup.factor * share, per_model,
        f"{minutes:g} reference minutes × {speedup.factor} for this machine's speed-up "
        f"[{speedup.source}]{shared}",
    )  # fmt: skip


def reference_speed(plan: Mapping) -> float:
    """The reference CPU's lesson benchmark with today's library, in tokens/s: the plan's
    ``reference_tokens_per_second`` (timed with the library of that day) times
    ``library_speedup.factor``, today's training step against that library's timed on one CPU
    (1 if the plan records none). Wall time here × this machine's benchmark / this speed gives
    reference minutes."""
    budget = plan["budget"]
    factor = float(budget.get("library_speedup", {}).get("factor", 1.0))
    if not factor > 0:
        raise ValueError(f"seed plan: library_speedup.factor must be positive, got {factor}")
    return float(budget["reference_tokens_per_second"]) * factor


def reference_speed_text(plan: Mapping) -> str:
    """Where :func:`reference_speed` comes from, for the page."""
    budget, speed = plan["budget"], reference_speed(plan)
    library = budget.get("library_speedup")
    if not library:
        return f"{speed:,.0f} tokens/s"
    return (
        f"{speed:,.0f} tokens/s with today's training step: "
        f"{budget['reference_tokens_per_second']:,} with the step of commit {library['since']}, "
        f"× {library['factor']:g} ({library['how']})"
    )


@dataclass(frozen=True)
class Speedup:
    """How many reference minutes one minute of this machine is worth when buying seeds."""

    factor: int  # a power of two, at least 1
    source: str  # where it comes from, for the page


def speedup_of(tokens_per_second: float, reference: float) -> int:
    """A machine's speed over the reference, rounded down to a power of two, at least 1."""
    if not (tokens_per_second > 0 and reference > 0):
        raise ValueError(f"speeds must be positive, got {tokens_per_second} and {reference}")
    ratio = tokens_per_second / reference
    return 1 if ratio < 2 else 2 ** math.floor(math.log2(ratio))


def machine_speedup(plan: Mapping | None = None, record: Mapping | None = None) -> Speedup:
    """This machine's :class:`Speedup` for ``plan``: ``ROPEBOOK_SPEEDUP`` if set, else from the
    machine ``record`` (default: this build's, ``buildrecord.read("machine")``) when it timed
    the plan's profile, else 1."""
    plan = plan or load_plan()
    if pinned := os.environ.get(SPEEDUP_ENV, "").strip():
        factor = int(pinned) if pinned.isdigit() else 0
        if factor < 1 or factor & (factor - 1):
            raise ValueError(f"{SPEEDUP_ENV}={pinned!r}: a power of two ≥ 1 (1, 2, 4, …) expected")
        return Speedup(factor, f"pinned by {SPEEDUP_ENV}")
    record = buildrecord.read("machine") if record is None else record
    benchmark = (record or {}).get("benchmark", {})
    if benchmark.get("profile") != plan["profile"]:
        return Speedup(1, f"the reference's (no {plan['profile']}-profile machine record)")
    reference = reference_speed(plan)
    measured = benchmark["tokens_per_second"]
    factor = speedup_of(measured, reference)
    return Speedup(
        factor,
        f"this machine's lesson benchmark, {measured:,.0f} against {reference:,.0f} tokens/s",
    )


def choose(plan: Mapping, budget_seconds: float | None = None) -> list[Choice]:
    """Seed count of every comparison of ``plan`` (rules in the module docstring); the budget
    defaults to :func:`spare_seconds`."""
    left = spare_seconds(plan) if budget_seconds is None else float(budget_seconds)
    confidence, pw = plan["confidence"], plan["power"]
    counts: dict[tuple[str, str, str], int] = {}  # (regime, model, domain) -> seeds so far

    def domains(c: Mapping) -> tuple[str, ...]:
        return tuple(c.get("domains", DOMAINS[:1]))

    def have(c: Mapping) -> dict[tuple[str, str, str], int]:
        base = plan["base_seeds"][c["regime"]]
        keys = [(c["regime"], m, d) for m in c["models"] for d in domains(c)]
        return {key: counts.get(key, base) for key in keys}

    def cost(c: Mapping, n: int) -> float:
        seconds = plan["seconds_per_model"][c["regime"]]
        return seconds * sum(max(0, n - k) for k in have(c).values())

    def raise_to(c: Mapping, n: int) -> None:
        counts.update({key: max(k, n) for key, k in have(c).items()})

    floors = {}  # a comparison's min_seeds come before any other's seeds (the minimum)
    for c in plan["comparisons"]:
        floors[c["id"]] = cost(c, c.get("min_seeds", 0))
        left -= floors[c["id"]]
        raise_to(c, c.get("min_seeds", 0))
    choices = []
    for c in plan["comparisons"]:
        sd, target = c["sd"], c["target_mde"]
        needed = power.seeds_needed(sd, target, confidence=confidence, power=pw)
        now = min(have(c).values())
        affordable = [n for n in range(now, max(needed, now) + 1) if cost(c, n) <= max(left, 0)]
        n = affordable[-1] if c["headline"] else (needed if needed in affordable else now)
        spent = cost(c, n)
        left -= spent
        raise_to(c, n)
        choices.append(
            Choice(
                id=c["id"],
                regime=c["regime"],
                models=tuple(c["models"]),
                domains=domains(c),
                sd=sd,
                sd_range=tuple(c["sd_range"]),
                source=c["source"],
                target=target,
                needed=needed,
                trained=n,
                added_seconds=floors[c["id"]] + spent,
                min_seeds=c.get("min_seeds", 0),
                units=units_of(c, plan),
            )  # fmt: skip
        )
    return choices


def expected_open(choices: list[Choice], confidence: float = 0.95) -> float:
    """How many of the planned comparisons a build should expect to leave open: each one whose
    true effect is its target is decided with the power of a paired t-test on its trained seeds
    at its planning s.d., so it stays open with probability 1 − that power (a comparison with
    fewer than 2 seeds always does). A target count of open verdicts is this expectation, not a
    bound every build meets."""
    return sum(
        1 - power.t_test_power(c.target / c.sd, c.trained, confidence) if c.trained >= 2 else 1
        for c in choices
    )


def seed_counts(choices: list[Choice]) -> dict[tuple[str, str, str], int]:
    """``(regime, model, domain) -> seeds`` the zoo trains for the planned comparisons."""
    counts: dict[tuple[str, str, str], int] = {}
    for c in choices:
        for key in ((c.regime, m, d) for m in c.models for d in c.domains):
            counts[key] = max(counts.get(key, 0), c.trained)
    return counts


def extend_seeds(seeds: tuple[int, ...], n: int) -> tuple[int, ...]:
    """The first ``n`` seeds: ``seeds`` in order, then the next integers after their largest."""
    extra = range(max(seeds) + 1, max(seeds) + 1 + max(0, n - len(seeds)))
    return (*seeds[:n], *extra)


@functools.cache
def planned_counts(profile: str) -> dict[tuple[str, str, str], int]:
    """The plan's counts for ``profile`` on this machine (:func:`machine_speedup`; empty for a
    profile the plan was not measured on)."""
    plan = load_plan()
    if profile != plan["profile"]:
        return {}
    return seed_counts(choose(plan, spare_seconds(plan, machine_speedup(plan).factor)))


@dataclass(frozen=True)
class MeasuredSd:
    """A paired s.d. (% of perplexity) the book measured, from the seed plan: ``comparison`` is
    the plan's id; ``exact`` when it is the s.d. of the very same models, else the largest the
    plan records for the regime (what the plan itself plans with)."""

    sd: float
    comparison: str
    exact: bool


def measured_sd(regime: str, models, plan: Mapping | None = None) -> MeasuredSd | None:
    """The paired s.d. the book measured for comparing ``models`` in ``regime`` (the plan's entry
    for the same pair, else the largest in the regime; entries in other units than % of
    perplexity are left out); ``None`` for a regime the plan lacks."""
    plan = plan or load_plan()
    entries = [
        c for c in plan["comparisons"]
        if c["regime"] == regime and units_of(c, plan) == PERPLEXITY_PERCENT
    ]  # fmt: skip
    if not entries:
        return None
    same = [c for c in entries if set(c["models"]) == set(models)]
    chosen = same[0] if same else max(entries, key=lambda c: c["sd"])
    return MeasuredSd(float(chosen["sd"]), chosen["id"], bool(same))
