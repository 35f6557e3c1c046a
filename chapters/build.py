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
# # How this book was built
#
# {glue:md}`in_short`

# %% [markdown]
# This page is written by the build that made this site. Each stage of `make book` records what
# it measured as it runs (`ropebook stage`, `ropebook machine`, the zoo and the chapter runner
# write JSON files into `executed/records/`), and this page, run last, shows those records:
# nothing on it is typed in. A stage that this build did not run, because make found its result
# up to date, shows the earlier run that produced what this build used, labelled so; so does a
# chapter the runner skipped as up to date.

# %% tags=["parameters", "remove-cell"]
profile = "cpu"  # smoke | cpu | gpu (recorded only: this page reads the build's records)
records_dir = ""  # folder of the build's records (empty: the default executed/records)

# %% tags=["remove-input"]
import os
from pathlib import Path

from IPython.display import Markdown, display
from myst_nb import glue

from ropebook import buildrecord, claims, plots, seedplan
from ropebook.present import build as show

records = show.load(
    Path(records_dir) if records_dir else None, os.environ.get(buildrecord.BUILD_ENV)
)


def table_or_missing(rows: list[dict], name: str, what: str):
    return plots.table(rows) if rows else Markdown(records.missing(name, what))


# %% [markdown]
# ## This machine
#
# The CPU, its cores and widest vector instructions, the devices JAX used, and the speed of one
# training step of the lesson model (RoPE in the lesson regime, at the profile the table names)
# timed by `ropebook machine` during the build, with the attention path the model took here: the
# fused kernel or XLA's own, as `ROPEBOOK_ATTENTION=auto` measured it.

# %% tags=["remove-input"]
table_or_missing(show.machine_rows(records), "machine", "this machine (`ropebook machine`)")

# %% [markdown]
# ## Stages

# %% tags=["remove-input"]
display(Markdown(show.stages_text(records)))  # says so when there are none
if stage_rows := show.stage_rows(records):
    display(plots.table(stage_rows))

# %% [markdown]
# ## The zoo by regime
#
# Models trained by this build and found in the cache, per training regime, with the training
# time measured beside the time estimated before training began. Before training, the build
# pulls the zoo published for this checkout's models where one is reachable (`ropebook zoo
# --pull`); the models it downloaded count as cached, and each chapter's provenance names them.

# %% tags=["remove-input"]
display(Markdown(show.pull_text(records)))
table_or_missing(show.zoo_rows(records), "zoo", "the zoo (`ropebook zoo`)")

# %% [markdown]
# ## Chapters
#
# Each chapter's execution time as the runner measured it (kernel start included). A chapter
# whose source, library and parameters had not changed was not run again: its row says so and
# shows the time of the run that produced its page.

# %% tags=["remove-input"]
table_or_missing(show.chapter_rows(records), "chapters", "the chapters (`ropebook run all`)")

# %% [markdown]
# ## Within the budget?
#
# The book's first cpu build is budgeted at {glue:text}`build.budget_minutes` minutes on the
# reference CPU, whose lesson benchmark trains {glue:text}`build.reference_speed`; each
# stage's time here counts at this machine's benchmark against that speed. Only a first cpu build
# decides it (every stage run by this build, the zoo trained from an empty cache, every chapter
# run); a `make book` stopped part way and run again on the same clone and cache resumes the same
# build, every attempt of each stage counted. Any other build shows its stages and says why it
# cannot.

# %% tags=["remove-input"]
spent = show.budget(records, profile)
glue("build.budget_minutes", f"{spent.budget_minutes:.0f}", display=False)
glue("build.reference_speed", seedplan.reference_speed_text(seedplan.load_plan()), display=False)
measured, to_decide = show.budget_text(spent)
CLAIMS = claims.ClaimSet(
    claims.ClaimSpec(
        "build.budget",
        "the book's build budget (`data/seed_plan.json`)",
        f"A first cpu build takes at most {spent.budget_minutes:.0f} reference minutes",
        rule=claims.given,
    )
)
basis = show.machine_text(records).rstrip(".")  # the claim table adds its own full stop
CLAIMS.record("build.budget", spent.verdict, measured, basis=basis, to_decide=to_decide)
table_or_missing(spent.rows, "stage-setup", "any stage (`make book`)")

# %% tags=["remove-input"]
CLAIMS.glue()

# %% [markdown]
# ## The site

# %% tags=["remove-input"]
Markdown(show.site_text(records))

# %% [markdown]
# ## Versions

# %% tags=["remove-input"]
table_or_missing(show.version_rows(records), "machine", "the versions (`ropebook machine`)")
