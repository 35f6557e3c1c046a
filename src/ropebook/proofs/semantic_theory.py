"""Semantic channels (Barbero et al. 2025, Sec. 6 and App. A.3): the two algebraic facts that
Thm. 6.1's proof runs on.

- Lemma A.3: a softmax weight whose activation is not the largest is at most 1/2 (and at most
  ``1/(m+1)`` when ``m`` activations are at least as large).
- The polar form of a 2-D RoPE score: ``<rho(i g) q, rho(j g) k> = |q||k| cos(theta + g(j-i))``
  with ``theta`` the angle from ``q`` to ``k``, the equation the proof turns by choosing ``j``.
"""

from __future__ import annotations

import sympy as sp

from ropebook.proofs import Proof, require, require_zero, statement
from ropebook.proofs.rope_basics import rotation


def _softmax_gap(x: sp.Symbol, competitors: list[sp.Expr], rest: sp.Symbol, m: int) -> sp.Expr:
    """``1/(m+1) - alpha_i`` with ``alpha_i = x / (x + sum(competitors) + rest)``."""
    return sp.together(sp.Rational(1, m + 1) - x / (x + sum(competitors) + rest))


@statement(
    "semantic.lemma_a3",
    source="Barbero et al. 2025, Lemma A.3",
    claim="if a_i <= a_j for some j != i then softmax(a)_i <= 1/2, strictly below 1/2 when "
    "a_i < a_j or a third token exists; with m competitors >= a_i, alpha_i <= 1/(m+1)",
)
def lemma_a3(proof: Proof) -> None:
    # exp is increasing: a_i <= a_j  <=>  e^{a_j} = e^{a_i} + t with t >= 0 (t > 0 if strict).
    x = sp.symbols("x", positive=True)  # e^{a_i}
    t = sp.symbols("t", nonnegative=True)  # e^{a_j} - e^{a_i}
    t_strict = sp.symbols("t", positive=True)
    rest = sp.symbols("R", nonnegative=True)  # sum of the other exponentials
    rest_pos = sp.symbols("R", positive=True)
    a_i, a_j = sp.symbols("a_i a_j", real=True)
    z = sp.exp(a_i) + sp.exp(a_j) + rest
    require_zero(
        proof,
        r"$\alpha_j - \alpha_i - (e^{a_j} - e^{a_i})/Z$: the larger activation gets more weight",
        sp.exp(a_j) / z - sp.exp(a_i) / z - (sp.exp(a_j) - sp.exp(a_i)) / z,
    )
    gap = _softmax_gap(x, [x + t], rest, 1)
    require(
        proof,
        r"$\tfrac12 - \alpha_i$ with $x = e^{a_i}$, $e^{a_j} = x + t$ ($t \ge 0$), "
        r"$R = \sum_{k \ne i,j} e^{a_k} \ge 0$",
        sp.true if gap.is_nonnegative else sp.false,
        sp.Ge(gap, 0, evaluate=False),
    )
    strict = _softmax_gap(x, [x + t_strict], rest, 1)
    require(
        proof,
        r"strict $a_i < a_j$ ($t > 0$): $\tfrac12 - \alpha_i > 0$",
        sp.true if strict.is_positive else sp.false,
        sp.Gt(strict, 0, evaluate=False),
    )
    third = _softmax_gap(x, [x + t], rest_pos, 1)
    require(
        proof,
        r"tie $a_i = a_j$ but a third token ($R > 0$): $\tfrac12 - \alpha_i > 0$",
        sp.true if third.is_positive else sp.false,
        sp.Gt(third, 0, evaluate=False),
    )
    for m in (2, 3):
        ts = sp.symbols(f"t_1:{m + 1}", nonnegative=True)
        general = _softmax_gap(x, [x + s for s in ts], rest, m)
        require(
            proof,
            f"{m} competitors $a_{{j_l}} \\ge a_i$: $\\tfrac1{{{m + 1}}} - \\alpha_i \\ge 0$",
            sp.true if general.is_nonnegative else sp.false,
            sp.Ge(general, 0, evaluate=False),
        )


@statement(
    "semantic.polar_score",
    source="Barbero et al. 2025, Thm. 6.1 (proof, App. A.3)",
    claim="a 2-D RoPE score is |q||k| cos(theta + g(j-i)): moving the key by one position turns "
    "the angle by g",
)
def polar_score(proof: Proof) -> None:
    i, j = sp.symbols("i j", integer=True)
    g = sp.symbols("g", positive=True)
    r_q, r_k = sp.symbols("r_q r_k", positive=True)
    phi_q, phi_k = sp.symbols("phi_q phi_k", real=True)
    q = sp.Matrix([r_q * sp.cos(phi_q), r_q * sp.sin(phi_q)])
    k = sp.Matrix([r_k * sp.cos(phi_k), r_k * sp.sin(phi_k)])
    score = (rotation(i * g) * q).dot(rotation(j * g) * k)
    require_zero(
        proof,
        r"$\langle \rho(ig) q, \rho(jg) k\rangle - |q||k|\cos(\phi_k - \phi_q + g(j-i))$",
        score - r_q * r_k * sp.cos(phi_k - phi_q + g * (j - i)),
    )
    # Placing the key half a turn further flips the sign of its score: the lever of every swap.
    shifted = score.subs(j, j + sp.pi / g)
    require_zero(
        proof,
        r"moving the key by $\pi/g$ positions negates the score: $a(j + \pi/g) + a(j)$",
        shifted + score,
    )
