"""Links between chapters resolve before the book is built: every MyST ``{ref}`` names a label
that one chapter defines (once), and every link to ``<chapter>.ipynb`` names a chapter of the
book. ``jupyter-book build -W`` would fail on either, but only after running every chapter."""

import re

import pytest

from ropebook import REPO_ROOT, pipeline

CHAPTERS = sorted((REPO_ROOT / "chapters").glob("*.py"))
LABEL = re.compile(r"^# \(([\w-]+)\)=$", re.MULTILINE)
REF = re.compile(r"\{ref\}`(?:[^`<]*<([\w-]+)>|([\w-]+))`")
NOTEBOOK_LINK = re.compile(r"\]\(([\w-]+)\.ipynb\)")
BROKEN_ROLE = re.compile(r"\{ref\}`[^`]*\n")  # a role split over two lines


def _labels() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in CHAPTERS:
        for label in LABEL.findall(path.read_text()):
            found.setdefault(label, []).append(path.stem)
    return found


def test_labels_are_defined_once_in_the_book():
    repeated = {label: where for label, where in _labels().items() if len(where) > 1}
    assert not repeated, f"labels defined in more than one place: {repeated}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_reference_names_a_label_and_every_notebook_link_a_chapter(path):
    text = path.read_text()
    assert not BROKEN_ROLE.search(text), f"{path.name}: a {{ref}} role spans two lines"
    labels = _labels()
    refs = {explicit or bare for explicit, bare in REF.findall(text)}
    assert refs <= labels.keys(), f"{path.name}: no label for {sorted(refs - labels.keys())}"
    chapters = set(pipeline.chapter_names())
    linked = set(NOTEBOOK_LINK.findall(text))
    assert linked <= chapters, f"{path.name}: links to no chapter {sorted(linked - chapters)}"


def test_the_p_rope_chapters_then_methods_precede_the_summaries():
    names = pipeline.chapter_names()
    order = [names.index(n) for n in ("p_rope", "p_sweep", "methods", "scorecard")]
    assert order == sorted(order), f"book order: {names}"
    for name in ("p_sweep", "methods"):  # their claims reach the scorecard
        assert name not in pipeline.SUMMARY_CHAPTERS
