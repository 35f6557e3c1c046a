"""The frequency-usage chapter's figures, tables and sentences, from the numbers of
:mod:`ropebook.analysis.frequencies`: layer × frequency maps (matplotlib, and interactive Altair
heatmaps), the strip chart of heads, a head's close-up (Fig. 14), the prompt, band-share, trend,
head, similarity and loader tables, and the claim texts of the readings.

Tables are lists of records for :func:`ropebook.plots.table`. Nothing here measures.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import altair as alt
import matplotlib.pyplot as plt
import numpy as np

from ropebook.analysis.frequencies import (
    KIND_NAMES,
    KINDS,
    CheckpointLowReading,
    EdgeLayerReading,
    FewHeadsReading,
    FrequencyUsage,
    PositionalReading,
    band_share,
    flat_verdict,
    head_high_share,
    interval_verdict,
)

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


def plot_edge_layers(readings: dict[str, EdgeLayerReading]):
    """Each model's fastest-band share per layer (mean over its replicates: seeds or prompts)
    against its relative depth, first and last layers marked: models of any depth on one axis."""
    fig, ax = plt.subplots(figsize=(6.4, 3.0), constrained_layout=True)
    for label, reading in readings.items():
        share = reading.per_layer.mean(axis=0)
        depth = np.linspace(0, 1, len(share))
        (line,) = ax.plot(depth, share, marker=".", label=label)
        ax.plot(depth[[0, -1]], share[[0, -1]], "o", ms=9, mfc="none", color=line.get_color())
    ax.set(xlabel="relative depth (first layer 0, last 1; circled)",
           ylabel="fastest-band share of q and k", title="Fastest band per layer")  # fmt: skip
    ax.legend(fontsize=8)
    return fig


def wrap_title(title: str, width: int = 55) -> str | list[str]:
    """A chart title as one line, or as lines of at most ``width`` characters (Vega-Lite draws
    a list as several lines) so a long title does not widen the chart: broken before a final
    parenthesis if that is enough, else at spaces."""
    if len(title) <= width:
        return title
    head, _, tail = title.rpartition(" (")
    if head and len(head) <= width and len(tail) < width:
        return [head, "(" + tail]
    return textwrap.wrap(title, width)


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


def head_strip_chart(
    usages: Sequence[FrequencyUsage], seeds: Sequence[int], fraction: float, threshold: float
):
    """Altair strip chart: one dot per (seed, layer, head) at its :func:`head_high_share`,
    coloured by whether it reaches ``threshold`` (a dashed rule); hover for q and k shares."""
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


def plot_head_closeup(
    usage: FrequencyUsage, pattern: np.ndarray, layer: int, head: int, title: str, size: int = 32
):
    """Fig. 14 for one head: its query and key chunk norms (bars, fastest chunk left) and its
    attention weights on one prompt (first ``size`` positions, darker = more); returns the figure.
    """
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


# ---------------------------------------------------------------------------------------------
# tables


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


def loader_table(found: dict[str, dict]) -> list[dict]:
    """:func:`hf_loader_check` as rows (one per quantity), one column per family."""
    families = list(found)
    return [{"": key, **{f: found[f][key] for f in families}} for key in found[families[0]]]


# ---------------------------------------------------------------------------------------------
# the readings' claim texts


def checkpoint_low_to_decide(reading: CheckpointLowReading) -> str:
    """What would decide Fig. 10's reading on a checkpoint where it is open: the prompts that
    resolve its hardest open part (queries' or keys' slowest-band share against uniform, or
    their trend against the flat bound)."""
    from ropebook.present import decide

    lines = {"slowest-band share against uniform": (reading.low, reading.uniform),
             "trend against the flat bound": (reading.trend, reading.bound)}  # fmt: skip
    parts = {
        f"the {KIND_NAMES[kind]}' {what}": decide.interval_result(values[kind], line)
        for what, (values, line) in lines.items()
        for kind in ("q", "k")
        if interval_verdict(values[kind], line) == "cannot decide"
    }
    if not parts:
        return "nothing: no part of the reading is open"
    what, result = decide.hardest(parts)
    return decide.seeds_text(
        result, unit="", what=what, samples="prompts", sd_name="s.d.", one="prompt"
    )


def few_heads_to_decide(reading: FewHeadsReading) -> str:
    """What would decide "a few heads" where it is open: the seeds that put the mean count's
    interval clear of the line it straddles (one head, or a quarter or half of the heads),
    whichever of those it straddles needs the most."""
    from ropebook.present import decide

    if reading.count.n < 2:
        return "a second seed, to put an interval on the count of heads over seeds"
    lines = {"one head": 1.0, "a quarter of the heads": reading.n_heads / 4,
             "half of the heads": reading.n_heads / 2}  # fmt: skip
    parts = {
        f"the mean count's distance from {name}": decide.interval_result(reading.count, line)
        for name, line in lines.items()
        if reading.count.low < line < reading.count.high
    }
    if not parts:
        return "nothing: the interval lies clear of every line"
    what, result = decide.hardest(parts)
    return decide.seeds_text(result, unit="", what=what, samples="seeds", sd_name="s.d.")


def edge_layer_measured(reading: EdgeLayerReading) -> str:
    """What :func:`~ropebook.analysis.frequencies.edge_layer_reading` measured, in one line."""
    if reading.gap is None:
        return f"only {reading.per_layer.shape[1]} layers: no middle layers to compare with"
    return (
        f"fastest-band share, min(first, last layer) − max(middle layers), mean over seeds: "
        f"{reading.gap.mean:+.3f} "
        f"(per layer: {', '.join(f'{x:.3f}' for x in reading.per_layer.mean(axis=0))})"
    )


def positional_measured(reading: PositionalReading, seeds: Sequence[int]) -> str:
    """Per seed the top head, its positional attention and the rank correlation (one-sided
    p); then the share of positional heads among the flagged heads and the others."""

    def pct(x: float) -> str:
        return "—" if np.isnan(x) else f"{x:.0%}"

    per_seed = [
        f"seed {s}: top head L{top[0]}H{top[1]} puts {strongest[top]:.2f} of its attention on "
        f"one offset, Spearman over heads {c.statistic:+.2f} (p = {c.pvalue / 2:.2g})"
        for s, top, strongest, c in zip(
            seeds, reading.top_heads, reading.strongest, reading.correlations, strict=True
        )
    ]
    return "; ".join(per_seed) + (
        f"; positional: {pct(reading.flagged_positional)} of high-frequency heads, "
        f"{pct(reading.rest_positional)} of others"
    )
