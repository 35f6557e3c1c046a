"""The least-decaying layer over training on many flagship seeds: does RoPE's decay fall more
than NoPE's? A study kept in the repository (:mod:`ropebook.studies`).

The decay chapter follows each flagship model's *least-decaying layer* (the smallest relative
decay contrast over its layers, :func:`ropebook.analysis.dynamics.decay_measure`) through its
snapshots, and decides ``decay.over_training`` on RoPE's change from the untrained model to the
last snapshot minus NoPE's, paired by seed (:func:`ropebook.analysis.dynamics.controlled_trend`).
The flagship regime trains three seeds per model (a cpu flagship model takes about 860 s a core),
too few for that difference: this study follows the same statistic on the chapter's held-out
windows for ``--seeds`` flagship seeds of RoPE and NoPE once (``python -m ropebook
decay_training_study``) and keeps each run's trajectory (tokens seen and value per snapshot),
so the chapter rebuilds the trajectories (:func:`trajectories`) and decides with its own
functions where the study's runs are the models its profile trains, read on its windows and
short distances, on the seeds planned here (:func:`deciding_runs`), with the build's own seeds
beside (:func:`beside`).

The plan, fixed before this study's data:

- Pilot: the cpu build's flagship seeds 0, 1, 2, as the decay chapter recorded them (executed at
  commit 0e0c2d7, 2026-12-03; the first cpu build, 1cf5e69, recorded the same verdict): RoPE −
  NoPE change +2.305 [−2.494, +7.105] (RoPE +2.671, NoPE +0.366; :data:`PILOT_DIFFERENCE`),
  minimum detectable difference 6.31 at 80 % power. The s.d. of the paired difference over the
  three seeds that interval implies (half-width = t₀.₉₇₅,₂ · s.d. / √3) is 1.93
  (:data:`PILOT_SD`).
- Target: a difference of **one unit of the contrast** (:data:`TARGET`), fixed by the
  statistic's definition, not by any outcome: the contrast is the short-minus-long activation
  divided by the layer's own mean absolute activation, so a difference of 1 means RoPE's
  rotation moved its least-decaying layer by a whole mean absolute activation more than training
  moved NoPE's — ten times the decay chapter's margin for a flat layer (``TRAINED_MARGIN``, a
  tenth), well under the contrast the all-ones argument for decay gives at the flagship's head
  size, base and context (about 3.6). Not the pilot's observed difference.
- Seeds: :func:`ropebook.stats.power.seeds_needed` at 95 % and 80 % power gives 32
  (:data:`SEEDS`): seeds 0..31 of each model, the build's three first. A pilot s.d. from three
  seeds is itself uncertain (its 95 % interval spans 0.52× to 6.3× it,
  :func:`ropebook.stats.power.sd_interval`), so 32 seeds may still leave the verdict open: the
  study then says so. It decides the finding only with at least those seeds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ropebook import data, studies
from ropebook.analysis import dynamics as dy
from ropebook.stats import power

STUDY, REGIME, DOMAIN = "decay_training_study", "flagship", "shakespeare"
MODELS = ("rope", "nope")  # the controlled trend: RoPE against its control without rotation
STATISTIC = "least-decaying layer"  # the chapter's statistic, its direction and reference line
TOWARD, REFERENCE = -1, 0.0
DIGITS = 6  # significant digits kept of each value (float32 carries about 7)

# The plan, fixed before the study's data (the module docstring says where each number is from).
PILOT_SEEDS, PILOT_COMMIT, PILOT_DATE = (0, 1, 2), "0e0c2d7", "2026-12-03"
PILOT_DIFFERENCE = (2.305, -2.494, 7.105)  # RoPE − NoPE change: mean, 95 % interval
PILOT_CHANGES = {"rope": 2.671, "nope": 0.366}  # each model's own mean change, beside
PILOT_MDE = 6.31  # the minimum detectable difference the chapter recorded (80 % power)
PILOT_SD = 1.93  # s.d. over the pilot's seeds of the paired difference
TARGET = 1.0  # a unit of the contrast: a whole mean |activation| of the layer
SEEDS = power.seeds_needed(PILOT_SD, TARGET)  # 80 % power, 95 %: 32

# The chapter's defaults (its parameters cell): what the study reads with unless told.
DEFAULTS = {"n_windows": 64, "window_seed": 0, "trained_short": 8}
SETTINGS = tuple(DEFAULTS)


def windows(context: int, n_windows: int, window_seed: int) -> np.ndarray:
    """The chapter's held-out windows for the flagship models: ``n_windows`` of ``context``
    tokens of the Shakespeare test split, drawn by ``Generator([window_seed, 8])``."""
    tokens = data.load_tokens(DOMAIN, "test")
    return data.sample_windows(tokens, context, n_windows, np.random.default_rng([window_seed, 8]))


def measure(
    seeds: Sequence[int],
    *,
    profile: str = "cpu",
    n_windows: int = DEFAULTS["n_windows"],
    window_seed: int = DEFAULTS["window_seed"],
    trained_short: int = DEFAULTS["trained_short"],
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Per seed: load (or train, from ``ROPEBOOK_CACHE``) the flagship RoPE and NoPE models and
    keep each one's least-decaying layer at every snapshot, on the chapter's windows
    (:func:`windows`) and short distances (``steps``, ``tokens`` seen and ``values``). One record
    per run, seed by seed (a seed's models leave memory before the next)."""
    records: list[dict[str, Any]] = []
    held_out = None
    for seed in seeds:
        models = dy.load_models(MODELS, profile=profile, regime=REGIME, domain=DOMAIN,
                                seeds=(seed,))  # fmt: skip
        if held_out is None:
            held_out = windows(models[MODELS[0]][0].config.context, n_windows, window_seed)
        for name in MODELS:
            (run,) = models[name]
            trajectory = dy.over_training(
                [run], dy.decay_measure(held_out, trained_short), toward={STATISTIC: TOWARD}
            )[STATISTIC]
            records.append({
                "model": name, "domain": DOMAIN, "seed": int(run.seed), "overrides": {},
                "spec_hash": run.spec_hash, "seconds": run.seconds, "trained_now": run.trained_now,
                "provenance": studies.provenance(run),
                "steps": [int(s) for s in trajectory.steps],
                "tokens": [int(t) for t in trajectory.tokens],
                "values": [float(f"{v:.{DIGITS}g}") for v in trajectory.values[0]],
            })  # fmt: skip
        if progress:
            change = {r["model"]: r["values"][-1] - r["values"][0] for r in records[-2:]}
            print(f"{STUDY}: seed {seed}: {STATISTIC} change "
                  + ", ".join(f"{n} {c:+.3f}" for n, c in change.items()), flush=True)  # fmt: skip
    return records


def kept() -> dict[str, Any] | None:
    """The kept results file (:func:`ropebook.studies.kept`)."""
    return studies.kept(STUDY, load)


def _check_run(run: dict[str, Any], results: dict[str, Any]) -> str | None:
    if run["model"] not in MODELS:
        raise ValueError(f"a run of {run['model']!r}, a model this study does not keep")
    steps, tokens, values = (np.asarray(run.get(k, []), np.float64)
                             for k in ("steps", "tokens", "values"))  # fmt: skip
    if values.ndim != 1 or values.size < 2 or not np.isfinite(values).all():
        return f"has no finite {STATISTIC} at two snapshots or more"
    if steps.shape != values.shape or tokens.shape != values.shape:
        return f"has {steps.size} steps and {tokens.size} token counts for {values.size} values"
    if steps[0] != 0 or np.any(np.diff(steps) <= 0):
        return "has no untrained snapshot (step 0) first, then rising steps"
    return None


def load(path=None) -> dict[str, Any]:
    """The kept results file, or a ValueError naming what is wrong with it: a run without a
    finite value at each of two snapshots or more (step 0 first), a run of another model, a model
    missing, runs whose snapshots differ (every run is one flagship spec), or a setting
    missing."""
    results = studies.load_checked(STUDY, path, check_run=_check_run, required=MODELS)
    where = studies.path_of(STUDY) if path is None else path
    if len({(tuple(r["steps"]), tuple(r["tokens"])) for r in results["runs"]}) > 1:
        raise ValueError(f"{where}: runs whose snapshots differ (steps or tokens seen)")
    if missing := [s for s in SETTINGS if s not in results]:
        raise ValueError(f"{where}: no settings {missing}")
    return results


def trajectories(results: Mapping[str, Any]) -> dict[str, dict[str, dy.Trajectory]]:
    """``{model: {STATISTIC: Trajectory}}`` on the seeds every model has: the chapter's
    ``decay_runs`` (:func:`ropebook.analysis.dynamics.over_training` of each model), for
    :func:`ropebook.analysis.dynamics.controlled_trends` and ``trend_test``."""
    by_run, seeds = studies.paired_arrays(dict(results), "values")
    first = next(r for r in results["runs"] if r["seed"] in seeds)
    return {
        name: {STATISTIC: dy.Trajectory(
            statistic=STATISTIC, model=name, seeds=seeds, steps=np.asarray(first["steps"]),
            tokens=np.asarray(first["tokens"]), values=np.stack([by_run[name, s] for s in seeds]),
            toward=TOWARD, reference=REFERENCE,
        )}
        for name in MODELS
    }  # fmt: skip


def deciding_runs(
    results: Mapping[str, Any] | None,
    profile: str,
    *,
    regime: str,
    n_windows: int,
    window_seed: int,
    trained_short: int,
) -> tuple[dict[str, dict[str, dy.Trajectory]] | None, str]:
    """The study's trajectories (:func:`trajectories`) where it may decide the chapter's
    finding: its runs are this profile's flagship RoPE and NoPE (``regime``: the chapter's),
    read on the chapter's windows and short distances, on at least :data:`SEEDS` paired seeds
    (:func:`ropebook.studies.deciding`); else ``None``. With the words for the page either
    way."""
    settings = {"regime": regime, "n_windows": n_windows, "window_seed": window_seed,
                "trained_short": trained_short}  # fmt: skip
    return studies.deciding(
        None if results is None else dict(results), profile, study=STUDY, read=trajectories,
        settings=settings, models=MODELS, min_seeds=SEEDS,
    )  # fmt: skip


def beside(
    claim: Mapping[str, Any], build: Sequence[dy.ControlledTrend], basis: str
) -> dict[str, Any]:
    """The claim fields the study decides (``claim``: ``present.dynamics.control_claim`` of its
    trajectories) with this build's own comparisons ``build`` beside in ``measured``, and the
    study's provenance (``basis``, :func:`deciding_runs`'s words) before what its seeds rest
    on."""
    here = "; ".join(
        f"{c.statistic}, {c.model} − {c.control} {c.difference.mean:+.3f}, "
        f"{c.difference.text} ({c.claim_verdict})"
        for c in build
    ) or "no control to set against"  # fmt: skip
    return dict(claim) | {
        "measured": f"{claim['measured']}; this build's own seeds, beside: {here}",
        "basis": "; ".join(filter(None, (basis, claim.get("basis")))),
    }


def main(argv: list[str] | None = None) -> int:
    parser = studies.seeds_parser(
        STUDY, "Follow the least-decaying layer of the flagship RoPE and NoPE models through "
        "training on many seeds (the decay chapter's decay.over_training) and write their "
        "results file.", seeds=SEEDS,
    )  # fmt: skip
    for name, what in (
        ("n_windows", "the decay chapter's n_windows (held-out windows)"),
        ("window_seed", "the decay chapter's seed parameter (its windows' draw)"),
        ("trained_short", "the decay chapter's trained_short (short distances 1..N)"),
    ):
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=DEFAULTS[name],
                            help=f"{what} (default {DEFAULTS[name]})")  # fmt: skip
    args = studies.parse(parser, argv, {
        "n_windows": (1, "a curve needs a window"),
        "window_seed": (0, "a numpy seed"),
        "trained_short": (1, "short distances start at 1"),
    })  # fmt: skip
    records = measure(range(args.seeds), profile=args.profile,
                      **{name: getattr(args, name) for name in SETTINGS})  # fmt: skip
    studies.write_from(
        STUDY, args, records, regime=REGIME, domain=DOMAIN, settings=SETTINGS,
        models=list(MODELS), statistic=STATISTIC,
    )  # fmt: skip
    return 0
