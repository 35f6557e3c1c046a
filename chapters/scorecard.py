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
# {glue:md}`in_short`

# %% [markdown]
# Every chapter ends by recording its claims, each of one of three kinds. A **finding** is an
# empirical statement, about a paper's claim or beyond it, that the data could contradict; only
# findings are scored. A **proof** is a symbolic proof executed on its page, and a **check** an
# implementation or construction check that fails only if the code is wrong: both are asserted
# (the build stops if one fails) and listed here apart, with their own counts, never scored.
#
# A finding records what the literature says, what we measured (with an interval over seeds where
# it is a measurement), what the verdict rests on (models, seeds, tokens and, for comparisons,
# the smallest effect the run could detect) and a verdict: *held*, *not held*, *partly* (a claim
# of several parts, some of which hold), *bounded* (a decided null: the interval lies inside a
# margin fixed before the data, so any effect is smaller than it), *cannot decide* (the interval
# contains the claimed threshold and reaches past the margin, so it only bounds the effect),
# *uninformative here* (the regime cannot tell the claim by construction: no verdict on the
# paper, tallied apart) or *not testable here*; the [methods chapter](methods.ipynb) sets out how
# seeds, noise and intervals decide them ({ref}`methods-deciding`). This page gathers them from
# the executed chapters of this build; none of it is typed in. It also checks that every
# numbered proposition, theorem, lemma, definition, figure and table of
# {cite:t}`barbero2025round`, and each CABLE appendix figure {cite:p}`veisi2025cable` the book
# reproduces, is backed by at least one claim — the build fails otherwise.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu (recorded only: this page reads the other chapters)
executed_dir = ""  # folder of executed chapters (empty: the default executed/)

# %% tags=["hide-input"]
from pathlib import Path

from myst_nb import glue

from ropebook import buildrecord, claims, pipeline, plots, seedplan, verdict_record
from ropebook.present import build as show_build
from ropebook.present import decide

plots.setup()
folder = Path(executed_dir) if executed_dir else pipeline.EXECUTED_DIR
chapters = [n for n in pipeline.chapter_names() if n not in pipeline.SUMMARY_CHAPTERS]
missing = [n for n in chapters if not (folder / f"{n}.ipynb").exists()]
assert not missing, f"chapters not executed yet: {missing} (run `python -m ropebook run all`)"
records = [claims.read_chapter_record(folder / f"{n}.ipynb") for n in chapters]
empty = [r.name for r in records if not r.claims]
assert not empty, f"chapters that recorded no claims: {empty}"
print(claims.tally_text(c for r in records for c in r.claims), f"from {folder.name}/")

CLAIMS = claims.ClaimSet(
    claims.ClaimSpec(
        "scorecard.coverage",
        "Barbero et al. 2025 (all numbered items); CABLE appendix figures",
        "Every numbered result and figure is tested by some chapter",
        rule=claims.graded,  # every item backed: held; some: partly (a failed check)
        kind=claims.CHECKED,
    )
)

# %% tags=["remove-input"]
build_records = show_build.load(folder / buildrecord.RECORDS, buildrecord.current_part())
glue("scorecard.machine", show_build.machine_text(build_records), display=False)

# %% [markdown]
# ## Every claim
#
# Chapter by chapter, in the book's order: the chapter's name links to the page that holds the
# evidence, followed by its tally (findings by verdict; proofs and checks apart). Each row gives
# the claim with its source in the literature, what we measured (with the interval over seeds
# where it is a measurement), how many seeds went into it, and the verdict (for a proof or a
# check, its kind), findings first. The claims rest on those seeds and on the machine of this
# build: {glue:text}`scorecard.machine` (each chapter's provenance line names the device it ran
# on; the results files a chapter shows name their own).

# %%
plots.claims_by_chapter(records)

# %% [markdown]
# ## Verdicts by chapter
#
# The findings' verdicts counted per chapter: green *held*, yellow *partly*, light green
# *bounded*, red *not held*, light blue *cannot decide*, lilac *uninformative here*, grey *not
# testable here*. Proofs and checks are not drawn: they are not evidence about the papers.

# %%
plots.verdict_chart(records)

# %% [markdown]
# ## What would decide the rest
#
# A finding left at *cannot decide*, *uninformative here* or *not testable here* must say, in its
# record, what would decide it: how many seeds would detect the difference it measured (paired
# t-test, 95 %, 80 % power, at the s.d. it measured or, with one seed, the s.d. the book measured
# for that kind of comparison), the regime in which the test could fail, or which models, tokens
# or experiment it lacks. A chapter cannot publish an open finding without it (`claims.ClaimSet`
# refuses). How the build chooses its seeds within its budget, and what they resolve, is in
# {ref}`methods-power`.

# %% tags=["remove-input"]
for name, value in decide.undecided_values(records).items():
    glue(f"scorecard.open.{name}", value, display=False)
every_claim = [c for r in records for c in r.claims]
counts = claims.tally(every_claim)
family = claims.expected_false_verdicts(every_claim)
glue("scorecard.proved", counts[claims.PROVED], display=False)
glue("scorecard.checked", counts[claims.CHECKED], display=False)
glue("scorecard.exploratory", counts["exploratory"], display=False)
glue("scorecard.decided", family["decided"], display=False)
glue("scorecard.expected_false", f"{family['expected']:.1f}", display=False)
glue("scorecard.alpha", f"{family['alpha']:g}", display=False)
glue("scorecard.open_share", f"{100 * family['cannot_decide_share']:.0f} %", display=False)
planned = seedplan.choose(seedplan.load_plan())
glue("scorecard.plan_power", f"{seedplan.load_plan()['power']:.0%}", display=False)
glue("scorecard.planned", len(planned), display=False)
glue("scorecard.planned_open", f"{seedplan.expected_open(planned):.1f}", display=False)

# %% [markdown]
# Of the {glue:text}`scorecard.open.findings` findings, {glue:text}`scorecard.open.undecided` are
# open — {glue:text}`scorecard.open.cannot_decide` *cannot decide*
# ({glue:text}`scorecard.open_share` of the findings),
# {glue:text}`scorecard.open.uninformative` *uninformative here* and
# {glue:text}`scorecard.open.not_testable` *not testable here* — and
# {glue:text}`scorecard.open.with_plan` of them say what would decide them. Beside them stand
# {glue:text}`scorecard.proved` proofs and {glue:text}`scorecard.checked` checks, all of which
# held (a failed one stops the build).
#
# **What the plan expects.** The seed plan ({ref}`methods-power`) buys seeds for
# {glue:text}`scorecard.planned` comparisons, each for {glue:text}`scorecard.plan_power` power
# at its target effect: were every target the true effect, about
# {glue:text}`scorecard.planned_open` of them would be left open by a build on average. A count
# of open verdicts is that expectation, not a bound every build meets; this build's count is the
# one above.
#
# **The family's error.** Each of the {glue:text}`scorecard.decided` decided confirmatory findings
# rests on a test at level {glue:text}`scorecard.alpha` (a 95 % interval, or p < 0.05), each
# judged on its own; the {glue:text}`scorecard.exploratory` *exploratory* ones, decided on seeds
# bought after seeing their effect, are shown but left out of this count (looking twice raises
# their error above that level). Were every one of their true effects exactly at its threshold — the worst case for each —
# about {glue:text}`scorecard.expected_false` of them would be decided the wrong way on average;
# fewer where effects lie far from their thresholds. Read any single verdict with that in mind.

# %%
open_rows = decide.undecided_rows(records)
plots.table(open_rows) if open_rows else print("every claim of this build is decided")

# %% [markdown]
# (scorecard-changes)=
# ## What changed since the kept build
#
# Each build's verdicts are kept claim by claim (`python -m ropebook verdicts --keep` writes
# `data/results/verdicts-<profile>.json` from the executed chapters). Against the kept record of
# this build's profile, {glue:text}`scorecard.kept`, the table lists every claim whose verdict
# or kind changed, and the claims that appeared or went ({glue:text}`scorecard.changed` in all):
# a verdict that moved is a result to explain (a new rule, more seeds, a kept study now deciding,
# or another machine), never one to pass over.

# %%
kept_verdicts = verdict_record.load(verdict_record.profile_of(records) or profile)
changed = [] if kept_verdicts is None else verdict_record.changes(
    kept_verdicts["verdicts"], verdict_record.verdicts(records), chapters)  # fmt: skip
plots.table([c.row() for c in changed]) if changed else print("no verdict changed")

# %% tags=["remove-input"]
glue("scorecard.kept", "none (no record of this profile is kept)" if kept_verdicts is None else
     verdict_record.kept_label(kept_verdicts), display=False)  # fmt: skip
glue("scorecard.changed", len(changed), display=False)

# %% [markdown]
# ## Coverage of the papers
#
# Each numbered item of {cite:t}`barbero2025round` and each CABLE figure, with the claims that test it:
# a claim tests an item when its source names it (`claims.source_items` reads "Props 3.1-3.2" or
# "Figs 2, 8-9"). The page fails to build if any item is left without a claim.

# %%
covered = claims.coverage(records)
plots.coverage_table(covered)

# %% tags=["remove-input"]
uncovered = [item for item, found in covered.items() if not found]
CLAIMS.record(
    "scorecard.coverage",
    [bool(found) for found in covered.values()],
    f"{len(covered) - len(uncovered)} of {len(covered)} items backed by a claim",
)
CLAIMS.glue()
assert not uncovered, f"items no chapter tests: {uncovered}"
