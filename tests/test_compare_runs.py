"""tools/compare_runs.py: a run that changes no number compares equal; a rounding change only
within ``--rtol``; a changed number never."""

import importlib.util
import json

from ropebook import REPO_ROOT

spec = importlib.util.spec_from_file_location(
    "compare_runs", REPO_ROOT / "tools" / "compare_runs.py"
)
compare_runs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare_runs)


def chart(values: list[float]) -> str:
    """An Altair-like spec: datasets named by a hash of their rows, as Altair names them."""
    import hashlib

    rows = [{"x": i, "y": v} for i, v in enumerate(values)]
    name = "data-" + hashlib.md5(json.dumps(rows).encode()).hexdigest()
    return json.dumps({"data": {"name": name}, "mark": "line", "datasets": {name: rows}})


def test_charts_alike_within_the_tolerance_only():
    exact, rounded, moved = chart([1.0, 2.0]), chart([1.0, 2.0 * (1 + 1e-9)]), chart([1.0, 2.1])
    assert compare_runs.same_chart(exact, chart([1.0, 2.0]))
    assert not compare_runs.same_chart(exact, rounded)  # default: identical only
    assert compare_runs.same_chart(exact, rounded, rtol=1e-6)  # its dataset's name moved too
    assert not compare_runs.same_chart(exact, moved, rtol=1e-6)
    assert not compare_runs.same_chart(exact, chart([1.0, 2.0, 3.0]), rtol=1e-6)


def test_glued_numbers_within_the_tolerance_and_text_exactly():
    glued = lambda text: json.dumps({"text/plain": text})  # noqa: E731
    assert compare_runs.same_glued(glued("0.5"), glued("0.5000001"), rtol=1e-6)
    assert not compare_runs.same_glued(glued("0.5"), glued("0.5000001"))
    assert not compare_runs.same_glued(glued("0.5"), glued("0.6"), rtol=1e-6)
    assert not compare_runs.same_glued(glued("'held'"), glued("'not held'"), rtol=1e-6)
