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
- **The pe_zoo chapter's measurements**: the CABLE figures' quoted colour-bar ticks and Table 4
  (``CABLE_TICKS``, ``CABLE_TABLE4``), ALiBi against its closed form (:func:`alibi_fit_errors`,
  :func:`alibi_cable_brackets`), the Toeplitz survey of every layer (:func:`toeplitz_survey`),
  the scores' distance measures (:func:`score_measures`), reach
  (:func:`alibi_reach_closed_form`), length extrapolation (:func:`window_losses`,
  :func:`log_estimate`) and the orderings of Table 4 as verdicts
  (:func:`paired_log_ratio_difference`, :func:`order_verdict`). Their tables and figures are in
  :mod:`ropebook.present.biases`.
"""

from __future__ import annotations

import itertools
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


# An encoding comparison is a claim about training runs, so its interval must be over seeds: with
# one seed per encoding the windows' interval describes one trained model of each, and a gap
# between two models could be the luck of their initialisations (as probes.probe_reading rules).
MIN_SEEDS = 2


def replicated(verdict: str, n_seeds: int) -> str:
    """``verdict`` where it rests on at least :data:`MIN_SEEDS` seeds of each model compared,
    else ``cannot decide`` (``not testable here`` with none: :func:`ropebook.claims.too_few_runs`):
    one seed has no interval over training runs, whatever its windows' interval says."""
    from ropebook.claims import too_few_runs

    return verdict if n_seeds >= MIN_SEEDS else too_few_runs(n_seeds)


def separation_verdict(differences: list[tuple[float, float, float]], *, n_seeds: int) -> str:
    """Verdict on a set of claimed-positive differences, each ``(mean, low, high)`` over
    ``n_seeds`` paired seeds.

    ``held``: every interval lies above 0; ``not held``: some interval lies wholly below 0 (the
    opposite order is established); ``cannot decide``: otherwise (some interval contains 0), or
    with fewer than :data:`MIN_SEEDS` seeds (:func:`replicated`).
    """
    if all(low > 0 for _, low, _ in differences):
        verdict = "held"
    elif any(high < 0 for _, _, high in differences):
        verdict = "not held"
    else:
        verdict = "cannot decide"
    return replicated(verdict, n_seeds)


# ---------------------------------------------------------------- the pe_zoo chapter
# One function per measurement of the chapter; each reproduces exactly what the chapter
# computed inline before, so its numbers and verdicts do not move.

LABELS = {"rope": "RoPE", "alibi": "ALiBi", "kerple": "Kerple", "fire": "FIRE"}
BIASED = ("alibi", "kerple", "fire")  # the additive-bias encodings of the zoo

# (top tick, bottom tick) of each head's colour bar in CABLE Figs. 15, 12, 10, 13 (GPT-2 Small,
# final layer, 512 tokens), read from the figure extracts, minus signs restored.
CABLE_TICKS = {
    "rope": [(7.5, -7.5), (7.5, -7.5), (10, -15), (10, -10), (5, -10), (8, -6), (5, -15),
             (7.5, -10), (10, -10), (10, -10), (15, -15), (7.5, -10)],
    "alibi": [(0, -300), (0, -200), (0, -120), (0, -80), (0, -50), (0, -30), (0, -20), (0, -12),
              (0, -7), (0, -5), (0, -3), (0, -1.75)],
    "kerple": [(0, -1.75), (0, -3.5), (0, -8), (0, -2.5), (0, -1.75), (0, -1.6), (0, -2.5),
               (0, -1.6), (0, -1.6), (0, -7), (0, -2.5), (0, -3.5)],
    "fire": [(-3.0, -4.5), (-3.5, -6.0), (-2.25, -4.0), (-3.0, -4.2), (-3.0, -5.0), (-3.0, -4.5),
             (-3.0, -5.5), (-2.5, -4.25), (-2.4, -4.0), (-2.75, -4.75), (-2.6, -4.0), (-4.0, -7.0)],
}  # fmt: skip
CABLE_FIG = {"rope": 15, "alibi": 12, "kerple": 10, "fire": 13}
# spacing of the tick labels on each colour bar of CABLE Fig. 12 (from the figure extract)
ALIBI_TICK_STEP = [50, 25, 20, 10, 10, 5, 2.5, 2, 1, 1, 0.5, 0.25]
CABLE_HEADS, CABLE_LENGTH = 12, 512
# CABLE (Veisi et al. 2025), Table 4: GPT-2 Small trained at 1024 tokens; perplexity at 1024 and
# at 8192 tokens on the paper's data. Quoted.
CABLE_TABLE4 = {
    "alibi": (20.99, 22.42),
    "kerple": (20.86, 26.59),
    "fire": (21.26, 155.32),
    "rope": (20.87, 554.12),
}
CABLE_RATIO = {n: b / a for n, (a, b) in CABLE_TABLE4.items()}  # ppl at 8x / ppl at 1x


def sample_windows(tokens, length: int, seed, count: int | None = None) -> jnp.ndarray:
    """Held-out windows of ``length`` tokens with uniformly drawn starts (``np.random.
    default_rng(seed)``): ``[1, length]`` for one window (``count=None``), else ``[count,
    length]``. Returns ``(windows, starts)``."""
    tokens = np.asarray(tokens)
    rng = np.random.default_rng(seed)
    if count is None:
        start = int(rng.integers(0, len(tokens) - length))
        return jnp.asarray(tokens[start : start + length].astype(np.int32))[None], [start]
    starts = rng.integers(0, len(tokens) - length, size=count)
    windows = np.stack([tokens[s : s + length] for s in starts]).astype(np.int32)
    return jnp.asarray(windows), [int(s) for s in starts]


def final_layer(m, window) -> dict:
    """One forward pass of a zoo model on ``window [1, T]``: the final layer's pre-softmax
    ``scores [H, T, T]``, its additive ``bias [H, T, T]`` (None for RoPE) and every layer's bias
    (``all_bias``)."""
    from ropebook import model

    _, internals = model.forward(m.params, window, m.config, return_internals=True)
    last = internals[-1]
    return {
        "scores": np.asarray(last["scores"][0]),
        "bias": None if last["bias"] is None else np.asarray(last["bias"]),
        "all_bias": [None if x["bias"] is None else np.asarray(x["bias"]) for x in internals],
    }


def panel_range(matrix) -> tuple[float, float]:
    """(min, max) of the causal entries of one head's ``[T, T]`` panel."""
    causal = causal_only(matrix)
    return float(np.nanmin(causal)), float(np.nanmax(causal))


def alibi_fit_errors(layer_biases: list) -> tuple[float, float, float]:
    """ALiBi's biases ``[H, T, T]`` (one per layer) against ``-m_h (i - j)``, ``m_h = 2^(-8h/H)``:
    ``(largest relative error of the fitted slopes, largest entry error, bias scale m_1 (T-1))``.
    """
    from ropebook import encodings

    n_heads, length = layer_biases[0].shape[0], layer_biases[0].shape[-1]
    slopes = encodings.alibi_slopes(n_heads)
    i, j = np.tril_indices(length)
    exact = -slopes[:, None] * (i - j)[None, :]
    fitted = np.asarray([fit_slopes(b)[0] for b in layer_biases])
    slope_error = float(np.max(np.abs(fitted / slopes - 1)))
    bias_error = max(float(np.max(np.abs(b[:, i, j] - exact))) for b in layer_biases)
    return slope_error, bias_error, float(slopes.max() * (length - 1))


def alibi_cable_brackets() -> list[dict]:
    """ALiBi evaluated by our own encoding at CABLE's size (12 heads, 512 tokens): per head the
    slope, the closed-form range ``511 m_h``, the encoding's bias at distance 511, Fig. 12's last
    labelled tick (and tick spacing) and whether the range fits that colour bar
    (:func:`alibi_bracket`)."""
    from ropebook import encodings

    enc = encodings.EncodingConfig("alibi")
    positions = jnp.arange(CABLE_LENGTH)
    bias = np.asarray(encodings.bias({}, enc, CABLE_HEADS, positions, positions, CABLE_LENGTH))
    profile = distance_profile(bias)
    slopes = encodings.alibi_slopes(CABLE_HEADS)
    rows = []
    for h in range(CABLE_HEADS):
        extent = float(-profile[h, CABLE_LENGTH - 1])
        bottom, step = abs(CABLE_TICKS["alibi"][h][1]), ALIBI_TICK_STEP[h]
        rows.append(
            {
                "h": h + 1,
                "m_h": float(slopes[h]),
                "511·m_h": float((CABLE_LENGTH - 1) * slopes[h]),
                "bias at r = 511": extent,
                "Fig. 12 tick (step)": f"{bottom:g} ({step:g})",
                "fits": "yes" if alibi_bracket(extent, bottom, step) else "no",
            }
        )
    return rows


def encoding_bias(m, layer: int, length: int) -> np.ndarray:
    """A layer's bias ``[H, T, T]`` at positions ``0..length-1``, from a zoo model's own learned
    encoding parameters (the call its forward pass makes)."""
    from ropebook import encodings

    pos = jnp.arange(length)
    c = m.config
    return np.asarray(
        encodings.bias(
            m.params["layers"][layer]["encoding"], c.encoding_config, c.n_heads, pos, pos,
            c.context,
        )
    )  # fmt: skip


def max_relative_deviation(stack, row_start: int = 0, row_stop: int | None = None) -> float:
    """Largest relative diagonal spread (:func:`toeplitz_deviation`) over the heads of ``[H, T,
    T]``, one head at a time to bound memory; NaN if no head has a measurable diagonal."""
    values = [
        toeplitz_deviation(stack[h], row_start=row_start, row_stop=row_stop, relative=True)
        for h in range(stack.shape[0])
    ]
    finite = [v for v in values if np.isfinite(v)]
    return max(finite) if finite else float("nan")


def toeplitz_survey(models: dict, short: int, long: int) -> list[dict]:
    """Every layer of every biased model (``models[name][seed]``) at ``short`` and ``long``
    tokens: relative diagonal spread at each length, whether the long bias is finite and, for
    FIRE, the learned threshold ``L`` and the spread on the rows ``i < L`` and ``i >= L``."""
    rows = []
    for name in BIASED:
        for s, m in models[name].items():
            for layer in range(m.config.n_layers):
                long_bias = encoding_bias(m, layer, long)
                row = {
                    "encoding": LABELS[name], "seed": s, "layer": layer,
                    "short": max_relative_deviation(encoding_bias(m, layer, short)),
                    "long": max_relative_deviation(long_bias),
                    "finite": bool(np.all(np.isfinite(long_bias))),
                }  # fmt: skip
                if name == "fire":
                    threshold = fire_threshold(
                        m.params["layers"][layer]["encoding"], m.config.context
                    )
                    below = min(math.ceil(threshold), long)
                    row["L"] = threshold
                    row["below"] = max_relative_deviation(long_bias, row_stop=below)
                    row["above"] = (
                        max_relative_deviation(long_bias, row_start=below)
                        if below < long - 1
                        else 0.0
                    )
                rows.append(row)
    return rows


def toeplitz_summary(rows: list[dict]) -> dict:
    """The extremes of :func:`toeplitz_survey` the chapter reports and its claims read."""
    fire = [r for r in rows if r["encoding"] == "FIRE"]

    def worst(label: str) -> float:
        return max(max(r["short"], r["long"]) for r in rows if r["encoding"] == label)

    return {
        "alibi": worst("ALiBi"),
        "kerple": worst("Kerple"),
        "fire_short": max(r["short"] for r in fire),
        "fire_below": max(r["below"] for r in fire),
        "fire_above": max(r["above"] for r in fire),
        "fire_min_l": min(r["L"] for r in fire),
        "fire_max_l": max(r["L"] for r in fire),
        "fire_finite": all(r["finite"] for r in fire),
    }


def rows_past(threshold: float, length: int) -> int:
    """How many query rows ``i < length`` lie past FIRE's threshold ``L`` (``i > L``): only they
    are normalised by ``psi(i)`` rather than ``psi(L)``, so only they can make the bias depend on
    more than ``i - j``; 0 when ``L >= length - 1``."""
    return int(min(max(length - 1 - math.floor(threshold), 0), length))


def fire_toeplitz_verdict(spread: float, rows: int, tol: float, *, need: int = 1) -> str:
    """Is FIRE's bias a function of ``i - j`` alone where it could fail to be? ``held`` if its
    largest relative diagonal spread is below ``tol`` (the chapter's Toeplitz tolerance, the one
    that calls ALiBi and Kerple Toeplitz), ``not held`` otherwise — but ``uninformative here``
    with fewer than ``need`` rows past the learned threshold (:func:`rows_past`): rows ``i <= L``
    share one normaliser and are Toeplitz by construction, so the spread is 0 whatever FIRE
    learned. ``need`` is 2 where the rows past ``L`` are compared among themselves."""
    from ropebook.claims import holds, informative_or

    return informative_or(rows >= need, holds(spread < tol))


def score_measures(m, windows) -> tuple[np.ndarray, np.ndarray]:
    """A model's final-layer scores on ``windows [B, T]``: share of variance explained by
    distance (:func:`distance_r2`) and relative diagonal spread, each ``[B, H]``."""
    from ropebook import model

    _, internals = model.forward(m.params, windows, m.config, return_internals=True)
    scores = np.asarray(internals[-1]["scores"])  # [B, H, T, T]
    deviation = np.array(
        [[toeplitz_deviation(scores[b, h], relative=True) for h in range(scores.shape[1])]
         for b in range(len(scores))]
    )  # fmt: skip
    return distance_r2(scores), deviation


def seed_interval(per_seed: list, confidence: float) -> tuple[tuple[float, float, float], str]:
    """Mean and interval over seeds of per-seed sample arrays ``[B, ...]``; with one seed, over
    its ``B`` windows (each window's mean). Returns ``((mean, low, high), over)``."""
    from ropebook.analysis import mean_interval

    if len(per_seed) > 1:
        return mean_interval([float(np.mean(x)) for x in per_seed], confidence), "seeds"
    windows = np.asarray(per_seed[0]).reshape(len(per_seed[0]), -1).mean(axis=1)
    return mean_interval(windows, confidence), "windows (1 seed)"


def score_summary(r2: list, deviation: list, confidence: float) -> dict:
    """Summary of :func:`score_measures` over seeds (lists of ``[B, H]``): mean R² with its
    interval, what the interval is over, mean and min relative spread, and the share of heads ×
    windows whose R² is below 0.5 (content rather than distance decides)."""
    (mean, low, high), over = seed_interval(r2, confidence)
    return {
        "mean": mean, "low": low, "high": high, "over": over,
        "dev_mean": float(np.mean(deviation)), "dev_min": float(np.min(deviation)),
        "content_share": float(np.mean(np.concatenate([x.ravel() for x in r2]) < 0.5)),
    }  # fmt: skip


def alibi_reach_closed_form(n_heads: int, threshold: float, length: int) -> np.ndarray:
    """ALiBi's reach ``ceil(ln(1/threshold) / m_h)`` per head; ``inf`` at or past ``length``."""
    from ropebook import encodings

    slopes = encodings.alibi_slopes(n_heads)
    closed = np.ceil(math.log(1 / threshold) / slopes - 1e-9)
    return np.where(closed < length, closed, np.inf)


def non_increasing(profile) -> np.ndarray:
    """Per head of ``[..., R]``: is ``b(r)`` non-increasing in ``r`` (to a 1e-6 relative slack)?"""
    p = np.asarray(profile)
    return np.all(np.diff(p, axis=-1) <= 1e-6 * (1 + np.abs(p[..., 1:])), axis=-1)


def final_layer_decay(models_by_seed: dict, length: int) -> dict[int, np.ndarray]:
    """Per seed, per head: does the model's final-layer bias never increase with distance over
    ``length`` positions (:func:`non_increasing` of the mean of each diagonal)?"""
    return {
        s: non_increasing(distance_profile(encoding_bias(m, m.config.n_layers - 1, length)))
        for s, m in models_by_seed.items()
    }


def decay_verdict(per_seed: dict[int, np.ndarray]) -> str:
    """ "A learned bias decays with distance", graded over every head of every seed
    (:func:`final_layer_decay`): ``held`` if every head of every run is non-increasing,
    ``not held`` if none is, else ``partly``; replicated over at least :data:`MIN_SEEDS` runs
    (:func:`replicated`), since one trained model says what one initialisation learnt."""
    from ropebook.claims import graded, too_few_runs

    if not per_seed:
        return too_few_runs(0)
    heads = [bool(h) for decays in per_seed.values() for h in np.ravel(decays)]
    return replicated(graded(heads), len(per_seed))


# ---------------------------------------------------------------- length extrapolation


def window_losses(m, tokens, length: int, n_windows: int) -> np.ndarray:
    """Next-token losses ``[n_windows, length]`` of a model on the held-out windows drawn by
    ``evaluation.loss_by_position`` with seeds ``0..n_windows-1`` (the same windows for every model)."""
    from ropebook import evaluation

    return np.stack(
        [
            evaluation.loss_by_position(
                m.params, m.config, tokens, seq_len=length, n_windows=1, seed=w
            )
            for w in range(n_windows)
        ]
    )


def prefix_identity_gap(m, tokens, length: int, seed) -> float:
    """Largest difference between the first ``context`` losses of a ``length``-token window and
    the losses of the same window cut at the context: 0 up to rounding for a causal model."""
    from ropebook import model

    tokens = np.asarray(tokens)
    context = m.config.context
    start = np.random.default_rng(seed).integers(0, len(tokens) - length - 1)
    window = jnp.asarray(tokens[start : start + length + 1].astype(np.int32))[None]
    long_losses = np.asarray(model.token_losses(m.params, window, m.config))[0, :context]
    short_losses = np.asarray(model.token_losses(m.params, window[:, : context + 1], m.config))[0]
    return float(np.max(np.abs(long_losses - short_losses)))


def mean_loss_by_length(losses, lengths: list[int]) -> np.ndarray:
    """``[n_windows, len(lengths)]``: each window's mean loss over its first ``L`` positions, i.e.
    ln of its perplexity at length ``L`` (a causal model's losses there equal a cut window's)."""
    losses = np.asarray(losses)
    return np.stack([losses[:, :length].mean(axis=1) for length in lengths], axis=1)


def log_estimate(per_seed: list, confidence: float) -> tuple[float, float, float, str]:
    """``exp`` of the mean and interval of a log-quantity given per seed as ``[n_windows]``: over
    seeds (their window means), or over the windows when there is one seed."""
    from ropebook.analysis import mean_interval

    if len(per_seed) > 1:
        mean, lo, hi = mean_interval([float(np.mean(v)) for v in per_seed], confidence)
        over = f"{len(per_seed)} seeds"
    else:
        mean, lo, hi = mean_interval(per_seed[0], confidence)
        over = f"{len(per_seed[0])} windows, 1 seed"
    return math.exp(mean), math.exp(lo), math.exp(hi), over


# ---------------------------------------------------------------- extrapolation orderings


def ordering_checks(names, cable_ratio: dict) -> dict[str, list[tuple[str, str]]]:
    """The orderings of CABLE's Table 4 as ``(worse, better)`` pairs each needs: ALiBi degrades
    least, RoPE most, and the whole order (each neighbour pair of CABLE's ranking)."""
    order = sorted(names, key=cable_ratio.get)
    return {
        "ALiBi degrades least": [(o, "alibi") for o in names if o != "alibi"],
        "RoPE degrades most": [("rope", o) for o in names if o != "rope"],
        WHOLE_ORDER: [(b, a) for a, b in itertools.pairwise(order)],
    }


WHOLE_ORDER = "CABLE's whole order"  # the ordering of :func:`ordering_checks` read as a whole


def ordering_verdicts(
    mean_loss: dict, checks: dict[str, list[tuple[str, str]]], seeds, confidence: float
) -> tuple[dict[tuple[str, str], tuple[float, float, float]], dict[str, str]]:
    """Every ordering of ``checks`` (:func:`ordering_checks`) decided on ``mean_loss[name, seed]``
    (:func:`mean_loss_by_length`) over ``seeds``: the paired ln-ratio difference of each pair
    (:func:`paired_log_ratio_difference`) and each ordering's verdict,
    :func:`separation_verdict`, the whole order's :func:`order_verdict`."""
    difference = {
        pair: paired_log_ratio_difference(mean_loss, *pair, seeds, confidence)
        for pairs in checks.values()
        for pair in pairs
    }
    rule = {WHOLE_ORDER: order_verdict}
    verdicts = {
        label: rule.get(label, separation_verdict)(
            [difference[p] for p in pairs], n_seeds=len(seeds)
        )
        for label, pairs in checks.items()
    }
    return difference, verdicts


def paired_log_ratio_difference(
    mean_loss: dict, worse: str, better: str, seeds, confidence: float
) -> tuple[float, float, float]:
    """Interval of ``ln(ppl_max/ppl_1x)`` of ``worse`` minus that of ``better`` on the same
    windows (``mean_loss[name, seed]`` is :func:`mean_loss_by_length`): over seeds (window
    means), or over the windows with one seed."""
    from ropebook.analysis import mean_interval

    return mean_interval(_paired_samples(mean_loss, worse, better, seeds), confidence)


def _paired_samples(mean_loss: dict, worse: str, better: str, seeds) -> np.ndarray:
    """The samples behind :func:`paired_log_ratio_difference`: one per seed (window means), or
    one per window with a single seed."""

    def log_ratio(name: str, s: int) -> np.ndarray:
        return mean_loss[name, s][:, -1] - mean_loss[name, s][:, 0]

    diffs = [log_ratio(worse, s) - log_ratio(better, s) for s in seeds]
    return np.asarray([float(np.mean(d)) for d in diffs] if len(diffs) > 1 else diffs[0])


def detectable_difference(
    mean_loss: dict, pairs, seeds, confidence: float = 0.95, power: float = 0.8
) -> float:
    """The largest, over ``pairs`` of ``(worse, better)``, of the smallest ln-ratio difference
    their paired samples detect with ``power`` (:func:`ropebook.stats.power
    .min_detectable_effect`): what the ordering's run can resolve."""
    from ropebook.stats.power import min_detectable_effect

    values = []
    for worse, better in pairs:
        samples = _paired_samples(mean_loss, worse, better, seeds)
        if samples.size < 2:
            return float("nan")
        sd = float(np.std(samples, ddof=1))
        values.append(min_detectable_effect(sd, samples.size, confidence=confidence, power=power))
    return max(values)


def order_verdict(differences: list[tuple[float, float, float]], *, n_seeds: int) -> str:
    """CABLE's whole order from its neighbour differences ``(mean, low, high)`` over ``n_seeds``
    paired seeds, each claimed positive: :func:`ropebook.claims.combine` of their interval
    verdicts — ``held`` when every one is established, ``partly`` when some are, ``not held``
    when none is and some is established the other way, ``cannot decide`` otherwise or with
    fewer than :data:`MIN_SEEDS` seeds (:func:`replicated`). A rank correlation of the point
    estimates (Kendall's tau) is shown beside it but decides nothing: it cannot tell an order
    from noise."""
    from ropebook.claims import combine, verdict_from_interval

    verdict = combine(
        verdict_from_interval(low, high, threshold=0.0) for _, low, high in differences
    )
    return replicated(verdict, n_seeds)


def content_verdict(low: float, high: float, n_seeds: int, threshold: float = 0.5) -> str:
    """Fig. 15's reading: distance explains less than ``threshold`` of RoPE's final-layer score
    variance — ``held`` if the R² interval over ``n_seeds`` seeds lies below it, ``not held`` if
    above, ``cannot decide`` if it contains it or with fewer than :data:`MIN_SEEDS` seeds (one
    model's windows say how that model's scores vary, not how training runs do)."""
    from ropebook.claims import verdict_from_interval

    verdict = verdict_from_interval(low, high, threshold=threshold, above=False)
    return replicated(verdict, n_seeds)


def weakest_difference(pairs, difference: dict) -> tuple[str, str]:
    """The ``(worse, better)`` pair of an ordering whose difference has the lowest lower bound."""
    return min(pairs, key=lambda p: difference[p][1])
