"""Gemma's layouts at their production ratio: a study kept in the repository (:mod:`ropebook.studies`).

The layouts chapter trains Gemma 3's and Gemma 4's layouts on 2-layer task models (1 : 1, one
local layer to one global) and on language with 4 layers (3 : 1), with the global layer *first*
in its period because a run with it last did not learn recall (the measurement recorded at
:data:`ropebook.zoo.LAYOUT_POSITION`). Production has five
local layers to one global, the global one last. This study trains that: **6 layers**, five
sliding-window layers and one global layer by :func:`ropebook.layouts.layout`'s rules, the
global layer **last** (production) and **first** (the chapter's placement), for Gemma 3 and
Gemma 4, with a 6-layer all-RoPE model as the baseline of every comparison:

- on **recall** and **k-back** (the task regime of :func:`ropebook.zoo.regime_settings` with
  ``n_layers=6``), every run trained the same fixed number of steps (:data:`STEPS`, the regime's
  step cap, which the pilot's hybrids needed: k-back took 580–680 steps at 4 layers and one
  layout had not learnt at 1,000), with **no early stop** (the regime has none since #62's equal
  training), so a seed that never learns is kept as the failure it is. Per run: the learning curve (accuracy at 1×
  by evaluation step), the first step at which it met :data:`CRITERION` (the chapter's 99 %;
  ``None``: never), and the final accuracy over every answer and over the answers beyond the
  training context at 1×–8× the context, scored as the chapter scores them
  (:mod:`ropebook.analysis.recall`: the same test batches, every seed);
- on **language** (the matched regime, Shakespeare, as :mod:`ropebook.layout_language`
  measures it): the validation loss and the held-out perplexity at 1×–8× the context.

**Predictions, written before the run** (also in the results file, :data:`PREDICTIONS`):

1. *If the chapter's readings were an artefact of its ratio* (1 : 1 on the tasks, 3 : 1 on
   language), Gemma's hybrid − all-RoPE differences at 5 : 1 (global first, the chapter's
   placement) would leave the chapter's: on k-back beyond the context, a gap of more than the
   chapter's equivalence margin (5 points) where the chapter found none, or the reverse; on recall
   beyond the context, Gemma 4 − Gemma 3 changing sign; on language, a perplexity gap from
   all-RoPE at 1× outside ±2 % (the chapter's ``language_margin``) or, at 8×, a hybrid no longer
   below all-RoPE. If the ratio is not what the chapter measured, these readings stay put.
2. *Placement, per the pilot*: with the global layer last, recall learns late or not at all within
   the steps (the pilot's 4-layer layout with its global layer last stayed at chance for 1,000
   steps), so last − first recall accuracy at 1× is negative, by more than 5 points, for both
   Gemmas; k-back, which five local layers of window 8 answer whatever the global layer does,
   learns at both placements (last − first within ±5 points at 1×); on language, placement
   changes perplexity at 1× by less than 2 %.

``python -m ropebook layout_ratio --profile cpu --seeds 3`` trains the runs (cached by spec as
every zoo model is; a second copy of the command started beside the first trains the runs the
first has not locked, so two processes share the work) and writes ``data/results/layout_ratio.json``.
Every run is a zoo job with this study's overrides (:func:`job`), and :func:`stale` checks the
runs against what :func:`job` trains today.

The study was planned for 3 seeds (the command's default, :data:`ropebook.studies.MIN_SEEDS`: the
fewest that give an interval) and first measured on one for the budget. ``--placement-seeds N``
takes the recall runs of the four Gemma placements (:data:`PLACEMENT_ARMS`: what the placement
reading pairs) to seeds 0..N-1 while every other arm and domain keeps ``--seeds``; ``--keep``
keeps the runs the results file already holds at today's spec as they were measured (each with
its training provenance, the file naming the measurement they came from in ``earlier``) and
trains and scores only the others. Readings pair arms on the seeds both have
(:func:`common_seeds`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from ropebook import layout_language, layouts, studies, tasks, zoo
from ropebook.analysis import ablation
from ropebook.analysis import recall as rc

STUDY = "layout_ratio"
N_LAYERS = 6  # Gemma's period: five local layers, one global
LAYOUTS: tuple[str, ...] = ("gemma3", "gemma4")
# (arm, zoo model, global position); all-RoPE has no global layer to place
ARMS: tuple[tuple[str, str, str | None], ...] = (
    *((f"{name}-{where}", f"layout-{name}", where) for name in LAYOUTS
      for where in layouts.POSITIONS),
    ("rope", "rope", None),
)  # fmt: skip
PLACEMENT_ARMS: tuple[str, ...] = tuple(arm for arm, _, where in ARMS if where is not None)
TASKS: tuple[str, ...] = tuple(tasks.TASKS)
LANGUAGE, LANGUAGE_REGIME = layout_language.DOMAIN, layout_language.REGIME
DOMAINS: tuple[str, ...] = (*TASKS, LANGUAGE)
# Fixed training length of every task run: the task regime's step cap at each profile when this
# study was written (the other fields of the regime are read from it). Not the regime's 300 cpu
# steps since #62's equal training: the pilot's 4-layer hybrids needed 580-680 steps on k-back,
# and a 6-layer layout with its global layer last may need more (the reading this study makes).
STEPS = {"smoke": 40, "cpu": 1000, "gpu": 4000}
CRITERION = tasks.CRITERION  # read from the curve (speed of learning), never a filter
MAX_FACTOR = {"smoke": 2, "cpu": 8, "gpu": 8}  # longest test length, × the context
N_SEQUENCES = {"recall": 64, "kback": 16}  # test sequences per length (the chapter's at cpu)
SMOKE_SEQUENCES = {"recall": 8, "kback": 2}
BY = {"recall": "distance", "kback": "position"}  # what the chapter bins each task's answers by
N_WINDOWS = layout_language.N_WINDOWS
DOMAIN_WORDS = {"kback": "k-back", LANGUAGE: "language"}  # how a page names a domain
PREDICTIONS: dict[str, str] = {
    "ratio": (
        "If the chapter's readings at 1:1 (tasks) and 3:1 (language) were an artefact of the "
        "ratio, Gemma's hybrid − all-RoPE differences at 5:1 with the global layer first would "
        "leave the chapter's: k-back beyond the context more than 5 points from all-RoPE (the "
        "chapter: within), Gemma 4 − Gemma 3 on recall beyond the context changing sign, or on "
        "language a gap from all-RoPE at 1x outside ±2 % or a hybrid not below all-RoPE at 8x. "
        "If not an artefact, these stay as the chapter measured them."
    ),
    "placement": (
        "Per the pilot (a 4-layer layout with its global layer last stayed at chance on recall "
        "for 1,000 steps): last − first recall accuracy at 1x below −5 points for both Gemmas, "
        "fewer seeds reaching 99 % with the global layer last; k-back learnt at both placements "
        "(last − first within ±5 points at 1x); language perplexity at 1x within ±2 % of each "
        "other."
    ),
}


def _arm(arm: str) -> tuple[str, str | None]:
    for label, name, where in ARMS:
        if label == arm:
            return name, where
    raise ValueError(f"unknown arm {arm!r}; valid arms: {', '.join(a for a, _, _ in ARMS)}")


def regime_of(domain: str) -> str:
    zoo._choose("domain", domain, DOMAINS)
    return LANGUAGE_REGIME if domain == LANGUAGE else "task"


def overrides(arm: str, domain: str, profile: str) -> dict[str, Any]:
    """The zoo overrides of ``arm`` on ``domain`` (JSON values, as a results file keeps them):
    6 layers; on a task, :data:`STEPS`; on language, :mod:`ropebook.layout_language`'s; and for
    a hybrid its layers, global ``last`` or ``first`` (:func:`ropebook.layouts.layer_dicts`)."""
    name, where = _arm(arm)
    regime = regime_of(domain)
    zoo._choose("profile", profile, zoo.PROFILES)
    chosen: dict[str, Any] = {"n_layers": N_LAYERS}
    if regime == "task":
        chosen["steps"] = STEPS[profile]
    else:
        chosen |= layout_language.OVERRIDES
    if where is not None:
        shape, _ = zoo.configs("rope", profile=profile, regime=regime, **chosen)
        pattern = layouts.layout(
            name.removeprefix("layout-"), n_layers=N_LAYERS, head_dim=shape.head_dim,
            context=shape.context, base=shape.rope_base, position=where,
        )  # fmt: skip
        chosen["layers"] = layouts.layer_dicts(pattern)
    return chosen


def job(arm: str, domain: str, seed: int, profile: str) -> zoo._Job:
    """The zoo job of one run: ``arm``'s model with :func:`overrides` in ``domain``'s regime."""
    name, _ = _arm(arm)
    return zoo._job(name, seed, profile, domain, regime_of(domain), overrides(arm, domain, profile))


def plan(
    seeds: Sequence[int], arms: Sequence[str] | None = None, domains: Sequence[str] | None = None
) -> list[tuple[int, str, str]]:
    """``(seed, domain, arm)`` of every run (or of ``arms`` on ``domains``), seed by seed: the
    first seed completes first."""
    arms = [a for a, _, _ in ARMS] if arms is None else list(arms)
    domains = list(DOMAINS) if domains is None else list(domains)
    for arm in arms:
        _arm(arm)
    for domain in domains:
        regime_of(domain)
    return [(s, d, a) for s in seeds for d in domains for a in arms]


def study_plan(seeds: int, placement_seeds: int = 0) -> list[tuple[int, str, str]]:
    """:func:`plan` of every arm and domain on seeds 0..``seeds``-1, then the recall runs of
    :data:`PLACEMENT_ARMS` on the further seeds up to ``placement_seeds``-1."""
    full = plan(range(seeds))
    return full + plan(range(seeds, placement_seeds), PLACEMENT_ARMS, ("recall",))


def run_key(record: dict[str, Any]) -> tuple[int, str, str]:
    """``(seed, domain, arm)`` of a run record, as :func:`plan` names runs."""
    return record["seed"], record["domain"], record["arm"]


def _none_if_nan(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def task_record(model, task: str, profile: str) -> dict[str, Any]:
    """Learning curve, step of the criterion and accuracy at each test length of one task run
    (every seed scored, learnt or not, on the chapter's test batches)."""
    curve = rc.learning(model)
    reached = np.flatnonzero(curve.accuracy >= CRITERION)
    context = model.config.context
    n = (SMOKE_SEQUENCES if profile == "smoke" else N_SEQUENCES)[task]
    overall, beyond = {}, {}
    for f in ablation.length_factors(MAX_FACTOR[profile]):
        length = f * context
        batch = rc.task_batch(tasks.get(task), length, n)
        right = rc.score_runs([model], batch)
        overall[str(f)] = float(right[0][batch.mask].mean())
        far = rc.binned_accuracy(right, batch, [context, length + 1], by=BY[task])[0, 0]
        beyond[str(f)] = _none_if_nan(float(far))
    return {
        "curve": {"steps": curve.steps.tolist(), "accuracy": curve.accuracy.tolist()},
        "reached_at": int(curve.steps[reached[0]]) if reached.size else None,
        "accuracy_by_factor": overall, "beyond_by_factor": beyond,
    }  # fmt: skip


def language_record(model, held_out: np.ndarray, profile: str) -> dict[str, Any]:
    """Validation loss and held-out perplexity at each length, as :mod:`layout_language`."""
    max_factor = MAX_FACTOR[profile]
    curve = ablation.extrapolation_curve(
        model.params, model.config, held_out, max_factor=max_factor, n_windows=N_WINDOWS
    )
    return {
        "last_loss": model.history["val"][-1]["loss"],
        "average_loss": model.history["val_average"]["loss"],
        "ppl_by_factor": {str(f): curve.ppl_at(f) for f in ablation.length_factors(max_factor)},
    }


def measure(
    seeds: Sequence[int],
    *,
    profile: str = "cpu",
    progress: bool = True,
    arms: Sequence[str] | None = None,
    domains: Sequence[str] | None = None,
    runs: Sequence[tuple[int, str, str]] | None = None,
    reuse: Sequence[dict[str, Any]] = (),
) -> list[dict[str, Any]]:
    """Train (or load) every run on ``seeds`` (every arm and domain unless given; or exactly
    ``runs``, :func:`plan`'s keys); one record per run, in plan order. A record of ``reuse`` (a
    results file's runs) whose spec hash is what :func:`job` trains today stands for its run,
    neither trained nor scored again. Runs another process holds are left to it on a first pass
    and loaded (waiting) on the second."""
    runs = plan(seeds, arms, domains) if runs is None else list(runs)
    jobs = {key: job(key[2], key[1], key[0], profile) for key in runs}  # all valid before training
    reused = {
        run_key(r): r for r in reuse
        if run_key(r) in jobs and r["spec_hash"] == jobs[run_key(r)].spec_hash
    }  # fmt: skip
    for key in tqdm(runs, desc=f"{STUDY} runs", disable=not progress):
        if key not in reused:
            zoo._load(jobs[key], regime_of(key[1]), progress=progress, wait=False)
    records = []
    for key in tqdm(runs, desc=f"{STUDY} scoring", disable=not progress):
        if key in reused:
            records.append(reused[key])
            continue
        seed, domain, arm = key
        model = zoo._load(jobs[key], regime_of(domain), progress=progress, wait=True)
        name, where = _arm(arm)
        if domain == LANGUAGE:
            held_out = zoo._tokens(LANGUAGE, "val", model.config.vocab_size)
            measured = language_record(model, held_out, profile)
        else:
            measured = task_record(model, domain, profile)
        records.append({
            "arm": arm, "model": name, "position": where, "domain": domain,
            "regime": regime_of(domain), "seed": seed,
            "overrides": overrides(arm, domain, profile),
            "spec_hash": model.spec_hash, "seconds": model.seconds, **measured,
            "provenance": studies.provenance(model),
        })  # fmt: skip
    return records


def stale(results: dict[str, Any]) -> list[str]:
    """The runs whose spec hash differs from what :func:`job` trains today (none: current)."""
    return [
        f"{r['arm']} on {r['domain']} seed {r['seed']}"
        for r in results["runs"]
        if r["spec_hash"] != job(r["arm"], r["domain"], r["seed"], results["profile"]).spec_hash
    ]


def load(path: Path | None = None) -> dict[str, Any]:
    return studies.load(STUDY, path)


# ---------------------------------------------------------------- readings


def _runs(
    results: dict[str, Any], domain: str, arm: str, seeds: Sequence[int] | None = None
) -> list[dict[str, Any]]:
    _arm(arm)
    runs = sorted(
        (r for r in results["runs"] if r["domain"] == domain and r["arm"] == arm
         and (seeds is None or r["seed"] in seeds)),
        key=lambda r: r["seed"],
    )  # fmt: skip
    if not runs:
        raise ValueError(f"{STUDY}: no run of {arm} on {domain}")
    return runs


def common_seeds(results: dict[str, Any], domain: str, arms: Sequence[str]) -> list[int]:
    """The seeds every one of ``arms`` has a run of on ``domain``: those a reading pairs on."""
    have = [{r["seed"] for r in _runs(results, domain, arm)} for arm in arms]
    return sorted(set.intersection(*have))


def seeds_text(results: dict[str, Any]) -> str:
    """How many seeds each domain's runs have, e.g. ``"3 on recall, 1 on k-back and language"``
    (one number where every domain has the same)."""
    counts: dict[int, list[str]] = {}
    for domain in DOMAINS:
        n = len({r["seed"] for r in results["runs"] if r["domain"] == domain})
        counts.setdefault(n, []).append(DOMAIN_WORDS.get(domain, domain))
    if len(counts) == 1:
        return str(next(iter(counts)))
    return ", ".join(f"{n} on {' and '.join(d)}" for n, d in counts.items())


def factors(results: dict[str, Any]) -> list[int]:
    """The test lengths of every run, in multiples of the context."""
    return ablation.length_factors(results["max_factor"])


def accuracy(
    results: dict[str, Any],
    task: str,
    arm: str,
    factor: int = 1,
    *,
    beyond: bool = False,
    seeds: Sequence[int] | None = None,
) -> np.ndarray:
    """Per-seed final accuracy of ``arm`` on ``task`` at ``factor`` × the context, over every
    answer or (``beyond``) over those past the training context (NaN where none), seed order
    (of ``seeds`` only, if given)."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; valid tasks: {', '.join(TASKS)}")
    field = "beyond_by_factor" if beyond else "accuracy_by_factor"
    values = [r[field].get(str(factor), math.nan) for r in _runs(results, task, arm, seeds)]
    return np.array([math.nan if v is None else v for v in values], np.float64)


def reached(results: dict[str, Any], task: str, arm: str) -> tuple[int, int, list[int | None]]:
    """Seeds of ``arm`` that met :data:`CRITERION` on ``task``, of how many, and each one's step."""
    steps = [r["reached_at"] for r in _runs(results, task, arm)]
    return sum(s is not None for s in steps), len(steps), steps


def placement(
    results: dict[str, Any], task: str, layout: str, factor: int = 1, *, beyond: bool = False
) -> rc.Paired:
    """Global last − global first, accuracy paired by seed (points as a share)."""
    arms = [f"{layout}-{where}" for where in ("last", "first")]
    seeds = common_seeds(results, task, arms)
    last, first = (accuracy(results, task, arm, factor, beyond=beyond, seeds=seeds) for arm in arms)
    return rc.paired(last, first)


def against_rope(
    results: dict[str, Any], task: str, arm: str, factor: int, *, beyond: bool = True
) -> rc.Paired:
    """``arm`` − the 6-layer all-RoPE, paired by seed: the chapter's hybrid − all-RoPE at 5 : 1."""
    seeds = common_seeds(results, task, [arm, "rope"])
    return rc.paired(accuracy(results, task, arm, factor, beyond=beyond, seeds=seeds),
                     accuracy(results, task, "rope", factor, beyond=beyond, seeds=seeds))  # fmt: skip


def ppl(results: dict[str, Any], arm: str, factor: int) -> list[float]:
    """Per-seed held-out perplexity of ``arm`` at ``factor`` × the context, seed order."""
    return [r["ppl_by_factor"][str(factor)] for r in _runs(results, LANGUAGE, arm)]


def language_placement(
    results: dict[str, Any], layout: str, factor: int, confidence: float = 0.95
) -> ablation.Comparison:
    """Global last against global first on language, paired by seed (% of perplexity)."""
    last, first = f"{layout}-last", f"{layout}-first"
    return ablation.compare(last, ppl(results, last, factor), first, ppl(results, first, factor),
                            confidence, log=True)  # fmt: skip


def language_against_rope(
    results: dict[str, Any], factor: int, confidence: float = 0.95
) -> dict[str, ablation.Comparison]:
    """Every hybrid arm's perplexity against the 6-layer all-RoPE's, paired by seed (%)."""
    rope = ppl(results, "rope", factor)
    return {arm: ablation.compare(arm, ppl(results, arm, factor), "rope", rope, confidence,
                                  log=True)
            for arm, _, where in ARMS if where is not None}  # fmt: skip


def against_four_layers(
    results: dict[str, Any],
    chapter: dict[str, Any],
    layout: str,
    factor: int,
    confidence: float = 0.95,
) -> studies.Agreement:
    """Gemma's log-perplexity gap from all-RoPE at 5 : 1 (6 layers, global first: the chapter's
    placement) against the same gap at 3 : 1 in ``chapter`` (:mod:`layout_language`'s results,
    4 layers), per seed in nats: :func:`ropebook.studies.agreement` (``held``: they agree)."""
    four = np.log(layout_language.ppl(chapter, f"layout-{layout}", factor)) - np.log(
        layout_language.ppl(chapter, "rope", factor))  # fmt: skip
    six = np.log(ppl(results, f"{layout}-first", factor)) - np.log(ppl(results, "rope", factor))
    return studies.agreement(four, six, confidence)


# ---------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    parser = studies.seeds_parser(
        STUDY, "Train Gemma 3's and 4's layouts at 5:1, global layer last and first, on recall, "
        "k-back and language, and write their results file.", seeds=3,
    )  # fmt: skip
    parser.add_argument(
        "--placement-seeds", type=int, default=None,
        help="recall runs of the four Gemma placements on seeds 0..N-1 (default: --seeds)",
    )  # fmt: skip
    parser.add_argument(
        "--keep", action="store_true",
        help="keep the results file's runs at today's spec as measured; train and score the rest",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=None, help="results file (default: kept)")
    args = studies.parse(  # 1 writes a first seed, read without intervals
        parser, argv, {"seeds": (1, "a first seed is read without intervals")}
    )
    if args.placement_seeds is None:
        args.placement_seeds = args.seeds
    if args.placement_seeds < args.seeds:
        parser.error(f"--placement-seeds must be at least --seeds ({args.seeds}), "
                     f"got {args.placement_seeds}")  # fmt: skip
    out = studies.path_of(STUDY) if args.out is None else args.out
    if not out.parent.is_dir():
        parser.error(f"--out: no folder {out.parent} to write {out.name} in")
    earlier = load(out) if args.keep else None  # a missing or broken file stops here, not later
    if earlier is not None and earlier["profile"] != args.profile:
        parser.error(f"--keep: {out} was measured at the {earlier['profile']} profile")
    runs = study_plan(args.seeds, args.placement_seeds)
    records = measure((), profile=args.profile, runs=runs,
                      reuse=earlier["runs"] if earlier else ())  # fmt: skip
    kept = [r for r in records if earlier and any(r is e for e in earlier["runs"])]
    sources = [] if not kept else [*earlier.get("earlier", []), {
        "command": earlier["command"], "commit": earlier["commit"],
        "measured": earlier["measured"], "machine": studies.measured_on(earlier),
        "runs": len(kept),
    }]  # fmt: skip
    studies.write_from(
        STUDY, args, records, regime=f"task and {LANGUAGE_REGIME}", domain=", ".join(DOMAINS),
        settings=("placement_seeds",), path=out, n_layers=N_LAYERS,
        arms=[a for a, _, _ in ARMS], steps=STEPS[args.profile], criterion=CRITERION,
        max_factor=MAX_FACTOR[args.profile], n_windows=N_WINDOWS, predictions=PREDICTIONS,
        **({"earlier": sources} if sources else {}),
    )  # fmt: skip
    return 0
