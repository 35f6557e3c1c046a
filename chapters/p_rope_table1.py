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
# # p-RoPE: keep the fast frequencies, free the slow ones
#
# {glue:md}`in_short`

# %% [markdown]
# The book so far splits RoPE's planes by speed. The **fast** planes turn by about a radian per
# token: a query and key that agree in them score highest at one exact distance, which is how a
# head attends to "the previous token" {cite:p}`barbero2025round{Thm 5.3}`. The **slow** planes barely
# turn over a training context, so a head can use them to match *content* whatever the distance —
# but only approximately: over long enough distances every plane turns, and Thm 6.1 shows that a
# semantic match carried by a rotating plane can always be broken.
#
# Sec. 6.1 of the paper turns this into an encoding. **p-RoPE** keeps the fastest fraction $p$
# of RoPE's frequencies and sets the slowest $1-p$ to zero, so those planes are never rotated:
# $p = 0$ is NoPE and $p = 1$ is RoPE. The paper sums up what each encoding can build in its
# Table 1; this chapter backs each of its cells with a check on the very rotation code the
# models use. Every claim here is a check of a construction (it fails only if the code is
# wrong), not a finding. Whether p-RoPE trains better — the paper's Table 2 — is the
# [next chapter](p_rope.ipynb)'s question.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu
max_factor = 8  # in [1, inf): longest sequence Table 1 is checked on, in training contexts
epsilon = 0.01  # in (0, 1): Table 1 constructions must reach attention > 1 - epsilon

# %% tags=["hide-input"]
import numpy as np
from myst_nb import glue

from ropebook import claims, plots, rope, zoo
from ropebook.analysis import ablation
from ropebook.present import ablation as show

plots.setup()
model_config, _ = zoo.configs("p-rope-0.75", profile=profile)
head_dim, context, base = model_config.head_dim, model_config.context, model_config.rope_base
glue("p_rope_table1.context", context, display=False)
print(f"profile {profile!r}: head_dim {head_dim} ({head_dim // 2} planes), context {context}")

# %% [markdown]
# The checks this chapter makes, each with the rule that decides it (expand the cell); the table
# at the end gives what each found.

# %% tags=["hide-input"]
PAPER = "Barbero et al. 2025"
CLAIMS = claims.ClaimSet(
    claims.ClaimSpec(
        "p_rope_table1.table1_positional", f"{PAPER}, Table 1, Thm. 5.3, Prop. 5.2",
        "p-RoPE can still build sharp diagonal and previous-token heads (on its fast planes); "
        "NoPE cannot",
        claims.holds, kind=claims.CHECKED,
    ),
    claims.ClaimSpec(
        "p_rope_table1.table1_semantic", f"{PAPER}, Table 1, Thm. 6.1",
        "p-RoPE's free planes and NoPE's planes are exactly distance-invariant semantic channels; "
        "RoPE's slowest plane is not",
        claims.holds, kind=claims.CHECKED,
    ),
    claims.ClaimSpec(
        "p_rope_table1.table1", f"{PAPER}, Table 1",
        "Table 1: NoPE positional ✗ semantic ✓; RoPE ✓ ✗; p-RoPE ✓ ✓", claims.holds, kind=claims.CHECKED,
    ),
)  # fmt: skip

# %% [markdown]
# ## Table 1, cell by cell
#
# The paper summarises the three encodings in two properties:
#
# - **positional**: a single head can attend *sharply* to a fixed relative position — itself (a
#   diagonal head) or the previous token — with attention above $1-\epsilon$ for any $\epsilon$
#   (Def. 5.1);
# - **semantic**: a head has channels whose scores do not depend on distance at all, so a
#   content match stays a match at any distance ("robust semantic channels").
#
# Both can be checked by construction on the very rotation code the models use
# (`rope.apply_rope`), for the models' own head size. Each encoding is a frequency grid: NoPE is
# p-RoPE with $p = 0$ (nothing rotates). p-RoPE with $p=0.75$ rotates these planes (fastest
# first) and leaves the rest alone:

# %%
grids = {
    label: rope.frequencies(head_dim, base, variant=variant, proportion=p)
    for label, (variant, p) in ablation.TABLE1_VARIANTS.items()  # NoPE, RoPE, 0.75-RoPE
}
rotating = grids["0.75-RoPE"] > 0
plots.table(show.plane_rows(grids["RoPE"], rotating))

# %% [markdown]
# **Explore the cut-off.** The chart recomputes, in your browser, which planes p-RoPE keeps
# rotating (black) and which it frees (orange, drawn at the turns they made under RoPE) for the
# $p$, $\theta$, $d$ and context on its sliders, starting at our lesson models; a click on a model
# in the list loads its settings. Whether freeing planes can matter depends on how far the freed
# planes turned under RoPE (the last line of its readout): planes that never complete a turn over
# the context change little when they stop turning.

# %%
from ropebook.present import explorers

p_cut = ablation.TABLE1_VARIANTS["0.75-RoPE"][1]
explorers.cutoff_explorer(explorers.presets(profile), initial=f"lesson (ours, {profile})", p=p_cut)

# %% [markdown]
# (p-rope-positional)=
# ### Positional heads: the Thm 5.3 construction on p-RoPE's fast planes
#
# Thm 5.3 builds a diagonal head by setting every query to $s\,\psi$ and every key to $\psi$: the
# score of key $j$ for query $i$ is $s\sum_k w_k \cos((j-i)g_k)$ (with $w_k$ the share of
# $\lVert\psi\rVert^2$ in plane $k$), largest exactly at $j = i$. For the previous-token head the
# keys are $R^{1}\psi$ instead. If the best wrong distance scores $1-\delta$ of the right one,
# $\delta = 1-\max_{1\le r<N}\sum_k w_k\cos(r g_k)$, then any $s \ge \ln(N(1-\epsilon)/\epsilon)/\delta$
# gives attention above $1-\epsilon$ on the target for every query.
#
# We put $\psi$ on different planes and run the construction through `apply_rope` for sequences
# of the training context and of `max_factor` times it. The table gives the margin $\delta$, the
# scale $s$, and the worst query's attention on its target for the diagonal head and for the
# previous-token head:

# %%
every_plane = np.ones(head_dim // 2, bool)
cases = [
    ("RoPE", every_plane, ablation.ALL_PLANES),
    ("0.75-RoPE", rotating, ablation.FAST_PLANES),
    ("0.75-RoPE", ~rotating, ablation.FREE_PLANES),
    ("NoPE", every_plane, ablation.ALL_PLANES),
]
constructions = [
    ablation.construction(
        label, planes, n, where=where, head_dim=head_dim, base=base, epsilon=epsilon
    )
    for n in (context, max_factor * context)
    for label, planes, where in cases
]
plots.table(show.construction_rows(constructions), digits=4)

# %% tags=["remove-input"]
positional = ablation.positional_check(constructions, epsilon)
assert all(positional.ok.values()), constructions
CLAIMS.record(
    "p_rope_table1.table1_positional",
    positional.ok["0.75-RoPE"] and positional.ok["NoPE"],
    f"worst target attention {positional.fast_worst:.4f} (0.75-RoPE, fast planes) vs "
    f"{positional.uniform_best:.4f} (NoPE / free planes), N ≤ {max_factor * context}",
)
for name, value in {
    "fast_worst": positional.fast_worst,
    "uniform_best": positional.uniform_best,
    "epsilon": epsilon,
    "max_factor": max_factor,
    "long_context": max_factor * context,
}.items():
    glue(f"p_rope_table1.{name}", value, display=False)

# %% [markdown]
# On its fast planes 0.75-RoPE builds both heads exactly as RoPE does: the worst query puts at
# least {glue:text}`p_rope_table1.fast_worst:.4f` of its attention on the target
# (ε = {glue:text}`p_rope_table1.epsilon`), at {glue:text}`p_rope_table1.context` and at
# {glue:text}`p_rope_table1.long_context` tokens. The same construction on the free planes — or with
# NoPE — gives every key the same score, so attention is uniform and the worst query puts only
# {glue:text}`p_rope_table1.uniform_best:.4f` on the target, for any scale: the free planes are NoPE, and
# Prop. 5.2's repeated-token argument applies to them.

# %% [markdown]
# (p-rope-semantic)=
# ### Semantic channels: free planes are exactly distance-invariant
#
# Now let the query $\psi$ look for a matching key $\psi$ that sits $r$ tokens earlier. Its score
# is $\langle R^r\psi, R^0\psi\rangle$: on a free plane of p-RoPE (or with NoPE) it equals its
# value at $r = 0$, $\lVert\psi\rVert^2$, at every distance, bit for bit; on RoPE's slowest
# plane it is $\cos(r\,g_{d/2-1})$, which turns negative once $r g > \pi/2$. The check runs
# distances up to a million tokens:

# %%
distances = np.unique(np.round(np.geomspace(1, 1e6, 400)).astype(np.int64))
free_psi = ablation.plane_vector(head_dim, ~rotating)
slow_psi = ablation.plane_vector(head_dim, [head_dim // 2 - 1])
p_rope = dict(base=base, variant="p-rope", proportion=0.75)
free_scores = ablation.plane_scores(free_psi, distances, **p_rope)
at_zero = ablation.plane_scores(free_psi, np.array([0]), **p_rope)[0]
free_deviation = float(np.max(np.abs(free_scores - at_zero)))
slow_scores = ablation.plane_scores(slow_psi, distances, base=base, variant="rope")

# %% [markdown]
# The figure shows the score (relative to $\lVert\psi\rVert^2$) over four turns of the slowest
# plane — look at where the orange curve first crosses zero: from there on, a query ranks its
# true match *below* a key that carries nothing.

# %%
show.score_distance_chart(head_dim, base, proportion=0.75)

# %% tags=["remove-input"]
g_slow = grids["RoPE"][-1]
first_negative = ablation.first_negative(distances, slow_scores)
# NoPE's cell measured on NoPE (no plane rotates): the slowest plane's match, unrotated.
nope_scores = ablation.plane_scores(
    slow_psi, distances, base=base, variant="p-rope", proportion=0.0
)
nope_deviation = float(np.max(np.abs(nope_scores - nope_scores[0])))
semantic_ok = {
    "0.75-RoPE": free_deviation == 0.0,
    "NoPE": nope_deviation == 0.0,
    "RoPE": bool(slow_scores.min() < 0),
}
# One matching key among n - 1 keys that score 0, at the scale where a perfect match takes 1 - ε.
n_keys = max_factor * context
scale = ablation.match_scale(n_keys, epsilon)
CLAIMS.record(
    "p_rope_table1.table1_semantic",
    all(semantic_ok.values()),
    f"max score deviation {free_deviation:.1g} (p-RoPE's free planes), {nope_deviation:.1g} "
    f"(NoPE) over r ≤ {distances[-1]:,}; "
    f"RoPE's slowest plane turns negative at r = {first_negative:,}",
)
for name, value in {
    "n_distances": len(distances),
    "max_distance": int(distances[-1]),
    "free_deviation": free_deviation,
    "g_slow": float(g_slow),
    "wavelength": float(2 * np.pi / g_slow),
    "first_negative": first_negative,
    "n_keys": n_keys,
    "match_scale": float(scale),
    "match_free": ablation.match_attention(1.0, n_keys, scale),
    "match_context": ablation.match_attention(float(np.cos(context * g_slow)), n_keys, scale),
    "match_backwards": ablation.match_attention(float(slow_scores.min()), n_keys, scale),
    "long_turn": float(max_factor * context * g_slow),
}.items():
    glue(f"p_rope_table1.{name}", value, display=False)

# %% [markdown]
# On the free planes the score never moves: the largest deviation from its value at distance 0
# over {glue:text}`p_rope_table1.n_distances` distances up to {glue:text}`p_rope_table1.max_distance:,d` tokens
# is **{glue:text}`p_rope_table1.free_deviation:.1g`** (the rotation angle is exactly 0, so cos = 1 and
# sin = 0). RoPE's slowest plane ($g$ = {glue:text}`p_rope_table1.g_slow:.3g` rad/token, wavelength
# {glue:text}`p_rope_table1.wavelength:,.0f` tokens) first scores a match *negatively* at
# {glue:text}`p_rope_table1.first_negative:,d` tokens. Among {glue:text}`p_rope_table1.n_keys` keys, at the scale
# $s$ = {glue:text}`p_rope_table1.match_scale:.1f` at which a perfect match takes $1-\epsilon$ of the attention, a
# match on a free plane takes {glue:text}`p_rope_table1.match_free:.4f` of the attention at any distance;
# on RoPE's slowest plane it takes {glue:text}`p_rope_table1.match_context:.4f` at
# {glue:text}`p_rope_table1.context` tokens but {glue:text}`p_rope_table1.match_backwards:.2g` where the plane
# points backwards — Thm 6.1 in one plane. Note how far that is: at
# {glue:text}`p_rope_table1.max_factor`× our training context ({glue:text}`p_rope_table1.long_context` tokens)
# the slowest plane has turned only {glue:text}`p_rope_table1.long_turn:.2f` rad, so the *failure* of
# RoPE's semantic channels lies beyond the lengths our small models are tested at (longer
# contexts are the subject of *p-RoPE beyond the paper*).

# %% [markdown]
# ### Table 1 with its evidence
#
# The paper's marks (its Table 1), each linked to the check that backs it. Theorems are proved
# and checked on trained models in the chapters on positional heads and semantic channels; the
# constructions on this page check the p-RoPE column directly.
#
# | | NoPE | RoPE | p-RoPE |
# |---|---|---|---|
# | **positional** | ✗ [Prop. 5.2](positional_heads.ipynb), {ref}`here <p-rope-positional>` | ✓ [Thm 5.3](positional_heads.ipynb), {ref}`here <p-rope-positional>` | ✓ fast planes, {ref}`here <p-rope-positional>` |
# | **semantic** | ✓ no rotation, {ref}`here <p-rope-semantic>` | ✗ [Thm 6.1](semantic_theory.ipynb), {ref}`here <p-rope-semantic>` | ✓ free planes, {ref}`here <p-rope-semantic>` |
#
# *Positional*: a sharp diagonal or previous-token head (for NoPE, "here" shows the uniform
# attention; for p-RoPE, Thm 5.3 on its fast planes). *Semantic*: channels whose scores do not
# depend on distance (for RoPE, "here" is its slowest plane; for p-RoPE, the exact invariance of
# its free planes). What the constructions on this page found, cell by cell (measured mark, then
# the paper's):

# %%
paper_table1 = {
    "positional": {"NoPE": False, "RoPE": True, "0.75-RoPE": True},
    "semantic": {"NoPE": True, "RoPE": False, "0.75-RoPE": True},
}
measured_table1 = ablation.table1_measured(positional.ok, semantic_ok)
table1_rows = show.table1_rows(measured_table1, paper_table1)
plots.table(table1_rows)

# %% tags=["remove-input"]
table1_agrees = measured_table1 == paper_table1
CLAIMS.record("p_rope_table1.table1", table1_agrees, show.table1_text(table1_rows))
glue(
    "p_rope_table1.table1_differences",
    show.table1_differences(measured_table1, paper_table1),
    display=False,
)

# %% [markdown]
# Cells where a measured mark differs from the paper's: {glue:text}`p_rope_table1.table1_differences`.

# %% [markdown]
# ## What we claim and what we measured
#
# Each check holds if its construction does what the paper's cell says: the positional cell if
# the worst query of the fast-plane construction keeps more than $1-\epsilon$ of its attention
# on the target while NoPE's and the free planes' stay uniform; the semantic cell if the free
# planes' and NoPE's scores never move from their value at distance 0 and RoPE's slowest plane
# turns negative; the table if every measured mark is the paper's.

# %% tags=["remove-input"]
CLAIMS.glue()
