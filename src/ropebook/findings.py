"""The book's answers, one line per question, built from the chapters' claim records.

The landing page opens with one line per question the book asks (:data:`QUESTIONS`), and each
chapter opens with the same line as its "In short" (:func:`in_short`); both come from
:func:`answer_line`, so the two cannot disagree. A line's words are the headline claim's record,
never typed here: its statement (up to the first colon: the claim in brief), its verdict (for a
proof or a check, its kind), what it measured with the interval (the first clause), and what the
verdict rests on — the regime and seeds the record names, and either this build (profile and
device, from the executed chapter's provenance) or a kept study (its device and date, as its
record names them; the landing page lists each kept study with its commit).

This module maps questions to claim ids only; the first id of a question is its headline, the
others are the question's further findings (shown on their chapters; a chapter whose claims
answer a question opens with the first of them it holds).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ropebook.claims import PROVED, VERDICTS, Claim, tally, verdict_label


@dataclass(frozen=True)
class Question:
    """A question the book asks and the claims that answer it, the headline first."""

    key: str
    text: str
    claims: tuple[str, ...]

    @property
    def chapter(self) -> str:
        """The chapter that holds the headline claim (a claim id is ``<chapter>.<name>``)."""
        return chapter_of(self.claims[0])


# The questions, in the book's order. Each headline is the claim that answers its question most
# directly, chosen before the results (it does not change with the verdict).
QUESTIONS: tuple[Question, ...] = (
    Question("decay", "Does RoPE decay?", ("decay.trained", "decay.over_training")),
    Question("frequencies", "Which frequencies do trained models use?", (
        "frequency_usage.low_freq_qk", "frequency_usage.every_layer",
        "frequency_usage.high_freq_heads", "frequency_usage.high_freq_positional",
        "frequency_usage.values_flat", "frequency_usage.nope_control", "frequency_usage.domains",
        "frequency_usage.over_training", "frequency_usage.edge_layers",
        "real_checkpoints.low_freq", "real_checkpoints.diagonal_head",
    )),
    Question("heads", "How do positional heads form?", (
        "positional_heads.rope_vs_nope", "positional_heads.trained_rope_heads",
        "positional_heads.isolated_rope", "positional_heads.high_freq_usage",
        "positional_heads.cauchy_schwarz", "head_dynamics.over_training",
        "head_dynamics.induction_over_training", "plane_map.quarters", "plane_map.barbero",
        "plane_map.hong", "plane_map.chiang", "plane_map.oka", "plane_map.khan",
    )),
    Question("semantic", "Are the slow planes semantic channels?", (
        "semantic_channels.semantic_head", "semantic_channels.bos_sink",
        "semantic_channels.apostrophe_head", "semantic_channels.apostrophe_low_freq",
        "semantic_channels.apostrophe_over_training",
    )),
    Question("break", "Do the slow planes break at length?", ("semantic_channels.extrapolation",)),
    Question("language", "Does p-RoPE help on language?", (
        "p_rope_headline.matched_p075_vs_rope", "p_rope_headline.flagship_p075_vs_rope",
        "p_rope_headline.matched_p075_vs_500k", "p_rope_headline.matched_reversed_vs_p",
        "p_rope_headline.matched_partial_vs_p", "p_rope_headline.matched_p075_vs_p025",
        "p_rope_headline.matched_p025_vs_nope", "p_rope.p075_vs_rope", "p_rope.table2_rank",
        "p_rope.nope_worst", "p_rope.p075_vs_500k", "p_rope.reversed_vs_p",
        "p_rope.partial_vs_p", "p_rope.p075_vs_p025", "p_rope.p025_vs_nope", "p_sweep.p_sweep",
    )),
    Question("recall", "Does p-RoPE help on recall?", (
        "recall.distance_p075", "recall.theta_null", "recall.theta_contrast",
        "recall.kback_nope", "recall.kback_length", "recall.probe_position",
        "recall.probe_content",
    )),
    Question("beyond", "Does p-RoPE help beyond the context?", ("p_sweep.extrapolation",)),
    Question("layouts", "What do the 2025–26 layouts buy?", (
        "layouts.language_long", "layouts.gemma4_recall", "layouts.local_kback",
        "layouts.gemma_equal", "layouts.nope_global", "layouts.p025_over_p075",
        "layouts.chunk_ceiling", "layouts.p_trend", "layouts.language_cost", "layouts.learn",
    )),
    Question("extension", "What do the context-extension rules do?", (
        "rope_scaling.yarn_beats_pi", "rope_scaling.plain_rope_fails",
        "rope_scaling.pi_poor_without_finetune", "rope_scaling.finetune_helps_pi",
        "rope_scaling.pi_after_finetune", "rope_scaling.yarn_beats_ntk",
        "rope_scaling.yarn_finetuned_beats_pi", "rope_scaling.previous_token_heads",
        "rope_scaling.passkey", "recall.passkey_extension",
    )),
)  # fmt: skip

# Limits that keep a line short enough for the landing page to fit one screen; the chapter's
# table under "What we claim and what we measured" has every word.
# A line must stay about two rows of the page's column: the ten answers fit one screen.
WORDS_LIMIT = 60
EFFECT_LIMIT = 50


def chapter_of(claim_id: str) -> str:
    return claim_id.split(".", 1)[0]


def shorten(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters: at the last clause (``"; "``) that fits, else
    at the last word, with an ellipsis where words were cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    clauses = text.split("; ")
    kept = ""
    for clause in clauses:
        joined = f"{kept}; {clause}" if kept else clause
        if len(joined) + 2 > limit:
            break
        kept = joined
    if kept:
        return kept + " …"
    cut = text[: limit - 2].rsplit(" ", 1)[0]
    for opening, closing in ("()", "[]"):  # no bracket left open by the cut
        if cut.count(opening) > cut.count(closing):
            cut = cut[: cut.rindex(opening)]
    return cut.rstrip(",;: ") + " …"


def words(claim: Claim, limit: int = WORDS_LIMIT) -> str:
    """The claim in brief: its statement up to the first colon (the rest says how it is tested)."""
    return shorten(claim.statement.split(": ", 1)[0], limit)


# An interval's level and sample count, which a findings line leaves to its basis.
_LEVEL = re.compile(r"^\d+% (?:CI|bootstrap) ")
_OVER = re.compile(r" over \d+ \w+.*$")


def effect(claim: Claim, limit: int = EFFECT_LIMIT) -> str:
    """What it measured, first clause first, with the interval where the measured text has none
    (the interval is kept whole; the measured text is cut to make room for it)."""
    measured = claim.measured.split(" — ", 1)[0]
    has_interval = "[" in measured or "CI" in measured or "no interval" in measured
    if claim.interval and not has_interval:
        # its first clause, without the level and the sample count (the basis names the seeds)
        bounds = _OVER.sub("", _LEVEL.sub("", claim.interval.split("; ")[0]))
        interval = f" ({bounds})"
        return shorten(measured, max(limit - len(interval), 20)) + interval
    return shorten(measured, limit)


_DATE = re.compile(r"\b(20\d\d-\d\d-\d\d)\b")
_DEVICE = re.compile(r"\b(\d+ × [A-Z][\w-]*(?: [\w-]+)*?)(?=[,;)]|$)")
_REGIME = re.compile(r"\b(\w+) regime\b")
_PROFILE = re.compile(r"\b(smoke|cpu|gpu) profile\b")
_STUDY = re.compile(r"\bkept (?:\w+ )?study\b|\bstudy\b|\bresults file\b")


def _seeds(claim: Claim) -> str:
    return f"{claim.seeds} seed{'s' if claim.seeds != 1 else ''}" if claim.seeds else ""


def devices_text(devices: Iterable[str]) -> str:
    """``["cpu:cpu", "gpu:NVIDIA H200"]`` → ``"cpu, NVIDIA H200"`` (platform:kind, each once)."""
    names = []
    for device in devices:
        platform, _, kind = device.partition(":")
        name = kind or platform
        if name not in names:
            names.append(name)
    return ", ".join(names)


def basis(claim: Claim, provenance: Mapping | None = None) -> str:
    """What the verdict rests on, briefly: seeds and regime, then this build's device (from
    ``provenance``) or a kept study's device (or profile) and date, as the record names them."""
    evidence = claim.evidence or ""
    regime = _REGIME.search(evidence)
    parts = [p for p in (_seeds(claim), regime and regime.group(1)) if p]
    date = _DATE.search(evidence)
    if _STUDY.search(evidence) and date:
        device = _DEVICE.search(evidence)
        profile = _PROFILE.search(evidence)
        where = device.group(1) if device else profile and f"{profile.group(1)} profile"
        return ", ".join(parts + [f"kept study on {where}, {date.group(1)}" if where
                                  else f"kept study, {date.group(1)}"])  # fmt: skip
    devices = devices_text((provenance or {}).get("jax_devices", []))
    return ", ".join(parts + [f"this build on {devices}" if devices else "this build"])


@dataclass(frozen=True)
class Answer:
    """One line's parts: the question (``None`` for a chapter no question names), the chapter
    and headline claim, and what :func:`answer_line` writes."""

    question: Question | None
    chapter: str
    claim: Claim
    words: str
    verdict: str
    effect: str
    basis: str


def answer(
    claim: Claim, chapter: str, question: Question | None, provenance: Mapping | None = None
) -> Answer:
    return Answer(question, chapter, claim, words(claim), verdict_label(claim), effect(claim),
                  basis(claim, provenance))  # fmt: skip


def answer_line(found: Answer, *, link: bool = True) -> str:
    """The line (Markdown): the question (linked to its chapter), the claim in brief, the verdict,
    the effect with its interval and what it rests on."""
    question = found.question.text if found.question else ""
    if question and link:
        question = f"[{question}]({found.chapter}.ipynb)"
    lead = f"**{question}** " if question else ""
    return f"{lead}{found.words} — **{found.verdict}**: {found.effect} *({found.basis})*"


def question_answer(
    question: Question, records: Sequence, *, chapter: str | None = None
) -> Answer | None:
    """The answer to ``question`` from the executed chapters' ``records``
    (:class:`ropebook.claims.ChapterRecord`): its headline claim, or, with ``chapter``, the first
    of its claims that chapter recorded. ``None`` if no record holds one."""
    by_id = {c.id: (c, r) for r in records for c in r.claims}
    for claim_id in question.claims:
        if claim_id in by_id and (chapter is None or chapter_of(claim_id) == chapter):
            claim, record = by_id[claim_id]
            return answer(claim, record.name, question, record.provenance)
    return None


def question_of(chapter: str) -> Question | None:
    """``chapter``'s question: the one it holds the headline of, else the first (in the book's
    order) whose claims include one of its own."""
    homes = [q for q in QUESTIONS if q.chapter == chapter]
    others = [q for q in QUESTIONS if any(chapter_of(i) == chapter for i in q.claims)]
    return next(iter(homes + others), None)


def in_short(record) -> str:
    """A chapter's opening line (Markdown): the answer to its question, from its own claim; for a
    chapter no question names, its first finding; for one with no finding, what it proves and
    checks."""
    question = question_of(record.name)
    found = question and question_answer(question, [record], chapter=record.name)
    if found:
        return "**In short.** " + answer_line(found, link=False)
    finding = next((c for c in record.claims if c.finding), None)
    if finding:
        return "**In short.** " + answer_line(answer(finding, record.name, None, record.provenance))
    counts = tally(record.claims)
    kinds = [
        f"{'proves' if kind == PROVED else 'checks'} {counts[kind]} statement"
        + ("s" if counts[kind] != 1 else "")
        for kind in (PROVED, "checked")
        if counts[kind]
    ]
    if not kinds:
        return "**In short.** This page records no claim."
    statements = "; ".join(c.statement for c in record.claims)
    return (
        f"**In short.** This chapter {' and '.join(kinds)} (asserted on the page; no finding): "
        f"{statements}."
    )


def findings_tally(records: Sequence) -> str:
    """The findings of every chapter, counted by verdict (proofs and checks are not findings)."""
    counts = tally(c for r in records for c in r.claims)
    verdicts = ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v])
    n = counts["findings"]
    return f"{n} finding{'s' if n != 1 else ''}" + (f": {verdicts}" if verdicts else "")


# How the landing page's tally line starts: the site check finds the end of the answers by it.
TALLY_LEAD = "Across the book:"


def findings_page(records: Sequence) -> str:
    """The landing page's answers (Markdown): one line per question that an executed chapter
    answers, and the tally of the book's findings."""
    lines = [
        f"- {answer_line(found)}"
        for found in (question_answer(q, records) for q in QUESTIONS)
        if found is not None
    ]
    return "\n".join(lines) + f"\n\n{TALLY_LEAD} {findings_tally(records)}."
