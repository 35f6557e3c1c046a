"""Lemma A.2, Lemma A.3 and Thm. 6.1 of Barbero et al. (2025) as numerics, in two dimensions.

A head with one RoPE frequency ``g`` scores a key ``j`` from the query at ``i`` as
``|q||k| cos(theta + g(j - i))`` (proofs.semantic_theory.polar_score). The query at the last
position ``N`` sees keys at distances ``m = 0 .. N``, i.e. at angles ``{g m mod 2 pi}``
(Lemma A.2: dense for irrational ``g / 2 pi``, as every RoPE frequency is).

- While those ``N + 1`` angles fit inside an *open semicircle* a head can be robust: aim the
  target key at the middle of the arc and every other key at its antipode; scaling the norms
  drives the target's weight to 1 wherever the target sits (:func:`robust_head`).
- Once they do not, no 2-D head can be: for any target and other keys a placement puts the target
  at an angle with ``cos <= 0`` and another token at one with ``cos >= 0``, so by Lemma A.3 the
  target gets at most 1/2. For ``0 < g <= pi`` the points are ``0, g, 2g, ...`` and the arc is
  first at least a half turn when ``g N >= pi``: :func:`breaking_length` computes the first such
  ``N`` exactly, :func:`breaking_length_closed_form` is ``ceil(pi / g)``. Slow frequencies survive
  longer, in proportion to ``1/g``. (Needing a second token on the other side costs at most one
  more position: the attack is guaranteed for ``N >= pi/g + 1`` when ``g <= pi/2``.)
- :func:`best_worst_case_alpha`: over a family of heads (target and other-key angles, norm ratio,
  norms bounded by a score budget) the best attention the target keeps against its *worst*
  placement, the quantity Thm. 6.1 bounds; :func:`swap_attack` runs the proof's swaps on one head.

The second half sweeps these over the chapter's frequencies and lengths (gap curves, breaking
lengths, best-head curves, the swap sweep) and decides what each sweep shows; the charts and
tables of them are in ``ropebook/present/semantic.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

TWO_PI = 2.0 * np.pi
# App. E.1's low-frequency chunk of Gemma 7B (chunk 119 of 128, θ = 10k) and its 8k context
GEMMA_G119, GEMMA_CONTEXT = 10_000 ** (-2 * 118 / 256), 8192


# ---------------------------------------------------------------- Lemma A.2: dense rotations


def circle_points(g: float, n: int) -> np.ndarray:
    """Angles ``g m mod 2 pi`` (float64) of the keys at distances ``m = 0 .. n``."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return np.mod(g * np.arange(n + 1, dtype=np.float64), TWO_PI)


def max_gap(angles) -> float:
    """Largest empty arc between consecutive angles on the circle (radians)."""
    a = np.sort(np.mod(np.asarray(angles, dtype=np.float64), TWO_PI))
    if a.size == 0:
        return TWO_PI
    gaps = np.diff(np.concatenate([a, [a[0] + TWO_PI]]))
    return float(gaps.max())


def max_gaps(g: float, ns) -> np.ndarray:
    """:func:`max_gap` of ``{g m : m = 0 .. N}`` for each ``N`` of ``ns`` (Lemma A.2: -> 0 as N
    grows when ``g / 2 pi`` is irrational; stays at ``2 pi / q`` when ``g = 2 pi p / q``)."""
    return np.array([max_gap(circle_points(g, int(n))) for n in ns])


def in_open_semicircle(g: float, n: int) -> bool:
    """Whether the angles of distances ``0 .. n`` fit inside an open half circle."""
    return max_gap(circle_points(g, n)) > np.pi


def breaking_length(g: float, n_max: int = 10**7) -> int | None:
    """Smallest ``N`` whose angles ``{g m : m <= N}`` fit in no open semicircle (None if > n_max).

    The property is monotone in ``N`` (more points never fit better), so bisection is exact.
    """
    if not in_open_semicircle(g, n_max):
        lo, hi = 0, n_max  # in(lo) is True (one point), in(hi) is False
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if in_open_semicircle(g, mid) else (lo, mid)
        return hi
    return None


def breaking_length_closed_form(g: float) -> int:
    """``ceil(pi / g)`` for ``0 < g <= pi``: the first ``N`` with ``g N >= pi``."""
    if not 0 < g <= np.pi:
        raise ValueError(f"the closed form needs 0 < g <= pi, got {g}")
    return math.ceil(np.pi / g)


def first_hit(g: float, target: float, tolerance: float, n_max: int = 10**7) -> int | None:
    """First ``n >= 1`` with ``g n mod 2 pi`` within ``tolerance`` of ``target`` (Lemma A.2 made
    constructive: the position a swap has to reach), or None within ``n_max``."""
    chunk = 1 << 16
    for start in range(1, n_max + 1, chunk):
        n = np.arange(start, min(start + chunk, n_max + 1), dtype=np.float64)
        diff = np.abs(np.mod(g * n - target + np.pi, TWO_PI) - np.pi)
        hits = np.nonzero(diff < tolerance)[0]
        if hits.size:
            return int(n[hits[0]])
    return None


# ---------------------------------------------------------------- Thm. 6.1: worst placements


def _logsumexp_excluding(a: np.ndarray) -> np.ndarray:
    """``log sum_{m' != m} exp(a[..., m'])`` for every ``m`` along the last axis (stable)."""
    prefix = np.logaddexp.accumulate(a, axis=-1)
    suffix = np.flip(np.logaddexp.accumulate(np.flip(a, -1), axis=-1), -1)
    pad = np.full(a.shape[:-1] + (1,), -np.inf)
    before = np.concatenate([pad, prefix[..., :-1]], axis=-1)
    after = np.concatenate([suffix[..., 1:], pad], axis=-1)
    return np.logaddexp(before, after)


def worst_case_alpha(g: float, n: int, phi_t, phi_o, c_t, c_o) -> np.ndarray:
    """Attention on the target under its *worst* placement, for 2-D heads given by parameters.

    One query at position ``n`` and ``n + 1`` keys at distances ``m = 0 .. n``: the target token's
    key scores ``c_t cos(phi_t - g m)``, every other token's ``c_o cos(phi_o - g m)`` (``phi`` =
    angle from query to key, ``c`` = ``|q||k|/sqrt(d)``). Returns ``min_m alpha(target at m)``;
    parameters broadcast against each other.
    """
    phi_t, phi_o, c_t, c_o = np.broadcast_arrays(*(np.asarray(x, np.float64) for x in
                                                   (phi_t, phi_o, c_t, c_o)))  # fmt: skip
    angles = g * np.arange(n + 1, dtype=np.float64)
    a_t = c_t[..., None] * np.cos(phi_t[..., None] - angles)
    a_o = c_o[..., None] * np.cos(phi_o[..., None] - angles)
    if n == 0:
        return np.ones(phi_t.shape)
    log_alpha = a_t - np.logaddexp(a_t, _logsumexp_excluding(a_o))
    return np.exp(log_alpha.min(axis=-1))


def robust_head(g: float, n: int) -> tuple[float, float]:
    """``(phi_t, phi_o)`` of the robust construction: target aimed at the middle of the arc of
    key angles ``[0, g n]``, other keys at its antipode."""
    phi_t = float(np.mod(g * n / 2.0, TWO_PI))
    return phi_t, float(np.mod(phi_t + np.pi, TWO_PI))


def best_worst_case_alpha(
    g: float,
    n: int,
    budget: float,
    *,
    n_phi: int = 128,
    ratios=(1.0, 0.5, 0.25, 0.0),
) -> dict[str, float]:
    """The best worst-case target attention over a family of 2-D heads with ``|q||k|/sqrt(d) <=
    budget``: target norm ``c_t = budget``, other keys ``c_o = ratio * budget``, other keys
    opposite the target, target angle on an ``n_phi`` grid plus :func:`robust_head`'s angle.

    A lower bound on the best any 2-D head can do; for ``N >= breaking_length(g) + 1`` (and
    ``g <= pi/2``) no head exceeds 1/2 (Thm. 6.1 with Lemma A.3).
    """
    phis = np.concatenate([np.linspace(0, TWO_PI, n_phi, endpoint=False), [robust_head(g, n)[0]]])
    best = {"alpha": -1.0}
    for ratio in ratios:
        alpha = worst_case_alpha(g, n, phis, phis + np.pi, budget, ratio * budget)
        k = int(np.argmax(alpha))
        if alpha[k] > best["alpha"]:
            best = {"alpha": float(alpha[k]), "phi_t": float(phis[k]), "ratio": float(ratio)}
    return best


# ---------------------------------------------------------------- Thm. 6.1: the proof's swaps


def rope_scores_2d(g: float, q, keys, query_position: int | None = None) -> np.ndarray:
    """Scores ``<rho(i g) q, rho(j g) k_j>`` (float64) of one 2-D query at ``query_position``
    (default: the last) against ``keys [T, 2]`` at positions ``j = 0 .. T-1``."""
    q, keys = np.asarray(q, np.float64), np.asarray(keys, np.float64)
    t = keys.shape[0]
    i = t - 1 if query_position is None else query_position
    angle = g * (np.arange(t) - i)  # key j is turned by g (j - i) relative to the query
    cos, sin = np.cos(angle), np.sin(angle)
    turned = np.stack([cos * keys[:, 0] - sin * keys[:, 1], sin * keys[:, 0] + cos * keys[:, 1]], 1)
    return turned @ q


def softmax(scores) -> np.ndarray:
    s = np.asarray(scores, np.float64)
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@dataclass
class SwapAttack:
    """What the proof of Thm. 6.1 did to one head: the swaps and the target's weight around them.

    ``case``: ``"non-positive"`` (the target's score was <= 0: one swap moves another token to a
    positive score) or ``"positive"`` (first move the target to a negative score, then if needed
    a second swap as in the other case). ``success``: the target is no longer the strict maximum,
    so Lemma A.3 bounds its weight by 1/2.
    """

    case: str
    swaps: list[tuple[int, int]]
    target_before: int
    target_after: int
    alpha_before: float
    alpha_after: float
    success: bool
    scores_before: np.ndarray = field(repr=False)
    scores_after: np.ndarray = field(repr=False)


def _best_move(g: float, q, keys, query: int, exclude: set[int]) -> tuple[int, int, float]:
    """Among tokens at positions ``k`` and destinations ``k' != k`` (both outside ``exclude`` and
    not the query's own position), the swap that gives the moved token its highest score.

    Token ``k`` scores ``|q||k_k| cos(theta_k + g (k' - query))`` at ``k'``, so its best
    destination is the one whose angle ``g (k' - query)`` is nearest ``-theta_k``: a sorted search
    over destination angles, ``O(T log T)`` rather than all ``T^2`` pairs.
    """
    t = keys.shape[0]
    allowed = np.array([p for p in range(t) if p not in exclude and p != query])
    if allowed.size < 2:
        return -1, -1, -np.inf
    r = np.linalg.norm(q) * np.linalg.norm(keys[allowed], axis=1)
    theta = np.arctan2(keys[allowed, 1], keys[allowed, 0]) - np.arctan2(q[1], q[0])
    dest_angle = np.mod(g * (allowed - query), TWO_PI)
    order = np.argsort(dest_angle)
    sorted_angle = dest_angle[order]
    wanted = np.mod(-theta, TWO_PI)
    slot = np.searchsorted(sorted_angle, wanted)
    best = (-1, -1, -np.inf)
    for shift in (-2, -1, 0, 1, 2):  # neighbours on the circle; two each side skip k' == k
        idx = order[np.mod(slot + shift, allowed.size)]
        score = r * np.cos(theta + g * (allowed[idx] - query))
        score[idx == np.arange(allowed.size)] = -np.inf
        k = int(np.argmax(score))
        if score[k] > best[2]:
            best = (int(allowed[k]), int(allowed[idx[k]]), float(score[k]))
    return best


def swap_attack(g: float, q, keys, target: int) -> SwapAttack:
    """Apply the proof of Thm. 6.1 to one 2-D head: query ``q`` at the last position, ``keys [T,
    2]`` at positions ``0 .. T-1``, the target token at ``target``. Positions other than the
    query's own may be swapped (a swap exchanges the two tokens, hence their keys).

    Case ``a_target <= 0``: swap some token ``k`` to a position ``k'`` where its score is positive
    (Lemma A.2 guarantees one for long enough sequences); the best such swap is taken. Case
    ``a_target > 0``: first swap the target to the position where its score is most negative,
    then, if it is still the maximum, do the first case's swap away from it.
    """
    keys = np.array(keys, np.float64)
    query = keys.shape[0] - 1
    if not 0 <= target < query:
        raise ValueError(f"target must be a key position before the query, got {target}")
    before = rope_scores_2d(g, q, keys)
    alpha_before = float(softmax(before)[target])
    swaps: list[tuple[int, int]] = []
    case = "positive" if before[target] > 0 else "non-positive"
    position = target
    if case == "positive":
        candidates = [p for p in range(query) if p != target]
        target_scores = rope_scores_2d(g, q, np.repeat(keys[target][None], query + 1, 0))
        destination = min(candidates, key=lambda p: target_scores[p])
        keys[[target, destination]] = keys[[destination, target]]
        swaps.append((target, destination))
        position = destination
    scores = rope_scores_2d(g, q, keys)
    others = np.delete(scores, position)
    if scores[position] >= others.max():
        k, k2, best = _best_move(g, q, keys, query, {position})
        if best >= scores[position]:
            keys[[k, k2]] = keys[[k2, k]]
            swaps.append((k, k2))
    after = rope_scores_2d(g, q, keys)
    return SwapAttack(
        case=case,
        swaps=swaps,
        target_before=target,
        target_after=position,
        alpha_before=alpha_before,
        alpha_after=float(softmax(after)[position]),
        success=bool(after[position] <= np.delete(after, position).max()),
        scores_before=before,
        scores_after=after,
    )


def semantic_head_2d(
    rng: np.random.Generator,
    n: int,
    g: float,
    *,
    aim: str = "previous",
    norm: float = 3.0,
    other_scale: float = 0.3,
    spread: float = 0.5,
) -> tuple[np.ndarray, np.ndarray, int]:
    """A random 2-D "semantic" head on ``n + 1`` positions: query ``q``, keys ``[n + 1, 2]`` (the
    query's own key last) and the target's position.

    Every other key points roughly away from the target's direction (angle ``pi +- spread``) with
    a norm of ``other_scale * norm * U(0.5, 1)``. ``aim="previous"``: the target key equals the
    query and sits at the previous position, the natural head for "attend to the token before
    me". ``aim="robust"``: the target key is turned by ``g n / 2`` from the query (the middle of
    the arc of key angles, :func:`robust_head`) and sits at distance ``n // 2``, the head that
    survives longest: every placement keeps it positive while ``g n < pi``.
    """
    if aim not in ("previous", "robust"):
        raise ValueError(f"aim must be 'previous' or 'robust', got {aim!r}")
    base = rng.uniform(0, TWO_PI)
    q = norm * np.array([np.cos(base), np.sin(base)])
    direction = base + (robust_head(g, n)[0] if aim == "robust" else 0.0)
    angles = direction + np.pi + rng.uniform(-spread, spread, n + 1)
    radii = other_scale * norm * rng.uniform(0.5, 1.0, n + 1)
    keys = np.stack([radii * np.cos(angles), radii * np.sin(angles)], 1)
    target = n - 1 if aim == "previous" else n - max(n // 2, 1)
    keys[target] = norm * np.array([np.cos(direction), np.sin(direction)])
    return q, keys, target


# ---------------------------------------------------------------- Lemma A.3 on random vectors


@dataclass
class SoftmaxBoundCheck:
    """Lemma A.3 on random activation vectors: ``violations`` of ``alpha_i <= 1/(m+1)`` among the
    ``checked`` entries that have ``m >= 1`` competitors at least as large."""

    n_draws: int
    checked: int
    violations: int
    worst_ratio: float


def check_softmax_bound(rng: np.random.Generator, n_draws: int) -> SoftmaxBoundCheck:
    """Draw ``n_draws`` vectors (length 2 to 64, entries N(0, 3^2): softmaxes from flat to sharp)
    and check Lemma A.3's bound ``alpha_i (m + 1) <= 1`` on every entry with ``m >= 1`` entries
    at least as large."""
    violations, worst_ratio, checked = 0, 0.0, 0
    for _ in range(n_draws):
        a = rng.normal(0, 3, size=rng.integers(2, 65))
        alpha = softmax(a)
        competitors = (a[None, :] >= a[:, None]).sum(1) - 1
        mask = competitors >= 1
        checked += int(mask.sum())
        ratio = alpha[mask] * (competitors[mask] + 1)
        violations += int((ratio > 1 + 1e-12).sum())
        worst_ratio = max(worst_ratio, float(ratio.max(initial=0.0)))
    return SoftmaxBoundCheck(n_draws, checked, violations, worst_ratio)


# ---------------------------------------------------------------- Lemma A.2: gap curves


@dataclass
class GapCurves:
    """Largest empty arc of ``{g m mod 2 pi : m <= N}`` against ``N`` for RoPE frequencies and
    one rational rotation ``2 pi p / q``. ``rows``: chart records; ``final``: label -> gap at
    the largest ``N``."""

    rows: list[dict]
    final: dict[str, float]
    n_max: int
    rational: tuple[int, int]

    @property
    def rational_label(self) -> str:
        return f"rational 2π·{self.rational[0]}/{self.rational[1]}"

    @property
    def largest_irrational_gap(self) -> float:
        return max(v for k, v in self.final.items() if k != self.rational_label)

    @property
    def dense(self) -> bool:
        """Lemma A.2 as measured: every RoPE frequency's gap is below 0.01 rad at ``n_max`` and
        the rational rotation's gap stays exactly ``2 pi / q``."""
        rational_gap = self.final[self.rational_label]
        return (
            self.largest_irrational_gap < 0.01
            and abs(rational_gap - TWO_PI / self.rational[1]) < 1e-9
        )


def rotation_gaps(frequencies, n_max: int, *, n_points: int = 40, rational=(3, 17)) -> GapCurves:
    """:func:`max_gaps` of each frequency and of ``2 pi p / q`` at ``n_points`` lengths
    log-spaced from 1 to ``n_max``."""
    ns = np.unique(np.geomspace(1, n_max, n_points).astype(int))
    p, q = rational
    labelled = [(f"g = {g:.3g}", float(g)) for g in frequencies]
    labelled.append((f"rational 2π·{p}/{q}", TWO_PI * p / q))
    rows = [
        {"rotation": label, "N (tokens)": int(n), "largest gap (rad)": float(gap)}
        for label, g in labelled
        for n, gap in zip(ns, max_gaps(g, ns), strict=True)
    ]
    final = {r["rotation"]: r["largest gap (rad)"] for r in rows if r["N (tokens)"] == ns[-1]}
    return GapCurves(rows, final, int(ns[-1]), (p, q))


# ---------------------------------------------------------------- Thm. 6.1: breaking lengths


@dataclass
class BreakingTable:
    """:func:`breaking_length` by bisection next to ``ceil(pi / g)`` for every chunk of a head
    and one reference frequency. ``exact``: the two agree on every row; ``slope``: log-log slope
    of ``N*`` against ``g`` over the head's chunks (-1 for ``1/g`` scaling)."""

    rows: list[dict]
    exact: bool
    slope: float
    reference_n_star: int


def breaking_table(
    frequencies, context: int, *, reference: tuple[str, float, int], n_max: int = 10**6
) -> BreakingTable:
    """Rows per chunk ``k`` of ``frequencies`` (``N* / context`` relative to ``context``) and a
    last row for ``reference = (label, g, its context)``."""
    labelled = [(str(k), float(g), context) for k, g in enumerate(frequencies)]
    labelled.append(reference)
    rows = []
    for label, g, ctx in labelled:
        n_star = breaking_length(g, n_max=n_max)
        rows.append(
            {
                "chunk": label,
                "g (rad/token)": g,
                "2π/g": TWO_PI / g,
                "N* (bisection)": n_star,
                "⌈π/g⌉": breaking_length_closed_form(g),
                "N* / context": n_star / ctx,
            }
        )
    book = rows[:-1]
    slope = np.polyfit(np.log([r["g (rad/token)"] for r in book]),
                       np.log([r["N* (bisection)"] for r in book]), 1)[0]  # fmt: skip
    exact = all(r["N* (bisection)"] == r["⌈π/g⌉"] for r in rows)
    return BreakingTable(rows, exact, float(slope), rows[-1]["N* (bisection)"])


# ---------------------------------------------------------------- Thm. 6.1: best heads


def frequency_label(g: float) -> str:
    return f"g = {g:.3g}" if g > 0 else "g = 0 (no rotation)"


@dataclass
class BestHeadCurves:
    """:func:`best_worst_case_alpha` against ``N`` for each frequency and for ``g = 0``.
    ``first_below``: label -> first ``N`` on the curve where the best head keeps < 1/2."""

    rows: list[dict]
    first_below: dict[str, int | None]
    frequencies: list[float]
    budget: float


def best_head_curves(frequencies, budget: float, *, n_phi: int = 128) -> BestHeadCurves:
    """18 log-spaced lengths from ``N*/16`` to ``4 N*`` per frequency (``N* = ceil(pi/g)``); the
    unrotated head (``g = 0``) from 1 to four times the slowest frequency's ``N*``."""
    rows, first_below = [], {}
    slowest = breaking_length_closed_form(min(frequencies))
    for g in [*frequencies, 0.0]:
        if g > 0:
            n_star = breaking_length_closed_form(g)
            ns = np.unique(np.geomspace(max(1, n_star / 16), 4 * n_star, 18).astype(int))
        else:
            ns = np.unique(np.geomspace(1, 4 * slowest, 18).astype(int))
        label = frequency_label(g)
        below = None
        for n in ns:
            alpha = best_worst_case_alpha(g, int(n), budget, n_phi=n_phi)["alpha"]
            rows.append({"frequency": label, "N (tokens)": int(n), "best worst-case α": alpha})
            if below is None and alpha < 0.5:
                below = int(n)
        first_below[label] = below
    return BestHeadCurves(rows, first_below, [float(g) for g in frequencies], float(budget))


@dataclass
class FamilyCheck:
    """The best head of the family at ``N*/2`` (budget) and at ``N* + 1`` (10 x budget).

    ``broken_above``: no head keeps more than 1/2 at ``N* + 1`` (Thm. 6.1 with Lemma A.3);
    ``robust_below``: the best head keeps more than 0.99 at ``N*/2`` (the converse, which the
    theorem does not claim)."""

    rows: list[dict]
    broken_above: bool
    robust_below: bool


def family_check(
    frequencies, budget: float, *, n_phi: int = 128, first_below: dict | None = None
) -> FamilyCheck:
    rows = []
    for g in frequencies:
        n_star = breaking_length_closed_form(g)
        above = best_worst_case_alpha(g, n_star + 1, 10 * budget, n_phi=n_phi)["alpha"]
        below = best_worst_case_alpha(g, max(1, n_star // 2), budget, n_phi=n_phi)["alpha"]
        rows.append(
            {
                "g (rad/token)": float(g),
                "N*": n_star,
                "α at N*/2": below,
                "α at N*+1": above,
                "first N, α < ½": (first_below or {}).get(frequency_label(g)),
            }
        )
    return FamilyCheck(
        rows,
        broken_above=all(r["α at N*+1"] <= 0.5 for r in rows),
        robust_below=all(r["α at N*/2"] > 0.99 for r in rows),
    )


# ---------------------------------------------------------------- Thm. 6.1: swaps on many heads


def attack_sweep(frequencies, ratios, *, n_heads: int, seed: int) -> list[dict]:
    """:func:`swap_attack` on ``n_heads`` random heads (:func:`semantic_head_2d`, spread 0.3) of
    each aim, frequency and length ``N = ratio * N*``: mean attention on the target before and
    after, and the share of heads pushed to the target not being the maximum (success)."""
    rows = []
    for g in frequencies:
        g = float(g)
        n_star = breaking_length_closed_form(g)
        for aim in ("previous", "robust"):
            for ratio in ratios:
                n = max(2, int(round(ratio * n_star)))
                rng = np.random.default_rng([seed, 62, int(1e6 * g), n, int(aim == "robust")])
                results = [
                    swap_attack(g, *semantic_head_2d(rng, n, g, aim=aim, spread=0.3))
                    for _ in range(n_heads)
                ]
                rows.append(
                    {
                        "ratio": ratio,
                        "frequency": frequency_label(g),
                        "g": g,
                        "head": aim,
                        "N": n,
                        "N / N*": n / n_star,
                        "α before": float(np.mean([r.alpha_before for r in results])),
                        "α after": float(np.mean([r.alpha_after for r in results])),
                        "success": float(np.mean([r.success for r in results])),
                    }
                )
    return rows


def attacks_as_proved(rows: list[dict]) -> bool:
    """The proof's prediction: every attack succeeds from ``N* + 1`` on, and none succeeds on
    the robust head below ``N*``."""
    n_star = {r["g"]: breaking_length_closed_form(r["g"]) for r in rows}
    above = all(r["success"] == 1.0 for r in rows if r["N"] >= n_star[r["g"]] + 1)
    below = all(
        r["success"] == 0.0 for r in rows if r["head"] == "robust" and r["N"] < n_star[r["g"]]
    )
    return above and below
