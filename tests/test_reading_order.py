"""A reading order without forward references: a chapter links (by ``[..](name.ipynb)`` or a
``{ref}`` to a label) only to chapters before it in ``_toc.yml``, with three exceptions: the
appendix on methods, which every chapter may cite for how a verdict is decided; the summary pages
(scorecard, build), which gather every chapter; and a "next chapter" pointer to the chapter that
follows. The landing page links everywhere.

A chapter that uses another's result reads its executed record (``pipeline.chapter_record``):
only an earlier chapter's, so ``run all`` can run the owner first; and related chapters stand
together."""

import re

from ropebook import pipeline

APPENDIX = ("methods", "methods_recipe")
LABEL = re.compile(r"^# \(([\w-]+)\)=$", re.MULTILINE)
REF = re.compile(r"\{ref\}`(?:[^`<]*<([\w-]+)>|([\w-]+))`")
LINK = re.compile(r"\[([^\]]*)\]\(([\w-]+)\.ipynb(?:#[\w-]*)?\)")
# Forward links still to be moved: (chapter, later chapter); none today.
PENDING: set[tuple[str, str]] = set()


def _order() -> list[str]:
    return [n for n in pipeline.chapter_names() if n != "index"]


def forward_links(order: list[str]) -> list[tuple[str, str, str]]:
    """``(chapter, target, how)`` for every link from a chapter to one after it."""
    texts = {n: pipeline.chapter_path(n).read_text() for n in order}
    labels = {label: n for n in order for label in LABEL.findall(texts[n])}
    found = []
    for i, name in enumerate(order):
        targets = [(t, f"[{words}]") for words, t in LINK.findall(texts[name])]
        targets += [
            (labels.get(a or b, ""), f"{{ref}}`{a or b}`") for a, b in REF.findall(texts[name])
        ]
        for target, how in targets:
            if target in order and order.index(target) > i:
                found.append((name, target, how))
    return found


def test_the_appendix_is_named_and_stands_after_the_chapters():
    order = _order()
    body = [n for n in order if n not in pipeline.SUMMARY_CHAPTERS]
    assert body[-len(APPENDIX) :] == list(APPENDIX), body
    text = pipeline.chapter_path("methods").read_text()
    assert "appendix" in text.split("# %% [markdown]")[2].lower()  # the page says so


def test_chapters_link_forward_only_to_the_appendix_summaries_or_the_next_chapter():
    order = _order()
    wrong = [
        (name, target, how)
        for name, target, how in forward_links(order)
        if target not in APPENDIX
        and target not in pipeline.SUMMARY_CHAPTERS
        and not (order.index(target) == order.index(name) + 1 and "next" in how.lower())
        and (name, target) not in PENDING
    ]
    assert not wrong, f"forward links (link back, or move the chapter): {wrong}"


# Chapters that answer one question from two sides, and so stand side by side in the book.
RELATED = (("head_dynamics", "plane_map"), ("p_rope", "p_rope_headline"))


def test_a_chapter_reads_only_earlier_chapters_records():
    order = _order()
    later = [(n, r) for n in order for r in pipeline.reads(n) if order.index(r) >= order.index(n)]
    assert not later, f"records read from a chapter not before the reader: {later}"


def test_related_chapters_stand_together():
    order = _order()
    apart = [(a, b) for a, b in RELATED if order.index(b) != order.index(a) + 1]
    assert not apart, f"not side by side in _toc.yml: {apart}"
