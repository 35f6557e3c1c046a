"""Tables of a paired comparison's noise: its split into training and evaluation noise
(``ropebook.stats.noise``) and its anatomy over seeds and the last evaluations of each run
(``ropebook.stats.anatomy``), with what is missing where a profile cannot measure a part."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ropebook import claims
from ropebook.stats import power
from ropebook.stats.anatomy import (
    Anatomy,
    Estimate,
    anatomy,
    correlation_estimate,
    pairing_gain_estimate,
    sd_estimate,
)
from ropebook.stats.noise import NEGLIGIBLE, NoiseSplit

MIN_SEEDS = 3  # ropebook.stats.anatomy's least: an s.d. and a bootstrap over seeds


def dash(value: float | int | None, digits: int = 3) -> str:
    if value is None or value != value:  # None or nan: not measured with one seed
        return "—"
    return f"{value:,}" if isinstance(value, int) else f"{value:.{digits}f}"


def noise_rows(
    splits: Mapping[tuple[str, str], NoiseSplit], table_windows: Mapping[str, int], context: int
) -> list[dict]:
    """One row per ``(regime, comparison)``: seeds, paired difference, training noise, evaluation
    noise on the windows measured here and on the validation windows of the zoo's own tables
    (``table_windows[regime]``), and the windows that would make evaluation noise negligible."""
    rows = []
    for (regime, comparison), s in splits.items():
        needed = s.windows_needed()
        rows.append({
            "regime": regime,
            "comparison": comparison,
            "seeds": s.n_seeds,
            "Δ %": dash(s.mean),
            "train s.d. %": dash(s.seed_sd),
            f"eval s.d. %, {s.n_windows} win.": dash(s.eval_sd),
            "eval s.d. %, table": dash(s.eval_sd_at(table_windows[regime])),
            "eval/train var.": dash(s.eval_share),
            f"win. for ≤ {NEGLIGIBLE:.0%}": dash(needed),
            "tokens": dash(None if needed is None else needed * (context + 1)),
        })  # fmt: skip
    return rows


# ---------------------------------------------------------------- the anatomy of the noise


def tail_losses(runs: Sequence) -> np.ndarray | None:
    """``[seeds, evaluations]`` validation losses (nats) of zoo models at their tail evaluations
    (``history["tail"]``: :func:`ropebook.train.tail_eval_steps`, the last on the final
    weights), or ``None`` unless every run recorded at least two, at the same steps."""
    tails = [m.history.get("tail", []) for m in runs]
    steps = {tuple(row["step"] for row in tail) for tail in tails}
    if len(steps) != 1 or len(next(iter(steps))) < 2:
        return None
    return np.array([[row["loss"] for row in tail] for tail in tails])


def _without_jitter(final_a: np.ndarray, final_b: np.ndarray, confidence: float) -> Anatomy:
    """:func:`ropebook.stats.anatomy.anatomy` from each run's final loss alone (nats): every part
    but the within-run jitter, which is ``nan``."""
    a, b, n = 100 * final_a, 100 * final_b, len(final_a)
    return Anatomy(
        n_seeds=n,
        n_evals=1,
        jitter=Estimate(math.nan, math.nan, math.nan, "chi-square"),
        seed_sd_a=sd_estimate(float(np.std(a, ddof=1)), n - 1, confidence),
        seed_sd_b=sd_estimate(float(np.std(b, ddof=1)), n - 1, confidence),
        correlation=correlation_estimate(a, b, confidence),
        paired_sd=sd_estimate(float(np.std(a - b, ddof=1)), n - 1, confidence),
        pairing_gain=pairing_gain_estimate(a, b, confidence),
        split=None,
    )


def measure_anatomy(
    runs_a: Sequence, runs_b: Sequence, confidence: float = 0.95
) -> tuple[Anatomy | None, str]:
    """The anatomy of a paired comparison of zoo models (seed ``s`` of both arms in row ``s``)
    and what it lacks (``""`` if nothing): with fewer than :data:`MIN_SEEDS` paired seeds
    nothing is measured; runs without tail evaluations (trained before they were recorded)
    give every part but the within-run jitter, from their final losses."""
    n = len(runs_a)
    if len(runs_b) != n:
        raise ValueError(f"need the same seeds on both arms, got {n} and {len(runs_b)} runs")
    if n < MIN_SEEDS:
        return None, (
            f"{n} paired seed{'s' if n != 1 else ''}: the anatomy needs at least {MIN_SEEDS}"
        )
    tails = tail_losses(runs_a), tail_losses(runs_b)
    if tails[0] is not None and tails[1] is not None and tails[0].shape == tails[1].shape:
        return anatomy(*tails, confidence=confidence), ""
    finals = [np.array([m.history["val"][-1]["loss"] for m in runs]) for runs in (runs_a, runs_b)]
    missing = (
        "within-run jitter: these models were trained before training recorded its tail "
        "evaluations; retrained, they will have them"
    )
    return _without_jitter(*finals, confidence), missing


def number_text(x: float) -> str:
    """Two decimals, or none from 100 up (a bootstrap's upper end over few seeds runs far)."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}"


def interval_text(e: Estimate, unit: str) -> str:
    if not math.isfinite(e.low):
        return "—"
    return f"{number_text(e.low)}{unit} – {number_text(e.high)}{unit}"


def anatomy_rows(
    result: Anatomy | None, missing: str, names: tuple[str, str], confidence: float = 0.95
) -> list[dict]:
    """One row per part of the noise (``names``: the two arms, a − b): value, interval, how the
    interval was made and what it rests on; a part not measured says what is missing."""
    a, b = names
    parts = [
        ("jitter", "within-run jitter (s.d. over a run's last evaluations)", " %"),
        ("seed_sd_a", f"between-seed s.d., {a}", " %"),
        ("seed_sd_b", f"between-seed s.d., {b}", " %"),
        ("correlation", f"correlation of {a} and {b} across seeds", ""),
        ("paired_sd", f"paired s.d. ({a} − {b})", " %"),
        ("pairing_gain", "pairing gain (var a + var b) / var(a − b)", "×"),
    ]
    rows = []
    for field, label, unit in parts:
        e = None if result is None else getattr(result, field)
        if e is None or not math.isfinite(e.value):
            rows.append({
                "part": label, "value": "—", f"{confidence:.0%} interval": "—",
                "method": "—", "rests on": f"not measured: {missing or 'too few seeds'}",
            })  # fmt: skip
            continue
        basis = f"{result.n_seeds} seeds"
        if field == "jitter":
            basis += f" × {result.n_evals} evaluations"
        rows.append({
            "part": label, "value": f"{number_text(e.value)}{unit}",
            f"{confidence:.0%} interval": interval_text(e, unit), "method": e.method,
            "rests on": basis if e.df is None else f"{basis}, {e.df} d.f.",
        })  # fmt: skip
    return rows


def anatomy_values(result: Anatomy | None) -> dict[str, str]:
    """The anatomy's numbers for prose: ``"0.42 % [0.30, 0.71]"`` per part, ``—`` where not
    measured, and the jitter's share of the between-seed variance."""

    def text(e: Estimate | None, unit: str) -> str:
        if e is None or not math.isfinite(e.value):
            return "—"
        interval = f" [{number_text(e.low)}, {number_text(e.high)}]" if math.isfinite(e.low) else ""
        return f"{number_text(e.value)}{unit}{interval}"

    fields = {"jitter": " %", "seed_sd_a": " %", "seed_sd_b": " %", "correlation": "",
              "paired_sd": " %", "pairing_gain": "×"}  # fmt: skip
    values = {f: text(None if result is None else getattr(result, f), u) for f, u in fields.items()}
    share = math.nan if result is None else result.jitter_share
    values["jitter_share"] = f"{share:.2g}" if math.isfinite(share) else "—"
    values["seeds"] = "—" if result is None else str(result.n_seeds)
    values["evals"] = "—" if result is None or result.n_evals < 2 else str(result.n_evals)
    return values


# ---------------------------------------------------------------- verdicts on the noise
# A noise target ("the paired s.d. is at most 1 %", "evaluation variance is at most a tenth of
# training variance") is judged on the interval of the s.d. or the share, never on its point
# estimate: ``held`` when the whole interval meets the target, ``not held`` when none of it does,
# ``cannot decide`` between. A target is a one-sided bound, not a null, so the chapters pass no
# margin (``bounded`` would say only "near the target"); the rules take one for completeness.


def sd_target(
    sd: float, n: int, target: float = 1.0, confidence: float = 0.95, margin: float | None = None
) -> tuple[str, tuple[float, float]]:
    """The verdict on "the s.d. is at most ``target``" from a sample s.d. of ``n`` values (its
    chi-square interval, :func:`ropebook.stats.power.sd_interval`), and that interval;
    without two values (no s.d.), :func:`ropebook.claims.too_few_runs`."""
    if n < 2:
        return claims.too_few_runs(n), (math.nan, math.nan)
    if not math.isfinite(sd):
        return "not testable here", (math.nan, math.nan)
    low, high = power.sd_interval(sd, n, confidence)
    verdict = claims.verdict_from_interval(low, high, threshold=target, above=False, margin=margin)
    return verdict, (low, high)


def estimate_target(e: Estimate, target: float = 1.0, margin: float | None = None) -> str:
    """:func:`sd_target`'s rule on an interval already formed (an ``anatomy`` estimate)."""
    if not (math.isfinite(e.low) and math.isfinite(e.high)):
        return "not testable here"
    return claims.verdict_from_interval(e.low, e.high, threshold=target, above=False, margin=margin)


def eval_share_interval(split: NoiseSplit, confidence: float = 0.95) -> tuple[float, float]:
    """An interval for the evaluation variance's share of the training variance: the training
    s.d.'s chi-square interval over the seeds (the evaluation s.d., from seeds × windows, is
    taken as known: its degrees of freedom are hundreds of times the seeds')."""
    if split.n_seeds < 2 or not split.seed_sd > 0:
        return math.nan, math.nan
    low, high = power.sd_interval(split.seed_sd, split.n_seeds, confidence)
    return split.eval_sd**2 / high**2, split.eval_sd**2 / low**2


def eval_noise_verdict(
    split: NoiseSplit, confidence: float = 0.95, margin: float | None = None
) -> str:
    """The verdict on "evaluation noise is negligible" (share at most
    :data:`ropebook.stats.noise.NEGLIGIBLE`) from :func:`eval_share_interval`; ``cannot
    decide`` with one seed (:func:`ropebook.claims.too_few_runs`)."""
    if split.n_seeds < 2:
        return claims.too_few_runs(split.n_seeds)
    low, high = eval_share_interval(split, confidence)
    if not math.isfinite(low):  # no training noise to compare with
        return "not testable here"
    return claims.verdict_from_interval(low, high, threshold=NEGLIGIBLE, above=False, margin=margin)
