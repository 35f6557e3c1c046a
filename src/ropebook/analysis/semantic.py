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

**The chapter's figures and tables.** The second half of the module holds one function per
figure, table or verdict of ``chapters/semantic_channels.py`` (gap curves, breaking lengths,
best-head curves, the swap sweep, apostrophe, content and sink heads, the runs past the training
length), so the chapter only calls them. Tables are lists of records with short headers for
``plots.table``; charts are Altair charts at most ~680 px wide.

Conventions: attention ``probs [B, H, T, T]`` (rows = queries, causal), activations
``[B, T, H, D]``, chunks fastest first (:func:`ropebook.analysis.chunk_norms`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ropebook import rope
from ropebook.analysis import Estimate, interval_text

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

    def content_head(self) -> tuple[int, int]:
        """``(layer, head)`` whose scores relative distance explains least (lowest
        ``position_r2``), outside layer 0 when there are several layers: layer 0's heads see
        only token embeddings."""
        r2 = self.position_r2.copy()
        if r2.shape[0] > 1:
            r2[0] = np.inf
        layer, head = np.unravel_index(np.argmin(r2), r2.shape)
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


# ================================================================ the chapter's analyses
# One function per figure, table or verdict of chapters/semantic_channels.py; the chapter only
# calls them. Tables are lists of records with short headers (``plots.table``); charts are Altair
# charts at most ~680 px wide, legends included.

# ---------------------------------------------------------------- intervals and verdicts


def seed_or_window_interval(per_seed, per_window, n_seeds: int, digits: int = 2) -> Estimate:
    """Interval over seeds when there are several, else over the one seed's held-out windows."""
    if n_seeds > 1:
        return interval_text(per_seed, digits)
    return interval_text(per_window, digits, unit="windows (1 seed)")


def interval_verdict(low: float, high: float, threshold: float) -> str:
    """``claims.verdict_from_interval`` for a claim that the quantity exceeds ``threshold``, or
    ``"not testable here"`` without a real interval (no sample, or a single one: low == high)."""
    from ropebook import claims

    if not (np.isfinite(low) and np.isfinite(high)) or low == high:
        return "not testable here"
    return claims.verdict_from_interval(low, high, threshold=threshold)


# ---------------------------------------------------------------- Lemma A.3 on random vectors


@dataclass
class SoftmaxBoundCheck:
    """Lemma A.3 on random activation vectors: ``violations`` of ``alpha_i <= 1/(m+1)`` among the
    ``checked`` entries that have ``m >= 1`` competitors at least as large."""

    n_draws: int
    checked: int
    violations: int
    worst_ratio: float

    def __str__(self) -> str:
        return (
            f"{self.checked:,} non-maximal entries in {self.n_draws:,} vectors: {self.violations} "
            f"above 1/(m+1); largest alpha_i (m+1) = {self.worst_ratio:.4f}"
        )


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


def gap_table(curves: GapCurves) -> list[dict]:
    return [
        {"rotation": k, f"largest gap at N = {curves.n_max:,} (rad)": v}
        for k, v in curves.final.items()
    ]


def gap_chart(curves: GapCurves):
    import altair as alt

    return (
        alt.Chart(
            alt.InlineData(values=curves.rows),
            title="Lemma A.2: largest empty arc of {g·m mod 2π : m ≤ N}",
        )
        .mark_line()
        .encode(
            x=alt.X("N (tokens):Q", scale=alt.Scale(type="log"), title="N (tokens)"),
            y=alt.Y(
                "largest gap (rad):Q", scale=alt.Scale(type="log"), title="largest empty arc (rad)"
            ),
            color=alt.Color("rotation:N"),
            tooltip=[
                "rotation:N",
                "N (tokens):Q",
                alt.Tooltip("largest gap (rad):Q", format=".3g"),
            ],
        )
        .properties(width=480, height=300)
    )


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


def best_head_chart(curves: BestHeadCurves):
    """The curves, dashed rules at each ``N*`` and a grey line at 1/2."""
    import altair as alt

    color = alt.Color("frequency:N", sort=None)
    lines = (
        alt.Chart(alt.InlineData(values=curves.rows))
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "N (tokens):Q", scale=alt.Scale(type="log"), title="sequence length N (tokens)"
            ),
            y=alt.Y("best worst-case α:Q", title="best worst-case attention on the target"),
            color=color,
            tooltip=[
                "frequency:N",
                "N (tokens):Q",
                alt.Tooltip("best worst-case α:Q", format=".3g"),
            ],
        )
    )
    stars = [
        {"N*": breaking_length_closed_form(g), "frequency": frequency_label(g)}
        for g in curves.frequencies
    ]
    rules = (
        alt.Chart(alt.InlineData(values=stars))
        .mark_rule(strokeDash=[4, 4])
        .encode(x="N*:Q", color=color)
    )
    half = alt.Chart(alt.InlineData(values=[{"y": 0.5}])).mark_rule(color="gray").encode(y="y:Q")
    return (lines + rules + half).properties(
        width=460,
        height=320,
        title=f"Thm. 6.1: best worst-case attention, scores bounded by {curves.budget:g}",
    )


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


# ---------------------------------------------------------------- Thm. 6.1: swaps on heads


def swap_figure(attack: SwapAttack, g: float):
    """Scores of one 2-D head before and after :func:`swap_attack` (target in red, swapped
    positions dashed), with the target's attention in each panel title."""
    import matplotlib.pyplot as plt

    n = len(attack.scores_before) - 1
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4), sharey=True)
    for ax, scores, where, title in (
        (axes[0], attack.scores_before, attack.target_before, "before the swaps"),
        (axes[1], attack.scores_after, attack.target_after, "after the swaps"),
    ):
        alpha = softmax(scores)[where]
        ax.bar(np.arange(len(scores)), scores, color="0.7", width=1.0, label="other tokens")
        ax.bar([where], [scores[where]], color="C3", width=1.5, label="target token")
        ax.set_title(f"{title}: α on target = {alpha:.3g}")
        ax.set_xlabel("key position (query at the last position)")
    for a, b in attack.swaps:
        for p in (a, b):
            axes[1].axvline(p, color="C0", lw=0.8, ls="--")
    axes[0].set_ylabel("score a_{N,j}")
    axes[0].legend(loc="lower left", fontsize=8)
    fig.suptitle(
        f"Thm. 6.1's swaps on a 2-D head, g = {g:.3g} rad/token, N = {n} "
        f"({len(attack.swaps)} swap(s), dashed)"
    )
    plt.tight_layout()
    plt.show()


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


def attack_table(rows: list[dict], ratios=(0.5, 1.1, 4.0)) -> list[dict]:
    keep = ("g", "head", "N", "N / N*", "α before", "α after", "success")
    return [{k: r[k] for k in keep} for r in rows if r["ratio"] in ratios]


def attack_chart(rows: list[dict]):
    import altair as alt

    return (
        alt.Chart(alt.InlineData(values=rows), title="Thm. 6.1's swaps: success rate around N*")
        .mark_line(point=True)
        .encode(
            x=alt.X("N / N*:Q", scale=alt.Scale(type="log"), title="sequence length / N* = ⌈π/g⌉"),
            y=alt.Y("success:Q", title="share of heads pushed to α ≤ ½"),
            color="frequency:N",
            strokeDash="head:N",
            tooltip=["frequency:N", "head:N", "N:Q", alt.Tooltip("α after:Q", format=".3g")],
        )
        .properties(width=480, height=260)
    )


# ---------------------------------------------------------------- trained models: apostrophe heads


def apostrophe_summary(documents, class_ids, decode, n_examples: int = 6) -> str:
    """How common the apostrophe tokens are in ``documents``, with the most frequent ones."""
    tokens = np.concatenate(documents)
    share = float(np.isin(tokens, class_ids).mean())
    counts = {int(i): int((tokens == i).sum()) for i in class_ids}
    common = sorted(counts, key=counts.get, reverse=True)[:n_examples]
    return (
        f"{len(documents)} test works, {sum(map(len, documents)):,} tokens; {len(class_ids)} token "
        f"ids contain an apostrophe, {100 * share:.2f}% of test tokens, e.g. "
        f"{[(decode([i]), counts[i]) for i in common]}"
    )


@dataclass
class ApostropheHeads:
    """Per seed, the head with the largest apostrophe lift on the selection windows, measured
    on the other windows. ``lift``: its lift over seeds (or, with one seed, over windows)."""

    heads: dict[int, tuple[int, int]]
    lift_rows: list[dict]
    profile_rows: list[dict]
    lift: Estimate


def apostrophe_heads(
    selected: dict[int, SemanticScan], measured: dict[int, SemanticScan]
) -> ApostropheHeads:
    """``selected`` and ``measured``: one model's scans per seed on the two halves of windows."""
    heads, lift_rows, profile_rows = {}, [], []
    for s, scan in measured.items():
        layer, head = heads[s] = selected[s].best("prev_lift")
        name = f"L{layer}H{head}"
        windows = interval_text(scan.window_prev_lift[:, layer, head], unit="windows")
        lift_rows.append(
            {
                "seed": s,
                "head": name,
                "lift, selection": float(selected[s].prev_lift[layer, head]),
                "lift, measuring": float(scan.prev_lift[layer, head]),
                "interval (measuring)": windows.text,
            }
        )
        profile_rows.append(
            {
                "seed": s,
                "head": name,
                "α prev. apostrophe": float(scan.prev_on[layer, head]),
                "α prev. other": float(scan.prev_off[layer, head]),
                "distance lift": float(scan.distance_lift[layer, head]),
                "position R²": float(scan.position_r2[layer, head]),
                "BOS mass": float(scan.bos_mass[layer, head]),
            }
        )
    first = next(iter(measured))
    lift = seed_or_window_interval(
        [r["lift, measuring"] for r in lift_rows],
        measured[first].window_prev_lift[:, *heads[first]],
        n_seeds=len(measured),
    )
    return ApostropheHeads(heads, lift_rows, profile_rows, lift)


def head_scatter(measured: dict[int, SemanticScan], title: str):
    """Every head of one model (per seed): apostrophe lift against position R²."""
    import altair as alt

    rows = [
        {
            "seed": s,
            "head": f"L{layer}H{head}",
            "layer": layer,
            "apostrophe lift": float(scan.prev_lift[layer, head]),
            "position R²": float(scan.position_r2[layer, head]),
            "BOS mass": float(scan.bos_mass[layer, head]),
        }
        for s, scan in measured.items()
        for layer in range(scan.position_r2.shape[0])
        for head in range(scan.position_r2.shape[1])
    ]
    return (
        alt.Chart(alt.InlineData(values=rows), title=title)
        .mark_point(filled=True, opacity=0.75)
        .encode(
            x=alt.X(
                "position R²:Q",
                scale=alt.Scale(domain=[0, 1]),
                title="score variance explained by distance (R²)",
            ),
            y=alt.Y("apostrophe lift:Q", title="apostrophe lift (attention)"),
            color="layer:O",
            shape="seed:N",
            tooltip=[
                "seed:N",
                "head:N",
                alt.Tooltip("apostrophe lift:Q", format=".3f"),
                alt.Tooltip("position R²:Q", format=".2f"),
                alt.Tooltip("BOS mass:Q", format=".2f"),
            ],
        )
        .properties(width=440, height=300)
    )


@dataclass
class ShownWindow:
    """A short window to draw heads on: ``tokens [1, T]`` (BOS first), a label per token and
    whether each token is in the class (apostrophes, drawn red)."""

    tokens: np.ndarray
    labels: list[str]
    is_class: np.ndarray


def densest_window(document, class_ids, n_tokens: int, decode) -> ShownWindow:
    """BOS then the ``n_tokens - 1`` consecutive tokens of ``document`` that hold the most class
    tokens (the first such stretch); labels are token texts cut to 7 characters."""
    from ropebook.data import BOS_ID

    document = np.asarray(document)
    counts = np.convolve(np.isin(document, class_ids).astype(float), np.ones(n_tokens - 1), "valid")
    start = int(np.argmax(counts))
    tokens = np.concatenate([[BOS_ID], document[start : start + n_tokens - 1]])[None]
    tokens = tokens.astype(np.int32)
    labels = ["BOS"] + [repr(decode([int(x)]))[1:-1][:7] for x in tokens[0, 1:]]
    return ShownWindow(tokens, labels, np.isin(tokens[0], class_ids))


def head_figure(trained, window: ShownWindow, layer: int, head: int, frequencies, title: str):
    """Draw one head on ``window`` as in Fig. 17 (attention, raw scores, query and key chunk
    norms, fastest chunk on top); return its raw scores ``[T, T]`` (masked entries NaN)."""
    import matplotlib.pyplot as plt

    from ropebook import model
    from ropebook.analysis import chunk_norms

    _, internals = model.forward(
        trained.params, window.tokens, trained.config, return_internals=True
    )
    info = internals[layer]
    probs = np.asarray(info["probs"][0, head])
    scores = np.asarray(info["scores"][0, head])
    scores = np.where(np.isfinite(scores), scores, np.nan)  # masked keys drawn in grey
    q_norms = chunk_norms(np.asarray(info["q"][0, :, head]), trained.config.pairing).T
    k_norms = chunk_norms(np.asarray(info["k"][0, :, head]), trained.config.pairing).T
    labels, red = window.labels, window.is_class
    fig, axes = plt.subplots(2, 2, figsize=(11, 8.5))
    panels = [
        (axes[0, 0], probs, "attention α_{i,j}", "viridis"),
        (axes[0, 1], scores, "raw scores a_{i,j} (masked: grey)", "RdBu_r"),
        (axes[1, 0], q_norms, "query chunk norms", "magma"),
        (axes[1, 1], k_norms, "key chunk norms", "magma"),
    ]
    for ax, matrix, name, cmap in panels:
        kwargs = {}
        if cmap == "RdBu_r":
            bound = np.nanmax(np.abs(matrix))
            cmap = plt.get_cmap(cmap).with_extremes(bad="0.85")
            kwargs = {"vmin": -bound, "vmax": bound}
        image = ax.imshow(matrix, cmap=cmap, aspect="auto", **kwargs)
        ax.grid(False)
        fig.colorbar(image, ax=ax, fraction=0.046)
        ax.set_title(name)
        ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=6)
        for tick, is_red in zip(ax.get_xticklabels(), red, strict=True):
            tick.set_color("C3" if is_red else "black")
        ax.set_xlabel("key token" if matrix.shape[0] == len(labels) else "token")
        if matrix.shape[0] == len(labels):
            ax.set_yticks(range(len(labels)), labels, fontsize=6)
            for tick, is_red in zip(ax.get_yticklabels(), red, strict=True):
                tick.set_color("C3" if is_red else "black")
            ax.set_ylabel("query token")
        else:
            ax.set_yticks(range(len(frequencies)), [f"{g:.2g}" for g in frequencies], fontsize=7)
            ax.set_ylabel("chunk frequency g_k (rad/token), fastest on top")
    fig.suptitle(title)
    plt.tight_layout()
    plt.show()
    return scores


def raw_score_table(scores, is_class, label: str) -> list[dict]:
    """Fig. 12's reading of an apostrophe head: the paper's raw scores for Gemma 7B next to ours
    (``scores [T, T]`` from :func:`head_figure`, queries 1 onwards): mean score of the BOS key,
    mean score of a previous apostrophe, range of every other causal key."""
    t = len(is_class)
    rows_after = [i for i in range(2, t) if is_class[i - 1]]
    others = np.array(
        [scores[i, j] for i in range(1, t) for j in range(1, i + 1)
         if not (j == i - 1 and is_class[j])]
    )  # fmt: skip
    previous = (
        f"{np.mean([scores[i, i - 1] for i in rows_after]):.2f}" if rows_after else "none in window"
    )
    return [
        {"head": "Gemma 7B (paper, Fig. 12)", "BOS key": "≈ 2", "previous apostrophe": "≈ 7",
         "other keys": "≈ −12 to ≈ 0"},
        {"head": label, "BOS key": f"{np.nanmean(scores[1:, 0]):.2f}",
         "previous apostrophe": previous,
         "other keys": f"{np.nanmin(others):.2f} to {np.nanmax(others):.2f}"},
    ]  # fmt: skip


def apostrophe_bands(
    measured: dict[int, SemanticScan], heads: dict[int, tuple[int, int]]
) -> tuple[list[dict], Estimate]:
    """Shares of the mean key and query chunk norm in the slowest and fastest quarter of the
    chunks, for each seed's apostrophe head and for the mean head of its layer; and the keys'
    slowest-quarter share over seeds (or, with one seed, over windows)."""
    from ropebook.analysis.frequencies import band_share

    rows = []
    for s, scan in measured.items():
        layer, head = heads[s]
        for kind, norms in (("keys", scan.k_norms), ("queries", scan.q_norms)):
            layer_mean = norms[layer].mean(0)
            rows.append(
                {
                    "seed": s,
                    "head": f"L{layer}H{head}",
                    "vectors": kind,
                    "slowest ¼": float(band_share(norms[layer, head], 0.25, "low")),
                    "layer, slowest ¼": float(band_share(layer_mean, 0.25, "low")),
                    "fastest ¼": float(band_share(norms[layer, head], 0.25, "high")),
                    "layer, fastest ¼": float(band_share(layer_mean, 0.25, "high")),
                }
            )
    first = next(iter(measured))
    low_keys = seed_or_window_interval(
        [r["slowest ¼"] for r in rows if r["vectors"] == "keys"],
        band_share(measured[first].window_k_norms[:, *heads[first]], 0.25, "low"),
        n_seeds=len(measured),
    )
    return rows, low_keys


@dataclass
class ContentHeads:
    """Per seed the most content-driven head (:meth:`SemanticScan.content_head`), its norm shares
    in the slowest quarter of chunks, and the query share over seeds (or windows)."""

    heads: dict[int, tuple[int, int]]
    rows: list[dict]
    query_share: Estimate


def content_heads(measured: dict[int, SemanticScan]) -> ContentHeads:
    from ropebook.analysis.frequencies import band_share

    heads, rows = {}, []
    for s, scan in measured.items():
        layer, head = heads[s] = scan.content_head()
        rows.append(
            {
                "seed": s,
                "head": f"L{layer}H{head}",
                "position R²": float(scan.position_r2[layer, head]),
                "query slowest ¼": float(band_share(scan.q_norms[layer, head], 0.25, "low")),
                "key slowest ¼": float(band_share(scan.k_norms[layer, head], 0.25, "low")),
            }
        )
    first = next(iter(measured))
    share = seed_or_window_interval(
        [r["query slowest ¼"] for r in rows],
        band_share(measured[first].window_q_norms[:, *heads[first]], 0.25, "low"),
        n_seeds=len(measured),
    )
    return ContentHeads(heads, rows, share)


# ---------------------------------------------------------------- trained models: the BOS sink


def slow_half_share(preference) -> np.ndarray:
    """Share of the positive BOS preference ``[..., K]`` that sits in the slower half of chunks
    (chunks ``K // 2 ..``; negative chunk preferences count as zero)."""
    positive = np.clip(np.asarray(preference, np.float64), 0, None)
    k = positive.shape[-1]
    return positive[..., k // 2 :].sum(-1) / np.maximum(positive.sum(-1), 1e-12)


@dataclass
class SinkHeads:
    """Per model and seed the head with the most attention on BOS (chosen on the selection
    windows) and its BOS preference per chunk (BOS chunk term minus the mean other key's) on the
    measuring windows. ``rows``: mass, total preference and its share in the slow half;
    ``chunk_rows``: the chunk with the largest preference, its raw ``q·k`` terms; ``bars``:
    the preference of every chunk (chart records)."""

    heads: dict[tuple[str, int], tuple[int, int]]
    rows: list[dict]
    chunk_rows: list[dict]
    bars: list[dict]


def sink_heads(
    selected: dict[tuple[str, int], SemanticScan],
    measured: dict[tuple[str, int], SemanticScan],
    frequencies: dict[tuple[str, int], np.ndarray],
) -> SinkHeads:
    """``frequencies``: each model's chunk frequencies (zero where a chunk is not rotated)."""
    heads, rows, chunk_rows, bars = {}, [], [], []
    for (name, s), scan in measured.items():
        layer, head = heads[name, s] = selected[name, s].best("bos_mass")
        preference = scan.bos_chunks[layer, head] - scan.rest_chunks[layer, head]
        chunk_g = frequencies[name, s]
        raw = np.sqrt(2 * preference.size)  # sqrt(head_dim): undo the score scale
        top = int(np.argmax(preference))
        rows.append(
            {
                "model": name,
                "seed": s,
                "sink head": f"L{layer}H{head}",
                "BOS mass": float(scan.bos_mass[layer, head]),
                "BOS − other score": float(preference.sum()),
                "slow-half share": float(slow_half_share(preference)),
            }
        )
        chunk_rows.append(
            {
                "model": name,
                "seed": s,
                "top chunk": top,
                "its g": float(chunk_g[top]),
                "N* = ⌈π/g⌉": breaking_length_closed_form(chunk_g[top])
                if chunk_g[top] > 0
                else "never (not rotated)",
                "q·k to BOS": float(scan.bos_chunks[layer, head, top] * raw),
                "q·k to others": float(scan.rest_chunks[layer, head, top] * raw),
            }
        )
        bars += [
            {
                "model": name,
                "seed": s,
                "chunk": c,
                "g_k": f"{chunk_g[c]:.2g}" if chunk_g[c] else "0 (not rotated)",
                "BOS preference": float(preference[c]),
            }
            for c in range(preference.size)
        ]
    return SinkHeads(heads, rows, chunk_rows, bars)


def gemma_sink_row(g: float, n_star: int) -> dict:
    """App. E.1's numbers for Gemma 7B's apostrophe head, as a row of ``SinkHeads.chunk_rows``."""
    return {"model": "Gemma 7B (paper)", "seed": "—", "top chunk": "119 of 128", "its g": g,
            "N* = ⌈π/g⌉": n_star, "q·k to BOS": 24.9, "q·k to others": -85.5}  # fmt: skip


def sink_chart(sinks: SinkHeads, seed: int):
    import altair as alt

    return (
        alt.Chart(alt.InlineData(values=[r for r in sinks.bars if r["seed"] == seed]))
        .mark_bar()
        .encode(
            x=alt.X("chunk:O", title="chunk (0 = fastest frequency)"),
            y=alt.Y("BOS preference:Q", title="BOS term − mean other term (score units)"),
            color=alt.Color("model:N", legend=None),
            column=alt.Column("model:N", title=None),
            tooltip=["model:N", "chunk:O", "g_k:N", alt.Tooltip("BOS preference:Q", format=".3f")],
        )
        .properties(width=160, height=240, title="Which chunks make the sink head prefer BOS")
    )


def sink_slow_share(
    sinks: SinkHeads, measured: dict[tuple[str, int], SemanticScan], name: str, seeds
) -> Estimate:
    """Share of the BOS preference in the slow half of the chunks for ``name``'s sink heads,
    over seeds (or, with one seed, over its measuring windows)."""
    first = (name, seeds[0])
    return seed_or_window_interval(
        [r["slow-half share"] for r in sinks.rows if r["model"] == name],
        slow_half_share(measured[first].window_bos_preference[:, *sinks.heads[first]]),
        n_seeds=len(seeds),
    )


# ---------------------------------------------------------------- past the training length


def beyond_context_lift(profile: LengthProfile, layer: int, head: int) -> tuple[float, int]:
    """Apostrophe lift of one head over every query beyond the first bucket (the training
    context), or over all queries when there is only one bucket; and how many queries follow an
    apostrophe there. NaN without queries of both kinds."""
    beyond = slice(1, None) if profile.prev_on.shape[-1] > 1 else slice(None)
    n_on, n_off = profile.n_on[beyond].sum(), profile.n_off[beyond].sum()
    if not (n_on and n_off):
        return float("nan"), int(n_on)
    on = profile.prev_on[layer, head, beyond].sum() / n_on
    off = profile.prev_off[layer, head, beyond].sum() / n_off
    return float(on - off), int(n_on)


def bos_retention(profile: LengthProfile, layer: int, head: int) -> np.ndarray:
    """Per window, one head's BOS margin in the last bucket divided by that in the first (NaN
    where the first is zero): how much of the BOS preference survives the longest distances."""
    first = profile.window_bos_margin[:, layer, head, 0]
    last = profile.window_bos_margin[:, layer, head, -1]
    return last / np.where(np.abs(first) > 1e-9, first, np.nan)


_MARGIN_FIELDS = ("BOS margin", "BOS attention", "apostrophe lift")


def margin_rows(profiles: dict, sink: dict, apostrophe: dict) -> list[dict]:
    """Chart records per bucket of query positions: the sink head's BOS margin and attention
    and the apostrophe head's lift. ``profiles``: ``(model, seed) -> LengthProfile``; ``sink``
    and ``apostrophe``: ``(model, seed) -> (layer, head)``."""
    rows = []
    for (name, s), prof in profiles.items():
        layer, head = sink[name, s]
        a_layer, a_head = apostrophe[name, s]
        for b in range(prof.bos_margin.shape[-1]):
            lift = prof.prev_lift[a_layer, a_head, b]
            rows.append(
                {
                    "model": name,
                    "seed": s,
                    "query block start (tokens)": b * prof.bucket,
                    "BOS margin": float(prof.bos_margin[layer, head, b]),
                    "BOS attention": float(prof.bos_mass[layer, head, b]),
                    "apostrophe lift": float(lift) if np.isfinite(lift) else None,
                }
            )
    return rows


def margin_chart(rows: list[dict], context: int, longest: int):
    """The three quantities of :func:`margin_rows` against the query position, stacked, with a
    dashed rule at the training context."""
    import altair as alt

    rule = (
        alt.Chart(alt.InlineData(values=[{"x": context}]))
        .mark_rule(strokeDash=[4, 4], color="gray")
        .encode(x="x:Q")
    )
    panels = [
        alt.Chart(alt.InlineData(values=rows))
        .mark_line(point=True)
        .encode(
            x=alt.X("query block start (tokens):Q", title="query position (tokens)"),
            y=alt.Y(f"{field}:Q", title=field),
            color="model:N",
            strokeDash="seed:N",
            tooltip=[
                "model:N",
                "seed:N",
                "query block start (tokens):Q",
                alt.Tooltip(f"{field}:Q", format=".3f"),
            ],  # fmt: skip
        )
        .properties(width=480, height=150, title=f"{field} past the context ({context} tokens)")
        + rule
        for field in _MARGIN_FIELDS
    ]
    return alt.vconcat(*panels).properties(
        title=f"Sink and apostrophe heads on windows of {longest}× the training length"
    )


_LENGTH_FIELDS = ("BOS margin, last block", "BOS attention, last block", "apostrophe lift")


def length_rows(profiles: dict, sink: dict, apostrophe: dict) -> list[dict]:
    """Records per model, seed and length: the sink head's BOS margin and attention over the
    last bucket, the apostrophe head's lift beyond the context (:func:`beyond_context_lift`).
    ``profiles``: ``(model, seed, length factor) -> LengthProfile``."""
    rows = []
    for (name, s, factor), prof in profiles.items():
        layer, head = sink[name, s]
        lift, n_on = beyond_context_lift(prof, *apostrophe[name, s])
        rows.append(
            {
                "model": name,
                "seed": s,
                "length (× context)": factor,
                "BOS margin, last block": float(prof.bos_margin[layer, head, -1]),
                "BOS attention, last block": float(prof.bos_mass[layer, head, -1]),
                "apostrophe lift": lift if np.isfinite(lift) else None,
                "apostrophes seen": n_on,
            }
        )
    return rows


def length_table(rows: list[dict]) -> list[dict]:
    short = {"length (× context)": "× context", "BOS margin, last block": "BOS margin",
             "BOS attention, last block": "BOS α", "apostrophe lift": "apostr. lift",
             "apostrophes seen": "apostr. seen"}  # fmt: skip
    return [{short.get(k, k): v for k, v in r.items()} for r in rows]


def length_chart(rows: list[dict]):
    import altair as alt

    panels = [
        alt.Chart(alt.InlineData(values=rows))
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "length (× context):Q",
                scale=alt.Scale(type="log", base=2),
                title="length (× training context)",
            ),  # fmt: skip
            y=alt.Y(f"{field}:Q", title=field),
            color="model:N",
            strokeDash="seed:N",
            tooltip=[
                "model:N",
                "seed:N",
                "length (× context):Q",
                alt.Tooltip(f"{field}:Q", format=".3f"),
            ],  # fmt: skip
        )
        .properties(width=140, height=220)
        for field in _LENGTH_FIELDS
    ]
    return alt.hconcat(*panels).properties(
        title="Semantic heads as the window grows past the training length"
    )


@dataclass
class RotationPrediction:
    """One head's per-chunk BOS terms along the query position, measured and as rotation alone
    predicts them (:func:`rotated_chunk_terms` on the mean in-context query and the BOS key).
    ``correlation``: per chunk, over positions beyond the context (NaN if either is flat)."""

    positions: np.ndarray
    measured: np.ndarray
    predicted: np.ndarray
    frequencies: np.ndarray
    correlation: list[float]

    @property
    def mean_correlation(self) -> float:
        corr = np.asarray(self.correlation)
        return float(np.nanmean(corr)) if np.isfinite(corr).any() else float("nan")


def rotation_prediction(
    profile: LengthProfile, layer: int, head: int, frequencies, pairing: str = "half"
) -> RotationPrediction:
    positions = np.arange(1, profile.seq_len)
    measured = profile.bos_chunks[layer, head]  # [T-1, K]
    predicted = rotated_chunk_terms(
        profile.q_mean[layer, head], profile.k_bos[layer, head], frequencies, positions, pairing
    )
    beyond = positions >= profile.bucket

    def corr(a, b) -> float:
        if beyond.sum() > 2 and np.std(b) > 1e-9 and np.std(a) > 1e-9:
            return float(np.corrcoef(a, b)[0, 1])
        return float("nan")

    correlation = [
        corr(measured[beyond, c], predicted[beyond, c]) for c in range(measured.shape[-1])
    ]
    return RotationPrediction(positions, measured, predicted, np.asarray(frequencies), correlation)


def rotation_chart(prediction: RotationPrediction, title: str, n_points: int = 96):
    """Measured (solid) and rotation-only (dashed) BOS term per chunk, about ``n_points``
    positions each, and a dotted rule at each chunk's ``N*`` inside the window."""
    import altair as alt

    p = prediction
    step = max(1, len(p.positions) // n_points)
    label = [f"{c}: g={g:.2g}" for c, g in enumerate(p.frequencies)]
    rows = [
        {"chunk": label[c], "query position": int(p.positions[i]), "BOS term": float(terms[i, c]),
         "source": source}
        for c in range(len(label))
        for i in range(0, len(p.positions), step)
        for source, terms in (("measured", p.measured), ("rotation only", p.predicted))
    ]  # fmt: skip
    stars = [
        {"chunk": label[c], "N*": breaking_length_closed_form(g)}
        for c, g in enumerate(p.frequencies)
        if g > 0 and breaking_length_closed_form(g) < p.positions[-1] + 1
    ]
    color = alt.Color("chunk:N", sort=None)
    lines = (
        alt.Chart(alt.InlineData(values=rows))
        .mark_line()
        .encode(
            x=alt.X("query position:Q", title="query position i = distance to BOS (tokens)"),
            y=alt.Y("BOS term:Q", title="chunk term of a_{i,0}"),
            color=color,
            strokeDash=alt.StrokeDash("source:N"),
        )
    )
    rules = (
        alt.Chart(alt.InlineData(values=stars))
        .mark_rule(strokeDash=[1, 3])
        .encode(x="N*:Q", color=color)
    )
    return (lines + rules).properties(width=480, height=320, title=title)


def retention_table(retention: dict[str, np.ndarray], longest: int) -> list[dict]:
    """Mean and interval of :func:`bos_retention` per model (samples: seeds × windows)."""
    rows = []
    for name, samples in retention.items():
        estimate = interval_text(samples, unit="seeds × windows")
        rows.append(
            {"model": name, f"retention at {longest}×": estimate.mean, "interval": estimate.text}
        )
    return rows


def retention_difference(retention: dict[str, np.ndarray], minuend: str, subtrahend: str):
    """Paired difference (same windows) of two models' :func:`bos_retention`."""
    if minuend not in retention or subtrahend not in retention:
        return Estimate(float("nan"), float("nan"), float("nan"), "models missing")
    a, b = retention[minuend], retention[subtrahend]
    n = min(len(a), len(b))
    return interval_text(a[:n] - b[:n], unit="paired seeds × windows")


def scan_models(models: dict, windows, class_ids, *, max_distance: int = 32) -> dict:
    """:func:`scan_semantic` of every ``key -> trained model`` (anything with ``.params`` and
    ``.config``) on the same windows."""
    return {
        key: scan_semantic(m.params, m.config, windows, class_ids, max_distance=max_distance)
        for key, m in models.items()
    }


def length_profiles(
    models: dict, documents, class_ids, *, lengths, n_windows: int, seed: int
) -> dict:
    """:func:`length_profile` of every ``(name, seed) -> trained model`` on ``n_windows``
    BOS-led windows of each length factor times the model's context (bucketed by that context);
    the windows of a factor are drawn with ``default_rng([seed, 73, factor])``, the same for
    every model. Returns ``(name, seed, factor) -> LengthProfile``."""
    profiles = {}
    for (name, s), m in models.items():
        context = m.config.context
        for factor in lengths:
            rng = np.random.default_rng([seed, 73, factor])
            windows = bos_windows(documents, factor * context, n_windows, rng)
            profiles[name, s, factor] = length_profile(
                m.params, m.config, windows, class_ids, bucket=context
            )
    return profiles


def bos_retentions(profiles: dict, sink: dict) -> dict[str, np.ndarray]:
    """:func:`bos_retention` of each model's sink head, windows of all its seeds pooled:
    ``profiles`` and ``sink`` keyed by ``(name, seed)``."""
    out: dict[str, list] = {}
    for (name, s), prof in profiles.items():
        out.setdefault(name, []).append(bos_retention(prof, *sink[name, s]))
    return {name: np.concatenate(parts) for name, parts in out.items()}
