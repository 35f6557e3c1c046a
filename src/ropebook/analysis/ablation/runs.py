"""Trained runs over seeds: loading them, length extrapolation, and paired noise over training.

- :func:`load_runs`: the zoo models of every variant, domain and seed; :func:`table2_runs`, the
  lesson-regime runs both p-RoPE chapters read (Table 2 on :data:`DOMAINS`, the :data:`SWEEP`);
- :func:`held_out_losses`: each model's loss on the same held-out windows, for splitting a paired
  comparison's noise (:mod:`ropebook.stats.noise`);
- :func:`extrapolation_curve`, :func:`binned_ppl`: loss by position at several times the
  training context, from one long window per sample (a causal model's loss at position ``t``
  does not depend on the tokens after ``t``, so the first ``L`` positions of a long window *are* a
  window of length ``L``);
- :func:`comparisons_over_training`, :func:`training_noise`: the paired comparison of two models
  at every recorded validation step, and how its seed noise moves with tokens seen.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import jax
import numpy as np

from ropebook.analysis.ablation.seeds import (
    Comparison,
    Estimate,
    combine_verdicts,
    compare,
    estimate,
    paired_sd_percent,
    seed_table,
    shared_seeds,
    worst_rival,
)
from ropebook.stats.power import sd_interval, seeds_needed

# ---------------------------------------------------------------- the runs


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


# Our corpus -> the column of the paper's Table 2 it stands beside (prose: Wiki, code: FlanV2).
DOMAINS: dict[str, str] = {"shakespeare": "Wiki", "python": "FlanV2"}
# Barbero et al. 2025, Table 2 (Gemma 2B, validation perplexity), quoted: column -> zoo model ->
# perplexity, in zoo.TABLE2's order (tests/test_ablation.py checks the names against it).
PAPER_TABLE2: dict[str, dict[str, float]] = {
    column: dict(zip(
        ("nope", "rope", "rope-500k", "rope-reversed-0.75", "rope-partial-0.75", "p-rope-0.25",
         "p-rope-0.75"), values, strict=True,
    ))
    for column, values in {
        "Wiki": (4.8594, 4.4627, 4.4485, 4.4592, 4.4537, 4.5302, 4.4414),
        "FlanV2": (6.6429, 6.4429, 6.4593, 6.4683, 6.4562, 6.5111, 6.4422),
    }.items()
}  # fmt: skip
# The paper's orderings of Table 2, tested seed by seed: (its better encoding, its worse rival,
# the claim's id), the last the sanity check RoPE over NoPE.
PAIRS: tuple[tuple[str, str, str], ...] = (
    ("p-rope-0.75", "rope", "p075_vs_rope"),
    ("p-rope-0.75", "rope-500k", "p075_vs_500k"),
    ("p-rope-0.75", "rope-reversed-0.75", "reversed_vs_p"),
    ("p-rope-0.75", "rope-partial-0.75", "partial_vs_p"),
    ("p-rope-0.75", "p-rope-0.25", "p075_vs_p025"),
    ("p-rope-0.25", "nope", "p025_vs_nope"),
    ("rope", "nope", "rope_vs_nope"),
)
# The p sweep on Shakespeare, p -> zoo model: from NoPE (p = 0, nothing rotates) to RoPE (p = 1).
SWEEP: dict[float, str] = {
    0.0: "nope", 0.25: "p-rope-0.25", 0.5: "p-rope-0.5", 0.75: "p-rope-0.75", 1.0: "rope"
}  # fmt: skip


def table2_runs(profile: str) -> dict[tuple[str, str], list]:
    """The lesson-regime runs of the p-RoPE chapters: the seven Table 2 encodings on both corpora
    of :data:`DOMAINS`, then the :data:`SWEEP` models on Shakespeare (:func:`load_runs`)."""
    from ropebook import zoo

    sweep = [(name, "shakespeare") for name in SWEEP.values()]
    return load_runs(zoo.TABLE2, list(DOMAINS), profile=profile, extra=sweep)


def shared_runs(runs_a: Sequence, runs_b: Sequence) -> tuple[list, list]:
    """The runs of two models on the seeds both have, in seed order. A paired comparison pairs on
    these: one model may have more seeds, chosen by power for another comparison (seedplan)."""
    by_seed = {m.seed: m for m in runs_b}
    shared = [m for m in runs_a if m.seed in by_seed]
    return shared, [by_seed[m.seed] for m in shared]


def compare_models(
    label_a: str, runs_a: Sequence, label_b: str, runs_b: Sequence, confidence: float = 0.95
) -> Comparison:
    """:func:`~ropebook.analysis.ablation.seeds.compare` of two models' validation perplexities
    on the seeds both have (:func:`shared_runs`), on the log scale (a paired % of perplexity)."""
    a, b = shared_runs(runs_a, runs_b)
    return compare(
        label_a, [m.val_ppl for m in a], label_b, [m.val_ppl for m in b], confidence, log=True
    )


def seed_tables(
    runs: Mapping[tuple[str, str], Sequence], names: Sequence[str], confidence: float = 0.95
) -> dict[str, dict[str, Estimate]]:
    """Per corpus of :data:`DOMAINS`, each of ``names``' validation perplexity over its seeds
    (the interval formed on the loss, then exponentiated)."""
    return {
        d: seed_table({n: [m.val_ppl for m in runs[n, d]] for n in names}, confidence, log=True)
        for d in DOMAINS
    }


def pair_comparisons(
    runs: Mapping[tuple[str, str], Sequence],
    labels: Mapping[str, str],
    confidence: float = 0.95,
    pairs: Sequence[tuple[str, str, str]] = PAIRS,
) -> dict[tuple[str, str, str], Comparison]:
    """``{(better, worse, domain): Comparison}`` of every pair of :data:`PAIRS` on every corpus,
    paired on the seeds both have (:func:`compare_models`)."""
    return {
        (b, w, d): compare_models(labels[b], runs[b, d], labels[w], runs[w, d], confidence)
        for b, w, _ in pairs
        for d in DOMAINS
    }


def nope_against_worst(
    runs: Mapping[tuple[str, str], Sequence],
    tables: Mapping[str, Mapping[str, Estimate]],
    labels: Mapping[str, str],
    confidence: float = 0.95,
) -> dict[str, Comparison]:
    """Per corpus, NoPE against the worst of the other encodings of ``tables`` (if NoPE is not
    last, that rival beats it), paired on their shared seeds."""
    out = {}
    for d in DOMAINS:
        rival = worst_rival(tables[d], "nope")
        out[d] = compare_models(
            labels["nope"], runs["nope", d], labels[rival], runs[rival, d], confidence
        )
    return out


def nope_worst_verdict(
    runs: Mapping[tuple[str, str], Sequence],
    tables: Mapping[str, Mapping[str, Estimate]],
    labels: Mapping[str, str],
    confidence: float = 0.95,
) -> str:
    """ "NoPE has the highest perplexity of them all", an intersection of claims: per corpus,
    NoPE against *each* other encoding of ``tables`` (paired on their shared seeds), ``held``
    only if every rival is established below it, ``not held`` if one is established above it,
    else ``cannot decide`` (an open rival leaves the whole open: beating the closest rival alone
    would not show it, nor would picking the rival by its observed mean); the corpora combined
    by :func:`~ropebook.analysis.ablation.seeds.combine_verdicts`."""
    per_domain = []
    for d in DOMAINS:
        verdicts = [
            compare_models(labels["nope"], runs["nope", d], labels[r], runs[r, d], confidence)
            .verdict(labels[r])
            for r in tables[d] if r != "nope"
        ]  # fmt: skip
        per_domain.append(
            "not held" if "not held" in verdicts
            else "held" if all(v == "held" for v in verdicts) else "cannot decide"
        )  # fmt: skip
    return combine_verdicts(per_domain)


def extend_runs(
    runs: Mapping[tuple[str, str], Sequence],
    wanted: Mapping[tuple[str, str], int],
    *,
    profile: str,
    regime: str = "lesson",
) -> dict[tuple[str, str], list]:
    """``runs`` with each ``(name, domain)`` of ``wanted`` grown to that many seeds, the next
    integers after its own (:func:`ropebook.seedplan.extend_seeds`), loaded or trained now (the
    seeds of one model together where :func:`ropebook.train.seed_batching` says so)."""
    from ropebook import seedplan, zoo

    out = {key: list(these) for key, these in runs.items()}
    for (name, domain), n in wanted.items():
        have = tuple(m.seed for m in out[name, domain])
        added = seedplan.extend_seeds(have, n)[len(have) :]
        out[name, domain] += zoo.load_seeds(
            name, added, profile=profile, domain=domain, regime=regime
        )
    return out


def held_out_losses(
    runs: Sequence, tokens: np.ndarray, *, n_windows: int, seed: int = 1
) -> dict[int, np.ndarray]:
    """``{model seed: loss on each of n_windows held-out windows [n_windows]}`` for zoo models of
    one encoding, each window as long as the training context. The windows depend on ``seed`` only,
    so every model is scored on the same text and differences between encodings are paired
    (:func:`ropebook.stats.noise.paired_differences`, then :func:`ropebook.stats.noise.split`)."""
    from ropebook import evaluation

    batch = math.gcd(n_windows, 64)  # whole batches of at most 64 windows
    return {
        m.seed: evaluation.window_losses(
            m.params, m.config, tokens, seq_len=m.config.context, batch_size=batch,
            n_batches=n_windows // batch, seed=seed,
        )
        for m in runs
    }  # fmt: skip


def tokens_seen(models: Mapping[tuple[str, str], Sequence]) -> list[int]:
    """The distinct numbers of training tokens the models saw (one, if trained identically)."""
    return sorted({m.tokens_seen for runs in models.values() for m in runs})


def n_parameters(params) -> int:
    """Number of scalars in a parameter tree."""
    return sum(int(np.size(leaf)) for leaf in jax.tree.leaves(params))


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
    from ropebook import evaluation

    losses = evaluation.loss_by_position(
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


def compare_curves(
    a: str,
    a_curves: Sequence[ExtrapolationCurve],
    b: str,
    b_curves: Sequence[ExtrapolationCurve],
    factor: float,
    confidence: float = 0.95,
) -> Comparison:
    """:func:`compare` of the perplexities at ``factor × context`` (one curve per seed, in seed
    order), paired on the seeds both have (:func:`shared_seeds`)."""
    ppl = shared_seeds({side: [c.ppl_at(factor) for c in curves]
                        for side, curves in (("a", a_curves), ("b", b_curves))})  # fmt: skip
    return compare(a, ppl["a"], b, ppl["b"], confidence, log=True)


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


# ---------------------------------------------------------------- paired noise over training


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


@dataclass(frozen=True)
class TrainingNoise:
    """One comparison's paired noise over training (:func:`training_noise`); s.d.s and effects are
    in % of perplexity.

    ``tokens``, ``last``: the last validation step and its :class:`Comparison`; ``sd`` with its
    interval ``sd_low``–``sd_high``: the s.d. of the paired difference there; ``earlier_sd``: the
    same for the earlier run of the comparison; ``late_from``: the first step of the second half
    of training (in log tokens), over which the s.d. ranges ``late_min``–``late_max`` with
    Spearman ``rho`` against tokens, read as ``trend``; ``detectable``: the smallest effect the
    seeds detect at the last step; ``seeds_needed``: the paired seeds the effect the seed count
    is sized for would need at that noise."""

    tokens: int
    last: Comparison
    sd: float
    sd_low: float
    sd_high: float
    earlier_sd: float
    late_from: int
    late_min: float
    late_max: float
    rho: float
    trend: str
    detectable: float
    seeds_needed: int


def training_noise(
    by_tokens: Mapping[int, Comparison],
    earlier: Comparison,
    effect_percent: float,
    confidence: float = 0.95,
    power: float = 0.8,
) -> TrainingNoise | None:
    """:class:`TrainingNoise` of one comparison over training (``by_tokens`` from
    :func:`comparisons_over_training`) against an ``earlier`` run of the same comparison (the
    matched regime); ``effect_percent`` is the effect the seed count is sized for (a log-ratio in
    %: the paper's gap, or the smallest effect the build aims to detect). ``None`` with one seed
    per model (no paired noise to follow)."""
    from scipy import stats

    last_tokens, last = max(by_tokens.items())
    sd = paired_sd_percent(last)
    if not np.isfinite(sd):
        return None
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
    return TrainingNoise(
        tokens=last_tokens,
        last=last,
        sd=sd,
        sd_low=low,
        sd_high=high,
        earlier_sd=paired_sd_percent(earlier),
        late_from=min(late),
        late_min=min(late.values()),
        late_max=max(late.values()),
        rho=rho,
        trend=trend,
        detectable=last.min_detectable(confidence, power),
        seeds_needed=seeds_needed(sd, effect_percent, confidence=confidence, power=power),
    )
