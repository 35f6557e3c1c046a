"""Training-recipe candidates for the language regimes, measured on paired seeds.

The book's headline comparison (0.75-RoPE against RoPE in the matched regime) is limited by seed
noise. Two levers aim at the last iterate's jitter, each measured elsewhere on larger models: **tail
weight averaging** (the uniform mean of the params after each of the last :data:`AVERAGE_SHARE` of
steps, evaluated as one model; Kaddour 2022, Sanyal et al. 2023) and **the learning rate decayed to
zero** instead of to 10 % of its peak (Bergsma et al. 2025); and both (Ajroldi, Orvieto & Geiping
2025). Where runs instead end apart (the seeds' s.d. far above a run's jitter), two levers aim at
that divergence: **half the peak learning rate**, and **twice the batch in half the steps** (the
same tokens; its evaluation scores twice as many windows, as evaluation uses the training batch
size). More tokens per model, the lever that spends compute, is the flagship regime's, whose paired
noise over training the methods chapter shows. Every run keeps the average in its optimiser
state (:func:`ropebook.train.tail_average`; the weights trained are unchanged), so one run per
schedule gives two recipes:

======================  ====================  =================
recipe                  schedule              model evaluated
======================  ====================  =================
today                   cosine to 10 %        last iterate
tail average            cosine to 10 %        tail average
LR to zero              cosine to 0           last iterate
both                    cosine to 0           tail average
half the peak LR        half the peak LR      last iterate
twice the batch         twice the batch       last iterate
======================  ====================  =================

The best of several candidates looks better than it is, so the study has two stages: every
schedule on the *discovery* seeds (0, 1, …), then today's and one candidate, named before the
fact, on *fresh* seeds that follow them (:func:`compare` with ``seeds=``, :func:`confirmation`).

:func:`measure` trains them (from the zoo's cache where present) and records, per run, the spec
hash, the final and tail validation losses of the last iterate, the average's loss and where it
ran; :func:`write` keeps that in a results file with the command that reproduces it
(``python -m ropebook recipes``), so a chapter shows a comparison too costly for every build with
its provenance (:mod:`ropebook.studies`), and ``studies.stale`` names the runs whose specs no
longer match the code.
:func:`compare` turns it into each recipe's paired s.d. and mean loss, with intervals, and the
ratio of each paired s.d. to today's, with an interval that uses the seeds both share
(:func:`ropebook.stats.anatomy.paired_sd_ratio`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ropebook import studies, train, zoo
from ropebook.stats import anatomy
from ropebook.stats.power import percent_of_perplexity

AVERAGE_SHARE = 0.2  # the tail averaged: the last 20 % of steps (Sanyal et al. find 10-25 % best)
# schedule -> the zoo overrides it sets, given the regime's own TrainConfig
SCHEDULES: dict[str, Callable[[train.TrainConfig], dict[str, Any]]] = {
    "cosine to 10 %": lambda tc: {},  # today's: TrainConfig's default min_lr_ratio = 0.1
    "cosine to 0": lambda tc: {"min_lr_ratio": 0.0},
    "half the peak LR": lambda tc: {"lr": tc.lr / 2},
    "twice the batch": lambda tc: {  # the same tokens in half the steps
        "batch_size": 2 * tc.batch_size, "steps": tc.steps // 2, "warmup": tc.warmup // 2,
    },
}  # fmt: skip
RECIPES: dict[str, tuple[str, str]] = {  # recipe -> (schedule, model evaluated)
    "today": ("cosine to 10 %", "last"),
    "tail average": ("cosine to 10 %", "average"),
    "LR to zero": ("cosine to 0", "last"),
    "both": ("cosine to 0", "average"),
    "half the peak LR": ("half the peak LR", "last"),
    "twice the batch": ("twice the batch", "last"),
}
TODAY = "cosine to 10 %"  # today's schedule, which every other is read against
ARMS: tuple[str, str] = ("p-rope-0.75", "rope")  # the headline pair, a − b
STUDY, DOMAIN = "recipes", "shakespeare"
# The headline pair under today's recipe on many more seeds, trained on a GPU by
# tools/gpu_headline.sh (the same specs as the cpu profile's): regime -> its results file.
GPU_FILES: dict[str, Path] = {r: studies.path_of(f"{STUDY}-gpu-{r}") for r in zoo.TAIL_REGIMES}
# The margin of a Table 2 ordering, in % of perplexity, fixed before the data: a paired
# difference whose interval lies within ±MARGIN is *bounded* (a decided null: any effect is
# smaller). Why 0.5: it is the unit the book reads perplexity differences in (half its paired-noise
# target of 1 %), and the paper's own headline gap, 0.75-RoPE against RoPE on Wiki (Barbero et al.
# 2025, Table 2: 4.4414 against 4.4627, -0.48 %), rounded up: an effect no larger than the one
# the paper reports is the smallest the book sets out to resolve.
MARGIN = 0.5
# Recipe fields that leave the weights trained unchanged: the tail average rides in the optimiser
# state beside them (ropebook.train.tail_average; tests/test_train.py). A study run that differs
# from a build's spec only in these trained the same model (its spec hash differs all the same).
TRAINING_NEUTRAL: tuple[str, ...] = ("average_share",)


def overrides(schedule: str, profile: str, regime: str) -> dict[str, Any]:
    """The zoo overrides of one schedule's runs (every run keeps its tail average)."""
    today = zoo.configs(ARMS[0], profile=profile, regime=regime)[1]
    return {"average_share": AVERAGE_SHARE, **SCHEDULES[schedule](today)}


def measure(
    seeds: tuple[int, ...],
    *,
    profile: str = "cpu",
    regime: str = "matched",
    schedules: tuple[str, ...] = tuple(SCHEDULES),
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Train (or load) both arms under each schedule on ``seeds``; one record per run."""
    records = []
    for schedule in schedules:
        changes = overrides(schedule, profile, regime)
        for name in ARMS:
            runs = zoo.load_seeds(
                name, seeds, profile=profile, regime=regime, progress=progress, **changes
            )
            for run in runs:
                records.append({
                    "label": schedule, "schedule": schedule, "model": name, "seed": run.seed,
                    "overrides": changes, "spec_hash": run.spec_hash,
                    "seconds": run.seconds,
                    "last_loss": run.history["val"][-1]["loss"],
                    "average_loss": run.history["val_average"]["loss"],
                    "tail_losses": [row["loss"] for row in run.history.get("tail", [])],
                    "provenance": studies.provenance(run),
                })  # fmt: skip
    return records


def write(
    records: list[dict[str, Any]],
    *,
    profile: str,
    regime: str,
    path: Path | None = None,
    confirmation: tuple[str, tuple[int, ...]] | None = None,
) -> Path:
    """Keep ``records`` in the study's results file (:func:`ropebook.studies.write`);
    ``confirmation`` names the candidate trained beside today's on fresh seeds, and those seeds
    (every other seed is a discovery seed)."""
    fresh = set(confirmation[1]) if confirmation else set()
    discovery = sorted({r.get("seed") for r in records} - fresh)
    schedules = [s for s in SCHEDULES if s in {r.get("schedule") for r in records}]
    command = (
        f"python -m ropebook recipes --profile {profile} --regime {regime} --seeds {len(discovery)}"
    )
    if len(schedules) < len(SCHEDULES):
        command += " --schedules " + " ".join(f"'{s}'" for s in schedules)
    about: dict[str, Any] = {"discovery_seeds": discovery}
    if confirmation:
        command += f" --confirm '{confirmation[0]}' --confirm-seeds {len(fresh)}"
        about["confirmation"] = {"schedule": confirmation[0], "seeds": sorted(fresh)}
    return studies.write(
        STUDY, records, profile=profile, regime=regime, domain=DOMAIN, path=path,
        command=command, average_share=AVERAGE_SHARE, arms=list(ARMS), schedules=schedules,
        **about,
    )  # fmt: skip


def load(path: Path | None = None) -> dict[str, Any]:
    """The results file (:func:`ropebook.studies.load`)."""
    return studies.load(STUDY, path)


@dataclass(frozen=True)
class RecipeResult:
    """One recipe over the paired seeds, in percent (100 × nats ≈ % of perplexity)."""

    recipe: str
    n_seeds: int
    mean_loss: dict[str, float]  # per arm, nats
    difference: anatomy.Estimate  # mean a − b, % of perplexity, t interval
    paired_sd: anatomy.Estimate  # s.d. of a − b over seeds, chi-square interval
    sd_ratio: anatomy.Estimate  # paired s.d. over today's, Pitman-Morgan interval (same seeds)
    jitter: anatomy.Estimate | None  # within-run s.d. of the last iterate (None: an average)


def discovery_seeds(results: dict[str, Any]) -> list[int]:
    """The seeds every schedule was trained on (a file without a confirmation: all of them)."""
    return results.get("discovery_seeds", results["seeds"])


def _runs(results: dict[str, Any], seeds: list[int] | None) -> list[dict[str, Any]]:
    keep = set(discovery_seeds(results) if seeds is None else seeds)
    return [r for r in results["runs"] if r["seed"] in keep]


def measured_recipes(results: dict[str, Any], seeds: list[int] | None = None) -> list[str]:
    """The recipes whose schedule ``results`` has on ``seeds`` (default: the discovery seeds),
    both arms on every seed; today's first."""
    seeds = discovery_seeds(results) if seeds is None else seeds
    have = {(r["schedule"], r["model"], r["seed"]) for r in results["runs"]}
    return [
        recipe
        for recipe, (schedule, _) in RECIPES.items()
        if all((schedule, arm, s) in have for arm in results["arms"] for s in seeds)
    ]


def losses(
    results: dict[str, Any], recipe: str, seeds: list[int] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``[seeds]`` losses of arms a and b under ``recipe`` on ``seeds`` (default: the discovery
    seeds), in the same order."""
    schedule, evaluated = RECIPES[recipe]
    key = "last_loss" if evaluated == "last" else "average_loss"
    runs = _runs(results, seeds)
    by = {(r["model"], r["seed"]): r[key] for r in runs if r["schedule"] == schedule}
    order = sorted({seed for _, seed in by})
    return tuple(np.array([by[(arm, s)] for s in order]) for arm in results["arms"])


def tails(
    results: dict[str, Any], recipe: str = "today", seeds: list[int] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``[seeds, evaluations]`` tail losses (nats; the last on the final weights) of arms a and b
    under ``recipe`` on ``seeds`` (default: the discovery seeds), in the same seed order: what
    :func:`ropebook.stats.anatomy.anatomy` takes apart."""
    schedule, _ = RECIPES[recipe]
    by = {(r["model"], r["seed"]): r["tail_losses"] for r in _runs(results, seeds)
          if r["schedule"] == schedule}  # fmt: skip
    order = sorted({seed for _, seed in by})
    return tuple(np.array([by[(arm, s)] for s in order]) for arm in results["arms"])


def same_run_differences(
    first: dict[str, Any], second: dict[str, Any], recipe: str = "today"
) -> np.ndarray:
    """The runs both results files trained under ``recipe`` (the same model, seed and spec hash,
    say on a CPU and on a GPU): the second's loss minus the first's, in nats, one per run."""
    schedule, evaluated = RECIPES[recipe]
    key = "last_loss" if evaluated == "last" else "average_loss"

    def runs(results: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
        return {(r["model"], r["seed"]): r for r in results["runs"] if r["schedule"] == schedule}

    a, b = runs(first), runs(second)
    shared = sorted(a.keys() & b.keys())
    if differ := [k for k in shared if a[k]["spec_hash"] != b[k]["spec_hash"]]:
        raise ValueError(f"runs {differ} have different spec hashes in the two files")
    return np.array([b[k][key] - a[k][key] for k in shared])


def compare(
    results: dict[str, Any], confidence: float = 0.95, seeds: list[int] | None = None
) -> list[RecipeResult]:
    """Every recipe's paired noise and mean loss on ``seeds`` (default: the discovery seeds), and
    its paired s.d. over today's on the same seeds (the recipes measured there; today's first)."""
    from scipy import stats

    seeds = discovery_seeds(results) if seeds is None else seeds
    out, today = [], None
    for recipe in measured_recipes(results, seeds):
        schedule, evaluated = RECIPES[recipe]
        a, b = losses(results, recipe, seeds)
        n = len(a)
        differences = 100 * (a - b)
        today = differences if today is None else today
        paired = anatomy.sd_estimate(float(np.std(differences, ddof=1)), n - 1, confidence)
        half = stats.t.ppf((1 + confidence) / 2, n - 1) * paired.value / np.sqrt(n)
        mean = float(np.mean(differences))
        difference = anatomy.Estimate(
            *(percent_of_perplexity(x / 100) for x in (mean, mean - half, mean + half)), "t"
        )
        jitter = None
        if evaluated == "last":
            tails = [
                np.array([r["tail_losses"] for r in _runs(results, seeds)
                          if r["schedule"] == schedule and r["model"] == arm])
                for arm in results["arms"]
            ]  # fmt: skip
            if all(t.ndim == 2 and t.shape[1] >= 2 for t in tails):
                jitter = anatomy.anatomy(*tails, confidence=confidence).jitter
        means = {arm: float(np.mean(x)) for arm, x in zip(results["arms"], (a, b), strict=True)}
        out.append(RecipeResult(
            recipe, n, means,
            difference, paired, anatomy.paired_sd_ratio(differences, today, confidence), jitter,
        ))  # fmt: skip
    return out


def confirmed_recipe(results: dict[str, Any]) -> str | None:
    """The recipe named for confirmation (its schedule's last iterate), or None."""
    if not (fresh := results.get("confirmation")):
        return None
    return next(
        recipe for recipe, (schedule, evaluated) in RECIPES.items()
        if schedule == fresh["schedule"] and evaluated == "last"
    )  # fmt: skip


def seeds_of(results: dict[str, Any], recipe: str) -> list[int]:
    """Every seed on which both arms were trained under ``recipe``'s schedule."""
    schedule = RECIPES[recipe][0]
    by_arm = [
        {r["seed"] for r in results["runs"] if r["schedule"] == schedule and r["model"] == arm}
        for arm in results["arms"]
    ]
    return sorted(set.intersection(*by_arm))


def confirmation(
    results: dict[str, Any], confidence: float = 0.95
) -> tuple[RecipeResult, RecipeResult] | None:
    """Today's and the named candidate on the fresh seeds (None: the file has no confirmation)."""
    if not (candidate := confirmed_recipe(results)):
        return None
    by = {r.recipe: r for r in compare(results, confidence, results["confirmation"]["seeds"])}
    return by["today"], by[candidate]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ropebook recipes",
        description="Train the recipe candidates on paired seeds and write their results file.",
    )
    parser.add_argument("--profile", default="cpu", choices=tuple(zoo.PROFILES))
    parser.add_argument("--regime", default="matched", choices=zoo.TAIL_REGIMES)
    parser.add_argument(
        "--seeds", type=int, default=8, help="discovery seeds 0..N-1, every schedule (default 8)"
    )
    parser.add_argument("--out", type=Path, default=studies.path_of(STUDY))
    parser.add_argument(
        "--schedules", nargs="+", choices=tuple(SCHEDULES), default=tuple(SCHEDULES),
        metavar="SCHEDULE", help=f"schedules to train and keep (default all: {', '.join(SCHEDULES)})",
    )  # fmt: skip
    parser.add_argument(
        "--confirm", choices=tuple(s for s in SCHEDULES if s != TODAY), metavar="SCHEDULE",
        help="a candidate to confirm: trained beside today's on fresh seeds N..N+M-1",
    )  # fmt: skip
    parser.add_argument(
        "--confirm-seeds", type=int, default=8, help="M, the fresh seeds (default 8)"
    )
    parser.add_argument(
        "--train-only", action="store_true", help="train (say, in another process), write no file"
    )
    args = parser.parse_args(argv)
    if args.seeds < 3 or (args.confirm and args.confirm_seeds < 3):
        parser.error(
            f"--seeds and --confirm-seeds must be at least 3 (an s.d. needs them), got "
            f"{args.seeds} and {args.confirm_seeds}"
        )
    if TODAY not in args.schedules:
        parser.error(f"--schedules must include today's, '{TODAY}': the others are read against it")
    seeds, schedules = tuple(range(args.seeds)), tuple(s for s in SCHEDULES if s in args.schedules)
    records = measure(seeds, profile=args.profile, regime=args.regime, schedules=schedules)
    confirm = None
    if args.confirm:
        confirm = (args.confirm, tuple(range(args.seeds, args.seeds + args.confirm_seeds)))
        records += measure(
            confirm[1], profile=args.profile, regime=args.regime, schedules=(TODAY, args.confirm)
        )
    if args.train_only:
        return 0
    path = write(
        records, profile=args.profile, regime=args.regime, path=args.out, confirmation=confirm
    )
    results = load(path)
    for result in compare(results):
        print(f"{result.recipe:>16}: paired s.d. {result.paired_sd} %, "
              f"ratio to today {result.sd_ratio}, a − b {result.difference} %")  # fmt: skip
    if confirmed := confirmation(results):
        print(f"fresh seeds {results['confirmation']['seeds']}: {confirmed[1].recipe} "
              f"ratio to today {confirmed[1].sd_ratio}")  # fmt: skip
    print(f"written: {path}")
    return 0


def spec_differences(results: dict[str, Any], profile: str) -> dict[str, tuple[Any, Any]]:
    """``field -> (this build's value, the study's)`` wherever the models a build of ``profile``
    trains for the study's arms (its regime, today's recipe) differ from the study's runs (the
    study's profile, regime and each run's overrides); the seed aside, and a field that differs
    for several arms or runs is named once. Empty: the very specs."""
    regime, out = results["regime"], {}
    for run in results["runs"]:
        here = zoo.configs(run["model"], profile=profile, regime=regime)
        there = zoo.configs(
            run["model"], profile=results["profile"], regime=regime, **run["overrides"]
        )
        for mine, theirs in zip(here, there, strict=True):
            mine, theirs = mine.to_dict(), theirs.to_dict()
            for key in sorted(mine.keys() | theirs.keys()):
                if key != "seed" and mine.get(key) != theirs.get(key):
                    out.setdefault(key, (mine.get(key), theirs.get(key)))
    return out


def same_model(differences: dict[str, tuple[Any, Any]]) -> bool:
    """Whether specs that differ by ``differences`` (:func:`spec_differences`) train the same
    model: they differ in :data:`TRAINING_NEUTRAL` fields at most."""
    return set(differences) <= set(TRAINING_NEUTRAL)


def arm_differences(
    results: dict[str, Any], recipe: str = "today", *, exclude: tuple[int, ...] = ()
) -> tuple[list[int], np.ndarray]:
    """The seeds both arms have under ``recipe``, those in ``exclude`` left out (a build's own,
    so that what remains is independent of it), and each seed's loss difference a − b (nats, a
    difference of log perplexities)."""
    seeds = [s for s in seeds_of(results, recipe) if s not in set(exclude)]
    a, b = losses(results, recipe, seeds)
    return seeds, a - b
