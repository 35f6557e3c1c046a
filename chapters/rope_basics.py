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
# Rotary position embeddings (RoPE; Su et al., 2021) encode position by *rotating* queries and
# keys instead of adding anything to them. A head of dimension $d$ is cut into $d/2$ planes; in
# plane $k$ the vector at position $m$ is rotated by the angle $m\,g_k$ with
#
# $$ g_k = \theta^{-2k/d}, \qquad k = 0, \dots, d/2 - 1, $$
#
# so plane $0$ turns fastest (one radian per token) and the last plane slowest. Every other
# chapter rests on two facts proved below: the attention score of a rotated query and key depends
# on their positions only through the *distance* between them, and rotations preserve norms.
#
# This chapter also fixes the vocabulary for the variants used later: **p-RoPE** (keep only the
# fastest fraction $p$ of frequencies, Barbero et al., 2025, Sec. 6.1), **partial** RoPE (rotate
# only the first $p\,d$ dimensions with a recomputed grid) and **reversed** (drop the fastest
# frequencies instead of the slowest).

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu
seed = 0
head_dim = 64
base = 10_000.0
n_random_checks = 2_000  # random (q, k, m, n) draws for the numerical check

# %%
import jax
import jax.numpy as jnp
import numpy as np

from ropebook import claims, plots, rope
from ropebook.proofs import rope_basics as rope_proofs

plots.setup()
if profile == "smoke":
    n_random_checks = min(n_random_checks, 200)

# %% [markdown]
# ## The relative property, proved
#
# For one plane, write $\rho(\alpha)$ for the $2\times 2$ rotation by $\alpha$. Because
# $\rho(\alpha)^\top\rho(\beta) = \rho(\beta-\alpha)$, a rotated query at position $m$ and a rotated
# key at position $n$ give $\langle \rho(m g) q, \rho(n g) k\rangle = \langle q, \rho((n-m) g) k\rangle$.
# RoPE's rotation $R^m$ is block-diagonal with one such plane per frequency, so the identity holds
# block by block. sympy checks it for one block and for two blocks with distinct frequencies:

# %%
rope_proofs.relative_property()

# %%
rope_proofs.norm_preserved()

# %% [markdown]
# ## The same identities in floating point
#
# The library's `apply_rope` works on batches `[..., seq, heads, head_dim]` and supports both
# conventions for which two dimensions form a plane: `half` pairs $(k, k + d/2)$ as Hugging Face's
# `rotate_half` does; `interleaved` pairs $(2k, 2k+1)$ as Meta's reference code does. For random
# queries, keys and positions we compare $\langle R^m q, R^n k\rangle$ with
# $\langle q, R^{n-m} k\rangle$ and $\lVert R^m q\rVert$ with $\lVert q\rVert$.


# %%
def relative_property_errors(pairing: str, key: jax.Array) -> dict[str, float]:
    kq, kk, km, kn = jax.random.split(key, 4)
    shape = (n_random_checks, 1, 1, head_dim)
    q, k = jax.random.normal(kq, shape), jax.random.normal(kk, shape)
    m = jax.random.randint(km, (n_random_checks, 1), 0, 4096)
    n = jax.random.randint(kn, (n_random_checks, 1), 0, 4096)
    rotate = lambda x, p: rope.apply_rope(x, p, base=base, pairing=pairing)  # noqa: E731
    scores = jnp.sum(rotate(q, m) * rotate(k, n), axis=-1)
    relative = jnp.sum(q * rotate(k, n - m), axis=-1)
    norms = jnp.linalg.norm(rotate(q, m), axis=-1) / jnp.linalg.norm(q, axis=-1)
    scale = jnp.linalg.norm(q, axis=-1) * jnp.linalg.norm(k, axis=-1)
    return {
        "pairing": pairing,
        "max |score - relative| / (|q||k|)": float(jnp.max(jnp.abs(scores - relative) / scale)),
        "max | ||R q|| / ||q|| - 1 |": float(jnp.max(jnp.abs(norms - 1))),
    }


keys = jax.random.split(jax.random.key(seed), 2)
errors = [relative_property_errors(p, k) for p, k in zip(rope.PAIRINGS, keys, strict=True)]
plots.table(errors)

# %% [markdown]
# Both errors sit at float32 rounding level (about $10^{-6}$ relative to $\lVert q\rVert\lVert
# k\rVert$ for positions up to 4096; the angles $m g_k$ are formed in float32).

# %%
tolerance = 1e-4
worst_relative = max(row["max |score - relative| / (|q||k|)"] for row in errors)
worst_norm = max(row["max | ||R q|| / ||q|| - 1 |"] for row in errors)
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
variants = {
    "RoPE": ("rope", 1.0),
    "0.75-RoPE (p-RoPE)": ("p-rope", 0.75),
    "0.25-RoPE (p-RoPE)": ("p-rope", 0.25),
    "0.75 partial": ("partial", 0.75),
    "0.75 reversed": ("reversed", 0.75),
}
spectrum = [
    {
        "variant": label,
        "plane k": k,
        "frequency g_k (rad/token)": float(g),
        "wavelength (tokens)": float(2 * np.pi / g) if g > 0 else None,
        "rotates": bool(g > 0),
    }
    for label, (variant, p) in variants.items()
    for k, g in enumerate(rope.frequencies(head_dim, base, variant=variant, proportion=p))
]
# Planes that do not rotate have g = 0, which a log axis cannot show: draw them a decade below.
floor = min(row["frequency g_k (rad/token)"] for row in spectrum if row["rotates"]) / 10
for row in spectrum:
    row["plotted frequency"] = row["frequency g_k (rad/token)"] if row["rotates"] else floor

import altair as alt

alt.Chart(
    alt.InlineData(values=spectrum),
    title=f"RoPE variants: frequency of each plane (d = {head_dim}, θ = {base:,.0f})",
).mark_line(point=True).encode(
    x=alt.X("plane k:Q", title="plane k (0 = fastest)"),
    y=alt.Y(
        "plotted frequency:Q",
        scale=alt.Scale(type="log"),
        title="angular frequency g_k (rad/token)",
    ),
    color=alt.Color("variant:N"),
    strokeDash=alt.StrokeDash("variant:N"),
    tooltip=[
        "variant:N",
        "plane k:Q",
        alt.Tooltip("frequency g_k (rad/token):Q", format=".3g"),
        alt.Tooltip("wavelength (tokens):Q", format=",.1f"),
        "rotates:N",
    ],
).properties(width=560, height=300)

# %% [markdown]
# ## What we claim and what we measured

# %%
rotating = {
    label: sum(r["rotates"] for r in spectrum if r["variant"] == label) for label in variants
}
claims.glue_claims(
    [
        claims.Claim(
            id="rope_basics.relative",
            source="Su et al. 2021; Barbero et al. 2025, Sec. 2",
            statement="RoPE scores depend only on relative position",
            measured=f"sympy proof; worst float32 deviation {worst_relative:.1e} over {n_random_checks} draws",
            verdict="held" if worst_relative < tolerance else "not held",
            seeds=1,
        ),
        claims.Claim(
            id="rope_basics.norm",
            source="Su et al. 2021",
            statement="RoPE preserves query and key norms",
            measured=f"sympy proof; worst float32 deviation {worst_norm:.1e}",
            verdict="held" if worst_norm < tolerance else "not held",
            seeds=1,
        ),
        claims.Claim(
            id="rope_basics.p_rope_grid",
            source="Barbero et al. 2025, Sec. 6.1",
            statement="0.75-RoPE keeps the fastest 75% of frequencies",
            measured=f"{rotating['0.75-RoPE (p-RoPE)']} of {head_dim // 2} planes rotate",
            verdict="held"
            if rotating["0.75-RoPE (p-RoPE)"] == int(0.75 * head_dim // 2)
            else "not held",
        ),
    ]
)
