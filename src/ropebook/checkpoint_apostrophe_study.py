"""SmolLM2-135M's apostrophe head on a planned number of held-out windows: a study kept in the
repository (:mod:`ropebook.studies`).

The semantic-channels chapter scans a real checkpoint as it scans the book's models
(:func:`ropebook.analysis.semantic.checkpoint_scans`: ``checkpoint_windows`` BOS-led windows of
held-out Shakespeare, half to select the head with the best apostrophe lift, half to measure it;
one checkpoint, so the windows are the unit). Two findings have a SmolLM2 part:
``semantic_channels.apostrophe_head`` (the head's lift against the line ``lift_threshold`` =
0.1, fixed before the data) and ``semantic_channels.apostrophe_low_freq`` (the head's
slowest-quarter key share over its layer's other heads', gated on that lift). Both were *cannot
decide* on the cpu build's 64 windows, which serve as the pilot that planned this study:

- the pilot: the semantic-channels chapter of the cpu build at commit 52bd5d6 (with uncommitted
  edits; 2026-12-03): 64 windows of 128 tokens, seed 0, ``max_distance`` 32; its selection half
  chose L29H4 (:data:`PILOT_HEAD`), and 27 of its 32 measuring windows have a query after an
  apostrophe (:data:`PILOT_USABLE`, :data:`PILOT_MEASURING`). The head's lift: 0.064, 95 % CI
  [0.0022, 0.1262] over those 27 windows (:data:`PILOT_LIFT`), a per-window s.d. of 0.157
  (:data:`PILOT_SD`: the half-width over t with 26 degrees of freedom, times √27).
- the target, fixed before this study's data and not from the pilot's distance to the line:
  half the line, 0.05 (:data:`TARGET`): a head whose lift lies half the line away from it is
  told from the line with 80 % power at 95 % (:func:`ropebook.stats.power.seeds_needed`: 80
  usable measuring windows, :data:`USABLE_NEEDED`), divided by the pilot's share of usable
  measuring windows (27 of 32: 95 measuring windows) and doubled, since half the windows select
  the head: 190 windows (:data:`WINDOWS`).

The study draws its windows as the chapter does (:func:`~ropebook.analysis.semantic.bos_windows`
takes one window after another from the generators of streams 71 and 72 of the seed, so a larger
count starts with the chapter's: its first 32 selection and 32 measuring windows are the
pilot's), selects the head on all of its selection windows (so it may choose another head than
the pilot's) and keeps, per measuring window, the head's lift (``None`` where the window has no
apostrophe) and its key excess over its layer's other heads, so the chapter rebuilds the same
intervals (:func:`estimates`). ``python -m ropebook checkpoint_apostrophe_study`` writes
``data/results/checkpoint_apostrophe_study.json``; the chapter decides SmolLM2's parts on it
where it read this very checkpoint (:func:`fingerprint`) with the chapter's context, seed and
``max_distance`` on at least the planned windows (:func:`deciding_estimates`), the build's own
reading beside (:func:`reading`).

**The confirmation** (``--confirm``, ``data/results/checkpoint_confirmation.json``). The study's
selection half chose another head than the pilot's, L7H6, whose lift over its 79 usable
measuring windows, 0.125 [0.077, 0.174], still straddles the line. A second stage measures that
head, fixed, on fresh windows: none shares a token with another or with the study's 190
(:func:`~ropebook.analysis.semantic.checkpoint_fresh_scan`, generator stream 75 of the seed; the
chapter draws from 71-74), so the study's windows plan the confirmation and do not judge it.
Its plan, fixed before its data: the study's per-window s.d. of that head's lift, 0.217
(:data:`STUDY_SD`), and a target of a quarter of the line, 0.025 (:data:`CONFIRM_TARGET`: the
study's lift sat 0.025 from the line, so this target was chosen on it; the confirmation's own
windows are new), give 594 usable windows at 80 % power and 95 %; over the study's usable share
(79 of 95), 715 windows (:data:`CONFIRM_WINDOWS`). Where the confirmation read this checkpoint
with the chapter's settings, on the study's head, with the study's windows left out and on the
planned count, SmolLM2's parts rest on it (:func:`why_not_confirming`); the interval is judged
alone, not pooled with the study's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ropebook import real_model, studies, zoo
from ropebook.analysis import Estimate
from ropebook.analysis import semantic as sem
from ropebook.io import sha256_file
from ropebook.stats import power

STUDY, REGIME, DOMAIN = "checkpoint_apostrophe_study", "checkpoint", "shakespeare"
SETTINGS = ("n_windows", "context", "window_seed", "max_distance")  # the file's, as the chapter's

# The plan, fixed before the study's data: the pilot (the cpu build's SmolLM2 scan) and the target.
PILOT_COMMIT, PILOT_DATE, PILOT_WINDOWS = "52bd5d6", "2026-12-03", 64
PILOT_SETTINGS = {"context": 128, "window_seed": 0, "max_distance": 32}  # the cpu chapter's
PILOT_HEAD = (29, 4)  # the head the pilot's selection half chose (L29H4)
PILOT_MEASURING, PILOT_USABLE = 32, 27  # measuring windows; those with an apostrophe query
PILOT_LIFT = (0.064, 0.0022, 0.1262)  # the best head's lift: mean, 95 % interval over windows
PILOT_SD = 0.157  # its s.d. over the 27 windows (from the interval, t with 26 d.f.)
LIFT_LINE = 0.1  # the chapter's lift_threshold
TARGET = LIFT_LINE / 2  # half the line: the distance from it told apart at 80 % power
USABLE_NEEDED = power.seeds_needed(PILOT_SD, TARGET)  # usable measuring windows, 80 % power, 95 %
WINDOWS = 2 * math.ceil(USABLE_NEEDED * PILOT_MEASURING / PILOT_USABLE)  # half select, half measure

# The confirmation's plan, fixed before its data: the kept study (commit 42b948f) is its pilot.
CONFIRM_STUDY, CONFIRM_STREAM = "checkpoint_confirmation", 75  # the chapter draws from 71-74
CONFIRM_SETTINGS = (*SETTINGS, "used_windows", "stream")
STUDY_COMMIT, STUDY_HEAD = "42b948f", (7, 6)  # the head the study's 95 selection windows chose
STUDY_MEASURING, STUDY_USABLE = WINDOWS // 2, 79  # its measuring windows; with an apostrophe query
STUDY_LIFT = (0.1253, 0.0767, 0.1739)  # that head's lift: mean, 95 % interval over the 79
STUDY_SD = 0.2171  # its s.d. over those windows
CONFIRM_TARGET = LIFT_LINE / 4  # 0.025: the study's lift sat 0.0253 from the line
CONFIRM_USABLE_NEEDED = power.seeds_needed(STUDY_SD, CONFIRM_TARGET)  # 80 % power at 95 %
CONFIRM_WINDOWS = math.ceil(CONFIRM_USABLE_NEEDED * STUDY_MEASURING / STUDY_USABLE)  # all measure


def fingerprint(folder: Path | str) -> str:
    """What identifies a checkpoint folder for this study (16 hex digits): the sha256 of every
    file's name and sha256 but ``provenance.json`` (config, tokenizer, weights: what the scan
    reads). The weights' sha256 is the one :mod:`ropebook.real_model` recorded where the folder
    has its ``provenance.json`` (:func:`ropebook.real_model.ensure` verifies it on every call),
    else hashed here."""
    folder = Path(folder)
    recorded: dict[str, str] = {}
    try:
        provenance = json.loads((folder / real_model.PROVENANCE).read_text())
        recorded["model.safetensors"] = str(provenance["weights_sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    digest = hashlib.sha256()
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.name != real_model.PROVENANCE and not path.name.startswith("."):
            digest.update(f"{path.name}\0{recorded.get(path.name) or sha256_file(path)}\n".encode())
    return digest.hexdigest()[:16]


def key_excess_by_window(scan: sem.SemanticScan, layer: int, head: int) -> np.ndarray:
    """``[W]``: per measuring window, the head's slowest-quarter share of key chunk norm minus
    the mean share of its layer's other heads: the per-window reading
    :func:`~ropebook.analysis.semantic.apostrophe_bands` puts its interval on (the same sums)."""
    from ropebook.analysis.frequencies import band_share

    keys = scan.window_k_norms  # [W, L, H, K]
    others = [h for h in range(keys.shape[-2]) if h != head]
    other = np.mean([band_share(keys[..., layer, h, :], 0.25, "low") for h in others], axis=0)
    return band_share(keys[:, layer, head], 0.25, "low") - other


def measure(
    n_windows: int,
    *,
    context: int,
    seed: int,
    max_distance: int,
    profile: str = "cpu",
    folder: Path | str | None = None,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Scan the checkpoint (``folder``, default the chapter's for ``profile``: SmolLM2) on
    ``n_windows`` windows of ``context`` tokens as the chapter does and keep, in one run record,
    the head chosen on the selection half and, per measuring window, its lift and key excess."""
    folder = real_model.resolve("profile", profile) if folder is None else Path(folder)
    if folder is None:
        raise ValueError(f"the {profile} profile reads no checkpoint")
    found = fingerprint(folder)
    start = time.perf_counter()
    if progress:
        print(f"{STUDY}: scanning {folder.name} on {n_windows} windows of {context} tokens",
              flush=True)  # fmt: skip
    selected, measured = sem.checkpoint_scans(
        folder, n_windows, context, seed, max_distance=max_distance
    )
    layer, head = sem.apostrophe_heads(selected, measured).heads[0]
    record = head_record(measured[0], (layer, head), folder.name, seed, found, start)
    if progress:
        print(f"{STUDY}: head L{layer}H{head}, {record['seconds']} s", flush=True)
    return [record]


def head_record(
    scan: sem.SemanticScan, head: tuple[int, int], model: str, seed: int, found: str, start: float
) -> dict[str, Any]:
    """One run record of a checkpoint's ``head`` on a ``scan``'s windows: its lift per window
    (``None`` where the window has no apostrophe query) and its key excess, with the checkpoint's
    name and fingerprint ``found`` and the seconds since ``start``."""
    layer, index = head
    lifts = scan.window_prev_lift[:, layer, index]
    return {
        "model": model, "seed": seed, "overrides": {}, "spec_hash": found, "head": [layer, index],
        "window_lift": [float(v) if np.isfinite(v) else None for v in lifts],
        "window_key_excess": [float(v) for v in key_excess_by_window(scan, layer, index)],
        "n_class_prev": scan.n_class_prev, "seconds": round(time.perf_counter() - start, 1),
    }  # fmt: skip


def measure_confirmation(
    n_windows: int,
    head: tuple[int, int],
    *,
    context: int,
    seed: int,
    max_distance: int,
    used_windows: int,
    folder: Path | str,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Scan the checkpoint ``folder`` on ``n_windows`` fresh windows (none shares a token with
    another or with the ``used_windows`` the study read at ``seed``) and keep, in one run record
    like :func:`measure`'s, the fixed ``head``'s lift and key excess per window."""
    folder = Path(folder)
    found = fingerprint(folder)
    start = time.perf_counter()
    if progress:
        print(f"{CONFIRM_STUDY}: L{head[0]}H{head[1]} of {folder.name} on {n_windows} fresh "
              f"windows of {context} tokens", flush=True)  # fmt: skip
    scan = sem.checkpoint_fresh_scan(
        folder, n_windows, context, seed, used_windows=used_windows, stream=CONFIRM_STREAM,
        max_distance=max_distance,
    )  # fmt: skip
    record = head_record(scan, head, folder.name, seed, found, start)
    if progress:
        print(f"{CONFIRM_STUDY}: {record['seconds']} s", flush=True)
    return [record]


def kept() -> dict[str, Any] | None:
    """The kept results file (:func:`ropebook.studies.kept`)."""
    return studies.kept(STUDY, load)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_run(
    run: dict[str, Any],
    results: dict[str, Any],
    settings: tuple[str, ...] = SETTINGS,
    share: int = 2,
) -> str | None:
    """What is wrong with the run of a file of ``settings`` whose ``n_windows // share`` windows
    measure (the study: half; the confirmation: all)."""
    if missing := [s for s in (*settings, "checkpoint", "fingerprint") if s not in results]:
        raise ValueError(f"no settings {missing}")
    if bad := [s for s in settings if not _int(results[s])]:
        raise ValueError(f"settings {bad} that are not whole numbers")
    if len(results["runs"]) != 1:
        raise ValueError(f"{len(results['runs'])} runs, not the one checkpoint's")
    if run["spec_hash"] != results["fingerprint"] or run["model"] != results["checkpoint"]:
        return "is not the file's checkpoint"
    head = run.get("head")
    if not (isinstance(head, list) and len(head) == 2 and all(_int(h) for h in head)):
        return "has no head [layer, head]"
    half = results["n_windows"] // share
    lifts, excess = run.get("window_lift"), run.get("window_key_excess")
    if not (isinstance(lifts, list) and len(lifts) == half):
        return f"has no lift for each of its {half} measuring windows"
    if not all(v is None or _number(v) for v in lifts) or sum(map(_number, lifts)) < 2:
        return "has lifts that are not finite, or fewer than 2 (no interval)"
    if not (isinstance(excess, list) and len(excess) == half and all(map(_number, excess))):
        return f"has no finite key excess for each of its {half} measuring windows"
    return None


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def load(path=None) -> dict[str, Any]:
    """The kept results file, or a ValueError naming what is wrong with it: a setting missing,
    other than one run, a run of another checkpoint than the file names, without its head, or
    without a lift (finite or ``None``) and a finite key excess per measuring window."""
    return studies.load_checked(STUDY, path, check_run=_check_run, required=())


def load_confirmation(path=None) -> dict[str, Any]:
    """The kept confirmation, checked as :func:`load` checks the study (every window measures)."""

    def check(run: dict[str, Any], results: dict[str, Any]) -> str | None:
        return _check_run(run, results, CONFIRM_SETTINGS, share=1)

    return studies.load_checked(CONFIRM_STUDY, path, check_run=check, required=())


def confirmation() -> dict[str, Any] | None:
    """The kept confirmation file (:func:`ropebook.studies.kept`)."""
    return studies.kept(CONFIRM_STUDY, load_confirmation)


@dataclass(frozen=True)
class Kept:
    """What the chapter reads from the kept study: the head's lift and its key excess over its
    layer's other heads, each an interval over the study's measuring windows (as
    :func:`~ropebook.analysis.semantic.apostrophe_heads` and
    :func:`~ropebook.analysis.semantic.apostrophe_bands` make them for one checkpoint)."""

    lift: Estimate
    key_excess: Estimate
    head: tuple[int, int]
    n_windows: int


def estimates(results: Mapping[str, Any]) -> Kept:
    """The kept readings rebuilt: the same intervals the chapter's functions give on a scan."""
    run = results["runs"][0]
    lifts = np.array([np.nan if v is None else v for v in run["window_lift"]], np.float64)
    excess = np.asarray(run["window_key_excess"], np.float64)
    return Kept(
        sem.seed_or_window_interval(None, lifts, 1),
        sem.seed_or_window_interval(None, excess, 1),
        tuple(run["head"]), int(results["n_windows"]),
    )  # fmt: skip


def why_not_deciding(
    results: Mapping[str, Any] | None,
    folder: Path | str | None,
    settings: Mapping[str, Any],
    min_windows: int | None = None,
    name: str = "the kept study",
    command: str = STUDY,
) -> str | None:
    """Why the kept study (``name``) cannot decide this run's SmolLM2 parts, in words; ``None``
    where it can: it read this very checkpoint (:func:`fingerprint`), with ``settings`` (the
    chapter's ``context``, ``window_seed``, ``max_distance``), on at least ``min_windows``
    windows (the plan's: :data:`WINDOWS` where ``None``); without a file, it names the
    ``command`` that makes one."""
    min_windows = WINDOWS if min_windows is None else min_windows
    if results is None:
        return f"no {name.removeprefix('the ')} (python -m ropebook {command} makes it)"
    if folder is None:
        return "no checkpoint read here"
    if results["fingerprint"] != (mine := fingerprint(folder)):
        return (f"{name} read another checkpoint ({results['checkpoint']}, fingerprint "
                f"{results['fingerprint']}; this one's {mine})")  # fmt: skip
    if other := [k for k, v in settings.items() if results.get(k) != v]:
        return f"{name} measured with " + ", ".join(
            f"{k} = {results.get(k)} (this run: {settings[k]})" for k in other
        )
    if results["n_windows"] < min_windows:
        n = results["n_windows"]
        return f"{name} has {n} windows, fewer than its plan's {min_windows}"
    return None


def why_not_confirming(
    confirmed: Mapping[str, Any] | None,
    results: Mapping[str, Any] | None,
    folder: Path | str | None,
    settings: Mapping[str, Any],
    min_windows: int | None = None,
) -> str | None:
    """Why the kept confirmation cannot decide this run's SmolLM2 parts, in words; ``None`` where
    it can: as :func:`why_not_deciding` (this checkpoint, these settings, its plan's windows),
    on the head the kept study ``results`` chose, with all of the study's windows left out."""
    name, least = "the kept confirmation", CONFIRM_WINDOWS if min_windows is None else min_windows
    if why := why_not_deciding(confirmed, folder, settings, least, name, f"{STUDY} --confirm"):
        return why
    if results is None:
        return f"{name} has no kept study to confirm"
    head, chosen = confirmed["runs"][0]["head"], results["runs"][0]["head"]
    if head != chosen:
        return (
            f"{name} measured L{head[0]}H{head[1]}, not the kept study's L{chosen[0]}H{chosen[1]}"
        )
    if confirmed["used_windows"] != results["n_windows"]:
        return (f"{name} left out {confirmed['used_windows']} windows, not the kept study's "
                f"{results['n_windows']}")  # fmt: skip
    return None


def basis(results: Mapping[str, Any]) -> str:
    """What a deciding kept study rests on, for the page: its head, windows, checkpoint, machine,
    date and commit."""
    machine = results["machine"]
    layer, head = results["runs"][0]["head"]
    return (
        f"head L{layer}H{head} in the kept study {STUDY}'s {results['n_windows']} windows of "
        f"{results['checkpoint']} "
        f"({machine['cpu']}, {machine['cores']} cores, torch on the CPU; {results['measured']}, "
        f"commit {results['commit'][:7]})"
    )


def confirmation_basis(confirmed: Mapping[str, Any], results: Mapping[str, Any]) -> str:
    """What a deciding confirmation rests on, for the page: the head and the study that chose
    it, the fresh windows, machine, date and commit, and the study's own measuring windows."""
    machine = confirmed["machine"]
    layer, head = confirmed["runs"][0]["head"]
    study = estimates(results).lift
    return (
        f"head L{layer}H{head}, chosen on the kept study {STUDY}'s {results['n_windows'] // 2} "
        f"selection windows (commit {results['commit'][:7]}), measured on {CONFIRM_STUDY}'s "
        f"{confirmed['n_windows']} fresh windows of {confirmed['checkpoint']}, disjoint from the "
        f"study's ({machine['cpu']}, {machine['cores']} cores, torch on the CPU; "
        f"{confirmed['measured']}, commit {confirmed['commit'][:7]}); the study's own "
        f"{results['n_windows'] // 2} measuring windows: {study.mean:.3f} {study.text}"
    )


def deciding_estimates(
    results: Mapping[str, Any] | None,
    folder: Path | str | None,
    *,
    context: int,
    window_seed: int,
    max_distance: int,
    min_windows: int | None = None,
) -> tuple[Kept | None, str]:
    """``(the kept readings, what they rest on)`` where the study may decide
    (:func:`why_not_deciding`), else ``(None, why not)``: either way, the page's words."""
    settings = {"context": context, "window_seed": window_seed, "max_distance": max_distance}
    why = why_not_deciding(results, folder, settings, min_windows)
    if why is not None or results is None:
        return None, str(why)
    return estimates(results), basis(results)


@dataclass(frozen=True)
class Reading:
    """The chapter's SmolLM2 readings: the kept study's where it decides (``kept``, on ``basis``),
    with the build's own reading on its ``n_windows`` beside in the text; else the build's."""

    kept: Kept | None
    basis: str
    n_windows: int

    def _beside(self, build: Estimate | None, kept: Estimate | None) -> Estimate | None:
        if build is None or kept is None:
            return build
        return kept._replace(text=f"{kept.text}, {self.basis}; this build's {self.n_windows} "
                                  f"windows, beside: {build.mean:.3f} {build.text}")  # fmt: skip

    def lift(self, build: Estimate | None) -> Estimate | None:
        """The head's lift the SmolLM2 part is decided on (``build``: the chapter's own)."""
        return self._beside(build, self.kept.lift if self.kept else None)

    def key_excess(self, build: Estimate | None) -> Estimate | None:
        """The head's key excess the SmolLM2 part is decided on (``build``: the chapter's)."""
        return self._beside(build, self.kept.key_excess if self.kept else None)


def reading(
    folder: Path | str | None, n_windows: int, context: int, window_seed: int, max_distance: int
) -> Reading:
    """The kept confirmation where it decides (:func:`why_not_confirming`), else the kept study,
    as the semantic-channels chapter reads the checkpoint ``folder`` (``None``: none read) with
    its settings, the build's own reading on its ``n_windows`` beside."""
    if folder is None:
        return Reading(None, "no checkpoint read here", n_windows)
    results, confirmed = kept(), confirmation()
    settings = {"context": context, "window_seed": window_seed, "max_distance": max_distance}
    if (why_confirm := why_not_confirming(confirmed, results, folder, settings)) is None:
        return Reading(estimates(confirmed), confirmation_basis(confirmed, results), n_windows)
    found, why = deciding_estimates(results, folder, **settings)
    basis = (why if found else f"this build's {n_windows} windows ({why})") + (
        f"; {why_confirm}" if confirmed is not None else ""
    )
    return Reading(found, basis, n_windows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=f"python -m ropebook {STUDY}",
        description="Find and measure a real checkpoint's apostrophe head (the semantic-channels "
        "chapter's SmolLM2 reading) on many held-out windows and write its results file; with "
        "--confirm, measure the head the kept study chose on fresh windows and write "
        f"{CONFIRM_STUDY}.json.",
    )
    parser.add_argument("--profile", default="cpu", choices=("cpu", "gpu"),
                        help="whose chapter: its checkpoint and context (default cpu)")  # fmt: skip
    parser.add_argument("--checkpoint", default="profile",
                        help="the chapter's checkpoint parameter (default: profile)")  # fmt: skip
    parser.add_argument("--confirm", action="store_true",
                        help="the confirmation: the kept study's head on fresh windows")  # fmt: skip
    parser.add_argument("--windows", type=int, default=0, help=f"windows (default: the plan's, "
                        f"{WINDOWS}, half to select; --confirm: {CONFIRM_WINDOWS})")  # fmt: skip
    parser.add_argument(
        "--context", type=int, default=0, help="tokens per window (0: the profile's)"
    )
    parser.add_argument("--window-seed", type=int, default=0, help="the chapter's seed parameter")
    parser.add_argument("--max-distance", type=int, default=32, help="the chapter's max_distance")
    args = parser.parse_args(argv)
    args.windows = args.windows or (CONFIRM_WINDOWS if args.confirm else WINDOWS)
    if args.windows < (2 if args.confirm else 4):
        parser.error(f"--windows must be at least {2 if args.confirm else 4} (two to measure), "
                     f"got {args.windows}")  # fmt: skip
    args.context = args.context or zoo.configs("rope", profile=args.profile)[0].context
    if args.context < 2 or args.max_distance < 1:
        parser.error("--context must be at least 2 and --max-distance at least 1")
    folder = real_model.resolve(args.checkpoint, args.profile)
    if folder is None:
        parser.error(f"--checkpoint {args.checkpoint}: no checkpoint on the {args.profile} profile")
    settings = {"context": args.context, "window_seed": args.window_seed,
                "max_distance": args.max_distance}  # fmt: skip
    command = (
        f"python -m ropebook {STUDY} --profile {args.profile} --checkpoint {args.checkpoint} "
        + ("--confirm " if args.confirm else "")
        + f"--windows {args.windows} --context {args.context} --window-seed {args.window_seed} "
        f"--max-distance {args.max_distance}"
    )
    about = {**settings, "n_windows": args.windows, "checkpoint": folder.name}
    if args.confirm:
        results = kept()
        if why := why_not_deciding(results, folder, settings):
            parser.error(f"--confirm confirms the kept study, which cannot decide here: {why}")
        head = tuple(results["runs"][0]["head"])
        records = measure_confirmation(
            args.windows, head, **settings_args(settings), used_windows=results["n_windows"],
            folder=folder,
        )  # fmt: skip
        about |= {"used_windows": results["n_windows"], "stream": CONFIRM_STREAM,
                  "planned_windows": CONFIRM_WINDOWS, "study_commit": results["commit"]}  # fmt: skip
    else:
        records = measure(args.windows, **settings_args(settings), folder=folder)
        about |= {"planned_windows": WINDOWS}
    path = studies.write(
        CONFIRM_STUDY if args.confirm else STUDY, records, profile=args.profile, regime=REGIME,
        domain=DOMAIN, command=command, fingerprint=records[0]["spec_hash"], **about,
    )  # fmt: skip
    print(f"written: {path}")
    return 0


def settings_args(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The chapter's settings as :func:`measure` takes them."""
    return {"context": settings["context"], "seed": settings["window_seed"],
            "max_distance": settings["max_distance"]}  # fmt: skip
