"""What the scans of :mod:`ropebook.analysis.semantic.scan` say: per model and seed the
apostrophe, content-driven and sink heads, their frequency bands, what survives past the training
length, and each claim's interval (over seeds, or over one seed's windows) and verdict word.

Selected heads are chosen on one half of the windows and measured on the other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ropebook.analysis import Estimate, interval_text
from ropebook.analysis.semantic.scan import LengthProfile, SemanticScan, rotated_chunk_terms
from ropebook.analysis.semantic.theory import breaking_length_closed_form

# ---------------------------------------------------------------- intervals and verdicts


def seed_or_window_interval(per_seed, per_window, n_seeds: int, digits: int = 2) -> Estimate:
    """Interval over seeds when there are several, else over the one seed's held-out windows."""
    if n_seeds > 1:
        return interval_text(per_seed, digits)
    return interval_text(per_window, digits, unit="windows (1 seed)")


def interval_verdict(low: float, high: float, threshold: float) -> str:
    """``claims.verdict_from_interval`` for a claim that the quantity exceeds ``threshold``;
    ``not testable here`` without a sample (no interval), ``cannot decide`` with a single one
    (low == high: measured, no interval; :func:`ropebook.claims.too_few_runs`)."""
    from ropebook import claims

    if not (np.isfinite(low) and np.isfinite(high)):
        return claims.too_few_runs(0)
    if low == high:
        return claims.too_few_runs(1)
    return claims.verdict_from_interval(low, high, threshold=threshold)


def parts_verdict(estimates, threshold: float) -> str:
    """One verdict for a claim read on several models (the book's, a real checkpoint's): each
    read part's :func:`interval_verdict` against ``threshold``, combined over the parts that could
    be tested (``None``: a model not read)."""
    from ropebook import claims

    return claims.combine_testable(
        [interval_verdict(e.low, e.high, threshold) for e in estimates if e is not None]
    )


# ---------------------------------------------------------------- apostrophe and content heads


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


@dataclass(frozen=True)
class Untrained:
    """A trained model's untrained twin: its architecture at the parameters its training started
    from (``model.init_params(key(seed))``, as :mod:`ropebook.train` starts and
    ``analysis.dynamics.snapshots`` rebuilds it), built each time its params are read."""

    config: object
    seed: int

    @property
    def params(self):
        import jax

        from ropebook import model

        return model.init_params(jax.random.key(self.seed), self.config)


def apostrophe_controls(
    models: dict, selected: dict, measured: dict, windows: tuple, class_ids, *,
    model: str = "rope", control: str = "nope", max_distance: int = 32,
) -> dict[str, ApostropheHeads]:  # fmt: skip
    """The apostrophe head's controls, each chosen and measured as ``model``'s head is (the best
    lift on the selection windows, read on the measuring ones), keyed by name: ``control``'s
    best head from the scans already made (``(name, seed) -> scan``; NoPE, since content alone
    can teach a head to attend to apostrophes) and that of ``model``'s untrained twins (what
    the selection finds where attention barely depends on content), scanned on ``windows`` =
    (selection, measuring)."""
    from ropebook.analysis.semantic.scan import scan_models

    seeds = [s for name, s in measured if name == model]
    twins = {s: Untrained(models[model, s].config, models[model, s].seed) for s in seeds}
    select, measure = (scan_models(twins, w, class_ids, max_distance=max_distance) for w in windows)
    return {
        control: apostrophe_heads(
            {s: selected[control, s] for s in seeds}, {s: measured[control, s] for s in seeds}
        ),
        f"untrained {model}": apostrophe_heads(select, measure),
    }


def controlled_parts_verdict(
    estimate: Estimate, real: Estimate | None, controls, threshold: float
) -> str:
    """A head claim whose line is checked against controls: the book's part (``estimate`` above
    ``threshold``, :func:`interval_verdict`) stays ``held`` only where every control's estimate
    (``controls``: the same measure of control models' best heads) misses the same line
    (:func:`ropebook.analysis.heads.controlled`: a control that clears it makes the part
    ``uninformative here``, one left open ``cannot decide``), then combined with a real
    checkpoint's part (``None``: not read; it has no control) over the parts that could be
    tested."""
    from ropebook import claims
    from ropebook.analysis.heads import controlled

    book = controlled(
        interval_verdict(estimate.low, estimate.high, threshold),
        [interval_verdict(e.low, e.high, threshold) for e in controls],
    )
    parts = [book] + ([] if real is None else [interval_verdict(real.low, real.high, threshold)])
    return claims.combine_testable(parts)


def clears(estimate: Estimate | None, threshold: float) -> bool:
    """Whether an interval lies wholly above ``threshold`` (a head was found to read further)."""
    return estimate is not None and bool(np.isfinite(estimate.low) and estimate.low > threshold)


def gated_verdict(estimate: Estimate | None, head: str, threshold: float = 0.0) -> str:
    """:func:`interval_verdict` of ``estimate`` (a reading of a head) against ``threshold``
    where the head's own verdict (``head``: e.g. its lift against the line) found it,
    ``held``; ``cannot decide`` where that is open (whether there is a head to read is itself
    undecided: never tallied apart as untestable); ``not testable here`` where there is no such
    head to read (or no reading)."""
    if head == "cannot decide":
        return "cannot decide"
    if head != "held" or estimate is None:
        return "not testable here"
    return interval_verdict(estimate.low, estimate.high, threshold)


def apostrophe_bands(
    measured: dict[int, SemanticScan], heads: dict[int, tuple[int, int]]
) -> tuple[list[dict], Estimate, Estimate]:
    """Shares of the mean key and query chunk norm in the slowest and fastest quarter of the
    chunks, for each seed's apostrophe head and for the mean head of its layer; the keys'
    slowest-quarter share over seeds (or, with one seed, over windows); and that share's excess
    over the mean of the other heads of its layer, the baseline the claim must beat (RoPE keys in
    general lean to the slow chunks, so a share above a flat ¼ says nothing of this head)."""
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
    window_k = measured[first].window_k_norms
    window_share = band_share(window_k[:, *heads[first]], 0.25, "low")
    key_shares = [r["slowest ¼"] for r in rows if r["vectors"] == "keys"]
    low_keys = seed_or_window_interval(key_shares, window_share, n_seeds=len(measured))
    excess = seed_or_window_interval(
        list(apostrophe_key_excess(measured, heads).values()),
        window_share - _other_heads_share(window_k, *heads[first]),
        n_seeds=len(measured),
    )
    return rows, low_keys, excess


def apostrophe_key_excess(
    measured: dict[int, SemanticScan], heads: dict[int, tuple[int, int]]
) -> dict[int, float]:
    """Per seed, the apostrophe head's slowest-quarter share of mean key chunk norm minus the
    mean share of the other heads of its layer: the reading :func:`apostrophe_bands` puts an
    interval on (a kept study keeps it seed by seed)."""
    from ropebook.analysis.frequencies import band_share

    return {
        s: float(
            band_share(scan.k_norms[heads[s]], 0.25, "low")
            - _other_heads_share(scan.k_norms, *heads[s])
        )
        for s, scan in measured.items()
    }


@dataclass
class ContentHeads:
    """Per seed the most content-driven head (:meth:`SemanticScan.content_head`), its norm shares
    in the slowest quarter of chunks, the query share over seeds (or windows), and that share's
    excess over the mean of the other heads of its layer: the baseline a claim about *this* head
    must beat, since RoPE queries in general may lean to the slow chunks."""

    heads: dict[int, tuple[int, int]]
    rows: list[dict]
    query_share: Estimate
    query_excess: Estimate


def _other_heads_share(q_norms: np.ndarray, layer: int, head: int) -> np.ndarray:
    """Mean slowest-quarter share of the other heads of ``layer`` (``q_norms[..., layer, h, K]``
    with any leading axes, e.g. windows)."""
    from ropebook.analysis.frequencies import band_share

    others = [h for h in range(q_norms.shape[-2]) if h != head]
    return np.mean([band_share(q_norms[..., layer, h, :], 0.25, "low") for h in others], axis=0)


def content_heads(measured: dict[int, SemanticScan]) -> ContentHeads:
    from ropebook.analysis.frequencies import band_share

    heads, rows = {}, []
    for s, scan in measured.items():
        layer, head = heads[s] = scan.content_head()
        query = float(band_share(scan.q_norms[layer, head], 0.25, "low"))
        rows.append(
            {
                "seed": s,
                "head": f"L{layer}H{head}",
                "position R²": float(scan.position_r2[layer, head]),
                "query slowest ¼": query,
                "layer's other heads": float(_other_heads_share(scan.q_norms, layer, head)),
                "key slowest ¼": float(band_share(scan.k_norms[layer, head], 0.25, "low")),
            }
        )
    first = next(iter(measured))
    window_q = measured[first].window_q_norms
    window_share = band_share(window_q[:, *heads[first]], 0.25, "low")
    share = seed_or_window_interval(
        [r["query slowest ¼"] for r in rows], window_share, n_seeds=len(measured)
    )
    excess = seed_or_window_interval(
        [r["query slowest ¼"] - r["layer's other heads"] for r in rows],
        window_share - _other_heads_share(window_q, *heads[first]),
        n_seeds=len(measured),
    )
    return ContentHeads(heads, rows, share, excess)


# ---------------------------------------------------------------- the BOS sink


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


def bos_retentions(profiles: dict, sink: dict) -> dict[str, np.ndarray]:
    """:func:`bos_retention` of each model's sink head, windows of all its seeds pooled:
    ``profiles`` and ``sink`` keyed by ``(name, seed)``."""
    out: dict[str, list] = {}
    for (name, s), prof in profiles.items():
        out.setdefault(name, []).append(bos_retention(prof, *sink[name, s]))
    return {name: np.concatenate(parts) for name, parts in out.items()}


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


def seed_retention_difference(profiles: dict, sink: dict, minuend: str, subtrahend: str):
    """Paired difference (same windows) of two models' :func:`bos_retention`, the seed the unit:
    each seed's windows averaged first, the interval over the seeds both models have; with one
    seed, over its windows (and said so). ``profiles`` and ``sink`` keyed by ``(name, seed)``."""
    seeds = sorted(
        {s for n, s in profiles if n == minuend} & {s for n, s in profiles if n == subtrahend}
    )
    if not seeds:
        return Estimate(float("nan"), float("nan"), float("nan"), "models missing")
    per_seed = {
        s: bos_retention(profiles[minuend, s], *sink[minuend, s])
        - bos_retention(profiles[subtrahend, s], *sink[subtrahend, s])
        for s in seeds
    }
    return seed_or_window_interval(
        [float(np.nanmean(d)) for d in per_seed.values()], per_seed[seeds[0]], len(seeds), 3
    )


def retention_difference(retention: dict[str, np.ndarray], minuend: str, subtrahend: str):
    """Paired difference (same windows) of two models' :func:`bos_retention`."""
    if minuend not in retention or subtrahend not in retention:
        return Estimate(float("nan"), float("nan"), float("nan"), "models missing")
    a, b = retention[minuend], retention[subtrahend]
    n = min(len(a), len(b))
    return interval_text(a[:n] - b[:n], unit="paired seeds × windows")
