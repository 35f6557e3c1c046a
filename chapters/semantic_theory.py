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
# # Why slow planes break: Sec. 6's theorems
#
# {glue:md}`in_short`

# %% [markdown]
# A *semantic* head attends by **what** a token is, not **where** it is. RoPE makes this hard.
# The score of a query at $i$ and a key at $j$ in one 2-D chunk of frequency $g$ is
#
# $$ a_{i,j} = \lVert q_i\rVert\,\lVert k_j\rVert \cos\big(\theta_{i,j} + g\,(j-i)\big), $$
#
# so the *same* token pair scores differently at different distances. Sec. 6 of
# {cite:t}`barbero2025round` argues that a model therefore carries semantics on the **lowest**
# frequencies, whose angle barely moves over the context, and proves (Thm. 6.1) that even they
# cannot attend robustly forever: the angles $g\,m \bmod 2\pi$ of the distances
# $m = 0, 1, 2, \dots$ are dense in the circle (Lemma A.2), so a long enough sequence has a place
# where the target scores badly and another token scores well, and then the target gets at most
# half of the attention (Lemma A.3).
#
# This chapter proves the two lemmas' algebra with sympy, makes the theorem quantitative (the
# length at which a single frequency stops being able to attend robustly is
# $\lceil \pi / g\rceil$, up to one token: slow frequencies survive in proportion to their
# wavelength) and runs the proof's swaps on concrete heads. Everything here is a proof or a check
# of a construction: it fails only if the algebra or the code is wrong. The next chapter looks
# for such channels in trained models.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu
seed = 0  # in [0, inf): numpy Generator seed for random heads
score_budget = 8.0  # in (0, inf): bound on |q||k|/sqrt(d) of one chunk for the best-head curves
n_phi = 128  # in [1, inf): target angles tried per head family in the best-head curves
attack_heads = 40  # in [1, inf): random 2-D heads attacked per (g, N)

# %% tags=["hide-input"]

import numpy as np
from IPython.display import display

from ropebook import claims, plots, rope, zoo
from ropebook.analysis import semantic as sem
from ropebook.present import semantic as show
from ropebook.proofs import semantic_theory as proofs

plots.setup()
if profile == "smoke":
    attack_heads, n_phi = min(attack_heads, 8), min(n_phi, 48)
config, _ = zoo.configs("rope", profile=profile)
head_dim, base, context = config.head_dim, config.rope_base, config.context
grid = rope.frequencies(head_dim, base)
n_chunks = head_dim // 2
theory_g = grid if profile != "smoke" else grid[[0, 2, 4]]
rng = np.random.default_rng(seed)
print(
    f"profile {profile!r}: head_dim {head_dim} ({n_chunks} frequencies from {grid[0]:g} to "
    f"{grid[-1]:.3g} rad/token), context {context}"
)

# %% [markdown]
# The chapter proves three statements and checks one construction, stated once here with the
# rule that decides each; the sections below fill them in, and the table at the end shows them.

# %% tags=["hide-input"]
CLAIMS = claims.ClaimSet(
    claims.ClaimSpec(
        "semantic_theory.lemma_a3", "Barbero et al. 2025, Lemma A.3",
        "A softmax weight whose activation is not the largest is at most 1/2", claims.holds, kind=claims.PROVED,
    ),
    claims.ClaimSpec(
        "semantic_theory.lemma_a2", "Barbero et al. 2025, Lemma A.2",
        "The angles n·g mod 2π of an irrational rotation are dense in the circle", claims.holds, kind=claims.PROVED,
    ),
    claims.ClaimSpec(
        "semantic_theory.thm61", "Barbero et al. 2025, Thm. 6.1",
        "A single RoPE frequency cannot attend robustly (α > 1−ε for every placement) on long "
        "enough sequences",
        claims.holds, kind=claims.PROVED,
    ),
    claims.ClaimSpec(
        "semantic_theory.low_freq_survive", "Barbero et al. 2025, Sec. 6 and App. E.1",
        "The lowest frequencies are the most robust semantic channels: the length at which a "
        "frequency breaks grows as 1/g",
        claims.holds, kind=claims.CHECKED,
    ),
)  # fmt: skip

# %% [markdown]
# ## Lemma A.3: a token that is not the top scorer gets at most half
#
# Softmax is monotone, so if $a_i \le a_j$ then $\alpha_i \le \alpha_j$, and two weights that
# sum to at most one cannot both exceed $1/2$. Written with $x = e^{a_i}$, $e^{a_j} = x + t$
# ($t \ge 0$) and $R \ge 0$ for the other exponentials, $\tfrac12 - \alpha_i$ is a ratio of
# non-negative terms; with $m$ tokens scoring at least $a_i$ the same algebra gives
# $\alpha_i \le 1/(m+1)$. sympy reduces each gap and checks its sign from the symbols'
# assumptions alone:

# %%
proofs.lemma_a3()

# %% [markdown]
# The same statement on random activation vectors (lengths 2 to 64, entries with standard
# deviation 3, so softmaxes range from flat to sharp): no entry that has $m \ge 1$ competitors at
# least as large gets more than $1/(m+1)$.

# %%
bound = sem.check_softmax_bound(rng, n_draws=2_000 if profile == "smoke" else 20_000)
print(show.softmax_bound_text(bound))
assert bound.violations == 0

# %% tags=["remove-input"]
_ = CLAIMS.record(
    "semantic_theory.lemma_a3",
    bound.violations == 0,
    f"sympy proof (also ≤ 1/(m+1) with m competitors); {bound.violations} violations in "
    f"{bound.checked:,} random non-maximal entries",
)
# %% [markdown]
# ## The lever of the proof: one position turns the angle by $g$
#
# Thm. 6.1's proof only ever moves tokens around. In two dimensions the score is the polar form
# above, so putting a key $\pi/g$ positions further flips the sign of its score. sympy checks
# both identities:

# %%
proofs.polar_score()

# %% [markdown]
# ## Lemma A.2: the angles $g\,m \bmod 2\pi$ fill the circle
#
# Every RoPE frequency $g = \theta^{-2k/d}$ is an algebraic number and $\pi$ is transcendental,
# so $g/2\pi$ is irrational and the angles of distances $0, 1, \dots, N$ never repeat: the
# largest empty arc between them shrinks to zero (Lemma A.2). A rational rotation
# $g = 2\pi\cdot 3/17$ is shown for contrast: it visits 17 angles and its gap stays at
# $2\pi/17$. The slow frequencies need about one wavelength $2\pi/g$ before their gap starts to
# close; after that it is at most $g$.

# %%
gaps = sem.rotation_gaps(theory_g, n_max=10**4 if profile == "smoke" else 10**5, rational=(3, 17))
show.gap_chart(gaps)

# %%
plots.table(show.gap_table(gaps))

# %% tags=["remove-input"]
_ = CLAIMS.record(
    "semantic_theory.lemma_a2",
    gaps.dense,
    f"largest empty arc at N = {gaps.n_max:,}: ≤ {gaps.largest_irrational_gap:.2g} rad for every "
    f"RoPE frequency tested; rational control stays at 2π/17",
)
# %% [markdown]
# ## Thm. 6.1 made exact: the length at which one frequency breaks
#
# Put the query at position $N$; its keys sit at distances $m = 0, \dots, N$, i.e. at angles
# $g\,m$. A head with one frequency may use any query and any key per token.
#
# - **While the $N+1$ angles fit inside an open half circle**, a robust head exists: point the
#   target's key at the middle of the arc and every other key at the opposite direction. Wherever
#   the tokens are placed, the target scores positive and every other token negative, and scaling
#   the norms sends the target's weight to 1.
# - **Once they do not fit**, no head is robust: for any head there is a distance where the
#   target's cosine is $\le 0$ and another where some other token's is $\ge 0$; placing the
#   tokens there makes the target a non-maximal score, and Lemma A.3 caps it at $1/2$.
#
# For $0 < g \le \pi$ the angles $0, g, 2g, \dots$ leave one big gap $2\pi - gN$ until they wrap,
# so they stop fitting exactly when $gN \ge \pi$:
#
# $$ N^*(g) = \lceil \pi / g \rceil . $$
#
# (Placing a second token on the other side can cost one more position: the attack below is
# guaranteed for $N \ge \pi/g + 1$ when $g \le \pi/2$.) A frequency breaks after half its
# wavelength — **slow frequencies survive longer, in proportion to $1/g$**. The table finds $N^*$
# by bisection on the exact half-circle test and compares it with the closed form, for every
# frequency chunk of the book's heads (0 = fastest) and for the low-frequency band of Gemma 7B
# that the paper analyses ($g_{119} = 10{,}000^{-2\cdot 118/256}$, 8k context); the last
# column is $N^*$ in units of the model's context.

# %%
gemma_g, gemma_context = sem.GEMMA_G119, sem.GEMMA_CONTEXT
breaking = sem.breaking_table(grid, context, reference=("Gemma 7B, 119", gemma_g, gemma_context))
display(plots.table(breaking.rows))
print(
    f"bisection = closed form for every row: {breaking.exact}; log-log slope of N* against g: "
    f"{breaking.slope:.3f} (1/g scaling is -1). Gemma's band turns {gemma_context * gemma_g:.2f} "
    f"rad over 8k tokens (paper: '8000 g_119 ≈ 1.64 ≈ π/2') and breaks only after "
    f"{breaking.reference_n_star:,} tokens."
)

# %% tags=["remove-input"]
_ = CLAIMS.record(
    "semantic_theory.low_freq_survive",
    breaking.exact and abs(breaking.slope + 1) < 0.05,
    f"N*(g) = ⌈π/g⌉ exactly for all {len(grid)} book frequencies ({breaking.exact}); "
    f"log-log slope {breaking.slope:.3f}; Gemma's g_119 band breaks after "
    f"{breaking.reference_n_star:,} tokens, beyond its 8k context",
)
# %% [markdown]
# ### How much attention can the best head keep?
#
# The theorem is a statement about the *worst* placement. For a head with one frequency $g$ and
# scores bounded by `score_budget` ($\lVert q\rVert\lVert k\rVert/\sqrt d$ at most 8 by default,
# a sharp softmax), the curves show the best worst-case attention on the target over a family of
# heads (target angle on a grid and at the arc's middle, other keys opposite with norm ratio 1,
# ½, ¼ or 0): the head picks its vectors, then the tokens are placed as badly as possible. The
# line $g = 0$ is a head without rotation (NoPE), which only loses to the growing number of
# competitors. Dashed vertical rules mark $N^* = \lceil\pi/g\rceil$: past it no head at all
# keeps more than ½, however large its norms; the grey line is ½.

# %%
curves = sem.best_head_curves(theory_g, score_budget, n_phi=n_phi)
show.best_head_chart(curves)

# %% [markdown]
# Past $N^*+1$ the family's best is at most ½ (the theorem with Lemma A.3); below $N^*/2$ it is
# essentially 1. With a finite budget the fall starts a little before $N^*$, where the best
# head's margin $\cos(gN/2)$ shrinks to zero.
# For the slowest frequencies even $N^*/2$ keys need a larger budget: to outweigh $N$ competitors
# the margin must grow like $\log N$, so the table's $N^*/2$ column may fall short of 1 there. That is
# the converse direction, which the theorem does not claim. The table gives the family's best at
# $N^*/2$ with the budget above, at $N^*+1$ with ten times that budget, and the first length on
# each curve where the best falls under ½.

# %%
family = sem.family_check(theory_g, score_budget, n_phi=n_phi, first_below=curves.first_below)
plots.table(family.rows)

# %% [markdown]
# ### The proof's swaps, run on real heads
#
# The proof is constructive. Given a head that attends well to its target, it moves tokens:
#
# 1. if the target scores positive, **swap it to the position where it scores most negative**
#    (one exists once the angles cover more than a half circle, by Lemma A.2);
# 2. if the target is still the top scorer (every other token is even more negative), **swap
#    some other token to a position where it scores positive**.
#
# After at most two swaps the target is not the maximum and Lemma A.3 caps it at ½.
# `sem.swap_attack` does exactly this. Below, a head built to survive as long as
# possible (target key aimed at the middle of the arc, `aim="robust"`), for the head's third
# fastest frequency, on a sequence twice as long as its $N^*$: the scores before and after, and
# the target's attention.

# %%
g_demo = float(grid[2]) if n_chunks > 2 else float(grid[0])
n_demo = 2 * sem.breaking_length_closed_form(g_demo)
demo_rng = np.random.default_rng([seed, 61])
q, keys, target = sem.semantic_head_2d(demo_rng, n_demo, g_demo, aim="robust", spread=0.3)
show.swap_figure(sem.swap_attack(g_demo, q, keys, target), g_demo)

# %% [markdown]
# Now many random heads of both kinds — `previous` (target key equal to the query, the natural
# "attend to the token before me" head) and `robust` (aimed at the arc's middle) — for a fast, a
# middle and a slow frequency, at lengths around $N^*$. The attack must fail below $N^*$ for the
# robust head (it *is* robust there) and must succeed from $N^*+1$ on for every head.

# %%
attack_g = [grid[1], grid[2], grid[3]] if n_chunks > 3 else [grid[0]]
ratios = [0.25, 0.5, 0.9, 1.0, 1.1, 2.0, 4.0]  # N / N*
attacks = sem.attack_sweep(attack_g, ratios, n_heads=attack_heads, seed=seed)
attack_ok = sem.attacks_as_proved(attacks)
show.attack_chart(attacks)

# %% [markdown]
# Mean attention on the target before and after the swaps, and the share of heads the swaps
# defeat, at half, 1.1 times and four times $N^*$:

# %%
plots.table(show.attack_table(attacks, ratios=(0.5, 1.1, 4.0)))

# %% tags=["remove-input"]
_ = CLAIMS.record(
    "semantic_theory.thm61",
    family.broken_above and attack_ok,
    f"no head in the family keeps > ½ at N*+1: {family.broken_above}; the proof's swaps succeed "
    f"on every random head from N*+1 and never on the robust head below N*: {attack_ok} (the "
    f"converse, not part of the theorem: best worst-case α > 0.99 at N*/2 with scores bounded "
    f"by {score_budget:g}: {family.robust_below})",
)
# %% [markdown]
# The previous-token-style head can break before $N^*$ (its target key is aimed at one end of
# the arc, not its middle, so it has less room); the robust head holds until $N^*$ and breaks
# right after it, as the closed form says. Thm. 6.1 is an impossibility result, so its verdict
# rests on the two checks it predicts (no head keeps more than ½ past $N^*+1$; the swaps succeed
# from there on and fail on the robust head below $N^*$). Whether a head with bounded scores is
# robust below $N^*$ depends on the budget (it needs $\lVert q\rVert\lVert k\rVert$ to grow like
# $\log N$), so that converse is reported but does not enter the verdict.

# %% [markdown]
# ## What we claim and what we measured
#
# Verdicts are computed from the numbers above. How each is decided:
#
# - **Lemma A.3**: held if no random non-maximal entry exceeds $1/(m+1)$ (the sympy proof must
#   pass for the chapter to run at all).
# - **Lemma A.2**: held if every RoPE frequency's largest empty arc is below 0.01 rad at the
#   largest $N$ and the rational control's stays exactly $2\pi/17$.
# - **Thm. 6.1**: held if no head of the family keeps more than ½ at $N^*+1$ and the swaps
#   succeed on every head from $N^*+1$ and on no robust head below $N^*$.
# - **Low frequencies survive**: held if bisection matches $\lceil\pi/g\rceil$ on every row and
#   the log-log slope of $N^*$ against $g$ is within 0.05 of −1.
#
# Whether trained models use the slow planes this way, and what happens to them past the
# training length, is the [next chapter](semantic_channels.ipynb)'s question.

# %% tags=["remove-input"]
CLAIMS.glue()
