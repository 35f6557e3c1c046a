"""Two task-regime findings on many seeds: Llama 4's chunk ceiling on k-back and the passkey
after a fine-tune with PI or YaRN. A study kept in the repository (:mod:`ropebook.studies`).

Both findings were *cannot decide* on the first cpu build's three seeds (0, 1, 2; commit
1cf5e69, 2026-12-03), which serve as the pilot that planned this study:

- ``layouts.chunk_ceiling`` (exploratory: framed after the first seed's curve stalled): Llama 4's
  layout (``layout-llama4`` on k-back) answers k-back at 1× as often as its chunks can see the
  answer's source, plus chance, within the chapter's ±5-point margin. The pilot's gap, accuracy
  − ceiling, was −1.7 points [−8.0, +4.7], an s.d. over seeds of 2.6 points
  (:data:`PILOT_CEILING_SD`). Target: the margin itself, 5 points (:data:`CEILING_TARGET`):
  :func:`ropebook.stats.power.seeds_needed` gives 5 seeds (:data:`CEILING_SEEDS`).
- ``recall.passkey_extension``: RoPE trained on recall and fine-tuned at 2× its context with PI
  or YaRN retrieves the passkey there more often than plain RoPE fine-tuned the same way (the
  control). The pilot's gain was +27.3 points [−0.8, +55.5] for each rule, an s.d. of 11 points
  (:data:`PILOT_PASSKEY_SD`). Target: a gain of 10 points of passkey accuracy, fixed in advance
  (:data:`PASSKEY_TARGET`): 12 seeds (:data:`PASSKEY_SEEDS`).

The seeds were fixed before any of this study's data: seeds 0..11 for both (:data:`SEEDS`, the
larger count; one command, one file). Per seed the study loads (or trains, from
``ROPEBOOK_CACHE``) the two zoo models of the task regime and reads them exactly as their
chapters do, through the same functions: Llama 4's k-back accuracy at 1× on the layouts
chapter's probe and its closed-form ceiling (:func:`ropebook.analysis.layouts.chunk_ceiling`),
and RoPE's passkey accuracy at the fine-tune scale after each fine-tune, none, PI and YaRN
(:func:`ropebook.analysis.recall.finetuned_sweeps`). ``python -m ropebook task_study`` writes
``data/results/task_study.json``; a chapter decides on it where its runs are the models that
chapter's profile trains, read with that chapter's settings (:func:`deciding_ceiling`,
:func:`deciding_passkey`), with the build's own seeds beside. The kept study decides a finding
only with at least the seeds planned for it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ropebook import studies, zoo
from ropebook.analysis import layouts as lay
from ropebook.analysis import recall as rc
from ropebook.stats import power

STUDY, REGIME = "task_study", "task"
CEILING_MODEL, CEILING_DOMAIN = "layout-llama4", "kback"  # the layouts chapter's
PASSKEY_MODEL, PASSKEY_DOMAIN = "rope", "recall"  # the recall chapter's
MODELS = (CEILING_MODEL, PASSKEY_MODEL)
DOMAIN = f"{CEILING_DOMAIN}, {PASSKEY_DOMAIN}"  # the file's; each run names its own

# The plan, fixed before the study's data: the pilot (the first cpu build's seeds) and the
# targets. Shares of accuracy (×100: points).
PILOT_SEEDS, PILOT_COMMIT, PILOT_DATE = (0, 1, 2), "1cf5e69", "2026-12-03"
PILOT_CEILING_GAP = (-0.017, -0.080, 0.047)  # Llama 4 k-back at 1× − ceiling: mean, interval
PILOT_CEILING_SD = 0.026  # its s.d. over the pilot's seeds
CEILING_TARGET = 0.05  # the layouts chapter's equivalence margin
PILOT_PASSKEY_GAP = (0.273, -0.008, 0.555)  # PI (and YaRN) fine-tuned − the control, at 2×
PILOT_PASSKEY_SD = 0.11
PASSKEY_TARGET = 0.10  # a gain of 10 points of passkey accuracy
CEILING_SEEDS = power.seeds_needed(PILOT_CEILING_SD, CEILING_TARGET)  # 80 % power, 95 %
PASSKEY_SEEDS = power.seeds_needed(PILOT_PASSKEY_SD, PASSKEY_TARGET)
SEEDS = max(CEILING_SEEDS, PASSKEY_SEEDS)  # seeds 0..SEEDS-1 for both

# The chapters' defaults (their parameters cells): what the study reads with unless told.
DEFAULTS = {
    "n_sequences": 64,  # the layouts chapter's (its k-back probe: a quarter)
    "n_passkey": 8, "n_depths": 6, "finetune_scale": 2, "finetune_steps": 50,
    "finetune_lr_ratio": 0.1,  # the recall chapter's
}  # fmt: skip
CEILING_SETTINGS = ("n_sequences", "ceiling")
PASSKEY_SETTINGS = ("n_passkey", "n_depths", "finetune_scale", "finetune_steps",
                    "finetune_lr_ratio")  # fmt: skip


def depths(n_depths: int) -> np.ndarray:
    """The recall chapter's needle depths, from 0 to 100 % of the sequence."""
    return np.linspace(0, 1, n_depths)


def measure(
    seeds: Sequence[int],
    *,
    profile: str = "cpu",
    n_sequences: int = DEFAULTS["n_sequences"],
    n_passkey: int = DEFAULTS["n_passkey"],
    n_depths: int = DEFAULTS["n_depths"],
    finetune_scale: int = DEFAULTS["finetune_scale"],
    finetune_steps: int = DEFAULTS["finetune_steps"],
    finetune_lr_ratio: float = DEFAULTS["finetune_lr_ratio"],
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Per seed: load (or train) Llama 4's layout on k-back and keep its accuracy at 1× and its
    ceiling (``accuracy``, ``ceiling``, ``chunk``); load RoPE on recall, fine-tune it with each
    method and keep its passkey accuracy at the fine-tune scale (``passkey``: ``{method:
    share}``) and each fine-tune's cache folder and seconds. One record per run, seed by seed
    (a seed's models leave memory before the next)."""
    _, train_config = zoo.configs(PASSKEY_MODEL, profile=profile, regime=REGIME)
    records = []
    for seed in seeds:
        llama = zoo.load(CEILING_MODEL, seed=seed, profile=profile, regime=REGIME,
                         domain=CEILING_DOMAIN, progress=progress)  # fmt: skip
        found = lay.chunk_ceiling([llama], n_sequences)
        records.append(_record(llama, CEILING_DOMAIN) | {
            "accuracy": float(found.accuracy[0]), "ceiling": found.ceiling, "chunk": found.chunk,
        })  # fmt: skip
        rope = zoo.load(PASSKEY_MODEL, seed=seed, profile=profile, regime=REGIME,
                        domain=PASSKEY_DOMAIN, progress=progress)  # fmt: skip
        swept = rc.finetuned_sweeps(
            [rope], (finetune_scale,), depths(n_depths), scale=finetune_scale,
            steps=finetune_steps, lr_ratio=finetune_lr_ratio, train_config=train_config,
            n_passkey=n_passkey, n_sequences=0, progress=progress,
        )  # fmt: skip
        records.append(_record(rope, PASSKEY_DOMAIN) | {
            "passkey": {m: float(passkey[0, 0]) for m, (passkey, _) in swept.items()},
        })  # fmt: skip
        print(f"{STUDY}: seed {seed}: {CEILING_MODEL} k-back {records[-2]['accuracy']:.4f} "
              f"(ceiling {records[-2]['ceiling']:.4f}); {PASSKEY_MODEL} passkey "
              f"{records[-1]['passkey']}", flush=True)  # fmt: skip
    return records


def _record(run, domain: str) -> dict[str, Any]:
    return {
        "model": run.name, "domain": domain, "seed": int(run.seed), "overrides": {},
        "spec_hash": run.spec_hash, "seconds": run.seconds, "trained_now": run.trained_now,
        "provenance": studies.provenance(run),
    }  # fmt: skip


def kept() -> dict[str, Any] | None:
    """The kept results file (:func:`ropebook.studies.kept`)."""
    return studies.kept(STUDY, load)


def _share(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and (
        math.isfinite(value) and 0 <= value <= 1
    )  # fmt: skip


def _check_run(run: dict[str, Any], results: dict[str, Any]) -> str | None:
    if run["model"] == CEILING_MODEL:
        for key in ("accuracy", "ceiling"):
            if not _share(run.get(key)):
                return f"has no {key} in [0, 1]"
        if run["ceiling"] != results.get("ceiling"):
            return f"has the ceiling {run['ceiling']}, the file {results.get('ceiling')}"
        return None
    if run["model"] == PASSKEY_MODEL:
        passkey = run.get("passkey")
        if not isinstance(passkey, dict):
            return "has no passkey accuracies"
        if missing := [m for m in rc.FINETUNE_METHODS if not _share(passkey.get(m))]:
            return f"has no passkey accuracy in [0, 1] after the fine-tune {missing}"
        return None
    raise ValueError(f"a run of {run['model']!r}, a model this study does not train")


def load(path=None) -> dict[str, Any]:
    """The kept results file, or a ValueError naming what is wrong with it: a Llama 4 run
    without an accuracy or a ceiling in [0, 1] (or another ceiling than the file's), a RoPE run
    without a passkey accuracy after each fine-tune, a run of another model, a model missing,
    or a setting missing."""
    results = studies.load_checked(STUDY, path, check_run=_check_run, required=MODELS)
    if missing := [s for s in (*CEILING_SETTINGS, *PASSKEY_SETTINGS) if s not in results]:
        where = studies.path_of(STUDY) if path is None else path
        raise ValueError(f"{where}: no settings {missing}")
    return results


def _label(results: Mapping[str, Any], basis: str) -> str:
    seeds = studies.paired_seeds(dict(results))
    span = (f"{seeds[0]}–{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1))
            else ", ".join(map(str, seeds)))  # fmt: skip
    return f"kept study {STUDY}, seeds {span}: {basis}"


def ceiling_of(results: Mapping[str, Any]) -> lay.ChunkCeiling:
    """The study's :class:`~ropebook.analysis.layouts.ChunkCeiling` on its paired seeds."""
    seeds = tuple(studies.paired_seeds(dict(results)))
    by_seed = {r["seed"]: r for r in results["runs"] if r["model"] == CEILING_MODEL}
    chunk = by_seed[seeds[0]]["chunk"]
    return lay.ChunkCeiling(
        np.array([by_seed[s]["accuracy"] for s in seeds]), float(results["ceiling"]), chunk, seeds
    )


def passkey_of(results: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """``{method: [paired seeds] passkey accuracy at the fine-tune scale}``."""
    seeds = studies.paired_seeds(dict(results))
    by_seed = {r["seed"]: r for r in results["runs"] if r["model"] == PASSKEY_MODEL}
    return {m: np.array([by_seed[s]["passkey"][m] for s in seeds]) for m in rc.FINETUNE_METHODS}


def deciding_ceiling(
    results: Mapping[str, Any] | None, profile: str, *, n_sequences: int, ceiling: float
) -> tuple[lay.ChunkCeiling | None, str]:
    """The study's chunk ceiling where it may decide the layouts chapter's finding: its runs are
    this profile's, read on the chapter's probe (``n_sequences``; the ``ceiling`` the chapter
    computed, so the very probe and chunks) on at least :data:`CEILING_SEEDS` paired seeds
    (:func:`ropebook.studies.deciding`); else ``None``. With the words for the page either
    way: the study, its seeds, machine, date and commit, or why it does not decide."""
    found, why = studies.deciding(
        None if results is None else dict(results), profile, study=STUDY, read=ceiling_of,
        settings={"n_sequences": n_sequences, "ceiling": ceiling}, models=(CEILING_MODEL,),
        min_seeds=CEILING_SEEDS,
    )  # fmt: skip
    return (found, _label(results, why)) if found is not None and results else (None, why)


def deciding_passkey(
    results: Mapping[str, Any] | None,
    profile: str,
    *,
    n_passkey: int,
    n_depths: int,
    finetune_scale: int,
    finetune_steps: int,
    finetune_lr_ratio: float,
) -> tuple[dict[str, rc.Paired] | None, str]:
    """Each rule's passkey gain over the control on the study's seeds
    (:func:`ropebook.analysis.recall.finetune_wins`) where it may decide the recall chapter's
    finding: its runs are this profile's, fine-tuned and tested with the chapter's settings, on
    at least :data:`PASSKEY_SEEDS` paired seeds; else ``None``. With the page's words either
    way."""
    settings = {
        "n_passkey": n_passkey, "n_depths": n_depths, "finetune_scale": finetune_scale,
        "finetune_steps": finetune_steps, "finetune_lr_ratio": finetune_lr_ratio,
    }  # fmt: skip
    found, why = studies.deciding(
        None if results is None else dict(results), profile, study=STUDY,
        read=lambda kept: rc.finetune_wins(passkey_of(kept)), settings=settings,
        models=(PASSKEY_MODEL,), min_seeds=PASSKEY_SEEDS,
    )  # fmt: skip
    return (found, _label(results, why)) if found is not None and results else (None, why)


def main(argv: list[str] | None = None) -> int:
    parser = studies.seeds_parser(
        STUDY, "Read Llama 4's chunk ceiling on k-back and RoPE's passkey after a fine-tune with "
        "PI, YaRN or none on many task seeds and write their results file.", seeds=SEEDS,
    )  # fmt: skip
    for name, what in (
        ("n_sequences", "the layouts chapter's n_sequences (its k-back probe: a quarter)"),
        ("n_passkey", "the recall chapter's n_passkey (sequences per passkey cell)"),
        ("n_depths", "the recall chapter's n_depths (needle depths)"),
        ("finetune_scale", "the recall chapter's finetune_scale (× the context)"),
        ("finetune_steps", "the recall chapter's finetune_steps"),
    ):
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=DEFAULTS[name],
                            help=f"{what} (default {DEFAULTS[name]})")  # fmt: skip
    parser.add_argument(
        "--finetune-lr-ratio", type=float, default=DEFAULTS["finetune_lr_ratio"],
        help=f"the recall chapter's finetune_lr_ratio (default {DEFAULTS['finetune_lr_ratio']})",
    )  # fmt: skip
    args = studies.parse(parser, argv, {
        "n_sequences": (2, "the probe needs sequences"),
        "n_passkey": (1, "a passkey cell needs a sequence"),
        "n_depths": (2, "the chapter's depths run from 0 to 100 %"),
        "finetune_scale": (2, "a fine-tune at a longer context"),
        "finetune_steps": (1, "a fine-tune needs a step"),
    })  # fmt: skip
    if not 0 < args.finetune_lr_ratio <= 1:
        parser.error(f"--finetune-lr-ratio must be in (0, 1], got {args.finetune_lr_ratio}")
    options = {name: getattr(args, name) for name in PASSKEY_SETTINGS} | {
        "n_sequences": args.n_sequences
    }
    records = measure(range(args.seeds), profile=args.profile, **options)
    ceilings = {r["ceiling"] for r in records if r["model"] == CEILING_MODEL}
    if len(ceilings) != 1:  # one probe, one chunk: every seed's ceiling is the same number
        raise ValueError(f"the seeds' ceilings differ: {sorted(ceilings)}")
    studies.write_from(
        STUDY, args, records, regime=REGIME, domain=DOMAIN,
        settings=("n_sequences", *PASSKEY_SETTINGS), models=list(MODELS),
        ceiling=ceilings.pop(),
    )  # fmt: skip
    return 0
