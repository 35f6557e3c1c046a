"""Typed citations as bibliography links: "Barbero et al. 2025, Prop. 3.2" → a MyST cite role.

Claim and proof records keep their ``source`` as plain text: it is data that the scorecard reads
back and :func:`ropebook.claims.source_items` matches. Where the book renders such a source as
Markdown (the claim tables, the proofs' output; ``nb_render_markdown_format: myst`` parses roles
in outputs), :func:`cite_roles` turns each typed citation into ``{cite:t}`` (or ``{cite:p}`` when
the citation sits in parentheses), so the page links it to ``references.bib`` and shows the year
of the published version. A typed citation without a key raises before anything is rendered.
"""

from __future__ import annotations

import re

# First author's surname as the book types it -> key in references.bib (one work per author here).
KEYS = {
    "Barbero": "barbero2025round",
    "Veisi": "veisi2025cable",
    "Su": "su2024roformer",
    "Press": "press2022alibi",
    "Chi": "chi2022kerple",
    "Li": "li2024fire",
    "Ruoss": "ruoss2023randomized",
    "Haviv": "haviv2022nopos",
    "Kazemnejad": "kazemnejad2023impact",
    "Olsson": "olsson2022induction",
    "Liu": "liu2024scaling",
    "Chen": "chen2023pi",
    "Peng": "peng2024yarn",
    "Ding": "ding2024longrope",
    "Arora": "arora2023zoology",
    "So": "so2021primer",
    "Touvron": "touvron2023llama2",
    "Hong": "hong2024token",
    "Chiang": "chiang2025dimension",
    "Oka": "oka2026bands",
    "Khan": "khan2026fractional",
    "Summers": "summers2021nondeterminism",
    "Kaddour": "kaddour2022lawa",
    "Sanyal": "sanyal2023early",
    "Bergsma": "bergsma2025straight",
    "Ajroldi": "ajroldi2025average",
    "Pitman": "pitman1939note",
}
CABLE_KEY = KEYS["Veisi"]

_TYPED = re.compile(
    r"(?P<open>\()?\b(?P<name>[A-Z][\w'-]*)(?: et al\.?| and [A-Z][\w'-]*),? (?P<year>\d{4})"
    r"(?P<close>\))?"
)
_BARE_CABLE = re.compile(r"\bCABLE\b(?! \()")


def key_for(surname: str) -> str:
    """The bibliography key of the work cited as ``surname et al.``; ``KeyError`` naming it."""
    try:
        return KEYS[surname]
    except KeyError:
        raise KeyError(
            f"no bibliography key for '{surname} et al.': add the work to references.bib and "
            "its first author to ropebook.citations.KEYS"
        ) from None


def cite_roles(text: str) -> str:
    """``text`` with every "Name et al. YYYY" (or "Name and Other YYYY") as a cite role (``{cite:p}`` when parenthesised)
    and a bare "CABLE" followed by its citation."""

    def role(match: re.Match) -> str:
        key = key_for(match["name"])
        if match["open"] and match["close"]:
            return f"{{cite:p}}`{key}`"
        return (match["open"] or "") + f"{{cite:t}}`{key}`" + (match["close"] or "")

    cited = _TYPED.sub(role, text)
    if CABLE_KEY not in cited:
        cited = _BARE_CABLE.sub(f"CABLE {{cite:p}}`{CABLE_KEY}`", cited, count=1)
    return cited
