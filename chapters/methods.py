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
# # Methods: noise, seeds and what our data can decide
#
# {glue:md}`in_short`

# %% [markdown]
# *This chapter is the book's appendix on methods: it stands after the chapters, which link here
# for how a verdict is decided. It uses their models, and one result: the headline's verdict,
# read from the headline chapter's record, never decided a second time.*
#
# Most claims in this book compare two encodings trained alike: Table 2 of
# {cite:t}`barbero2025round` in the [p-RoPE chapter](p_rope.ipynb), the recall contrasts in the
# [recall chapter](recall.ipynb). Each ends in a verdict — *held*, *not held* or *cannot
# decide* — and every verdict rests on the same machinery: models trained on several seeds,
# differences paired seed by seed, an interval over seeds, and a seed count chosen in advance
# from the noise the book measured. This chapter sets that machinery out once, with the book's
# headline comparison as its running example: 0.75-RoPE against RoPE in the *matched* regime,
# whose slowest plane turns over our context as Gemma 7B's does over 8k tokens (the p-RoPE
# chapter sets out the regimes).
#
# 1. what a seed fixes, and what pairing two encodings on a seed buys;
# 2. how a comparison is decided, and what "cannot decide" promises;
# 3. where the noise comes from: does it shrink with training, and is it training noise or
#    evaluation noise;
# 4. how many seeds the build buys, against how many the targets need.
#
# Whether a change of recipe (weight averaging, the learning rate to zero) would cut the noise
# is the appendix's [second part](methods_recipe.ipynb).

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu
confidence = 0.95  # in (0, 1): level of every interval over seeds
noise_windows = 512  # in [2, inf): held-out windows per model splitting training/evaluation noise

# %% tags=["hide-input"]
import numpy as np
from IPython.display import display
from myst_nb import glue

from ropebook import claims, data, pipeline, plots, recipes, seedplan, train, zoo
from ropebook.analysis import ablation
from ropebook.present import ablation as show
from ropebook.present import decide
from ropebook.present import noise as show_noise
from ropebook.present import recipes as show_recipes
from ropebook.present import seedplan as show_plan
from ropebook.stats import anatomy, noise, power

plots.setup()
if profile == "smoke":
    noise_windows = min(noise_windows, 16)
NAMES = {"p-rope-0.75": "0.75-RoPE", "p-rope-0.25": "0.25-RoPE", "rope": "RoPE", "nope": "NoPE"}
HEADLINE = ("p-rope-0.75", "rope")
PAIRING_FACTOR = 2.0  # a pairing gain below it "buys little": fewer than half the seeds saved
matched_config = zoo.configs("rope", profile=profile, regime="matched")[0]
MARGIN = recipes.MARGIN  # % of perplexity, fixed before the data (ropebook.recipes says why)
glue("methods.margin", f"{MARGIN:g} %", display=False)
paper_headline_gap = show.paper_gap_percent(ablation.PAPER_TABLE2["Wiki"], *HEADLINE)
glue("methods.paper_headline_gap", f"{paper_headline_gap:+.2f} %", display=False)
glue("methods.profile", profile, display=False)
glue("methods.confidence", confidence, display=False)
glue("methods.tail.evals", train.TAIL_EVALS, display=False)
glue("methods.tail.share", train.TAIL_SHARE, display=False)

# %% [markdown]
# This run uses the *{glue:text}`methods.profile`* profile. The claims this chapter tests are
# about the book's own resolution (expand the cell); the table at the end gives what we measured.

# %% tags=["hide-input"]
RESOLUTION = "Barbero et al. 2025, Table 2 (resolution of our runs)"
CLAIMS = claims.ClaimSet(
    claims.ClaimSpec(
        "methods.flagship_noise", f"{RESOLUTION}: flagship runs",
        "At the flagship budget the paired seed noise of 0.75-RoPE vs RoPE is at most 1 % of "
        "perplexity (its last step)",
        claims.given,  # show_noise.sd_target: the s.d.'s chi-square interval against 1 %
    ),
    claims.ClaimSpec(
        "methods.evaluation_noise", f"{RESOLUTION}: matched runs",
        "The headline comparison's noise is training noise: its evaluation variance is at most a "
        "tenth of its training variance, so more seeds, not more held-out tokens, tighten it",
        claims.given,  # NoiseSplit.negligible; one seed: cannot decide
    ),
    claims.ClaimSpec(
        "methods.pairing", "Summers and Dinneen 2021: matched runs",
        f"Pairing two encodings on a seed buys little: it cuts the seeds a comparison needs by "
        f"less than a factor {PAIRING_FACTOR:g} (pairing gain below {PAIRING_FACTOR:g}, i.e. the "
        f"two arms correlate across seeds by less than about r = {1 - 1 / PAIRING_FACTOR:g})",
        claims.given,  # the pairing gain's interval against PAIRING_FACTOR, below
    ),
)  # fmt: skip

# %% [markdown]
# (methods-seeds)=
# ## What a seed is
#
# A *seed* is one integer that fixes everything random in a training run: the initial weights and
# the order of the batches. The zoo trains every encoding of a comparison on the same seeds, and
# none of the encodings we compare has parameters of its own, so on a given seed two encodings
# start from the same weights and see the same batches: they differ in the encoding alone. A
# seed's *paired difference* — the difference of the two models' validation losses on that seed,
# in % of perplexity — then cancels whatever noise the two runs share. How much that is shows in
# the matched runs of the headline pair, seed by seed (validation loss, nats):

# %%
matched = ablation.load_runs(list(NAMES), ["shakespeare"], profile=profile, regime="matched")
arms = ablation.shared_runs(*(matched[name, "shakespeare"] for name in HEADLINE))
losses = np.log([[m.val_ppl for m in runs] for runs in arms])  # (arm, seed)
plots.table(
    [
        {
            "seed": m.seed,
            NAMES[HEADLINE[0]]: a,
            NAMES[HEADLINE[1]]: b,
            "paired Δ (%)": 100 * (a - b),
        }
        for m, a, b in zip(arms[0], *losses, strict=True)
    ],
    digits=4,
)

# %% [markdown]
# Where that noise lives decides which lever can shrink it, so the book takes it apart
# (`ropebook.stats.anatomy`, in % of perplexity, each part with its
# {glue:text}`methods.confidence:.0%` interval and the method that made it):
#
# - **within-run jitter**: how far one run's validation loss moves over its last evaluations
#   (training records the loss at {glue:text}`methods.tail.evals` steps spread over the last
#   {glue:text}`methods.tail.share:.0%` of its steps, always on the same held-out windows), once the schedule's common descent and each run's own level are
#   taken out. Jitter is what averaging the last weights or a learning rate decayed to zero can
#   remove;
# - each arm's **between-seed s.d.** of its final loss;
# - the **correlation** of the two arms across seeds and the **pairing gain**
#   $(\sigma_a^2 + \sigma_b^2) / \operatorname{var}(a - b)$, the factor by which pairing cuts the
#   seeds a comparison needs: the variance of a difference is
#   $\sigma_a^2 + \sigma_b^2 - 2r\sigma_a\sigma_b$, so pairing pays only as far as the arms move
#   together;
# - the **paired s.d.** of the final difference, what the seed counts below are chosen from.

# %%
gpu_matched = recipes.load(recipes.GPU_FILES["matched"])  # the same pair on many more seeds
gpu_anatomy = anatomy.anatomy(*recipes.tails(gpu_matched, "today", gpu_matched["seeds"]),
                              confidence=confidence)  # fmt: skip
anatomy_result, anatomy_missing = show_noise.measure_anatomy(*arms, confidence)
for result, missing in ((gpu_anatomy, ""), (anatomy_result, anatomy_missing)):  # study, build
    display(plots.table(show_noise.anatomy_rows(
        result, missing, (NAMES[HEADLINE[0]], NAMES[HEADLINE[1]]), confidence)))  # fmt: skip

# %% tags=["remove-input"]
gain = None if anatomy_result is None else anatomy_result.pairing_gain
measurable = gain is not None and np.isfinite([gain.low, gain.high]).all()
# The strongest evidence decides: the kept GPU study trained this pair on many more seeds.
gpu_matched_specs = recipes.spec_differences(gpu_matched, profile)
gpu_a, gpu_b = (100 * x for x in recipes.losses(gpu_matched, "today", gpu_matched["seeds"]))
gpu_gain = anatomy.pairing_gain_estimate(gpu_a, gpu_b, confidence)
gpu_correlation = anatomy.correlation_estimate(gpu_a, gpu_b, confidence)
CLAIMS.record(
    "methods.pairing",
    claims.verdict_from_interval(gpu_gain.low, gpu_gain.high, threshold=PAIRING_FACTOR,
                                 above=False),
    f"pairing gain {gpu_gain} (bootstrap over the kept GPU study's seeds), correlation "
    f"{gpu_correlation}; this build: "
    + (f"gain {gain}, correlation {anatomy_result.correlation}" if measurable
       else f"not measured ({anatomy_missing})"),
    seeds=len(gpu_a),
    basis=f"kept study on {show_recipes.study_label(gpu_matched)}, "
    f"{show_recipes.spec_text(gpu_matched_specs)}; this build: {len(arms[0])} paired seeds",
    to_decide=f"more paired seeds of the matched pair ({len(gpu_a)} in the GPU study): the "
    "bootstrap interval narrows as seeds are added, until it leaves "
    f"{PAIRING_FACTOR:g} (OUT=data/results SEEDS=N bash tools/gpu_headline.sh matched)",
)  # fmt: skip
for name, value in {
    "seeds": len(arms[0]),
    "seed_list": ", ".join(str(m.seed) for m in arms[0]),
    "missing": anatomy_missing or "— (every part measured)",
    "factor": f"{PAIRING_FACTOR:g}",
    "gpu_gain": str(gpu_gain),
    "gpu_seeds": len(gpu_a),
    "here_paired_sd": show_noise.anatomy_values(anatomy_result)["paired_sd"],
    **show_noise.anatomy_values(gpu_anatomy),
}.items():
    glue(f"methods.pairing.{name}", value, display=False)

# %% [markdown]
# The first table takes apart the {glue:text}`methods.pairing.gpu_seeds` paired seeds of the kept
# GPU study (the same pair and spec, {ref}`p-rope-gpu-headline`), the second this build's
# {glue:text}`methods.pairing.seeds` ({glue:text}`methods.pairing.seed_list`). On the study, a
# run's loss jitters by {glue:text}`methods.pairing.jitter` over its last
# {glue:text}`methods.pairing.evals` evaluations, while 0.75-RoPE's final loss varies from seed to
# seed by {glue:text}`methods.pairing.seed_sd_a` and RoPE's by {glue:text}`methods.pairing.seed_sd_b`
# (jitter variance over the mean between-seed variance: {glue:text}`methods.pairing.jitter_share`;
# near 1 the seeds differ mostly by where the last iterate happens to be, near 0 the runs end
# apart). The two arms correlate across seeds with r = {glue:text}`methods.pairing.correlation`,
# a pairing gain of {glue:text}`methods.pairing.pairing_gain`, and their paired difference has an
# s.d. of {glue:text}`methods.pairing.paired_sd` (this build's seeds:
# {glue:text}`methods.pairing.here_paired_sd`). {cite:t}`summers2021nondeterminism` found that
# any one-bit change to a run brings nearly the full seed-to-seed variance, which would leave
# pairing little to cancel. Whether the gain stays below {glue:text}`methods.pairing.factor` is
# decided on the study's seeds: a gain of {glue:text}`methods.pairing.gpu_gain`, so the claim is
# **{glue:text}`methods.pairing.verdict`**. Not measured on this build's seeds:
# {glue:text}`methods.pairing.missing`.

# %% [markdown]
# How many seeds a model gets depends on the profile a build runs, and the seed plan raises a
# few comparisons beyond it ({ref}`methods-power`); a profile with a single seed decides no
# comparison (each stays *cannot decide*). What each profile trains (layers × heads × head dimension,
# model width, context, training tokens per model, seeds per Table 2 model):

# %% tags=["hide-input"]
plots.table(show.profile_rows(profile))

# %% [markdown]
# (methods-deciding)=
# ## How a comparison is decided
#
# For $n$ paired seeds with differences $d_1, \dots, d_n$ the book forms the Student-t interval
# of their mean at the `confidence` level of the chapter's parameters. A claim that one encoding
# has the lower perplexity is
#
# - **held** when the interval excludes zero on the claimed side;
# - **not held** when it excludes zero on the other side;
# - **bounded** when it contains zero but lies within ±{glue:text}`methods.margin` of
#   perplexity, a margin fixed before the data (`ropebook.recipes.MARGIN`: the unit this book
#   reads perplexity differences in, and the paper's own headline gap on Wiki,
#   {glue:text}`methods.paper_headline_gap`, rounded up; {ref}`the headline's margin <p-rope-headline-margin>`): a
#   decided null, any effect smaller than the margin;
# - **cannot decide** when it contains zero and reaches past the margin: the run then only
#   *bounds* the effect ($|\Delta|$ is below the interval's larger end), and the record says how
#   many seeds would decide it; so too with a single seed, which measured the claim but gives no
#   interval;
# - **uninformative here** when the regime cannot tell the claim by construction, whatever the
#   interval: 0.75-RoPE against RoPE where the planes it frees turn less than a quarter turn over
#   the span tested ({ref}`p-rope-table2`); such a test is no verdict on the paper, is tallied
#   apart and names the regime that would decide it;
# - **not testable here** where nothing in this build measures the claim (no checkpoint, no
#   model of the kind it is about).
#
# Only *findings* — claims the data could contradict — get these verdicts. Symbolic proofs and
# implementation or construction checks are asserted (a failed one stops the build) and listed on
# the scorecard apart, never scored. Seeds a chapter buys after seeing a comparison's effect make
# its reading *exploratory*: shown with its verdict, left out of the scorecard's family count.
#
# A claim that a noise level meets a target (a paired s.d. at most 1 % of perplexity, evaluation
# variance at most a tenth of training variance) is judged the same way on the *interval* of
# that s.d. or share (chi-square over seeds), never on its point estimate: *held* when the whole
# interval meets the target, *not held* when none of it does, *cannot decide* between. A target
# is a one-sided bound, not a null, so these claims take no margin. Where a study kept in the
# repository trained the same models on more seeds than a build (the GPU studies of the headline
# pair), the verdict rests on it, labelled with its device, date, commit and seeds, and this
# build's own result stands beside it.
#
# How small an effect $n$ seeds can catch follows from the s.d. $\sigma$ of the differences: the
# *minimum detectable effect* (MDE) is the true difference that a two-sided paired t-test at
# 95 % detects with 80 % power (`ropebook.stats.power`). It shrinks roughly as
# $\sigma/\sqrt{n}$, so halving it takes about four times the seeds. The headline comparison,
# decided this way in its own chapter, whose record this appendix reads:

# %%
owner = pipeline.chapter_claim("p_rope_headline.matched_p075_vs_rope", profile=profile)
display(
    plots.table(
        [
            {
                "claim": owner.statement,
                "verdict": claims.verdict_label(owner),
                "measured": owner.measured,
                "rests on": claims.evidence_cell(owner),
            }
        ]
    )
)
# This build's matched seeds of the pair, for their noise and resolution (here and below); the
# comparison's difference and verdict are the headline chapter's, read above.
headline = ablation.compare_models(
    NAMES[HEADLINE[0]], arms[0], NAMES[HEADLINE[1]], arms[1], confidence
)

# %% tags=["remove-input"]
for name, value in {
    "verdict": claims.verdict_label(owner),
    "mde": show_noise.dash(headline.min_detectable(confidence) if headline.paired else None, 2),
    "seeds": headline.difference.n,
    "to_decide": owner.to_decide if owner.undecided else "nothing more: it is decided",
}.items():
    glue(f"methods.headline.{name}", value, display=False)

# %% [markdown]
# The [headline chapter](p_rope_headline.ipynb) decides 0.75-RoPE against RoPE in the matched
# regime ({ref}`p-rope-matched`), its verdict resting on the GPU study's many more paired seeds of
# the same models, this build's beside it ({ref}`p-rope-gpu-headline`); the table is its record,
# read from the executed chapter: **{glue:text}`methods.headline.verdict`**. What would decide
# it: {glue:text}`methods.headline.to_decide`. This build's own
# {glue:text}`methods.headline.seeds` paired matched seeds detect an effect of
# {glue:text}`methods.headline.mde` % of perplexity (what the seeds are chosen from:
# {ref}`methods-power`). The [scorecard](scorecard.ipynb) lists, for every open claim of the
# book, what would decide it.

# %% [markdown]
# ## Where the noise comes from
#
# (methods-training-noise)=
# ### Does more training shrink the noise?
#
# If the paired noise came from models still far from convergence, more tokens would shrink it.
# The flagship runs test this directly: RoPE, 0.75-RoPE and NoPE in the matched regime's shape,
# trained on the same seeds for longer than the matched runs, each recording its validation loss
# (on the same windows) at every snapshot. Below, every recorded step gives one paired
# comparison over seeds; the chart shows how the standard deviation of the paired difference
# moves with tokens seen. With few seeds a sample s.d. is itself uncertain: the band is its
# interval from the chi-square distribution with $n-1$ degrees of freedom (columns *s.d. low*
# and *s.d. high*).

# %%
flagship = {name: runs for (name, _), runs in ablation.load_runs(
    zoo.FLAGSHIP, ["shakespeare"], profile=profile, regime="flagship").items()}  # fmt: skip
over_training = {
    f"{NAMES[a]} vs {NAMES[b]}": ablation.comparisons_over_training(
        NAMES[a], shared[0], NAMES[b], shared[1], confidence
    )
    for a, b in (HEADLINE, ("rope", "nope"))
    for shared in [ablation.shared_runs(flagship[a], flagship[b])]
}
noise_rows = show.training_noise_rows(over_training, confidence)
display(show.training_noise_chart(noise_rows, confidence=confidence))
plots.table(noise_rows)

# %% tags=["remove-input"]
plan = seedplan.load_plan()
speedup = seedplan.machine_speedup(plan)  # seeds follow the machine: see "Seeds chosen by power"
spare = seedplan.spare_seconds(plan, speedup.factor)
choices = {c.id: c for c in seedplan.choose(plan, spare)}
flagship_target = choices["flagship: 0.75-RoPE vs RoPE"].target
near_tie = over_training[f"{NAMES[HEADLINE[0]]} vs {NAMES[HEADLINE[1]]}"]
last_tokens, last = max(near_tie.items())
last_sd = ablation.paired_sd_percent(last)
matched_tokens = ablation.tokens_seen(matched)[0]
gpu_flagship = recipes.load(recipes.GPU_FILES["flagship"])
gpu_flagship_sd = recipes.compare(gpu_flagship, seeds=gpu_flagship["seeds"])[0].paired_sd
gpu_flagship_specs = recipes.spec_differences(gpu_flagship, profile)
here_noise, here_interval = show_noise.sd_target(last_sd, last.difference.n, 1.0, confidence)
CLAIMS.record(  # the strongest evidence decides: the kept GPU study of the same models
    "methods.flagship_noise",
    show_noise.estimate_target(gpu_flagship_sd, 1.0),
    f"s.d. of the paired difference {gpu_flagship_sd.value:.2f} % of perplexity "
    f"[{gpu_flagship_sd.low:.2f}, {gpu_flagship_sd.high:.2f}] on the kept GPU study's last step; "
    f"this build: {last_sd:.2f} %"
    + (f" [{here_interval[0]:.2f}, {here_interval[1]:.2f}], {here_noise}"
       if last.difference.n >= 2 else " (one seed)")
    + f" at {last_tokens:,} tokens (matched runs, {matched_tokens:,} tokens: "
    f"{ablation.paired_sd_percent(headline):.2f} %)",
    seeds=len(gpu_flagship["seeds"]),
    basis=f"kept study on {show_recipes.study_label(gpu_flagship)}, "
    f"{show_recipes.spec_text(gpu_flagship_specs)}; this build: {last.difference.n} seeds × "
    f"{last_tokens:,} tokens",
    to_decide=f"more paired flagship seeds ({len(gpu_flagship['seeds'])} in the GPU study): the "
    "s.d.'s chi-square interval narrows until it leaves 1 % (OUT=data/results "
    "FLAGSHIP_SEEDS=N bash tools/gpu_headline.sh flagship)",
)  # fmt: skip
over_flagship = ablation.training_noise(near_tie, headline, flagship_target, confidence)
for name, value in show.training_noise_values(near_tie, over_flagship, matched_tokens).items():
    if name != "difference":  # the comparison's own number is the headline chapter's
        glue(f"methods.flagship.{name}", value, display=False)
glue("methods.flagship.target", float(flagship_target), display=False)
glue("methods.flagship.verdict", CLAIMS.records["methods.flagship_noise"].verdict, display=False)
glue("methods.flagship.gpu_seeds", len(gpu_flagship["seeds"]), display=False)
glue("methods.flagship.gpu_sd", f"{show_noise.number_text(gpu_flagship_sd.value)} % "
     f"[{show_noise.interval_text(gpu_flagship_sd, ' %')}]", display=False)  # fmt: skip

# %% [markdown]
# At the last step ({glue:text}`methods.flagship.tokens` tokens,
# {glue:text}`methods.flagship.times` the matched runs) the paired difference of 0.75-RoPE and
# RoPE (its verdict: {ref}`p-rope-gpu-headline`) has an s.d. of
# **{glue:text}`methods.flagship.sd`** of perplexity ({glue:text}`methods.confidence:.0%`
# interval {glue:text}`methods.flagship.sd_interval`; matched runs:
# {glue:text}`methods.flagship.earlier_sd`).
# Over the second half of training (from {glue:text}`methods.flagship.late_from` tokens) the s.d.
# ranges {glue:text}`methods.flagship.late_range` and {glue:text}`methods.flagship.trend`
# (Spearman ρ = {glue:text}`methods.flagship.rho` with tokens). The smallest effect
# {glue:text}`methods.flagship.seeds` seeds detect is {glue:text}`methods.flagship.detectable`,
# against the seed plan's target of {glue:text}`methods.flagship.target:.2f` % for this
# comparison, which would need about {glue:text}`methods.flagship.seeds_needed` paired seeds at
# this noise (80 % power). (A dash: one seed per model, so no paired noise to follow over
# training.) The same comparison on {glue:text}`methods.flagship.gpu_seeds` paired seeds of the
# {ref}`GPU study <p-rope-gpu-headline>` has an s.d. of {glue:text}`methods.flagship.gpu_sd` at
# the last step: a few seeds' s.d. is a wide estimate, so the claim that the flagship budget
# resolves 1 % rests on the study's interval, and is **{glue:text}`methods.flagship.verdict`**;
# the seed plan uses the study's s.d. too.

# %% [markdown]
# (methods-noise-split)=
# ### Training noise or evaluation noise?
#
# A seed's paired difference is measured on a sample of held-out windows, so the spread of those
# differences over seeds mixes *training noise* (initial weights and batches) with *evaluation
# noise* (which windows were drawn). Only the first needs more seeds; the second needs more
# held-out tokens. We score each model on {glue:text}`methods.evalnoise.windows:,d` fresh
# validation windows of its training length ({glue:text}`methods.evalnoise.tokens:,d` tokens, the
# same for every model) and split the variance of the per-window differences, seeds × windows,
# with a two-way random-effects analysis (`ropebook.stats.noise`): training s.d. from the seed
# means, evaluation s.d. from the windows' spread divided by $\sqrt{W}$. Evaluation noise is
# *negligible* when its variance is at most a tenth of the training variance. Column *table*:
# the evaluation s.d. on the zoo's own validation windows (those behind Table 2); *win. for ≤
# 10%*: the windows that would make evaluation noise negligible, and their tokens.

# %%
held_out = data.load_tokens("shakespeare", "val")
noise_runs = {"matched": {n: matched[n, "shakespeare"] for n in NAMES}, "flagship": flagship}
NOISE_PAIRS = {"matched": [HEADLINE, ("p-rope-0.25", "rope"), ("nope", "rope")],
               "flagship": [HEADLINE, ("nope", "rope")]}  # fmt: skip
window_losses = {
    (r, n): ablation.held_out_losses(noise_runs[r][n], held_out, n_windows=noise_windows)
    for r, pairs in NOISE_PAIRS.items()
    for n in {n for pair in pairs for n in pair}
}
splits = {
    (r, f"{NAMES[a]} vs {NAMES[b]}"): noise.split(
        noise.paired_differences(window_losses[r, a], window_losses[r, b])
    )
    for r, pairs in NOISE_PAIRS.items()
    for a, b in pairs
}
table_windows = {  # the validation windows behind Table 2's numbers, per regime
    r: tc.eval_batches * tc.batch_size
    for r in NOISE_PAIRS
    for tc in [zoo.configs("rope", profile=profile, regime=r)[1]]
}
plots.table(show_noise.noise_rows(splits, table_windows, matched_config.context))

# %% tags=["remove-input"]
split = splits["matched", f"{NAMES[HEADLINE[0]]} vs {NAMES[HEADLINE[1]]}"]
needed = split.windows_needed()
reading = (
    "not measured: one seed, no training noise"
    if needed is None
    else "negligible"
    if split.negligible
    else "not negligible: more held-out windows before more seeds"
)
share_low, share_high = show_noise.eval_share_interval(split, confidence)
CLAIMS.record(
    "methods.evaluation_noise",
    show_noise.eval_noise_verdict(split, confidence),
    f"training s.d. {show_noise.dash(split.seed_sd)} %, evaluation s.d. "
    f"{show_noise.dash(split.eval_sd)} % on {noise_windows} windows "
    f"({show_noise.dash(split.eval_sd_at(table_windows['matched']))} % on Table 2's "
    f"{table_windows['matched']}); "
    + (
        f"evaluation/training variance {show_noise.dash(split.eval_share)} "
        f"[{show_noise.dash(share_low)}, {show_noise.dash(share_high)}] (the training s.d.'s "
        f"chi-square interval); {needed:,} windows make it a tenth"
        if needed
        else "training noise needs two seeds"
    ),
    seeds=split.n_seeds,
    basis=f"matched regime, {split.n_seeds} seeds × {noise_windows} held-out windows",
    to_decide=decide.noise_to_decide("matched", HEADLINE, split.n_seeds),
)
for name, value in {
    "windows": noise_windows,
    "tokens": noise_windows * (matched_config.context + 1),
    "table_windows": table_windows["matched"],
    "seed_sd": show_noise.dash(split.seed_sd),
    "eval_sd": show_noise.dash(split.eval_sd),
    "table_eval_sd": show_noise.dash(split.eval_sd_at(table_windows["matched"])),
    "needed": show_noise.dash(needed),
    "reading": reading,
    "verdict": CLAIMS.records["methods.evaluation_noise"].verdict,
    "share_interval": f"[{show_noise.dash(share_low)}, {show_noise.dash(share_high)}]",
}.items():
    glue(f"methods.evalnoise.{name}", value, display=False)

# %% [markdown]
# For the headline comparison the training s.d. of a seed's paired difference is
# {glue:text}`methods.evalnoise.seed_sd` % of perplexity and its evaluation s.d. on
# {glue:text}`methods.evalnoise.windows:,d` windows {glue:text}`methods.evalnoise.eval_sd` %
# ({glue:text}`methods.evalnoise.table_eval_sd` % on the
# {glue:text}`methods.evalnoise.table_windows` windows of Table 2's own validation): evaluation
# noise is **{glue:text}`methods.evalnoise.reading`** on the point estimates;
# {glue:text}`methods.evalnoise.needed` windows would make it a tenth of the training variance.
# Over few seeds the training s.d. is itself uncertain: the share's interval,
# {glue:text}`methods.evalnoise.share_interval`, decides the claim, which is
# **{glue:text}`methods.evalnoise.verdict`**. The seed counts below are chosen from
# the paired s.d., which contains both.

# %% [markdown]
# (methods-power)=
# ## Seeds chosen by power
#
# How many seeds a comparison needs follows from its paired noise: a paired t-test on $n$ seeds
# whose differences have s.d. $\sigma$ detects an effect $\delta$ with 80 % power (95 %,
# two-sided) once $n$ is large enough (`ropebook.stats.power.seeds_needed`). The book measured
# that noise (its fresh-clone build; for the headline, the GPU study's
# {ref}`paired seeds <p-rope-gpu-headline>`); `data/seed_plan.json` records it with its
# source, and the targets: 0.75-RoPE vs RoPE resolved to {glue:text}`methods.plan.matched_target:.1f` % of
# perplexity in the matched regime and {glue:text}`methods.plan.flagship_target:.0f` % in the
# flagship one. Within the build budget the zoo trains the seeds below (in the `cpu` profile;
# added seeds come after the profile's own, so no trained model changes), the cheapest first:
# 0.25-RoPE against NoPE in the lesson regime on each corpus, planned from paired seeds measured
# beforehand (`data/seed_plan.json` names the study) with the paper's gap in Table 2 as its
# target (its verdicts are the p-RoPE chapter's, {ref}`p-rope-orderings`), and RoPE's query maps
# across input domains (the frequency-usage chapter's Fig. 19 reading, planned from seeds
# measured beforehand, the study named beside it; its s.d. and target are a correlation, not %
# of perplexity), then
# 0.75-RoPE vs RoPE, which a CPU build can only bound and which takes what is left (its noise
# anatomy and its verdict rest on the kept GPU study's paired seeds, so the build buys no floor
# for them).
# The last three columns are this run's own (matched and flagship only: the lesson rows are
# measured in the p-RoPE and frequency-usage chapters).


# %%
def paired(a: str, b: str) -> ablation.Comparison:
    """This run's matched comparison of ``a`` with ``b`` on the seeds both have."""
    runs = matched[a, "shakespeare"], matched[b, "shakespeare"]
    return ablation.compare_models(NAMES[a], runs[0], NAMES[b], runs[1], confidence)


planned_here = {  # this run's comparison behind each planned one
    "matched: 0.75-RoPE vs RoPE": headline,
    "flagship: 0.75-RoPE vs RoPE": last,
    "matched: 0.25-RoPE vs RoPE": paired("p-rope-0.25", "rope"),
    "matched: NoPE vs RoPE": paired("rope", "nope"),
}
plots.table(show_plan.plan_rows(list(choices.values()), planned_here, confidence))

# %% tags=["remove-input"]
headline_plan = choices["matched: 0.75-RoPE vs RoPE"]
for name, value in {
    "matched_target": headline_plan.target,
    "flagship_target": flagship_target,
    "matched_needed": headline_plan.needed,
    "matched_trained": headline_plan.trained,
    "matched_sd": headline_plan.sd,
    "matched_mde": headline_plan.mde,
    **show_plan.shortfall_values(list(choices.values()), spare / 60),
    "speedup": speedup.factor,
    "speedup_source": speedup.source,
}.items():
    glue(f"methods.plan.{name}", value, display=False)

# %% [markdown]
# The table reads as the build's plan: *MDE planned* is the smallest effect the planned seeds
# detect if the noise stays what the book measured; *MDE here* is what this run's seeds and
# measured noise resolve. Seeds follow the machine: the budget is in minutes of the reference
# CPU, and a machine that trains faster spends the same wall time on more of them
# (`ropebook.seedplan.machine_speedup`: the speed-up rounded down to a power of two, at least 1).
# This build counts each of its minutes as {glue:text}`methods.plan.speedup` reference minutes
# ({glue:text}`methods.plan.speedup_source`), so the budget leaves
# {glue:text}`methods.plan.spare:.0f` reference minutes of training for added seeds; the plan
# spends {glue:text}`methods.plan.added:.1f` of them.
# {glue:text}`methods.plan.met` of the {glue:text}`methods.plan.n` comparisons reach their target
# MDE with the planned seeds; the furthest from it plans an MDE
# {glue:text}`methods.plan.worst_ratio:.1f` times its target (0 when every target is met). At the
# paired s.d. the book measured for the headline comparison in the matched regime
# ({glue:text}`methods.plan.matched_sd:.2f` %), its target needs
# {glue:text}`methods.plan.matched_needed` seeds; the budget affords
# {glue:text}`methods.plan.matched_trained`, which detect
# {glue:text}`methods.plan.matched_mde:.2f` %. Where the budget affords fewer seeds than the
# target needs, the build bounds the effect ({ref}`methods-deciding`) rather than deciding it at
# the target.

# %% tags=["remove-input"]
glue("methods.two_look_error", f"{100 * power.two_look_error():.0f} %", display=False)

# %% [markdown]
# **A second step, in the chapters.** The plan buys seeds before anything is measured. Where
# models are cheap, a chapter then buys more for the comparisons its first seeds leave open: a
# comparison the profile's seeds cannot decide, whose *measured* difference at most the chapter's
# `max_seeds` paired seeds would detect (80 % power, 95 %), is run again on that many
# (`ropebook.analysis.ablation.seeds_to_buy` for the p-RoPE orderings, in the lesson and the
# matched regime, cheapest first within the chapter's minutes of the plan, `chapter_minutes`, set
# aside before the plan's own seeds and shared in proportion when the budget leaves less;
# `seeds_for_gaps` for the recall and layouts contrasts). A comparison that needs more than the
# cap, or more than is left, stays a bound: a partial spend would leave it one. The verdict is then read on
# all the seeds at the same 95 % level, a design that looks twice: for a null effect it says
# *held* or *not held* somewhat more often than one time in twenty
# ({glue:text}`methods.two_look_error` for two looks, at n and then 2n seeds, each tested at the
# same level: `stats.power.two_look_error`), the price of spending seeds only where they decide
# something.
# Those seeds are chosen from the *observed* difference of the very runs being judged, not from a
# pilot's s.d. and a target fixed beforehand, so a verdict read on them is **exploratory, not
# confirmatory**: the chapters mark each comparison whose seeds grew this way (its claim's
# evidence begins "exploratory"; in the headline chapter, {ref}`p-rope-matched`), and it belongs
# outside the confirmatory tally. The plan's own seeds, and the GPU studies' (their seed counts
# fixed in the command before anything was trained), are confirmatory.

# %% [markdown]
# ## What we claim and what we measured

# %% tags=["remove-input"]
CLAIMS.glue()
