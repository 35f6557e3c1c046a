"""Positional heads: NoPE cannot build them (Prop. 5.2), RoPE can (Thm. 5.3).

Barbero et al. (2025), Sec. 5 and App. A.2. Activations are the raw dot products
``a_ij = <q_i, k_j>`` (after rotation for RoPE) and ``alpha_ij = softmax_j(a_ij)`` over ``j <= i``.
"""

from __future__ import annotations

import sympy as sp

from ropebook.proofs import Proof, require, require_zero, statement
from ropebook.proofs.rope_basics import block_rotation, rotation


@statement(
    "positional_heads.prop52",
    source="Barbero et al. 2025, Prop. 5.2, App. A.2",
    claim="with NoPE, on [bos, x, x] alpha_33 = alpha_32 = 1/(exp(a31-a33)+2) < 1/2; "
    "a token seen r times caps its own (or any repeated key's) weight at 1/r",
)
def nope_cannot(proof: Proof) -> None:
    # A NoPE head in isolation maps each token to its query and key by the same linear maps,
    # whatever the position: q_i = W_q x_i, k_j = W_k x_j. Positions 2 and 3 hold the same token.
    x = sp.Matrix(sp.symbols("x_1:3", real=True))
    w_q = sp.Matrix(2, 2, sp.symbols("Wq_1:5", real=True))
    w_k = sp.Matrix(2, 2, sp.symbols("Wk_1:5", real=True))
    q3 = w_q * x
    k2, k3 = w_k * x, w_k * x  # the BOS key k1 = W_k x_bos plays no part in the tie
    a32, a33 = q3.dot(k2), q3.dot(k3)
    require_zero(proof, r"$a_{3,2} - a_{3,3}$ (same token, no position)", a32 - a33)
    # With a32 = a33 the softmax row is a function of two free real activations.
    s31, s33 = sp.symbols("a_31 a_33", real=True)
    alpha33 = sp.exp(s33) / (sp.exp(s31) + 2 * sp.exp(s33))
    require_zero(
        proof,
        r"$\alpha_{3,3} - 1/(e^{a_{3,1}-a_{3,3}} + 2)$",
        alpha33 - 1 / (sp.exp(s31 - s33) + 2),
    )
    gap = sp.simplify(sp.Rational(1, 2) - alpha33)
    require(
        proof,
        r"$\tfrac12 - \alpha_{3,3} > 0$ for all real $a_{3,1}, a_{3,3}$",
        gap.is_positive,
        gap,
    )
    # The previous-token weight alpha_32 has the same numerator: the same bound.
    alpha32 = sp.exp(s33) / (sp.exp(s31) + 2 * sp.exp(s33))
    require_zero(proof, r"$\alpha_{3,2} - \alpha_{3,3}$", alpha32 - alpha33)
    # General form: r copies of a key share one activation; everything else sums to Z > 0.
    r = sp.symbols("r", integer=True, positive=True)
    z = sp.symbols("Z", positive=True)
    a = sp.symbols("a", real=True)
    share = sp.exp(a) / (z + r * sp.exp(a))
    slack = sp.factor(sp.simplify(1 / r - share))
    require(
        proof,
        r"$\tfrac1r - \frac{e^{a}}{Z + r e^{a}} > 0$ ($r$ identical keys, $Z$ the rest)",
        slack.is_positive,
        slack,
    )


@statement(
    "positional_heads.thm53",
    source="Barbero et al. 2025, Thm. 5.3, App. A.2",
    claim="q = k = psi gives a_ij = ||psi||^2 cos((j-i)g), maximal (= the Cauchy-Schwarz bound) "
    "at j = i; k = R psi moves the maximum to j = i-1; alpha on the target -> 1 as ||psi||^2 -> oo",
)
def rope_can(proof: Proof) -> None:
    i, j = sp.symbols("i j", integer=True)
    g = sp.symbols("g", positive=True)
    psi = sp.Matrix(sp.symbols("psi_1:3", real=True))
    norm2 = psi.dot(psi)
    # Diagonal: every query and key is psi, rotated by RoPE to its own position.
    a_ij = (rotation(i * g) * psi).dot(rotation(j * g) * psi)
    require_zero(
        proof,
        r"diagonal: $a_{i,j} - \lVert\psi\rVert^2\cos((j-i)g)$",
        a_ij - norm2 * sp.cos((j - i) * g),
    )
    require_zero(
        proof, r"diagonal: $a_{i,i} - \lVert q_i\rVert\lVert k_i\rVert$ (Cauchy–Schwarz tight)",
        a_ij.subs(j, i) - norm2,
    )  # fmt: skip
    # Previous token: keys are R psi, so the key at i-1 lands exactly on the query at i.
    phi = rotation(g) * psi
    a_prev = (rotation(i * g) * psi).dot(rotation((i - 1) * g) * phi)
    require_zero(proof, r"previous token: $a_{i,i-1} - \lVert\psi\rVert^2$", a_prev - norm2)
    a_prev_j = (rotation(i * g) * psi).dot(rotation(j * g) * phi)
    require_zero(
        proof,
        r"previous token: $a_{i,j} - \lVert\psi\rVert^2\cos((j+1-i)g)$",
        a_prev_j - norm2 * sp.cos((j + 1 - i) * g),
    )
    # d = 4, two planes at different frequencies: k^(k) = rho(g_k) psi^(k) still hits ||psi||^2.
    g1, g2 = sp.symbols("g_1 g_2", positive=True)
    psi4 = sp.Matrix(sp.symbols("psi_1:5", real=True))
    phi4 = block_rotation(1, [g1, g2]) * psi4
    a_prev4 = (block_rotation(i, [g1, g2]) * psi4).dot(block_rotation(i - 1, [g1, g2]) * phi4)
    require_zero(
        proof, r"$d=4$: $a_{i,i-1} - \lVert\psi\rVert^2$ with $k = R\psi$", a_prev4 - psi4.dot(psi4)
    )
    # Softmax row. Write s = ||psi||^2 and delta_m = 1 - cos(m g) > 0 for the other keys.
    s = sp.symbols("s", positive=True)
    deltas = sp.symbols("delta_1:5", positive=True)
    alpha = 1 / (1 + sum(sp.exp(-s * d) for d in deltas))
    require(
        proof,
        r"$\lim_{s\to\infty} 1/(1+\sum_m e^{-s\delta_m}) = 1$ ($\delta_m > 0$, 4 other keys)",
        sp.Eq(sp.limit(alpha, s, sp.oo), 1),
        sp.limit(alpha, s, sp.oo),
    )
    # The same limit for the fastest RoPE frequency g = 1 rad/token and N = 8 positions.
    row = 1 / (1 + sum(sp.exp(s * (sp.cos(m) - 1)) for m in range(1, 8)))
    require(
        proof,
        r"$g=1$, $N=8$: $\lim_{s\to\infty} \alpha_{8,8} = 1$",
        sp.Eq(sp.limit(row, s, sp.oo), 1),
        sp.limit(row, s, sp.oo),
    )


@statement(
    "positional_heads.threshold",
    source="Barbero et al. 2025, Thm. 5.3 (closed form for epsilon)",
    claim="if every wrong key scores at most ||psi||^2 (1 - delta) and a row has at most N-1 of "
    "them, ||psi||^2 >= ln((N-1)(1-eps)/eps)/delta gives alpha on the target >= 1 - eps",
)
def threshold(proof: Proof) -> None:
    s, delta, eps = sp.symbols("s delta epsilon", positive=True)
    n = sp.symbols("N", integer=True, positive=True)
    lower = 1 / (
        1 + (n - 1) * sp.exp(-s * delta)
    )  # alpha >= this when each wrong term <= e^{-s delta}
    s_star = sp.log((n - 1) * (1 - eps) / eps) / delta
    require_zero(
        proof,
        r"$\big[1/(1+(N-1)e^{-s\delta})\big]_{s=s^\star} - (1-\epsilon)$",
        sp.simplify(lower.subs(s, s_star) - (1 - eps)),
    )
    derivative = sp.simplify(sp.diff(lower, s))
    shown = sp.factor(derivative)
    require(
        proof,
        r"$\partial_s \big[1/(1+(N-1)e^{-s\delta})\big] > 0$ for $N \ge 2$ (larger $s$ only helps)",
        derivative.subs(n, n + 1).is_positive,
        shown,
    )
