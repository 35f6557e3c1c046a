"""Tables and charts of the summary pages (scorecard, landing page), on hand-made claim records."""

import json

from ropebook import claims, plots
from ropebook.claims import ChapterRecord, Claim


def claim(n: int, verdict: str = "held", **extra) -> Claim:
    fields = {"measured": f"measured {n}", **extra}
    return Claim(
        id=f"c.{n}", source=f"Barbero et al. 2025, Fig. {n}", statement=f"claim {n}",
        verdict=verdict, **fields,
    )  # fmt: skip


RECORDS = [
    ChapterRecord(
        "alpha",
        "Alpha: a chapter with a title long enough to wrap",
        [claim(1), claim(2, "partly", interval="0.1–0.3", seeds=3), claim(3, "not held")],
        {"git_commit": "abc", "profile": "smoke", "jax_devices": ["cpu:0"], "seconds": 90},
    ),
    ChapterRecord(
        "beta",
        "Beta",
        [
            claim(4),
            claim(5, "not testable here"),
            claim(6),
            claim(7, measured="a | b", kind="checked"),
        ],
        {"git_commit": "abc", "profile": "smoke", "jax_devices": ["cpu:0"], "seconds": 30},
    ),
]


def test_claims_by_chapter_one_four_column_table_per_chapter():
    text = plots.claims_by_chapter(RECORDS).data
    alpha, alpha_table, beta, beta_table = text.split("\n\n")
    assert alpha == "**[Alpha: a chapter with a title long enough to wrap](alpha.ipynb)**: " + (
        "3 findings (1 held, 1 partly, 1 not held)"
    )  # proofs and checks are counted apart, never scored
    assert beta == "**[Beta](beta.ipynb)**: 3 findings (2 held, 1 not testable here); 1 checked"
    lines = alpha_table.splitlines()
    assert lines[0] == "| claim (source) | measured | evidence | verdict |"
    cite = "{cite:t}`barbero2025round`"  # the typed source, linked to references.bib
    assert lines[2] == f"| claim 1 — *{cite}, Fig. 1* | measured 1 | — | **held** |"
    assert lines[3] == (
        f"| claim 2 — *{cite}, Fig. 2* | measured 2 (0.1–0.3) | 3 seeds | **partly** |"
    )
    assert (
        beta_table.splitlines()[-1] == f"| claim 7 — *{cite}, Fig. 7* | a \\| b | — | **checked** |"
    )


def test_wrap_label_cuts_at_spaces_within_width():
    assert plots.wrap_label("A zoo of positional encodings: RoPE, ALiBi, Kerple, FIRE") == [
        "A zoo of positional",
        "encodings: RoPE, ALiBi,",
        "Kerple, FIRE",
    ]
    assert plots.wrap_label("short") == ["short"]
    assert plots.wrap_label("tiny overlongwordthatcannotbreak x", width=6) == [
        "tiny",
        "overlongwordthatcannotbreak",
        "x",
    ]
    assert plots.wrap_label("") == [""]


def test_wrapped_labels_is_a_lookup_with_fallback():
    expr = plots.wrapped_labels(["a b c", "d"], width=3)
    table, fallback = expr.split("[datum.label] || ")
    assert json.loads(table) == {"a b c": ["a b", "c"], "d": ["d"]}
    assert fallback == "datum.label"


def test_verdict_chart_counts_every_verdict_of_every_chapter():
    spec = plots.verdict_chart(RECORDS).to_dict()
    assert spec["title"] == "Verdicts by chapter" and spec["width"] == 360
    (values,) = spec["datasets"].values()
    counts = {(v["chapter"], v["verdict"]): v["findings"] for v in values}
    assert len(counts) == 2 * len(claims.VERDICTS) and sum(counts.values()) == 6  # not the check
    assert counts["Beta", "held"] == 2 and counts["Beta", "partly"] == 0
    assert counts["Alpha: a chapter with a title long enough to wrap", "not held"] == 1
    # the longest title wraps onto two lines: bands are tall enough for both
    assert spec["height"] == {"step": 34}
    assert spec["encoding"]["y"]["sort"] == [r.title for r in RECORDS]


def test_coverage_table_rows():
    covered = {"Fig. 1": [("alpha", claim(1)), ("beta", claim(1, "partly"))], "Fig. 9": []}
    lines = plots.coverage_table(covered).data.splitlines()
    assert lines[0] == "| item | claims | verdicts | where |"
    assert lines[2] == "| Fig. 1 | 2 | held, partly | [alpha](alpha.ipynb), [beta](beta.ipynb) |"
    assert lines[3] == "| Fig. 9 | 0 | — | — |"


def test_build_provenance_and_line():
    build = plots.build_provenance(RECORDS)
    assert build == {
        "commits": ["abc"], "profiles": ["smoke"], "devices": ["cpu:0"],
        "seconds": 120, "chapters": 2,
    }  # fmt: skip
    assert plots.build_line(build).data == (
        "Built from commit `abc` with profile `smoke` on cpu:0; 2 chapters took 2.0 minutes of "
        "execution (models come from the zoo's cache; training time is reported in each chapter)."
    )
