"""The chapter runner: jupytext ``.py`` → papermill (with checked parameters) → ``executed/``.

A chapter is ``chapters/<name>.py`` in jupytext percent format with exactly one cell tagged
``parameters``. Running it:

1. reads the chapter with jupytext and parses its parameters cell (``name = literal`` lines);
2. checks every requested parameter — unknown names and wrongly typed values are rejected with the
   list of valid parameters *before any cell runs*;
3. puts a "Rerun this chapter" box under the title (:func:`rerun_box`: download links, the
   command that produced the page, every parameter with its default and domain — all taken from
   the parameters cell, so the page cannot disagree with the chapter) and a provenance cell at
   the end;
4. executes with papermill into a temporary file and renames it to ``executed/<name>.ipynb``
   only on success, so a failed run never replaces a good notebook, and copies the source that
   produced it beside it (``executed/<name>.py``, the box's download);
5. records parameters, profile, source hashes, JAX devices, package versions and the git commit
   in the notebook metadata (``metadata.ropebook``).

The page shows the values the run used once: in its parameters cell, rewritten to them (comments
and layout kept), while papermill's injected cell, which set them, stays in the notebook (so
papermill can run it again) tagged ``remove-cell``.

``run all`` runs every chapter of ``_toc.yml`` in order and skips those whose executed notebook
was produced from the same chapter source, library source and parameters; it records each
chapter's time, run or skipped, for the book's build page (``chapters.json``,
:mod:`ropebook.buildrecord`), which it runs last. ``run all --jobs N`` runs N chapters at a time,
each in its own process; the summaries (scorecard, landing page, build page) still run last.

A chapter that uses another chapter's result reads that chapter's executed record
(:func:`chapter_record`, :func:`chapter_claim`) instead of computing it again: each comparison
has one home. The runner finds those reads in the chapter's source (:func:`reads`), refuses to
run a chapter whose records are missing or from another profile (before any cell runs), runs the
chapters read first under ``run all --jobs N``, and counts a chapter out of date when a record it
reads is newer than its own page.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import platform
import re
import shlex
import subprocess
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from ropebook import REPO_ROOT, buildrecord, claims, findings
from ropebook.io import atomic_path
from ropebook.parameters import (  # the runner checks a chapter's parameters before it runs
    ChapterError,
    Parameter,
    chapter_parameters,
    validate_parameters,
)

CHAPTERS_DIR = Path(os.environ.get("ROPEBOOK_CHAPTERS", REPO_ROOT / "chapters"))
EXECUTED_ENV = "ROPEBOOK_EXECUTED"
EXECUTED_DIR = Path(os.environ.get(EXECUTED_ENV, REPO_ROOT / "executed"))
# Pages built from the other chapters' executed notebooks (and the build page from the build's
# records, :mod:`ropebook.buildrecord`): always run last, in this order, and always re-run.
SUMMARY_CHAPTERS = ("scorecard", "index", "build")
LANDING = "index"  # the book's root page: it opens on its answers, its rerun box comes last
TRACKED_PACKAGES = (
    "jax", "jaxlib", "numpy", "optax", "sympy", "matplotlib", "altair", "papermill", "jupytext",
    "jupyter-book", "tokenizers", "safetensors", "transformers", "torch",
)  # fmt: skip
PROVENANCE_ENV = "ROPEBOOK_PROVENANCE_FILE"
STARTED_ENV = "ROPEBOOK_STARTED"  # when the runner started the chapter (seconds since the epoch)
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def chapter_names() -> list[str]:
    """Chapters in book order (from ``_toc.yml``), then any others found in ``chapters/``."""
    listed = []
    toc = REPO_ROOT / "_toc.yml"
    if toc.exists():
        for line in toc.read_text().splitlines():
            line = line.strip().removeprefix("- ")
            if line.startswith("file:") and "executed/" in line:
                listed.append(line.split("executed/", 1)[1].strip())
    present = sorted(p.stem for p in CHAPTERS_DIR.glob("*.py"))
    ordered = [n for n in listed if n in present] + [n for n in present if n not in listed]
    return [n for n in ordered if n not in SUMMARY_CHAPTERS] + [
        n for n in SUMMARY_CHAPTERS if n in present
    ]


def chapter_path(name: str) -> Path:
    path = CHAPTERS_DIR / f"{Path(name).stem}.py"
    if not path.exists():
        raise ChapterError(f"unknown chapter {name!r}; chapters: {', '.join(chapter_names())}")
    return path


# How a chapter reads another's record: the chapter's name (or a claim id, ``<chapter>.<name>``)
# written as a literal, so the runner can find the read in the source before anything runs.
_READ_CALL = re.compile(r"\bchapter_(?:record|claim)\(\s*[\"'](\w+)")


def reads(name: str) -> tuple[str, ...]:
    """The chapters whose executed records chapter ``name`` reads, in book order."""
    found = set(_READ_CALL.findall(chapter_path(name).read_text()))
    names = chapter_names()
    if found - set(names):
        raise ChapterError(f"chapter {name!r} reads no chapter: {sorted(found - set(names))}")
    return tuple(n for n in names if n in found)


def chapter_record(name: str, profile: str | None = None) -> claims.ChapterRecord:
    """Chapter ``name``'s executed record, read as the summary pages read it
    (:func:`ropebook.claims.read_chapter_record`); a :class:`ChapterError` naming the command
    that makes it if it has not run (or ran at another ``profile`` than the one given)."""
    path = EXECUTED_DIR / f"{name}.ipynb"
    command = f"python -m ropebook run {name}" + (f" --profile {profile}" if profile else "")
    if not path.exists():
        raise ChapterError(f"chapter {name!r} has not run ({path} is missing): {command}")
    record = claims.read_chapter_record(path)
    ran = record.provenance.get("profile")
    if profile is not None and ran != profile:
        raise ChapterError(
            f"chapter {name!r} last ran at the {ran} profile, not {profile}: {command}"
        )
    return record


def chapter_claim(claim_id: str, profile: str | None = None) -> claims.Claim:
    """One claim (``<chapter>.<name>``) of its chapter's executed record (:func:`chapter_record`)."""
    name = findings.chapter_of(claim_id)
    recorded = {c.id: c for c in chapter_record(name, profile).claims}
    if claim_id not in recorded:
        raise ChapterError(f"chapter {name!r} recorded no claim {claim_id!r}: {sorted(recorded)}")
    return recorded[claim_id]


def _finished(name: str) -> float | None:
    """When chapter ``name``'s executed notebook finished (seconds since the epoch), if it ran."""
    path = EXECUTED_DIR / f"{name}.ipynb"
    if not path.exists():
        return None
    return json.loads(path.read_text()).get("metadata", {}).get("ropebook", {}).get("finished")


def read_chapter(name: str):
    import jupytext

    notebook = jupytext.read(chapter_path(name))
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}  # fmt: skip
    return notebook


def _git_commit() -> str:
    """``ROPEBOOK_COMMIT`` where set (a copy of the tree run elsewhere, such as a GPU machine's,
    whose git folder may be stale or absent), else this checkout's commit (``+dirty`` with
    changes to ``src`` or ``chapters``), else ``unknown``."""
    if pinned := os.environ.get("ROPEBOOK_COMMIT", "").strip():
        return pinned
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True,
            text=True, check=True,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "src", "chapters"], cwd=REPO_ROOT,
            capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        return commit + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def library_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted((REPO_ROOT / "src" / "ropebook").rglob("*.py")):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in TRACKED_PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return versions


PROVENANCE_SOURCE = "from ropebook.pipeline import show_provenance\nshow_provenance()"
IN_SHORT_SOURCE = (
    "from ropebook.pipeline import glue_in_short\nglue_in_short({name!r}, {profile!r})"
)


def _trained_with(segments: list[dict[str, Any]]) -> str:
    """One phrase per training call of a model (:func:`ropebook.train.provenance`)."""
    if not segments:
        return "not recorded (trained before the book kept provenance)"
    phrases = []
    for s in segments:
        start, end = s["steps"]
        where = s["host"] + (f", Slurm job {s['slurm_job']}" if s.get("slurm_job") else "")
        phrases.append(
            f"steps {start}–{end}: {s['devices']} {s['platform']} device"
            f"{'s' if s['devices'] != 1 else ''}, {s['attention']} attention, "
            f"JAX {s['jax']} on {where}"
        )
    return "; ".join(phrases)


def source(origin: dict[str, Any] | None) -> str:
    """Where a model came from: ``trained here`` (into this cache), or downloaded from a published
    zoo (``origin``: its ``origin.json``, :mod:`ropebook.zoo_archive`), with the archive and when
    it was published and pulled."""
    if origin is None:
        return "trained here"
    return (
        f"downloaded: {origin.get('archive')}, published {origin.get('published')}, "
        f"pulled {origin.get('pulled')}"
    )


def models_line(origins: list[dict[str, Any] | None]) -> str:
    """``"3 downloaded (zoo-cpu-….tar, published …), 2 trained here"``: the provenance line's
    count of the chapter's models by where they came from."""
    downloaded = [o for o in origins if o is not None]
    archives = sorted({f"{o.get('archive')}, published {o.get('published')}" for o in downloaded})
    parts = [f"{len(downloaded)} downloaded ({'; '.join(archives)})"] if downloaded else []
    return ", ".join([*parts, f"{len(origins) - len(downloaded)} trained here"])


def models_table(
    loaded: dict[Path, dict[str, Any]], origins: dict[Path, dict[str, Any] | None] | None = None
) -> str:
    """A Markdown table of the trained models a chapter loaded (``checkpoints.LOADED``): each one's
    spec hash (its cache folder) beside how it was trained (devices, attention path, JAX, host),
    what can move its numbers at float32 rounding without changing the hash, and where it came
    from (``origins`` by folder: trained here, or downloaded from which archive, when)."""
    origins = origins or {}
    rows = ["| model | spec hash | trained with | source |", "|---|---|---|---|"]
    for folder, meta in sorted(loaded.items(), key=lambda item: str(item[0])):
        extra = meta.get("extra", {})
        spec, tune = extra.get("spec", {}), extra.get("finetune", {})
        first = f"fine-tune of `{tune['parent']}`" if "parent" in tune else spec.get("name")
        name = ", ".join(
            str(v) for v in (first, tune.get("method"), f"seed {meta['train']['seed']}",
                             spec.get("domain")) if v is not None
        )  # fmt: skip
        trained = _trained_with(meta.get("provenance", []))
        rows.append(f"| {name} | `{folder.name}` | {trained} | {source(origins.get(folder))} |")
    return "\n".join(rows)


def _took() -> str:
    """``", in 93 s"``: how long the chapter has run, kernel start included, when the runner
    started it (``STARTED_ENV``); empty otherwise (a notebook run by hand)."""
    started = os.environ.get(STARTED_ENV)
    return f", in {time.time() - float(started):.0f} s" if started else ""


def show_provenance() -> None:
    """Run inside the chapter's kernel: show one provenance line, and the provenance of every
    trained model the chapter loaded, and hand both to the runner."""
    import jax
    from IPython.display import Markdown, display

    from ropebook import checkpoints

    devices = [f"{d.platform}:{d.device_kind}" for d in jax.devices()]
    origins = {folder: checkpoints.read_origin(folder) for folder in checkpoints.LOADED}
    models = [
        {"folder": str(folder), "provenance": meta.get("provenance", []), "origin": origins[folder]}
        for folder, meta in checkpoints.LOADED.items()
    ]
    record = {"jax_backend": jax.default_backend(), "jax_devices": devices, "models": models}
    if path := os.environ.get(PROVENANCE_ENV):
        Path(path).write_text(json.dumps(record))
    versions = package_versions()
    display(
        Markdown(
            f"*Provenance:* commit `{_git_commit()}`, JAX {versions.get('jax')} on "
            f"{record['jax_backend']} ({', '.join(sorted(set(devices)))}), "
            f"Python {versions['python']}, run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
            f"{_took()}." + (f" Models: {models_line(list(origins.values()))}." if origins else "")
        )
    )
    if checkpoints.LOADED:
        table = models_table(checkpoints.LOADED, origins)
        display(Markdown(f"*Trained models used here:*\n\n{table}"))


def glue_in_short(name: str, profile: str | None) -> None:
    """Run inside the chapter's kernel, after its claims are glued: glue ``in_short``, the line
    that opens the page ({glue:md}`in_short`), from the claims it glued and this run's profile
    and devices (:func:`ropebook.findings.in_short`, which the landing page uses too)."""
    import jax
    from IPython.display import Markdown
    from myst_nb import glue

    from ropebook import claims, findings

    devices = [f"{d.platform}:{d.device_kind}" for d in jax.devices()]
    record = claims.ChapterRecord(
        name, name, list(claims.GLUED), {"profile": profile, "jax_devices": devices}
    )
    glue("in_short", Markdown(findings.in_short(record)), display=False)


# ------------------------------------------------------------------ the page's "Rerun" box
RERUN_TAG = "rerun"  # tag of the injected box cell
_MAKE_SAFE = re.compile(r"[\w.:+-]+")  # a value the Makefile passes through unquoted, unchanged


def _make_value(value: Any) -> str | None:
    """``value`` as `make run PARAMS="name=VALUE"` writes it (the runner parses it back to the
    same value), or ``None`` if the Makefile cannot carry it (spaces, quotes, brackets)."""
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    text = repr(value) if isinstance(value, int | float) else str(value)
    return text if isinstance(value, int | float | str) and _MAKE_SAFE.fullmatch(text) else None


def rerun_command(name: str, declared: dict[str, Parameter], values: dict) -> str:
    """The command that runs chapter ``name`` with ``values`` again: ``make run …`` when the
    Makefile can carry every value, else the runner's own command line."""
    default = declared.get("profile")
    profile = values.get("profile", default.default if default else "cpu")
    given = {k: v for k, v in values.items() if k != "profile"}
    made = {k: _make_value(v) for k, v in given.items()}
    if all(v is not None for v in made.values()):
        params = " ".join(f"{k}={v}" for k, v in made.items())
        return f"make run CHAPTER={name} PROFILE={profile}" + (
            f' PARAMS="{params}"' if params else ""
        )
    words = [".venv/bin/python", "-m", "ropebook", "run", name, "--profile", profile]
    for key, value in given.items():
        words += ["-p", key, value if isinstance(value, str) else repr(value)]
    return shlex.join(words)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def rerun_box(name: str, declared: dict[str, Parameter], values: dict) -> str:
    """The collapsed Markdown box a chapter page opens with: download links (the executed notebook
    and the ``.py`` source beside it in ``executed/``), the command that produced the page, and
    every declared parameter with its type, default, domain and description."""

    def values_text(p: Parameter) -> str:  # a list's domain holds for each element
        return ("each " if isinstance(p.default, list) and p.domain else "") + (p.domain or "any")

    rows = [
        f"| `{p.name}` | {p.type_name} | `{_cell(repr(p.default))}` | {_cell(values_text(p))} "
        f"| {_cell(p.description)} |"
        for p in declared.values()
    ]
    return "\n".join(
        [
            ":::{dropdown} Rerun this chapter",
            f"Download this page as the executed notebook, {{download}}`{name}.ipynb`, or as the "
            f"jupytext source that produced it, {{download}}`{name}.py` (open either in Jupyter). "
            "In a clone of the book this page was made by",
            "",
            "```bash",
            rerun_command(name, declared, values),
            "```",
            "",
            'and `PARAMS="name=value name=value"` runs it with other values (`PROFILE` picks the '
            "model sizes; `make html` then rebuilds the site). Its parameters:",
            "",
            "| parameter | type | default | values | meaning |",
            "|---|---|---|---|---|",
            *rows,
            ":::",
        ]
    )


def _insert_rerun_box(notebook, box: str, *, last: bool = False) -> None:
    """Put the box right after the title cell (first, if the chapter opens with code), or at the
    end (``last``: the landing page, which opens on its answers)."""
    import nbformat

    first = notebook.cells[0] if notebook.cells else None
    at = 1 if first is not None and first.cell_type == "markdown" else 0
    at = len(notebook.cells) if last else at
    notebook.cells.insert(at, nbformat.v4.new_markdown_cell(box, metadata={"tags": [RERUN_TAG]}))


def _stamp(name: str, values: dict) -> dict:
    source = chapter_path(name).read_bytes()
    return {
        "chapter_sha256": hashlib.sha256(source).hexdigest()[:16],
        "library_sha256": library_hash(),
        "parameters": values,
    }


def is_up_to_date(name: str, values: dict) -> bool:
    executed = EXECUTED_DIR / f"{name}.ipynb"
    if not executed.exists() or not executed.with_suffix(".py").exists():
        return False
    recorded = json.loads(executed.read_text()).get("metadata", {}).get("ropebook", {})
    stamp = _stamp(name, values)
    if not all(recorded.get(key) == value for key, value in stamp.items()):
        return False
    # a record it reads that is newer than its page (or gone) means it read an older result
    finished = recorded.get("finished") or 0.0
    return all((_finished(read) or float("inf")) <= finished for read in reads(name))


def run_chapter(
    name: str,
    parameters: dict[str, Any] | None = None,
    *,
    profile: str | None = None,
    force: bool = True,
    progress: bool = True,
) -> Path:
    """Execute one chapter; return the executed notebook's path (see module docstring)."""
    import nbformat

    name = chapter_path(name).stem
    source = chapter_path(name).read_bytes()
    notebook = read_chapter(name)
    given = dict(parameters or {})
    if profile is not None:
        given["profile"] = profile
    declared = chapter_parameters(notebook)
    values = validate_parameters(name, declared, given)
    target = EXECUTED_DIR / f"{name}.ipynb"
    if not force and is_up_to_date(name, values):
        print(f"{name}: up to date ({target.relative_to(REPO_ROOT)})")
        return target

    _insert_rerun_box(notebook, rerun_box(name, declared, values), last=name == LANDING)
    declared_profile = declared.get("profile")
    profile_value = values.get("profile", declared_profile and declared_profile.default)
    for read in reads(name):  # the records it reads exist, at its profile, before a cell runs
        chapter_record(read, profile_value)
    # the last cell: the provenance line, then the "In short" line glued from the chapter's claims
    closing = PROVENANCE_SOURCE + "\n" + IN_SHORT_SOURCE.format(name=name, profile=profile_value)
    notebook.cells.append(nbformat.v4.new_code_cell(closing, metadata={"tags": ["remove-input"]}))
    started = time.time()
    with atomic_path(target) as tmp_path:  # a failed run never replaces the previous notebook
        # papermill warns about an output path not ending in .ipynb: it writes beside the temp
        run_path = tmp_path.with_suffix(".ipynb")
        provenance_file = tmp_path.with_suffix(".json")
        os.environ[PROVENANCE_ENV] = str(provenance_file)
        kept = os.environ.get(EXECUTED_ENV)
        os.environ[EXECUTED_ENV] = str(EXECUTED_DIR)  # the records the kernel reads are this run's
        os.environ[STARTED_ENV] = repr(started)
        try:
            _execute(name, notebook, str(run_path), values, progress)
            executed = nbformat.read(run_path, as_version=4)
            _show_values_once(executed, values)
            executed.metadata["ropebook"] = {
                **_stamp(name, values),
                "profile": profile_value,
                "git_commit": _git_commit(),
                "packages": package_versions(),
                "seconds": round(time.time() - started, 1),
                "finished": round(time.time(), 1),  # seconds since the epoch
                **(json.loads(provenance_file.read_text()) if provenance_file.exists() else {}),
            }
            nbformat.write(executed, tmp_path)
        finally:
            os.environ.pop(PROVENANCE_ENV, None)
            os.environ.pop(STARTED_ENV, None)
            if kept is None:
                os.environ.pop(EXECUTED_ENV, None)
            else:
                os.environ[EXECUTED_ENV] = kept
            provenance_file.unlink(missing_ok=True)
            run_path.unlink(missing_ok=True)
    with atomic_path(target.with_suffix(".py")) as copy:  # the source this notebook came from
        copy.write_bytes(source)
    return target


def _show_values_once(notebook, values: dict[str, Any]) -> None:
    """Write the run's values into the cell tagged parameters and remove papermill's injected
    cell (which set them, and stays in the notebook for papermill) from the page."""
    for cell in notebook.cells:
        tags = cell.metadata.get("tags", [])
        if "parameters" in tags:
            cell.source = with_values(cell.source, values)
        elif "injected-parameters" in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]


def with_values(source: str, values: dict[str, Any]) -> str:
    """``source`` (a parameters cell) with the literal assigned to each name of ``values`` that
    differs from it replaced by that value; comments, layout and the other lines kept."""
    lines = source.encode().splitlines(keepends=True)  # ast's columns count UTF-8 bytes
    edits = []
    for node in ast.parse(source).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and value is not None and target.id in values:
            if ast.literal_eval(value) != values[target.id]:
                edits.append((value, _literal_text(values[target.id])))
    for value, text in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        first, last = value.lineno - 1, value.end_lineno - 1
        head, tail = lines[first][: value.col_offset], lines[last][value.end_col_offset :]
        lines[first : last + 1] = [head + text.encode() + tail]
    return b"".join(lines).decode()


def _literal_text(value: Any) -> str:
    """``value`` as a Python literal, strings in double quotes as the chapters write them."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_literal_text(v) for v in value) + "]"
    return repr(value)


def _execute(name: str, notebook, tmp: str, values: dict, progress: bool) -> None:
    import papermill

    try:
        papermill.execute_notebook(
            notebook, tmp, parameters=values, kernel_name="python3", cwd=str(CHAPTERS_DIR),
            progress_bar=progress, log_output=False,
        )  # fmt: skip
    except papermill.PapermillExecutionError as error:
        failed = EXECUTED_DIR / "failed" / f"{name}.ipynb"
        failed.parent.mkdir(exist_ok=True)
        os.replace(tmp, failed)
        trace = ANSI_ESCAPE.sub("", "\n".join(error.traceback))
        raise ChapterError(
            f"chapter {name!r} failed in cell {error.cell_index} (execution count "
            f"{error.exec_count}): {error.ename}: {error.evalue}\n{trace}\n"
            f"(partial notebook kept at {failed}; the previous good notebook is untouched)"
        ) from None


def run_all(profile: str | None = None, *, force: bool = False, jobs: int = 1) -> list[Path]:
    """Run every chapter in book order, summaries last; stop at the first failure. With ``jobs``
    > 1 the chapters before the summaries run that many at a time, each in its own process
    (:func:`_run_in_processes`). After each one, the build record ``chapters.json`` gains its
    time: run now, or skipped as up to date (with the time of the run that produced it), and the
    wall time so far (chapters run side by side overlap), so the build page, run last, reads all
    others."""
    started = time.time()
    records = EXECUTED_DIR / buildrecord.RECORDS
    since = min(started, buildrecord.began(records) or started)  # a resumed build: all its parts
    names = chapter_names()
    body = [name for name in names if name not in SUMMARY_CHAPTERS]
    done: dict[str, Path] = {}

    def finished(name: str, path: Path) -> None:
        done[name] = path
        chapters = [{"chapter": n, **_chapter_time(done[n], since)} for n in names if n in done]
        record = {"profile": profile, "jobs": jobs, "wall_seconds": round(time.time() - started, 1),
                  "chapters": chapters}  # fmt: skip
        buildrecord.write("chapters", record, records)

    if jobs > 1:
        _run_in_processes(body, profile, force=force, jobs=jobs, finished=finished)
    else:
        for name in body:
            finished(name, run_chapter(name, profile=profile, force=force))
    for name in names[len(body) :]:
        finished(name, run_chapter(name, profile=profile, force=True))
    return [done[name] for name in names]


THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def _run_in_processes(
    names: list[str], profile: str | None, *, force: bool, jobs: int,
    finished: Callable[[str, Path], None],
) -> None:  # fmt: skip
    """Run ``names`` (in order, ``jobs`` at a time), each as ``python -m ropebook run <name>`` with
    its output in a log. A chapter process computes what it would alone: the chapters share only
    the zoo's cache, whose locks train each model once, and each keeps this machine's device
    count (none is pinned, unlike the zoo's workers, so a model a chapter trains sums its batches
    as a one-at-a-time run does; ``benchmarks/chapter_jobs.py`` compares every glued value and
    chart). Every chapter's parameters are checked before the first starts; on a failure no
    further chapter starts, the running ones finish, and the failed one's last lines are raised
    in a :class:`ChapterError`; if this process is stopped, so are the chapters it started."""
    import shutil
    import sys
    import tempfile

    from tqdm.auto import tqdm

    from ropebook.workers import cores

    reading = {name: set(reads(name)) for name in names}
    stale = set()
    for name in names:
        values = validate_parameters(
            name, chapter_parameters(read_chapter(name)), {"profile": profile} if profile else {}
        )
        if force or not is_up_to_date(name, values):
            stale.add(name)
    while grown := {n for n in names if n not in stale and reading[n] & stale}:
        stale |= grown  # a chapter that reads one about to run again runs again after it
    pending = [name for name in names if name in stale]
    for name in names:
        if name not in stale:
            target = EXECUTED_DIR / f"{name}.ipynb"
            print(f"{name}: up to date ({target})")
            finished(name, target)
    logs = Path(tempfile.mkdtemp(prefix="ropebook-chapters-"))
    env = dict(os.environ, ROPEBOOK_CHAPTERS=str(CHAPTERS_DIR)) | {EXECUTED_ENV: str(EXECUTED_DIR)}
    # torch's and BLAS's thread pools each take every core; side by side they would fight over
    # them (measured: the torch chapters ran 2-3x slower beside another), so each child gets
    # its share. A count the caller set is kept.
    share = str(max(1, len(cores()) // jobs))
    for variable in THREAD_VARIABLES:
        env.setdefault(variable, share)
    running: dict[str, subprocess.Popen] = {}
    failed: list[str] = []
    bar = tqdm(total=len(pending), desc=f"chapters, {jobs} at a time", unit="chapter")
    try:
        while running or (pending and not failed):
            while pending and not failed and len(running) < jobs:
                # the first in book order whose records to read are all written
                ready = [n for n in pending if not reading[n] & (set(pending) | running.keys())]
                if not ready:
                    break
                name = ready[0]
                pending.remove(name)
                command = [sys.executable, "-m", "ropebook", "run", name]
                command += ["--profile", profile] if profile else []
                with open(logs / f"{name}.log", "w") as log:  # the child keeps its own copy
                    running[name] = subprocess.Popen(
                        command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
                    )
            time.sleep(0.2)
            for name, process in list(running.items()):
                if process.poll() is None:
                    continue
                del running[name]
                if process.returncode:
                    failed.append(name)
                    continue
                finished(name, EXECUTED_DIR / f"{name}.ipynb")
                bar.set_postfix_str(name)
                bar.update()
    finally:
        bar.close()
        for process in running.values():  # stopped mid-way (an interrupt): stop the children
            process.terminate()
    if failed:
        log = logs / f"{failed[0]}.log"
        tail = "\n".join(log.read_text().splitlines()[-40:])
        raise ChapterError(f"chapter {failed[0]!r} failed; the last lines of {log}:\n{tail}")
    shutil.rmtree(logs, ignore_errors=True)


def _chapter_time(executed: Path, started: float) -> dict[str, Any]:
    """How long the run that produced ``executed`` took, when it finished, and whether it ran
    in this build (since ``started``: this ``run all``, or the resumed build's first part)."""
    meta = json.loads(executed.read_text()).get("metadata", {}).get("ropebook", {})
    finished = meta.get("finished")
    return {
        "seconds": meta.get("seconds"),
        "ran": finished is not None and finished >= started,
        "finished": finished and time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(finished)),
    }
