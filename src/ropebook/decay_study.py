"""Trained queries and keys on many seeds: does a layer decay? A study kept in the repository
(:mod:`ropebook.studies`).

The decay chapter classes every layer of the lesson regime's trained models by the interval of its
decay contrast over seeds (:func:`ropebook.analysis.decay.trained_decay`). Its claim may pick any
layer, so each interval is a family-wise one (Bonferroni), and on the profile's three seeds a
Student-t interval at that level is too wide to show a layer flat or growing. This study measures
the same curves (:func:`ropebook.analysis.decay.held_out_curves`: the chapter's held-out windows,
each layer's mean activation by distance averaged over them) on ``--seeds`` lesson seeds once
(``python -m ropebook decay_study``) and keeps them, so the chapter decides where the study's runs
are the models its profile trains and it read the same windows (:func:`deciding_curves`), with the
build's own seeds beside.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ropebook import data, studies, zoo
from ropebook.analysis import decay

STUDY, REGIME, DOMAIN = "decay_study", "lesson", "shakespeare"
MODELS = ("rope", "p-rope-0.75")  # the decay chapter's model_names: RoPE, and 0.75-RoPE beside
DIGITS = 6  # significant digits kept of each curve value (float32 carries about 7)


def measure(
    seeds: Sequence[int],
    *,
    profile: str = "cpu",
    n_windows: int = 64,
    window_seed: int = 0,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Train (or load, from ``ROPEBOOK_CACHE``) every model of :data:`MODELS` on ``seeds`` and
    keep each one's curves ``[layers, T]`` (mean over the windows); one record per run."""
    tokens = data.load_tokens(DOMAIN, "test")
    records = []
    for name in MODELS:
        runs = zoo.load_seeds(
            name, tuple(seeds), profile=profile, regime=REGIME, domain=DOMAIN, progress=progress
        )
        for run in runs:
            curves = decay.held_out_curves(run, tokens, n_windows, window_seed).mean(axis=1)
            records.append({
                "model": name, "domain": DOMAIN, "seed": run.seed, "overrides": {},
                "spec_hash": run.spec_hash, "seconds": run.seconds,
                "provenance": studies.provenance(run),
                "curves": [[float(f"{v:.{DIGITS}g}") for v in layer] for layer in curves],
            })  # fmt: skip
    return records


def kept() -> dict[str, Any] | None:
    """The kept results file (:func:`ropebook.studies.kept`)."""
    return studies.kept(STUDY, load)


def _has_curves(run: dict[str, Any], results: dict[str, Any]) -> str | None:
    curves = np.asarray(run.get("curves", []), dtype=np.float64)
    if curves.ndim != 2 or curves.size == 0 or not np.isfinite(curves).all():
        return "has no finite [layers, T] curves"
    return None


def load(path=None) -> dict[str, Any]:
    """The kept results file, or a ValueError naming what is wrong with it (also a run whose
    curves are missing, not finite or of another shape than the rest, or a model missing)."""
    results = studies.load_checked(STUDY, path, check_run=_has_curves, required=MODELS)
    if len(shapes := {np.shape(r["curves"]) for r in results["runs"]}) > 1:
        where = studies.path_of(STUDY) if path is None else path
        raise ValueError(f"{where}: curves of different shapes {sorted(shapes)}")
    return results


def curves(results: Mapping[str, Any]) -> tuple[dict[tuple[str, int], np.ndarray], tuple[int, ...]]:
    """``({(model, seed): [layers, 1, T]}, seeds)`` on the seeds every model has: the shape
    :func:`ropebook.analysis.decay.trained_decay` reads (one "window", the mean over them, so
    each seed's contrast is that of its mean curve, as in the chapter)."""
    return studies.paired_arrays(dict(results), "curves", lambda curves: curves[:, None, :])


def deciding_curves(
    results: Mapping[str, Any] | None,
    profile: str,
    *,
    n_windows: int,
    window_seed: int,
    models: Sequence[str] = MODELS,
) -> tuple[tuple[dict[tuple[str, int], np.ndarray], tuple[int, ...]] | None, str]:
    """The study's curves and seeds where its runs are this profile's ``models`` measured on the
    chapter's windows (``n_windows``, ``window_seed``; :func:`ropebook.studies.deciding`), else
    ``None``; with the reason in words either way (for the page)."""
    settings = {"n_windows": n_windows, "window_seed": window_seed}
    return studies.deciding(
        None if results is None else dict(results), profile, study=STUDY, read=curves,
        settings=settings, models=models,
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = studies.seeds_parser(
        STUDY, "Measure the decay chapter's trained curves on many lesson seeds and write their "
        "results file.",
    )  # fmt: skip
    parser.add_argument(
        "--n-windows", type=int, default=64, help="held-out windows (the chapter's)"
    )
    parser.add_argument("--window-seed", type=int, default=0, help="the chapter's seed parameter")
    args = studies.parse(parser, argv, {"n_windows": (1, "a curve needs a window")})
    records = measure(
        range(args.seeds), profile=args.profile, n_windows=args.n_windows,
        window_seed=args.window_seed,
    )  # fmt: skip
    studies.write_from(
        STUDY, args, records, regime=REGIME, domain=DOMAIN,
        settings=("n_windows", "window_seed"), models=list(MODELS),
    )  # fmt: skip
    return 0
