"""Chapters read like a book: prose first, short visible code, parameters with declared ranges."""

import jupytext
import pytest

from ropebook import REPO_ROOT, parameters, pipeline

CHAPTERS = sorted((REPO_ROOT / "chapters").glob("*.py"))
HIDDEN = {"hide-input", "remove-input", "remove-cell", "hide-cell"}
MAX_VISIBLE_LINES = 25


def _lines(cell) -> list[str]:
    return [line for line in cell.source.splitlines() if line.strip()]


def _visible_code(notebook):
    return [
        c for c in notebook.cells
        if c.cell_type == "code" and not HIDDEN & set(c.metadata.get("tags", []))
    ]  # fmt: skip


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_visible_code_cells_are_short_and_prose_leads(path):
    notebook = jupytext.read(path)
    visible = _visible_code(notebook)
    long_cells = [
        (len(_lines(c)), _lines(c)[0][:60]) for c in visible if len(_lines(c)) > MAX_VISIBLE_LINES
    ]
    assert not long_cells, (
        f"{path.name}: visible code cells over {MAX_VISIBLE_LINES} lines: {long_cells}"
    )
    prose = sum(len(_lines(c)) for c in notebook.cells if c.cell_type == "markdown")
    code = sum(len(_lines(c)) for c in visible)
    assert prose >= code, f"{path.name}: {prose} prose lines < {code} visible code lines"


def _out_of_range(parameter: pipeline.Parameter):
    """A value of the right type outside the parameter's declared interval."""
    match = parameters._INTERVAL.fullmatch(parameter.domain)
    left, low, high, right = match.groups()
    low, high = parameters._bound(low), parameters._bound(high)
    value = low - 1 if low != float("-inf") else high + 1
    if left == "(" and low != float("-inf"):
        value = low
    element = type(
        parameter.default[0] if isinstance(parameter.default, list) else parameter.default
    )
    value = element(value)
    return [value] if isinstance(parameter.default, list) else value


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_numeric_parameters_declare_ranges_and_out_of_range_values_are_rejected(path):
    declared = pipeline.chapter_parameters(jupytext.read(path))
    for parameter in declared.values():
        default = parameter.default
        elements = default if isinstance(default, list) else [default]
        if not elements or not all(
            isinstance(e, int | float) and not isinstance(e, bool) for e in elements
        ):
            continue
        assert parameter.domain and parameters._INTERVAL.fullmatch(parameter.domain), (
            f"{path.name}: numeric parameter {parameter.name} declares no range 'in [lo, hi]'"
        )
        bad = _out_of_range(parameter)
        with pytest.raises(pipeline.ChapterError, match=parameter.name):
            pipeline.validate_parameters(path.stem, declared, {parameter.name: bad})
