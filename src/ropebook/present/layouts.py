"""The production layouts chapter's tables (``chapters/layouts.py``): the layouts as their
``transformers`` config classes set them, the layouts at our scale with what they could not
keep (:mod:`ropebook.layouts`), and the layouts on language (:mod:`ropebook.layout_language`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np

from ropebook import layout_language, layouts, rope_layers, rope_releases
from ropebook.analysis import ablation


def _kind(kind: layouts.LayerKind) -> str:
    if kind.encoding == "nope":
        return f"NoPE (head {kind.head_dim})"
    share = "RoPE" if kind.encoding == "rope" else f"p-RoPE, p = {kind.proportion:g}"
    return f"{share}, θ = {kind.theta:.3g} (head {kind.head_dim})"


def production_rows(production: Mapping[str, layouts.Production] | None = None) -> list[dict]:
    """One row per production layout (:data:`ropebook.layouts.PRODUCTION`): its local span as a
    share of the context, the layer period and each layer kind's encoding."""
    rows = []
    for p in (production or layouts.PRODUCTION).values():
        rows.append({
            "model": p.model, "config class": p.config_class, "context": f"{p.context:,}",
            "local attention": f"{p.local} of {p.span:,} ({p.span / p.context:.3g} of the context)",
            "local : global": f"{p.period - 1} : 1",
            "local layers": _kind(p.local_layer), "global layers": _kind(p.global_layer),
            "not modelled here": p.not_modelled or "—",
        })  # fmt: skip
    return rows


def config_rows(released: Mapping[str, rope_releases.Released] | None = None) -> list[dict]:
    """The production table from ``python -m ropebook layers`` (:mod:`ropebook.rope_layers`):
    one row per model (with its context) and set of identical layers. Where its values come from
    is :func:`config_sources` (a separate table, so this one fits the page)."""
    rows = []
    for entry in (released or rope_releases.RELEASED).values():
        reading = entry.reading()
        for number, (layer, indices) in enumerate(reading.groups()):
            g = layer.grid
            rotating = g.encoding != "NoPE"
            lam = layer.wavelengths
            over = f"{layer.slow_planes(reading.context)}" if rotating else "—"
            if rotating and layer.span:
                over += f" ({layer.slow_planes(layer.span)} in its {layer.scope.split()[-1]})"
            rows.append({
                "model (context)": f"{entry.model} ({reading.context:,})" if number == 0 else "",
                "layers": f"{len(indices)} of {len(reading.layers)}",
                "attention": "global" if layer.span is None else f"{layer.scope.split()[-1]} {layer.span:,}",
                "encoding (pairing)": f"{g.encoding} ({g.pairing})",
                # parameter names with spaces, so a narrow column can wrap them
                "θ, scaling": (f"{g.rope_theta:,.0f}, {rope_layers.describe_rule(g.rope_type, dict(layer.parameters))}".replace("_", " ")
                               if rotating else "—"),
                "rotating (dims)": (
                    f"{g.n_rotated} of {g.n_chunks} ("
                    + ", ".join(f"{a}–{b - 1}" for a, b in layer.rotated_dims) + ")"
                    if rotating else f"0 of {g.n_chunks}"
                ),
                "wavelengths (tokens)": (f"{rope_layers.tokens(lam[0])} to {rope_layers.tokens(lam[-1])}"
                                         if rotating else "—"),
                "turning < once over the context": over,
            })  # fmt: skip
    return rows


def config_sources(released: Mapping[str, rope_releases.Released] | None = None) -> list[dict]:
    """Where each production row's values come from: a released size's ``config.json`` (its
    fields that differ from the configuration class's defaults, named) or the class defaults."""
    return [
        {
            "model": entry.model,
            "values from": entry.source,
            "differs from the class defaults in": "; ".join(entry.differences()) or "—",
        }
        for entry in (released or rope_releases.RELEASED).values()
    ]


def wavelength_chart(released: Mapping[str, rope_releases.Released] | None = None) -> alt.Chart:
    """Every rotated plane's wavelength over its model's context (log scale), one row per model
    and layer kind: a tick left of 1 turns at least once over the context. The unrotated planes
    are counted in the row's label."""
    values = []
    for entry in (released or rope_releases.RELEASED).values():
        reading = entry.reading()
        for layer, _ in reading.groups():
            g = layer.grid
            kind = "global" if layer.span is None else layer.scope
            row = f"{entry.model} · {kind}: {g.n_rotated} of {g.n_chunks} planes rotate"
            for k, lam in zip(layer.rotated_planes, layer.wavelengths, strict=True):
                values.append({"row": row, "plane": int(k), "wavelength": float(lam),
                               "ratio": float(lam / reading.context)})  # fmt: skip
            if g.n_rotated == 0:
                values.append({"row": row, "plane": -1, "wavelength": None, "ratio": None})
    rows = list(dict.fromkeys(v["row"] for v in values))
    base = alt.Chart(alt.InlineData(values=values))
    ticks = base.mark_tick(thickness=1.5, size=12).encode(
        x=alt.X("ratio:Q", scale=alt.Scale(type="log"),
                title="wavelength / context (left of 1: turns at least once over the context)"),
        y=alt.Y("row:N", sort=rows, title=None),
        color=alt.Color("plane:Q", scale=alt.Scale(scheme="viridis"), title="plane (0 = fastest)"),
        tooltip=["row:N", "plane:Q", alt.Tooltip("wavelength:Q", format=",.0f")],
    )  # fmt: skip
    one = (
        alt.Chart(alt.InlineData(values=[{"ratio": 1.0}]))
        .mark_rule(color="firebrick")
        .encode(x="ratio:Q")
    )
    return (ticks + one).properties(width=460, height=18 * len(rows))


def scaled_rows(rows: list[dict], labels: Mapping[str, str]) -> list[dict]:
    """:func:`ropebook.layouts.table`'s rows with each layout's label, and "—" for no notes."""
    return [
        {"layout": labels[r["layout"]], "layers (first to last)": r["layers"],
         "global layers": r["global"], "local layers": r["local"] or "—",
         "ratios not kept": r["notes"] or "—"}
        for r in rows
    ]  # fmt: skip


def language_rows(
    results: dict[str, Any], labels: Mapping[str, str], confidence: float = 0.95
) -> list[dict]:
    """One row per model: its perplexity at each length (geometric mean over seeds [interval])
    and, at the shortest and the longest, the paired difference from all-RoPE."""
    lengths = layout_language.factors(results)
    return perplexity_rows(
        results["models"], labels, lengths,
        lambda name, f: layout_language.ppl(results, name, f),
        {f: layout_language.against_rope(results, f, confidence) for f in (lengths[0], lengths[-1])},
        confidence,
    )  # fmt: skip


def perplexity_rows(
    names: Sequence[str],
    labels: Mapping[str, str],
    lengths: Sequence[int],
    ppl: Callable[[str, int], Sequence[float]],
    ends: Mapping[int, Mapping[str, Any]],
    confidence: float = 0.95,
) -> list[dict]:
    """One row per model of a study on language: ``ppl(name, length)``'s seeds as a geometric
    mean [interval] at each length (no interval on one seed), and at each length of ``ends`` the
    paired difference from all-RoPE (``"rope"``) that ``ends[length][name]`` holds."""
    rows = []
    for name in names:
        row = {"layout": labels[name]}
        for f in lengths:
            values = ppl(name, f)
            e = ablation.estimate(values, confidence, log=True)
            interval = f" [{e.low:.1f}, {e.high:.1f}]" if len(values) > 1 else ""
            row[f"ppl at {f}×"] = f"{e.mean:.1f}{interval}"
        for f, compared in ends.items():
            row[f"vs all-RoPE at {f}×"] = (
                "—" if name == "rope" else compared[name].difference.format(digits=1)
            )
        rows.append(row)
    return rows


def language_chart(results: dict[str, Any], labels: Mapping[str, str]) -> alt.Chart:
    """Perplexity against the window length (multiples of the context), geometric mean over
    seeds, one line per layout."""
    values = [
        {"layout": labels[name], "factor": f,
         "ppl": float(np.exp(np.mean(np.log(layout_language.ppl(results, name, f)))))}
        for name in results["models"] for f in layout_language.factors(results)
    ]  # fmt: skip
    return (
        alt.Chart(alt.InlineData(values=values))
        .mark_line(point=True)
        .encode(
            x=alt.X("factor:Q", scale=alt.Scale(type="log", base=2), title="window / context"),
            y=alt.Y("ppl:Q", scale=alt.Scale(zero=False), title="held-out perplexity"),
            color=alt.Color("layout:N", sort=[labels[n] for n in results["models"]]),
            tooltip=["layout:N", "factor:Q", alt.Tooltip("ppl:Q", format=".1f")],
        )
        .properties(width=420, height=260)
    )
