"""RoPE's two defining properties: relative positions only, and norms preserved."""

from __future__ import annotations

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
    source="Su et al. 2021; Barbero et al. 2025, Sec. 2",
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
    source="Su et al. 2021",
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
