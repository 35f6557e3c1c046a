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
  :func:`map_similarity` (between two layer × frequency maps).

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


def heatmap_records(
    usage: FrequencyUsage, kind: str, *, per_head: bool = False, layers: Sequence[int] | None = None
) -> list[dict]:
    """Rows for an Altair heatmap: layer, head (or "mean"), chunk index, g_k, wavelength, norm."""
    data = usage.heads(kind) if per_head else usage.layers(kind)[:, None, :]
    rows = []
    for layer in layers if layers is not None else range(data.shape[0]):
        for head in range(data.shape[1]):
            for chunk, value in enumerate(data[layer, head]):
                wavelength = usage.wavelengths[chunk]
                rows.append(
                    {
                        "kind": KIND_NAMES[kind],
                        "layer": int(layer),
                        "head": int(head) if per_head else "mean",
                        "frequency index": chunk,
                        "g_k (rad/token)": float(usage.frequencies[chunk]),
                        "wavelength (tokens)": float(wavelength)
                        if np.isfinite(wavelength)
                        else None,
                        "mean norm": float(value),
                    }
                )
    return rows


# ---------------------------------------------------------------------------------------------
# prompts: held-out passages, fixed texts and arithmetic (the chapter's domains)

# The opening of Dante's *Inferno* (Canto I, lines 1–39) and chapters 1–3 of the *Daodejing*,
# both public domain, typed in from memory of the standard texts (minor orthographic variants are
# possible). They are only prompts: what matters is that the model never saw these languages.
DANTE = """Nel mezzo del cammin di nostra vita
mi ritrovai per una selva oscura,
ché la diritta via era smarrita.
Ahi quanto a dir qual era è cosa dura
esta selva selvaggia e aspra e forte
che nel pensier rinova la paura!
Tant' è amara che poco è più morte;
ma per trattar del ben ch'i' vi trovai,
dirò de l'altre cose ch'i' v'ho scorte.
Io non so ben ridir com' i' v'intrai,
tant' era pien di sonno a quel punto
che la verace via abbandonai.
Ma poi ch'i' fui al piè d'un colle giunto,
là dove terminava quella valle
che m'avea di paura il cor compunto,
guardai in alto e vidi le sue spalle
vestite già de' raggi del pianeta
che mena dritto altrui per ogne calle.
Allor fu la paura un poco queta,
che nel lago del cor m'era durata
la notte ch'i' passai con tanta pieta.
E come quei che con lena affannata,
uscito fuor del pelago a la riva,
si volge a l'acqua perigliosa e guata,
così l'animo mio, ch'ancor fuggiva,
si volse a retro a rimirar lo passo
che non lasciò già mai persona viva.
Poi ch'èi posato un poco il corpo lasso,
ripresi via per la piaggia diserta,
sì che 'l piè fermo sempre era 'l più basso.
Ed ecco, quasi al cominciar de l'erta,
una lonza leggera e presta molto,
che di pel macolato era coverta;
e non mi si partia dinanzi al volto,
anzi 'mpediva tanto il mio cammino,
ch'i' fui per ritornar più volte vòlto.
Temp' era dal principio del mattino,
e 'l sol montava 'n sù con quelle stelle
ch'eran con lui quando l'amor divino
"""
DAODEJING = (
    "道可道，非常道。名可名，非常名。無名天地之始；有名萬物之母。故常無欲，以觀其妙；常有欲，"
    "以觀其徼。此兩者，同出而異名，同謂之玄。玄之又玄，衆妙之門。"
    "天下皆知美之為美，斯惡已。皆知善之為善，斯不善已。故有無相生，難易相成，長短相形，高下相傾，"
    "音聲相和，前後相隨。是以聖人處無為之事，行不言之教；萬物作焉而不辭，生而不有，為而不恃，"
    "功成而弗居。夫唯弗居，是以不去。"
    "不尚賢，使民不爭；不貴難得之貨，使民不為盜；不見可欲，使民心不亂。是以聖人之治，虛其心，"
    "實其腹，弱其志，強其骨。常使民無知無欲。使夫智者不敢為也。為無為，則無不治。"
)
CHINESE = "Chinese (Daodejing)"


def pick_documents(n_docs: int, n: int) -> list[tuple[int, int, int]]:
    """``n`` picks evenly spaced over ``n_docs`` sorted documents: ``(document, repeat, count)``.

    With fewer documents than picks a document is picked ``count`` times; its ``repeat``-th pick
    (0-based) starts at the ``(repeat + 1) / (count + 1)`` point of the text.
    """
    picks = [(i * n_docs) // n for i in range(n)]
    return [(d, picks[:i].count(d), picks.count(d)) for i, d in enumerate(picks)]


def passages(domain: str, n: int, length: int) -> list[tuple[str, np.ndarray]]:
    """``n`` passages of ``length`` tokens (BOS first) from documents spread over the test split.

    Documents are sorted by name and picked evenly spaced (:func:`pick_documents`); a passage
    starts at the first line break after the document's midpoint (or after its ``r/(c+1)``
    point when one document gives several passages).
    """
    from ropebook import data

    docs = sorted(data.load_texts(domain, "test"))
    chosen = []
    for index, repeat, count in pick_documents(len(docs), n):
        name, text = docs[index]
        start = text.find("\n", len(text) * (repeat + 1) // (count + 1))
        start = 0 if start < 0 else start + 1
        ids = np.asarray(data.encode(text[start : start + 12 * length], bos=True))[:length]
        chosen.append((name, ids))
    return chosen


def windows(text: str, n: int, length: int) -> list[np.ndarray]:
    """Up to ``n`` consecutive windows of ``length - 1`` tokens of ``text``, each after a BOS."""
    from ropebook import data

    body = np.asarray(data.encode(text, bos=False))
    bos = np.asarray(data.encode("", bos=True))
    step = length - len(bos)
    return [
        np.concatenate([bos, body[i : i + step]]) for i in range(0, len(body) - step + 1, step)
    ][:n]


def arithmetic_text(rng: np.random.Generator, lines: int = 64) -> str:
    """``lines`` lines ``a+b=c`` with six-digit ``a`` and ``b`` drawn from ``rng``."""
    return "".join(f"{a}+{b}={a + b}\n" for a, b in rng.integers(100_000, 1_000_000, (lines, 2)))


def arithmetic(n: int, length: int, seed: int) -> list[np.ndarray]:
    """``n`` prompts of additions (:func:`arithmetic_text`), cut to ``length`` tokens after BOS."""
    from ropebook import data

    rng = np.random.default_rng(seed)
    return [np.asarray(data.encode(arithmetic_text(rng), bos=True))[:length] for _ in range(n)]


def lossless(text: str) -> bool:
    """Whether the book's tokenizer round-trips ``text`` exactly."""
    from ropebook import data

    return data.decode(data.encode(text, bos=False)) == text


def domain_prompts(
    shakespeare: list[np.ndarray], n: int, length: int, seed: int
) -> dict[str, list[np.ndarray]]:
    """The domains of the input-domain comparison, each ``n`` prompts of ``length`` tokens:
    the given Shakespeare prompts, held-out Python, arithmetic (``seed``), Dante and — only if
    the tokenizer encodes it losslessly — the Daodejing. Domains without a prompt are dropped."""
    domains = {
        "Shakespeare": shakespeare,
        "Python": [ids for _, ids in passages("python", n, length)],
        "arithmetic": arithmetic(n, length, seed),
        "Italian (Dante)": windows(DANTE, n, length),
    }
    if lossless(DAODEJING):
        domains[CHINESE] = windows(DAODEJING, n, length)
    return {name: prompts for name, prompts in domains.items() if len(prompts)}


def _snippet(ids: np.ndarray, chars: int) -> str:
    from ropebook import data

    # newlines as " ⏎ " so a long line of digits or code can still wrap in the table
    return repr(data.decode(np.asarray(ids)[1:])[:chars]).replace("\\n", " ⏎ ")


def prompt_table(quotes: list[tuple[str, np.ndarray]], chars: int = 60) -> list[dict]:
    """Rows (prompt, document, tokens, opening text) for :func:`passages`' prompts."""
    return [
        {"#": i, "document": name, "tokens": len(ids), "text": _snippet(ids, chars)}
        for i, (name, ids) in enumerate(quotes)
    ]


def domain_table(domains: dict[str, list[np.ndarray]], chars: int = 60) -> list[dict]:
    """Rows (domain, prompts, tokens each, opening of the first prompt) for :func:`domain_prompts`."""
    return [
        {"domain": name, "prompts": len(p), "tokens each": len(p[0]), "first prompt": _snippet(p[0], chars)}
        for name, p in domains.items()
    ]  # fmt: skip


# ---------------------------------------------------------------------------------------------
# over seeds: intervals and verdicts


@dataclass(frozen=True)
class SeedInterval:
    """Mean and 95% Student-t interval of one number measured on ``n`` seeds."""

    mean: float
    low: float
    high: float
    n: int

    @property
    def text(self) -> str | None:
        """How a claim prints the interval; ``None`` with one seed (there is no interval)."""
        if self.n < 2:
            return None
        return f"95% CI [{self.low:.3f}, {self.high:.3f}] over {self.n} seeds"


def over_seeds(samples) -> SeedInterval:
    """:func:`ropebook.analysis.mean_interval` of per-seed ``samples`` as a :class:`SeedInterval`."""
    from ropebook.analysis import mean_interval

    mean, low, high = mean_interval(samples)
    return SeedInterval(mean, low, high, int(np.size(samples)))


def combine_verdicts(verdicts: Sequence[str]) -> str:
    """Verdicts of the parts of a claim → one (:func:`ropebook.claims.combine`)."""
    from ropebook.claims import combine

    return combine(verdicts)


def interval_verdict(stats: SeedInterval, threshold: float) -> str:
    """``held`` if the interval lies wholly above ``threshold``, ``not held`` if wholly below."""
    from ropebook.claims import verdict_from_interval

    return verdict_from_interval(stats.low, stats.high, threshold=threshold)


def flat_bound(n_layers: int, n_chunks: int) -> float:
    """Twice the spread of a layer-averaged :func:`frequency_trend` under random chunk order.

    One layer's Spearman correlation of ``K`` values in random order has standard deviation
    ``1/sqrt(K-1)``; the mean of ``L`` independent layers ``1/sqrt(L(K-1))``.
    """
    return 2 / np.sqrt(n_layers * (n_chunks - 1))


def flat_verdict(samples, bound: float) -> tuple[str, SeedInterval]:
    """Is a per-seed trend flat? ``held`` if its interval lies within ``±bound``, ``not held`` if
    it lies wholly outside, ``cannot decide`` otherwise (the interval reaches across the bound);
    with the interval."""
    stats = over_seeds(samples)
    if -bound < stats.low and stats.high < bound:
        return "held", stats
    outside = stats.low > bound or stats.high < -bound
    return ("not held" if outside else "cannot decide"), stats


# ---------------------------------------------------------------------------------------------
# Readings 1 and 2: bands and trends per layer, over seeds


def band_shares(usages: Sequence[FrequencyUsage], kind: str, fraction: float, band: str):
    """:func:`band_share` of every layer of ``kind`` for each seed's usage: ``[seeds, layers]``."""
    return np.stack([band_share(u.layers(kind), fraction, band) for u in usages])


def trends(usages: Sequence[FrequencyUsage], kind: str) -> np.ndarray:
    """:func:`frequency_trend` of ``kind``, mean over layers, for each seed: ``[seeds]``."""
    return np.stack([frequency_trend(u.layers(kind)).mean() for u in usages])


def band_share_table(shares: dict[tuple[str, str], np.ndarray], columns) -> list[dict]:
    """Rows per layer (and their mean) of ``shares[(model, kind)] [seeds, layers]`` averaged over
    seeds, one column ``"<model> <queries|keys|values>"`` per ``(model, kind)`` in ``columns``."""
    names = {(n, k): f"{n} {KIND_NAMES[k]}" for n, k in columns}
    n_layers = shares[columns[0]].shape[1]
    rows = [
        {"layer": layer, **{names[c]: float(shares[c][:, layer].mean()) for c in columns}}
        for layer in range(n_layers)
    ]
    return rows + [{"layer": "mean", **{names[c]: float(shares[c].mean()) for c in columns}}]


@dataclass(frozen=True)
class LowBandReading:
    """Reading 1: do queries and keys put more than the uniform share in the slowest band?"""

    q: SeedInterval  # slowest-band share of the queries, mean over layers, over seeds
    k: SeedInterval
    uniform: float
    verdict: str  # both intervals above uniform: held
    every_layer_fraction: float  # of (q/k, seed, layer) cases above uniform
    every_layer_verdict: str  # all: held; at least half: partly


def low_band_reading(q_shares, k_shares, uniform: float) -> LowBandReading:
    """Reading 1 from the slowest-band shares ``[seeds, layers]`` of queries and keys."""
    q, k = over_seeds(np.mean(q_shares, axis=1)), over_seeds(np.mean(k_shares, axis=1))
    verdict = combine_verdicts([interval_verdict(s, uniform) for s in (q, k)])
    fraction = float((np.stack([q_shares, k_shares]) > uniform).mean())
    every = "held" if fraction == 1 else "partly" if fraction >= 0.5 else "not held"
    return LowBandReading(q, k, uniform, verdict, fraction, every)


@dataclass(frozen=True)
class EdgeLayerReading:
    """Is the fastest band used most in the first and last layers?"""

    per_layer: np.ndarray  # fastest-band share (mean of q and k) [seeds, layers]
    gap: SeedInterval | None  # first+last minus middle layers; None with fewer than 3 layers
    verdict: str
    measured: str


def edge_layer_reading(usages: Sequence[FrequencyUsage], fraction: float) -> EdgeLayerReading:
    """Fastest-band share of queries and keys (averaged) in the first and last layers minus the
    layers between them, per seed; ``not testable here`` with fewer than three layers."""
    per_layer = (
        band_shares(usages, "q", fraction, "high") + band_shares(usages, "k", fraction, "high")
    ) / 2
    n_layers = per_layer.shape[1]
    if n_layers < 3:
        measured = f"only {n_layers} layers: no middle layers to compare with"
        return EdgeLayerReading(per_layer, None, "not testable here", measured)
    gap = over_seeds(per_layer[:, [0, -1]].mean(axis=1) - per_layer[:, 1:-1].mean(axis=1))
    measured = (
        f"fastest-band share, first+last layers minus middle layers: {gap.mean:+.3f} "
        f"(per layer: {', '.join(f'{x:.3f}' for x in per_layer.mean(axis=0))})"
    )
    return EdgeLayerReading(per_layer, gap, interval_verdict(gap, 0.0), measured)


def trend_table(trend: dict, shares: dict, models: Sequence[str], bound: float) -> list[dict]:
    """Rows (model, vectors, trend, slowest-band share, profile) per model and kind, from
    ``trend[(model, kind)] [seeds]`` and ``shares[(model, kind)] [seeds, layers]``."""
    shape = {"held": "flat", "not held": "structured", "cannot decide": "unclear"}
    return [
        {
            "model": name, "vectors": KIND_NAMES[kind], "trend": float(trend[name, kind].mean()),
            "slowest-band share": float(shares[name, kind].mean()),
            "profile": shape[flat_verdict(trend[name, kind], bound)[0]],
        }
        for name in models for kind in KINDS
    ]  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Reading 3: heads that use the fastest frequencies, and whether they are positional


def head_high_share(usage: FrequencyUsage, fraction: float) -> np.ndarray:
    """Per head, the larger of its queries' and keys' fastest-band share: ``[layers, heads]``.

    Keys are repeated over the query heads of their group under grouped-query attention."""
    q = band_share(usage.heads("q"), fraction, "high")
    k = band_share(usage.heads("k"), fraction, "high")
    return np.maximum(q, np.repeat(k, q.shape[1] // k.shape[1], axis=1))


def few_heads_verdict(flag_fractions: Sequence[float]) -> str:
    """ "A few heads": in every seed at least one and at most a quarter of heads are flagged →
    held; in every seed none or more than half → not held; otherwise partly."""
    if all(0 < f <= 0.25 for f in flag_fractions):
        return "held"
    if all(f == 0 or f > 0.5 for f in flag_fractions):
        return "not held"
    return "partly"


def head_strip_chart(
    usages: Sequence[FrequencyUsage], seeds: Sequence[int], fraction: float, threshold: float
):
    """Altair strip chart: one dot per (seed, layer, head) at its :func:`head_high_share`,
    coloured by whether it reaches ``threshold`` (a dashed rule); hover for q and k shares."""
    import altair as alt

    rows = []
    for seed, usage in zip(seeds, usages, strict=True):
        share, q, k = (
            head_high_share(usage, fraction),
            band_share(usage.heads("q"), fraction, "high"),
            band_share(usage.heads("k"), fraction, "high"),
        )
        group = q.shape[1] // k.shape[1]
        for layer, head in np.ndindex(share.shape):
            rows.append(
                {
                    "seed": seed, "layer": layer, "head": head,
                    "fastest-band share (max of q, k)": float(share[layer, head]),
                    "query share": float(q[layer, head]),
                    "key share": float(k[layer, head // group]),
                    "uses high frequencies": bool(share[layer, head] >= threshold),
                }
            )  # fmt: skip
    dots = (
        alt.Chart(alt.InlineData(values=rows), title="Share of each head's norm in the fastest band")
        .mark_circle(size=60, opacity=0.8)
        .encode(
            x=alt.X("fastest-band share (max of q, k):Q", title="share of norm in the fastest band"),
            y=alt.Y("layer:O", title="layer"),
            color=alt.Color(
                "uses high frequencies:N", title="uses high frequencies",
                legend=alt.Legend(orient="bottom"),
            ),
            tooltip=[
                "seed:O", "layer:O", "head:O",
                alt.Tooltip("query share:Q", format=".3f"), alt.Tooltip("key share:Q", format=".3f"),
            ],
        )
    )  # fmt: skip
    rule = (
        alt.Chart(alt.InlineData(values=[{"threshold": threshold}]))
        .mark_rule(strokeDash=[4, 3], color="gray")
        .encode(x="threshold:Q")
    )
    n_layers = usages[0].q.shape[0]
    return (dots + rule).properties(width=520, height=28 * n_layers)


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


@dataclass(frozen=True)
class PositionalReading:
    """Are the heads that use the fastest frequencies most the positional ones?"""

    top_heads: list[tuple[int, int]]  # per seed, (layer, head) of the largest fastest-band share
    strongest: list[np.ndarray]  # per seed, [layers, heads] max of self / previous attention
    top_is_positional: list[bool]  # per seed
    correlations: list  # per seed, scipy SpearmanrResult over heads (two-sided p)
    rank_positive: list[bool]  # per seed: positive, one-sided p < 0.05
    flagged_positional: float  # share of flagged heads that are positional (nan if none)
    rest_positional: float  # the same for the other heads

    @property
    def evidence(self) -> list[bool]:
        """The parts of the claim, for :func:`ropebook.claims.graded`."""
        return self.top_is_positional + self.rank_positive

    def measured(self, seeds: Sequence[int]) -> str:
        """Per seed the top head, its positional attention and the rank correlation (one-sided
        p); then the share of positional heads among the flagged heads and the others."""

        def pct(x: float) -> str:
            return "—" if np.isnan(x) else f"{x:.0%}"

        per_seed = [
            f"seed {s}: top head L{top[0]}H{top[1]} puts {strongest[top]:.2f} of its attention on "
            f"one offset, Spearman over heads {c.statistic:+.2f} (p = {c.pvalue / 2:.2g})"
            for s, top, strongest, c in zip(
                seeds, self.top_heads, self.strongest, self.correlations, strict=True
            )
        ]
        return "; ".join(per_seed) + (
            f"; positional: {pct(self.flagged_positional)} of high-frequency heads, "
            f"{pct(self.rest_positional)} of others"
        )


def positional_reading(
    shares: Sequence[np.ndarray], positional: Sequence[np.ndarray], flagged, mass: float
) -> PositionalReading:
    """Per seed: is the head with the largest fastest-band share (``shares [layers, heads]``)
    positional (``positional [layers, 2, heads]`` reaches ``mass`` at offset 0 or 1), and do
    share and positional attention rise together over heads (Spearman, one-sided p < 0.05)?"""
    from scipy import stats

    strongest = [p.max(axis=1) for p in positional]
    top = [tuple(int(i) for i in np.unravel_index(np.argmax(s), s.shape)) for s in shares]
    correlations = [
        stats.spearmanr(s.ravel(), p.ravel()) for s, p in zip(shares, strongest, strict=True)
    ]
    flag_pos = np.concatenate([p[f] for p, f in zip(strongest, flagged, strict=True)])
    rest_pos = np.concatenate([p[~f] for p, f in zip(strongest, flagged, strict=True)])
    return PositionalReading(
        top_heads=top,
        strongest=strongest,
        top_is_positional=[bool(p[t] >= mass) for p, t in zip(strongest, top, strict=True)],
        correlations=correlations,
        rank_positive=[bool(c.statistic > 0 and c.pvalue / 2 < 0.05) for c in correlations],
        flagged_positional=float((flag_pos >= mass).mean()) if flag_pos.size else np.nan,
        rest_positional=float((rest_pos >= mass).mean()) if rest_pos.size else np.nan,
    )


def top_heads_table(
    seeds: Sequence[int], shares, positional, mass: float, per_seed: int = 6
) -> list[dict]:
    """The ``per_seed`` heads with the largest fastest-band share in each seed: their share,
    attention on themselves and on the previous token, and whether they are positional."""
    rows = []
    for seed, share, pos in zip(seeds, shares, positional, strict=True):
        ranked = sorted(np.ndindex(share.shape), key=lambda lh: -share[lh])[:per_seed]
        rows += [
            {
                "seed": seed, "layer": int(layer), "head": int(head),
                "fast share": float(share[layer, head]),
                "on itself": float(pos[layer, 0, head]), "on previous": float(pos[layer, 1, head]),
                "positional": bool(pos[layer, :, head].max() >= mass),
            }
            for layer, head in ranked
        ]  # fmt: skip
    return rows


def attention_pattern(trained, ids: np.ndarray, layer: int, head: int) -> np.ndarray:
    """Attention weights ``[T, T]`` of one head of a book model on one prompt."""
    from ropebook import model

    _, layers = model.forward(
        trained.params, np.asarray(ids)[None], trained.config, return_internals=True
    )
    return np.asarray(layers[layer]["probs"][0, head])


# ---------------------------------------------------------------------------------------------
# the input domain


def domain_similarities(
    usages: Sequence[dict[str, FrequencyUsage]], kind: str = "q"
) -> list[dict[tuple[str, str], dict[str, float]]]:
    """Per seed, :func:`map_similarity` of the ``kind`` maps of every pair of domains."""
    names = list(usages[0])
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    return [
        {(a, b): map_similarity(u[a].layers(kind), u[b].layers(kind)) for a, b in pairs}
        for u in usages
    ]


def seed_similarities(
    a: Sequence[FrequencyUsage], a_kind: str, b: Sequence[FrequencyUsage], b_kind: str
) -> list[dict[str, float]]:
    """Per seed, :func:`map_similarity` of ``a``'s ``a_kind`` map and ``b``'s ``b_kind`` map."""
    return [map_similarity(x.layers(a_kind), y.layers(b_kind)) for x, y in zip(a, b, strict=True)]


def similarity_table(similarity: list[dict], reference: dict[str, list[dict]]) -> list[dict]:
    """Rows (maps compared, profile correlation, cosine), means over seeds: every pair of
    domains, then each ``reference[label]`` (a list of per-seed :func:`map_similarity`)."""
    groups = {f"{a} vs {b}": [s[a, b] for s in similarity] for a, b in similarity[0]}
    return [
        {
            "maps compared": label,
            "profile correlation": float(np.mean([x["profile correlation"] for x in values])),
            "cosine": float(np.mean([x["cosine"] for x in values])),
        }
        for label, values in {**groups, **reference}.items()
    ]


@dataclass(frozen=True)
class DomainReading:
    """Is query usage "very similar" across domains?"""

    least: SeedInterval  # per seed, the profile correlation of the least similar pair
    yardstick: float  # mean profile correlation of the "not alike" reference
    verdict: str


def domain_reading(
    similarity: list[dict], yardstick: list[dict], threshold: float
) -> DomainReading:
    """Held if the least similar pair's profile correlation lies above ``threshold`` over seeds,
    not held if below — but only ``partly`` if it still lies above the ``yardstick`` maps."""
    least = over_seeds([min(v["profile correlation"] for v in s.values()) for s in similarity])
    reference = float(np.mean([x["profile correlation"] for x in yardstick]))
    verdict = interval_verdict(least, threshold)
    if verdict == "not held" and least.low > reference:
        verdict = "partly"
    return DomainReading(least, reference, verdict)


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


def loader_table(found: dict[str, dict]) -> list[dict]:
    """:func:`hf_loader_check` as rows (one per quantity), one column per family."""
    families = list(found)
    return [{"": key, **{f: found[f][key] for f in families}} for key in found[families[0]]]


def loader_gap(found: dict[str, dict]) -> float:
    """The largest ``|Δ|`` over families and compared outputs."""
    return max(v for row in found.values() for k, v in row.items() if k.startswith("max"))


@dataclass(frozen=True)
class CheckpointLowReading:
    """Do a checkpoint's queries and keys favour the slow chunks, with flat values?"""

    low: dict[str, float]  # slowest-band share per kind, mean over layers
    trend: dict[str, float]  # frequency_trend per kind, mean over layers
    uniform: float
    bound: float  # flat_bound of the checkpoint
    verdict: str


def checkpoint_low_reading(usage: FrequencyUsage, fraction: float) -> CheckpointLowReading:
    """Held if queries and keys both hold more than the uniform slowest-band share *and* trend
    towards the slow chunks beyond the flat bound, while values are flat; not held if neither
    queries nor keys do; partly otherwise."""
    n_layers, n_chunks = usage.q.shape[0], usage.n_chunks
    uniform = band_size(n_chunks, fraction) / n_chunks
    low = {kind: float(band_share(usage.layers(kind), fraction, "low").mean()) for kind in KINDS}
    trend = {kind: float(frequency_trend(usage.layers(kind)).mean()) for kind in KINDS}
    bound = flat_bound(n_layers, n_chunks)
    favours = [low[k] > uniform and trend[k] > bound for k in ("q", "k")]
    if all(favours) and abs(trend["v"]) < bound:
        verdict = "held"
    else:
        verdict = "partly" if any(favours) else "not held"
    return CheckpointLowReading(low, trend, uniform, bound, verdict)


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


@dataclass(frozen=True)
class DiagonalHeadReading:
    """Is the last-layer query head that uses the fastest band most the diagonal one of its
    KV group (Fig. 11)?"""

    q_high: np.ndarray  # [heads] fastest-band share of the last layer's query heads
    diagonal: np.ndarray  # [heads] attention on the token itself
    top: int  # the head with the largest fastest-band share
    members: list[int]  # the query heads sharing its KV head
    most_diagonal: int  # the member with the most attention on itself
    verdict: str  # top is the most diagonal member; and it reaches the mass: held


def diagonal_head_reading(
    usage: FrequencyUsage, diagonal: np.ndarray, fraction: float, mass: float
) -> DiagonalHeadReading:
    """:class:`DiagonalHeadReading` from a checkpoint's usage and its last layer's
    :func:`last_layer_self_attention`; a KV group is ``heads / kv_heads`` consecutive heads."""
    from ropebook.claims import graded

    q_high = band_share(usage.heads("q")[-1], fraction, "high")
    group = usage.q.shape[1] // usage.k.shape[1]
    top = int(np.argmax(q_high))
    members = list(range((top // group) * group, (top // group + 1) * group))
    most = members[int(np.argmax(diagonal[members]))]
    verdict = graded([most == top, bool(diagonal[top] >= mass)])
    return DiagonalHeadReading(q_high, np.asarray(diagonal), top, members, most, verdict)


# ---------------------------------------------------------------------------------------------
# figures


def plot_layer_maps(
    maps: dict[str, np.ndarray],
    wavelengths: np.ndarray,
    title: str,
    columns: int = 3,
    top_label: str = "wavelength (tokens)",
):
    """One matplotlib heatmap per entry of ``maps`` (``[layers, chunks]``, fastest chunk left),
    each with its own colour bar and the chunks' wavelengths on the top axis; returns the figure.
    """
    import matplotlib.pyplot as plt

    n_rows = -(-len(maps) // columns)
    n_cols = min(columns, len(maps))
    n_layers = len(next(iter(maps.values())))
    fig, axes = plt.subplots(
        n_rows, n_cols, figsize=(3.4 * n_cols, n_rows * (1.5 + 0.3 * min(n_layers, 16))),
        constrained_layout=True, squeeze=False,
    )  # fmt: skip
    k = len(wavelengths)
    ticks = sorted({*range(0, k, max(1, k // 4)), k - 1})
    for ax in axes.flat[len(maps) :]:
        ax.set_visible(False)
    for ax, (label, values) in zip(axes.flat, maps.items(), strict=False):
        image = ax.imshow(values, aspect="auto", cmap="viridis", interpolation="nearest")
        ax.set(title=label, xlabel="chunk k (0 = fastest)", ylabel="layer", xticks=ticks)
        ax.set_yticks(range(0, values.shape[0], max(1, values.shape[0] // 8)))
        ax.grid(False)
        top = ax.secondary_xaxis("top")
        labels = [f"{w:.0f}" if w < 1e3 else f"{w / 1e3:.0f}k" for w in wavelengths[ticks]]
        top.set_xticks(ticks, labels, fontsize=7)
        top.set_xlabel(top_label, fontsize=8)
        fig.colorbar(image, ax=ax, label="mean chunk norm", shrink=0.9)
    fig.suptitle(title)
    return fig


def wrap_title(title: str, width: int = 55) -> str | list[str]:
    """A chart title as one line, or as lines of at most ``width`` characters (Vega-Lite draws
    a list as several lines) so a long title does not widen the chart: broken before a final
    parenthesis if that is enough, else at spaces."""
    import textwrap

    if len(title) <= width:
        return title
    head, _, tail = title.rpartition(" (")
    if head and len(head) <= width and len(tail) < width:
        return [head, "(" + tail]
    return textwrap.wrap(title, width)


def usage_heatmaps(
    usage: FrequencyUsage,
    kinds: Sequence[str],
    title: str,
    *,
    per_head: bool = False,
    layers: Sequence[int] | None = None,
    heads: Sequence[int] | None = None,
    row_height: int | None = None,
    width: int = 150,
):
    """Interactive Altair heatmaps, one panel per kind (own colour scale, legend below): rows are
    layers (head mean) or, with ``per_head``, the ``heads`` of ``layers``; hover a cell for its
    layer, head, chunk, wavelength and mean norm."""
    import altair as alt

    rows = [
        r
        for kind in kinds
        for r in heatmap_records(usage, kind, per_head=per_head, layers=layers)
        if heads is None or r["head"] in heads
    ]
    y = "head" if per_head else "layer"
    n_rows = len({r[y] for r in rows if r["kind"] == KIND_NAMES[kinds[0]]})
    height = (row_height or (14 if per_head else 30)) * n_rows
    panels = [
        alt.Chart(alt.InlineData(values=[r for r in rows if r["kind"] == KIND_NAMES[kind]]), title=KIND_NAMES[kind])
        .mark_rect()
        .encode(
            x=alt.X("frequency index:O", title="chunk k (0 = fastest)"),
            y=alt.Y(f"{y}:O", title=y),
            color=alt.Color(
                "mean norm:Q", scale=alt.Scale(scheme="viridis"), title="norm",
                legend=alt.Legend(orient="bottom", gradientLength=width - 40),
            ),
            tooltip=[
                "layer:O", "head:N", "frequency index:O",
                alt.Tooltip("wavelength (tokens):Q", format=",.1f"),
                alt.Tooltip("mean norm:Q", format=".3f"),
            ],
        )
        .properties(width=width, height=height)
        for kind in kinds
    ]  # fmt: skip
    return alt.hconcat(*panels, title=wrap_title(title)).resolve_scale(color="independent")


def plot_head_closeup(
    usage: FrequencyUsage, pattern: np.ndarray, layer: int, head: int, title: str, size: int = 32
):
    """Fig. 14 for one head: its query and key chunk norms (bars, fastest chunk left) and its
    attention weights on one prompt (first ``size`` positions, darker = more); returns the figure.
    """
    import matplotlib.pyplot as plt

    n_chunks = usage.n_chunks
    kv_head = head // (usage.q.shape[1] // usage.k.shape[1])
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2), constrained_layout=True)
    for ax, kind in zip(axes[:2], ("q", "k"), strict=True):
        ax.bar(
            range(n_chunks),
            usage.heads(kind)[layer, head if kind == "q" else kv_head],
            color="tab:blue",
        )
        ax.set(
            title=f"{KIND_NAMES[kind]}, layer {layer} head {head}",
            xlabel="chunk k (0 = fastest)", ylabel="mean chunk norm",
        )  # fmt: skip
    axes[2].imshow(np.asarray(pattern)[:size, :size], cmap="Greys", interpolation="nearest")
    axes[2].set(
        title="attention weights, prompt 0",
        xlabel="key position (tokens)",
        ylabel="query position (tokens)",
    )
    axes[2].grid(False)
    fig.suptitle(title)
    return fig


def zoo_invariance_error(trained, ids: np.ndarray) -> float:
    """:func:`rotation_invariance_error` of a book model's activations on one prompt ``ids``."""
    from ropebook import model

    tokens = np.asarray(ids)[None]
    _, internals = model.forward(trained.params, tokens, trained.config, return_internals=True)
    return rotation_invariance_error(internals, trained.config.pairing)
