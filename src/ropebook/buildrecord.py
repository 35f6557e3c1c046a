"""The build's own record: what each stage of ``make book`` measured, for the book's build page.

Every stage of ``make book`` runs through ``python -m ropebook stage NAME -- command...``
(:func:`run_stage`), which times the command and writes ``stage-NAME.json`` into the records
folder, ``executed/records/`` (beside the executed chapters, so ``ROPEBOOK_EXECUTED`` moves both).
Commands that know more write their own record beside it (:func:`write`): the zoo its models by
regime, trained and cached (``zoo.json``); the runner each chapter's time, run or up to date
(``chapters.json``); ``python -m ropebook machine`` this machine, the versions, the lesson model's
tokens/s and the attention path (``machine.json``). ``chapters/build.py`` shows them as tables.

Each record names the build it belongs to. The Makefile sets ``ROPEBOOK_BUILD`` once per ``make``
invocation (its start time, UTC); ``make book`` first opens a build (:func:`begin`, ``build.json``)
and closes it after the site (:func:`end`). A ``make book`` that finds the last one open (stopped,
failed or killed, on the same clone and profile) *resumes* it: its invocation becomes the build's
next part, and every record it writes names the build's first part (:func:`current_build`), so the
build page counts all parts as one build. A stage whose record names another build did not run in
this one (make found its output up to date); its record is the run that made what this build used.

A stage's record keeps every attempt of this build (:func:`run_stage`): finished, failed, or
interrupted, which a killed process cannot say, so a running stage rewrites its record every
:data:`HEARTBEAT_SECONDS`; an attempt still marked running when the next one starts was
interrupted, and counts to its last heartbeat plus one interval (an upper bound).

Only the standard library: the stage wrapper times ``make setup``'s install, before the venv has
any package. Files are written atomically (:mod:`ropebook.io`), so a reader never sees half one.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ropebook import io
from ropebook.paths import REPO_ROOT

BUILD_ENV = "ROPEBOOK_BUILD"
FORMAT = 1  # of every record: raise it when a record's fields change, so old ones are refused
RECORDS = "records"  # the folder's name inside the executed chapters' folder
# make book's stages in the order they run (the Makefile's `book` target).
STAGES = ("setup", "assets", "data", "proofs", "machine", "zoo", "chapters", "html")
BUILD_RECORD = "build"  # build.json: the make book build the records belong to, and its parts
HEARTBEAT_SECONDS = 15.0  # a running stage rewrites its record this often
UNFINISHED = ("running", "interrupted")  # attempts counted to their last heartbeat + one interval


class RecordError(RuntimeError):
    """A build record exists but cannot be read."""


def default_folder() -> Path:
    """``<executed>/records``, where ``<executed>`` is ``ROPEBOOK_EXECUTED`` or ``executed/``."""
    executed = os.environ.get("ROPEBOOK_EXECUTED")
    return (Path(executed) if executed else REPO_ROOT / "executed") / RECORDS


def current_part() -> str | None:
    """This ``make`` invocation's name (``ROPEBOOK_BUILD``), ``None`` outside make."""
    return os.environ.get(BUILD_ENV) or None


def current_build(folder: Path | None = None) -> str | None:
    """The build this process's records belong to: :func:`build_of` this invocation."""
    return build_of(current_part(), folder)


def build_of(part: str | None, folder: Path | None = None) -> str | None:
    """The build ``part`` (a ``make`` invocation) belongs to: the first part of the build in
    ``build.json`` that lists it (a resumed ``make book``), else ``part`` itself."""
    state = read(BUILD_RECORD, folder) if part else None
    return state["name"] if state and part in state["parts"] else part


def began(folder: Path | None = None) -> float | None:
    """When (Unix time) the build this invocation is a part of began, ``None`` outside one."""
    state = read(BUILD_RECORD, folder) if current_part() else None
    return state["began"] if state and current_part() in state["parts"] else None


def begin(profile: str, folder: Path | None = None) -> dict[str, Any]:
    """Open a ``make book`` build for this invocation, or resume the open one: the last build
    that did not reach :func:`end`, of the same ``profile``, becomes this invocation's build."""
    part = current_part()
    if part is None:
        raise RecordError(f"{BUILD_ENV} is not set: the Makefile names each make invocation")
    state = read(BUILD_RECORD, folder)
    if state and not state["complete"] and state["profile"] == profile:
        state["parts"] = [*state["parts"], part] if part not in state["parts"] else state["parts"]
    else:
        state = {"name": part, "parts": [part], "began": time.time(), "profile": profile,
                 "complete": False}  # fmt: skip
    _write_state(state, folder)
    return state


def end(folder: Path | None = None) -> dict[str, Any]:
    """Close the build this invocation belongs to: the next ``make book`` starts a new one."""
    state = read(BUILD_RECORD, folder)
    if state is None or current_part() not in state["parts"]:
        raise RecordError(f"no open build lists this make invocation ({current_part()})")
    state = state | {"complete": True, "completed": now()}
    _write_state(state, folder)
    return state


def _write_state(state: dict[str, Any], folder: Path | None) -> None:
    path = (folder or default_folder()) / f"{BUILD_RECORD}.json"
    io.write_json_atomic(path, {**state, "format": FORMAT})


def duration(seconds: float) -> str:
    """``"42 s"``, ``"12 min"``, ``"5.5 h"``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())


def write(name: str, data: dict[str, Any], folder: Path | None = None) -> Path:
    """Write record ``name`` (``<folder>/<name>.json``), stamped with this build and the time."""
    path = (folder or default_folder()) / f"{name}.json"
    stamp = {"format": FORMAT, "build": current_build(folder), "finished": now()}
    io.write_json_atomic(path, {**data, **stamp})
    return path


def earlier_benchmarks(machine: dict[str, Any] | None, folder: Path | None = None) -> list[float]:
    """The lesson benchmarks (tokens/s) that earlier parts of this build measured, from the last
    ``machine`` record if this build wrote it (else none): a resumed make book measures again,
    and its reading joins them rather than replacing them."""
    build = current_build(folder)
    if not machine or build is None or machine.get("build") != build:
        return []
    bench = machine.get("benchmark", {})
    return [float(x) for x in bench.get("parts", [bench.get("tokens_per_second")]) if x]


def build_benchmark(machine: dict[str, Any] | None) -> float | None:
    """The lesson benchmark that scales a build's seconds to reference minutes: the fastest of
    its parts' readings, since load on the machine can only slow a benchmark (on 2026-12-02 a
    resumed part, measured right after the first was stopped, read 25 % below the first)."""
    bench = (machine or {}).get("benchmark", {})
    readings = [float(x) for x in bench.get("parts", [bench.get("tokens_per_second")]) if x]
    return max(readings) if readings else None


def read(name: str, folder: Path | None = None) -> dict[str, Any] | None:
    """Record ``name``, or ``None`` if no stage wrote it; :class:`RecordError` naming the file if
    it is not a JSON object of this :data:`FORMAT`."""
    path = (folder or default_folder()) / f"{name}.json"
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise RecordError(f"{path}: unreadable build record ({error}); delete it and rerun that "
                          "stage (make book rewrites it)") from None  # fmt: skip
    if not isinstance(data, dict):
        raise RecordError(
            f"{path}: a build record must be a JSON object, found {type(data).__name__}"
        )
    if data.get("format") != FORMAT:
        raise RecordError(f"{path}: a build record of format {data.get('format')}, not {FORMAT} "
                          "(written by another version of ropebook); rerun that stage")  # fmt: skip
    return data


def run_stage(name: str, command: list[str], folder: Path | None = None) -> int:
    """Run ``command`` and record ``stage-<name>.json``: this attempt's wall time, its outcome
    (``finished``, ``failed``; ``running`` while it runs, rewritten every
    :data:`HEARTBEAT_SECONDS`) and the build's earlier attempts of the stage, whose seconds the
    record's ``seconds`` sums (:func:`attempts_seconds`). Returns the command's exit status."""
    if not command:
        raise ValueError(f"stage {name!r}: no command to run")
    build, part = current_build(folder), current_part()
    earlier = read(f"stage-{name}", folder) or {}
    attempts = [
        a | {"outcome": "interrupted"} if a["outcome"] == "running" else a
        for a in earlier.get("attempts", [])
        if build is not None and earlier.get("build") == build
    ]
    began_at, started = now(), time.perf_counter()

    def save(outcome: str) -> None:
        seconds = round(time.perf_counter() - started, 1)
        this = {"part": part, "began": began_at, "seconds": seconds, "outcome": outcome}
        every = [*attempts, this]
        write(f"stage-{name}", {"stage": name, "command": command, "attempts": every,
                                "seconds": attempts_seconds(every), "outcome": outcome}, folder)  # fmt: skip

    process = subprocess.Popen(command)
    save("running")  # at once: a kill before the first heartbeat still leaves the attempt
    try:
        while True:
            try:
                status = process.wait(timeout=HEARTBEAT_SECONDS)
                break
            except subprocess.TimeoutExpired:
                save("running")
    except BaseException:  # Ctrl-C, or the wrapper killed: the attempt did not finish
        save("interrupted")
        raise
    save("finished" if status == 0 else "failed")
    return status


def attempts_seconds(attempts: list[dict[str, Any]]) -> float:
    """A stage's time over its attempts: an unfinished one counts one heartbeat past its last."""
    return round(
        sum(a["seconds"] + HEARTBEAT_SECONDS * (a["outcome"] in UNFINISHED) for a in attempts), 1
    )


# ---------------------------------------------------------------------------------- this machine
def cpu_model() -> str:
    for line in _cpuinfo():
        if line.startswith(("model name", "Model")):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def instruction_set() -> str:
    """The widest vector instruction set this CPU reports (x86: AVX-512, AVX2, AVX or SSE)."""
    flags = next((line.split(":", 1)[1].split() for line in _cpuinfo()
                  if line.startswith(("flags", "Features"))), [])  # fmt: skip
    for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"), ("sve", "SVE"),
                       ("asimd", "NEON"), ("sse2", "SSE2")):  # fmt: skip
        if flag in flags:
            return name
    return f"unknown ({platform.machine()})"


def _cpuinfo() -> list[str]:
    try:
        return Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return []


def machine() -> dict[str, Any]:
    """This machine as the build page shows it: CPU model, cores, instruction set, OS, Python,
    and how loaded it is now (the 1-minute load average: other work slows what is timed)."""
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "load_average": round(os.getloadavg()[0], 2),
        "instruction_set": instruction_set(),
        "os": platform.platform(terse=True),
        "python": sys.version.split()[0],
    }
