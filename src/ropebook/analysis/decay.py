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

The decay chapter's checks, one function each: :func:`closest_return` (Lemma A.1),
:func:`prop31_softmax_peaks` (Prop. 3.1), :func:`zero_mean_check` (Prop. 3.2),
:func:`setup_vectors` and :func:`decay_ratios` (Figs 2 and 9), :func:`random_rope_summary` and
:func:`random_rope_verdict` (Fig. 8), :func:`trained_activation_curves` (on held-out windows:
:func:`held_out_curves`) and :func:`trained_decay`
(the book's models: :func:`relative_contrast` per layer, classed by :func:`behaviour` against
:data:`TRAINED_MARGIN`, the claim read by :func:`trained_verdict`). Their tables and figures are
in :mod:`ropebook.present.decay`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from ropebook import rope
from ropebook.analysis import mean_interval


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
    t = q_rot.shape[1]
    # One BLAS product per sequence and head, then every diagonal summed at once: the causal
    # triangle, flattened and read with a row stride of T + 1, puts distance r in column T - r.
    scores = np.tril(np.matmul(q_rot.transpose(0, 2, 1, 3), k_rot.transpose(0, 2, 3, 1)))
    flat = scores.reshape(*scores.shape[:2], t * t)
    skewed = np.concatenate([np.zeros((*flat.shape[:2], t)), flat], axis=-1)
    sums = skewed.reshape(*flat.shape[:2], t, t + 1).sum(axis=-2)[..., :0:-1]
    return sums / np.arange(t, 0, -1)


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


# ----------------------------------------------------------------- the chapter's measurements
# One function per check, figure or table of the decay chapter; each takes the numbers the
# chapter computed (or the generator it draws from, consumed in the chapter's order).

SETUPS = ("all-ones", "Gaussian, fresh per position", "Gaussian, repeated")
"""The synthetic set-ups of Figs 2 and 9: Su et al.'s all-ones vectors, Gaussian vectors drawn
afresh at every position (Fig. 2b), one Gaussian query and key repeated (Fig. 9)."""


def unit(x) -> np.ndarray:
    """``x`` scaled to unit 2-norm along the last axis (the paper's "appropriate normalisation")."""
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def setup_vectors(
    kind: str, draws: int, n: int, head_dim: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``(q_seq, k_seq)``, each ``[draws, n, head_dim]`` of unit vectors, for one of :data:`SETUPS`.

    ``all-ones`` draws nothing from ``rng``; the fresh set-up draws ``2 * draws * n`` vectors, the
    repeated one ``2 * draws`` and broadcasts them along the sequence.
    """
    if kind == "all-ones":
        ones = unit(np.ones((draws, n, head_dim)))
        return ones, ones
    if kind == "Gaussian, fresh per position":
        q, k = unit(rng.standard_normal((2, draws, n, head_dim)))
        return q, k
    if kind == "Gaussian, repeated":
        q, k = unit(rng.standard_normal((2, draws, 1, head_dim)))
        return np.broadcast_to(q, (draws, n, head_dim)), np.broadcast_to(k, (draws, n, head_dim))
    raise ValueError(f"unknown set-up {kind!r}; choose from {SETUPS}")


def closest_return(n: int) -> tuple[int, float]:
    """The fastest chunk (``g_1 = 1``) over ``0 < m < n``: the ``m`` whose angle comes closest to
    a whole number of turns, and its gap ``1 - cos m`` (Lemma A.1 says the gap is never 0)."""
    gaps = 1 - np.cos(np.arange(1, n, dtype=np.float64))
    best = int(np.argmin(gaps))
    return best + 1, float(gaps[best])


def prop31_grid(seq_len: int) -> np.ndarray:
    """Distances of the Prop. 3.1 check: 0, 1, 2 and nine roughly geometric steps to ``N - 1``."""
    return np.unique(np.r_[0, 1, 2, np.geomspace(3, seq_len - 1, 9).astype(int)])


def _softmax(logits: np.ndarray) -> np.ndarray:
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    return probs / probs.sum(-1, keepdims=True)


@dataclass(frozen=True)
class PeakCheck:
    """Prop. 3.1 measured: where the softmax of the last query peaks, for each target ``r``."""

    rows: list[dict]  # one per distance: hits, peak error, attention on r, runner-up
    hits: int  # (query, r) cases whose softmax argmax is r
    total: int
    worst_gap: float  # min over cases of 1 - (second-largest score) / ||q||^2
    max_distance: int


def prop31_softmax_peaks(
    rng: np.random.Generator, seq_len: int, n_queries: int, head_dim: int, *, base: float
) -> PeakCheck:
    """For every ``r`` of :func:`prop31_grid`: ``n_queries`` Gaussian queries ``q``, the key
    ``R^r q`` at every position before the query (which sits at ``N - 1``), and the softmax of the
    scaled scores ``a_ij / sqrt(d)`` over the causal row, through :func:`last_query_profile`."""
    grid = prop31_grid(seq_len)
    distances = np.arange(seq_len)
    hits, worst_gap, rows = 0, np.inf, []
    for r in grid:
        queries = rng.standard_normal((n_queries, head_dim))
        keys = prop31_key(queries, int(r), base=base)  # k = R^r q
        sequence = np.broadcast_to(keys[:, None, :], (n_queries, seq_len, head_dim))
        query_rows = np.broadcast_to(queries[:, None, :], sequence.shape)
        scores = last_query_profile(query_rows, sequence, distances, base=base)  # [K, N]
        probs = _softmax(scores / np.sqrt(head_dim))
        on_target = int(np.sum(probs.argmax(-1) == r))
        hits += on_target
        norms = np.sum(queries**2, -1)
        peak_error = np.abs(scores[np.arange(n_queries), r] / norms - 1).max()
        runner_up = np.sort(scores, axis=-1)[:, -2] / norms
        worst_gap = min(worst_gap, float(np.min(1 - runner_up)))
        rows.append(
            {
                "r": int(r),
                "argmax = r": f"{on_target} of {n_queries}",
                "max |a(r)/‖q‖² − 1|": float(peak_error),
                "mean attention on r": float(probs[:, r].mean()),
                "max runner-up / ‖q‖²": float(runner_up.max()),
            }
        )
    return PeakCheck(rows, hits, len(grid) * n_queries, worst_gap, int(grid.max()))


@dataclass(frozen=True)
class ZeroMeanCheck:
    """Prop. 3.2 measured: how many per-distance intervals of the mean activation contain 0."""

    intervals: np.ndarray  # [R, 3]: mean, low, high
    covered: int
    expected: float  # confidence * R
    binomial_low: int  # central ``mass`` range of Binomial(R, confidence)
    binomial_high: int
    largest_z: float  # max over r of |mean| / standard error
    variance: np.ndarray  # [R] sample variance of the activation at each distance

    @property
    def held(self) -> bool:
        """As many intervals contain 0 as chance allows: at least the binomial range's low end."""
        return self.covered >= self.binomial_low


def zero_mean_check(samples, *, confidence: float = 0.95, mass: float = 0.99) -> ZeroMeanCheck:
    """Student-t intervals of each column's mean of ``samples [M, R]`` (independent columns) and
    the count containing 0, to compare with Binomial(``R``, ``confidence``)'s central ``mass``."""
    samples = np.asarray(samples, dtype=np.float64)
    intervals = t_intervals(samples, confidence)
    covered = int(np.sum((intervals[:, 1] <= 0) & (intervals[:, 2] >= 0)))
    low, high = binomial_range(samples.shape[1], confidence, mass=mass)
    standard_error = samples.std(0, ddof=1) / np.sqrt(samples.shape[0])
    largest_z = float(np.max(np.abs(intervals[:, 0]) / standard_error))
    variance = samples.var(axis=0, ddof=1)
    expected = confidence * samples.shape[1]
    return ZeroMeanCheck(intervals, covered, expected, low, high, largest_z, variance)


def decay_ratios(
    curves: dict, short: slice, long: slice, rng: np.random.Generator
) -> dict[str, tuple[float, float, float]]:
    """:func:`mean_square_ratio` of each set-up's curves ``[S, R]`` with a bootstrap interval over
    draws: ``kind -> (ratio, low, high)``, drawn from ``rng`` in the order of ``curves``."""
    return {
        kind: bootstrap_interval(sample, lambda c: mean_square_ratio(c, short, long), rng)
        for kind, sample in curves.items()
    }


@dataclass(frozen=True)
class RandomRopeRow:
    """Fig. 8 measured at one range ``L = factor * N``."""

    factor: float
    length: int
    half: tuple[float, float, float]  # all-ones half-distance over draws: mean, low, high
    plain_half: float  # plain RoPE's half-distance divided by L/N
    far_mean: float  # all-ones mean activation at r >= N/2
    gaussian: tuple[float, float, float]  # Gaussian mean-square ratio long/short, bootstrap


def random_rope_summary(
    random_curves: dict,
    factors,
    plain_half: int,
    short: slice,
    long: slice,
    rng: np.random.Generator,
) -> list[RandomRopeRow]:
    """Per ``factor``: the all-ones curves' half-distance (draws that never halve count as ``N``)
    with a t-interval over draws, and the Gaussian mean-square ratio with a bootstrap interval.

    ``random_curves[factor, kind]`` are ``[S, N]`` curves for ``kind`` in the first two
    :data:`SETUPS`; ``rng`` draws the bootstraps, one factor after the other.
    """
    rows = []
    for factor in factors:
        ones = random_curves[factor, SETUPS[0]]
        n = ones.shape[-1]
        halves = [half_distance(c) for c in ones]
        half = mean_interval([h if h is not None else n for h in halves])
        gaussian = bootstrap_interval(
            random_curves[factor, SETUPS[1]], lambda c: mean_square_ratio(c, short, long), rng
        )
        far_mean = float(ones[:, long].mean())
        rows.append(
            RandomRopeRow(factor, int(factor * n), half, plain_half / factor, far_mean, gaussian)
        )
    return rows


def random_rope_verdict(rows: list[RandomRopeRow], threshold: float) -> str:
    """Fig. 8's two-part claim: ``held`` if the all-ones half-distance falls with every larger
    ``L`` *and* the largest ``L``'s interval lies wholly below plain RoPE's *and* every Gaussian
    ratio's interval stays above ``threshold``; ``partly`` if the half-distances fall or the
    Gaussian ratios stay; ``not held`` otherwise."""
    decreasing = all(a.half[0] > b.half[0] for a, b in zip(rows, rows[1:], strict=False))
    separated = rows[-1].half[2] < rows[0].half[1]
    unchanged = gaussian_unchanged(rows, threshold)
    if decreasing and separated and unchanged:
        return "held"
    return "partly" if decreasing or unchanged else "not held"


def gaussian_unchanged(rows: list[RandomRopeRow], threshold: float) -> bool:
    """Every ``L``'s Gaussian mean-square ratio interval lies above ``threshold`` (no decay)."""
    return all(row.gaussian[1] > threshold for row in rows)


def trained_activation_curves(params, config, windows, *, max_tokens: int = 2048) -> np.ndarray:
    """``[layers, windows, T]``: each layer's :func:`mean_activation_by_distance` of a trained
    model's rotated queries and keys on ``windows [W, T]``, averaged over heads.

    The windows run through :func:`ropebook.model.forward` in batches of about ``max_tokens``
    tokens (its internals hold ``[B, H, T, T]`` score arrays).
    """
    from ropebook import model

    windows = np.asarray(windows)
    batch = max(1, max_tokens // config.context)
    per_batch = []
    for start in range(0, len(windows), batch):
        _, internals = model.forward(
            params, windows[start : start + batch], config, return_internals=True
        )
        per_batch.append(
            np.stack(
                [mean_activation_by_distance(x["q_rot"], x["k_rot"]).mean(1) for x in internals]
            )
        )
    return np.concatenate(per_batch, axis=1)


def held_out_curves(m, tokens, n_windows: int, seed: int) -> np.ndarray:
    """:func:`trained_activation_curves` ``[layers, windows, T]`` of a zoo model on ``n_windows``
    held-out windows of its context drawn by ``np.random.default_rng([seed, 7])``: the same
    windows for every model and seed of one context (the decay chapter's and its kept study's)."""
    from ropebook import data

    rng = np.random.default_rng([seed, 7])
    windows = data.sample_windows(tokens, m.config.context, n_windows, rng)
    return trained_activation_curves(m.params, m.config, windows)


# A layer is shown not to decay when its interval of the relative contrast (short − long over
# mean |a|, :func:`relative_contrast`) lies wholly below 0, or inside ± this margin: a tenth of
# the layer's own mean absolute activation. Fixed before the data: the all-ones argument that
# decay rests on (Su et al.) gives a contrast of 0.36 to 5.1 of its mean |a| at the book's
# head sizes, bases and contexts (:func:`ones_contrast`, short distances 1..8, every profile and
# regime), so a layer bounded within ± 0.1 decays, if at all, by under a third of that.
TRAINED_MARGIN = 0.1

BEHAVIOURS = ("decays", "flat", "uncertain", "grows")
"""A layer's class by the interval of its relative contrast: ``decays`` wholly above 0,
``grows`` wholly below, ``flat`` containing 0 inside ± :data:`TRAINED_MARGIN` (shown not to
decay by more than the margin), ``uncertain`` containing 0 and reaching past the margin."""
NOT_DECAYING = ("flat", "grows")  # the classes that show a layer does not decay


def relative_contrast(curves, short: int) -> np.ndarray:
    """``(mean a(r) over r = 1..short − mean over the last quarter) / mean |a(r)| over r >= 1``
    of mean activation curves ``[..., T]`` (last axis the distance): > 0 decays."""
    c = np.asarray(curves, np.float64)
    t = c.shape[-1]
    contrast = c[..., 1 : short + 1].mean(-1) - c[..., (3 * t) // 4 :].mean(-1)
    return contrast / np.maximum(np.abs(c[..., 1:]).mean(-1), 1e-30)


def ones_contrast(head_dim: int, base: float, context: int, short: int) -> float:
    """:func:`relative_contrast` of the all-ones curve (:func:`expected_ones_activation`): the
    decay Su et al.'s argument predicts, on the scale of :data:`TRAINED_MARGIN`."""
    curve = expected_ones_activation(np.arange(context), head_dim, base)
    return float(relative_contrast(curve, short))


def behaviour(low: float, high: float, margin: float = TRAINED_MARGIN) -> str:
    """The class (:data:`BEHAVIOURS`) of a layer whose relative contrast has interval
    ``[low, high]``: ``claims.verdict_from_interval`` of "it decays" (above 0, ± ``margin``)."""
    from ropebook.claims import verdict_from_interval

    verdict = verdict_from_interval(low, high, threshold=0.0, above=True, margin=margin)
    return {"held": "decays", "not held": "grows", "bounded": "flat"}.get(verdict, "uncertain")


def trained_verdict(behaviours: Sequence[str]) -> str:
    """Claim "trained RoPE queries and keys need not decay" from the classes of a model's layers:
    ``held`` if some layer is shown not to decay (``grows``, or ``flat`` within the margin),
    ``not held`` if every layer decays, ``cannot decide`` if the rest are merely uncertain (too
    few samples to tell decay from none); ``not testable here`` without layers."""
    behaviours = list(behaviours)
    unknown = set(behaviours) - set(BEHAVIOURS)
    if unknown:
        raise ValueError(f"unknown layer classes {unknown}; choose from {BEHAVIOURS}")
    if not behaviours:
        return "not testable here"
    if any(b in NOT_DECAYING for b in behaviours):
        return "held"
    return "not held" if all(b == "decays" for b in behaviours) else "cannot decide"


def samples_to_bound(
    mean: float, low: float, high: float, n: int, margin: float = TRAINED_MARGIN,
    confidence: float = 0.95, limit: int = 100_000,
) -> int | None:  # fmt: skip
    """Samples whose t-interval around ``mean`` (at the s.d. behind ``[low, high]`` over ``n``)
    would fit inside ``± margin``; ``None`` if ``|mean| >= margin`` (no count bounds it there),
    there is no s.d. (one sample), or more than ``limit`` would be needed."""
    from scipy import stats

    from ropebook.stats.power import sd_from_interval

    room = margin - abs(mean)
    sd = sd_from_interval(low, high, n, confidence)
    if room <= 0 or not np.isfinite(sd):
        return None
    m = 2
    while m <= limit:
        if stats.t.ppf(0.5 + confidence / 2, m - 1) * sd / np.sqrt(m) <= room:
            return m
        m = m + 1 if m < 64 else int(m * 1.1)
    return None


@dataclass(frozen=True)
class TrainedDecay:
    """Per model and layer: does the mean activation fall from short to long distances?"""

    rows: list[dict]  # model, layer, relative contrast, 95% interval, behaviour
    over: str  # what the intervals are over: seeds, or windows of one seed
    n_layers: int
    context: int
    short: int
    margin: float = TRAINED_MARGIN
    n: int = 0  # samples behind each interval (seeds, or windows of the one seed)
    confidence: float = 0.95  # of every interval (family-wise, see :func:`family_confidence`)

    def counts(self) -> dict[str, dict[str, int]]:
        """``model -> {behaviour: number of layers}`` over :data:`BEHAVIOURS`."""
        models = dict.fromkeys(row["model"] for row in self.rows)
        return {
            name: {
                b: sum(r["behaviour"] == b for r in self.rows if r["model"] == name)
                for b in BEHAVIOURS
            }
            for name in models
        }

    def behaviours(self, models: Sequence[str]) -> list[str]:
        """The layer classes of ``models`` (the evidence of :func:`trained_verdict`)."""
        return [r["behaviour"] for r in self.rows if r["model"] in models]

    @property
    def all_decay(self) -> bool:
        return all(row["behaviour"] == "decays" for row in self.rows)


CONTRAST = "(short − long) / mean |a|"


def family_confidence(n_layers: int, level: float = 0.05) -> float:
    """Per-layer confidence that keeps "some layer is shown not to decay" at ``level`` overall
    (Bonferroni): the claim picks any of ``n_layers`` layers, so each interval must be wider, or
    the more layers a model has the likelier one of them lands below 0 or inside the margin by
    chance alone."""
    if n_layers < 1:
        raise ValueError(f"n_layers must be at least 1, got {n_layers}")
    return 1.0 - level / n_layers


def trained_decay(
    trained: dict,
    model_names,
    seeds,
    short: int,
    margin: float = TRAINED_MARGIN,
    confidence: float = 0.95,
) -> TrainedDecay:
    """Classify every layer from ``trained[name, seed] [layers, windows, T]`` curves.

    The statistic is :func:`relative_contrast`: the mean activation at ``1 <= r <= short``
    minus that over the last quarter of the context, over the layer's mean absolute activation
    (so that larger norms do not make a larger contrast). Its 95% t-interval is over seeds (each
    seed's contrast of its mean curve over windows) when there are several, else over the
    windows of the one seed (each window's contrast over the seed's mean |a|), at ``confidence``
    (:func:`family_confidence` for a claim about some layer). The class is :func:`behaviour` of
    that interval with ``margin``.
    """
    first = trained[model_names[0], seeds[0]]
    n_layers, t = first.shape[0], first.shape[-1]
    rows = []
    for name in model_names:
        for layer in range(n_layers):
            curves = [np.asarray(trained[name, s][layer], np.float64) for s in seeds]
            if len(seeds) > 1:
                samples = [relative_contrast(c.mean(0), short) for c in curves]
                over = f"{len(seeds)} seeds"
            else:
                scale = np.maximum(np.abs(curves[0].mean(0)[1:]).mean(), 1e-30)
                raw = curves[0][:, 1 : short + 1].mean(-1) - curves[0][:, (3 * t) // 4 :].mean(-1)
                samples = raw / scale
                over = f"{len(samples)} windows (1 seed)"
            mean, low, high = mean_interval(samples, confidence)
            rows.append(
                {
                    "model": name,
                    "layer": layer,
                    CONTRAST: mean,
                    "interval": f"[{low:.3f}, {high:.3f}]",
                    "behaviour": behaviour(low, high, margin),
                    "low": low,
                    "high": high,
                }
            )
    n = len(seeds) if len(seeds) > 1 else first.shape[1]
    return TrainedDecay(rows, over, n_layers, t, short, margin, n, confidence)
