"""Claim records: what each chapter tested, what it measured and the verdict.

Every chapter ends with ``claims.glue_claims([...])``: the claims are shown as a table and glued
(``myst_nb.glue``) under ``claims`` as JSON, plus ``<id>.verdict`` and ``<id>.measured`` for prose.
The scorecard chapter reads them back from the executed notebooks with :func:`read_claims`.

Each claim is of one of three kinds (:data:`KINDS`). A *finding* is an empirical statement that
the data could contradict; only findings are scored. A *proof* (a sympy proof executed on the
page) and a *check* (an implementation or construction check, which fails only if the code is
wrong) are asserted: recording one that does not hold raises :class:`CheckFailed`, so the build
fails, and the summary pages list them apart with their own counts.

A finding left *cannot decide*, *uninformative here* or *not testable here* must say what would
decide it (``to_decide``: seeds, tokens, a regime or another experiment, with numbers; sentences
in :mod:`ropebook.present.decide`): :meth:`ClaimSet.claims` refuses to publish it otherwise.
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# finding: the data could contradict it (scored). proved: a symbolic proof executed on the page.
# checked: an implementation or construction check that fails only if the code is wrong.
FINDING, PROVED, CHECKED = "finding", "proved", "checked"
KINDS = (FINDING, PROVED, CHECKED)

# held / not held: the evidence decides, one way or the other. partly: a claim of several parts
# of which some hold. bounded: a decided null — the interval contains the threshold but lies
# inside a margin around it fixed before the data (the paper's gap or the chapter's unit), so
# any effect is smaller than the margin. cannot decide: the interval contains the threshold and
# reaches beyond the margin (say the bound in ``measured``, the detectable effect in
# ``evidence``). uninformative here: the regime cannot tell the claim by construction (say the
# measurement that shows why); no verdict on the paper. not testable here: this book cannot
# measure it (say why).
VERDICTS = (
    "held", "partly", "bounded", "not held", "cannot decide", "uninformative here",
    "not testable here",
)  # fmt: skip
DECIDED = ("held", "partly", "bounded", "not held")
# The verdicts that leave a claim open: each such claim must say what would decide it
# (``Claim.to_decide``: seeds, tokens, a regime or a different experiment, with numbers).
UNDECIDED = ("cannot decide", "uninformative here", "not testable here")
# What a proof or check may record: it held, or there was nothing here to check it on.
ASSERTED = ("held", "not testable here")


class CheckFailed(AssertionError):
    """A proof or check that did not hold: the code (or the proof) is wrong, the build stops."""


@dataclass(frozen=True)
class Claim:
    id: str
    source: str
    statement: str
    measured: str
    verdict: str
    interval: str | None = None
    seeds: int | None = None
    evidence: str | None = None  # what decided it: models, seeds, tokens, minimum detectable effect
    # What would decide an undecided claim (seeds, tokens or another experiment, with numbers).
    # Last and optional, so the claims of notebooks executed before it existed still load.
    to_decide: str | None = None
    # Both after the rest, so claims glued before they existed load (as confirmatory findings).
    kind: str = FINDING
    exploratory: bool = False  # decided on seeds bought after seeing this effect

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"claim {self.id!r}: verdict {self.verdict!r} not in {VERDICTS}")
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.id!r}: kind {self.kind!r} not in {KINDS}")
        if not self.id or not self.source or not self.statement or not self.measured:
            raise ValueError(f"claim {self.id!r}: id, source, statement and measured are required")

    @property
    def finding(self) -> bool:
        return self.kind == FINDING

    @property
    def undecided(self) -> bool:
        return self.finding and self.verdict in UNDECIDED


def verdict_from_interval(
    low: float, high: float, *, threshold: float, above: bool = True, margin: float | None = None
) -> str:
    """``held`` if the whole interval is on the claimed side of ``threshold``, ``not held`` if it
    is wholly on the other side. An interval that contains the threshold is ``bounded`` when it
    lies within ``threshold ± margin`` (a margin fixed before the data: any effect is smaller
    than it) and ``cannot decide`` otherwise (the run only bounds the effect; more may decide)."""
    claimed, against = (
        (low > threshold, high < threshold) if above else (high < threshold, low > threshold)
    )
    if claimed:
        return "held"
    if against:
        return "not held"
    if margin is not None and threshold - margin <= low and high <= threshold + margin:
        return "bounded"
    return "cannot decide"


# ---------------------------------------------------------------- verdict rules
# A rule turns a claim's evidence into a verdict. Chapters name a rule when they declare a claim
# (:class:`ClaimSpec`) and later hand it the evidence; every rule of the book lives here.
Rule = Callable[[Any], str]


def holds(evidence: bool) -> str:
    """``held`` if the evidence (a bool) is true, else ``not held``."""
    return "held" if bool(evidence) else "not held"


def fails(evidence: bool) -> str:
    """The converse of :func:`holds`: the claim is held when the evidence is false."""
    return holds(not bool(evidence))


def graded(evidence: tuple[bool, ...] | list[bool]) -> str:
    """All parts true: ``held``; some: ``partly``; none: ``not held``."""
    parts = [bool(e) for e in evidence]
    return "held" if all(parts) else "partly" if any(parts) else "not held"


def interval_above(threshold: float, *, margin: float | None = None) -> Rule:
    """Rule for an interval ``(low, high)`` that the claim says lies above ``threshold``
    (``bounded`` within ``± margin`` of it, see :func:`verdict_from_interval`)."""
    return lambda interval: verdict_from_interval(
        *interval, threshold=threshold, above=True, margin=margin
    )


def interval_below(threshold: float, *, margin: float | None = None) -> Rule:
    """Rule for an interval ``(low, high)`` that the claim says lies below ``threshold``."""
    return lambda interval: verdict_from_interval(
        *interval, threshold=threshold, above=False, margin=margin
    )


def informative_or(informative: bool, verdict: str) -> str:
    """``verdict`` where the regime can tell the claim, else ``uninformative here``: a test
    that is null by construction (e.g. planes that barely turn over the context) decides
    nothing about the paper, whatever its interval says."""
    return given(verdict) if informative else "uninformative here"


def combine(verdicts) -> str:
    """One verdict for a claim tested in several parts (domains, lengths, q and k): ``not
    testable here`` if any part is, else ``uninformative here`` if any part is; ``held`` if
    all are; ``partly`` if some part held (or partly); else ``not held`` if some part is
    established false, ``bounded`` if every part is, ``cannot decide`` otherwise."""
    verdicts = list(verdicts)
    if not verdicts:
        raise ValueError("no verdicts to combine")
    for unknown in ("not testable here", "uninformative here"):
        if unknown in verdicts:
            return unknown
    if all(v == "held" for v in verdicts):
        return "held"
    if any(v in ("held", "partly") for v in verdicts):
        return "partly"
    if "not held" in verdicts:
        return "not held"
    return "bounded" if all(v == "bounded" for v in verdicts) else "cannot decide"


def combine_testable(verdicts) -> str:
    """:func:`combine` over the parts that could be tested: a part with nothing to measure (a
    model with no positional head, say) says nothing about the claim, so it is left out rather
    than making the whole claim untestable; ``not testable here`` only if every part is."""
    tested = [v for v in verdicts if v != "not testable here"]
    return combine(tested) if tested else "not testable here"


def given(evidence: str) -> str:
    """The evidence is already a verdict, decided by a library function (checked here)."""
    if evidence not in VERDICTS:
        raise ValueError(f"verdict {evidence!r} not in {VERDICTS}")
    return evidence


def too_few_runs(n: int) -> str:
    """The verdict of a finding measured on too few runs (seeds) to form its interval: ``cannot
    decide`` if any run measured it (it is open: more seeds decide it), ``not testable here``
    only with none (nothing here measured it). Every rule with a minimum number of runs says
    this, so a single seed is an open finding, never tallied apart as untestable."""
    return "cannot decide" if n > 0 else "not testable here"


def untestable(_: Any = None) -> str:
    """Always ``not testable here`` (say why in ``measured``)."""
    return "not testable here"


@dataclass(frozen=True)
class ClaimSpec:
    """What a chapter claims, stated once: id, source, statement, the rule deciding it and its
    kind (:data:`KINDS`: a finding unless it is a proof or a check)."""

    id: str
    source: str
    statement: str
    rule: Rule = holds
    kind: str = FINDING

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.id!r}: kind {self.kind!r} not in {KINDS}")


class ClaimSet:
    """A chapter's claims: declared up front, measured as the chapter goes, glued at the end.

    ``record`` applies the claim's rule to the evidence; ``glue`` refuses to publish unless
    every declared claim was measured exactly once, so no claim silently drops out.
    """

    def __init__(self, *specs: ClaimSpec, basis: str | None = None) -> None:
        ids = [s.id for s in specs]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate claim ids: {ids}")
        self.specs = {s.id: s for s in specs}
        self.records: dict[str, Claim] = {}
        self.basis = basis  # what a measured claim rests on unless it says otherwise

    def record(
        self,
        claim_id: str,
        evidence: Any,
        measured: str,
        *,
        interval: str | None = None,
        seeds: int | None = None,
        basis: str | None = None,
        to_decide: str | None = None,
        exploratory: bool = False,
    ) -> None:
        """Decide the claim from ``evidence`` with its declared rule and keep the record;
        ``basis`` says what the verdict rests on (models, seeds, tokens, detectable effect);
        ``to_decide`` what would decide it should the verdict leave it open (kept only then);
        ``exploratory`` that its seeds were chosen after seeing its effect (not confirmatory)."""
        if claim_id not in self.specs:
            raise KeyError(f"claim {claim_id!r} was not declared; declared: {list(self.specs)}")
        if claim_id in self.records:
            raise ValueError(f"claim {claim_id!r} recorded twice")
        spec = self.specs[claim_id]
        if basis is None and seeds and self.basis:
            basis = f"{seeds} seed{'s' if seeds != 1 else ''}; {self.basis}"
        verdict = spec.rule(evidence)
        if spec.kind != FINDING and verdict not in ASSERTED:
            raise CheckFailed(
                f"{spec.kind} claim {claim_id!r} ({spec.statement}): {verdict}; {measured}"
            )
        claim = Claim(
            id=spec.id, source=spec.source, statement=spec.statement, measured=measured,
            verdict=verdict, interval=interval, seeds=seeds, evidence=basis,
            to_decide=to_decide if verdict in UNDECIDED else None, kind=spec.kind,
            exploratory=exploratory and spec.kind == FINDING,
        )  # fmt: skip
        self.records[claim_id] = claim

    def claims(self) -> list[Claim]:
        """The recorded claims in declaration order; refuses a set with a claim never recorded,
        or left undecided without saying what would decide it."""
        missing = [i for i in self.specs if i not in self.records]
        if missing:
            raise ValueError(f"claims declared but never recorded: {missing}")
        open_ended = [c.id for c in self.records.values() if c.undecided and not c.to_decide]
        if open_ended:
            raise ValueError(
                f"claims left undecided without saying what would decide them (pass "
                f"to_decide= to record: seeds, tokens or another experiment): {open_ended}"
            )
        return [self.records[i] for i in self.specs]

    def glue(self) -> None:
        glue_claims(self.claims())


def evidence_text(claim: Claim) -> str:
    """What a verdict rests on, for tables: the recorded basis, else the seed count, else —."""
    if claim.evidence:
        return claim.evidence
    return f"{claim.seeds} seed{'s' if claim.seeds != 1 else ''}" if claim.seeds else "—"


def evidence_cell(claim: Claim) -> str:
    """:func:`evidence_text`, followed for an undecided claim by what would decide it."""
    evidence = evidence_text(claim)
    if not (claim.undecided and claim.to_decide):
        return evidence
    return ("" if evidence == "—" else f"{evidence}. ") + f"*To decide:* {claim.to_decide}"


def verdict_label(claim: Claim) -> str:
    """The verdict column: a finding's verdict; a proof's or check's kind (they are asserted,
    not scored), with *not testable here* where there was nothing to check."""
    if claim.finding:
        return claim.verdict + (" (exploratory)" if claim.exploratory else "")
    return claim.kind if claim.verdict == "held" else f"{claim.kind}: {claim.verdict}"


def markdown_table(claims: list[Claim]) -> str:
    """The claims as a Markdown table; each source's typed citations link to the bibliography."""
    from ropebook.citations import cite_roles

    rows = ["| claim (source) | measured | evidence | verdict |", "|---|---|---|---|"]
    for c in claims:
        measured = c.measured + (f" ({c.interval})" if c.interval else "")
        source = cite_roles(c.source)
        rows.append(
            f"| {c.statement} — *{source}* | {measured} | {evidence_cell(c)} | "
            f"**{verdict_label(c)}** |"
        )
    return "\n".join(rows)


# ---------------------------------------------------------------- tallies
def tally(claims: Iterable[Claim]) -> dict[str, int]:
    """What the summary pages count: ``findings`` and each verdict among them (proofs and checks
    are never scored), how many of the findings are ``exploratory``, and ``proved`` and
    ``checked`` apart."""
    claims = list(claims)
    findings = [c for c in claims if c.finding]
    kinds = Counter(c.kind for c in claims)
    verdicts = Counter(c.verdict for c in findings)
    return {
        "findings": len(findings),
        **{v: verdicts[v] for v in VERDICTS},
        "exploratory": sum(c.exploratory for c in findings),
        PROVED: kinds[PROVED],
        CHECKED: kinds[CHECKED],
    }


def tally_text(claims: Iterable[Claim]) -> str:
    """A tally in words: ``"5 findings (3 held, 2 cannot decide); 2 proved, 1 checked"``."""
    counts = tally(claims)
    verdicts = ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v])
    n = counts["findings"]
    explored = f"; {counts['exploratory']} exploratory" if counts["exploratory"] else ""
    text = f"{n} finding{'s' if n != 1 else ''}" + (f" ({verdicts}{explored})" if verdicts else "")
    asserted = ", ".join(f"{counts[k]} {k}" for k in (PROVED, CHECKED) if counts[k])
    return f"{text}; {asserted}" if asserted else text


def expected_false_verdicts(claims: Iterable[Claim], alpha: float = 0.05) -> dict[str, float]:
    """The family's error, stated: each decided confirmatory finding rests on a test at level
    ``alpha`` (a 95 % interval, or p < 0.05), so if every one of their true effects sat exactly at
    its threshold (the worst case for each), ``alpha`` × their number would be decided the wrong
    way on average. ``decided``: how many (exploratory findings, whose seeds were chosen after
    seeing their effect, are left out: their level is not ``alpha``); ``expected``: that bound;
    ``cannot_decide_share``: the share of findings left *cannot decide*."""
    findings = [c for c in claims if c.finding]
    decided = [c for c in findings if c.verdict in DECIDED and not c.exploratory]
    open_share = sum(c.verdict == "cannot decide" for c in findings) / max(len(findings), 1)
    return {
        "alpha": alpha,
        "decided": len(decided),
        "expected": alpha * len(decided),
        "cannot_decide_share": open_share,
    }


# The claims this process (a chapter's kernel) glued last: the runner's closing cell reads them to
# glue the chapter's "In short" line (``pipeline.glue_in_short``), which opens the page.
GLUED: list[Claim] = []


def glue_claims(claims: list[Claim]) -> None:
    """Show the chapter's claims and glue them for the scorecard."""
    from IPython.display import Markdown, display
    from myst_nb import glue

    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate claim ids: {ids}")
    GLUED[:] = claims
    display(Markdown(markdown_table(claims)))
    glue("claims", json.dumps([asdict(c) for c in claims]), display=False)
    for c in claims:
        glue(f"{c.id}.verdict", c.verdict, display=False)
        glue(f"{c.id}.measured", c.measured, display=False)


def read_claims(notebook_path: Path | str) -> list[Claim]:
    """The claims glued in an executed notebook (empty list if it glued none)."""
    notebook = json.loads(Path(notebook_path).read_text())
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            if output.get("metadata", {}).get("scrapbook", {}).get("name") == "claims":
                # glue(display=False) stores "application/papermill.record/text/plain"
                text = next(v for k, v in output["data"].items() if k.endswith("text/plain"))
                text = "".join(text) if isinstance(text, list) else text
                return [Claim(**c) for c in json.loads(ast.literal_eval(text))]
    return []


# Every numbered result of Barbero et al. (2025) and each CABLE appendix figure we reproduce: the
# scorecard fails the build unless each is backed by at least one claim whose source names it.
PAPER_ITEMS = (
    *(f"Prop. {n}" for n in ("3.1", "3.2", "5.2")),
    "Def. 5.1", "Thm. 5.3", "Thm. 6.1", "Lemma A.1", "Lemma A.2", "Lemma A.3",
    *(f"Fig. {n}" for n in range(1, 20)),
    *(f"Table {n}" for n in range(1, 6)),
)  # fmt: skip
CABLE_ITEMS = ("CABLE Fig. 10", "CABLE Fig. 12", "CABLE Fig. 13", "CABLE Fig. 15", "CABLE Table 4")

_KINDS = {"prop": "Prop.", "thm": "Thm.", "theorem": "Thm.", "lemma": "Lemma", "def": "Def.",
          "definition": "Def.", "fig": "Fig.", "figure": "Fig.", "table": "Table"}  # fmt: skip
_REFERENCE = re.compile(
    r"\b(Props?|Thms?|Theorems?|Lemmas?|Defs?|Definitions?|Figs?|Figures?|Tables?)\.?\s*"
    r"((?:[A-Z]\.)?\d+(?:\.\d+)?(?:\s*(?:[-–,]|and)\s*(?:[A-Z]\.)?\d+(?:\.\d+)?)*)",
    re.IGNORECASE,
)


def source_items(source: str) -> set[str]:
    """The numbered items a claim's source names, e.g. ``"Barbero et al. 2025, Figs 2, 8-9"`` →
    ``{"Fig. 2", "Fig. 8", "Fig. 9"}``; a source naming CABLE refers to CABLE's figures and
    tables, which are prefixed ``"CABLE "``. A source that names neither Barbero et al. nor CABLE
    (e.g. "Chen et al. 2023 (PI), Table 3") backs none of the book's items."""
    lowered = source.lower()
    if "barbero" not in lowered and "cable" not in lowered:
        return set()
    prefix = "CABLE " if "cable" in lowered else ""
    items = set()
    for kind, numbers in _REFERENCE.findall(source):
        label = _KINDS[kind.lower().removesuffix("s")]
        for part in re.split(r"\s*(?:,|and)\s*", numbers):
            if re.fullmatch(r"\d+\s*[-–]\s*\d+", part):
                low, high = (int(x) for x in re.split(r"\s*[-–]\s*", part))
                items.update(f"{label} {n}" for n in range(low, high + 1))
            elif part:
                items.add(f"{label} {part.strip()}")
    return {prefix + item if item.startswith(("Fig.", "Table")) else item for item in items}


@dataclass(frozen=True)
class ChapterRecord:
    """One executed chapter as the summary pages see it."""

    name: str
    title: str
    claims: list[Claim]
    provenance: dict


def read_chapter_record(notebook_path: Path | str) -> ChapterRecord:
    path = Path(notebook_path)
    notebook = json.loads(path.read_text())
    title = path.stem
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and source.lstrip().startswith("# "):
            title = source.lstrip()[2:].splitlines()[0].strip()
            break
    provenance = notebook.get("metadata", {}).get("ropebook", {})
    return ChapterRecord(path.stem, title, read_claims(path), provenance)


def coverage(records: list[ChapterRecord]) -> dict[str, list[tuple[str, Claim]]]:
    """``item -> [(chapter, claim), ...]`` for every item of PAPER_ITEMS and CABLE_ITEMS."""
    found: dict[str, list[tuple[str, Claim]]] = {i: [] for i in (*PAPER_ITEMS, *CABLE_ITEMS)}
    for record in records:
        for claim in record.claims:
            for item in source_items(claim.source) & found.keys():
                found[item].append((record.name, claim))
    return found
