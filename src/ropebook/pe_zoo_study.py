"""The positional-encoding zoo beyond its context on many seeds: a study kept in the repository
(:mod:`ropebook.studies`).

The pe_zoo_length chapter orders RoPE, ALiBi, Kerple and FIRE by how much their perplexity grows from 1×
to ``max_factor`` × the training context (CABLE's Table 4), on paired seeds: each ordering needs
its paired ln-ratio differences' intervals over seeds to lie above 0, which the profile's three
seeds rarely show. This study measures the same quantity (each window's mean loss over its first
``L`` positions, :func:`ropebook.analysis.biases.mean_loss_by_length`, on the chapter's held-out
windows) on ``--seeds`` lesson seeds once (``python -m ropebook pe_zoo_study``) and keeps each
run's mean over the windows per length, so the chapter's orderings rest on it where its runs are
the models the profile trains and it read the same windows (:func:`deciding_losses`), with the
build's own seeds beside.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ropebook import data, studies, zoo
from ropebook.analysis import biases

STUDY, REGIME = "pe_zoo_study", "lesson"
MODELS = zoo.PE_ZOO  # rope, alibi, kerple, fire


@dataclass(frozen=True)
class ZooRuns:
    """The zoo as the pe_zoo chapters read it: ``models[name][seed]``, every encoding on
    ``seeds`` (those all of them were trained with, ``zoo.SEED_BUDGET``) and RoPE on
    ``rope_seeds`` (every seed the profile trains for it: Fig. 15 reads RoPE alone, not only the
    seeds the bias models share; not the seed plan's extra ones); ``one_seed``: the encodings
    the profile trains with one seed, so no comparison with them can be decided."""

    seeds: tuple[int, ...]
    rope_seeds: tuple[int, ...]
    models: dict[str, dict[int, Any]]
    one_seed: tuple[str, ...]


def zoo_runs(profile: str, domain: str = "shakespeare") -> ZooRuns:
    """Every model of :data:`MODELS` the chapters read, trained or loaded (:class:`ZooRuns`)."""
    seeds = tuple(
        sorted(set.intersection(*(set(zoo.seeds_for(n, profile=profile)) for n in MODELS)))
    )
    rope_seeds = tuple(zoo.seeds_for("rope", profile=profile, domain=domain, planned=False))
    models = {
        name: {
            s: zoo.load(name, seed=s, profile=profile, domain=domain, progress=False)
            for s in (rope_seeds if name == "rope" else seeds)
        }
        for name in MODELS
    }
    one_seed = tuple(n for n in MODELS if len(zoo.seeds_for(n, profile=profile, domain=domain)) < 2)
    return ZooRuns(seeds, rope_seeds, models, one_seed)


def factors(max_factor: int) -> list[int]:
    """The evaluation lengths in training contexts: 1, 2, 4 ... ``max_factor`` (a power of 2)."""
    if max_factor < 1 or max_factor & (max_factor - 1):
        raise ValueError(f"max_factor must be a power of two (1x, 2x, 4x, ...), got {max_factor}")
    return [2**k for k in range(int(math.log2(max_factor)) + 1)]


def measure(
    seeds: Sequence[int],
    *,
    profile: str = "cpu",
    domain: str = "shakespeare",
    max_factor: int = 8,
    n_windows: int = 16,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Train (or load, from ``ROPEBOOK_CACHE``) every model of :data:`MODELS` on ``seeds`` and
    keep, per run, the mean over ``n_windows`` held-out windows of the mean loss at each length
    (nats, ln of perplexity); one record per run."""
    records = []
    for name in MODELS:
        runs = zoo.load_seeds(
            name, tuple(seeds), profile=profile, regime=REGIME, domain=domain, progress=progress
        )
        for run in runs:
            context = run.config.context
            tokens = data.load_tokens(domain, "val", run.config.vocab_size)
            losses = biases.window_losses(run, tokens, max_factor * context, n_windows)
            by_length = biases.mean_loss_by_length(
                losses, [f * context for f in factors(max_factor)]
            )
            records.append({
                "model": name, "domain": domain, "seed": run.seed, "overrides": {},
                "spec_hash": run.spec_hash, "seconds": run.seconds,
                "provenance": studies.provenance(run),
                "mean_loss": [float(v) for v in by_length.mean(axis=0)],
            })  # fmt: skip
    return records


def kept() -> dict[str, Any] | None:
    """The kept results file (:func:`ropebook.studies.kept`)."""
    return studies.kept(STUDY, load)


def _has_losses(run: dict[str, Any], results: dict[str, Any]) -> str | None:
    try:
        n_lengths = len(factors(int(results["max_factor"])))
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"no valid max_factor ({error})") from error
    values = np.asarray(run.get("mean_loss", []), dtype=np.float64)
    if values.shape != (n_lengths,) or not np.isfinite(values).all():
        return (
            f"has no finite mean loss at each of the {n_lengths} lengths of max_factor "
            f"{results['max_factor']}"
        )
    return None


def load(path=None) -> dict[str, Any]:
    """The kept results file, or a ValueError naming what is wrong with it (also a run whose
    losses are missing, not finite or not one per length, or a model missing)."""
    return studies.load_checked(STUDY, path, check_run=_has_losses, required=MODELS)


def mean_losses(
    results: Mapping[str, Any],
) -> tuple[dict[tuple[str, int], np.ndarray], tuple[int, ...]]:
    """``({(model, seed): [1, lengths]}, seeds)`` on the seeds every model has: the shape the
    chapter's ``mean_loss`` has (one "window", the mean over them: a seed's paired difference
    is then the difference of its window means, as in the chapter)."""
    return studies.paired_arrays(dict(results), "mean_loss", lambda losses: losses[None, :])


def deciding_losses(
    results: Mapping[str, Any] | None,
    profile: str,
    *,
    domain: str,
    max_factor: int,
    n_windows: int,
) -> tuple[tuple[dict[tuple[str, int], np.ndarray], tuple[int, ...]] | None, str]:
    """The study's mean losses and seeds where its runs are this profile's models measured as
    the chapter measures (``domain``, ``max_factor``, ``n_windows``;
    :func:`ropebook.studies.deciding`), else ``None``; with the reason in words (for the page)."""
    settings = {"domain": domain, "max_factor": max_factor, "n_windows": n_windows}
    return studies.deciding(
        None if results is None else dict(results), profile, study=STUDY, read=mean_losses,
        settings=settings,
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = studies.seeds_parser(
        STUDY, "Measure the PE zoo's perplexity beyond the training context on many lesson "
        "seeds and write their results file.",
    )  # fmt: skip
    parser.add_argument("--domain", default="shakespeare", choices=data.DOMAINS)
    parser.add_argument("--max-factor", type=int, default=8, help="the chapter's max_factor")
    parser.add_argument("--n-windows", type=int, default=16, help="the chapter's n_windows")
    args = studies.parse(parser, argv, {"n_windows": (1, "a mean needs a window")})
    try:
        factors(args.max_factor)
    except ValueError as error:
        parser.error(str(error))
    records = measure(
        range(args.seeds), profile=args.profile, domain=args.domain,
        max_factor=args.max_factor, n_windows=args.n_windows,
    )  # fmt: skip
    studies.write_from(
        STUDY, args, records, regime=REGIME, domain=args.domain,
        settings=("domain", "max_factor", "n_windows"), models=list(MODELS),
    )  # fmt: skip
    return 0
