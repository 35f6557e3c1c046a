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
# # Does RoPE decay?
#
# {glue:md}`in_short`

# %% [markdown]
# A common justification for RoPE, going back to its authors {cite:p}`su2024roformer`, is that it makes
# attention *decay with distance*: the further a key is from a query, the smaller their score.
# The argument takes queries and keys that are constant, all-ones vectors.
# {cite:t}`barbero2025round{Sec. 3}` argue that this is an artefact of that choice:
#
# - **Prop. 3.1** — for any query there is a key whose score is largest at *any* chosen distance
#   $r$, not at distance $0$;
# - **Prop. 3.2** — for independent Gaussian queries and keys, the expected score is $0$ at every
#   distance: nothing to decay;
# - **Fig. 2** — numerically, all-ones queries and keys give a decaying curve (a), independent
#   Gaussian ones at every position do not (b); **Fig. 9** — nor does *one* Gaussian query and key
#   repeated along the sequence;
# - **Fig. 8 / App. B.3** — Random RoPE {cite:p}`ruoss2023randomized`, which trains on sorted positions
#   sampled from a longer range $[0, L)$, makes the all-ones curve decay *faster* as $L$ grows,
#   and leaves the Gaussian curves alone.
#
# We check the two propositions with sympy and by simulation, redraw Figs 2, 8 and 9 with the
# paper's set-ups kept apart ($d = 128$, $\theta = 10{,}000$), and then ask the question of the
# book's *trained* models: do their queries and keys produce scores that decay with distance?
#
# **Conventions.** The *activation* of a query at position $i$ and a key at position $j \le i$ is
# the pre-softmax RoPE score without the $1/\sqrt d$ scale, $a_{ij} = q_i^\top R^{\,j-i} k_j$
# (the paper's Eq. 3). The *distance* is $r = i - j \ge 0$, how far back the key is; so
# $j - i = -r$.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu
seed = 0  # in [0, inf): numpy Generator seed of every synthetic draw
head_dim = 128  # in [2, inf): d of the synthetic set-ups (even; the paper's is 128)
base = 10_000.0  # in (1, inf): theta of the synthetic set-ups (the paper's)
seq_len = 1024  # in [4, inf): N, tokens in the synthetic sequences; distances 0 .. N-1
n_draws = 64  # in [2, inf): independent draws per synthetic set-up (the bands)
prop31_queries = 20  # in [1, inf): random queries per distance in the Prop. 3.1 check
mc_samples = 500  # in [2, inf): Prop. 3.2, fresh (q, k) pairs per distance
random_rope_factors = [1, 2, 4, 8]  # in [1, inf): Random RoPE ranges L as multiples of N
short_window = 16  # in [1, inf): "short" distances are r < short_window
decay_threshold = 0.5  # in (0, 1): decay means long-range mean square below this share of short
n_windows = 64  # in [1, inf): held-out Shakespeare windows per trained model
trained_short = 8  # in [1, inf): trained models, "short" distances 1 .. trained_short
model_names = ["rope", "p-rope-0.75"]  # in zoo.SPECS: zoo models whose activations we measure
n_model_seeds = 0  # in [0, inf): 0 uses the profile's seeds; n trains (cached) seeds 0 .. n-1
regime = "flagship"  # in zoo.REGIMES: models of "Over training" (flagship: 8 snapshots each)

# %% tags=["hide-input"]

import matplotlib.pyplot as plt
import numpy as np
from IPython.display import display
from myst_nb import glue

from ropebook import claims, data, decay_study, decay_training_study, plots, zoo
from ropebook.analysis import Estimate, decay
from ropebook.analysis import dynamics as dy
from ropebook.present import decay as show
from ropebook.present import decide
from ropebook.present import dynamics as show_dy
from ropebook.proofs import decay as decay_proofs

plots.setup()
if profile == "smoke":
    seq_len, n_draws, prop31_queries = min(seq_len, 256), min(n_draws, 24), min(prop31_queries, 5)
    mc_samples, n_windows = min(mc_samples, 200), min(n_windows, 8)
rng = np.random.default_rng(seed)
distances = np.arange(seq_len)
short, long = slice(0, short_window), slice(seq_len // 2, seq_len)
print(f"d = {head_dim}, theta = {base:,.0f}, N = {seq_len}, {n_draws} draws per set-up")

CLAIMS = claims.ClaimSet(
    claims.ClaimSpec(
        "decay.prop31",
        "Barbero et al. 2025, Prop. 3.1, App. A.1",
        "With k = R^r q the softmax of a RoPE query peaks exactly at distance r",
        kind=claims.PROVED,
    ),
    claims.ClaimSpec(
        "decay.lemma_a1",
        "Barbero et al. 2025, Lemma A.1, App. A.1",
        "n·g ≡ 0 (mod 2π) only for n = 0 when g ≠ 0 is rational (e.g. RoPE's g_1 = 1)",
        kind=claims.PROVED,
    ),
    claims.ClaimSpec(
        "decay.prop32",
        "Barbero et al. 2025, Prop. 3.2, App. A.1",
        "For independent Gaussian q, k, E[qᵀRʳk] = 0 at every distance r",
        kind=claims.PROVED,
    ),
    claims.ClaimSpec(
        "decay.fig2_ones_decay",
        "Barbero et al. 2025, Fig. 2(a); Su et al. 2024",
        "All-ones q and k give activations that decay with distance",
        kind=claims.CHECKED,
    ),
    claims.ClaimSpec(
        "decay.fig2_gaussian_no_decay",
        "Barbero et al. 2025, Fig. 2(b)",
        "Gaussian q, k drawn afresh at every position show no decay",
        claims.interval_above(decay_threshold),
        kind=claims.CHECKED,
    ),
    claims.ClaimSpec(
        "decay.fig9",
        "Barbero et al. 2025, Fig. 9, App. B.4",
        "One Gaussian q and one Gaussian k repeated along the sequence show no clear decay",
        claims.interval_above(decay_threshold),
        kind=claims.CHECKED,
    ),
    claims.ClaimSpec(
        "decay.fig8_random_rope",
        "Barbero et al. 2025, Fig. 8, App. B.3",
        "Random RoPE: a larger L makes the all-ones curve decay faster; "
        "Gaussian curves are unaffected",
        claims.given,  # decay.random_rope_verdict: held, partly or not held
        kind=claims.CHECKED,
    ),
    claims.ClaimSpec(
        "decay.trained",
        "Barbero et al. 2025, Sec. 3 (beyond the paper: the book's models)",
        "Trained RoPE queries and keys need not decay: some layer of a trained RoPE model is "
        "shown not to decay (its mean activation grows with distance, or stays within a margin "
        "fixed in advance)",
        decay.trained_verdict,  # evidence: the classes of the RoPE models' layers
    ),
    claims.ClaimSpec(
        "decay.over_training",
        f"Barbero et al. 2025, Sec. 3; ours (training dynamics, {regime} regime)",
        "Training does not push every layer of a RoPE model toward decay: the least-decaying "
        "layer's decay falls over training more than NoPE's (the same model without rotation), "
        "as Gemma 7B's heads exploit non-decay",
        claims.given,  # dy.controlled_trend(rope, nope).claim_verdict: paired over seeds
    ),
)
CLAIMS.basis = zoo.budget(profile)  # the lesson-regime models behind seed intervals

# %% [markdown]
# ## Prop. 3.1: RoPE can peak at any distance
#
# Take any query $q = \psi \neq 0$ and a distance $r$, and set the key to $k = R^{\,r}\psi$ (the
# paper's construction, App. A.1). A query at $i$ and this key at $j$ score
# $\psi^\top R^{\,j-i} R^{\,r}\psi = \sum_k \lVert\psi^{(k)}\rVert^2\cos\big((j-i+r)\,g_k\big)$,
# a weighted sum of cosines that reaches the Cauchy–Schwarz bound $\lVert\psi\rVert^2$ only when
# every cosine is $1$: at $j - i = -r$, i.e. at **distance $r$ back from the query** (the minus
# sign is the paper's: $j \le i$). That the maximum is reached nowhere else is the paper's
# Lemma A.1; sympy checks it through the fastest chunk, $g_1 = \theta^0 = 1$, whose cosine is $1$
# only at multiples of $2\pi$ — never at a non-zero integer (this needs $\psi^{(1)} \neq 0$,
# true with probability one for the random queries below).

# %%
decay_proofs.prop31()

# %%
decay_proofs.lemma_a1()

# %% [markdown]
# Lemma A.1 guarantees a *unique* maximum, not a *clear* one. The fastest chunk alone comes back
# very close to alignment: over $0 < n < N$ its closest return, the $n$ that minimises
# $1 - \cos n$, is computed below. What keeps the Prop. 3.1 peak sharp in practice is that the
# other chunks do not return at the same time.

# %%
closest_return, return_gap = decay.closest_return(seq_len)  # fastest chunk, g_1 = 1
print(
    f"fastest chunk: closest return to alignment for 0 < n < {seq_len} at n = {closest_return} "
    f"(≈ {closest_return / (2 * np.pi):.3f} turns), 1 - cos(n) = {return_gap:.1e}"
)

# %% tags=["remove-input"]
CLAIMS.record(
    "decay.lemma_a1",
    return_gap > 0,
    f"sympy proof; closest return of the g_1 = 1 chunk for 0 < n < {seq_len}: "
    f"n = {closest_return}, 1 − cos n = {return_gap:.1e} > 0",
)

# %% [markdown]
# Now numerically, through the model's own code path (`rope.apply_rope` in float32): for a grid of
# distances $r$ (0, 1, 2 and nine roughly geometric steps up to $N-1$) and `prop31_queries`
# random Gaussian queries $\psi$ per distance, the query sits at the last position $i = N-1$,
# every earlier position holds the key $R^{\,r}\psi$, and we take the softmax of the scaled
# scores $a_{ij}/\sqrt d$ over $j \le i$ (the causal row). The table gives, per distance, how
# often the softmax peaks at $r$; how far the score there is from the bound $\lVert q\rVert^2$;
# the mean attention on the target; and the largest runner-up score relative to the bound.

# %%
prop31 = decay.prop31_softmax_peaks(rng, seq_len, prop31_queries, head_dim, base=base)
show.peak_table(prop31)

# %% tags=["remove-input"]
CLAIMS.record(
    "decay.prop31",
    prop31.hits == prop31.total,
    f"sympy proof; argmax at r in {prop31.hits} of {prop31.total} (d = {head_dim}, "
    f"r up to {prop31.max_distance}); runner-up at most {1 - prop31.worst_gap:.3f}·‖q‖²",
)

# %% [markdown]
# The peak is exact in every case, and the score there is $\lVert q\rVert^2$ up to float32
# rounding; the runner-up column shows how far below the bound the next-best key stays. The
# attention on the target is far from one-hot here (the scores are scaled by $1/\sqrt d$ and
# $\lVert\psi\rVert^2 \approx d$): Prop. 3.1 is about *where* the softmax peaks, not how sharply —
# the sharpness grows with $\lVert\psi\rVert^2$ (the positional-heads chapter measures that).
# Three example rows, one query with keys $R^{\,r}q$ for three distances $r$ (dotted lines):

# %%
example_q = rng.standard_normal(head_dim)
show.plot_prop31_examples(example_q, (3, seq_len // 8, (3 * seq_len) // 4), seq_len, base=base)
plt.show()

# %% [markdown]
# ## Prop. 3.2: Gaussian queries and keys have nothing to decay
#
# For independent $q, k \sim \mathcal N(0, I)$, $q^\top R^{\,r} k$ is bilinear in $q$ and $k$, so
# by linearity and independence its mean is $\sum_{ab} (R^r)_{ab}\,\mathbb E[q_a]\,\mathbb E[k_b]
# = 0$, whatever $r$. The paper's own step — $R^r k$ is again standard Gaussian because
# $\rho\rho^\top = I$ — is checked too, and so is a fact the paper does not state but its Fig. 2(b)
# shows: the *spread* $\mathbb E[(q^\top R^r k)^2] = d$ does not depend on $r$ either. sympy
# computes the expectations with `sympy.stats` Gaussian random variables:

# %%
decay_proofs.prop32()

# %% [markdown]
# **Monte Carlo.** For every distance $r = 0, \dots, N-1$ we draw `mc_samples` *fresh* pairs
# $(q, k)$, so the $N$ estimates are independent, and form a Student-t 95% interval for
# $\mathbb E[q^\top R^{-r} k]$. If the mean is $0$ at every $r$, each interval contains $0$ with
# probability 0.95, so the number that do is Binomial$(N, 0.95)$. We call the proposition
# reproduced if that count is at least the lower end of the binomial's central 99% range — fewer
# would mean the intervals miss $0$ more often than chance allows. The variance of the samples at
# each distance should sit near $d$ (the spread identity) at every $r$.

# %%
mc = decay.gaussian_activation_samples(rng, distances, head_dim, mc_samples, base=base)  # [M, N]
prop32 = decay.zero_mean_check(mc, confidence=0.95, mass=0.99)
print(f"{show.zero_mean_summary(prop32)} (theory: variance d = {head_dim} at every r)")

# %% tags=["remove-input"]
CLAIMS.record(
    "decay.prop32",
    prop32.held,
    f"sympy proof; {prop32.covered} of {seq_len} Monte-Carlo 95% intervals contain 0 "
    f"({mc_samples} pairs each; 99% binomial range {prop32.binomial_low}-{prop32.binomial_high})",
)

# %%
show.plot_zero_mean(prop32, mc_samples)
plt.show()

# %% [markdown]
# ## Fig. 2 and Fig. 9: three set-ups, three answers
#
# The paper's synthetic experiment has one query attending back over a sequence of $N$ keys. We
# keep its three set-ups apart:
#
# - **(a) all-ones** — the same all-ones query and key at every position, the argument of
#   {cite:t}`su2024roformer`; its curve is the closed form $\sum_k 2\cos(r g_k)$ (checked by sympy below and, against the
#   float32 code path, in the test suite);
# - **(b) Gaussian, fresh per position** — independent $\mathcal N(0, I)$ query and key at every
#   position (Fig. 2b);
# - **(Fig. 9) Gaussian, repeated** — *one* Gaussian query and *one* Gaussian key, repeated along
#   the sequence.
#
# "Appropriate normalisation" (the paper's words): every query and key is scaled to unit norm, so
# the activation is the cosine between the rotated query and key, $1$ for aligned vectors. The
# curve is the activation of the query at the last position with the key $r$ tokens before it;
# bands span the 5th–95th percentile over `n_draws` independent draws, the line is their mean.

# %%
decay_proofs.ones_closed_form()

# %% [markdown]
# Each set-up gives `n_draws` curves, one per draw of its vectors; the all-ones curves are all
# the same, and must match the closed form divided by $d$ (unit vectors) up to float32 rounding.

# %%
curves = {}
for kind in decay.SETUPS:
    q_seq, k_seq = decay.setup_vectors(kind, n_draws, seq_len, head_dim, rng)  # [S, N, d]
    curves[kind] = decay.last_query_profile(q_seq, k_seq, distances, base=base)  # [S, N]
ones_closed = decay.expected_ones_activation(distances, head_dim, base) / head_dim
ones_error = float(np.abs(curves["all-ones"] - ones_closed).max())
print(f"all-ones curve vs closed form sum_k 2 cos(r g_k) / d: max deviation {ones_error:.1e}")

# %%
show.plot_setups(curves, head_dim=head_dim, base=base)
plt.show()

# %% [markdown]
# Only the all-ones curve decays: it falls from $1$ towards a slowly shrinking floor (the slow
# chunks with $r g_k \ll 1$ still agree) with ripples from the fast chunks. Both Gaussian set-ups
# scatter around $0$ with the same width at every distance — about $1/\sqrt d$, as the variance
# identity above predicts for unit vectors. To put a number on "decays" that applies to all three
# set-ups, we compare the mean square activation (over draws) at long distances $r \ge N/2$ with
# that at short ones $r <$ `short_window`: a ratio below `decay_threshold` counts as decay.
# Intervals are a percentile bootstrap over draws (the all-ones set-up has no randomness).

# %%
boot_rng = np.random.default_rng([seed, 2])
ratios = decay.decay_ratios(curves, short, long, boot_rng)  # kind -> (ratio, low, high)
ones_half = decay.half_distance(ones_closed)  # first r where the all-ones curve halves
show.ratio_table(ratios, decay_threshold)

# %% tags=["remove-input"]
ones_ratio = ratios["all-ones"][0]
fresh, repeated = ratios["Gaussian, fresh per position"], ratios["Gaussian, repeated"]
CLAIMS.record(
    "decay.fig2_ones_decay",
    ones_ratio < decay_threshold,
    f"mean-square ratio long/short {ones_ratio:.3f} (decay below "
    f"{decay_threshold}); falls below half its value at r = {ones_half}",
)
for claim_id, (value, low, high) in (
    ("decay.fig2_gaussian_no_decay", fresh),
    ("decay.fig9", repeated),
):
    CLAIMS.record(
        claim_id,
        (low, high),
        f"mean-square ratio long/short {value:.3f}",
        interval=f"95% bootstrap [{low:.3f}, {high:.3f}]",
        seeds=n_draws,
        basis=f"{n_draws} random draws of q and k (no trained model)",
        # the bootstrap interval read as a t-interval over the draws: more draws narrow it
        to_decide=decide.interval_to_decide(
            Estimate(value, low, high, "bootstrap", n_draws), decay_threshold,
            what=f"the ratio's distance from {decay_threshold}", samples="random draws",
        ),
    )  # fmt: skip

# %% [markdown]
# **Explore the decay.** {cite:t}`su2024roformer{Sec. 3.4.3}` bound the score of *any* query and key by
# $\max_k |h_{k+1} - h_k| \sum_j |S_j(r)|$, where $h_k$ is the query times the conjugate key in
# plane $k$ (as complex numbers) and $S_j(r) = \sum_{k<j} e^{\,i r g_k}$. The chart recomputes,
# in your browser, the all-ones curve of panel (a) (solid) and that bound relative to its value at
# $r = 0$ (dashed) for the $d$, $\theta$ and largest distance on its sliders, starting at this
# chapter's. The shaded band, $\pm 1/\sqrt d$, is where the Gaussian set-ups scatter. Raise
# $\theta$ and the all-ones curve settles higher: more planes turn too slowly to disagree within
# the distances shown.

# %%
from ropebook.present import explorers

explorers.decay_explorer(head_dim, base, seq_len)

# %% [markdown]
# ## Fig. 8 / App. B.3: Random RoPE
#
# {cite:t}`ruoss2023randomized` train with *randomised positions*: for a sequence of $N$ tokens they draw
# $N$ distinct positions uniformly from $[0, L)$, $L > N$, sort them, and give RoPE those instead
# of $0, \dots, N-1$. Consecutive tokens are then about $L/N$ positions apart, so a token
# distance $r$ becomes a position distance of about $rL/N$. {cite:t}`barbero2025round{App. B.3}` point out
# that this makes the all-ones curve decay *faster* in token distance, while Gaussian curves do
# not change. We redraw both set-ups for $L \in$ `random_rope_factors` $\times N$ ($L = N$ is
# plain RoPE), with fresh positions for every draw.

# %%
random_curves = {}  # (factor, kind) -> [S, N]
for factor in random_rope_factors:
    positions = decay.random_rope_positions(rng, seq_len, int(factor * seq_len), size=n_draws)
    for kind in decay.SETUPS[:2]:  # all-ones and Gaussian, fresh per position
        q_seq, k_seq = decay.setup_vectors(kind, n_draws, seq_len, head_dim, rng)
        random_curves[factor, kind] = decay.last_query_profile(q_seq, k_seq, positions, base=base)

# %% [markdown]
# Panel (a) shows the all-ones curves as above. Panel (b) shows the Gaussian curves by their
# spread (root mean square over draws at each distance, smoothed over `short_window` distances),
# since their mean is $0$ by Prop. 3.2; the dashed line is the spread $1/\sqrt d$ that the variance
# identity predicts at every distance.

# %%
show.plot_random_rope(
    random_curves, random_rope_factors, short_window=short_window, head_dim=head_dim
)
plt.show()

# %% [markdown]
# The decay rate, measured: for each draw, the first token distance at which the all-ones curve
# drops below half its value at $0$ (mean and t-interval over draws; a draw that never halves
# counts as $N$), next to the plain-RoPE value divided by $L/N$ (where it would sit if Random
# RoPE simply stretched distances by $L/N$), and the mean all-ones activation at $r \ge N/2$. The
# second table gives the mean-square ratio of the Gaussian set-up, as above.

# %%
random_rope = decay.random_rope_summary(
    random_curves, random_rope_factors, ones_half, short, long, boot_rng
)
show.random_rope_tables(random_rope)

# %% tags=["remove-input"]
CLAIMS.record(
    "decay.fig8_random_rope",
    decay.random_rope_verdict(random_rope, decay_threshold),
    "all-ones half-distance "
    + ", ".join(f"{row.factor}N: {row.half[0]:.1f}" for row in random_rope)
    + " tokens; Gaussian ratio > "
    + f"{decay_threshold} at every L: {decay.gaussian_unchanged(random_rope, decay_threshold)}",
    seeds=n_draws,
    basis=f"{n_draws} random draws of q and k (no trained model)",
)

# %% [markdown]
# Random RoPE compresses the all-ones curve along the token axis by about $L/N$: the measured
# half-distances track the plain-RoPE value divided by $L/N$, and the all-ones activation far away
# moves towards $0$ as $L$ grows (the paper: "all curves seem to finally converge around 0"). The
# Gaussian spread stays at $1/\sqrt d$ for every $L$: for vectors that are not aligned to begin
# with, randomising positions changes nothing about decay.

# %% [markdown]
# ## Beyond the paper: do *trained* queries and keys decay?
#
# The synthetic set-ups bracket the question; the book's models answer it for learned vectors. For
# each model in `model_names` (every seed of the profile) we run held-out Shakespeare windows (the
# test split, never trained on) of the training context length, read every layer's rotated queries
# and keys (`internals["q_rot"], ["k_rot"]`), and average the activation $q_i^\top R^{\,j-i} k_j$
# (no $1/\sqrt d$) over all queries $i$, heads and windows, for each distance $r = i - j$. This is
# the trained counterpart of the curves above: if RoPE made scores decay, these curves would fall.

# %%
seeds = zoo.PROFILES[profile].seeds if n_model_seeds == 0 else tuple(range(n_model_seeds))
test_tokens = data.load_tokens("shakespeare", "test")
trained = {}  # (name, seed) -> [layers, windows, T], mean over heads
for name in model_names:
    for s in seeds:
        m = zoo.load(name, seed=s, profile=profile, progress=False)
        trained[name, s] = decay.held_out_curves(m, test_tokens, n_windows, seed)
n_layers, context = trained[name, s].shape[0], m.config.context
print(
    f"{len(model_names)} models x {len(seeds)} seed(s), {n_layers} layers, "
    f"{n_windows} windows of {context} tokens, head_dim {m.config.head_dim}"
)

# %% [markdown]
# The chart shows the mean over seeds and windows, one line per layer, at every distance below 32
# and about 96 more spread over the rest of the context (hover a line to read its values):

# %%
show.trained_chart(trained, model_names, seeds)

# %% [markdown]
# Each layer's statistic is its **relative contrast**: the mean activation at short distances
# ($1 \le r \le$ `trained_short`) minus that over the last quarter of the context, divided by the
# layer's mean absolute activation (so that larger norms do not make a larger contrast). A layer
# **decays** if the interval of its contrast lies wholly above $0$ and **grows** if wholly
# below. The claim below may pick any of the {glue:text}`decay.family` layers of the RoPE
# models, so each interval is a {glue:text}`decay.confidence`% one (Bonferroni): some layer then
# turns out not to decay by chance alone no more often than one 95% interval would allow. An interval that contains $0$ is **flat** only if it also lies within
# $\pm${glue:text}`decay.margin` — a margin fixed before the data: a tenth of the layer's own
# mean absolute activation. For scale, the all-ones set-up, the argument for decay, gives a
# contrast of {glue:text}`decay.ones_contrast:.2f` by the same measure at this model's head size,
# base and context, so a flat layer decays, if at all, by a small fraction of what that argument
# predicts. An interval that contains $0$ and reaches past the margin is **uncertain**: the run
# cannot tell decay from none. The interval is over training seeds when the profile has several;
# with one seed it is over the held-out windows (so it reflects text, not training, variability
# — said so under the table).
#
# The claim is about RoPE, so it is decided on the fully rotary models of `model_names` (here
# {glue:text}`decay.rope_models`; 0.75-RoPE is shown beside, but its unrotated planes cannot
# decay by construction): **held** if some layer is *shown* not to decay (grows, or flat), **not
# held** if every layer decays, **cannot decide** if the layers that do not decay are merely
# uncertain.

# %%
rope_models = [n for n in model_names if zoo.ALL_SPECS[n].get("encoding") == "rope"]
ones_contrast = decay.ones_contrast(m.config.head_dim, m.config.rope_base, context, trained_short)
glue("decay.margin", decay.TRAINED_MARGIN, display=False)
glue("decay.ones_contrast", ones_contrast, display=False)
glue("decay.rope_models", ", ".join(rope_models) or "none", display=False)
n_family = max(len(rope_models), 1) * m.config.n_layers  # the layers the claim may pick from
family = decay.family_confidence(n_family)
glue("decay.family", n_family, display=False)
glue("decay.confidence", f"{100 * family:.4g}", display=False)
trained_decay = decay.trained_decay(trained, model_names, seeds, trained_short, confidence=family)
print(show.trained_summary(trained_decay))
show.trained_table(trained_decay)

# %% [markdown]
# A family-wise interval over three seeds is wide. A study kept in the repository
# (`data/results/decay_study.json`, made by `python -m ropebook decay_study`) measured the same
# curves, on the same held-out windows, for many more seeds of the same two models. Where its runs
# are the models this build trains (the same profile, every spec hash today's, the same windows)
# and `n_model_seeds` is left at 0, the verdict rests on it, with this build's own seeds beside;
# elsewhere this build's seeds decide. Here: {glue:text}`decay.kept.basis`.

# %%
kept_decay, kept_basis = None, "n_model_seeds is set: this run's seeds decide"
if not n_model_seeds:
    kept_curves, kept_basis = decay_study.deciding_curves(
        decay_study.kept(), profile, n_windows=n_windows, window_seed=seed, models=model_names
    )
    if kept_curves:
        kept_trained, kept_seeds = kept_curves
        kept_decay = decay.trained_decay(
            kept_trained, model_names, kept_seeds, trained_short, confidence=family
        )
        print(show.trained_summary(kept_decay))
        display(show.trained_table(kept_decay))
deciding_decay = kept_decay or trained_decay
glue("decay.kept.basis", kept_basis if kept_decay else f"this build's seeds ({kept_basis})",
     display=False)  # fmt: skip

# %% tags=["remove-input"]
CLAIMS.record(
    "decay.trained",
    deciding_decay.behaviours(rope_models),
    show.trained_measured(deciding_decay, rope_models)
    + f"; the all-ones set-up's contrast here {ones_contrast:.2f}"
    + (f"; this build's {len(seeds)} seeds, beside: " + show.trained_summary(trained_decay, rope_models)
       if kept_decay else ""),
    seeds=deciding_decay.n if kept_decay else len(seeds),
    basis=kept_basis if kept_decay else None,
    to_decide=show.trained_to_decide(deciding_decay, rope_models)
    if rope_models
    else "a fully rotary model (encoding 'rope') in model_names",
)  # fmt: skip

# %% [markdown]
# Read the curves with the synthetic figures in mind: a trained layer whose mean activation falls
# with distance behaves like the all-ones set-up (its queries and keys are, on average, aligned
# and the rotation slowly misaligns them); a flat or rising layer behaves like the Gaussian
# set-ups. The table above decides each layer from the data; in p-RoPE the slowest frequencies do
# not rotate at all, so whatever those chunks contribute is the same at every distance. The
# Gaussian set-ups show that RoPE leaves a model free to choose, layer by layer; whether these
# small models' trained layers chose decay is what the verdict above records, and it may well
# differ from Gemma 7B's.

# %% [markdown]
# ## Over training: does training make every layer decay?
#
# The paper's point (Sec. 3) is that RoPE need not make attention decay with distance, and that
# Gemma 7B's heads exploit this: "there are many situations in which this decay does *not*
# occur". The table above is one snapshot of a finished model; here we follow the same
# statistic through training. For every layer we take the *decay contrast*, the mean activation
# at $1 \le r \le$ `trained_short` minus that over the last quarter of the context, divided by
# the layer's mean absolute activation (so that growing norms do not fake a trend), and keep
# the **least-decaying layer**: the claim "not every layer decays" is about it. Training
# **moves toward the Gemma result** if that layer's contrast *falls* from the untrained model's
# (a layer keeps or gains long-range activation); if it rises, training pushes every layer
# toward decay, away from it.
#
# The models are the flagship ones of the `regime` parameter (matched spectrum: the slowest
# pair turns over the context about as often as Gemma 7B's over 8k tokens; params kept at
# log-spaced steps and step 0), with the seeds the zoo trains for them (`n_model_seeds` > 0
# picks seeds 0 .. n-1 instead). NoPE is the control: it has no rotation to decay with, and it
# decides the verdict (below).

# %% tags=["hide-input"]
flagship = dy.load_models(
    zoo.FLAGSHIP, profile=profile, regime=regime, seeds=seeds if n_model_seeds else None
)
flag_context = flagship["rope"][0].config.context
flag_windows = data.sample_windows(
    test_tokens, flag_context, n_windows, np.random.default_rng([seed, 8])
)
print(show_dy.describe(flagship, regime))

# %% [markdown]
# The chart shows the least-decaying layer's contrast against tokens seen (log axis), one line
# per model (band: range over seeds), the untrained models dashed and zero, "no decay", in grey.

# %%
decay_runs = {
    name: dy.over_training(
        models, dy.decay_measure(flag_windows, trained_short),
        toward={"least-decaying layer": -1}, reference={"least-decaying layer": 0.0},
    )
    for name, models in flagship.items()
}  # fmt: skip
decay_trends = [dy.trend_test(run["least-decaying layer"]) for run in decay_runs.values()]
display(show_dy.decay_chart(dy.trajectories(decay_runs, "least-decaying layer")))
plots.table(show_dy.trend_table(decay_trends))

# %% [markdown]
# The table above reads each model alone: each seed's untrained model against its last
# snapshot, a 95% interval over seeds of the change wholly below zero reading *moves toward the
# Gemma result*, wholly above *away*, containing zero *cannot decide* (always so with one seed);
# Spearman's $\rho$ with tokens seen says whether the change is steady. **The verdict is
# RoPE's change minus NoPE's, seed by seed**, because a fall that NoPE shows too is what
# training does to any attention layer, not what RoPE's rotation lets it do: the same reading
# on that paired difference decides it.

# %%
decay_control = dy.controlled_trends(decay_runs, ["least-decaying layer"])
plots.table(show_dy.control_table(list(decay_control.values())))

# %% [markdown]
# A few flagship seeds give a wide interval of that difference (its minimum detectable size is
# in the table), and a flagship model costs too much to train many in a build. A study kept in
# the repository (`data/results/decay_training_study.json`, made by
# `python -m ropebook decay_training_study`) follows the same statistic through training, on the
# same held-out windows and short distances, for RoPE and NoPE on the seeds its plan set before
# its data: enough to detect, at 80% power, a difference of one unit of the contrast (a whole mean
# absolute activation of the layer) at the s.d. of the paired difference the cpu build's three
# seeds measured. Where its runs are the models this build trains (the same profile and regime,
# every spec hash today's, the same windows and short distances), it pairs all the seeds its plan
# set and `n_model_seeds` is left at 0, the verdict rests on it, with this build's own seeds
# beside; elsewhere this build's seeds decide. Here: {glue:text}`decay.training_kept.basis`.

# %%
kept_runs, kept_training_basis = None, "n_model_seeds is set: this run's seeds decide"
if not n_model_seeds:
    kept_runs, kept_training_basis = decay_training_study.deciding_runs(
        decay_training_study.kept(), profile, regime=regime, n_windows=n_windows,
        window_seed=seed, trained_short=trained_short,
    )  # fmt: skip
if kept_runs:
    kept_control = dy.controlled_trends(kept_runs, ["least-decaying layer"])
    display(plots.table(show_dy.control_table(list(kept_control.values()))))
glue("decay.training_kept.basis", kept_training_basis if kept_runs
     else f"this build's seeds ({kept_training_basis})", display=False)  # fmt: skip

# %% tags=["remove-input"]
rope_decay = next(t for t in decay_trends if t.model == "rope")
over_training = show_dy.control_claim(list(decay_control.values()), [rope_decay], regime=regime)
if kept_runs:
    kept_rope = dy.trend_test(kept_runs["rope"]["least-decaying layer"])
    over_training = decay_training_study.beside(
        show_dy.control_claim(list(kept_control.values()), [kept_rope], regime=regime),
        list(decay_control.values()), kept_training_basis,
    )  # fmt: skip
CLAIMS.record("decay.over_training", **over_training)

# %% [markdown]
# ## What we claim and what we measured
#
# The paper gives no numbers for Figs 2, 8 and 9, only their shapes; each claim below states the
# shape it asserts and the number that tests it.

# %% tags=["remove-input"]
CLAIMS.glue()
