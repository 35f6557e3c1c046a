"""The book's answers: one line per question, read from claim records, never typed."""

import re

import pytest

from ropebook import REPO_ROOT, findings
from ropebook.claims import ChapterRecord, Claim

BUILD = {"profile": "smoke", "jax_devices": ["cpu:cpu", "cpu:cpu"]}
STUDY = (
    "kept study on 1 × NVIDIA H200, 2026-11-27, commit 183087a, 64 seeds (0–63), other models "
    "than this build's"
)


def claim(claim_id: str, verdict: str = "held", **fields) -> Claim:
    return Claim(
        id=claim_id, source="Barbero et al. 2025", statement=fields.pop("statement", "A claim"),
        measured=fields.pop("measured", "measured"), verdict=verdict, **fields,
    )  # fmt: skip


def test_every_question_names_claims_its_chapters_declare():
    for question in findings.QUESTIONS:
        assert question.claims, question.key
        for claim_id in question.claims:
            source = (REPO_ROOT / "chapters" / f"{findings.chapter_of(claim_id)}.py").read_text()
            # the id in full, or its tail where the chapter builds ids in a loop (f"x.matched_{i}")
            name = claim_id.split(".", 1)[1].split("_")
            tails = [claim_id] + ["_".join(name[k:]) for k in range(len(name))]
            assert any(f'"{t}"' in source for t in tails), f"{claim_id} is declared nowhere"
    ids = [i for q in findings.QUESTIONS for i in q.claims]
    assert len(ids) == len(set(ids)), "a claim answers one question"


def test_the_line_is_the_record_shortened_and_labelled_with_its_basis():
    decay = claim(
        "decay.trained", "cannot decide",
        statement="Trained RoPE keys need not decay: some layer grows with distance",
        measured="2 of 2 layers uncertain; the contrast 0.36 — alone: more", interval="[0.1, 0.2]",
        seeds=1, evidence="1 seed; lesson regime, 30,720 tokens per model",
    )  # fmt: skip
    line = findings.answer_line(findings.answer(decay, "decay", findings.QUESTIONS[0], BUILD))
    assert line == (
        "**[Does RoPE decay?](decay.ipynb)** Trained RoPE keys need not decay — **cannot "
        "decide**: 2 of 2 layers uncertain … ([0.1, 0.2]) *(1 seed, lesson, this build on cpu)*"
    )


def test_a_kept_study_is_named_with_device_and_date():
    study = claim("p_rope_headline.matched_p075_vs_rope", "bounded", seeds=64, evidence=STUDY)
    assert findings.basis(study, BUILD) == "64 seeds, kept study on 1 × NVIDIA H200, 2026-11-27"
    results_file = claim(
        "layouts.language_long", seeds=3,
        evidence="study layout_language (cpu profile, matched regime), measured 2026-11-27",
    )  # fmt: skip
    assert findings.basis(results_file) == (
        "3 seeds, matched, kept study on cpu profile, 2026-11-27"
    )


@pytest.mark.parametrize(
    ("text", "limit", "short"),
    [
        ("short", 10, "short"),
        ("one clause; two clause; three clause", 28, "one clause; two clause …"),
        ("a measured value (with a long parenthesis) and more", 30, "a measured value …"),
    ],
)
def test_shorten_cuts_at_clauses_then_words_leaving_no_bracket_open(text, limit, short):
    assert findings.shorten(text, limit) == short
    assert len(findings.shorten(text, limit)) <= limit


def test_findings_page_one_line_per_answered_question_and_a_tally_of_findings_only():
    records = [
        ChapterRecord("decay", "Does RoPE decay?", [
            claim("decay.prop31", kind="proved"), claim("decay.trained", "not held", seeds=2),
            claim("decay.over_training", "cannot decide", to_decide="more seeds"),
        ], BUILD),
        ChapterRecord("p_rope_headline", "p-RoPE", [
            claim("p_rope_headline.matched_p075_vs_rope", "bounded", seeds=64, evidence=STUDY),
        ], BUILD),
    ]  # fmt: skip
    page = findings.findings_page(records)
    lines = page.splitlines()
    assert [line[:30] for line in lines if line.startswith("- ")] == [
        "- **[Does RoPE decay?](decay.i",
        "- **[Does p-RoPE help on langu",
    ]
    assert "**not held**" in lines[0] and "kept study on 1 × NVIDIA H200, 2026-11-27" in lines[1]
    assert page.endswith("Across the book: 3 findings: 1 bounded, 1 not held, 1 cannot decide.")


def test_in_short_is_the_findings_line_for_the_chapters_question():
    record = ChapterRecord("decay", "t", [claim("decay.trained", "held", seeds=1)], BUILD)
    page_line = findings.findings_page([record]).splitlines()[0]
    short = findings.in_short(record)
    assert short.startswith("**In short.** **Does RoPE decay?** ")
    assert re.sub(r"\[(.*?)\]\(decay\.ipynb\)", r"\1", page_line[2:]) == short[14:]


def test_in_short_of_a_chapter_without_findings_says_what_it_proves_and_checks():
    record = ChapterRecord("rope_basics", "t", [
        claim("rope_basics.relative", kind="proved", statement="Scores are relative"),
        claim("rope_basics.grid", kind="checked", statement="The grid is right"),
    ], BUILD)  # fmt: skip
    assert findings.in_short(record) == (
        "**In short.** This chapter proves 1 statement and checks 1 statement (asserted on the "
        "page; no finding): Scores are relative; The grid is right."
    )


def test_a_chapter_holding_a_questions_headline_answers_that_question():
    assert findings.question_of("p_sweep").key == "beyond"
    assert findings.question_of("p_rope").key == "language"
    assert findings.question_of("pe_zoo") is None


def test_every_chapter_opens_with_its_in_short_line():
    import jupytext

    from ropebook import pipeline

    for name in pipeline.chapter_names():
        if name == "index":  # the landing page is the findings page itself
            continue
        first = next(c for c in jupytext.read(pipeline.chapter_path(name)).cells
                     if c.cell_type == "markdown")  # fmt: skip
        lines = [line for line in first.source.splitlines() if line.strip()]
        assert lines[0].startswith("# ") and lines[1] == "{glue:md}`in_short`", name


def test_an_interval_keeps_its_bounds_and_drops_what_the_basis_says():
    domains = claim(
        "frequency_usage.domains", "cannot decide", measured="least similar of 5 domains: 0.932",
        interval="95% CI [0.890, 0.973] over 5 seeds; more", seeds=5,
    )  # fmt: skip
    assert findings.effect(domains) == "least similar of 5 domains: 0.932 ([0.890, 0.973])"
