"""The build's own record: what each stage of ``make book`` measured, for the book's build page.

Every stage of ``make book`` runs through ``python -m ropebook stage NAME -- command...``
(:func:`run_stage`), which times the command and writes ``stage-NAME.json`` into the records
folder, ``executed/records/`` (beside the executed chapters, so ``ROPEBOOK_EXECUTED`` moves both).
Commands that know more write their own record beside it (:func:`write`): the zoo its models by
regime, trained and cached (``zoo.json``); the runner each chapter's time, run or up to date
(``chapters.json``); ``python -m ropebook machine`` this machine, the versions, the lesson model's
tokens/s and the attention path (``machine.json``). ``chapters/build.py`` shows them as tables.

Each record names the build it belongs to: ``ROPEBOOK_BUILD``, which the Makefile sets once per
``make`` invocation (its start time, UTC). A stage whose record names another build did not run in
this one (make found its output up to date); its record is the run that made what this build used.

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


class RecordError(RuntimeError):
    """A build record exists but cannot be read."""


def default_folder() -> Path:
    """``<executed>/records``, where ``<executed>`` is ``ROPEBOOK_EXECUTED`` or ``executed/``."""
    executed = os.environ.get("ROPEBOOK_EXECUTED")
    return (Path(executed) if executed else REPO_ROOT / "executed") / RECORDS


def current_build() -> str | None:
    return os.environ.get(BUILD_ENV) or None


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
    stamp = {"format": FORMAT, "build": current_build(), "finished": now()}
    io.write_json_atomic(path, {**data, **stamp})
    return path


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
    """Run ``command``, and if it succeeds record ``stage-<name>.json``: its wall time and command.
    Returns the command's exit status (a failed stage records nothing: the last success stays)."""
    if not command:
        raise ValueError(f"stage {name!r}: no command to run")
    started = time.perf_counter()
    status = subprocess.run(command).returncode
    if status == 0:
        seconds = round(time.perf_counter() - started, 1)
        write(f"stage-{name}", {"stage": name, "seconds": seconds, "command": command}, folder)
    return status


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
