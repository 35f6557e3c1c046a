# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Scorecard: what held
#
# Every chapter ends by recording its claims: what the literature says, what we measured (with
# an interval over seeds where it is a measurement) and a verdict — *held*, *partly*, *not held*
# or *not testable here*. This page gathers them from the executed chapters of this build; none
# of it is typed in. It also checks that every numbered proposition, theorem, lemma, definition,
# figure and table of Barbero et al. (2025), and each CABLE appendix figure the book reproduces,
# is backed by at least one claim — the build fails otherwise.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu (recorded only: this page reads the other chapters)
executed_dir = ""  # folder of executed chapters (empty: the default executed/)

# %%
from pathlib import Path

import altair as alt

from ropebook import claims, pipeline, plots

plots.setup()
folder = Path(executed_dir) if executed_dir else pipeline.EXECUTED_DIR
chapters = [n for n in pipeline.chapter_names() if n not in pipeline.SUMMARY_CHAPTERS]
missing = [n for n in chapters if not (folder / f"{n}.ipynb").exists()]
assert not missing, f"chapters not executed yet: {missing} (run `python -m ropebook run all`)"
records = [claims.read_chapter_record(folder / f"{n}.ipynb") for n in chapters]
empty = [r.name for r in records if not r.claims]
assert not empty, f"chapters that recorded no claims: {empty}"
print(
    f"{sum(len(r.claims) for r in records)} claims from {len(records)} chapters in {folder.name}/"
)

# %% [markdown]
# ## Every claim
#
# Each row links to the chapter that holds its evidence.

# %%
rows = [
    {
        "claim": c.statement,
        "source": c.source,
        "measured": c.measured + (f" ({c.interval})" if c.interval else ""),
        "seeds": c.seeds or "—",
        "verdict": f"**{c.verdict}**",
        "evidence": f"[{r.title}]({r.name}.ipynb)",
    }
    for r in records
    for c in r.claims
]
plots.table(rows)

# %% [markdown]
# ## Verdicts by chapter

# %%
counts = [
    {"chapter": r.title, "verdict": v, "claims": sum(c.verdict == v for c in r.claims)}
    for r in records
    for v in claims.VERDICTS
]
alt.Chart(alt.InlineData(values=counts), title="Verdicts by chapter").mark_bar().encode(
    y=alt.Y("chapter:N", title=None, sort=[r.title for r in records]),
    x=alt.X("claims:Q", title="number of claims"),
    color=alt.Color(
        "verdict:N",
        scale=alt.Scale(
            domain=list(claims.VERDICTS), range=["#2a9d8f", "#e9c46a", "#e76f51", "#adb5bd"]
        ),
    ),
    tooltip=["chapter:N", "verdict:N", "claims:Q"],
).properties(width=520)

# %% [markdown]
# ## Coverage of the papers
#
# Each numbered item of Barbero et al. (2025) and each CABLE figure, with the claims that test it.

# %%
covered = claims.coverage(records)
coverage_rows = [
    {
        "item": item,
        "claims": len(found),
        "verdicts": ", ".join(sorted({c.verdict for _, c in found})) or "—",
        "where": ", ".join(sorted({f"[{name}]({name}.ipynb)" for name, _ in found})) or "—",
    }
    for item, found in covered.items()
]
plots.table(coverage_rows)

# %%
uncovered = [item for item, found in covered.items() if not found]
claims.glue_claims(
    [
        claims.Claim(
            id="scorecard.coverage",
            source="Barbero et al. 2025 (all numbered items); CABLE appendix figures",
            statement="Every numbered result and figure is tested by some chapter",
            measured=f"{len(covered) - len(uncovered)} of {len(covered)} items backed by a claim",
            verdict="held" if not uncovered else "partly",
        )
    ]
)
assert not uncovered, f"items no chapter tests: {uncovered}"
