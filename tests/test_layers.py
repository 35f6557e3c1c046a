"""The package's layers, read from its source with ``ast`` (nothing is imported).

Measurement (``ropebook.analysis``) sits below presentation (``ropebook.present``, built on the
shared figure helpers of ``ropebook.plots``): charts and tables are built only above, and no
import points from measurement up to presentation. Every import statement counts, including
those inside functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "ropebook"

# The only modules that may import Altair: presentation and the shared figure helpers. The
# runner (``pipeline``) and the site checks (``sitecheck``) need no Altair import: they record
# its version by distribution name and read the built pages.
ALTAIR_ALLOWED = ("ropebook.present", "ropebook.plots")
# What the measurement layer must not import: chart and display libraries, and the layers above.
BELOW_PRESENTATION = ("ropebook.analysis",)
PRESENTATION = ("ropebook.present", "ropebook.plots")
CHART_LIBRARIES = ("altair", "matplotlib", "IPython.display")
MAX_LINES = 850


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
