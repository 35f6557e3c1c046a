"""Activation versus distance: does RoPE decay? (Barbero et al. 2025, Sec. 3, App. B.3.)

The *activation* between a query at position ``i`` and a key at position ``j <= i`` is the
pre-softmax RoPE score without the ``1/sqrt(d)`` scale, ``a = q_i^T R^(j-i) k_j``; the *distance*
is ``r = i - j >= 0`` (so ``j - i = -r``). Functions here:

- :func:`activation_vs_distance` — ``q^T R^(-r) k`` for fixed vectors, exact in float64;
- :func:`expected_ones_activation` — its closed form ``sum_k 2 cos(r g_k)`` for all-ones vectors;
- :func:`prop31_key` — the key ``R^r q`` of Prop. 3.1, whose activation peaks at distance ``r``;
- :func:`random_rope_positions` — Ruoss et al.'s randomised positions (sorted, without
  replacement from ``[0, L)``);
- :func:`last_query_profile` — a sequence set-up run through the model's own ``apply_rope``:
  activation of the *last* query with the key ``r`` tokens before it, for every ``r``;
- :func:`mean_activation_by_distance` — the same average over every query of a trained model's
  rotated queries and keys (``internals["q_rot"], ["k_rot"]``);
- summaries: :func:`half_distance`, :func:`mean_square_ratio`, :func:`binomial_range`.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np

from ropebook import rope


def _chunk_grid(head_dim: int, base: float, pairing: str, variant: str, proportion: float):
    if variant == "partial":
        raise ValueError("partial RoPE re-grids a sub-head; rotate with rope.apply_rope instead")
    pairs = rope.chunk_indices(head_dim, pairing)
    grid = rope.frequencies(head_dim, base, variant=variant, proportion=proportion)
    return pairs, grid


def activation_vs_distance(
    q,
    k,
    distances,
    *,
    base: float = 10_000.0,
    pairing: str = "half",
    variant: str = "rope",
    proportion: float = 1.0,
) -> np.ndarray:
    """``q^T R^(-r) k`` for every distance ``r`` in ``distances``, float64.

    ``q, k [..., d]`` (broadcast) → ``[..., len(distances)]``: the activation of query ``q`` at
    position ``i`` with key ``k`` at position ``i - r``. Exact per 2-D chunk ``(a, b)`` at
    frequency ``g``: ``cos(r g) (q_a k_a + q_b k_b) + sin(r g) (q_a k_b - q_b k_a)``.
    """
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    pairs, grid = _chunk_grid(q.shape[-1], base, pairing, variant, proportion)
    qa, qb, ka, kb = (
        q[..., pairs[:, 0]],
        q[..., pairs[:, 1]],
        k[..., pairs[:, 0]],
        k[..., pairs[:, 1]],
    )
    aligned = qa * ka + qb * kb  # [..., d/2]
    crossed = qa * kb - qb * ka
    angles = np.outer(np.asarray(distances, dtype=np.float64), grid)  # [R, d/2]
    return (np.cos(angles) @ aligned[..., None] + np.sin(angles) @ crossed[..., None])[..., 0]


def expected_ones_activation(distances, head_dim: int, base: float = 10_000.0) -> np.ndarray:
    """Closed form for all-ones ``q, k`` of dimension ``head_dim``: ``sum_k 2 cos(r g_k)``."""
    grid = rope.base_frequencies(head_dim, base)
    return 2.0 * np.cos(np.outer(np.asarray(distances, dtype=np.float64), grid)).sum(axis=-1)


def prop31_key(q, r: int, *, base: float = 10_000.0, pairing: str = "half") -> np.ndarray:
    """Prop. 3.1's key ``k = R^r q`` (float64): ``q^T R^(j-i) k`` is largest at ``i - j = r``."""
    q = np.asarray(q, dtype=np.float64)
    return q @ rope.rotation_matrix(r, q.shape[-1], base=base, pairing=pairing).T


def random_rope_positions(
    rng: np.random.Generator, n: int, max_position: int, size: int | None = None
) -> np.ndarray:
    """Ruoss et al. (2023): ``n`` positions drawn without replacement from ``[0, L)``, sorted.

    ``L = max_position >= n``; with ``L = n`` this is ``0 .. n-1``, plain RoPE. With ``size`` the
    result is ``[size, n]`` (independent draws).
    """
    if max_position < n:
        raise ValueError(f"need max_position L >= n, got L={max_position} < n={n}")
    draws = 1 if size is None else size
    out = np.stack([np.sort(rng.choice(max_position, size=n, replace=False)) for _ in range(draws)])
    return out[0] if size is None else out


def last_query_profile(
    q_seq,
    k_seq,
    positions,
    *,
    base: float = 10_000.0,
    pairing: str = "half",
) -> np.ndarray:
    """Activation of the last query with the key ``r`` tokens before it, ``r = 0 .. T-1``.

    ``q_seq, k_seq [..., T, d]`` (one vector per token; repeat one vector for the "constant"
    set-ups), ``positions [..., T]`` the positions RoPE sees (``arange(T)``, or random ones).
    Rotates with :func:`ropebook.rope.apply_rope` (float32, the model's code path) and returns
    ``[..., T]`` float64 where entry ``r`` is ``<R^(p_(T-1)) q_(T-1), R^(p_(T-1-r)) k_(T-1-r)>``.
    """
    q_seq, k_seq = jnp.asarray(q_seq, jnp.float32), jnp.asarray(k_seq, jnp.float32)
    positions = jnp.asarray(positions)
    q_rot = rope.apply_rope(q_seq[..., None, :], positions, base=base, pairing=pairing)[..., 0, :]
    k_rot = rope.apply_rope(k_seq[..., None, :], positions, base=base, pairing=pairing)[..., 0, :]
    scores = jnp.einsum("...d,...td->...t", q_rot[..., -1, :], k_rot)
    return np.asarray(scores, dtype=np.float64)[..., ::-1]


def mean_activation_by_distance(q_rot, k_rot) -> np.ndarray:
    """Mean of ``q_i^T k_j`` (rotated, unscaled) over every query ``i`` at distance ``r = i - j``.

    ``q_rot, k_rot [B, T, H, D]`` → ``[B, H, T]``: entry ``r`` averages the ``T - r`` pairs
    ``(i, i - r)`` of each sequence and head (the causal lower triangle, diagonal by diagonal).
    """
    q_rot, k_rot = np.asarray(q_rot, np.float64), np.asarray(k_rot, np.float64)
    if q_rot.ndim != 4 or q_rot.shape != k_rot.shape:
        raise ValueError(f"expected matching [B, T, H, D] arrays, got {q_rot.shape}, {k_rot.shape}")
    scores = np.einsum("bihd,bjhd->bhij", q_rot, k_rot)
    t = scores.shape[-1]
    return np.stack(
        [np.diagonal(scores, offset=-r, axis1=-2, axis2=-1).mean(-1) for r in range(t)], axis=-1
    )


def half_distance(curve: Sequence[float] | np.ndarray) -> int | None:
    """First distance ``r`` with ``curve[r] < curve[0] / 2`` (``None`` if it never drops)."""
    curve = np.asarray(curve, dtype=np.float64)
    below = np.flatnonzero(curve < curve[0] / 2)
    return int(below[0]) if below.size else None


def mean_square_ratio(curves, short: slice, long: slice) -> float:
    """``mean_{r in long} E_s[a_s(r)^2] / mean_{r in short} E_s[a_s(r)^2]`` for curves ``[S, R]``.

    Below 1: activations are smaller (in magnitude) far away than nearby — decay; about 1: none.
    """
    mean_square = np.mean(np.asarray(curves, dtype=np.float64) ** 2, axis=0)
    return float(mean_square[long].mean() / mean_square[short].mean())


def bootstrap_interval(
    samples,
    statistic,
    rng: np.random.Generator,
    *,
    n_boot: int = 1000,
    confidence: float = 0.95,
) -> tuple[float, float, float]:
    """``statistic(samples)`` and a percentile bootstrap interval, resampling the first axis."""
    samples = np.asarray(samples)
    point = float(statistic(samples))
    index = rng.integers(0, len(samples), size=(n_boot, len(samples)))
    values = np.array([statistic(samples[i]) for i in index])
    tail = (1 - confidence) / 2
    low, high = np.quantile(values, [tail, 1 - tail])
    return point, float(low), float(high)


def binomial_range(n: int, p: float, mass: float = 0.99) -> tuple[int, int]:
    """Central range holding at least ``mass`` of Binomial(``n``, ``p``): ``(low, high)``."""
    from scipy import stats

    tail = (1 - mass) / 2
    return int(stats.binom.ppf(tail, n, p)), int(stats.binom.isf(tail, n, p))


def t_intervals(samples, confidence: float = 0.95) -> np.ndarray:
    """Student-t interval of the mean of each column of ``samples [M, R]``: ``[R, 3]`` (mean, lo,
    hi)."""
    from scipy import stats

    samples = np.asarray(samples, dtype=np.float64)
    mean = samples.mean(axis=0)
    half = stats.t.ppf(0.5 + confidence / 2, samples.shape[0] - 1) * stats.sem(samples, axis=0)
    return np.stack([mean, mean - half, mean + half], axis=-1)


def gaussian_activation_samples(
    rng: np.random.Generator,
    distances,
    head_dim: int,
    n_samples: int,
    *,
    base: float = 10_000.0,
    pairing: str = "half",
) -> np.ndarray:
    """``[n_samples, R]`` draws of ``q^T R^(-r) k`` with fresh ``q, k ~ N(0, I)`` for every
    sample *and* every distance, so the columns are independent (Prop. 3.2's Monte Carlo)."""
    distances = np.asarray(distances)
    out = np.empty((n_samples, distances.size))
    for column, r in enumerate(distances):
        q = rng.standard_normal((n_samples, head_dim))
        k = rng.standard_normal((n_samples, head_dim))
        out[:, column] = activation_vs_distance(q, k, [r], base=base, pairing=pairing)[:, 0]
    return out
