"""Additive-bias encodings (ALiBi, Kerple, FIRE) against RoPE's scores: measured as matrices.

Conventions: a score or bias matrix is ``[..., T, T]`` with rows = queries ``i`` and columns =
keys ``j``; only the causal part ``j <= i`` is ever read (entries above the diagonal are masked
by the model, and non-finite entries such as the ``-inf`` of masked scores are ignored). The
*distance* of an entry is ``r = i - j >= 0``, so diagonal ``r`` holds every query paired with the
key ``r`` tokens back.

- **Toeplitz measures.** A matrix is a function of ``i - j`` alone (Toeplitz, "context-
  independent" in the CABLE captions) iff every diagonal is constant. :func:`diagonal_spread`
  gives ``max - min`` along each diagonal, :func:`toeplitz_deviation` its largest value (0 for a
  Toeplitz matrix), :func:`distance_r2` the share of the entries' variance that the distance
  explains (1 for Toeplitz, about 0 when content decides everything). Rows can be restricted,
  which FIRE needs: its normaliser ``psi(max(L, i))`` depends on ``i`` once ``i >= L``.
- **Profiles.** :func:`distance_profile` is the mean of each diagonal: a Toeplitz bias as the
  function ``b(r)`` it is. :func:`bias_reach` is the first distance at which ``b(r)`` has fallen
  ``ln(1/threshold)`` below ``b(0)``, i.e. where a key's attention weight is multiplied by less
  than ``threshold`` relative to the query's own token; :func:`fit_slopes` fits ``b(r) = -m r``.
- **Helpers.** :func:`fire_threshold` reads FIRE's learned ``L`` from a layer's parameters,
  :func:`alibi_bracket` checks a range against a colour bar's ticks, :func:`block_pool` shrinks a
  ``T x T`` image for display (NaN-aware).
"""

from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np


def _matrix(matrix, dtype=np.float64) -> np.ndarray:
    a = np.asarray(matrix, dtype=dtype)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"expected a [..., T, T] matrix, got shape {a.shape}")
    return np.where(np.isfinite(a), a, np.nan)


def distance_frame(matrix, dtype=np.float64) -> np.ndarray:
    """Re-index ``A[..., i, j]`` by distance: ``D[..., i, r] = A[..., i, i - r]``, NaN if ``r > i``.

    Column ``r`` of the result is diagonal ``r`` of ``A`` (one entry per query ``i >= r``);
    non-finite entries of ``A`` (masked scores) become NaN. The result is a strided view into
    one ``[..., T, 2T]`` buffer (no gather), so it is cheap for long sequences; do not write to it.
    """
    a = _matrix(matrix, dtype)
    t = a.shape[-1]
    # q[..., i, T + (T-1-j)] = A[i, j] and NaN in the first T columns; then
    # D[i, r] = q[i, 2T-1-i+r] sits at flat offset (2T-1) + i (2T-1) + r of each [T, 2T] block,
    # and entries with r > i land in the next row's NaN columns.
    q = np.concatenate([np.full(a.shape, np.nan, dtype), a[..., ::-1]], axis=-1)
    flat = q.reshape(*q.shape[:-2], 2 * t * t)[..., 2 * t - 1 :]
    item = q.itemsize
    return np.lib.stride_tricks.as_strided(
        flat,
        shape=(*a.shape[:-2], t, t),
        strides=(*flat.strides[:-1], (2 * t - 1) * item, item),
        writeable=False,
    )


def _rows(frame: np.ndarray, row_start: int, row_stop: int | None) -> np.ndarray:
    t = frame.shape[-2]
    stop = t if row_stop is None else min(max(int(row_stop), 0), t)
    return frame[..., max(int(row_start), 0) : stop, :]


@jax.jit
def _extremes(a: jnp.ndarray, row_start: jnp.ndarray, row_stop: jnp.ndarray):
    t = a.shape[-1]
    i = jnp.arange(t)[:, None]
    j = i - jnp.arange(t)[None, :]  # key of diagonal r in row i
    frame = jnp.take_along_axis(a, jnp.broadcast_to(jnp.maximum(j, 0), a.shape), axis=-1)
    ok = (j >= 0) & (i >= row_start) & (i < row_stop) & jnp.isfinite(frame)
    high = jnp.max(jnp.where(ok, frame, -jnp.inf), axis=-2)
    low = jnp.min(jnp.where(ok, frame, jnp.inf), axis=-2)
    return high, low, jnp.sum(ok, axis=-2)


def _diagonal_extremes(matrix, row_start: int, row_stop: int | None):
    """(max, min, count) of each diagonal over the chosen query rows, non-finite ignored.

    Computed with JAX in float32 (one fused gather + reduction, fast on long sequences); max and
    min are entries of the matrix, so the spreads are exact differences of float32 values.
    """
    a = jnp.asarray(matrix, jnp.float32)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"expected a [..., T, T] matrix, got shape {a.shape}")
    t = a.shape[-1]
    stop = t if row_stop is None else min(max(int(row_stop), 0), t)
    high, low, count = _extremes(a, jnp.int32(max(int(row_start), 0)), jnp.int32(stop))
    high, low = np.asarray(high, np.float64), np.asarray(low, np.float64)
    count = np.asarray(count)
    return np.where(count > 0, high, np.nan), np.where(count > 0, low, np.nan), count


def diagonal_spread(matrix, *, row_start: int = 0, row_stop: int | None = None) -> np.ndarray:
    """``max - min`` of each diagonal ``r = i - j`` over queries ``row_start <= i < row_stop``.

    ``[..., T, T] -> [..., T]``; NaN where a diagonal has fewer than two such entries.
    """
    high, low, count = _diagonal_extremes(matrix, row_start, row_stop)
    return np.where(count >= 2, high - low, np.nan)


def toeplitz_deviation(
    matrix, *, row_start: int = 0, row_stop: int | None = None, relative: bool = False
) -> float:
    """Largest spread along any diagonal (0 iff the causal part is Toeplitz on those rows).

    With ``relative``, divided by the range (max - min) of all the causal entries considered, so
    0 means a function of ``i - j`` alone and values near 1 mean the diagonals vary as much as
    the whole matrix.
    """
    high, low, count = _diagonal_extremes(matrix, row_start, row_stop)
    spread = np.where(count >= 2, high - low, np.nan)
    if not np.any(np.isfinite(spread)):
        return float("nan")
    worst = float(np.nanmax(spread))
    if not relative:
        return worst
    full = float(np.nanmax(high) - np.nanmin(low))
    return worst / full if full > 0 else 0.0


def distance_profile(matrix, *, row_start: int = 0, row_stop: int | None = None) -> np.ndarray:
    """Mean of each diagonal: ``[..., T, T] -> [..., T]``, entry ``r`` = mean of ``A[i, i-r]``.

    For a Toeplitz bias this *is* the bias as a function of distance, ``b(r)``.
    """
    frame = _rows(distance_frame(matrix), row_start, row_stop)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(frame, axis=-2)


def distance_r2(matrix, *, row_start: int = 0, row_stop: int | None = None) -> np.ndarray:
    """Share of the causal entries' variance explained by the distance ``i - j``: ``[...]``.

    ``1 - sum (A - mean of its diagonal)^2 / sum (A - overall mean)^2``, over the causal entries
    of the chosen rows: exactly 1 for a Toeplitz matrix, near 0 when the entries do not depend on
    distance at all. A constant matrix (no variance) counts as Toeplitz (1).
    """
    frame = _rows(distance_frame(matrix), row_start, row_stop)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        diag_mean = np.nanmean(frame, axis=-2, keepdims=True)
        overall = np.nanmean(frame, axis=(-2, -1), keepdims=True)
    within = np.nansum((frame - diag_mean) ** 2, axis=(-2, -1))
    total = np.nansum((frame - overall) ** 2, axis=(-2, -1))
    safe = np.where(total > 0, total, 1.0)
    return np.where(total > 0, 1.0 - within / safe, 1.0)


def bias_reach(profile, threshold: float = 0.1) -> np.ndarray:
    """First distance ``r`` with ``b(r) <= b(0) - ln(1/threshold)``, per leading index.

    ``profile [..., R]`` is ``b(r)`` for ``r = 0 .. R-1`` (e.g. from :func:`distance_profile`).
    At that distance a key's attention weight is multiplied by at most ``threshold`` relative to
    the query's own token. Returns float ``[...]``; ``inf`` where the bias never falls that far
    within the ``R`` distances given (the head "reaches" past the measured length).
    """
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must lie in (0, 1), got {threshold}")
    b = np.asarray(profile, dtype=np.float64)
    drop = b[..., :1] - b  # >= 0 where the bias has fallen below its value at r = 0
    below = drop >= math.log(1.0 / threshold)
    first = np.argmax(below, axis=-1).astype(np.float64)
    return np.where(np.any(below, axis=-1), first, np.inf)


def fit_slopes(matrix) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares ``m`` in ``A[i, j] = -m (i - j)`` over the causal entries: ``(m [...], max
    |residual| [...])``. For an ALiBi bias the slopes come back exactly and the residual is 0."""
    frame = distance_frame(matrix)
    r = np.arange(frame.shape[-1], dtype=np.float64)
    valid = np.isfinite(frame)
    x = np.where(valid, r, 0.0)
    y = np.where(valid, frame, 0.0)
    m = -np.sum(x * y, axis=(-2, -1)) / np.sum(x * x, axis=(-2, -1))
    residual = np.where(valid, frame + m[..., None, None] * r, 0.0)
    return m, np.max(np.abs(residual), axis=(-2, -1))


def alibi_bracket(value: float, last_tick: float, step: float) -> bool:
    """Is ``value`` consistent with a colour bar whose most extreme labelled tick is
    ``last_tick`` with tick spacing ``step``? (The range ends past the last tick but before the
    next one would be drawn: ``last_tick <= value < last_tick + step``.)"""
    return bool(last_tick <= value < last_tick + step)


def fire_threshold(layer_encoding: dict, context: int) -> float:
    """FIRE's learned threshold ``L = softplus(raw L) * context`` (positions, float) of one layer.

    Rows ``i < L`` of the FIRE bias share one normaliser ``psi(L)`` and are Toeplitz; rows
    ``i >= L`` are normalised by ``psi(i)``.
    """
    raw = float(np.asarray(layer_encoding["L"]))
    return float(np.logaddexp(0.0, raw) * context)


def block_pool(matrix, max_size: int) -> np.ndarray:
    """NaN-aware mean pooling of ``[..., T, T]`` into at most ``max_size x max_size`` blocks.

    The block side is ``ceil(T / max_size)``; the last block may be partial. A block of NaNs
    only (e.g. entirely above the causal diagonal) stays NaN, so masked areas stay blank.
    """
    a = _matrix(matrix)
    t = a.shape[-1]
    side = max(1, math.ceil(t / max_size))
    if side == 1:
        return a
    n = math.ceil(t / side)
    padded = np.full((*a.shape[:-2], n * side, n * side), np.nan)
    padded[..., :t, :t] = a
    blocks = padded.reshape(*a.shape[:-2], n, side, n, side)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(blocks, axis=(-3, -1))


def causal_only(matrix) -> np.ndarray:
    """A copy with entries above the diagonal (keys after the query) and non-finite ones = NaN."""
    a = _matrix(matrix)
    t = a.shape[-1]
    return np.where(np.tril(np.ones((t, t), bool)), a, np.nan)


def kendall_tau(a: dict[str, float], b: dict[str, float]) -> float:
    """Kendall's tau-a between two scorings of the same names (1: same order, -1: reversed)."""
    names = sorted(a)
    if sorted(b) != names:
        raise ValueError(f"names differ: {sorted(a)} vs {sorted(b)}")
    score, pairs = 0, 0
    for x in range(len(names)):
        for y in range(x + 1, len(names)):
            u, v = names[x], names[y]
            score += int(np.sign(a[u] - a[v]) * np.sign(b[u] - b[v]))
            pairs += 1
    return score / pairs if pairs else float("nan")


def separation_verdict(differences: list[tuple[float, float, float]]) -> str:
    """Verdict on a set of claimed-positive differences, each ``(mean, low, high)``.

    ``held``: every interval lies above 0; ``not held``: some interval lies wholly below 0 (the
    opposite order is established); ``partly``: otherwise (some interval straddles 0).
    """
    if all(low > 0 for _, low, _ in differences):
        return "held"
    if any(high < 0 for _, _, high in differences):
        return "not held"
    return "partly"
