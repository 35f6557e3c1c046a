"""Does RoPE decay with distance? Barbero et al. (2025), Sec. 3 and App. A.1.

Convention (the paper's Eq. 3 and :func:`ropebook.rope.apply_rope`): a query at position ``i``
and a key at position ``j <= i`` score ``q_i^T R^(j-i) k_j``; the *distance* back from the query
is ``i - j >= 0``, so ``j - i = -(distance)``.
"""

from __future__ import annotations

import sympy as sp
from sympy import stats

from ropebook.proofs import Proof, require, require_zero, statement
from ropebook.proofs.rope_basics import block_rotation, rotation


def _chunk_norms_squared(vector: sp.Matrix) -> list[sp.Expr]:
    """``||v^(k)||^2`` of each 2-D chunk of ``vector`` (interleaved chunks ``(2k, 2k+1)``)."""
    return [vector[2 * c] ** 2 + vector[2 * c + 1] ** 2 for c in range(len(vector) // 2)]


@statement(
    "decay.ones_closed_form",
    source="Su et al. 2024; Barbero et al. 2025, Fig. 2(a)",
    claim="for all-ones q and k, q^T R^r k = sum_k 2 cos(r g_k): the curve of Fig. 2(a)",
)
def ones_closed_form(proof: Proof) -> None:
    r = sp.symbols("r", integer=True)
    g1, g2 = sp.symbols("g_1 g_2", positive=True)
    for frequencies, label in (([g1], "one 2-D block"), ([g1, g2], "two blocks (d = 4)")):
        ones = sp.ones(2 * len(frequencies), 1)
        activation = ones.dot(block_rotation(r, frequencies) * ones)
        closed = sum(2 * sp.cos(r * g) for g in frequencies)
        require_zero(
            proof,
            f"{label}: $\\mathbf 1^\\top R^r \\mathbf 1 - \\sum_k 2\\cos(r g_k)$",
            activation - closed,
        )


@statement(
    "decay.prop31",
    source="Barbero et al. 2025, Prop. 3.1, App. A.1",
    claim=(
        "with k = R^r q the activation q^T R^(j-i) k = sum_k ||q^(k)||^2 cos((j-i+r) g_k) is "
        "maximal, = ||q||^2, exactly at j - i = -r (the key r tokens before the query)"
    ),
)
def prop31(proof: Proof) -> None:
    n, r = sp.symbols("n r", integer=True)  # n = j - i
    g1, g2 = sp.symbols("g_1 g_2", positive=True)
    for frequencies, label in (([g1], "one 2-D block"), ([g1, g2], "two blocks (d = 4)")):
        dim = 2 * len(frequencies)
        psi = sp.Matrix(sp.symbols(f"psi_1:{dim + 1}", real=True))
        key = block_rotation(r, frequencies) * psi  # k = R^r psi
        activation = psi.dot(block_rotation(n, frequencies) * key)  # q^T R^(j-i) k, q = psi
        norms = _chunk_norms_squared(psi)
        closed = sum(s * sp.cos((n + r) * g) for s, g in zip(norms, frequencies, strict=True))
        require_zero(
            proof,
            f"{label}: $\\psi^\\top R^{{n}} R^{{r}}\\psi - \\sum_k \\lVert\\psi^{{(k)}}\\rVert^2"
            f"\\cos((n+r)g_k)$ with $n = j-i$",
            activation - closed,
        )
        require_zero(
            proof,
            f"{label}: at $n = -r$ the activation minus $\\lVert\\psi\\rVert^2$",
            activation.subs(n, -r) - psi.dot(psi),
        )
        # ||psi||^2 - activation = sum_k ||psi^(k)||^2 (1 - cos) = sum_k 2 ||psi^(k)||^2 sin^2(.)
        require_zero(
            proof,
            f"{label}: $\\lVert\\psi\\rVert^2 - \\text{{activation}} - "
            f"\\sum_k \\lVert\\psi^{{(k)}}\\rVert^2\\,(1 - \\cos((n+r)g_k))$",
            psi.dot(psi)
            - activation
            - sum(s * (1 - sp.cos((n + r) * g)) for s, g in zip(norms, frequencies, strict=True)),
        )
        gap = sum(
            2 * s * sp.sin((n + r) * g / 2) ** 2 for s, g in zip(norms, frequencies, strict=True)
        )
        require(
            proof,
            f"{label}: with $1-\\cos x = 2\\sin^2(x/2)$ that gap is a sum of squares, so "
            "activation $\\leq \\lVert\\psi\\rVert^2$",
            sp.true if gap.is_nonnegative else sp.false,
            sp.GreaterThan(gap, 0, evaluate=False),
        )
    x = sp.symbols("x", real=True)
    require_zero(
        proof,
        "half-angle identity: $1 - \\cos x - 2\\sin^2(x/2)$",
        1 - sp.cos(x) - 2 * sp.sin(x / 2) ** 2,
    )


@statement(
    "decay.lemma_a1",
    source="Barbero et al. 2025, Lemma A.1, App. A.1",
    claim=(
        "for rational g != 0 and integer n, n g = 0 (mod 2 pi) only when n = 0; so with the "
        "fastest chunk g_1 = 1 the Prop. 3.1 maximum is reached at j - i = -r alone"
    ),
)
def lemma_a1(proof: Proof) -> None:
    n, m = sp.symbols("n m", integer=True, nonzero=True)
    a, b = sp.symbols("a b", integer=True, positive=True)  # g = a / b
    forced = proof.show(
        r"$n\,\frac{a}{b} = 2\pi m$ with $n, m \neq 0$ would force $\pi$ to equal",
        n * a / (2 * m * b),
    )
    require(
        proof,
        r"that value is rational but $\pi$ is not, so $m = 0$, hence $n g = 0$ and $n = 0$",
        sp.true if forced.is_rational and sp.pi.is_rational is False else sp.false,
        sp.Ne(sp.pi, forced),
    )
    r = sp.symbols("r", integer=True)
    n = sp.symbols("n", integer=True)
    x = sp.symbols("x", real=True)
    # Applied to Prop. 3.1: the fastest chunk has g_1 = theta^0 = 1. Its term reaches its maximum
    # only where cos(n + r) = 1, i.e. n + r in {2 pi m}; an integer 2 pi m needs m = 0 (pi is
    # irrational), so the maximum over integer n is attained at n = -r alone.
    solutions = proof.show(
        "fastest chunk $g_1 = 1$: real solutions of $\\cos x = 1$",
        sp.solveset(sp.cos(x) - 1, x, sp.S.Reals),
    )
    variable = solutions.lamda.variables[0] if isinstance(solutions, sp.ImageSet) else None
    is_lattice = (
        variable is not None
        and solutions.base_sets == (sp.S.Integers,)
        and sp.simplify(solutions.lamda.expr - 2 * sp.pi * variable) == 0
    )
    require(
        proof,
        "the solutions are $2\\pi m$, $m\\in\\mathbb Z$, i.e. the image of $m \\mapsto 2\\pi m$",
        sp.true if is_lattice else sp.false,
        solutions,
    )
    m = sp.symbols("m", integer=True, nonzero=True)
    require(
        proof,
        "$2\\pi m$ is an integer for no integer $m \\neq 0$ ($\\pi$ is irrational), so "
        "$\\cos(n + r) = 1$ with $n, r \\in \\mathbb Z$ forces $n = -r$",
        sp.true if (2 * sp.pi * m).is_integer is False and sp.pi.is_rational is False else sp.false,
        sp.Eq(n, -r),
    )


@statement(
    "decay.prop32",
    source="Barbero et al. 2025, Prop. 3.2, App. A.1",
    claim=(
        "for q, k ~ N(0, I) independent, E[q^T R^r k] = 0 at every distance r "
        "(and the spread E[(q^T R^r k)^2] = d does not change with r either)"
    ),
)
def prop32(proof: Proof) -> None:
    r = sp.symbols("r", integer=True)
    alpha = sp.symbols("alpha", real=True)
    g1, g2 = sp.symbols("g_1 g_2", positive=True)
    rho = rotation(alpha)
    require_zero(
        proof,
        "the paper's step: $\\operatorname{Cov}[\\rho k] = \\rho\\rho^\\top$; "
        "$\\sum_{ab}(\\rho(\\alpha)\\rho(\\alpha)^\\top - I)_{ab}^2$",
        sum(e**2 for e in rho * rho.T - sp.eye(2)),
    )
    # Linearity and independence: q^T M k = sum_ab M_ab q_a k_b, E[q_a k_b] = E[q_a] E[k_b] = 0.
    dim = 4
    q = sp.Matrix([stats.Normal(f"q_{a}", 0, 1) for a in range(1, dim + 1)])
    k = sp.Matrix([stats.Normal(f"k_{a}", 0, 1) for a in range(1, dim + 1)])
    generic = sp.Matrix(dim, dim, lambda a, b: sp.Symbol(f"M_{a + 1}{b + 1}"))
    require_zero(
        proof,
        "any fixed matrix $M$ (d = 4): $\\mathbb E[q^\\top M k] = \\sum_{ab} M_{ab}\\,"
        "\\mathbb E[q_a]\\,\\mathbb E[k_b]$",
        stats.E((q.T * generic * k)[0]),
    )
    require_zero(
        proof,
        "one 2-D block: $\\mathbb E[q^\\top \\rho(\\alpha) k]$",
        stats.E((q[:2, 0].T * rho * k[:2, 0])[0]),
    )
    rotated = block_rotation(r, [g1, g2])
    activation = (q.T * rotated * k)[0]
    require_zero(proof, "two blocks (d = 4): $\\mathbb E[q^\\top R^r k]$", stats.E(activation))
    require_zero(
        proof,
        "two blocks (d = 4): $\\mathbb E[(q^\\top R^r k)^2] - d$ (no decay of the spread)",
        stats.E(sp.expand(activation**2)) - dim,
    )
