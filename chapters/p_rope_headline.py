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
# # p-RoPE's headline, where the slow planes turn
#
# {glue:md}`in_short`

# %% [markdown]
# The paper's headline is one line of its Table 2 {cite:p}`barbero2025round{Table 2}`: 0.75-RoPE,
# which leaves RoPE's slowest quarter of planes unrotated, reaches a lower validation perplexity
# than RoPE. Gemma 4 ships the same idea on its global layers (p = 0.25; the layouts chapter
# lists it), so the question is practical. This page tests the headline where it can be tested: in the
# *matched* regime, whose slowest planes turn as a large model's do over its context, after
# longer training (the flagship runs), and on the many paired seeds a GPU trained. The strongest
# evidence decides: where a study kept in the repository trained the same models on more seeds,
# the verdict rests on it, labelled with where and when it ran, and this build's own result
# stands beside it, with a test that the two agree. What decides a verdict, and what only bounds
# an effect, is set out in the methods chapter ({ref}`methods-deciding`).
#
# This page is the one home of 0.75-RoPE against RoPE on language where the slow planes turn:
# the matched runs and the flagship runs, this build's and the kept GPU studies'. The lesson
# regime's comparison is the p-RoPE chapter's ({ref}`p-rope-orderings`); the methods appendix
# reads this page's record for its worked example rather than deciding the pair again; a later
# chapter, *Recall at a distance*, compares the same encodings on synthetic tasks, by accuracy.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu
confidence = 0.95  # in (0, 1): level of every interval over seeds
max_seeds = 6  # in [1, inf): most seeds an undecided matched ordering buys, chosen by power

# %% tags=["hide-input"]
from myst_nb import glue

from ropebook import claims, matched_study, plots, recipes, seedplan, zoo
from ropebook.analysis import ablation
from ropebook.analysis.ablation.seeds import seeds_grown
from ropebook.present import ablation as show
from ropebook.present import decide
from ropebook.present import noise as show_noise
from ropebook.present import recipes as show_recipes

plots.setup()
MARGIN = recipes.MARGIN  # % of perplexity, fixed before the data (ropebook.recipes says why)
PAIRS, PAPER_TABLE2 = ablation.PAIRS, ablation.PAPER_TABLE2
TABLE2, table2_pair = "Barbero et al. 2025, Table 2", "Barbero et al. 2025, Table 2, Sec. 6.1"
CLAIMS = claims.ClaimSet(
    *(
        claims.ClaimSpec(
            f"p_rope_headline.matched_{cid}", f"{table2_pair} (matched regime)", text, claims.given
        )
        for cid, text in (
            ("p075_vs_rope", "0.75-RoPE has lower perplexity than RoPE"),
            ("p075_vs_500k", "0.75-RoPE beats raising the base 50-fold"),
            ("reversed_vs_p", "0.75-RoPE beats 0.75-RoPE reversed (fastest planes removed)"),
            ("partial_vs_p", "0.75-RoPE beats partial RoPE on 75% of the dimensions"),
            ("p075_vs_p025", "0.75-RoPE beats 0.25-RoPE"),
            ("p025_vs_nope", "0.25-RoPE beats NoPE"),
        )
    ),
    claims.ClaimSpec(
        "p_rope_headline.matched_noise", f"{TABLE2} (resolution of our matched runs)",
        "The matched-regime runs resolve 1 %: the s.d. of paired differences is ≤ 1 % of "
        "perplexity",
        claims.given,  # show_noise.sd_target: the s.d.'s chi-square interval against 1 %
    ),
    claims.ClaimSpec(
        "p_rope_headline.flagship_p075_vs_rope", f"{table2_pair} (flagship runs, 10× the tokens)",
        "0.75-RoPE has lower perplexity than RoPE after longer training (the flagship runs)",
        claims.given,  # the kept GPU study's Comparison.verdict, margin recipes.MARGIN
    ),
    *(
        claims.ClaimSpec(
            f"p_rope_headline.{regime}_agrees_with_gpu",
            f"{table2_pair} ({regime} runs: this build against the kept GPU study)",
            f"This build's {regime} 0.75-RoPE − RoPE agrees with the kept GPU study's within "
            f"±{MARGIN:g} % of perplexity (Welch's interval of the difference of the two means "
            "lies inside the margin)",
            claims.given,  # show_recipes.agreement_verdict: an equivalence test at MARGIN
        )
        for regime in ("matched", "flagship")
    ),
)  # fmt: skip
paper_headline_gap = show.paper_gap_percent(PAPER_TABLE2["Wiki"], "p-rope-0.75", "rope")
glue("p_rope_headline.margin", f"{MARGIN:g} %", display=False)
glue("p_rope_headline.paper_headline_gap", f"{paper_headline_gap:+.2f} %", display=False)

# %% [markdown]
# (p-rope-headline-margin)=
# **The margin, fixed before the data.** A Table 2 ordering whose paired interval contains zero
# but lies within ±{glue:text}`p_rope_headline.margin` of perplexity is **bounded**: a decided
# null, any effect smaller than the margin (`ropebook.recipes.MARGIN`). The margin is the unit
# this book reads perplexity differences in, and the paper's own headline gap rounded up
# (0.75-RoPE against RoPE on Wiki, {glue:text}`p_rope_headline.paper_headline_gap`, Table 2): an
# effect no larger than the one the paper reports is the smallest this book sets out to resolve.
# An interval that contains zero and reaches past the margin *cannot decide*.

# %% [markdown]
# (p-rope-matched)=
# ## Table 2 where the slow planes turn: the matched regime
#
# The lesson regime of the [p-RoPE chapter](p_rope.ipynb) cannot test claims about slow
# frequencies: its slowest planes turn by a few hundredths of a turn over the context, so freeing
# them changes almost nothing. The *matched* regime (see the first chapter) gives every head 16
# planes (head dimension 32) and sets θ so that its slowest plane turns as often over our training
# context as Gemma 7B's slowest plane does over 8k tokens; θ = 500k, which the paper describes as
# 50× its base, becomes 50× our base (how far each model's freed planes turn: the
# {ref}`p-RoPE chapter's Table 2 <p-rope-table2>`).

# %% [markdown]
# The seven encodings trained in the matched regime on Shakespeare (same seeds, batches and
# initial weights per seed; 3× the lesson regime's steps), compared seed by seed as the p-RoPE
# chapter compares them ({ref}`p-rope-orderings`). For each of the paper's orderings the table
# gives the paper's gap, our paired difference, its standard deviation over seeds, and the
# **smallest effect our seeds can detect** (paired t-test, 95 % two-sided, 80 % power). Where the
# interval contains zero the run cannot decide, and the last column says how large the effect can
# be. As in the p-RoPE chapter, an ordering the first seeds cannot decide, whose measured
# difference at most `max_seeds` paired seeds would detect, first gets those seeds, the cheapest
# first, while the chapter's share of the build budget lasts ({ref}`methods-power`).

# %%
matched = ablation.load_runs(zoo.TABLE2, ["shakespeare"], profile=profile, regime="matched")
NAMES = show.LABELS | {"rope": "RoPE", "rope-500k": "RoPE, 50× θ"}  # θ is the matched base here


def matched_comparisons(runs):  # paired on the seeds both models have
    return {
        (b, w): ablation.compare_models(
            NAMES[b], runs[b, "shakespeare"], NAMES[w], runs[w, "shakespeare"], confidence
        )
        for b, w, _ in PAIRS
    }


budget = seedplan.chapter_budget("p_rope_headline", "matched", profile)
first_cmp = matched_comparisons(matched)  # what the first seeds give, before any is bought
wanted = ablation.seeds_to_buy(
    {((b, "shakespeare"), (w, "shakespeare")): c for (b, w), c in first_cmp.items()},
    {key: len(runs) for key, runs in matched.items()},
    max_seeds=max_seeds, seconds_per_model=budget.seconds_per_model, budget_seconds=budget.seconds,
)  # fmt: skip
matched = ablation.extend_runs(matched, wanted, profile=profile, regime="matched")
matched_cmp = matched_comparisons(matched)
exploratory = seeds_grown(first_cmp, matched_cmp)  # seeds bought on their observed difference
plots.table(show.resolution_rows(matched_cmp, PAPER_TABLE2["Wiki"], confidence))

# %% tags=["remove-input"]
HEADLINE = ("p-rope-0.75", "rope")
gpu = {regime: recipes.load(path) for regime, path in recipes.GPU_FILES.items()}
gpu_cmp = {r: show_recipes.study_comparison(gpu[r], "today", NAMES, confidence) for r in gpu}
gpu_specs = {r: recipes.spec_differences(gpu[r], profile) for r in gpu}  # vs this build's models
matched_tokens = ablation.tokens_seen(matched)[0]
matched_seeds = min(len(runs) for runs in matched.values())  # every encoding has these
matched_noise = ablation.matched_noise(matched_cmp)
CLAIMS.record(  # the strongest evidence decides: the kept GPU study, this build's beside it
    "p_rope_headline.matched_p075_vs_rope",
    **show_recipes.study_record(gpu_cmp["matched"], gpu["matched"], matched_cmp[HEADLINE],
                                gpu_specs["matched"], confidence, MARGIN),
)  # fmt: skip
kept_matched, kept_basis = matched_study.deciding_runs(matched_study.kept(), profile)
for better, worse, cid in PAIRS[1:-1]:  # the kept matched study where it trained both, else here
    c = matched_cmp[better, worse]
    kept_pair = [(kept_matched or {}).get((n, matched_study.DOMAIN)) for n in (better, worse)]
    studied = all(kept_pair)
    deciding = (
        ablation.compare_models(NAMES[better], kept_pair[0], NAMES[worse], kept_pair[1], confidence)
        if studied else c
    )  # fmt: skip
    grown = (
        f"exploratory: seeds added to the first {first_cmp[better, worse].difference.n} after "
        "they were judged, on their observed difference (not confirmatory); "
        if (better, worse) in exploratory else ""
    )  # fmt: skip
    if studied:
        grown = f"{kept_basis}; exploratory: its seed count was chosen on this build's difference; "
    CLAIMS.record(
        f"p_rope_headline.matched_{cid}",
        show_recipes.ordering_verdict(deciding, MARGIN),
        (
            f"kept study: {show_recipes.ordering_measured(deciding, MARGIN)}; this build's "
            f"{c.difference.n} seeds, beside: "
            if studied
            else ""
        )
        + show_recipes.ordering_measured(c, MARGIN),  # fmt: skip
        seeds=deciding.difference.n,
        basis=f"{grown}matched regime, {matched_tokens:,} tokens/model; "
        + show.resolution_text(deciding, confidence),
        to_decide=decide.comparison_to_decide(
            deciding, seedplan.measured_sd("matched", (better, worse))
        ),
        exploratory=(better, worse) in exploratory or (studied and matched_study.EXPLORATORY),
    )
glue("p_rope_headline.kept_basis",
     kept_basis if kept_matched else f"this build's seeds ({kept_basis})", display=False)  # fmt: skip
noise_n = min(c.difference.n for c in matched_cmp.values())  # the fewest paired seeds
noise_verdict, noise_interval = show_noise.sd_target(matched_noise, noise_n, 1.0, confidence)
paper_gap = (f" (the paper's median gap between encodings on Wiki: "
             f"{100 * ablation.paper_gap(PAPER_TABLE2['Wiki']):.2f} %)")  # fmt: skip
noise_here = dict(
    evidence=noise_verdict,
    measured=f"median s.d. of the paired differences: {matched_noise:.2f} % of perplexity"
    + (f" [{noise_interval[0]:.2f}, {noise_interval[1]:.2f}] (chi-square, {noise_n - 1} d.f.)"
       if noise_n >= 2 else "") + " (target ≤ 1 %)",
    seeds=matched_seeds,
    basis=f"matched regime, {matched_seeds} seeds × {matched_tokens:,} tokens; the interval is "
    f"one comparison's on its {noise_n} seeds (the median of several is at least as precise)",
    to_decide=decide.noise_to_decide("matched", ("nope", "rope"), matched_seeds)
    if noise_n < 2 else f"more paired seeds per encoding ({noise_n} here): the s.d.'s interval "
    "narrows as √(seeds) until it leaves 1 %",
)  # fmt: skip
# the strongest evidence decides: the kept GPU study's headline pair, where it trained these models
noise_study = show_recipes.noise_record((matched_noise, noise_n), gpu_cmp["matched"],
                                        gpu["matched"], gpu_specs["matched"], 1.0, confidence)  # fmt: skip
noise_record = noise_study or noise_here
CLAIMS.record("p_rope_headline.matched_noise",
              **noise_record | {"measured": noise_record["measured"] + paper_gap})  # fmt: skip
glue("p_rope_headline.noise_rests_on", "the kept GPU study's headline pair (below)" if noise_study
     else "this build's runs", display=False)  # fmt: skip
glue("p_rope_headline.matched_tokens", int(matched_tokens), display=False)
glue("p_rope_headline.matched_seeds", matched_seeds, display=False)
glue("p_rope_headline.seed_budget", budget.source, display=False)
glue("p_rope_headline.seeds_per_model", "; ".join(
    f"{NAMES[name]}: {len(runs)}" for (name, _), runs in matched.items() if len(runs) > matched_seeds
) or "none", display=False)  # fmt: skip
glue("p_rope_headline.matched_noise", matched_noise, display=False)
glue(
    "p_rope_headline.paper_gap_wiki", 100 * ablation.paper_gap(PAPER_TABLE2["Wiki"]), display=False
)
glue("p_rope_headline.exploratory", ", ".join(
    f"{NAMES[b]} vs {NAMES[w]}" for b, w in exploratory) or "none", display=False)  # fmt: skip

# %% [markdown]
# Each matched-regime model saw {glue:text}`p_rope_headline.matched_tokens:,d` tokens
# ({glue:text}`p_rope_headline.matched_seeds` seed(s) per encoding, more chosen by power by the
# seed plan and by the step above, as the {ref}`methods chapter <methods-power>` explains:
# {glue:text}`p_rope_headline.seeds_per_model`; the step's budget:
# {glue:text}`p_rope_headline.seed_budget`; each ordering pairs the seeds both sides have). The median standard deviation of the paired differences is
# **{glue:text}`p_rope_headline.matched_noise:.2f` %** of the perplexity, against the book's target of 1 %
# and the paper's median gap of {glue:text}`p_rope_headline.paper_gap_wiki:.2f` % between two of its
# encodings; whether the regime meets that target is decided on
# {glue:text}`p_rope_headline.noise_rests_on`, whose many seeds measure the s.d. itself far more
# precisely than a few (the claims table gives both). An effect smaller than the 'detectable' column is one this run would usually miss:
# such orderings are reported as bounds, not as agreement. Whether that noise is training or
# evaluation noise is measured in {ref}`methods-noise-split`. Orderings whose seeds this step
# bought after judging their first seeds, on their observed difference, are *exploratory*, not
# confirmatory (the claims table says so): {glue:text}`p_rope_headline.exploratory`.
#
# A kept study (`data/results/matched_study.json`, made by `python -m ropebook matched_study`)
# trained the ordering a CPU can resolve, 0.75-RoPE against its reversed twin, on more paired
# seeds. Where it trained both encodings of an ordering and its runs are the models this build
# trains, the ordering rests on it, with this build's seeds beside; its seed count was chosen on
# this build's observed difference, so that verdict is *exploratory* too. Here:
# {glue:text}`p_rope_headline.kept_basis`.

# %% [markdown]
# (p-rope-gpu-headline)=
# ### Longer training, and many more seeds on a GPU
#
# The flagship runs train RoPE, 0.75-RoPE and NoPE in the matched regime's shape on the same seeds
# for longer (their noise over training: {ref}`methods-training-noise`). A GPU trains in minutes
# the paired seeds a CPU build cannot afford (a spec's seeds batched in one program, float32
# products): the table sets this build's two headline comparisons beside the same specs trained
# so under today's recipe, from results files kept in the repository (matched:
# {glue:text}`p_rope_headline.gpu.matched.provenance`; flagship: {glue:text}`p_rope_headline.gpu.flagship.provenance`).
# The GPU runs are {glue:text}`p_rope_headline.gpu.matched.spec` (matched) and
# {glue:text}`p_rope_headline.gpu.flagship.spec` (flagship). Where they are the same models, the
# headline verdicts rest on them: their many paired seeds resolve what this build's few cannot.

# %%
flagship = {name: runs for (name, _), runs in ablation.load_runs(
    zoo.FLAGSHIP, ["shakespeare"], profile=profile, regime="flagship").items()}  # fmt: skip
shared = ablation.shared_runs(flagship["p-rope-0.75"], flagship["rope"])
last_tokens, last = max(ablation.comparisons_over_training(
    NAMES["p-rope-0.75"], shared[0], NAMES["rope"], shared[1], confidence).items())  # fmt: skip
here = {"matched": matched_cmp[HEADLINE], "flagship": last}
kept = {regime: (gpu_cmp[regime], gpu[regime]) for regime in gpu}
plots.table(show_recipes.beside_rows(here, kept, HEADLINE, PAPER_TABLE2["Wiki"], confidence))

# %% tags=["remove-input"]
CLAIMS.record(  # the strongest evidence decides: the kept GPU study, this build's beside it
    "p_rope_headline.flagship_p075_vs_rope",
    **show_recipes.study_record(gpu_cmp["flagship"], gpu["flagship"], last, gpu_specs["flagship"],
                                confidence, MARGIN),
)  # fmt: skip
glue("p_rope_headline.flagship.tokens", int(last_tokens), display=False)
glue("p_rope_headline.flagship.times", last_tokens / matched_tokens, display=False)
glue("p_rope_headline.flagship.verdict", show_recipes.reading(last, MARGIN), display=False)
glue("p_rope_headline.matched.here", show_recipes.reading(here["matched"], MARGIN), display=False)
for regime, (c, res) in kept.items():
    for name, value in show_recipes.study_values(c, res, PAPER_TABLE2["Wiki"], confidence).items():
        glue(f"p_rope_headline.gpu.{regime}.{name}", value, display=False)
    glue(f"p_rope_headline.gpu.{regime}.label", show_recipes.study_label(res), display=False)
    glue(f"p_rope_headline.gpu.{regime}.spec", show_recipes.spec_text(gpu_specs[regime]),
         display=False)  # fmt: skip
    glue(f"p_rope_headline.gpu.{regime}.verdict", CLAIMS.records[
        f"p_rope_headline.{regime}_p075_vs_rope"].verdict, display=False)  # fmt: skip

# %% [markdown]
# **The headline verdicts**, from the kept GPU studies (margin ±{glue:text}`p_rope_headline.margin`):
# matched, **{glue:text}`p_rope_headline.gpu.matched.verdict`** on
# {glue:text}`p_rope_headline.gpu.matched.label`; flagship,
# **{glue:text}`p_rope_headline.gpu.flagship.verdict`** on
# {glue:text}`p_rope_headline.gpu.flagship.label`. This build's own runs, beside them: matched,
# {glue:text}`p_rope_headline.matched.here`; after {glue:text}`p_rope_headline.flagship.tokens:,d`
# tokens ({glue:text}`p_rope_headline.flagship.times:.1f`× the matched runs),
# {glue:text}`p_rope_headline.flagship.verdict`. On the
# GPU, {glue:text}`p_rope_headline.gpu.matched.seeds` matched seeds give
# {glue:text}`p_rope_headline.gpu.matched.difference` and detect {glue:text}`p_rope_headline.gpu.matched.detectable`,
# {glue:text}`p_rope_headline.gpu.matched.meets` the target of {glue:text}`p_rope_headline.gpu.matched.target`
# ({glue:text}`p_rope_headline.gpu.matched.reading`); {glue:text}`p_rope_headline.gpu.flagship.seeds` flagship
# seeds give {glue:text}`p_rope_headline.gpu.flagship.difference`, detecting
# {glue:text}`p_rope_headline.gpu.flagship.detectable` (target {glue:text}`p_rope_headline.gpu.flagship.target`;
# {glue:text}`p_rope_headline.gpu.flagship.reading`). The paper's gap of {glue:text}`p_rope_headline.gpu.matched.paper_gap`
# lies **{glue:text}`p_rope_headline.gpu.matched.paper`** the matched interval and
# **{glue:text}`p_rope_headline.gpu.flagship.paper`** the flagship one: where ours excludes it, the
# paper's effect (Gemma 2B, Wiki) does not carry over at that size to our small models on
# Shakespeare, a bound at our scale and not a refutation at the paper's.

# %% [markdown]
# (p-rope-gpu-agreement)=
# ### Does this build agree with the GPU study?
#
# A verdict resting on a kept study is only as good as the study's agreement with what the code
# trains today. The test: this build's paired differences against the study's on the seeds this
# build did *not* train (so the two samples are independent), by Welch's interval of the
# difference of their means, read as an *equivalence* test against the margin fixed before the
# data, ±{glue:text}`p_rope_headline.margin` of perplexity (`ropebook.recipes.MARGIN`, the
# {ref}`margin above <p-rope-headline-margin>`). The two **agree** (*held*) only if that interval
# lies inside the margin: whatever separates them is smaller than the smallest effect the book
# sets out to resolve. They **disagree** (*not held*) if it excludes zero and reaches past the
# margin. An interval that contains zero but reaches past the margin *cannot decide*: a
# build's two or three seeds give so wide an interval that it would contain zero whatever the
# truth, and containing zero is no evidence of agreement. Where the build's seeds could not fit
# the margin even if the two agreed exactly (Welch's interval for a difference of zero, at the
# study's s.d., reaches past it: fixed by the seed counts before this build's data), an open test
# is *uninformative here*: it could show a disagreement, never an agreement. Where the specs
# differ (a profile that trains other models), the two need not agree and the test is
# *uninformative here* too. A
# disagreement is shown, never hidden: it is evidence about the build or the study (the machine,
# its libraries, a changed spec), not an error that stops the book.

# %%
here_seeds = {
    "matched": [m.seed for m in ablation.shared_runs(
        matched["p-rope-0.75", "shakespeare"], matched["rope", "shakespeare"])[0]],
    "flagship": [m.seed for m in shared[0]],
}  # fmt: skip
agreements = {
    r: (show_recipes.agreement_of(here[r], here_seeds[r], gpu[r], confidence), gpu_specs[r])
    for r in gpu
}
plots.table(show_recipes.agreement_rows(agreements, confidence, MARGIN))

# %% tags=["remove-input"]
for regime, (agreement, specs) in agreements.items():
    verdict = show_recipes.agreement_verdict(agreement, specs, MARGIN)
    CLAIMS.record(
        f"p_rope_headline.{regime}_agrees_with_gpu",
        verdict,
        show_recipes.agreement_text(agreement, MARGIN),
        seeds=agreement.n_here,
        basis=f"this build's {agreement.n_here} seed(s) against the kept study's "
        f"{agreement.n_kept} others ({show_recipes.study_label(gpu[regime])}); the study's runs "
        f"are {show_recipes.spec_text(specs)}",
        to_decide=show_recipes.agreement_to_decide(agreement, specs, MARGIN),
    )
    glue(f"p_rope_headline.agree.{regime}", verdict, display=False)

# %% [markdown]
# This build against the GPU study: matched, **{glue:text}`p_rope_headline.agree.matched`**;
# flagship, **{glue:text}`p_rope_headline.agree.flagship`** (*held*: they agree within
# ±{glue:text}`p_rope_headline.margin`; *not held*: they disagree, and the table shows by how
# much; *cannot decide*: too few seeds to tell, and the claims table says how many would;
# *uninformative here*: these seeds could never have shown agreement).

# %% [markdown]
# ## What we claim and what we measured

# %% tags=["remove-input"]
CLAIMS.glue()
