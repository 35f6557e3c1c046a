"""Table 2 in the lesson regime on many paired seeds: a study kept in the repository
(:mod:`ropebook.studies`).

The p_rope chapter reproduces the paper's Table 2 with the seven encodings of
:data:`ropebook.zoo.TABLE2` on both corpora of :data:`ropebook.analysis.ablation.DOMAINS`. A build
trains each on the profile's three seeds, too few to decide most of the paper's orderings (their
paired s.d. is 2-5 % of perplexity). This study trains the same specs on ``--seeds`` paired seeds
once (``python -m ropebook table2_study``) and keeps each run's validation perplexity, so the
chapter's verdicts rest on the study wherever its runs are the models the build trains (the same
profile, no stale spec: :func:`deciding_runs`), with the build's own seeds beside them.

The study's first seeds are the build's own models (same spec, same seed): :func:`reproduced`
compares them seed by seed, so a build on another machine says whether it reproduces the kept
runs within a margin fixed before the data. A build that loads the very runs the study kept (the
cache that trained the study: the same training provenance) tests nothing, and says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ropebook import studies, zoo
from ropebook.analysis import ablation

STUDY, REGIME = "table2_study", "lesson"


@dataclass(frozen=True)
class KeptRun:
    """One kept run as the p_rope chapter's comparisons read a zoo model: its seed, its
    validation perplexity and which training made it (:func:`training_of`; "" unknown)."""

    seed: int
    val_ppl: float
    training: str = ""


def training_of(provenance: Sequence[Mapping[str, Any]]) -> str:
    """A run's training calls (its checkpoint's provenance: host, build, start time, steps ...)
    as one string: equal for a run and the same checkpoint loaded again, different for an
    independent training (another build, host or start); "" where nothing was recorded."""
    return json.dumps(list(provenance), sort_keys=True) if provenance else ""


def as_kept(models: Mapping[tuple[str, str], Sequence]) -> dict[tuple[str, str], list[KeptRun]]:
    """A build's zoo models (``{(model, domain): [TrainedModel, ...]}``) as :class:`KeptRun`\ s,
    with the training each was made by."""
    return {
        key: [KeptRun(m.seed, m.val_ppl, training_of(studies.provenance(m))) for m in these]
        for key, these in models.items()
    }


def measure(
    seeds: Sequence[int], *, profile: str = "cpu", progress: bool = True
) -> list[dict[str, Any]]:
    """Train (or load, from ``ROPEBOOK_CACHE``) every Table 2 model on both corpora and
    ``seeds``; one record per run."""
    records = []
    for domain in ablation.DOMAINS:
        for name in zoo.TABLE2:
            runs = zoo.load_seeds(
                name, tuple(seeds), profile=profile, regime=REGIME, domain=domain,
                progress=progress,
            )  # fmt: skip
            records += [perplexity_record(run, name, domain) for run in runs]
    return records


def perplexity_record(run, name: str, domain: str) -> dict[str, Any]:
    """A trained zoo model ``run`` of ``name`` on ``domain`` as a study keeps it: its seed, spec,
    training seconds and provenance, and its validation perplexity."""
    return {
        "model": name, "domain": domain, "seed": run.seed, "overrides": {},
        "spec_hash": run.spec_hash, "seconds": run.seconds, "val_ppl": run.val_ppl,
        "provenance": studies.provenance(run),
    }  # fmt: skip


def kept() -> dict[str, Any] | None:
    """The kept results file (:func:`ropebook.studies.kept`)."""
    return studies.kept(STUDY, load)


def has_perplexity(run: dict[str, Any], results: dict[str, Any]) -> str | None:
    """What is wrong with a kept run's perplexity, in words; ``None`` if nothing."""
    ok = isinstance(run.get("val_ppl"), (int, float)) and run["val_ppl"] > 0
    return None if ok else "has no perplexity"


def load(path: Path | None = None) -> dict[str, Any]:
    """The kept results file, or a ValueError naming what is wrong with it (also a run without
    its perplexity, or a model or corpus missing)."""
    return studies.load_checked(
        STUDY, path, check_run=has_perplexity,
        required=[(n, d) for d in ablation.DOMAINS for n in zoo.TABLE2],
        key=lambda run: (run["model"], run.get("domain")),
    )  # fmt: skip


def runs(results: Mapping[str, Any]) -> dict[tuple[str, str], list[KeptRun]]:
    """``{(model, domain): [KeptRun, ...]}`` in seed order, on the seeds every model has (so
    every comparison pairs on all of them)."""
    common = studies.paired_seeds(dict(results))
    by_key: dict[tuple[str, str], dict[int, KeptRun]] = {}
    for r in results["runs"]:
        run = KeptRun(r["seed"], r["val_ppl"], training_of(r.get("provenance") or []))
        by_key.setdefault((r["model"], r["domain"]), {})[r["seed"]] = run
    return {key: [values[s] for s in common] for key, values in by_key.items()}


def deciding_runs(
    results: Mapping[str, Any] | None, profile: str
) -> tuple[dict[tuple[str, str], list[KeptRun]] | None, str]:
    """The study's runs where they are the models this profile trains
    (:func:`ropebook.studies.deciding`), else ``None``; with the reason in words either way."""
    return studies.deciding(
        None if results is None else dict(results), profile, study=STUDY, read=runs
    )


@dataclass(frozen=True)
class Reproduction:
    """The build's runs against the kept runs of the same spec and seed: the largest relative
    difference of validation perplexity, in %, over ``n`` shared runs trained apart from the
    kept ones, and where it is; ``same``: shared runs that *are* the kept runs (loaded from the
    cache that trained the study), which are left out."""

    n: int
    largest: float
    where: str
    same: int = 0

    def verdict(self, margin: float) -> str:
        """``held`` if every independently trained shared run's perplexity lies within
        ``± margin`` % of the kept one, ``not held`` if one does not; ``uninformative here`` if
        every shared run is a kept run loaded again (equal by construction), ``not testable
        here`` without a shared run."""
        if not margin > 0:
            raise ValueError(f"the margin must be positive, got {margin}")
        if self.n == 0:
            return "uninformative here" if self.same else "not testable here"
        return "held" if self.largest <= margin else "not held"


def reproduced(
    build: Mapping[tuple[str, str], Sequence], kept: Mapping[tuple[str, str], Sequence[KeptRun]]
) -> Reproduction:
    """Seed by seed, the build's runs (:class:`KeptRun`\ s, :func:`as_kept`) against the kept
    runs of the same model, corpus and seed; a pair made by the same training (both
    :attr:`KeptRun.training` recorded and equal) is counted apart, not compared."""
    n, same, largest, where = 0, 0, 0.0, "none"
    for key, these in build.items():
        by_seed = {r.seed: r for r in kept.get(key, ())}
        for run in these:
            if (other := by_seed.get(run.seed)) is None:
                continue
            if run.training and run.training == other.training:
                same += 1
                continue
            n += 1
            gap = 100 * abs(run.val_ppl / other.val_ppl - 1)
            if gap >= largest:
                largest, where = gap, f"{key[0]} on {key[1]}, seed {run.seed}"
    return Reproduction(n, largest, where, same)


def main(argv: list[str] | None = None) -> int:
    parser = studies.seeds_parser(
        STUDY, "Train Table 2's seven encodings on both corpora in the lesson regime on many "
        "paired seeds and write their results file.",
    )  # fmt: skip
    args = studies.parse(parser, argv)
    records = measure(range(args.seeds), profile=args.profile)
    studies.write_from(
        STUDY, args, records, regime=REGIME, domain=", ".join(ablation.DOMAINS),
        models=list(zoo.TABLE2),
    )  # fmt: skip
    return 0
