"""Positional heads: detect them (Def. 5.1), build them (Thm. 5.3), and fail to build them
without positions (Prop. 5.2). Barbero et al. (2025), Sec. 5 and App. A.2, E.1.

Conventions: attention matrices are ``[..., T, T]`` with rows = queries ``i`` and columns = keys
``j <= i`` (causal), rows summing to 1. Positions are 0-based here; the paper counts from 1.

- **Detector** (Def. 5.1). A head is *epsilon-diagonal* over a size ``N`` if ``alpha_{i,i} > 1-eps``
  for every row ``i < N``, *epsilon-previous-token* if ``alpha_{i,i-1} > 1-eps``. Row 0 is left
  out of both: it has one key, so ``alpha_{0,0} = 1`` whatever the head does (trivially
  diagonal), and it has no previous token. :func:`epsilon_achieved` gives the smallest such
  ``eps`` a head reaches on some inputs (``1 - min_i alpha_{i,target}``); trained heads are never
  perfect, so :func:`positional_score` (mean attention on the target) ranks them softly.
- **Construction** (Thm. 5.3): every query ``psi``, every key ``psi`` (diagonal) or ``R psi``
  (previous token), rotated by :func:`ropebook.rope.apply_rope`. :func:`threshold_norm` is the
  closed form for the ``||psi||^2`` that guarantees ``1 - eps``; :func:`threshold_study` checks it.
- **Isolated heads** (Prop. 5.2, empirically): :func:`fit_isolated_head` trains one head whose
  queries and keys are arbitrary functions of the token (two lookup tables), with or without RoPE.
- **Trained models**: :func:`scan_model` measures every head of a :mod:`ropebook.model` model on
  token windows; :func:`target_activations` gives the paper's Tables 3-5 (activations next to
  their Cauchy-Schwarz bound); :func:`count_heads`, :func:`positional_fast_shares`,
  :func:`target_cosines` and :func:`seed_cosines` read the scans for the chapter's claims,
  :func:`control_cosines` the same measure on the heads that are not positional (the control).
- **Verdicts** (:mod:`.verdicts`, re-exported here): the seed is the unit of every interval
  (heads averaged within their seed, :func:`seed_means`; *cannot decide* on fewer than
  :data:`MIN_SEEDS` seeds, :func:`seed_verdict`), and the paper's own heads (:data:`PAPER_HEADS`,
  quoted from App. E.1) set the Cauchy-Schwarz rule's threshold (:data:`CS_THRESHOLD`).

Numbers only: the chapter's tables and figures are in :mod:`ropebook.present.heads`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from ropebook import rope
from ropebook.analysis import Estimate, chunk_norms, interval_text

# the verdict rules and the paper's quoted heads (verdicts.__all__), re-exported
from ropebook.analysis.heads.verdicts import *  # noqa: F403
from ropebook.analysis.heads.verdicts import seed_means

KINDS: tuple[str, ...] = ("diagonal", "previous")
OFFSET = {"diagonal": 0, "previous": 1}  # target key of query i is i - OFFSET[kind]


def _check_kind(kind: str) -> int:
    if kind not in OFFSET:
        raise ValueError(f"unknown head kind {kind!r}; valid kinds: {', '.join(KINDS)}")
    return OFFSET[kind]


# ---------------------------------------------------------------- Def. 5.1: the detector


def target_weights(attention, kind: str, n: int | None = None) -> np.ndarray:
    """``alpha_{i, i - offset}`` for rows ``i = 1 .. N-1``: ``[..., T, T] -> [..., N-1]``."""
    offset = _check_kind(kind)
    a = np.asarray(attention)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"attention must be [..., T, T], got shape {a.shape}")
    t = a.shape[-1] if n is None else n
    if not 2 <= t <= a.shape[-1]:
        raise ValueError(f"need 2 <= N <= T = {a.shape[-1]}, got N = {t}")
    rows = np.arange(1, t)
    return a[..., rows, rows - offset].astype(np.float64)


def epsilon_achieved(attention, kind: str, n: int | None = None) -> float:
    """The smallest ``eps`` with ``alpha_{i,target} >= 1 - eps`` for every row (and batch item)."""
    return float(1.0 - target_weights(attention, kind, n).min())


def is_positional(attention, kind: str, eps: float, n: int | None = None) -> bool:
    """Def. 5.1: ``alpha_{i,target} > 1 - eps`` for every row ``1 <= i < N`` of every matrix."""
    return bool(np.all(target_weights(attention, kind, n) > 1.0 - eps))


def positional_score(attention, kind: str, n: int | None = None) -> float:
    """Mean attention on the target key over rows ``1 .. N-1`` (and any leading axes)."""
    return float(target_weights(attention, kind, n).mean())


def classify(attention, eps: float, n: int | None = None) -> str:
    """``"diagonal"``, ``"previous"`` or ``"neither"`` (Def. 5.1 with ``eps < 1/2`` is exclusive)."""
    if eps > 0.5:
        raise ValueError("eps must be <= 1/2 so that a row cannot have two targets above 1 - eps")
    for kind in KINDS:
        if is_positional(attention, kind, eps, n):
            return kind
    return "neither"


def repeat_counts(tokens, kind: str) -> np.ndarray:
    """``r_i``: how many keys ``j <= i`` hold the same token as the target key of row ``i``.

    ``[..., T] -> [..., T-1]`` for rows ``1 .. T-1``. A head whose keys depend only on the token
    gives those ``r_i`` keys one activation, so it cannot put more than ``1/r_i`` on the target.
    """
    offset = _check_kind(kind)
    x = np.asarray(tokens)
    t = x.shape[-1]
    same = x[..., :, None] == x[..., None, :]  # [..., target position, key position]
    causal = np.tril(np.ones((t, t), bool))
    rows = np.arange(1, t)
    return (same[..., rows - offset, :] & causal[rows]).sum(-1)


# ---------------------------------------------------------------- Thm. 5.3: the construction


def plane_vector(head_dim: int, weights, pairing: str = "half") -> np.ndarray:
    """A vector with ``||psi^(k)||^2 = weights[k]`` in chunk ``k`` (on the chunk's first dim)."""
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (head_dim // 2,) or np.any(w < 0):
        raise ValueError(f"weights must be {head_dim // 2} non-negative numbers")
    psi = np.zeros(head_dim)
    psi[rope.chunk_indices(head_dim, pairing)[:, 0]] = np.sqrt(w)
    return psi


def construction(kind: str, psi, n: int, *, base: float = 10_000.0, pairing: str = "half"):
    """Thm. 5.3's queries and keys ``[n, 1, d]`` *before* RoPE: ``q_i = psi``; ``k_j = psi``
    (diagonal) or ``k_j = R^1 psi`` (previous token, one unit rotation of every chunk)."""
    offset = _check_kind(kind)
    psi = np.asarray(psi, dtype=np.float64)
    key = rope.rotation_matrix(offset, psi.size, base=base, pairing=pairing) @ psi
    return np.tile(psi, (n, 1, 1)), np.tile(key, (n, 1, 1))


def construction_attention(
    kind: str, psi, n: int, *, base: float = 10_000.0, pairing: str = "half"
) -> np.ndarray:
    """``[n, n]`` attention of the construction, rotated by the models' own ``apply_rope``
    (raw dot products, no ``1/sqrt(d)``; float32 like the models)."""
    q, k = construction(kind, psi, n, base=base, pairing=pairing)
    positions = jnp.arange(n)
    q_rot = rope.apply_rope(jnp.asarray(q, jnp.float32), positions, base=base, pairing=pairing)
    k_rot = rope.apply_rope(jnp.asarray(k, jnp.float32), positions, base=base, pairing=pairing)
    scores = jnp.einsum("id,jd->ij", q_rot[:, 0], k_rot[:, 0])
    scores = jnp.where(jnp.tril(jnp.ones((n, n), bool)), scores, -jnp.inf)
    return np.asarray(jax.nn.softmax(scores, axis=-1), dtype=np.float64)


def wrong_offsets(kind: str, n: int) -> np.ndarray:
    """``|m|`` of the relative rotations ``R^m`` that the wrong keys of the last row see.

    Diagonal: key ``j`` of row ``i`` scores ``<psi, R^{j-i} psi>``, so ``|m| = 1 .. N-1``.
    Previous token: ``<psi, R^{j+1-i} psi>``, so ``m = 1`` (key ``i``) and ``|m| = 1 .. N-2``.
    Earlier rows see a subset, so the last row is the hardest.
    """
    _check_kind(kind)
    if n < 2:
        raise ValueError("need N >= 2 positions")
    top = n - 1 if kind == "diagonal" else max(1, n - 2)
    return np.arange(1, top + 1)


def margin(kind: str, n: int, frequencies, weights) -> float:
    """``delta = min_m sum_k w_k (1 - cos(m g_k))`` with ``w`` normalised: the best wrong key
    scores ``||psi||^2 (1 - delta)``."""
    w = np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    m = wrong_offsets(kind, n)[:, None]
    return float(np.min((w * (1.0 - np.cos(m * np.asarray(frequencies)))).sum(-1)))


def threshold_norm(eps: float, n: int, kind: str, frequencies, weights) -> float:
    """Closed form: ``||psi||^2 >= ln((N-1)(1-eps)/eps) / delta`` guarantees ``alpha >= 1-eps``
    on the target of every row ``i < N`` (each of the ``<= N-1`` wrong keys has weight at most
    ``exp(-||psi||^2 delta)`` relative to the target). ``inf`` when ``delta = 0``."""
    if not 0 < eps < 1:
        raise ValueError(f"eps must lie in (0, 1), got {eps}")
    delta = margin(kind, n, frequencies, weights)
    if delta <= 0:
        return float("inf")
    return float(max(np.log((n - 1) * (1 - eps) / eps), 0.0) / delta)


def construction_epsilon(norm2, n: int, kind: str, frequencies, weights) -> np.ndarray:
    """Exact ``1 - min_i alpha_{i,target}`` of the construction with ``||psi||^2 = norm2``
    (float64, from the closed-form scores ``norm2 * sum_k w_k cos(m g_k)``); ``norm2`` may be an
    array."""
    offset = _check_kind(kind)
    w = np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    m = j + offset - i  # rotation seen by key j from query i
    angles = m[..., None] * np.asarray(frequencies, dtype=np.float64)
    unit = (w * np.cos(angles)).sum(-1)  # [n, n] score per unit norm^2
    causal = j <= i
    rows = np.arange(1, n)
    out = []
    for s in np.atleast_1d(np.asarray(norm2, dtype=np.float64)):
        scores = np.where(causal, s * unit, -np.inf)
        scores -= scores.max(-1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(-1, keepdims=True)
        out.append(1.0 - p[rows, rows - offset].min())
    result = np.asarray(out)
    return result if np.ndim(norm2) else result[0]


def exact_threshold_norm(
    eps: float, n: int, kind: str, frequencies, weights, *, hi: float = 1e12
) -> float:
    """Smallest ``||psi||^2`` with ``construction_epsilon <= eps`` (bisection on a log scale)."""
    lo = 1e-9
    if construction_epsilon(hi, n, kind, frequencies, weights) > eps:
        return float("inf")
    for _ in range(200):
        mid = np.sqrt(lo * hi)
        if construction_epsilon(mid, n, kind, frequencies, weights) <= eps:
            hi = mid
        else:
            lo = mid
        if hi / lo < 1 + 1e-9:
            break
    return float(hi)


# ---------------------------------------------------------------- Prop. 5.2: a head in isolation


@dataclass
class IsolatedFit:
    """One head trained alone to be ``kind``; queries and keys are lookup tables of the token."""

    encoding: str
    kind: str
    losses: np.ndarray  # training loss per step (mean -log alpha_target)
    mean_target: float  # mean alpha_target on held-out random sequences (rows 1..T-1)
    epsilon: float  # 1 - min alpha_target on those sequences (Def. 5.1)
    repeated_target: float  # mean alpha_target on rows whose target token occurs >= 2 times
    repeat_excess: float  # max over those rows of alpha_target - 1/r (<= 0: the NoPE bound)
    bos_x_x: float  # max over tokens x of alpha_target of the last row of [bos, x, x]
    params: dict = field(repr=False, default_factory=dict)


def _isolated_scores(params, tokens, encoding: str, base: float):
    """Raw scores ``[B, T, T]`` (causal mask = -inf) of an isolated head, in JAX for training."""
    q = params["q"][tokens][..., None, :]  # [B, T, 1, d]
    k = params["k"][tokens][..., None, :]
    if encoding == "rope":
        positions = jnp.arange(tokens.shape[-1])
        q, k = rope.apply_rope(q, positions, base=base), rope.apply_rope(k, positions, base=base)
    t = tokens.shape[-1]
    scores = jnp.einsum("bid,bjd->bij", q[:, :, 0], k[:, :, 0])
    return jnp.where(jnp.tril(jnp.ones((t, t), bool)), scores, -jnp.inf)


def isolated_attention(params, tokens, encoding: str, base: float = 10_000.0) -> np.ndarray:
    """``[B, T, T]`` attention of an isolated head on ``tokens [B, T]``, in float64.

    Evaluated in numpy float64 (RoPE through :func:`ropebook.rope.rotation_matrix`) so that a
    weight of ``1/2 - 1e-9`` is not rounded to ``1/2`` as float32 would.
    """
    tokens = np.asarray(tokens)
    q = np.asarray(params["q"], np.float64)[tokens]  # [B, T, d]
    k = np.asarray(params["k"], np.float64)[tokens]
    t, d = tokens.shape[-1], q.shape[-1]
    if encoding == "rope":
        rotations = np.stack([rope.rotation_matrix(p, d, base=base) for p in range(t)])
        q = np.einsum("tde,bte->btd", rotations, q)
        k = np.einsum("tde,bte->btd", rotations, k)
    scores = np.einsum("bid,bjd->bij", q, k)
    scores = np.where(np.tril(np.ones((t, t), bool)), scores, -np.inf)
    scores -= scores.max(-1, keepdims=True)
    weights = np.exp(scores)
    return weights / weights.sum(-1, keepdims=True)


def random_sequences(rng: np.random.Generator, batch: int, length: int, vocab: int) -> np.ndarray:
    """``[batch, length]``: token 0 (BOS) then uniform tokens from ``1 .. vocab`` (many repeats)."""
    body = rng.integers(1, vocab + 1, size=(batch, length - 1))
    return np.concatenate([np.zeros((batch, 1), body.dtype), body], axis=1)


def fit_isolated_head(
    kind: str,
    encoding: str,
    *,
    vocab: int = 8,
    head_dim: int = 8,
    seq_len: int = 16,
    steps: int = 400,
    batch_size: int = 64,
    lr: float = 0.05,
    init_scale: float = 0.5,
    base: float = 10_000.0,
    seed: int = 0,
    n_eval: int = 512,
) -> IsolatedFit:
    """Train one attention head *alone* to be a diagonal or previous-token head.

    Queries and keys are free lookup tables ``[vocab + 1, head_dim]`` (token 0 = BOS): the most
    general function of the token a head can compute, so Prop. 5.2's bound applies to NoPE however
    well it trains. The loss is ``-mean log alpha_{i,target}`` over rows ``1..T-1`` of random
    sequences; Adam (optax) for ``steps`` steps with fresh batches.

    One function on purpose: the loss, the jitted step and the held-out evaluation share the
    head's settings and would only be split into helpers that take them all.
    """
    import optax

    offset = _check_kind(kind)
    if encoding not in ("nope", "rope"):
        raise ValueError(f"encoding must be 'nope' or 'rope', got {encoding!r}")
    rng = np.random.default_rng([seed, 5, offset])
    key_q, key_k = jax.random.split(jax.random.key(seed))
    params = {
        "q": init_scale * jax.random.normal(key_q, (vocab + 1, head_dim)),
        "k": init_scale * jax.random.normal(key_k, (vocab + 1, head_dim)),
    }
    rows = jnp.arange(1, seq_len)

    def loss_fn(p, tokens):
        log_probs = jax.nn.log_softmax(_isolated_scores(p, tokens, encoding, base), axis=-1)
        return -jnp.mean(log_probs[:, rows, rows - offset])

    optimizer = optax.adam(lr)
    state = optimizer.init(params)

    @jax.jit
    def step(p, s, tokens):
        loss, grads = jax.value_and_grad(loss_fn)(p, tokens)
        updates, s = optimizer.update(grads, s, p)
        return optax.apply_updates(p, updates), s, loss

    losses = []
    for _ in range(steps):
        batch = jnp.asarray(random_sequences(rng, batch_size, seq_len, vocab))
        params, state, loss = step(params, state, batch)
        losses.append(float(loss))

    eval_tokens = random_sequences(np.random.default_rng([seed, 6]), n_eval, seq_len, vocab)
    attention = isolated_attention(params, eval_tokens, encoding, base)
    weights = target_weights(attention, kind)
    r = repeat_counts(eval_tokens, kind)
    repeated = r >= 2
    probes = np.array([[0, x, x] for x in range(1, vocab + 1)])
    probe_attention = isolated_attention(params, probes, encoding, base)
    return IsolatedFit(
        encoding=encoding,
        kind=kind,
        losses=np.asarray(losses),
        mean_target=float(weights.mean()),
        epsilon=float(1 - weights.min()),
        repeated_target=float(weights[repeated].mean()) if repeated.any() else float("nan"),
        repeat_excess=float((weights - 1 / r)[repeated].max()) if repeated.any() else float("nan"),
        bos_x_x=float(probe_attention[:, 2, 2 - offset].max()),
        params=jax.tree.map(np.asarray, params),
    )


# ---------------------------------------------------------------- trained models


@dataclass
class HeadScan:
    """Every head of one model measured on token windows. Arrays are ``[L, H]`` unless noted.

    ``score[kind]``: mean ``alpha_{i,target}`` over rows ``1..T-1`` (the soft detector);
    ``epsilon[kind]``: ``1 - min alpha_{i,target}`` (Def. 5.1's ``eps`` reached on these windows);
    ``repeated[kind]``: mean ``alpha_{i,target}`` on rows whose target token occurs ``r >= 2``
    times among the visible keys; ``repeat_excess[kind]``: max of ``alpha_{i,target} - 1/r`` on
    those rows (``<= 0`` is Prop. 5.2's bound for keys that depend on the token only);
    ``cosine[kind]``: mean ``a_{i,target} / (||q_i|| ||k_target|| / sqrt(d))``, the target
    activation as a fraction of its Cauchy-Schwarz bound (Tables 3-5);
    ``q_norms``, ``k_norms``: ``[L, H, d/2]`` mean chunk norms before rotation, fastest first.
    """

    score: dict[str, np.ndarray]
    epsilon: dict[str, np.ndarray]
    repeated: dict[str, np.ndarray]
    repeat_excess: dict[str, np.ndarray]
    cosine: dict[str, np.ndarray]
    q_norms: np.ndarray
    k_norms: np.ndarray
    n_windows: int
    seq_len: int

    @property
    def shape(self) -> tuple[int, int]:
        return self.score["diagonal"].shape

    def heads(self, kind: str, threshold: float) -> list[tuple[int, int]]:
        """``(layer, head)`` of every head whose mean target attention is at least ``threshold``."""
        _check_kind(kind)
        layers, heads = np.nonzero(self.score[kind] >= threshold)
        return [(int(a), int(b)) for a, b in zip(layers, heads, strict=True)]


def scan_model(params, config, windows, *, batch_size: int = 4) -> HeadScan:
    """Measure every head of a :mod:`ropebook.model` model on ``windows [B, T]`` of tokens, batch
    by batch (:func:`scan_internals`)."""
    from ropebook import model

    return scan_internals(model.internal_batches(params, config, windows, batch_size=batch_size))


def scan_checkpoint(checkpoint, windows, *, batch_size: int = 4) -> HeadScan:
    """:func:`scan_model` for a transformers RoPE model (from :func:`ropebook.capture.load`), read
    through :func:`ropebook.capture.per_head_batches` (KV heads repeated to the query heads that
    read them, chunks paired as its rotary module pairs them)."""
    from ropebook import capture

    return scan_internals(capture.per_head_batches(checkpoint, windows, batch_size=batch_size))


def scan_internals(batches) -> HeadScan:
    """Every head's statistics from ``(tokens [B, T], internals, pairing)`` batches, where
    ``internals`` is one dict per layer with ``q``, ``k`` (before rotation), ``q_rot``, ``k_rot``
    ``[B, T, H, D]`` and ``probs [B, H, T, T]``.

    Keeps only running sums, so memory stays at one layer's ``[batch, H, T, T]`` attention
    whatever the model size (hence one loop that updates every statistic in place rather than one
    pass per statistic).
    """
    acc = q_sum = k_sum = None
    n_windows = t = 0
    for tokens, internals, pairing in batches:
        tokens = np.asarray(tokens)
        if acc is None:
            t = tokens.shape[-1]
            n_heads, head_dim = np.shape(internals[0]["q"])[2:]
            shape = (len(internals), n_heads)
            # Running sums per kind: target weight, its minimum, weight and count on repeated
            # rows, the largest excess over 1/r, and the target cosine (activation / CS bound).
            acc = {
                kind: {
                    "w": np.zeros(shape),
                    "min": np.ones(shape),
                    "rep_w": np.zeros(shape),
                    "rep_n": np.zeros(shape),
                    "excess": np.full(shape, -np.inf),
                    "cos": np.zeros(shape),
                }
                for kind in KINDS
            }
            q_sum = np.zeros((*shape, head_dim // 2))
            k_sum = np.zeros_like(q_sum)
            rows = np.arange(1, t)
        n_windows += len(tokens)
        counts = {kind: repeat_counts(tokens, kind)[:, None, :] for kind in KINDS}  # [B, 1, T-1]
        for layer, info in enumerate(internals):
            q_sum[layer] += chunk_norms(info["q"], pairing).sum(axis=(0, 1))
            k_sum[layer] += chunk_norms(info["k"], pairing).sum(axis=(0, 1))
            probs = np.asarray(info["probs"])  # [B, H, T, T]
            q_rot = np.asarray(info["q_rot"], np.float64)  # [B, T, H, D]
            k_rot = np.asarray(info["k_rot"], np.float64)
            for kind in KINDS:
                a = acc[kind]
                w = target_weights(probs, kind)  # [B, H, T-1]
                r = counts[kind]
                repeated = r >= 2
                a["w"][layer] += w.sum(axis=(0, 2))
                a["min"][layer] = np.minimum(a["min"][layer], w.min(axis=(0, 2)))
                a["rep_w"][layer] += np.where(repeated, w, 0.0).sum(axis=(0, 2))
                a["rep_n"][layer] += np.broadcast_to(repeated, w.shape).sum(axis=(0, 2))
                excess = np.where(repeated, w - 1.0 / r, -np.inf).max(axis=(0, 2))
                a["excess"][layer] = np.maximum(a["excess"][layer], excess)
                qs, ks = q_rot[:, rows], k_rot[:, rows - OFFSET[kind]]  # [B, T-1, H, D]
                norms = np.linalg.norm(qs, axis=-1) * np.linalg.norm(ks, axis=-1)
                a["cos"][layer] += ((qs * ks).sum(-1) / np.maximum(norms, 1e-12)).sum(axis=(0, 1))
    if acc is None:
        raise ValueError("no windows to scan")
    n_rows = n_windows * (t - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return HeadScan(
            score={k: acc[k]["w"] / n_rows for k in KINDS},
            epsilon={k: 1.0 - acc[k]["min"] for k in KINDS},
            repeated={k: acc[k]["rep_w"] / acc[k]["rep_n"] for k in KINDS},
            repeat_excess={k: acc[k]["excess"] for k in KINDS},
            cosine={k: acc[k]["cos"] / n_rows for k in KINDS},
            q_norms=q_sum / (n_windows * t),
            k_norms=k_sum / (n_windows * t),
            n_windows=n_windows,
            seq_len=t,
        )


def fast_share(q_norms, k_norms, fraction: float = 0.25) -> np.ndarray:
    """Share of ``sum_k ||q^(k)|| ||k^(k)||`` (the Cauchy-Schwarz budget of each chunk) in the
    fastest ``fraction`` of chunks: ``[..., K] -> [...]``. Uniform use gives ``fraction``."""
    budget = np.asarray(q_norms) * np.asarray(k_norms)
    n_fast = max(1, int(round(fraction * budget.shape[-1])))
    return budget[..., :n_fast].sum(-1) / budget.sum(-1)


@dataclass(frozen=True)
class TargetActivations:
    """Tables 3-5 for the first queries ``i`` of one window (``[n]`` each, ``nan`` where token 0
    has no previous token): the Cauchy-Schwarz bound ``||q_i|| ||k_i|| / sqrt(d)``, the diagonal
    activation ``a_{i,i}``, the previous-token activation ``a_{i,i-1}`` and its own bound
    ``||q_i|| ||k_{i-1}|| / sqrt(d)``."""

    bound_diagonal: np.ndarray
    diagonal: np.ndarray
    previous: np.ndarray
    bound_previous: np.ndarray


def target_activations(
    layer_internals: dict, head: int, n_tokens: int = 8, batch: int = 0
) -> TargetActivations:
    """:class:`TargetActivations` of one head for the first ``n_tokens`` queries of window
    ``batch``. Activations are the model's pre-softmax scores (scaled by ``1/sqrt(d)``, any bias
    included)."""
    q = np.asarray(layer_internals["q_rot"][batch, :, head], np.float64)  # [T, D]
    k = np.asarray(layer_internals["k_rot"][batch, :, head], np.float64)
    scores = np.asarray(layer_internals["scores"][batch, head], np.float64)
    scale = q.shape[-1] ** -0.5
    qn, kn = np.linalg.norm(q, axis=-1), np.linalg.norm(k, axis=-1)
    i = np.arange(min(n_tokens, q.shape[0]))
    previous = i >= 1
    return TargetActivations(
        bound_diagonal=qn[i] * kn[i] * scale,
        diagonal=scores[i, i],
        previous=np.where(previous, scores[i, i - 1], np.nan),
        bound_previous=np.where(previous, qn[i] * kn[i - 1] * scale, np.nan),
    )


# ---------------------------------------------------------------- the chapter's readings

ENCODINGS: tuple[str, ...] = ("nope", "rope")


def fit_isolated_heads(n_seeds: int, **kwargs) -> dict[tuple[str, str, int], IsolatedFit]:
    """:func:`fit_isolated_head` for every encoding (NoPE, RoPE), kind and seed ``0 .. n_seeds-1``,
    all with the same settings ``kwargs``: ``{(encoding, kind, seed): fit}``."""
    return {
        (encoding, kind, seed): fit_isolated_head(kind, encoding, seed=seed, **kwargs)
        for encoding in ENCODINGS
        for kind in KINDS
        for seed in range(n_seeds)
    }


@dataclass
class IsolatedSummary:
    """What the isolated heads say about Prop. 5.2 (NoPE) and Thm. 5.3 (RoPE)."""

    nope_fits: int  # NoPE heads trained (seeds x kinds)
    nope_bos_x_x: float  # the largest NoPE target weight on [bos, x, x]
    nope_excess: float  # the largest NoPE alpha - 1/r on repeated rows
    # RoPE target weight on [bos, x, x]: per seed the weaker kind's (the claim is that RoPE
    # learns both kinds), interval over seeds
    rope_bos_x_x: Estimate

    @property
    def nope_bound_held(self) -> bool:
        """Prop. 5.2 held by every NoPE fit: ``alpha <= 1/2`` on ``[bos, x, x]``, ``<= 1/r``
        (to float64 rounding) on every repeated row."""
        return self.nope_bos_x_x <= 0.5 and self.nope_excess <= 1e-12


def isolated_summary(fits: dict) -> IsolatedSummary:
    """Prop. 5.2's bound over every NoPE fit (a bound holds fit by fit), and the RoPE target
    weight on ``[bos, x, x]`` with the seed as the unit: each seed's weaker kind, then an
    interval over seeds (fits of one seed share its initial key)."""
    nope = [f for (encoding, _, _), f in fits.items() if encoding == "nope"]
    rope_by_seed: dict[int, list[float]] = {}
    for (encoding, _, seed), fit in fits.items():
        if encoding == "rope":
            rope_by_seed.setdefault(seed, []).append(fit.bos_x_x)
    weaker = [min(values) for values in rope_by_seed.values()]
    return IsolatedSummary(
        nope_fits=len(nope),
        nope_bos_x_x=max(f.bos_x_x for f in nope),
        nope_excess=max(f.repeat_excess for f in nope),
        rope_bos_x_x=interval_text(weaker, 3, "seeds (weaker kind per seed)"),
    )


@dataclass
class ThresholdStudy:
    """How large ``||psi||^2`` must be: exact ``eps`` curves, the closed form, and a check."""

    epsilon: float
    sizes: list[int]
    curves: list[dict]  # exact eps of the diagonal construction against ||psi||^2
    stars: list[dict]  # the closed-form s* at epsilon (diagonal)
    rows: list[dict]  # one per placement, size and kind
    within: list[bool]  # the construction at s*, rotated by apply_rope, is within epsilon

    @property
    def ok(self) -> bool:
        return all(self.within)


def threshold_study(
    epsilon: float,
    sizes,
    placements: dict,
    frequencies,
    norm_grid,
    *,
    base: float = 10_000.0,
) -> ThresholdStudy:
    """For each placement of ``||psi||^2`` over the planes (name -> weights) and size ``N``: the
    exact ``eps`` of the diagonal construction over ``norm_grid``, and for both kinds the margin,
    the closed-form :func:`threshold_norm`, the bisected :func:`exact_threshold_norm` and the
    ``eps`` that the models' float32 ``apply_rope`` reaches at the closed form."""
    head_dim = 2 * len(frequencies)
    curves, stars, rows, within = [], [], [], []
    for place, weights in placements.items():
        weights = np.asarray(weights, dtype=np.float64)
        for n in sizes:
            curve = construction_epsilon(norm_grid, n, "diagonal", frequencies, weights)
            curves += [
                {"‖ψ‖²": float(s), "ε": float(max(e, 1e-12)), "N": n, "ψ on": place}
                for s, e in zip(norm_grid, curve, strict=True)
            ]
            for kind in KINDS:
                s_star = threshold_norm(epsilon, n, kind, frequencies, weights)
                psi = plane_vector(head_dim, weights / weights.sum() * s_star)
                attention = construction_attention(kind, psi, n, base=base)
                reached = epsilon_achieved(attention, kind)
                within.append(bool(reached < epsilon * 1.001))
                rows.append(
                    {
                        "ψ on": place,
                        "head": kind,
                        "N": n,
                        "δ": margin(kind, n, frequencies, weights),
                        "s*": s_star,
                        "exact": exact_threshold_norm(epsilon, n, kind, frequencies, weights),
                        "ε at s*": reached,
                        f"< {epsilon}": within[-1],
                    }
                )
                if kind == "diagonal":
                    stars.append({"‖ψ‖²": s_star, "ε": epsilon, "N": n, "ψ on": place})
    return ThresholdStudy(epsilon, list(sizes), curves, stars, rows, within)


# ---------------------------------------------------------------- reading the scans


def by_model(scans: dict, name: str) -> dict[int, HeadScan]:
    """``{seed: scan}`` of one model name from ``{(name, seed): scan}``."""
    return {seed: scan for (n, seed), scan in scans.items() if n == name}


def count_heads(scans: dict, threshold: float) -> dict[tuple[str, str], list[int]]:
    """``{(model, kind): [count per seed]}`` of positional heads, kinds and ``"either"``."""
    counts = {}
    for name in dict.fromkeys(name for name, _ in scans):
        by_seed = by_model(scans, name)
        for kind in KINDS:
            counts[name, kind] = [len(scan.heads(kind, threshold)) for scan in by_seed.values()]
        counts[name, "either"] = [
            d + p for d, p in zip(counts[name, "diagonal"], counts[name, "previous"], strict=True)
        ]
    return counts


def strongest_score(scan: HeadScan) -> float:
    """How positional a model's most positional head is: the highest mean attention on its
    target (diagonal or previous token) of any head. Unlike a count of heads past a threshold,
    it still compares two models when neither has a head past it."""
    return float(max(scan.score[kind].max() for kind in KINDS))


def strongest(scan: HeadScan, kind: str) -> tuple[int, int]:
    """``(layer, head)`` with the highest mean attention on the ``kind`` target."""
    score = scan.score[kind]
    layer, head = np.unravel_index(np.argmax(score), score.shape)
    return int(layer), int(head)


@dataclass(frozen=True)
class FastShare:
    """One RoPE positional head's :func:`fast_share` (``share``) against the mean over the other
    heads of its layer (``rest``)."""

    seed: int
    kind: str
    layer: int
    head: int
    share: float
    rest: float

    @property
    def gap(self) -> float:
        return self.share - self.rest


def positional_fast_shares(scans: dict, threshold: float, fraction: float) -> list[FastShare]:
    """:class:`FastShare` of every positional head of the ``"rope"`` model, seed by seed."""
    found = []
    for seed, scan in by_model(scans, "rope").items():
        share = fast_share(scan.q_norms, scan.k_norms, fraction)  # [L, H]
        for kind in KINDS:
            for layer, head in scan.heads(kind, threshold):
                others = np.delete(share[layer], head)
                found.append(
                    FastShare(
                        seed, kind, layer, head, float(share[layer, head]), float(others.mean())
                    )
                )
    return found


def target_cosines(scans: dict, threshold: float) -> dict[str, tuple[list, list]]:
    """``{kind: (positional, rest)}``: the mean target cosine (activation / Cauchy-Schwarz bound)
    of every RoPE positional head of that kind, and of every other head of the same models."""
    cosines = {}
    for kind in KINDS:
        pos, rest = [], []
        for scan in by_model(scans, "rope").values():
            chosen = set(scan.heads(kind, threshold))
            for layer in range(scan.shape[0]):
                for head in range(scan.shape[1]):
                    value = float(scan.cosine[kind][layer, head])
                    (pos if (layer, head) in chosen else rest).append(value)
        cosines[kind] = (pos, rest)
    return cosines


def seed_cosines(scans: dict, threshold: float) -> dict[int, float]:
    """``{seed: mean target cosine}`` of the RoPE model's positional heads (each at its own
    kind's target), averaged within the seed: the per-seed statistic whose interval over seeds
    decides the Cauchy-Schwarz claim. Seeds with no positional head are absent."""
    return seed_means(
        (seed, scan.cosine[kind][layer, head])
        for seed, scan in by_model(scans, "rope").items()
        for kind in KINDS
        for layer, head in scan.heads(kind, threshold)
    )


def control_cosines(scans: dict, threshold: float, name: str = "rope") -> list[tuple[int, float]]:
    """``(seed, cosine)`` of every head of model ``name`` that is positional of neither kind, its
    target cosine averaged over both targets (diagonal and previous token): the Cauchy-Schwarz
    rule's control. The same measure at the same offsets on heads that do not attend there must
    stay below the line, or the line does not tell positional heads from the rest
    (:func:`~ropebook.analysis.heads.verdicts.controlled`)."""
    pairs = []
    for seed, scan in by_model(scans, name).items():
        chosen = {h for kind in KINDS for h in scan.heads(kind, threshold)}
        for layer in range(scan.shape[0]):
            for head in range(scan.shape[1]):
                if (layer, head) not in chosen:
                    pairs.append(
                        (seed, float(np.mean([scan.cosine[k][layer, head] for k in KINDS])))
                    )
    return pairs


def seed_fast_gaps(shares: list[FastShare]) -> dict[int, float]:
    """``{seed: mean fast-share gap}`` of :func:`positional_fast_shares`, heads averaged within
    their seed. Seeds with no positional head are absent."""
    return seed_means((s.seed, s.gap) for s in shares)


def strongest_gaps(scans: dict, a: str = "rope", b: str = "nope") -> dict[int, float]:
    """``{seed: strongest_score(a) - strongest_score(b)}`` over the seeds both models have:
    the paired per-seed difference the RoPE/NoPE claim is decided on."""
    first, second = by_model(scans, a), by_model(scans, b)
    return {
        seed: strongest_score(first[seed]) - strongest_score(second[seed])
        for seed in first
        if seed in second
    }


def layer0_excess(scans: dict, name: str) -> float:
    """The largest ``alpha - 1/r`` in layer 0 of model ``name``, over heads, kinds and seeds."""
    return max(
        float(max(scan.repeat_excess[kind][0].max() for kind in KINDS))
        for scan in by_model(scans, name).values()
    )


def deep_positional_heads(scans: dict, name: str, threshold: float) -> int:
    """How many positional heads model ``name`` has outside layer 0 (summed over seeds)."""
    return sum(
        len([h for h in scan.heads(kind, threshold) if h[0] > 0])
        for scan in by_model(scans, name).values()
        for kind in KINDS
    )
