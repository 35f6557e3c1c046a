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
# # RoPE in one page
#
# {glue:md}`in_short`

# %% [markdown]
# Rotary position embeddings (RoPE), introduced by {cite:t}`su2024roformer`, encode position by
# *rotating* queries and keys instead of adding anything to them. A head of dimension $d$ is cut into $d/2$ planes; in
# plane $k$ the vector at position $m$ is rotated by the angle $m\,g_k$ with
#
# $$ g_k = \theta^{-2k/d}, \qquad k = 0, \dots, d/2 - 1, $$
#
# so plane $0$ turns fastest (one radian per token) and the last plane slowest. Every other
# chapter rests on two facts proved below: the attention score of a rotated query and key depends
# on their positions only through the *distance* between them, and rotations preserve norms.
#
# This chapter also fixes the vocabulary for the variants used later: **p-RoPE**, which
# {cite:t}`barbero2025round{Sec. 6.1}` propose, keeps only the fastest fraction $p$ of
# frequencies; **partial** RoPE rotates only the first $p\,d$ dimensions with a recomputed grid;
# **reversed** drops the fastest frequencies instead of the slowest.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu
seed = 0  # in [0, inf): seed of the random queries, keys and positions
head_dim = 64  # in [4, inf): head dimension d (even)
base = 10_000.0  # in (1, inf): the base θ of the frequency grid
n_random_checks = 2_000  # in [1, inf): random (q, k, m, n) draws for the numerical check

# %% tags=["remove-input"]
from ropebook import claims, plots
from ropebook.analysis import regime
from ropebook.present import regime as show
from ropebook.proofs import rope_basics as basics

plots.setup()
if profile == "smoke":
    n_random_checks = min(n_random_checks, 200)

CLAIMS = claims.ClaimSet(
    claims.ClaimSpec(
        "rope_basics.relative",
        "Su et al. 2024; Barbero et al. 2025, Sec. 2",
        "RoPE scores depend only on relative position",
        kind=claims.PROVED,
    ),
    claims.ClaimSpec(
        "rope_basics.norm",
        "Su et al. 2024",
        "RoPE preserves query and key norms",
        kind=claims.PROVED,
    ),
    claims.ClaimSpec(
        "rope_basics.p_rope_grid",
        "Barbero et al. 2025, Sec. 6.1",
        "0.75-RoPE keeps the fastest 75% of frequencies",
        kind=claims.CHECKED,
    ),
)

# %% [markdown]
# ## The relative property, proved
#
# For one plane, write $\rho(\alpha)$ for the $2\times 2$ rotation by $\alpha$. Because
# $\rho(\alpha)^\top\rho(\beta) = \rho(\beta-\alpha)$, a rotated query at position $m$ and a rotated
# key at position $n$ give $\langle \rho(m g) q, \rho(n g) k\rangle = \langle q, \rho((n-m) g) k\rangle$.
# RoPE's rotation $R^m$ is block-diagonal with one such plane per frequency, so the identity holds
# block by block. sympy checks it for one block and for two blocks with distinct frequencies:

# %%
basics.relative_property()

# %% [markdown]
# Norms are preserved for the same reason: each block is a rotation, $\rho^\top\rho = I$.

# %%
basics.norm_preserved()

# %% [markdown]
# ## The same identities in floating point
#
# The library's `apply_rope` works on batches `[..., seq, heads, head_dim]` and supports both
# conventions for which two dimensions form a plane: `half` pairs $(k, k + d/2)$ as Hugging Face's
# `rotate_half` does; `interleaved` pairs $(2k, 2k+1)$ as Meta's reference code does. For random
# queries, keys and positions $m, n < 4096$ we compare $\langle R^m q, R^n k\rangle$ with
# $\langle q, R^{n-m} k\rangle$ and $\lVert R^m q\rVert$ with $\lVert q\rVert$, and report the worst
# deviation of each pairing:

# %%
errors = basics.float32_errors(draws=n_random_checks, head_dim=head_dim, base=base, seed=seed)
plots.table(errors)

# %% [markdown]
# Both errors sit at float32 rounding level (about $10^{-6}$ relative to $\lVert q\rVert\lVert
# k\rVert$ for positions up to 4096; the angles $m g_k$ are formed in float32). We call an
# identity confirmed in floating point when its worst deviation stays below $10^{-4}$.

# %% tags=["hide-input"]
tolerance = 1e-4
worst_relative = max(row[basics.RELATIVE_ERROR] for row in errors)
worst_norm = max(row[basics.NORM_ERROR] for row in errors)
CLAIMS.record(
    "rope_basics.relative",
    worst_relative < tolerance,
    f"sympy proof; worst float32 deviation {worst_relative:.1e} over {n_random_checks} draws",
    seeds=1,
)
CLAIMS.record(
    "rope_basics.norm",
    worst_norm < tolerance,
    f"sympy proof; worst float32 deviation {worst_norm:.1e}",
    seeds=1,
)
assert worst_relative < tolerance and worst_norm < tolerance, errors

# %% [markdown]
# ## The frequency spectrum of each variant
#
# Each variant is a choice of which planes rotate and how fast. The figure shows the angular
# frequency $g_k$ of every plane (log scale; planes that do not rotate are drawn at the bottom
# as zero) for $d = $ the chapter's `head_dim` and $\theta = 10{,}000$. p-RoPE with $p=0.75$ keeps
# the fastest three quarters and zeroes the slowest quarter; *reversed* keeps the slowest three
# quarters; *partial* rotates only the first $0.75\,d$ dimensions with a grid recomputed over
# them, so its frequencies fall faster with $k$. Hover a point to read the plane, its frequency and
# its wavelength $2\pi/g_k$ in tokens.

# %%
variants = {  # label: (variant of rope.frequencies, proportion p)
    "RoPE": ("rope", 1.0),
    "0.75-RoPE (p-RoPE)": ("p-rope", 0.75),
    "0.25-RoPE (p-RoPE)": ("p-rope", 0.25),
    "0.75 partial": ("partial", 0.75),
    "0.75 reversed": ("reversed", 0.75),
}
spectrum = basics.variant_spectrum(variants, head_dim=head_dim, base=base)
show.spectrum_chart(spectrum, head_dim=head_dim, base=base)

# %% [markdown]
# ## Turns per context: which planes are "slow" depends on the model
#
# The same base $\theta$ gives very different spectra in different models, because what a plane
# can express depends on how far it turns over the *training context* $L$: $g_k L / 2\pi$ full
# turns. A plane that turns less than once never brings two positions back to the same angle, so
# it cannot separate near from far by phase and acts almost like a plane that does not rotate
# at all; {cite:t}`liu2024scaling` call the last plane that completes a turn the *critical
# dimension*. The figure places the paper's models beside every
# profile of this book; the table gives the share of planes that turn at least once and how far
# the slowest plane gets.

# %%
settings = {**regime.REFERENCE_MODELS, **regime.profile_settings()}
show.turns_chart(settings)

# %% tags=["remove-input"]
plots.table(show.regime_rows(settings))

# %% [markdown]
# In Gemma 7B {cite:p}`gemma2024gemma` most planes turn at least once over its 8k context, and even its slowest plane
# makes a sizeable fraction of a turn. The book's first models (`ours: cpu`: CABLE's 12 heads,
# each of dimension 16, θ = 10⁴, context 128) sit elsewhere: only the fastest few planes
# complete a turn and the slowest turn by a tiny fraction of one (the table's last column). They
# already behave almost like no rotation, so an experiment that frees exactly those planes
# (0.75-RoPE) compares two nearly identical models. We keep these models as the **lesson
# regime**: the chapters show the null it predicts, and why.
#
# The **matched regime** (`ours: cpu, matched`) is what the book trains for decisions. With a
# context of 128 tokens we cannot match every statistic of an 8k-context model: with a geometric
# grid, the share of planes that complete a turn and the slowest plane's turns cannot both be
# matched unless the fastest plane's turns match too, which needs the full context. We match
# **the slowest plane's turns** — the quantity that decides whether freeing the slow planes can
# matter — by giving each head 16 planes (head dimension 32) and choosing θ so that the slowest
# turns as often over 128 tokens as Gemma 7B's does over 8k (`rope.matched_base`, rounded to two
# digits). The share of planes that complete a turn then follows, shown in the table.

# %% [markdown]
# **Explore the spectrum.** The chart below recomputes the turns of every plane in your browser
# for the base $\theta$, head dimension $d$ and context $L$ on its sliders (black line, with how
# many planes complete a turn written in its corner); a click on a model in the list loads its
# settings, and every listed model keeps its own curve in colour. Watch where the black line
# crosses the dashed line at one turn: the planes to its right never complete a turn over the
# context.

# %%
from ropebook.present import explorers

explorers.spectrum_explorer(explorers.presets(profile), initial="Gemma 7B")

# %% [markdown]
# ## What we claim and what we measured
#
# The two identities are proved exactly with sympy and checked to float32 rounding in the
# library's code; the p-RoPE claim counts the planes that rotate in the 0.75-RoPE grid, which
# should be the fastest $\lfloor 0.75 \cdot d/2 \rfloor$ of the $d/2$.

# %% tags=["remove-input"]
rotating = basics.rotating_planes(spectrum)["0.75-RoPE (p-RoPE)"]
CLAIMS.record(
    "rope_basics.p_rope_grid",
    rotating == int(0.75 * head_dim // 2),
    f"{rotating} of {head_dim // 2} planes rotate",
)
CLAIMS.glue()
