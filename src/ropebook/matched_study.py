"""Table 2's orderings in the matched regime on more paired seeds than a build trains: a study
kept in the repository (:mod:`ropebook.studies`).

The p_rope_headline chapter compares Table 2's encodings in the matched regime on the profile's
three seeds (the 0.75-RoPE − RoPE headline rests on the kept GPU study, :mod:`ropebook.recipes`).
Three seeds decide few of the other orderings: their paired s.d. is 1-2 % of perplexity. This
study trains ``--names`` (default :data:`MODELS`) on ``--seeds`` paired seeds once (``python -m
ropebook matched_study``) and keeps each run's validation perplexity, so an ordering whose two
encodings it trained rests on it wherever its runs are the models the build trains (the same
profile, no stale spec: :func:`deciding_runs`), with the build's own seeds beside. Its first
seeds are the build's own models (the same spec and seed).

**The seeds were chosen after seeing the build's.** The default pair is the one ordering whose
three-seed difference (0.75-RoPE − 0.75-RoPE reversed, −1.7 % [−4.5, +1.2] at 1.2 % paired s.d.
in the first cpu build, 2026-12-03) a CPU could resolve: 6 paired seeds detect that difference
(95 %, 80 % power), and the study trains 8. A seed count picked on an observed difference makes
the verdict *exploratory* (:data:`EXPLORATORY`), and the chapter records it so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ropebook import studies, table2_study, zoo

STUDY, REGIME, DOMAIN = "matched_study", "matched", "shakespeare"
MODELS = ("p-rope-0.75", "rope-reversed-0.75")  # the ordering 8 CPU seeds can resolve
EXPLORATORY = True  # its seeds were chosen on the build's observed difference


def measure(
    seeds: Sequence[int],
    *,
    profile: str = "cpu",
    names: Sequence[str] = MODELS,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Train (or load, from ``ROPEBOOK_CACHE``) each of ``names`` in the matched regime on
    Shakespeare and ``seeds``; one record per run, with its validation perplexity."""
    records = []
    for name in names:
        runs = zoo.load_seeds(
            name, tuple(seeds), profile=profile, regime=REGIME, domain=DOMAIN, progress=progress
        )
        records += [table2_study.perplexity_record(run, name, DOMAIN) for run in runs]
    return records


def kept() -> dict[str, Any] | None:
    """The kept results file (:func:`ropebook.studies.kept`)."""
    return studies.kept(STUDY, load)


def load(path: Path | None = None) -> dict[str, Any]:
    """The kept results file, or a ValueError naming what is wrong with it (also a run without
    its perplexity, a model the file names but has no runs of, or fewer than two models)."""
    results = studies.load_checked(STUDY, path, check_run=table2_study.has_perplexity, required=())
    where = studies.path_of(STUDY) if path is None else path
    models = list(results.get("models") or [])
    if len(models) < 2:
        raise ValueError(f"{where}: an ordering needs two models, the file names {models}")
    if missing := sorted(set(models) - {r["model"] for r in results["runs"]}):
        raise ValueError(f"{where}: no runs of {missing}")
    return results


def deciding_runs(
    results: Mapping[str, Any] | None, profile: str
) -> tuple[dict[tuple[str, str], list[table2_study.KeptRun]] | None, str]:
    """The study's runs (``{(model, "shakespeare"): [KeptRun, ...]}`` on the seeds every model
    has) where they are the models this profile trains (:func:`ropebook.studies.deciding`),
    else ``None``; with the reason in words either way."""
    return studies.deciding(
        None if results is None else dict(results), profile, study=STUDY, read=table2_study.runs
    )


def main(argv: list[str] | None = None) -> int:
    parser = studies.seeds_parser(
        STUDY, "Train Table 2 encodings in the matched regime on many paired seeds and write "
        "their results file.",
    )  # fmt: skip
    parser.add_argument(
        "--names", nargs="+", choices=zoo.TABLE2, default=list(MODELS),
        help="the encodings to train (at least two)",
    )  # fmt: skip
    args = studies.parse(parser, argv)
    if len(set(args.names)) < 2:
        parser.error(f"--names needs two encodings or more, got {args.names}")
    records = measure(range(args.seeds), profile=args.profile, names=args.names)
    args.names = " ".join(args.names)  # as the command line gave them
    studies.write_from(
        STUDY, args, records, regime=REGIME, domain=DOMAIN, settings=("names",),
        models=args.names.split(),
    )  # fmt: skip
    return 0
