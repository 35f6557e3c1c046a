"""RoPE's two defining properties: relative positions only, and norms preserved.

The sympy proofs come first; below them, the same identities checked in float32 on the library's
``apply_rope`` (:func:`float32_errors`) and the frequency grid of each RoPE variant
(:func:`variant_spectrum`, charted by :func:`ropebook.present.regime.spectrum_chart`), as the
chapter ``rope_basics`` shows them.
"""

from __future__ import annotations

import math

import sympy as sp

from ropebook.proofs import Proof, require_zero, statement


def rotation(angle: sp.Expr) -> sp.Matrix:
    """The 2-D rotation ρ(angle)."""
    return sp.Matrix([[sp.cos(angle), -sp.sin(angle)], [sp.sin(angle), sp.cos(angle)]])


def block_rotation(position: sp.Expr, frequencies: list[sp.Expr]) -> sp.Matrix:
    """``R^position``: one 2-D rotation per frequency, block-diagonal (interleaved pairing)."""
    return sp.diag(*[rotation(position * g) for g in frequencies])


@statement(
    "rope.relative",
    source="Su et al. 2024; Barbero et al. 2025, Sec. 2",
    claim="<R^m q, R^n k> = <q, R^(n-m) k>: RoPE scores depend on positions only through n-m",
)
def relative_property(proof: Proof) -> None:
    m, n = sp.symbols("m n", integer=True)
    g1, g2 = sp.symbols("g_1 g_2", positive=True)
    for frequencies, label in (([g1], "one 2-D block"), ([g1, g2], "two blocks (d = 4)")):
        dim = 2 * len(frequencies)
        q = sp.Matrix(sp.symbols(f"q_1:{dim + 1}", real=True))
        k = sp.Matrix(sp.symbols(f"k_1:{dim + 1}", real=True))
        lhs = (block_rotation(m, frequencies) * q).dot(block_rotation(n, frequencies) * k)
        rhs = q.dot(block_rotation(n - m, frequencies) * k)
        require_zero(
            proof,
            f"{label}: $\\langle R^m q, R^n k\\rangle - \\langle q, R^{{n-m}} k\\rangle$",
            lhs - rhs,
        )


@statement(
    "rope.norm",
    source="Su et al. 2024",
    claim="||R^m q|| = ||q||: each block is a rotation, so RoPE preserves norms",
)
def norm_preserved(proof: Proof) -> None:
    m = sp.symbols("m", integer=True)
    g = sp.symbols("g", positive=True)
    q = sp.Matrix(sp.symbols("q_1:3", real=True))
    rotated = rotation(m * g) * q
    require_zero(
        proof, r"$\lVert \rho(mg)\,q\rVert^2 - \lVert q\rVert^2$", rotated.dot(rotated) - q.dot(q)
    )
    require_zero(
        proof,
        r"$\sum_{ij} \big(\rho(mg)^\top \rho(mg) - I\big)_{ij}^2$",
        sum(e**2 for e in rotation(m * g).T * rotation(m * g) - sp.eye(2)),
    )


# ------------------------------------------------------------------ the same identities in float32
RELATIVE_ERROR = "max |score - relative| / (|q||k|)"
NORM_ERROR = "max | ||R q|| / ||q|| - 1 |"


def float32_errors(
    *, draws: int, head_dim: int, base: float, seed: int, max_position: int = 4096
) -> list[dict]:
    """Worst float32 deviation from the two identities over ``draws`` random (q, k, m, n), one row
    per pairing of :data:`ropebook.rope.PAIRINGS`: ``RELATIVE_ERROR`` is
    ``max |<R^m q, R^n k> - <q, R^(n-m) k>| / (|q| |k|)`` and ``NORM_ERROR`` is
    ``max | |R^m q| / |q| - 1 |``, positions drawn uniformly from ``[0, max_position)``."""
    import jax  # imported here so that `python -m ropebook proofs` needs only sympy

    from ropebook import rope

    keys = jax.random.split(jax.random.key(seed), len(rope.PAIRINGS))
    return [
        _pairing_errors(pairing, key, draws, head_dim, base, max_position)
        for pairing, key in zip(rope.PAIRINGS, keys, strict=True)
    ]


def _pairing_errors(
    pairing: str, key, draws: int, head_dim: int, base: float, max_position: int
) -> dict:
    import jax
    import jax.numpy as jnp

    from ropebook import rope

    kq, kk, km, kn = jax.random.split(key, 4)
    shape = (draws, 1, 1, head_dim)
    q, k = jax.random.normal(kq, shape), jax.random.normal(kk, shape)
    m = jax.random.randint(km, (draws, 1), 0, max_position)
    n = jax.random.randint(kn, (draws, 1), 0, max_position)

    def rotate(x, positions):
        return rope.apply_rope(x, positions, base=base, pairing=pairing)

    scores = jnp.sum(rotate(q, m) * rotate(k, n), axis=-1)
    relative = jnp.sum(q * rotate(k, n - m), axis=-1)
    norms = jnp.linalg.norm(rotate(q, m), axis=-1) / jnp.linalg.norm(q, axis=-1)
    scale = jnp.linalg.norm(q, axis=-1) * jnp.linalg.norm(k, axis=-1)
    return {
        "pairing": pairing,
        RELATIVE_ERROR: float(jnp.max(jnp.abs(scores - relative) / scale)),
        NORM_ERROR: float(jnp.max(jnp.abs(norms - 1))),
    }


# ------------------------------------------------------------------ the frequency grid of variants
def variant_spectrum(
    variants: dict[str, tuple[str, float]], *, head_dim: int, base: float
) -> list[dict]:
    """One row per (variant, plane k): its angular frequency ``g_k`` (0 if the plane does not
    rotate), wavelength ``2π/g_k`` (``None`` if it does not rotate) and ``plotted frequency``:
    ``g_k``, or a decade below the smallest nonzero ``g_k`` of all variants for planes that do not
    rotate, which a log axis could not show. ``variants`` maps a label to ``(variant, p)`` of
    :func:`ropebook.rope.frequencies`."""
    from ropebook import rope

    rows = [
        {
            "variant": label,
            "plane k": k,
            "frequency g_k (rad/token)": float(g),
            "wavelength (tokens)": float(2 * math.pi / g) if g > 0 else None,
            "rotates": bool(g > 0),
        }
        for label, (variant, p) in variants.items()
        for k, g in enumerate(rope.frequencies(head_dim, base, variant=variant, proportion=p))
    ]
    floor = min(r["frequency g_k (rad/token)"] for r in rows if r["rotates"]) / 10
    for row in rows:
        row["plotted frequency"] = row["frequency g_k (rad/token)"] if row["rotates"] else floor
    return rows


def rotating_planes(spectrum: list[dict]) -> dict[str, int]:
    """How many planes rotate in each variant of a :func:`variant_spectrum`."""
    counts: dict[str, int] = {}
    for row in spectrum:
        counts[row["variant"]] = counts.get(row["variant"], 0) + row["rotates"]
    return counts
