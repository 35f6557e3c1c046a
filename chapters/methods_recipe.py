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
# # Methods: can a recipe cut the noise?
#
# {glue:md}`in_short`

# %% [markdown]
# *This chapter is the second part of the book's appendix on methods. The first,
# {ref}`methods-seeds` to {ref}`methods-power`, sets out how a comparison is decided and where
# its noise comes from; this one asks whether training differently would make the headline
# comparison (0.75-RoPE against RoPE in the matched regime) cheaper to decide. Its runs come
# from kept results files, more than a build can train.*

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu
confidence = 0.95  # in (0, 1): level of every interval over seeds

# %% tags=["hide-input"]
from IPython.display import Markdown, display
from myst_nb import glue

from ropebook import claims, plots, recipes, studies
from ropebook.analysis import ablation
from ropebook.present import recipes as show_recipes
from ropebook.present import studies as show_studies

plots.setup()
NAMES = {"p-rope-0.75": "0.75-RoPE", "p-rope-0.25": "0.25-RoPE", "rope": "RoPE", "nope": "NoPE"}
gpu_matched = recipes.load(recipes.GPU_FILES["matched"])  # the same pair on many more seeds
print(f"profile {profile!r}; recipe study: {show_recipes.study_label(recipes.load())}")

# %% [markdown]
# The claim this chapter tests, with the rule that decides it (expand the cell); the table at
# the end gives what we measured.

# %% tags=["hide-input"]
CLAIMS = claims.ClaimSet(
    claims.ClaimSpec(
        "methods_recipe.recipe", "Kaddour 2022; Bergsma et al. 2025: matched runs",
        "A change of recipe — averaging the last fifth of training's weights, decaying the "
        "learning rate to zero, both, half the peak learning rate, or twice the batch at the same "
        "tokens — cuts the headline comparison's paired s.d. below today's: "
        "the candidate named for confirmation keeps an s.d. ratio to today's below 1 on fresh "
        "seeds, not those it was picked on",
        claims.given,  # show_recipes.recipe_verdict: fresh seeds only, else cannot decide
    ),
)  # fmt: skip

# %% [markdown]
# (methods-recipe)=
# ## Can the recipe cut the noise?
#
# Our recipe ends its cosine schedule at a tenth of the peak learning rate and reports the last
# iterate. If the noise is the last iterate's jitter, two levers aim at it, each measured on
# larger models: averaging the weights of the last steps and evaluating the mean as one model
# {cite:p}`kaddour2022lawa,sanyal2023early`, and decaying the learning rate to zero
# {cite:p}`bergsma2025straight`; {cite:t}`ajroldi2025average` found the two together best. If
# instead runs end in different places (the seeds' s.d. far above a run's jitter, as the
# anatomy of the {ref}`methods appendix <methods-training-noise>` shows), the levers are those that make runs diverge less: a lower peak learning
# rate, or a larger batch at the same tokens (`ropebook.recipes` defines a schedule for each). We
# trained both arms of the headline comparison on the same paired seeds under these schedules:
# {glue:text}`methods_recipe.recipe.schedules`; each run keeps the mean of its weights over the last
# {glue:text}`methods_recipe.recipe.share:.0%` of steps (`ropebook.train.tail_average`, which leaves the
# weights trained unchanged), so today's schedule and the learning rate to zero give two recipes
# each, the last iterate and the average. That is
# {glue:text}`methods_recipe.recipe.models` models, more than a build can train, so they come from a
# results file that `python -m ropebook recipes` wrote: {glue:text}`methods_recipe.recipe.provenance`.
# Since every recipe shares the seeds, the ratio of a candidate's paired s.d. to today's has
# Pitman and Morgan's interval {cite:p}`pitman1939note`, which uses the correlation of the two.

# %%
recipe_results = recipes.load()
recipe_stale = studies.stale(recipe_results)
compared = recipes.compare(recipe_results, confidence)  # the discovery seeds
confirmed = recipes.confirmation(recipe_results, confidence)  # the fresh seeds, if trained
recipe_names = tuple(NAMES[arm] for arm in recipe_results["arms"])
display(plots.table(show_recipes.rows(compared, recipe_names, confidence)))
show_recipes.differences_chart(recipe_results, recipe_names)


# %% tags=["remove-input"]
seed_span = show_recipes.seed_span
candidates = [r for r in compared if r.recipe != "today"]
best = min(candidates, key=lambda r: r.sd_ratio.value)
today_result = compared[0]
basis = (
    f"{recipe_results['profile']} profile, {recipe_results['regime']} regime, results file "
    f"measured {recipe_results['measured']}; {best.n_seeds} discovery seeds × "
    f"{len(compared)} recipes"
)
# Shown, not tested, without fresh seeds: the best of the candidates on the seeds that chose it.
fresh_today, fresh = confirmed or (today_result, best)
fresh_seeds = recipe_results["confirmation"]["seeds"] if confirmed else []
CLAIMS.record(
    "methods_recipe.recipe",
    show_recipes.recipe_verdict(confirmed),
    f"'{fresh.recipe}' "
    + (f"on fresh seeds {seed_span(fresh_seeds)}" if confirmed else "on the discovery seeds")
    + f": paired s.d. {fresh.paired_sd} % against today's {fresh_today.paired_sd} %, ratio "
    f"{fresh.sd_ratio} (Pitman-Morgan; "
    + (f"{best.sd_ratio} on the discovery seeds for the best there, '{best.recipe}')"
       if confirmed else f"the best of {len(candidates)} candidates on the seeds that picked it, "
       "no test: no fresh seeds yet)"),
    seeds=fresh.n_seeds,
    basis=basis + (f"; then today's and '{fresh.recipe}' on {fresh.n_seeds} fresh seeds"
                   if confirmed else ""),
    to_decide=show_recipes.recipe_to_decide(best, confirmed),
)  # fmt: skip
values = show_recipes.recipe_values(recipe_results, compared, confirmed, recipe_stale)
for name, value in values.items():
    glue(f"methods_recipe.recipe.{name}", value, display=False)
open_decision = "No candidate has been tried on fresh seeds, so the zoo keeps today's recipe."
pooled_values = {"pooled_seeds": "—", "pooled_ratio": "—", "decision": open_decision}
if confirmed:  # every seed the candidate has, discovery ones included (which flatter it)
    every_seed = recipes.seeds_of(recipe_results, fresh.recipe)
    pooled = {r.recipe: r for r in recipes.compare(recipe_results, confidence, every_seed)}
    cost = show_recipes.perplexity_cost(fresh, fresh_today)
    pooled_values = {
        "pooled_seeds": len(every_seed),
        "pooled_ratio": str(pooled[fresh.recipe].sd_ratio),
        "decision": show_recipes.adoption_text(
            CLAIMS.records["methods_recipe.recipe"].verdict, cost
        ),
    }
for name, value in pooled_values.items():
    glue(f"methods_recipe.recipe.{name}", value, display=False)

# %% [markdown]
# Over {glue:text}`methods_recipe.recipe.seeds` paired seeds, today's recipe gives the headline
# comparison a paired s.d. of {glue:text}`methods_recipe.recipe.today_sd` % of perplexity, while a run's
# last evaluations jitter by {glue:text}`methods_recipe.recipe.today_jitter` %: the noise lives
# {glue:text}`methods_recipe.recipe.where` (below a third of the paired s.d., jitter cannot be what
# separates the seeds). The best candidate on these seeds,
# *{glue:text}`methods_recipe.recipe.best`*, gives {glue:text}`methods_recipe.recipe.best_sd` %: a ratio of
# {glue:text}`methods_recipe.recipe.best_ratio` to today's, at a mean perplexity
# {glue:text}`methods_recipe.recipe.best_loss` from today's (both arms averaged): less noise is worth
# little if the models it compares are worse. In the figure each line is one seed: a recipe that
# cuts the noise draws the seeds' differences together.
#
# The best of several candidates looks better than it is, so a candidate is tested on seeds it
# was not picked on, and only there: without fresh seeds the claim *cannot decide*, whatever the
# discovery seeds show, and says what would decide it. The one named for confirmation, *{glue:text}`methods_recipe.recipe.confirm`*, was
# trained beside today's on fresh seeds {glue:text}`methods_recipe.recipe.confirm_seeds` (the figure's
# right panel; the table below):

# %% tags=["remove-input"]
if confirmed:
    display(plots.table(show_recipes.rows(list(confirmed), recipe_names, confidence)))
else:
    display(
        Markdown("No fresh seeds yet: `python -m ropebook recipes --confirm SCHEDULE` trains them.")
    )

# %% [markdown]
# There today's recipe gives {glue:text}`methods_recipe.recipe.confirm_today_sd` % and the candidate
# {glue:text}`methods_recipe.recipe.confirm_sd` %, a ratio of {glue:text}`methods_recipe.recipe.confirm_ratio`,
# so the claim that a recipe cuts the noise is **{glue:text}`methods_recipe.recipe.verdict`** (*held*
# if the ratio's interval lies wholly below 1, *not held* if wholly above; against
# {glue:text}`methods_recipe.recipe.best_ratio` for the best on the seeds it was picked on: the best of
# several looks better than it is). Over all {glue:text}`methods_recipe.recipe.pooled_seeds` seeds,
# the discovery seeds included (which flatter it), the ratio is
# {glue:text}`methods_recipe.recipe.pooled_ratio`. The candidate's mean perplexity on the fresh seeds
# is {glue:text}`methods_recipe.recipe.confirm_loss` from today's. Under the two recipes the headline
# itself reads {glue:text}`methods_recipe.recipe.today_difference` % (today's) and
# {glue:text}`methods_recipe.recipe.confirm_difference` % (the candidate) on these seeds.
# {glue:text}`methods_recipe.recipe.decision`

# %% [markdown]
# (methods-headline-study)=
# ## Does the candidate recipe change the headline?
#
# The comparison this section owns is the recipe's: the matched headline pair under the
# candidate the recipe study named for confirmation, beside the same pair under today's recipe
# on the same seeds, more than this build affords. The headline's own verdict, under today's
# recipe, is the {ref}`headline chapter's <p-rope-matched>`, decided on the GPU study's seeds;
# today's row here is the baseline the candidate is read against. It is not this run's
# measurement: it comes from a results file ({glue:text}`methods_recipe.study.provenance`), measured on
# the devices and date in its last column.

# %%
study_rows = show_recipes.headline_rows(
    recipe_results, NAMES, ablation.PAPER_TABLE2["Wiki"], confidence
)
plots.table(study_rows)

# %% tags=["remove-input"]
glue("methods_recipe.study.provenance", show_studies.provenance_text(recipe_results, recipe_stale),
     display=False)  # fmt: skip
study_columns = {"recipe": "recipe", "our paired Δ": "difference", "seeds": "seeds",
                 "detectable": "detectable", "reading": "reading", "paper Δ": "paper",
                 "paper Δ inside": "paper_inside"}  # fmt: skip
by_recipe = {"today": study_rows[0], "candidate": study_rows[1] if len(study_rows) > 1 else {}}
for key, row in by_recipe.items():
    for column, name in study_columns.items():
        glue(f"methods_recipe.study.{key}.{name}", str(row.get(column, "—")), display=False)

# %% [markdown]
# Under *{glue:text}`methods_recipe.study.candidate.recipe`*, whose runs end closer together,
# {glue:text}`methods_recipe.study.candidate.seeds` seeds give the headline
# {glue:text}`methods_recipe.study.candidate.difference` of perplexity and detect
# {glue:text}`methods_recipe.study.candidate.detectable` ({glue:text}`methods_recipe.study.candidate.reading`),
# at the cost in quality stated above; today's recipe, on
# {glue:text}`methods_recipe.study.today.seeds` seeds, gives {glue:text}`methods_recipe.study.today.difference`
# and detects {glue:text}`methods_recipe.study.today.detectable`. Is the paper's own gap of
# {glue:text}`methods_recipe.study.today.paper` (its Wiki column) inside the candidate's interval?
# {glue:text}`methods_recipe.study.candidate.paper_inside` (under today's recipe the headline chapter
# answers it, {ref}`p-rope-gpu-headline`). The paper's claim is an ordering at Gemma 2B's scale, so
# an interval that excludes its gap bounds the effect in our small models rather than refuting it.

# %% [markdown]
# The same pair under today's recipe was also trained on a GPU, on many more seeds (the
# {ref}`headline chapter <p-rope-gpu-headline>` sets it beside this build's result), and
# {glue:text}`methods_recipe.same_spec.seeds` of its seeds are the very specs the recipe study trained
# on this project's CPU: same initial weights, same batches, same code, other hardware and
# libraries. How far apart does one spec land on the two machines, against two seeds of a spec
# on one?

# %%
same_spec = show_recipes.same_spec_rows(recipe_results, gpu_matched, NAMES, confidence)
plots.table(same_spec)

# %% tags=["remove-input"]
sd_column = next(k for k in same_spec[0] if k.startswith("s.d."))
glue("methods_recipe.same_spec.seeds", same_spec[0]["runs"] // len(recipes.ARMS), display=False)
glue("methods_recipe.same_spec.runs", same_spec[0]["runs"], display=False)
glue("methods_recipe.same_spec.sd", same_spec[0][sd_column], display=False)
glue("methods_recipe.same_spec.seed_sd", same_spec[-1][sd_column], display=False)
glue("methods_recipe.same_spec.ratio", same_spec[-1]["ratio"], display=False)
glue("methods_recipe.same_spec.gpu", show_studies.provenance_text(gpu_matched, studies.stale(gpu_matched)),
     display=False)  # fmt: skip

# %% [markdown]
# Over {glue:text}`methods_recipe.same_spec.runs` runs, one spec's loss on the two machines differs
# with an s.d. of {glue:text}`methods_recipe.same_spec.sd` of perplexity; two seeds of one spec on one
# machine differ by {glue:text}`methods_recipe.same_spec.seed_sd` ({glue:text}`methods_recipe.same_spec.ratio`
# times as much). The change of machine alone (rounding, kernels, library versions) moves a model by
# the first of those, as {cite:t}`summers2021nondeterminism` found for any one-bit change: a
# model's seed names a distribution, not a model, so a build on another machine must expect
# its numbers to move by that much. Pairing holds within a machine; comparisons never pair
# across them. (GPU file: {glue:text}`methods_recipe.same_spec.gpu`.)

# %% [markdown]
# ## What we claim and what we measured

# %% tags=["remove-input"]
CLAIMS.glue()
