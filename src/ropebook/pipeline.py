"""The chapter runner: jupytext ``.py`` → papermill (with checked parameters) → ``executed/``.

A chapter is ``chapters/<name>.py`` in jupytext percent format with exactly one cell tagged
``parameters``. Running it:

1. reads the chapter with jupytext and parses its parameters cell (``name = literal`` lines);
2. checks every requested parameter — unknown names and wrongly typed values are rejected with the
   list of valid parameters *before any cell runs*;
3. appends a provenance cell, executes with papermill into a temporary file and renames it to
   ``executed/<name>.ipynb`` only on success, so a failed run never replaces a good notebook;
4. records parameters, profile, source hashes, JAX devices, package versions and the git commit
   in the notebook metadata (``metadata.ropebook``).

``run all`` runs every chapter of ``_toc.yml`` in order and skips those whose executed notebook
was produced from the same chapter source, library source and parameters.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import os
import platform
import re
import subprocess
import time
import tokenize
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from ropebook import REPO_ROOT
from ropebook.io import atomic_path

CHAPTERS_DIR = REPO_ROOT / "chapters"
EXECUTED_DIR = Path(os.environ.get("ROPEBOOK_EXECUTED", REPO_ROOT / "executed"))
PROFILE_NAMES = ("smoke", "cpu", "gpu")
# Pages built from the other chapters' executed notebooks: always run last, and always re-run.
SUMMARY_CHAPTERS = ("scorecard", "index")
TRACKED_PACKAGES = (
    "jax", "jaxlib", "numpy", "optax", "sympy", "matplotlib", "altair", "papermill", "jupytext",
    "jupyter-book", "tokenizers", "safetensors",
)  # fmt: skip
PROVENANCE_ENV = "ROPEBOOK_PROVENANCE_FILE"
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


class ChapterError(RuntimeError):
    """A chapter could not be run: bad name, bad parameters or a failing cell."""


@dataclass(frozen=True)
class Parameter:
    """One ``name = literal  # domain: description`` line of a chapter's parameters cell.

    The comment may open with the values the parameter accepts (lists: every element):

    - ``in [lo, hi]`` with ``[``/``]`` closed and ``(``/``)`` open ends, ``inf`` for no bound;
    - ``a | b | c``: a fixed set of choices;
    - ``in zoo.SPECS``: the keys (or items) of a ``ropebook`` module attribute.
    """

    name: str
    default: Any
    domain: str | None = None  # the declaration as written, e.g. "in (0, 1)"

    @property
    def type_name(self) -> str:
        return "any" if self.default is None else type(self.default).__name__

    def describe(self) -> str:
        text = f"{self.name}: {self.type_name} = {self.default!r}"
        return f"{text} ({self.domain})" if self.domain else text

    def coerce(self, value: Any) -> Any:
        """Return ``value`` converted to this parameter's type and checked against its domain,
        or raise ``ValueError`` naming the valid values."""
        if isinstance(value, str) and not isinstance(self.default, str):
            value = _literal(value)
        value = self._coerce_type(value)
        if self.domain:
            elements = value if isinstance(value, list) else [value]
            bad = [v for v in elements if not _in_domain(v, self.domain)]
            if bad:
                what = "every element of " + self.name if isinstance(value, list) else self.name
                raise ValueError(f"{what} must be {self.domain}, got {bad[0]!r}")
        return value

    def _coerce_type(self, value: Any) -> Any:
        expected = type(self.default)
        if (
            self.default is None
            or isinstance(value, expected)
            and not _is_bool_mismatch(value, self.default)
        ):
            return value
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        raise ValueError(f"{self.name} must be {self.type_name}, got {value!r}")


_INTERVAL = re.compile(r"in\s*([\[(])\s*([^,\s]+)\s*,\s*([^\])\s]+)\s*([\])])")
_CHOICES = re.compile(r"[\w.+-]+(?:\s*\|\s*[\w.+-]+)+")
_REFERENCE = re.compile(r"in\s+([a-z_]+)\.([A-Z][A-Z0-9_]*)\b")


def _parse_domain(comment: str) -> str | None:
    """The domain that opens a parameter's comment (see :class:`Parameter`), or ``None``."""
    text = comment.strip()
    for pattern in (_INTERVAL, _REFERENCE, _CHOICES):
        if match := pattern.match(text):
            return match.group(0)
    return None


def _bound(text: str) -> float:
    return float(text.replace("_", ""))  # "inf", "-inf", "1e-3", "10_000"


def _in_domain(value: Any, domain: str) -> bool:
    if match := _INTERVAL.fullmatch(domain):
        left, low, high, right = match.groups()
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        low_ok = value >= _bound(low) if left == "[" else value > _bound(low)
        high_ok = value <= _bound(high) if right == "]" else value < _bound(high)
        return low_ok and high_ok
    if match := _REFERENCE.fullmatch(domain):
        from importlib import import_module

        return value in getattr(import_module(f"ropebook.{match[1]}"), match[2])
    return str(value) in [c.strip() for c in domain.split("|")]


def _is_bool_mismatch(value: Any, default: Any) -> bool:
    return isinstance(value, bool) != isinstance(default, bool)


def _literal(text: str) -> Any:
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


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


def read_chapter(name: str):
    import jupytext

    notebook = jupytext.read(chapter_path(name))
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}  # fmt: skip
    return notebook


def chapter_parameters(notebook) -> dict[str, Parameter]:
    """Parse the single ``parameters``-tagged cell into ``{name: Parameter}``."""
    cells = [c for c in notebook.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ChapterError(
            f"a chapter needs exactly one cell tagged 'parameters', found {len(cells)}"
        )
    params = {}
    comments = _comments_by_line(cells[0].source)
    for node in ast.parse(cells[0].source).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and getattr(node, "value", None) is not None:
            # ruff format may wrap a long line as `x = (\n value  # comment\n)`: any line counts
            lines = range(node.lineno, node.end_lineno + 1)
            comment = next((comments[n] for n in lines if n in comments), "")
            default = ast.literal_eval(node.value)
            domain = _parse_domain(comment)
            params[target.id] = Parameter(target.id, default, domain)
            try:
                params[target.id].coerce(default)
            except ValueError as error:
                raise ChapterError(f"the declared default does not fit: {error}") from None
    return params


def _comments_by_line(source: str) -> dict[int, str]:
    """``{line number: comment text}`` of a cell, from Python's own tokenizer."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {t.start[0]: t.string[1:] for t in tokens if t.type == tokenize.COMMENT}


def validate_parameters(name: str, declared: dict[str, Parameter], given: dict[str, Any]) -> dict:
    """Coerce ``given`` to the declared types; raise one error listing every problem."""
    listing = ", ".join(p.describe() for p in declared.values())
    problems, values = [], {}
    for key, value in given.items():
        if key not in declared:
            problems.append(f"unknown parameter {key!r}")
            continue
        try:
            values[key] = declared[key].coerce(value)
        except ValueError as error:
            problems.append(str(error))
    if "profile" in values and values["profile"] not in PROFILE_NAMES:
        problems.append(f"profile must be one of {', '.join(PROFILE_NAMES)}")
    if problems:
        raise ChapterError(
            f"chapter {name!r}: " + "; ".join(problems) + f".\nValid parameters: {listing}"
        )
    return values


def _git_commit() -> str:
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


def show_provenance() -> None:
    """Run inside the chapter's kernel: show one provenance line and hand devices to the runner."""
    import jax
    from IPython.display import Markdown, display

    devices = [f"{d.platform}:{d.device_kind}" for d in jax.devices()]
    record = {"jax_backend": jax.default_backend(), "jax_devices": devices}
    if path := os.environ.get(PROVENANCE_ENV):
        Path(path).write_text(json.dumps(record))
    versions = package_versions()
    display(
        Markdown(
            f"*Provenance:* commit `{_git_commit()}`, JAX {versions.get('jax')} on "
            f"{record['jax_backend']} ({', '.join(sorted(set(devices)))}), "
            f"Python {versions['python']}, run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."
        )
    )


def _stamp(name: str, values: dict) -> dict:
    source = chapter_path(name).read_bytes()
    return {
        "chapter_sha256": hashlib.sha256(source).hexdigest()[:16],
        "library_sha256": library_hash(),
        "parameters": values,
    }


def is_up_to_date(name: str, values: dict) -> bool:
    executed = EXECUTED_DIR / f"{name}.ipynb"
    if not executed.exists():
        return False
    recorded = json.loads(executed.read_text()).get("metadata", {}).get("ropebook", {})
    stamp = _stamp(name, values)
    return all(recorded.get(key) == value for key, value in stamp.items())


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
    notebook = read_chapter(name)
    given = dict(parameters or {})
    if profile is not None:
        given["profile"] = profile
    values = validate_parameters(name, chapter_parameters(notebook), given)
    target = EXECUTED_DIR / f"{name}.ipynb"
    if not force and is_up_to_date(name, values):
        print(f"{name}: up to date ({target.relative_to(REPO_ROOT)})")
        return target

    cell = nbformat.v4.new_code_cell(PROVENANCE_SOURCE, metadata={"tags": ["remove-input"]})
    notebook.cells.append(cell)
    started = time.time()
    with atomic_path(target) as tmp_path:  # a failed run never replaces the previous notebook
        tmp = str(tmp_path)
        provenance_file = tmp_path.with_suffix(".json")
        os.environ[PROVENANCE_ENV] = str(provenance_file)
        try:
            _execute(name, notebook, tmp, values, progress)
            executed = nbformat.read(tmp, as_version=4)
            _hide_injected_parameters_like_declared(executed)
            declared_profile = chapter_parameters(notebook).get("profile")
            executed.metadata["ropebook"] = {
                **_stamp(name, values),
                "profile": values.get("profile", declared_profile and declared_profile.default),
                "git_commit": _git_commit(),
                "packages": package_versions(),
                "seconds": round(time.time() - started, 1),
                **(json.loads(provenance_file.read_text()) if provenance_file.exists() else {}),
            }
            nbformat.write(executed, tmp)
        finally:
            os.environ.pop(PROVENANCE_ENV, None)
            provenance_file.unlink(missing_ok=True)
    return target


def _hide_injected_parameters_like_declared(notebook) -> None:
    """Papermill's injected cell inherits the remove-* tags of the cell tagged parameters."""
    tags = [c.metadata.get("tags", []) for c in notebook.cells]
    declared = next((t for t in tags if "parameters" in t), [])
    hiding = [t for t in declared if t.startswith(("remove-", "hide-"))]
    for cell, cell_tags in zip(notebook.cells, tags, strict=True):
        if "injected-parameters" in cell_tags:
            cell.metadata["tags"] = [*cell_tags, *hiding]


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


def run_all(profile: str | None = None, *, force: bool = False) -> list[Path]:
    """Run every chapter in book order, summaries last; stop at the first failure."""
    return [
        run_chapter(n, profile=profile, force=force or n in SUMMARY_CHAPTERS)
        for n in chapter_names()
    ]
