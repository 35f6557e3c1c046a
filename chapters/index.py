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
# # Round and round: why RoPE works
#
# Each line, from the chapters' claim records: question, answer, **verdict**
# ([scorecard](scorecard.ipynb)), measurement, *basis*.

# %% tags=["parameters", "remove-cell"]
profile = "cpu"  # smoke | cpu | gpu (recorded only: this page reads the other chapters)
executed_dir = ""  # folder of executed chapters (empty: the default executed/)

# %% tags=["remove-input"]
from pathlib import Path

from IPython.display import Markdown
from myst_nb import glue

from ropebook import claims, findings, pipeline, plots
from ropebook.present import studies

folder = Path(executed_dir) if executed_dir else pipeline.EXECUTED_DIR
names = [n for n in pipeline.chapter_names() if n != "index"]
records = [
    claims.read_chapter_record(folder / f"{n}.ipynb")
    for n in names
    if (folder / f"{n}.ipynb").exists()
]
Markdown(findings.findings_page(records))

# %% [markdown]
# ## What the book is about
#
# Rotary position embeddings (RoPE) are the positional encoding of most open language models.
# The common story says they help because attention *decays* with distance. In *Round and Round
# We Go! What makes Rotary Positional Encodings useful?*, {cite:t}`barbero2025round` argue
# otherwise: models use RoPE's **high frequencies** to build precise positional heads, and its
# **low frequencies** as semantic channels that are not robust over long contexts — which
# motivates *p*-RoPE, which drops the lowest frequencies. The CABLE paper
# {cite:p}`veisi2025cable` draws the attention maps and biases of RoPE, ALiBi, Kerple and FIRE
# side by side.
#
# This book re-derives each claim symbolically (SymPy {cite:p}`sympy`, executed on the page),
# measures it on small transformers we train ourselves in JAX {cite:p}`jax` with Optax
# {cite:p}`optax`, and says plainly whether it held; every page is an executed notebook. The
# arrays are NumPy {cite:p}`numpy` and SciPy {cite:p}`scipy`, the figures Altair
# {cite:p}`altair` on Vega-Lite {cite:p}`vegalite` (with Matplotlib {cite:p}`matplotlib` for a
# few), the tokenizer Hugging Face Tokenizers {cite:p}`tokenizers`, the weights safetensors
# {cite:p}`safetensors`; the tests hold our code to transformers {cite:p}`transformers` on
# PyTorch {cite:p}`pytorch`. Chapters are Jupytext {cite:p}`jupytext` scripts run by papermill
# {cite:p}`papermill` into the pages of Jupyter Book {cite:p}`jupyterbook`, whose
# [references](../references.md) come from sphinxcontrib-bibtex {cite:p}`sphinxcontribbibtex`
# and whose formulas MathJax {cite:p}`mathjax` draws. The versions are listed there. How seeds,
# noise and intervals decide a verdict is set out once, in the [methods](methods.ipynb)
# appendix, which the chapters link to.
#
# ## Where each number comes from
#
# Not every number in the book was computed when its page was built. There are four sources,
# and each page says which one a number comes from:
#
# - **This build's runs.** Most numbers: the chapters train (or read from the zoo's cache) the
#   models of this build's profile and measure them as the page executes; each chapter's
#   provenance line names its commit, device and time (see *This build* below).
# - **Kept studies.** Runs too costly for every build, trained once and kept in `data/results/`
#   with the command that reproduces them; a page that shows one names it beside its own
#   result, never as if measured in its run. The files kept:

# %% tags=["remove-input"]
Markdown(studies.kept_table())

# %% [markdown]
# - **Figures read by eye.** The colour-bar ticks of CABLE's figures {cite:p}`veisi2025cable`,
#   read off the published figures (`biases.CABLE_TICKS`, in the chapter on the
#   [zoo of encodings](pe_zoo.ipynb)): they bound what the figures show rather than measure it.
# - **Tables quoted from papers.** The papers' own numbers, shown beside ours and never mixed
#   with them: the perplexities of Table 2 of {cite:t}`barbero2025round`
#   (`ablation.PAPER_TABLE2`), the positional heads of its Tables 3–5, and the tables of the
#   context-extension papers that the chapter on [stretching RoPE](rope_scaling.ipynb) compares
#   with.

# %% [markdown]
# ## Re-running a chapter
#
# Each chapter is a plain Python file, `chapters/<name>.py`, in jupytext's percent format; its
# cell tagged `parameters` lists what can be changed. Every chapter page opens with a **Rerun this
# chapter** box generated from that cell: each parameter with its default and the values it
# accepts, the command that produced the page, and links to download the executed notebook and
# its `.py` source. To re-run one chapter with other values and rebuild the site:
#
# ```bash
# make run CHAPTER=decay PARAMS="seed=1"        # CPU, default profile
# make run CHAPTER=p_rope PROFILE=gpu           # GPU-sized models (JAX picks the GPU)
# make html
# ```
#
# `make book` builds everything from a fresh clone; `make book PROFILE=gpu` does so with JAX's
# CUDA build and GPT-2-Small-sized models. Open a chapter's `.py` in Jupyter to edit it as a
# notebook (`jupytext.toml` keeps the paired `.ipynb` in sync).
#
# ## This build

# %% tags=["remove-input"]
build = plots.build_provenance(records)
# For prose that cites this build: {glue:text}`book.minutes`, {glue:text}`book.commits`.
glue("book.minutes", f"{build['seconds'] / 60:.1f}", display=False)
glue("book.commits", ", ".join(build["commits"]), display=False)
plots.build_line(build)
