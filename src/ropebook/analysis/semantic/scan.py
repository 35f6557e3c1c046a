"""Semantic heads of trained models, measured: every head of a :mod:`ropebook.model` model on
BOS-led token windows (:func:`scan_semantic`), and on windows many times the training length
bucketed by query position (:func:`length_profile`).

A scan records, per head, the attention a query gives to the previous token when that token is an
apostrophe versus when it is not (a position-matched baseline: same offset, different identity),
the same lift for apostrophe keys at any distance, the share of the score variance that relative
distance explains, the attention on the first key (the BOS "sink") and, per frequency chunk, what
the first key gains in score over the others (App. E.1's analysis of Gemma's apostrophe head).
:mod:`ropebook.analysis.semantic.readings` turns scans into the chapter's heads and intervals.

Conventions: attention ``probs [B, H, T, T]`` (rows = queries, causal), activations
``[B, T, H, D]``, chunks fastest first (:func:`ropebook.analysis.chunk_norms`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ropebook import rope

# ---------------------------------------------------------------- token classes and per-head measures


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


# ---------------------------------------------------------------- one scan


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
    """Measure every head of a :mod:`ropebook.model` model on ``windows [W, T]`` (BOS first),
    batch by batch (:func:`scan_semantic_internals`)."""
    from ropebook import model

    batches = model.internal_batches(params, config, windows, batch_size=batch_size)
    return scan_semantic_internals(batches, windows, class_ids, max_distance=max_distance)


def previous_lift(params, config, windows, class_ids, *, batch_size: int = 2) -> np.ndarray:
    """``[L, H]``: :attr:`SemanticScan.prev_lift` of :func:`scan_semantic` alone (the same sums in
    the same order), for measures that need nothing else: one pass of the compiled model and
    :func:`previous_class_attention`, none of the scan's other statistics."""
    from ropebook import model

    windows = np.asarray(windows)
    class_mask = np.isin(windows, np.asarray(class_ids))
    on = off = None
    n_on = n_off = start = 0
    for tokens, internals, _ in model.internal_batches(
        params, config, windows, batch_size=batch_size
    ):
        if on is None:
            on, off = np.zeros((2, len(internals), np.shape(internals[0]["q"])[2]))
        for layer, info in enumerate(internals):
            o, f, counts = previous_class_attention(
                info["probs"], class_mask[start : start + len(tokens)]
            )
            on[layer] += o
            off[layer] += f
            if layer == 0:
                n_on, n_off = n_on + counts[0], n_off + counts[1]
        start += len(tokens)
    return on / max(n_on, 1) - off / max(n_off, 1)


def scan_semantic_checkpoint(
    checkpoint, windows, class_ids, *, max_distance: int = 32, batch_size: int = 2
) -> SemanticScan:
    """:func:`scan_semantic` for a transformers RoPE model (from :func:`ropebook.capture.load`),
    read through :func:`ropebook.capture.per_head_batches`."""
    from ropebook import capture

    batches = capture.per_head_batches(checkpoint, windows, batch_size=batch_size)
    return scan_semantic_internals(batches, windows, class_ids, max_distance=max_distance)


def scan_semantic_internals(batches, windows, class_ids, *, max_distance: int = 32) -> SemanticScan:
    """Every head's statistics from ``(tokens, internals, pairing)`` batches of ``windows [W,
    T]`` in order, ``internals`` one dict per layer with ``q``, ``k``, ``q_rot``, ``k_rot``
    ``[B, T, H, D]``, ``scores`` and ``probs`` ``[B, H, T, T]``.

    Keeps running sums only, one layer's ``[batch, H, T, T]`` attention at a time, so windows
    longer than the training context (the extrapolation runs) fit in memory. (Longer than one
    screen because every statistic is accumulated in the same pass over batches and layers: a
    pass per statistic would run the model once per statistic.)
    """
    from ropebook.analysis import chunk_norms

    windows = np.asarray(windows)
    n_windows, t = windows.shape
    class_mask = np.isin(windows, np.asarray(class_ids))
    on = off = lift_sum = r2 = bos_mass = win_lift = None
    preference = q_norms = k_norms = bos_chunks = rest_chunks = None
    n_on = n_off = start = 0
    for tokens, internals, pairing in batches:
        if on is None:
            n_heads, head_dim = np.shape(internals[0]["q"])[2:]
            lh, k_chunks = (len(internals), n_heads), head_dim // 2
            on, off, lift_sum, r2 = np.zeros(lh), np.zeros(lh), np.zeros(lh), np.zeros(lh)
            bos_mass = np.zeros((n_windows, *lh))
            win_lift = np.full((n_windows, *lh), np.nan)
            preference, q_norms, k_norms = (np.zeros((n_windows, *lh, k_chunks)) for _ in range(3))
            bos_chunks, rest_chunks = np.zeros((*lh, k_chunks)), np.zeros((*lh, k_chunks))
        mask = class_mask[start : start + len(tokens)]
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
            bos, rest = sink_chunk_contributions(info["q_rot"], info["k_rot"], pairing)
            bos_chunks[layer] += bos.mean(1).sum(0)
            rest_chunks[layer] += rest.mean(1).sum(0)
            batch = slice(start, start + len(tokens))
            preference[batch, layer] = (bos - rest).mean(1)
            q_norms[batch, layer] = chunk_norms(info["q"], pairing).mean(1)
            k_norms[batch, layer] = chunk_norms(info["k"], pairing).mean(1)
        start += len(tokens)
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


def window_spans(
    lengths: Sequence[int], length: int, n_windows: int, rng: np.random.Generator
) -> list[tuple[int, int]]:
    """Where :func:`bos_windows` cuts its windows: ``(document, start)`` of ``n_windows`` runs of
    ``length - 1`` tokens, each from a random document long enough (``lengths``: every
    document's token count; ``document`` indexes them) at a random offset."""
    docs = [i for i, n in enumerate(lengths) if n >= length]
    if not docs:
        raise ValueError(f"no document has {length} tokens")
    spans = []
    for _ in range(n_windows):
        doc = docs[rng.integers(len(docs))]
        spans.append((doc, int(rng.integers(0, lengths[doc] - (length - 1) + 1))))
    return spans


def disjoint_spans(
    lengths: Sequence[int],
    length: int,
    n_windows: int,
    rng: np.random.Generator,
    used: Sequence[tuple[int, int]] = (),
) -> list[tuple[int, int]]:
    """``n_windows`` spans like :func:`window_spans`, but none shares a token with another or with
    a ``used`` span: the documents long enough are cut into consecutive runs of ``length - 1``
    tokens, those touching a used span are dropped, and ``n_windows`` of the rest are drawn
    without replacement (a ValueError where fewer are left)."""
    step = length - 1
    taken: dict[int, list[int]] = {}
    for doc, start in used:
        taken.setdefault(doc, []).append(start)
    free = [
        (doc, start)
        for doc, n in enumerate(lengths) if n >= length
        for start in range(0, n - step + 1, step)
        if all(abs(start - other) >= step for other in taken.get(doc, ()))
    ]  # fmt: skip
    if len(free) < n_windows:
        raise ValueError(
            f"only {len(free)} windows of {length} tokens are disjoint from the {len(used)} used "
            f"and from each other, fewer than the {n_windows} asked for"
        )
    return [free[i] for i in rng.choice(len(free), n_windows, replace=False)]


def windows_at(
    texts_tokens: list[np.ndarray], spans: Sequence[tuple[int, int]], length: int, bos: int = 0
) -> np.ndarray:
    """``[len(spans), length]`` int32 windows: ``bos`` then the ``length - 1`` tokens of each
    ``(document, start)`` span."""
    out = np.full((len(spans), length), bos, np.int32)
    for w, (doc, start) in enumerate(spans):
        out[w, 1:] = texts_tokens[doc][start : start + length - 1]
    return out


def bos_windows(
    texts_tokens: list[np.ndarray],
    length: int,
    n_windows: int,
    rng: np.random.Generator,
    bos: int = 0,
) -> np.ndarray:
    """``[n_windows, length]`` int32 windows: ``bos`` (the book's BOS id 0 by default) then
    ``length - 1`` consecutive tokens from a random document (uniform over documents long
    enough) at a random offset (:func:`window_spans`)."""
    spans = window_spans([len(d) for d in texts_tokens], length, n_windows, rng)
    return windows_at([np.asarray(d) for d in texts_tokens], spans, length, bos)


def scan_models(models: dict, windows, class_ids, *, max_distance: int = 32) -> dict:
    """:func:`scan_semantic` of every ``key -> trained model`` (anything with ``.params`` and
    ``.config``) on the same windows."""
    return {
        key: scan_semantic(m.params, m.config, windows, class_ids, max_distance=max_distance)
        for key, m in models.items()
    }


CHAPTER_STREAMS = (71, 72)  # the chapter's selection and measuring windows' generator streams


def checkpoint_inputs(folder) -> tuple[Any, list[np.ndarray], np.ndarray, int]:
    """What a scan of a real checkpoint reads: its model, the book's held-out Shakespeare in its
    own tokenizer (one token array per work), the apostrophe class from its own vocabulary and
    its BOS token id."""
    from transformers import AutoTokenizer

    from ropebook import capture, data

    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = capture.load(folder)
    texts = [text for _, text in data.load_texts("shakespeare", "test")]
    documents = [np.asarray(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
    class_ids = class_token_ids(tokenizer.decode, len(tokenizer))
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else 0
    return model, documents, class_ids, bos


def checkpoint_scans(
    folder, n_windows: int, length: int, seed: int, *, max_distance: int = 32
) -> tuple[dict[int, SemanticScan], dict[int, SemanticScan]]:
    """A real checkpoint's scans on the selection and the measuring half of ``n_windows``
    windows, as the chapter scans the book's models (``{0: scan}`` each): the book's held-out
    Shakespeare in the checkpoint's own tokenizer, each window led by its BOS token, the
    apostrophe class read from its own vocabulary (:func:`checkpoint_inputs`)."""
    model, documents, class_ids, bos = checkpoint_inputs(folder)
    halves = []
    for stream in CHAPTER_STREAMS:
        rng = np.random.default_rng([seed, stream])
        windows = bos_windows(documents, length, n_windows // 2, rng, bos=bos)
        scan = scan_semantic_checkpoint(model, windows, class_ids, max_distance=max_distance)
        halves.append({0: scan})
    return halves[0], halves[1]


def checkpoint_fresh_scan(
    folder, n_windows: int, length: int, seed: int, *, used_windows: int, stream: int,
    max_distance: int = 32,
) -> SemanticScan:  # fmt: skip
    """A real checkpoint's scan, as :func:`checkpoint_scans` makes it, on ``n_windows`` fresh
    windows (:func:`disjoint_spans`, drawn from generator ``stream`` of ``seed``): none shares a
    token with another nor with the ``used_windows`` windows :func:`checkpoint_scans` reads at
    this ``seed`` (both halves)."""
    model, documents, class_ids, bos = checkpoint_inputs(folder)
    lengths = [len(d) for d in documents]
    used = [
        span for chapter_stream in CHAPTER_STREAMS
        for span in window_spans(lengths, length, used_windows // 2,
                                 np.random.default_rng([seed, chapter_stream]))
    ]  # fmt: skip
    spans = disjoint_spans(lengths, length, n_windows, np.random.default_rng([seed, stream]), used)
    windows = windows_at(documents, spans, length, bos)
    return scan_semantic_checkpoint(model, windows, class_ids, max_distance=max_distance)


# ---------------------------------------------------------------- past the training length


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
    position; ``T`` may be many times the training context (one window at a time). Longer than
    one screen for the same reason as :func:`scan_semantic`: one pass accumulates everything."""
    import jax.numpy as jnp

    from ropebook import model

    windows = np.asarray(windows)
    n_windows, t = windows.shape
    n_layers, n_heads, k_chunks = config.n_layers, config.n_heads, config.head_dim // 2
    n_buckets = -(-t // bucket)
    class_mask = np.isin(windows, np.asarray(class_ids))
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
        for layer, info in enumerate(model.internals(params, jnp.asarray(tokens), config)):
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


# ---------------------------------------------------------------- one head on one window


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


@dataclass
class HeadMaps:
    """One head of a model on one window: attention ``probs [T, T]``, raw pre-softmax ``scores
    [T, T]`` (masked entries NaN), and the chunk norms of its queries and keys ``[K, T]`` (before
    rotation, fastest chunk first)."""

    probs: np.ndarray
    scores: np.ndarray
    q_norms: np.ndarray
    k_norms: np.ndarray


def head_maps(trained, window: ShownWindow, layer: int, head: int) -> HeadMaps:
    """Run ``trained`` (anything with ``.params`` and ``.config``) on ``window`` and read one
    head's maps (what Fig. 17 draws)."""
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
    return HeadMaps(probs, scores, q_norms, k_norms)
