"""Semantic channels and why low frequencies break. Barbero et al. (2025), Sec. 6, App. A.3, E.

Three parts, one per idea of the chapter:

**Thm. 6.1 in two dimensions.** A head with one RoPE frequency ``g`` scores a key ``j`` from the
query at ``i`` as ``|q||k| cos(theta + g(j - i))`` (proofs.semantic_channels.polar_score). The
query at the last position ``N`` sees keys at distances ``m = 0 .. N``, i.e. at angles
``{g m mod 2 pi}`` (Lemma A.2: dense for irrational ``g / 2 pi``, as every RoPE frequency is).

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

**Trained models.** :func:`scan_semantic` measures every head on token windows: the attention a
query gives to the previous token when that token is an apostrophe versus when it is not (a
position-matched baseline: same offset, different identity), the same lift for apostrophe keys at
any distance, the share of the score variance that relative distance explains, the attention on
the first key (the BOS "sink") and, per frequency chunk, what the first key gains in score over
the others (App. E.1's analysis of Gemma's apostrophe head).

Conventions: attention ``probs [B, H, T, T]`` (rows = queries, causal), activations
``[B, T, H, D]``, chunks fastest first (:func:`ropebook.analysis.chunk_norms`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ropebook import rope

TWO_PI = 2.0 * np.pi


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


# ---------------------------------------------------------------- trained models: token classes


def class_token_ids(
    decode: Callable[[list[int]], str], vocab_size: int, characters: str = "'’"
) -> np.ndarray:
    """Ids of every token whose text contains one of ``characters`` (default: apostrophes)."""
    return np.array(
        [i for i in range(vocab_size) if any(c in decode([i]) for c in characters)], dtype=np.int64
    )


def previous_class_attention(
    probs, key_mask, rows: slice | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Attention on the previous token, split by whether that token is in the class.

    ``probs [B, H, T, T]``, ``key_mask [B, T]`` bool; ``rows`` restricts the queries (default all
    ``i >= 1``). Returns ``(on, off, counts)``: per head the summed ``alpha_{i,i-1}`` over queries
    whose previous token is in the class (``on``) or not (``off``), and ``counts = (n_on,
    n_off)``; divide to get means. The lift ``on/n_on - off/n_off`` compares two sets of queries
    at the same offset: a pure previous-token head scores 0, a head that attends to the class
    whenever it can scores up to 1.
    """
    probs = np.asarray(probs, np.float64)
    mask = np.asarray(key_mask, bool)
    t = probs.shape[-1]
    queries = np.arange(t)[rows if rows is not None else slice(1, None)]
    queries = queries[queries >= 1]
    w = probs[:, :, queries, queries - 1]  # [B, H, Q]
    prev = mask[:, None, queries - 1]  # [B, 1, Q]: is token i-1 in the class?
    on = np.where(prev, w, 0.0).sum(axis=(0, 2))
    off = np.where(prev, 0.0, w).sum(axis=(0, 2))
    n_on = int(prev.sum())
    return on, off, np.array([n_on, prev.size - n_on])


def class_attention_by_distance(probs, key_mask, max_distance: int) -> dict[str, np.ndarray]:
    """Mean attention on class keys and on other keys at each distance ``d = 1 .. max_distance``.

    Returns ``{"on": [H, D], "off": [H, D], "n_on": [D], "n_off": [D]}`` (sums and counts; rows
    with a key at distance ``d`` only). Comparing ``on/n_on`` with ``off/n_off`` at the same ``d``
    removes whatever the head does by position alone.
    """
    probs = np.asarray(probs, np.float64)
    mask = np.asarray(key_mask, bool)
    t = probs.shape[-1]
    h = probs.shape[1]
    out = {
        "on": np.zeros((h, max_distance)),
        "off": np.zeros((h, max_distance)),
        "n_on": np.zeros(max_distance),
        "n_off": np.zeros(max_distance),
    }
    for d in range(1, min(max_distance, t - 1) + 1):
        rows = np.arange(d, t)
        w = probs[:, :, rows, rows - d]  # [B, H, T-d]
        key = mask[:, None, rows - d]
        out["on"][:, d - 1] = np.where(key, w, 0.0).sum(axis=(0, 2))
        out["off"][:, d - 1] = np.where(key, 0.0, w).sum(axis=(0, 2))
        out["n_on"][d - 1] = key.sum()
        out["n_off"][d - 1] = key.size - key.sum()
    return out


def distance_lift(by_distance: dict[str, np.ndarray]) -> np.ndarray:
    """Position-matched lift per head: at every distance, mean attention on a class key minus
    mean attention on another key, averaged over the class keys' distances (weighted by how many
    class keys sit at each). ``[H]``; 0 for a head that only looks at positions."""
    n_on, n_off = by_distance["n_on"], by_distance["n_off"]
    valid = (n_on > 0) & (n_off > 0)
    on = by_distance["on"][:, valid] / n_on[valid]
    off = by_distance["off"][:, valid] / n_off[valid]
    weights = n_on[valid] / n_on[valid].sum()
    return ((on - off) * weights).sum(-1)


def position_explained(scores) -> np.ndarray:
    """Share of the variance of the pre-softmax scores that relative distance explains, per head.

    ``scores [B, H, T, T]`` (masked entries ``-inf``). For each head the scores of every causal
    pair are predicted by the mean score at their distance ``i - j``; returns ``R^2 [H]``: near 1
    for a head that scores by position alone, near 0 for one that scores by content.
    """
    s = np.asarray(scores, np.float64)
    t = s.shape[-1]
    i, j = np.tril_indices(t)
    d = i - j
    values = s[:, :, i, j]  # [B, H, P]
    sums = np.zeros((s.shape[1], t))
    counts = np.bincount(d, minlength=t) * s.shape[0]
    for h in range(s.shape[1]):
        sums[h] = np.bincount(d, weights=values[:, h].sum(0), minlength=t)
    means = sums / np.maximum(counts, 1)
    residual = values - means[:, d][None]
    total = values - values.mean(axis=(0, 2), keepdims=True)
    return 1.0 - (residual**2).sum(axis=(0, 2)) / np.maximum((total**2).sum(axis=(0, 2)), 1e-30)


def sink_chunk_contributions(q_rot, k_rot, pairing: str = "half") -> tuple[np.ndarray, ...]:
    """Per frequency chunk, what the first key (BOS) and the other keys add to each query's score.

    ``q_rot, k_rot [B, T, H, D]`` (after RoPE). The score ``a_{i,j} = <q_i, k_j>/sqrt(D)`` is a sum
    over chunks of ``<q_i^(c), k_j^(c)>/sqrt(D)``. Returns ``(bos, rest)``, each ``[B, T-1, H, K]``
    for queries ``i = 1 .. T-1``: the chunk terms of ``a_{i,0}`` and the mean chunk terms of
    ``a_{i,j}`` over ``0 < j <= i`` (by linearity, the chunk term of the mean key).
    """
    q = np.asarray(q_rot, np.float64)
    k = np.asarray(k_rot, np.float64)
    d = q.shape[-1]
    pairs = rope.chunk_indices(d, pairing)
    scale = d**-0.5

    def per_chunk(a, b):
        return (a[..., pairs[:, 0]] * b[..., pairs[:, 0]] + a[..., pairs[:, 1]] * b[..., pairs[:, 1]]) * scale  # fmt: skip

    qs = q[:, 1:]
    bos = per_chunk(qs, k[:, :1])
    counts = np.arange(1, q.shape[1])[None, :, None, None]
    mean_keys = np.cumsum(k[:, 1:], axis=1) / counts  # mean of keys 1..i for query i
    rest = per_chunk(qs, mean_keys)
    return bos, rest


# ---------------------------------------------------------------- trained models: one scan


@dataclass
class SemanticScan:
    """Every head of one model on windows that start at a BOS. Arrays ``[L, H]`` unless noted.

    ``prev_on`` / ``prev_off``: mean ``alpha_{i,i-1}`` when token ``i-1`` is / is not in the class
    (apostrophes); ``prev_lift = prev_on - prev_off``; ``distance_lift``: the same comparison at
    every distance up to ``max_distance`` (:func:`distance_lift`); ``position_r2``: share of score
    variance explained by distance; ``bos_mass``: mean ``alpha_{i,0}`` over queries ``i >= 1``;
    ``bos_chunks`` / ``rest_chunks`` ``[L, H, K]``: mean chunk terms of the BOS score and of the
    mean other score (:func:`sink_chunk_contributions`); ``q_norms``, ``k_norms`` ``[L, H, K]``:
    mean query and key chunk norms before rotation; ``n_class_prev``: rows whose previous token is in the class.
    Per-window values for intervals: ``window_prev_lift`` and ``window_bos_mass`` ``[W, L, H]``
    (lift NaN where a window has no apostrophe), ``window_bos_preference`` (BOS chunk terms minus
    the mean other chunk terms), ``window_q_norms`` and ``window_k_norms`` ``[W, L, H, K]``.
    """

    prev_on: np.ndarray
    prev_off: np.ndarray
    distance_lift: np.ndarray
    position_r2: np.ndarray
    bos_mass: np.ndarray
    bos_chunks: np.ndarray
    rest_chunks: np.ndarray
    q_norms: np.ndarray
    k_norms: np.ndarray
    window_prev_lift: np.ndarray
    window_bos_mass: np.ndarray
    window_bos_preference: np.ndarray
    window_q_norms: np.ndarray
    window_k_norms: np.ndarray
    n_class_prev: int
    n_windows: int
    seq_len: int

    @property
    def prev_lift(self) -> np.ndarray:
        return self.prev_on - self.prev_off

    def best(self, metric: str = "prev_lift") -> tuple[int, int]:
        """``(layer, head)`` with the largest value of ``metric``."""
        values = getattr(self, metric)
        layer, head = np.unravel_index(np.nanargmax(values), values.shape)
        return int(layer), int(head)


def scan_semantic(
    params, config, windows, class_ids, *, max_distance: int = 32, batch_size: int = 2
) -> SemanticScan:
    """Measure every head of a :mod:`ropebook.model` model on ``windows [W, T]`` (BOS first).

    Keeps running sums only, one layer's ``[batch, H, T, T]`` attention at a time, so windows
    longer than the training context (the extrapolation runs) fit in memory.
    """
    import jax
    import jax.numpy as jnp

    from ropebook import model
    from ropebook.analysis import chunk_norms

    windows = np.asarray(windows)
    n_windows, t = windows.shape
    n_layers, n_heads, k_chunks = config.n_layers, config.n_heads, config.head_dim // 2
    class_mask = np.isin(windows, np.asarray(class_ids))
    forward = jax.jit(lambda p, x: model.forward(p, x, config, return_internals=True)[1])
    lh = (n_layers, n_heads)
    on, off, lift_sum, r2 = np.zeros(lh), np.zeros(lh), np.zeros(lh), np.zeros(lh)
    n_on = n_off = 0
    bos_mass = np.zeros((n_windows, *lh))
    win_lift = np.full((n_windows, *lh), np.nan)
    preference, q_norms, k_norms = (np.zeros((n_windows, *lh, k_chunks)) for _ in range(3))
    bos_chunks, rest_chunks = np.zeros((*lh, k_chunks)), np.zeros((*lh, k_chunks))
    for start in range(0, n_windows, batch_size):
        tokens = windows[start : start + batch_size]
        mask = class_mask[start : start + batch_size]
        internals = forward(params, jnp.asarray(tokens))
        for layer, info in enumerate(internals):
            probs = np.asarray(info["probs"], np.float64)
            o, f, counts = previous_class_attention(probs, mask)
            on[layer] += o
            off[layer] += f
            if layer == 0:
                n_on, n_off = n_on + counts[0], n_off + counts[1]
            for b in range(len(tokens)):
                ob, fb, cb = previous_class_attention(probs[b : b + 1], mask[b : b + 1])
                if cb[0] and cb[1]:
                    win_lift[start + b, layer] = ob / cb[0] - fb / cb[1]
            by_distance = class_attention_by_distance(probs, mask, max_distance)
            lift_sum[layer] += distance_lift(by_distance) * len(tokens)
            r2[layer] += position_explained(np.asarray(info["scores"])) * len(tokens)
            bos_mass[start : start + len(tokens), layer] = probs[:, :, 1:, 0].mean(-1)
            bos, rest = sink_chunk_contributions(info["q_rot"], info["k_rot"], config.pairing)
            bos_chunks[layer] += bos.mean(1).sum(0)
            rest_chunks[layer] += rest.mean(1).sum(0)
            batch = slice(start, start + len(tokens))
            preference[batch, layer] = (bos - rest).mean(1)
            q_norms[batch, layer] = chunk_norms(info["q"], config.pairing).mean(1)
            k_norms[batch, layer] = chunk_norms(info["k"], config.pairing).mean(1)
    return SemanticScan(
        prev_on=on / max(n_on, 1),
        prev_off=off / max(n_off, 1),
        distance_lift=lift_sum / n_windows,
        position_r2=r2 / n_windows,
        bos_mass=bos_mass.mean(0),
        bos_chunks=bos_chunks / n_windows,
        rest_chunks=rest_chunks / n_windows,
        q_norms=q_norms.mean(0),
        k_norms=k_norms.mean(0),
        window_prev_lift=win_lift,
        window_bos_mass=bos_mass,
        window_bos_preference=preference,
        window_q_norms=q_norms,
        window_k_norms=k_norms,
        n_class_prev=int(n_on),
        n_windows=n_windows,
        seq_len=t,
    )


def bos_windows(
    texts_tokens: list[np.ndarray], length: int, n_windows: int, rng: np.random.Generator
) -> np.ndarray:
    """``[n_windows, length]`` int32 windows: BOS (id 0) then ``length - 1`` consecutive tokens
    from a random document (uniform over documents long enough) at a random offset."""
    docs = [np.asarray(d) for d in texts_tokens if len(d) >= length]
    if not docs:
        raise ValueError(f"no document has {length} tokens")
    out = np.zeros((n_windows, length), np.int32)
    for w in range(n_windows):
        doc = docs[rng.integers(len(docs))]
        start = rng.integers(0, len(doc) - (length - 1) + 1)
        out[w, 1:] = doc[start : start + length - 1]
    return out


def bos_mass_by_position(probs, bucket: int) -> np.ndarray:
    """Mean ``alpha_{i,0}`` for queries in buckets ``[b*bucket, (b+1)*bucket)`` (query 0 left
    out): ``probs [B, H, T, T] -> [H, ceil(T/bucket)]``."""
    probs = np.asarray(probs, np.float64)
    t = probs.shape[-1]
    w = probs[:, :, :, 0].mean(0)  # [H, T]
    starts = range(0, t, bucket)
    return np.stack([w[:, max(lo, 1) : min(lo + bucket, t)].mean(-1) for lo in starts], -1)


@dataclass
class LengthProfile:
    """Every head of one model on windows of one length, measured per query-position bucket
    (``bucket`` tokens each, normally the training context). Arrays ``[L, H, n_buckets]``.

    ``bos_mass``: mean ``alpha_{i,0}``; ``prev_on`` / ``prev_off``: summed ``alpha_{i,i-1}`` with
    token ``i-1`` an apostrophe / not, ``n_on`` / ``n_off`` ``[n_buckets]`` their counts;
    ``bos_margin``: mean over queries of the BOS score minus the mean score of the other keys;
    ``bos_chunks`` / ``rest_chunks`` ``[L, H, T-1, K]``: mean chunk terms of the BOS score and of
    the mean other score at each query position (averaged over windows);
    ``window_bos_mass``, ``window_bos_margin`` ``[W, L, H, n_buckets]``: the same per window;
    ``q_mean`` ``[L, H, D]``: mean query *before* rotation over in-context positions ``1 ..
    bucket-1``; ``k_bos`` ``[L, H, D]``: the BOS key before rotation (the same in every window:
    BOS at position 0 sees only itself).
    """

    bos_mass: np.ndarray
    prev_on: np.ndarray
    prev_off: np.ndarray
    n_on: np.ndarray
    n_off: np.ndarray
    bos_margin: np.ndarray
    bos_chunks: np.ndarray
    rest_chunks: np.ndarray
    window_bos_mass: np.ndarray
    window_bos_margin: np.ndarray
    q_mean: np.ndarray
    k_bos: np.ndarray
    bucket: int
    seq_len: int

    @property
    def prev_lift(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.prev_on / self.n_on - self.prev_off / self.n_off


def length_profile(params, config, windows, class_ids, *, bucket: int) -> LengthProfile:
    """Measure every head of a model on ``windows [W, T]`` (BOS first), bucketed by query
    position; ``T`` may be many times the training context (one window at a time)."""
    import jax
    import jax.numpy as jnp

    from ropebook import model

    windows = np.asarray(windows)
    n_windows, t = windows.shape
    n_layers, n_heads, k_chunks = config.n_layers, config.n_heads, config.head_dim // 2
    n_buckets = -(-t // bucket)
    class_mask = np.isin(windows, np.asarray(class_ids))
    forward = jax.jit(lambda p, x: model.forward(p, x, config, return_internals=True)[1])
    shape = (n_layers, n_heads, n_buckets)
    on, off = np.zeros(shape), np.zeros(shape)
    margin = np.zeros((n_windows, *shape))
    n_on, n_off = np.zeros(n_buckets), np.zeros(n_buckets)
    mass = np.zeros((n_windows, *shape))
    bos_chunks = np.zeros((n_layers, n_heads, t - 1, k_chunks))
    rest_chunks = np.zeros_like(bos_chunks)
    q_mean = np.zeros((n_layers, n_heads, config.head_dim))
    k_bos = np.zeros_like(q_mean)
    for w in range(n_windows):
        tokens = windows[w : w + 1]
        internals = forward(params, jnp.asarray(tokens))
        for layer, info in enumerate(internals):
            probs = np.asarray(info["probs"], np.float64)
            q_mean[layer] += np.asarray(info["q"][0, 1:bucket], np.float64).mean(0)
            k_bos[layer] += np.asarray(info["k"][0, 0], np.float64)
            mass[w, layer] = bos_mass_by_position(probs, bucket)
            for b in range(n_buckets):
                rows = slice(b * bucket, (b + 1) * bucket)
                o, f, counts = previous_class_attention(probs, class_mask[w : w + 1], rows)
                on[layer, :, b] += o
                off[layer, :, b] += f
                if layer == 0:
                    n_on[b] += counts[0]
                    n_off[b] += counts[1]
            bos, rest = sink_chunk_contributions(info["q_rot"], info["k_rot"], config.pairing)
            bos_chunks[layer] += bos[0].transpose(1, 0, 2)
            rest_chunks[layer] += rest[0].transpose(1, 0, 2)
            gap = (bos[0] - rest[0]).sum(-1).T  # [H, T-1] for queries 1 .. T-1
            padded = np.concatenate([np.full((n_heads, 1), np.nan), gap], -1)
            for b in range(n_buckets):
                margin[w, layer, :, b] = np.nanmean(padded[:, b * bucket : (b + 1) * bucket], -1)
    return LengthProfile(
        bos_mass=mass.mean(0),
        prev_on=on,
        prev_off=off,
        n_on=n_on,
        n_off=n_off,
        bos_margin=margin.mean(0),
        bos_chunks=bos_chunks / n_windows,
        rest_chunks=rest_chunks / n_windows,
        window_bos_mass=mass,
        window_bos_margin=margin,
        q_mean=q_mean / n_windows,
        k_bos=k_bos / n_windows,
        bucket=bucket,
        seq_len=t,
    )


def rotated_chunk_terms(q, k, frequencies, positions, pairing: str = "half") -> np.ndarray:
    """Chunk terms ``<q^(c), rho(-g_c i) k^(c)> / sqrt(D)`` of one fixed query against one fixed
    key ``i`` positions back, for every ``i`` of ``positions``: ``q, k [..., D] -> [..., P, K]``.

    With the mean in-context query and the BOS key this is what rotation alone does to the BOS
    channel as the query moves away from BOS (the query itself held fixed): chunk ``c`` turns
    through a half turn after ``pi / g_c`` tokens, the mechanism of Thm. 6.1.
    """
    q = np.asarray(q, np.float64)[..., None, :]
    k = np.asarray(k, np.float64)[..., None, :]
    d = q.shape[-1]
    pairs = rope.chunk_indices(d, pairing)
    angle = -np.asarray(positions, np.float64)[:, None] * np.asarray(frequencies)[None, :]
    cos, sin = np.cos(angle), np.sin(angle)
    k1, k2 = k[..., pairs[:, 0]], k[..., pairs[:, 1]]
    r1, r2 = k1 * cos - k2 * sin, k2 * cos + k1 * sin
    return (q[..., pairs[:, 0]] * r1 + q[..., pairs[:, 1]] * r2) * d**-0.5
