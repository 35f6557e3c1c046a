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
# # Positional heads over training
#
# {glue:md}`in_short`

# %% [markdown]
# The [positional heads chapter](positional_heads.ipynb) finds diagonal and previous-token heads
# in trained models, as {cite:t}`barbero2025round{Sec. 5}` find them in Gemma 7B
# {cite:p}`gemma2024gemma`, and measures that they sit on RoPE's fastest planes. Two questions
# are left that the paper's one final checkpoint cannot answer: do such heads *grow* during
# training, sharpening toward Gemma's, and do they *need* the fast planes (is the share a cause or
# a coincidence)? This chapter answers the first: it follows three head scores through training
# on the flagship models' snapshots. The second is the [next chapter](plane_map.ipynb)'s, which
# owns the book's plane ablations of its language models: it removes planes from the same
# flagship models at inference, a quarter at a time and one by one, and watches the heads and the
# loss.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu
regime = "flagship"  # in zoo.REGIMES: the models followed through training
n_seeds = 0  # in [0, inf): 0 uses the regime's seeds; more trains (cached) zoo seeds 0..n_seeds-1
n_windows = 32  # in [1, inf): held-out windows per snapshot for the head scores
window_seed = 0  # in [0, inf): numpy Generator seed for the windows and random sequences
induction_sequences = 16  # in [1, inf): repeated random sequences for the induction score
induction_level = 0.5  # in (0, 1]: induction score (attention on the induction target) of a head

# %% tags=["remove-input"]
import numpy as np
from IPython.display import display

from ropebook import claims, data, plots, zoo
from ropebook.analysis import dynamics as dy
from ropebook.present import decide
from ropebook.present import dynamics as show_dy

plots.setup()
if profile == "smoke":
    n_windows, induction_sequences = min(n_windows, 4), min(induction_sequences, 4)
seeds = tuple(range(n_seeds))
test_tokens = data.load_tokens("shakespeare", "test")

# %% [markdown]
# The chapter tests two claims, stated here with the rule that turns each one's evidence into
# a verdict (expand the cell to read them); the table at the end gives the verdicts.

# %% tags=["hide-input"]
CLAIMS = claims.ClaimSet(
    claims.ClaimSpec(
        "head_dynamics.over_training",
        f"Barbero et al. 2025, Sec. 5, Fig. 5; ours (training dynamics, {regime} regime)",
        "Over training, a RoPE model's strongest previous-token and diagonal heads sharpen more "
        "than NoPE's (the same model without rotation), toward Gemma 7B's positional heads",
        claims.given,  # dy.combined_verdict of the two RoPE − NoPE controlled trends
    ),
    claims.ClaimSpec(
        "head_dynamics.induction_over_training",
        "Olsson et al. 2022 (induction heads build on previous-token heads); ours (training "
        f"dynamics, {regime} regime)",
        "Over training, a RoPE model grows an induction (prefix-matching) head: its strongest "
        f"head's induction score rises more than NoPE's and ends at {induction_level:g} or more",
        claims.given,  # dy.level_verdict(trend, induction_level, rise=RoPE − NoPE verdict)
    ),
)
CLAIMS.basis = zoo.budget(profile, regime=regime)

# %% [markdown]
# ## Over training: do positional heads sharpen?
#
# Gemma 7B has sharp positional heads (Fig. 5: a diagonal head in the last layer, a
# previous-token head in the first), built, the paper argues, like Thm. 5.3's construction on
# the fastest planes. An untrained model has none: its attention is close to uniform. We follow
# three graded scores through training — the **strongest** head's mean attention on the previous
# token and on itself (the positional heads chapter's soft detector, on held-out windows), and its
# **induction**
# score: on `induction_sequences` sequences made of random tokens repeated twice (BOS, then
# $x_1 \dots x_n x_1 \dots x_n$), the mean attention from $x_i$'s second copy to $x_{i+1}$'s
# first, the token after the earlier occurrence: the prefix-matching score of
# {cite:t}`olsson2022induction`, about $1/n$ under uniform attention and 1 for a perfect induction
# head. The paper does not measure
# induction heads; they matter here because they are built *on* previous-token heads. Training
# **moves toward the Gemma result** if a score rises above the untrained model's.
#
# The models are the flagship ones of the `regime` parameter (the matched spectrum, whose
# slowest pair turns over the context about as often as Gemma 7B's over 8k tokens; params kept
# at step 0 and at log-spaced steps), with the seeds the zoo trains for them (`n_seeds` > 0
# picks seeds 0 .. n-1 instead). NoPE is the control (Prop. 5.2: no single NoPE head can be
# positional, though a deeper one may), and it decides the verdicts (below).

# %% tags=["hide-input"]
flagship = dy.load_models(zoo.FLAGSHIP, profile=profile, regime=regime, seeds=seeds or None)
flag_config = flagship["rope"][0].config
period = (flag_config.context - 1) // 2
flag_windows = data.sample_windows(
    test_tokens, flag_config.context, n_windows, np.random.default_rng([window_seed, 52])
)
repeats = dy.repeated_random_tokens(
    np.random.default_rng([window_seed, 53]), induction_sequences, period, flag_config.vocab_size
)
print(show_dy.describe(flagship, regime) + f"; induction sequences: BOS + 2 x {period} tokens")

# %% [markdown]
# Each panel line is one model and score against tokens seen (log axis; band: range over
# seeds; dashed: the untrained model). Look for the RoPE previous-token and induction lines to
# rise together.

# %%
head_runs = {
    name: dy.over_training(
        models, dy.positional_measure(flag_windows, repeats, period),
        toward={"previous-token": 1, "diagonal": 1, "induction": 1},
    )
    for name, models in flagship.items()
}  # fmt: skip
stats = ("previous-token", "diagonal", "induction")
head_trends = [dy.trend_test(run[s]) for run in head_runs.values() for s in stats]
display(show_dy.positional_chart([t for s in stats for t in dy.trajectories(head_runs, s)]))
plots.table(show_dy.trend_table(head_trends))

# %% [markdown]
# The trend table reads each model alone: a seed's untrained model against its last snapshot, a
# 95% interval over seeds of the change wholly above zero reading *moves toward the Gemma
# result*, wholly below *away*, containing zero *cannot decide* (always so with one seed).
# **The verdicts take RoPE's change minus NoPE's, seed by seed**, because attention sharpens as
# any transformer trains: only a sharpening beyond that of the same model without rotation is
# RoPE's doing. Growing an induction head asks more than a rise: the strongest head must also end
# with `induction_level` or more of its attention on the induction target (1 for a perfect
# induction head, about 1/n for uniform attention), so a last snapshot wholly below that level
# reads *not held* however the score moved; past it, a rise beyond NoPE's reads *held*, a rise
# short of NoPE's *partly*. A last snapshot whose interval straddles the level reads *not held*
# if the rise fell short of NoPE's (one part of the claim is false, the other unshown) and
# *cannot decide* otherwise.

# %%
head_control = dy.controlled_trends(head_runs, stats)
plots.table(show_dy.control_table(list(head_control.values())))

# %% tags=["remove-input"]
rope_heads = {t.statistic: t for t in head_trends if t.model == "rope"}
positional_stats = ("previous-token", "diagonal")
CLAIMS.record(
    "head_dynamics.over_training",
    **show_dy.control_claim(
        [head_control[s] for s in positional_stats if s in head_control],
        [rope_heads[s] for s in positional_stats], regime=regime,
    ),
)  # fmt: skip
induction = rope_heads["induction"]
induction_control = head_control.get("induction")
induction_verdict, induction_final = dy.level_verdict(
    induction,
    induction_level,
    rise=induction_control.verdict if induction_control else dy.UNDECIDED,
)
uniform = dy.uniform_induction_score(period)
distance = f"the last snapshot's distance from {induction_level:g}"
last = f"{induction.final:.3f} " + (induction_final.text if induction_final else "(one seed)")
rise = (
    induction_control.measured() if induction_control else "no NoPE control to set the rise against"
)
CLAIMS.record(
    "head_dynamics.induction_over_training",
    induction_verdict,
    f"{rise}; last snapshot {last} against the level {induction_level:g} (uniform attention "
    f"scores {uniform:.3f}) — alone: {induction.measured()}",
    interval=induction_control.difference.text if induction_control else induction.change.text,
    seeds=induction.n_seeds,
    basis=induction_control.basis() if induction_control else induction.basis(),
    to_decide=(show_dy.controlled_to_decide(induction_control) if induction_control
               else f"a NoPE control trained in the {regime} regime")
    + (f"; {decide.interval_to_decide(induction_final, induction_level, what=distance)}"
       if induction_final else ""),
)  # fmt: skip

# %% [markdown]
# A head that sharpens over training says what training builds, not what the head is built from.
# Whether these previous-token heads need the fast planes they sit on is tested by removing
# planes from the same final flagship models, in the [next chapter](plane_map.ipynb).

# %% [markdown]
# ## What we claim and what we measured

# %% tags=["remove-input"]
CLAIMS.glue()
