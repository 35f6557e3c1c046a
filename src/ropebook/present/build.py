"""The book's build page (``chapters/build.py``): the records ``make book``'s stages wrote
(:mod:`ropebook.buildrecord`) as tables, each row saying whether this build ran the stage or
found it up to date (then the time of the run that made what it used, labelled so). Nothing
here measures: every value comes from a record, and a record that is missing is named."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ropebook import REPO_ROOT, buildrecord
from ropebook.buildrecord import duration

# the records commands write besides their stage's (zoo-pull: `zoo --pull`, before the zoo stage)
DETAILED = ("machine", "zoo", "zoo-pull", "chapters")
# make book's stages before the chapters, each with its own stage record
BEFORE_CHAPTERS = buildrecord.STAGES[: buildrecord.STAGES.index("chapters")]


@dataclass(frozen=True)
class Records:
    """Every record of one records folder (``None``: never written) and the build reading them."""

    folder: Path
    build: str | None  # the build showing them: its first make invocation (None: outside make)
    found: Mapping[str, dict[str, Any] | None]
    part: str | None = None  # the make invocation showing them (a later one in a resumed build)

    def get(self, name: str) -> dict[str, Any] | None:
        return self.found.get(name)

    def this_build(self, record: Mapping[str, Any]) -> bool:
        return self.build is not None and record.get("build") == self.build

    @property
    def shown(self) -> Path:
        """The folder as a reader finds it: relative to the clone when inside it."""
        try:
            return self.folder.resolve().relative_to(REPO_ROOT)
        except ValueError:
            return self.folder

    def missing(self, name: str, what: str) -> str:
        return f"No record of {what}: `{self.shown / (name + '.json')}` does not exist."


def load(folder: Path | None = None, part: str | None = None) -> Records:
    """Read every stage's record from ``folder`` (default :func:`buildrecord.default_folder`)
    for the make invocation ``part`` (``ROPEBOOK_BUILD``), which belongs to the build that
    ``build.json`` there names when it lists it (a resumed ``make book``); a damaged record
    raises :class:`buildrecord.RecordError` naming its file."""
    folder = folder or buildrecord.default_folder()
    names = [f"stage-{s}" for s in buildrecord.STAGES] + [*DETAILED, buildrecord.BUILD_RECORD]
    found = {name: buildrecord.read(name, folder) for name in names}
    return Records(folder, buildrecord.build_of(part, folder), found, part)


THIS_BUILD = "this build"


def _when(records: Records, record: Mapping[str, Any]) -> str:
    """:data:`THIS_BUILD`, or when the record was made, labelled as an earlier build's."""
    finished = record.get("finished", "at a time not recorded")
    if records.build is None:  # run outside make: no build to compare with
        return f"recorded {finished}"
    return THIS_BUILD if records.this_build(record) else f"an earlier build ({finished})"


def stage_rows(records: Records) -> list[dict[str, str]]:
    """One row per stage of ``make book`` before the chapters that has a record (when it ran,
    how long it took, what it did), then the chapters stage, of which this page is the last
    step (its chapters so far, from the runner's record)."""
    rows = []
    for stage in BEFORE_CHAPTERS:
        record = records.get(f"stage-{stage}")
        if record is not None:
            rows.append(
                {
                    "stage": stage,
                    "ran in": _when(records, record),
                    "time": duration(record["seconds"]) + _attempts_note(record),
                    "what it did": _stage_detail(records, stage, record),
                }
            )
    if chapters := records.get("chapters"):
        entries = chapters["chapters"]
        ran = [e for e in entries if e["ran"]]
        jobs = chapters.get("jobs", 1)
        rows.append(
            {
                "stage": "chapters",
                "ran in": _when(records, chapters),
                "time": duration(chapters_seconds(chapters)) + " so far",
                "what it did": f"{len(ran)} run"
                + (f", {jobs} at a time" if jobs > 1 else "")
                + f", {len(entries) - len(ran)} up to date; this page runs last",
            }
        )
    return rows


def _attempts_note(record: Mapping[str, Any]) -> str:
    """How a stage's time adds up when this build ran it more than once, or did not finish it."""
    attempts = record.get("attempts", [])
    if len(attempts) < 2 and record.get("outcome", "finished") == "finished":
        return ""
    outcomes = [a["outcome"] for a in attempts]
    counts = ", ".join(f"{outcomes.count(o)} {o}" for o in dict.fromkeys(outcomes))
    bound = " (each unfinished counted to its last heartbeat + one)" if any(
        o in buildrecord.UNFINISHED for o in outcomes) else ""  # fmt: skip
    return f" in {len(attempts)} attempts: {counts}{bound}"


def earlier_parts_seconds(records: Records, stage: str) -> float:
    """Seconds a stage spent in this build's earlier make invocations (a resumed build's
    interrupted chapters stage, say), each unfinished attempt counted to its heartbeat bound."""
    record = records.get(f"stage-{stage}")
    if record is None or not records.this_build(record):
        return 0.0
    earlier = [a for a in record.get("attempts", []) if a["part"] != records.part]
    return buildrecord.attempts_seconds(earlier)


def chapters_seconds(chapters: Mapping[str, Any]) -> float:
    """The chapters stage's time so far: the runner's wall time where it recorded one (chapters
    run side by side overlap, so their own times add up to more), else the chapters' own times
    summed over those run now."""
    if chapters.get("wall_seconds") is not None:
        return float(chapters["wall_seconds"])
    return sum(e["seconds"] or 0.0 for e in chapters["chapters"] if e["ran"])


def _stage_detail(records: Records, stage: str, record: Mapping[str, Any]) -> str:
    if stage == "zoo" and (zoo := records.get("zoo")):
        regimes = zoo["regimes"]
        trained = sum(r["trained"] for r in regimes)
        cached = sum(r["cached"] for r in regimes)
        downloaded = sum(r.get("downloaded", 0) for r in regimes)
        of = f" ({downloaded} of them downloaded)" if downloaded else ""
        on = f", on {zoo['workers']} worker processes" if zoo.get("workers", 1) > 1 else ""
        return f"{zoo['profile']} profile: {trained} trained, {cached} cached{of}{on}"
    return "`" + " ".join(record["command"]) + "`"


def stages_text(records: Records) -> str:
    """A sentence on the stages: which build this is, and which stages it did not run."""
    if not any(records.get(f"stage-{stage}") for stage in buildrecord.STAGES):
        return (
            f"No stage of `make book` has a record in `{records.shown}`: this book was built "
            "without the Makefile (for instance `python -m ropebook run all`), so only the "
            "chapters' own times were measured."
        )
    if records.build is None:
        return (
            "These records were not made by one `make` run (no `ROPEBOOK_BUILD`), so each row "
            "says when it was recorded."
        )
    skipped = [r["stage"] for r in stage_rows(records) if r["ran in"] != THIS_BUILD]
    build = f"This build ({records.build})"
    state = records.get(buildrecord.BUILD_RECORD)
    if state and records.build == state["name"] and len(state["parts"]) > 1:
        build += (f", run as {len(state['parts'])} `make book` invocations (the later ones "
                  f"resumed it: {', '.join(state['parts'][1:])}),")  # fmt: skip
    if not skipped:
        return f"{build} ran every stage recorded below."
    return (
        f"{build} did not run {', '.join(skipped)}: make found their results up to date, so "
        "their rows show the earlier run that produced what this build used."
    )


def machine_rows(records: Records) -> list[dict[str, str]]:
    """This machine and the lesson model's training speed measured during the build."""
    machine = records.get("machine")
    if machine is None:
        return []
    bench = machine["benchmark"]
    attention = machine["attention"]
    timings = attention.get("seconds")
    timed = (
        " (forward+backward: "
        + ", ".join(f"{p} {1e3 * s:.2f} ms" for p, s in timings.items())
        + ")"
        if timings
        else ""
    )
    batch = "×".join(str(n) for n in bench["batch"])
    return [
        {"": "CPU", "value": machine["cpu"]},
        {"": "cores", "value": f"{machine['cores']} ({machine['cores_usable']} usable here)"},
        {"": "vector instruction set", "value": machine["instruction_set"]},
        {
            "": "JAX devices",
            "value": f"{machine['device_count']} × {', '.join(machine['devices'])}",
        },
        {"": "operating system", "value": machine["os"]},
        {
            "": "lesson benchmark",
            "value": f"{bench['tokens_per_second']:,.0f} tokens/s training the {bench['model']} "
            f"model (batch {batch}, median of {bench['steps']} steps; load average "
            f"{machine['load_average']:.1f} on {machine['cores_usable']} cores when measured)"
            + _parts_text(bench),
        },
        {"": "attention path", "value": f"{attention['path']}: {attention['reason']}{timed}"},
        {"": "measured", "value": _when(records, machine)},
    ]


def machine_text(records: Records) -> str:
    """One line naming the machine the build ran on and its lesson benchmark, and when it was
    recorded; or what is missing."""
    machine = records.get("machine")
    if machine is None:
        return records.missing("machine", "the machine (`python -m ropebook machine`)")
    return (
        f"{machine['cpu']}, {machine['cores_usable']} cores ({machine['instruction_set']}), "
        f"{machine['device_count']} JAX device(s) {', '.join(machine['devices'])}; lesson "
        f"benchmark {machine['benchmark']['tokens_per_second']:,.0f} tokens/s "
        f"({_when(records, machine)})"
    )


def pull_text(records: Records) -> str:
    """What the pull before the zoo stage did (``zoo --pull``, :mod:`ropebook.zoo_archive`): the
    archive downloaded, when it was published, and its models installed, already here and
    skipped; or why no zoo was pulled; or that no pull is recorded."""
    pull = records.get("zoo-pull")
    if pull is None:
        return (
            "No published zoo was pulled: no `zoo --pull` is recorded, so every model was trained."
        )
    when = _when(records, pull)
    if pull["outcome"] != "pulled":
        return f"No published zoo was pulled ({when}): {pull['line']}."
    return (
        f"Pulled ({when}, {duration(pull['seconds'])}) from `{pull['url']}`: {pull['archive']}, "
        f"published {pull['published']}; {pull['installed']} models downloaded and installed, "
        f"{pull['present']} already in the cache, {pull['skipped']} skipped (not this "
        "checkout's specs). Downloaded models count as cached below."
    )


def zoo_rows(records: Records) -> list[dict[str, Any]]:
    """Per regime: models trained, cached (and of them downloaded), training time measured and
    estimated before."""
    zoo = records.get("zoo")
    if zoo is None:
        return []
    return [
        {
            "regime": r["regime"],
            "trained": r["trained"],
            "cached": r["cached"],
            "downloaded": r.get("downloaded", 0),
            "training time": duration(r["seconds"]) if r["trained"] else "—",
            "estimated before": duration(r["estimated"]) if r["trained"] else "—",
        }
        for r in zoo["regimes"]
    ]


def chapter_rows(records: Records) -> list[dict[str, str]]:
    """Per chapter: run now (its time) or up to date (the time of the run that produced it)."""
    chapters = records.get("chapters")
    if chapters is None:
        return []
    rows = []
    for entry in chapters["chapters"]:
        took = duration(entry["seconds"]) if entry["seconds"] is not None else "not recorded"
        rows.append(
            {
                "chapter": entry["chapter"],
                "run": "now" if entry["ran"] else "up to date: not run",
                "time": took if entry["ran"] else f"{took} (the run of {entry['finished']})",
            }
        )
    return rows


def site_text(records: Records) -> str:
    """The site stage comes after this page runs: the previous one's record, labelled so."""
    site = records.get("stage-html")
    after = "The site (Jupyter Book, then `ropebook check-site`) is built after this page runs"
    if site is None:
        return f"{after}, so its time is not on it. {records.missing('stage-html', 'a site build')}"
    return (
        f"{after}, so its time is not on it: the last site build before this page took "
        f"{duration(site['seconds'])} (finished {site.get('finished', 'at a time not recorded')})."
    )


def version_rows(records: Records) -> list[dict[str, str]]:
    machine = records.get("machine")
    if machine is None:
        return []
    return [{"package": k, "version": v} for k, v in machine["versions"].items()]


# ---------------------------------------------------------------- the build's budget


@dataclass(frozen=True)
class Budget:
    """This build's stages against the book's budget (``data/seed_plan.json``): minutes on the
    reference CPU, each stage's seconds scaled by this machine's lesson benchmark."""

    rows: list[dict[str, str]]  # per stage: time here, reference minutes, which build ran it
    reference_minutes: float | None  # the stages this build ran, summed (None: no benchmark)
    budget_minutes: float
    reference_tokens_per_second: float
    not_first_in_one_go: list[str]  # why not a first cpu build in one go ([]: it is one)

    @property
    def decided(self) -> bool:
        return not self.not_first_in_one_go and self.reference_minutes is not None

    @property
    def verdict(self) -> str:
        """``held`` within the budget, ``not held`` over it, ``not testable here`` undecided."""
        if not self.decided:
            return "not testable here"
        return "held" if self.reference_minutes <= self.budget_minutes else "not held"


def _parts_text(bench: Mapping[str, Any]) -> str:
    """The readings of a resumed build's parts, where there are several."""
    parts = bench.get("parts", [])
    if len(parts) < 2:
        return ""
    readings = ", ".join(f"{x:,.0f}" for x in parts)
    return f"; this build's parts read {readings} tokens/s: the budget takes the fastest"


def budget(records: Records, profile: str, plan: Mapping[str, Any] | None = None) -> Budget:
    """Read this build's stage records against the plan's budget.

    The stages before the chapters count from their records; the chapters stage from the
    runner's record of the chapters run so far (this page runs last); the site is built after
    this page and is not counted. Only a first ``cpu`` build decides the budget: every stage run
    by this build (in one ``make book``, or in several where later ones resumed it, every
    attempt counted), the zoo trained from an empty cache, every chapter run."""
    from ropebook import seedplan

    plan = plan or seedplan.load_plan()
    reference = seedplan.reference_speed(plan)
    machine = records.get("machine")
    bench = (machine or {}).get("benchmark", {})
    speed = buildrecord.build_benchmark(machine) if bench.get("profile") == profile else None
    scale = None if not speed else speed / reference / 60  # seconds here → reference minutes
    timed: list[tuple[str, float, Mapping[str, Any]]] = []
    for stage in BEFORE_CHAPTERS:
        if (record := records.get(f"stage-{stage}")) is not None:
            timed.append((stage, float(record["seconds"]), record))
    chapters = records.get("chapters")
    ran = [e for e in (chapters or {}).get("chapters", []) if e["ran"]]
    if chapters is not None:
        earlier = earlier_parts_seconds(records, "chapters")  # a resumed build's earlier parts
        timed.append(("chapters", chapters_seconds(chapters) + earlier, chapters))
    rows, total = [], 0.0
    for stage, seconds, record in timed:
        this = records.this_build(record)
        total += seconds if this else 0.0
        rows.append(
            {
                "stage": stage,
                "time here": duration(seconds),
                "reference minutes": "—" if scale is None else f"{seconds * scale:.1f}",
                "counted": "yes" if this else f"no: {_when(records, record)}",
            }
        )
    not_first = []
    if profile != "cpu":
        not_first.append(f"the {profile} profile (the budget is the cpu build's)")
    if scale is None:
        not_first.append(f"no {profile}-profile lesson benchmark of this machine")
    if skipped := [s for s in BEFORE_CHAPTERS if not _ran(records, f"stage-{s}")]:
        not_first.append(f"stages not run by this build: {', '.join(skipped)}")
    zoo = records.get("zoo")
    if cached := sum(r["cached"] for r in (zoo or {}).get("regimes", [])):
        not_first.append(f"{cached} zoo models found in the cache")
    entries = (chapters or {}).get("chapters", [])
    if chapters is None or (up_to_date := len(entries) - len(ran)):
        not_first.append(
            "no record of the chapters" if chapters is None else f"{up_to_date} chapters up to date"
        )
    return Budget(
        rows=rows,
        reference_minutes=None if scale is None else total * scale,
        budget_minutes=float(plan["budget"]["build_minutes"]),
        reference_tokens_per_second=reference,
        not_first_in_one_go=not_first,
    )


def _ran(records: Records, name: str) -> bool:
    """Whether this build ran stage record ``name`` to its end."""
    record = records.get(name)
    finished = record is not None and record.get("outcome", "finished") == "finished"
    return finished and records.this_build(record)


def budget_text(b: Budget) -> tuple[str, str]:
    """``(measured, to_decide)`` sentences for the page's budget claim."""
    if b.reference_minutes is None:
        measured = "not measured: this machine's lesson benchmark is not recorded"
    else:
        measured = (
            f"{b.reference_minutes:.1f} reference minutes for the stages this build ran, the "
            "site (built after this page) not counted"
        )
    if b.not_first_in_one_go:
        measured += f"; not a first cpu build ({'; '.join(b.not_first_in_one_go)})"
    to_decide = (
        "a first `make book` of the cpu profile on an idle machine, with an empty "
        "`ROPEBOOK_CACHE` (resumed by `make book` on the same clone and cache if it is "
        "stopped): this page then decides it from its own records"
    )
    return measured, to_decide
