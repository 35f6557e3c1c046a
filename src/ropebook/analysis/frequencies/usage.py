"""Which RoPE frequencies does a model use? Mean chunk norms of queries, keys and values.

By Cauchy–Schwarz, chunk ``k`` can move the score ``<q_i, R^{j-i} k_j>`` by at most
``‖q_i^(k)‖ ‖k_j^(k)‖``, so the mean 2-norm of each 2-D chunk measures how much a model *can* use
that frequency (Barbero et al. 2025, Sec. 4). This module measures it per layer and head:

- :func:`chunk_usage` — ``[B, T, H, D]`` activations → ``[H, D/2]`` mean chunk norms;
- :func:`measure` — run a model on several texts (one at a time, so no padding) and average the
  per-text means: every text weighs the same whatever its length. Adapters :func:`zoo_runner`
  (the book's models) and :func:`hf_runner` (:mod:`ropebook.hf` checkpoints) supply the runs;
- summaries of a ``[..., K]`` profile: :func:`band_share` (share of norm in the slowest or fastest
  fraction of chunks), :func:`frequency_trend` (rank correlation of norm with chunk index),
  :func:`map_similarity` (between two layer × frequency maps);
- attention on fixed offsets (:func:`offset_attention`, :func:`positional_attention`), and the
  loader check of :mod:`ropebook.hf` against transformers (:func:`hf_loader_check`).

Chunks follow the model's pairing (``half``: dims ``(k, k+d/2)``; ``interleaved``: ``(2k,
2k+1)``) and are ordered fastest first, as :func:`ropebook.analysis.chunk_norms` orders them.
Queries and keys are read *before* rotation: RoPE rotates each chunk rigidly, so the norms are the
same after it (:func:`rotation_invariance_error` checks that on real activations). Values are
never rotated; cutting them into the same chunks is the control that shows what "no frequency
structure" looks like. Keys and values keep their own head count under grouped-query attention.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ropebook.analysis import chunk_norms

KINDS: tuple[str, ...] = ("q", "k", "v")


KIND_NAMES = {"q": "queries", "k": "keys", "v": "values"}


Internals = list[dict[str, object]]


def chunk_usage(x, pairing: str = "half", pairs: np.ndarray | None = None) -> np.ndarray:
    """Mean 2-norm of every chunk of ``x [B, T, H, D]`` over batch and tokens: ``[H, D/2]``.

    ``pairs [D/2, 2]``, when given, names each chunk's two dims explicitly (a checkpoint's own
    grid, e.g. :attr:`ropebook.capture.RotaryGrid.pairs` for partial rotary) instead of
    ``pairing``."""
    x = np.asarray(x)
    if x.ndim != 4:
        raise ValueError(f"expected activations [batch, seq, heads, head_dim], got {x.shape}")
    if pairs is not None:
        return pair_norms(x, pairs).mean(axis=(0, 1))
    return chunk_norms(x, pairing).mean(axis=(0, 1))


def pair_norms(x, pairs: np.ndarray) -> np.ndarray:
    """2-norm of the dims ``pairs [K, 2]`` of ``x [..., D]``: ``[..., K]`` (float64)."""
    x = np.asarray(x, dtype=np.float64)
    pairs = np.asarray(pairs)
    return np.hypot(x[..., pairs[:, 0]], x[..., pairs[:, 1]])


def isotropic_factor(dim: int) -> float:
    """``E‖u^(k)‖`` for ``u`` uniform on the unit sphere of ``R^dim`` and any 2-D chunk ``k``:
    ``Γ(3/2) Γ(dim/2) / Γ((dim+1)/2)`` (the chunk's squared norm is Beta(1, dim/2 − 1))."""
    from scipy.special import gammaln

    if dim < 2:
        raise ValueError(f"dim must be >= 2, got {dim}")
    return float(np.exp(gammaln(1.5) + gammaln(dim / 2) - gammaln((dim + 1) / 2)))


def isotropic_baseline(x) -> np.ndarray:
    """The mean chunk norm ``x [B, T, H, D]`` would have, per head, if every vector kept its length
    but pointed in a uniformly random direction: ``mean ‖x‖ · isotropic_factor(D)``, ``[H]``, the
    same for every chunk. A chunk above it carries more than its share of the head's norm."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 4:
        raise ValueError(f"expected activations [batch, seq, heads, head_dim], got {x.shape}")
    return np.linalg.norm(x, axis=-1).mean(axis=(0, 1)) * isotropic_factor(x.shape[-1])


@dataclass(frozen=True)
class FrequencyUsage:
    """Mean chunk norms of one model on a set of texts.

    ``q [L, H, K]``, ``k`` and ``v [L, H_kv, K]`` with ``K = head_dim / 2`` chunks ordered
    fastest first; ``frequencies [K]`` their angular frequencies ``g_k`` (rad/token; 0 = chunk
    not rotated).
    """

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    frequencies: np.ndarray
    pairing: str
    n_texts: int
    n_tokens: int

    def heads(self, kind: str) -> np.ndarray:
        """``[L, H, K]`` per-head usage of ``kind`` ∈ {"q", "k", "v"}."""
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}; valid kinds: {', '.join(KINDS)}")
        return getattr(self, kind)

    def layers(self, kind: str) -> np.ndarray:
        """``[L, K]`` usage averaged over the heads of each layer (the paper's Fig. 3)."""
        return self.heads(kind).mean(axis=1)

    @property
    def wavelengths(self) -> np.ndarray:
        """``2π / g_k`` in tokens (``inf`` for chunks that do not rotate)."""
        with np.errstate(divide="ignore"):
            return np.where(self.frequencies > 0, 2 * np.pi / self.frequencies, np.inf)

    @property
    def n_chunks(self) -> int:
        return self.q.shape[-1]


Runner = Callable[[np.ndarray], Internals]


def measure(
    run: Runner,
    texts: Sequence[np.ndarray],
    *,
    frequencies: np.ndarray,
    pairing: str = "half",
    skip_first: int = 0,
    pairs: np.ndarray | None = None,
) -> FrequencyUsage:
    """Frequency usage of a model over ``texts`` (token id arrays), each run on its own.

    ``run(tokens [1, T]) -> internals`` returns one dict per layer with ``q``, ``k`` (before
    rotation) and ``v``. Per text, norms are averaged over tokens ``skip_first:`` (e.g. 1 to leave
    out BOS) and over the batch axis; the result averages texts with equal weight. ``pairs``
    (see :func:`chunk_usage`) overrides ``pairing`` with explicit chunk dims.
    """
    if not len(texts):
        raise ValueError("measure needs at least one text")
    per_text = {kind: [] for kind in KINDS}
    n_tokens = 0
    for ids in texts:
        ids = np.asarray(ids)
        if ids.ndim != 1 or ids.size <= skip_first:
            raise ValueError(f"each text must be a 1-D id array longer than {skip_first} tokens")
        internals = run(ids[None])
        n_tokens += ids.size - skip_first
        for kind in KINDS:
            per_text[kind].append(
                np.stack(
                    [
                        chunk_usage(np.asarray(layer[kind])[:, skip_first:], pairing, pairs)
                        for layer in internals
                    ]
                )
            )
    means = {kind: np.mean(per_text[kind], axis=0) for kind in KINDS}
    return FrequencyUsage(
        **means,
        frequencies=np.asarray(frequencies, dtype=np.float64),
        pairing=pairing,
        n_texts=len(texts),
        n_tokens=n_tokens,
    )


def zoo_runner(params, config) -> Runner:
    """``run`` for :func:`measure` on a book model (``ropebook.model``)."""
    from ropebook import model

    def run(tokens: np.ndarray) -> Internals:
        return model.forward(params, tokens, config, return_internals=True)[1]

    return run


def zoo_frequencies(config) -> np.ndarray:
    """The chunk frequencies of a book model (zeros for encodings that do not rotate)."""
    from ropebook import rope

    enc = config.encoding_config
    if not enc.rotates:
        return np.zeros(config.head_dim // 2)
    return rope.frequencies(
        config.head_dim, enc.base, variant=enc.rope_variant, proportion=enc.proportion
    )


def measure_zoo(trained, texts: Sequence[np.ndarray], *, skip_first: int = 0) -> FrequencyUsage:
    """:func:`measure` for a ``zoo.TrainedModel`` (or anything with ``.params`` and ``.config``)."""
    config = trained.config
    return measure(
        zoo_runner(trained.params, config),
        texts,
        frequencies=zoo_frequencies(config),
        pairing=config.pairing,
        skip_first=skip_first,
    )


def hf_runner(checkpoint) -> Runner:
    """``run`` for :func:`measure` on a :class:`ropebook.hf.HFModel`."""
    from ropebook import hf

    def run(tokens: np.ndarray) -> Internals:
        return hf.forward(checkpoint, tokens, return_internals=True)[1]

    return run


def measure_hf(checkpoint, texts: Sequence[np.ndarray], *, skip_first: int = 0) -> FrequencyUsage:
    """:func:`measure` for a Hugging Face checkpoint loaded with :func:`ropebook.hf.load`."""
    return measure(
        hf_runner(checkpoint),
        texts,
        frequencies=checkpoint.config.frequencies(),
        pairing=checkpoint.config.pairing,
        skip_first=skip_first,
    )


def rotation_invariance_error(internals: Internals, pairing: str = "half") -> float:
    """Largest ``|‖q^(k)‖ - ‖(R q)^(k)‖| / max ‖q^(k)‖`` over layers, chunks, q and k.

    Zero up to float rounding for RoPE with a full-head grid (``rope``, ``p-rope``,
    ``reversed``); *partial* RoPE pairs dimensions within its rotated sub-head instead.
    """
    worst = 0.0
    for layer in internals:
        for pre, post in (("q", "q_rot"), ("k", "k_rot")):
            before = chunk_norms(np.asarray(layer[pre]), pairing)
            after = chunk_norms(np.asarray(layer[post]), pairing)
            worst = max(worst, float(np.abs(before - after).max() / before.max()))
    return worst


def zoo_invariance_error(trained, ids: np.ndarray) -> float:
    """:func:`rotation_invariance_error` of a book model's activations on one prompt ``ids``."""
    from ropebook import model

    tokens = np.asarray(ids)[None]
    _, internals = model.forward(trained.params, tokens, trained.config, return_internals=True)
    return rotation_invariance_error(internals, trained.config.pairing)


# ---------------------------------------------------------------------------------------------
# summaries of a profile [..., K] (K chunks, fastest first)


def band_size(n_chunks: int, fraction: float) -> int:
    """How many chunks form the slowest (or fastest) ``fraction`` of a head: at least one."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must lie in (0, 1], got {fraction}")
    return max(1, int(round(fraction * n_chunks)))


def band_share(profile: np.ndarray, fraction: float = 0.25, band: str = "low") -> np.ndarray:
    """Share of the summed chunk norm that sits in the slowest (``band="low"``) or fastest
    (``"high"``) ``fraction`` of chunks, along the last axis. A flat profile gives
    ``band_size / K`` (0.25 for a quarter of a head whose K is divisible by 4)."""
    profile = np.asarray(profile, dtype=np.float64)
    n = band_size(profile.shape[-1], fraction)
    if band == "low":
        part = profile[..., -n:]
    elif band == "high":
        part = profile[..., :n]
    else:
        raise ValueError(f"band must be 'low' or 'high', got {band!r}")
    return part.sum(axis=-1) / profile.sum(axis=-1)


def frequency_trend(profile: np.ndarray) -> np.ndarray:
    """Spearman rank correlation between chunk index (0 = fastest) and mean norm, per row.

    +1: norm grows steadily towards the slow chunks; 0: no monotone relation with frequency;
    −1: the fast chunks carry the most norm.
    """
    from scipy import stats

    profile = np.asarray(profile, dtype=np.float64)
    index = np.arange(profile.shape[-1], dtype=np.float64)
    ranks = stats.rankdata(profile, axis=-1)
    a = ranks - ranks.mean(axis=-1, keepdims=True)
    b = index - index.mean()
    denominator = np.sqrt((a * a).sum(axis=-1) * (b * b).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, (a * b).sum(axis=-1) / denominator, 0.0)


def map_similarity(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """How alike two layer × frequency maps ``[L, K]`` are.

    ``cosine``: cosine of the raw flattened maps (near 1 for any two positive maps of similar
    scale, so a weak test); ``profile correlation``: Pearson correlation of the flattened maps
    after each layer's row is turned into shares (sum 1), i.e. of *where in frequency* each layer
    puts its norm, the stricter number.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"maps differ in shape: {a.shape} vs {b.shape}")
    cosine = float((a * b).sum() / np.sqrt((a * a).sum() * (b * b).sum()))
    sa = (a / a.sum(axis=-1, keepdims=True)).ravel()
    sb = (b / b.sum(axis=-1, keepdims=True)).ravel()
    correlation = float(np.corrcoef(sa, sb)[0, 1])
    return {"cosine": cosine, "profile correlation": correlation}


# ---------------------------------------------------------------------------------------------
# attention on fixed offsets


def offset_attention(probs: np.ndarray, offset: int = 0) -> np.ndarray:
    """Mean attention weight on the key ``offset`` tokens back (0: the diagonal, 1: the previous
    token), over batch and the queries that have such a key: ``probs [B, H, T, T] -> [H]``.

    The first query is left out (it can only attend to itself, whatever the head does)."""
    probs = np.asarray(probs)
    t = probs.shape[-1]
    if not 0 <= offset < t - 1:
        raise ValueError(f"offset must lie in [0, {t - 2}], got {offset}")
    rows = np.arange(max(offset, 1), t)
    return probs[:, :, rows, rows - offset].mean(axis=(0, 2))


def positional_attention(trained, texts: Sequence[np.ndarray]) -> np.ndarray:
    """Mean attention on the token itself (offset 0) and on the previous token (offset 1) of
    every head of a book model, averaged over ``texts`` (each run alone): ``[layers, 2, heads]``.
    """
    from ropebook import model

    per_text = []
    for ids in texts:
        _, layers = model.forward(
            trained.params, np.asarray(ids)[None], trained.config, return_internals=True
        )
        per_text.append(
            [[offset_attention(np.asarray(layer["probs"]), o) for o in (0, 1)] for layer in layers]
        )
    return np.mean(per_text, axis=0)


def attention_pattern(trained, ids: np.ndarray, layer: int, head: int) -> np.ndarray:
    """Attention weights ``[T, T]`` of one head of a book model on one prompt."""
    from ropebook import model

    _, layers = model.forward(
        trained.params, np.asarray(ids)[None], trained.config, return_internals=True
    )
    return np.asarray(layers[layer]["probs"][0, head])


def last_layer_self_attention(checkpoint, texts: Sequence[np.ndarray]) -> np.ndarray:
    """Mean attention of every query head of a checkpoint's last layer on the token itself,
    averaged over ``texts`` (each run alone): ``[heads]``."""
    from ropebook import hf

    per_text = []
    for ids in texts:
        _, layers = hf.forward(
            checkpoint, np.asarray(ids)[None], return_internals=True, return_probs=True
        )
        per_text.append(offset_attention(np.asarray(layers[-1]["probs"]), 0))
    return np.mean(per_text, axis=0)


# ---------------------------------------------------------------------------------------------
# real checkpoints (ropebook.hf)


def hf_loader_check(seed: int = 0) -> dict[str, dict]:
    """:func:`ropebook.hf.compare_with_transformers` on a tiny random checkpoint of each family
    (built by transformers in a temporary folder), on random tokens ``[2, 24]``; per family
    its ``head_dim``, ``heads / KV heads`` and the largest ``|Δ|`` of every compared output."""
    import tempfile
    from pathlib import Path

    from ropebook import hf

    found = {}
    with tempfile.TemporaryDirectory() as folder:
        for family in hf.FAMILIES:
            path = hf.tiny_random_checkpoint(Path(folder) / family, family, seed=seed)
            tokens = np.random.default_rng(seed).integers(0, 97, size=(2, 24))
            gaps = hf.compare_with_transformers(path, tokens)
            tiny = hf.read_config(path)
            found[family] = {
                "head_dim": tiny.head_dim,
                "heads / KV heads": f"{tiny.n_heads}/{tiny.n_kv_heads}",
                **{f"max |Δ| {key}": value for key, value in gaps.items()},
            }
    return found


def loader_gap(found: dict[str, dict]) -> float:
    """The largest ``|Δ|`` over families and compared outputs."""
    return max(v for row in found.values() for k, v in row.items() if k.startswith("max"))
