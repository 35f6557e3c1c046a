"""Studies too costly for every build: trained once, kept in the repository as results files.

A study trains zoo models (cached by spec as every zoo model is) and keeps, per run, what a
chapter needs — losses, the spec hash, the zoo overrides that made it, where it ran — in
``data/results/<study>.json`` with the command that reproduces it, the commit, the date, the
machine and the package versions (:func:`write`, atomic). A chapter then shows the study beside
its own measurements with that provenance, never as if measured in its run, and :func:`stale`
names the runs whose spec the code no longer trains (the page says so). Where a study decides a
verdict, the build's own result stands beside it, and :func:`agreement` tests that the two agree
within a margin fixed before the data (:meth:`Agreement.equivalence`: Welch's interval of their
difference inside it; a disagreement is shown, never hidden). The studies:
:mod:`ropebook.recipes` (training recipes on paired seeds) and
:mod:`ropebook.layout_language` (the production layouts on language);
:mod:`ropebook.layout_ratio` (Gemma's layouts at 5 : 1, the global layer last and first);
:mod:`ropebook.table2_study` (the lesson regime's Table 2 on many paired seeds) and
:mod:`ropebook.matched_study` (its orderings in the matched regime);
:mod:`ropebook.decay_study` (trained decay), :mod:`ropebook.pe_zoo_study` (the PE zoo beyond its
context), :mod:`ropebook.apostrophe_study` (the apostrophe head and its controls) and
:mod:`ropebook.head_share_study` (the heads that use the fastest frequencies) on many lesson
seeds; :mod:`ropebook.decay_training_study` (the least-decaying layer over training, RoPE against
NoPE) on many flagship seeds; :mod:`ropebook.checkpoint_apostrophe_study` (SmolLM2's apostrophe
head) on many held-out windows of one checkpoint, and its confirmation on fresh ones; :mod:`ropebook.task_study` (Llama 4's chunk
ceiling, the fine-tuned passkey) on many task seeds. :func:`why_not_deciding` says when a kept
study may decide a run's verdicts, :func:`deciding` reads it where it may; a study on many seeds
keeps only its measurement and its reading, the rest is here (:func:`kept`,
:func:`load_checked`, :func:`seeds_parser`, :func:`write_from`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ropebook import claims, io, paths, zoo
from ropebook.stats.power import percent_of_perplexity

RESULTS_DIR = paths.REPO_ROOT / "data" / "results"
FORMAT = 1
RUN_FIELDS = ("model", "seed", "overrides", "spec_hash")  # every run record has these
MIN_SEEDS = 3  # a study on many seeds: fewer give no interval worth deciding on


def path_of(study: str) -> Path:
    return RESULTS_DIR / f"{study}.json"


def write(
    study: str,
    runs: list[dict[str, Any]],
    *,
    profile: str,
    regime: str,
    domain: str,
    command: str,
    path: Path | None = None,
    **about: Any,
) -> Path:
    """Keep ``runs`` (each with :data:`RUN_FIELDS`) with what reproduces them and where they
    ran; ``about`` adds the study's own settings."""
    from ropebook import buildrecord, pipeline  # commit, versions and machine, at write time

    for run in runs:
        if missing := [f for f in RUN_FIELDS if f not in run]:
            raise ValueError(f"{study}: a run record lacks {missing}: {run}")
    path = path_of(study) if path is None else Path(path)
    io.write_json_atomic(path, {
        "format": FORMAT, "study": study, "profile": profile, "regime": regime, "domain": domain,
        "seeds": sorted({r["seed"] for r in runs}), "command": command,
        "measured": datetime.date.today().isoformat(), "commit": pipeline._git_commit(),
        "machine": buildrecord.machine() | {
            "versions": pipeline.package_versions(), "devices": where_trained(),
            "matmul_precision": matmul_precision(),
        },
        **about, "runs": runs,
    })  # fmt: skip
    return path


def where_trained() -> str:
    """The devices JAX trains on here, e.g. ``"2 × cpu"`` or ``"1 × NVIDIA H100"``."""
    import jax

    kinds = sorted({d.device_kind if d.platform == "gpu" else d.platform for d in jax.devices()})
    return f"{len(jax.devices())} × {', '.join(kinds)}"


def matmul_precision() -> str:
    """JAX's float32 matrix-product precision here: ``default`` (float32 on CPUs; TF32 on recent
    NVIDIA GPUs) or what ``JAX_DEFAULT_MATMUL_PRECISION`` set (``highest``: float32 everywhere)."""
    import jax

    return str(jax.config.jax_default_matmul_precision or "default")


def measured_on(results: dict[str, Any]) -> str:
    """Where a results file was measured: its devices (files before they were kept: the CPU),
    the CPU and its cores, and the date."""
    machine = results["machine"]
    devices = f"; JAX on {machine['devices']}" if "devices" in machine else ""
    return f"{machine['cpu']} ({machine['cores']} cores{devices}), {results['measured']}"


def load(study: str, path: Path | None = None) -> dict[str, Any]:
    """A study's results file, or a ValueError naming what is wrong with it."""
    path = path_of(study) if path is None else Path(path)
    try:
        results = json.loads(path.read_text())
    except FileNotFoundError as error:
        raise ValueError(
            f"{path}: no results of the {study} study; run python -m ropebook {study}"
        ) from error
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from error
    if results.get("format") != FORMAT or results.get("study") != study or not results.get("runs"):
        raise ValueError(
            f"{path}: not a format-{FORMAT} results file of the {study} study with runs"
        )
    for run in results["runs"]:
        if missing := [f for f in RUN_FIELDS if f not in run]:
            raise ValueError(f"{path}: a run record lacks {missing}")
    return results


def stale(results: dict[str, Any]) -> list[str]:
    """The runs whose spec hash differs from what the current code would train (none: current)."""
    return [
        f"{r['model']} seed {r['seed']}" + (f" ({r['label']})" if r.get("label") else "")
        for r in results["runs"]
        if r["spec_hash"]
        != zoo.spec_hash(
            r["model"],
            seed=r["seed"],
            profile=results["profile"],
            regime=results["regime"],
            domain=r.get("domain", results["domain"]),  # a study over several corpora: per run
            **r["overrides"],
        )  # fmt: skip
    ]


def provenance(run) -> list[dict[str, Any]]:
    """A trained zoo model's provenance entries (where and how each training call ran)."""
    return json.loads((run.path / "checkpoint.json").read_text()).get("provenance", [])


# ---------------------------------------------------------------- a kept study deciding a verdict


def paired_seeds(results: dict[str, Any]) -> list[int]:
    """The seeds every model (on every corpus) of a study has, in order: those it pairs on."""
    by_key: dict[tuple[str, str], set[int]] = {}
    for r in results["runs"]:
        by_key.setdefault((r["model"], r.get("domain", results["domain"])), set()).add(r["seed"])
    return sorted(set.intersection(*by_key.values()))


def paired_arrays(
    results: dict[str, Any],
    field: str,
    shape: Callable[[np.ndarray], np.ndarray] = lambda values: values,
) -> tuple[dict[tuple[str, int], np.ndarray], tuple[int, ...]]:
    """``({(model, seed): shape(the run's field as a float64 array)}, seeds)`` on the seeds every
    model has (:func:`paired_seeds`): a kept per-run reading as its chapter's code reads it."""
    seeds = tuple(paired_seeds(results))
    by_run = {
        (r["model"], r["seed"]): shape(np.asarray(r[field], np.float64))
        for r in results["runs"]
        if r["seed"] in seeds
    }
    return by_run, seeds


def why_not_deciding(
    results: dict[str, Any] | None,
    profile: str,
    *,
    study: str,
    min_seeds: int,
    settings: dict[str, Any] | None = None,
) -> str | None:
    """Why a kept study cannot decide this run's verdicts, in words for the page; ``None`` where
    it can: it trained this ``profile``'s models, every run's spec is today's (:func:`stale`),
    it measured with the chapter's ``settings`` (windows, lengths ...: the file's top-level
    fields of those names) and pairs at least ``min_seeds`` seeds."""
    if results is None:
        return f"no kept study (python -m ropebook {study} makes it)"
    if results["profile"] != profile:
        return f"the kept study trained the {results['profile']} profile's models"
    if bad := stale(results):
        return f"the kept study's runs of {bad[0]} and {len(bad) - 1} more are stale"
    if other := [k for k, v in (settings or {}).items() if results.get(k) != v]:
        return "the kept study measured with " + ", ".join(
            f"{k} = {results.get(k)} (this run: {settings[k]})"
            for k in other  # type: ignore[index]
        )
    if (n := len(paired_seeds(results))) < min_seeds:
        return f"the kept study has {n} paired seed(s)"
    return None


def deciding_basis(results: dict[str, Any]) -> str:
    """What a deciding kept study rests on, for the page: its paired seeds, machine, date and
    commit."""
    where = f"{measured_on(results)}, commit {results['commit'][:7]}"
    return f"the kept study's {len(paired_seeds(results))} paired seeds ({where})"


def deciding(
    results: dict[str, Any] | None,
    profile: str,
    *,
    study: str,
    read: Callable[[dict[str, Any]], Any],
    settings: dict[str, Any] | None = None,
    models: Iterable[str] = (),
    min_seeds: int = MIN_SEEDS,
) -> tuple[Any | None, str]:
    """``(read(results), what it rests on)`` where the kept study may decide this run's verdicts
    (:func:`why_not_deciding`, and it has runs of every one of ``models``), else ``(None, why
    not)``: either way the second part is the page's words (:func:`deciding_basis`)."""
    kept = None if results is None else dict(results)
    why = why_not_deciding(kept, profile, study=study, min_seeds=min_seeds, settings=settings)
    if kept is None or why is not None:
        return None, str(why)
    if other := [n for n in models if n not in {r["model"] for r in kept["runs"]}]:
        return None, f"the kept study has no runs of {', '.join(other)}"
    return read(kept), deciding_basis(kept)


# ---------------------------------------------------------------- a study on many seeds


def kept(study: str, load_study: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
    """``load_study()`` where the study's results file is there (a repository without it:
    ``None``); a file that is there but broken raises, naming the problem."""
    return load_study() if path_of(study).exists() else None


def load_checked(
    study: str,
    path: Path | None,
    *,
    check_run: Callable[[dict[str, Any], dict[str, Any]], str | None],
    required: Iterable[Any],
    key: Callable[[dict[str, Any]], Any] = lambda run: run["model"],
) -> dict[str, Any]:
    """:func:`load`, then each run through ``check_run(run, results)`` (what is wrong with it in
    words, e.g. ``"has no perplexity"``; ``None`` if nothing; a ValueError for what is wrong
    with the file) and each of ``required`` present as some run's ``key``; every problem a
    ValueError naming the file."""
    where = path_of(study) if path is None else Path(path)
    results = load(study, where)
    for run in results["runs"]:
        try:
            problem = check_run(run, results)
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from error
        if problem:
            raise ValueError(f"{where}: run {run['model']} seed {run['seed']} {problem}")
    have = {key(run) for run in results["runs"]}
    if missing := [m for m in required if m not in have]:
        raise ValueError(f"{where}: no runs of {missing}")
    return results


def seeds_parser(study: str, description: str, seeds: int = 16) -> argparse.ArgumentParser:
    """A study's command line with what every study on many seeds takes (``--profile``,
    ``--seeds``); :func:`parse` reads it."""
    parser = argparse.ArgumentParser(prog=f"python -m ropebook {study}", description=description)
    parser.add_argument("--profile", default="cpu", choices=tuple(zoo.PROFILES))
    parser.add_argument("--seeds", type=int, default=seeds, help=f"seeds 0..N-1 (default {seeds})")
    return parser


def parse(
    parser: argparse.ArgumentParser,
    argv: list[str] | None,
    at_least: dict[str, tuple[int, str]] | None = None,
) -> argparse.Namespace:
    """``parser``'s arguments, refused before anything is measured where ``--seeds`` is under
    :data:`MIN_SEEDS` or an option of ``at_least`` (``dest -> (least, why)``) under its least."""
    args = parser.parse_args(argv)
    least = {"seeds": (MIN_SEEDS, "an interval needs them"), **(at_least or {})}
    for dest, (low, why) in least.items():
        if getattr(args, dest) < low:
            option = "--" + dest.replace("_", "-")
            parser.error(f"{option} must be at least {low} ({why}), got {getattr(args, dest)}")
    return args


def write_from(
    study: str,
    args: argparse.Namespace,
    runs: list[dict[str, Any]],
    *,
    regime: str,
    domain: str,
    settings: Sequence[str] = (),
    path: Path | None = None,
    **about: Any,
) -> Path:
    """:func:`write` the runs a study's command line (:func:`seeds_parser`) made, with that
    command (``--profile``, ``--seeds`` and each of ``settings``, argparse dests) and each
    setting as a field of the file (what :func:`why_not_deciding` compares with a chapter's),
    to ``path`` (default: the kept file)."""
    options = ("profile", "seeds", *settings)
    command = " ".join(
        [f"python -m ropebook {study}"]
        + [f"--{o.replace('_', '-')} {getattr(args, o)}" for o in options]
    )
    fields = {s: getattr(args, s) for s in settings if s != "domain"}  # domain: write's own
    path = write(
        study, runs, profile=args.profile, regime=regime, domain=domain, command=command,
        path=path, **fields, **about,
    )  # fmt: skip
    print(f"written: {path}")
    return path


# ---------------------------------------------------------------- a build against a kept study


@dataclass(frozen=True)
class Agreement:
    """A build's paired difference against a kept study's of the same comparison, each a mean
    with its Student-t interval in % of perplexity (``(mean, low, high)``), and the difference
    of the two means (study − build) with Welch's interval and two-sided p-value. The two
    samples must be independent (the study's seeds that the build also trained left out).
    ``sd_here`` and ``sd_kept``: each side's s.d. over seeds, in nats (what :meth:`seeds_to_agree`
    needs)."""

    here: tuple[float, float, float]
    kept: tuple[float, float, float]
    difference: tuple[float, float, float]
    p_value: float
    n_here: int
    n_kept: int
    confidence: float = 0.95
    sd_here: float = math.nan
    sd_kept: float = math.nan

    @property
    def testable(self) -> bool:
        return min(self.n_here, self.n_kept) >= 2

    @property
    def overlap(self) -> bool:
        """The two intervals overlap (a weaker test than :meth:`equivalence`)."""
        return self.here[1] <= self.kept[2] and self.kept[1] <= self.here[2]

    @property
    def agree(self) -> bool:
        """Welch's interval of the difference of the two means contains 0 (p ≥ 1 − confidence).
        Not a finding's rule: with few seeds the interval is wide and contains 0 whatever the
        truth (absence of evidence); :meth:`equivalence` is the test of agreement."""
        return self.testable and self.difference[1] <= 0 <= self.difference[2]

    def equivalence(self, margin: float) -> str:
        """The finding "the build agrees with the study within ``± margin`` % of perplexity"
        (a margin fixed before the data), an equivalence test on Welch's interval of the
        difference: ``held`` if the interval lies inside ``[−margin, margin]`` (whatever the
        difference is, it is smaller than the margin; a detected difference that small still
        agrees); else ``not held`` if it excludes 0 (they differ, by an amount not shown to be
        below the margin: evidence about the build or the study, never an error); else ``cannot
        decide`` (the interval contains 0 and reaches past the margin: too few seeds to tell
        agreement from a difference), as also with fewer than 2 seeds on a side (no interval:
        :func:`ropebook.claims.too_few_runs`)."""
        if not margin > 0:
            raise ValueError(f"the margin must be positive, got {margin}")
        if not self.testable:
            return claims.too_few_runs(min(self.n_here, self.n_kept))
        _, low, high = self.difference
        if -margin <= low and high <= margin:
            return "held"
        if low > 0 or high < 0:
            return "not held"
        return "cannot decide"

    def verdict(self, margin: float | None = None) -> str:
        """:meth:`equivalence` at ``margin``. Without one, the weak test this class began with
        (``held`` where the interval merely contains 0, :attr:`agree`), which leans to
        ``held`` on few seeds: kept only for a page's descriptive text, never a finding's
        rule."""
        if margin is not None:
            return self.equivalence(margin)
        if not self.testable:
            return claims.too_few_runs(min(self.n_here, self.n_kept))
        return "held" if self.agree else "not held"

    def can_show_agreement(self, margin: float) -> bool:
        """Whether these seed counts could show agreement within ``± margin`` % at all: Welch's
        interval for a difference of exactly 0, at the kept study's s.d. on both sides (its many
        seeds, not this build's outcome), lies inside the margin. Where it cannot, the
        equivalence test is null by design: it can show a disagreement, never an agreement."""
        from scipy import stats

        if not (self.testable and math.isfinite(self.sd_kept)):
            return False
        a, b = self.sd_kept**2 / self.n_here, self.sd_kept**2 / self.n_kept
        dof = (a + b) ** 2 / (a**2 / (self.n_here - 1) + b**2 / (self.n_kept - 1))
        half = stats.t.ppf(0.5 + self.confidence / 2, dof) * math.sqrt(a + b)
        return half < math.log1p(margin / 100)

    def seeds_to_agree(self, margin: float, limit: int = 10_000) -> int | None:
        """Fewest seeds in the build at which Welch's interval, at both sides' s.d.s and this
        difference of means (the study's seeds as they are), would lie inside ``± margin`` %:
        ``None`` without two seeds a side, or where no build seed count suffices (the mean
        difference, or the study's own share of the interval, reaches the margin)."""
        from scipy import stats

        if not (self.testable and math.isfinite(self.sd_here) and math.isfinite(self.sd_kept)):
            return None
        mean = math.log1p(self.difference[0] / 100)  # study − build, nats
        low, high = math.log1p(-margin / 100), math.log1p(margin / 100)
        vb = self.sd_kept**2 / self.n_kept
        for n in range(2, limit + 1):
            va = self.sd_here**2 / n
            se = math.sqrt(va + vb)
            if se == 0:
                return n if low <= mean <= high else None
            dof = (va + vb) ** 2 / (va**2 / (n - 1) + vb**2 / (self.n_kept - 1))
            half = stats.t.ppf(0.5 + self.confidence / 2, dof) * se
            if low <= mean - half and mean + half <= high:
                return n
        return None


def _mean_interval(values: np.ndarray, confidence: float) -> tuple[float, float, float]:
    from scipy import stats

    mean = float(np.mean(values))
    if len(values) < 2:
        return mean, math.nan, math.nan
    half = stats.t.ppf(0.5 + confidence / 2, len(values) - 1) * stats.sem(values)
    return mean, float(mean - half), float(mean + half)


def agreement(here: Sequence[float], kept: Sequence[float], confidence: float = 0.95) -> Agreement:
    """:class:`Agreement` of two independent samples of paired differences of losses (nats, one
    per seed): ``here`` a build's, ``kept`` a study's; formed on the losses, shown in %."""
    from scipy import stats

    a, b = np.asarray(here, np.float64).ravel(), np.asarray(kept, np.float64).ravel()
    if not (a.size and b.size):
        raise ValueError("agreement needs at least one seed on each side")
    mine, theirs = _mean_interval(a, confidence), _mean_interval(b, confidence)
    difference, p_value = (math.nan, math.nan, math.nan), math.nan
    if min(a.size, b.size) >= 2:
        va, vb = np.var(a, ddof=1) / a.size, np.var(b, ddof=1) / b.size
        se = math.sqrt(va + vb)
        dof = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1)) if se > 0 else 1.0
        mean = float(b.mean() - a.mean())
        half = float(stats.t.ppf(0.5 + confidence / 2, dof) * se)
        difference = (mean, mean - half, mean + half)
        p_value = float(2 * stats.t.sf(abs(mean) / se, dof)) if se > 0 else float(mean == 0)

    def percent(x: tuple[float, float, float]) -> tuple[float, float, float]:
        return tuple(percent_of_perplexity(v) for v in x)  # type: ignore[return-value]

    sd_here, sd_kept = (float(np.std(x, ddof=1)) if x.size >= 2 else math.nan for x in (a, b))
    return Agreement(
        percent(mine), percent(theirs), percent(difference), p_value, int(a.size), int(b.size),
        confidence, sd_here, sd_kept,
    )  # fmt: skip
