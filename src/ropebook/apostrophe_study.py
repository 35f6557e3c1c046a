"""The apostrophe head on many seeds, with its controls: a study kept in the repository
(:mod:`ropebook.studies`).

The semantic-channels chapter looks, in each lesson-regime RoPE model, for the head that attends
most to a previous apostrophe (the best lift on one half of its held-out windows, measured on the
other half; :func:`ropebook.analysis.semantic.apostrophe_heads`), and keeps the line only where
NoPE's best head and the untrained model's miss it. On the profile's three seeds the interval of
the lift is too wide to place it against the line. This study makes the same selection and
measurement on the same windows for ``--seeds`` seeds of RoPE, NoPE and RoPE's untrained twin
(``python -m ropebook apostrophe_study``) and keeps each seed's chosen head and its measured lift,
and RoPE's head's key excess (its slowest-quarter key share over its layer's other heads'), so
the chapter decides both of its apostrophe claims on the same runs where the study's runs are the
models its profile trains, read on its windows (:func:`deciding_estimates`), with the build's own
seeds beside.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ropebook import data, studies, zoo
from ropebook.analysis import semantic as sem

STUDY, REGIME, DOMAIN = "apostrophe_study", "lesson", "shakespeare"
MODEL, CONTROL = "rope", "nope"  # the chapter's model and its trained control
MODELS = (MODEL, CONTROL)
UNTRAINED = f"untrained {MODEL}"  # the key apostrophe_controls gives the untrained twin


def scans(models: Mapping, n_windows: int, window_seed: int, max_distance: int):
    """The chapter's two halves of held-out windows (BOS-led, ``n_windows // 2`` each, streams 71
    and 72 of ``window_seed``) and every model's scans on them: ``(windows, class_ids,
    selected, measured)``, the last two ``{(name, seed): scan}``."""
    config = next(iter(models.values())).config
    documents = [data.encode(text, bos=False) for _, text in data.load_texts(DOMAIN, "test")]
    class_ids = sem.class_token_ids(data.decode, config.vocab_size)
    windows = tuple(
        sem.bos_windows(
            documents, config.context, n_windows // 2, np.random.default_rng([window_seed, stream])
        )
        for stream in (71, 72)
    )
    selected, measured = (
        sem.scan_models(models, w, class_ids, max_distance=max_distance) for w in windows
    )
    return windows, class_ids, selected, measured


def measure(
    seeds: Sequence[int],
    *,
    profile: str = "cpu",
    n_windows: int = 48,
    window_seed: int = 0,
    max_distance: int = 32,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Train (or load, from ``ROPEBOOK_CACHE``) RoPE and NoPE on ``seeds`` and keep, per run,
    the head chosen on the selection windows and its lift on the measuring ones; RoPE's runs
    also keep their untrained twin's (``untrained_head``, ``untrained_lift``)."""
    models = {
        (name, run.seed): run
        for name in MODELS
        for run in zoo.load_seeds(
            name, tuple(seeds), profile=profile, regime=REGIME, domain=DOMAIN, progress=progress
        )
    }
    windows, class_ids, selected, measured = scans(models, n_windows, window_seed, max_distance)
    found = {
        name: sem.apostrophe_heads(
            {s: selected[name, s] for s in seeds}, {s: measured[name, s] for s in seeds}
        )
        for name in MODELS
    }
    untrained = sem.apostrophe_controls(
        models, selected, measured, windows, class_ids, max_distance=max_distance
    )[UNTRAINED]
    key_excess = sem.apostrophe_key_excess(
        {s: measured[MODEL, s] for s in seeds}, found[MODEL].heads
    )
    records = []
    for (name, seed), run in models.items():
        record = {
            "model": name, "domain": DOMAIN, "seed": seed, "overrides": {},
            "spec_hash": run.spec_hash, "seconds": run.seconds,
            "provenance": studies.provenance(run),
            **_reading(found[name], seed),
        }  # fmt: skip
        if name == MODEL:
            record.update({f"untrained_{k}": v for k, v in _reading(untrained, seed).items()})
            record["key_excess"] = key_excess[seed]
        records.append(record)
    return records


def _reading(heads, seed: int) -> dict[str, Any]:
    """One seed's chosen head and its measured lift from an ``ApostropheHeads``."""
    row = next(r for r in heads.lift_rows if r["seed"] == seed)
    return {"head": list(heads.heads[seed]), "lift": row["lift, measuring"]}


def kept() -> dict[str, Any] | None:
    """The kept results file (:func:`ropebook.studies.kept`)."""
    return studies.kept(STUDY, load)


def _has_lifts(run: dict[str, Any], results: dict[str, Any]) -> str | None:
    for key in ("lift", "untrained_lift", "key_excess") if run["model"] == MODEL else ("lift",):
        if not isinstance(run.get(key), (int, float)) or not np.isfinite(run[key]):
            return f"has no finite {key}"
    return None


def load(path=None) -> dict[str, Any]:
    """The kept results file, or a ValueError naming what is wrong with it (also a run without
    a finite lift, a RoPE run without its untrained twin's or its key excess, or a model
    missing)."""
    return studies.load_checked(STUDY, path, check_run=_has_lifts, required=MODELS)


def lifts(results: Mapping[str, Any]) -> tuple[dict[str, list[float]], tuple[int, ...]]:
    """``({model: [lift per seed]}, seeds)`` on the seeds every model has, for RoPE, NoPE and
    RoPE's untrained twin (:data:`UNTRAINED`)."""
    seeds = tuple(studies.paired_seeds(dict(results)))
    by_run = {(r["model"], r["seed"]): r for r in results["runs"]}
    found = {name: [by_run[name, s]["lift"] for s in seeds] for name in MODELS}
    found[UNTRAINED] = [by_run[MODEL, s]["untrained_lift"] for s in seeds]
    return found, seeds


def key_excess(results: Mapping[str, Any]) -> list[float]:
    """RoPE's apostrophe head's key excess per paired seed, in the order of :func:`lifts`
    (:func:`ropebook.analysis.semantic.apostrophe_key_excess`)."""
    seeds = studies.paired_seeds(dict(results))
    by_seed = {r["seed"]: r["key_excess"] for r in results["runs"] if r["model"] == MODEL}
    return [by_seed[s] for s in seeds]


@dataclass(frozen=True)
class Kept:
    """What the chapter reads from the kept study: each model's best-head lift over its seeds
    (RoPE first, then its controls) and RoPE's apostrophe head's key excess over the same
    seeds, so the low-frequency claim is gated and measured on the same runs."""

    lifts: dict[str, Any]
    key_excess: Any


def deciding_lifts(
    results: Mapping[str, Any] | None,
    profile: str,
    *,
    n_windows: int,
    window_seed: int,
    max_distance: int,
) -> tuple[tuple[dict[str, list[float]], tuple[int, ...]] | None, str]:
    """The study's lifts and seeds where its runs are this profile's models read on the
    chapter's windows (``n_windows``, ``window_seed``, ``max_distance``;
    :func:`ropebook.studies.deciding`), else ``None``; with the reason in words either way."""
    settings = {"n_windows": n_windows, "window_seed": window_seed, "max_distance": max_distance}
    return studies.deciding(
        None if results is None else dict(results), profile, study=STUDY, read=lifts,
        settings=settings,
    )  # fmt: skip


def deciding_estimates(
    results: Mapping[str, Any] | None,
    profile: str,
    *,
    n_windows: int,
    window_seed: int,
    max_distance: int,
) -> tuple[Kept | None, str]:
    """The kept study as the chapter reads it (:class:`Kept`: intervals over the study's seeds)
    where it may decide (:func:`deciding_lifts`), with what it rests on; else ``None`` and
    "this build's seeds (why not)", for the page."""
    found, why = deciding_lifts(
        results, profile, n_windows=n_windows, window_seed=window_seed, max_distance=max_distance
    )
    if found is None or results is None:
        return None, f"this build's seeds ({why})"
    n = len(found[1])
    return Kept(
        {name: sem.seed_or_window_interval(v, None, n) for name, v in found[0].items()},
        sem.seed_or_window_interval(key_excess(results), None, n),
    ), why


def main(argv: list[str] | None = None) -> int:
    parser = studies.seeds_parser(
        STUDY, "Find and measure the apostrophe head of RoPE, NoPE and untrained RoPE on many "
        "lesson seeds and write their results file.",
    )  # fmt: skip
    parser.add_argument(
        "--n-windows", type=int, default=48, help="held-out windows, half to select (the chapter's)"
    )
    parser.add_argument("--window-seed", type=int, default=0, help="the chapter's seed parameter")
    parser.add_argument("--max-distance", type=int, default=32, help="the chapter's max_distance")
    args = studies.parse(parser, argv, {
        "n_windows": (2, "one to select, one to measure"),
        "max_distance": (1, "a previous apostrophe is at least one token back"),
    })  # fmt: skip
    records = measure(
        range(args.seeds), profile=args.profile, n_windows=args.n_windows,
        window_seed=args.window_seed, max_distance=args.max_distance,
    )  # fmt: skip
    studies.write_from(
        STUDY, args, records, regime=REGIME, domain=DOMAIN,
        settings=("n_windows", "window_seed", "max_distance"),
    )  # fmt: skip
    return 0
