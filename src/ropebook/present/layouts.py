"""The production layouts chapter's tables (``chapters/layouts.py``): the layouts as their
``transformers`` config classes set them, the layouts at our scale with what they could not
keep (:mod:`ropebook.layouts`), and the layouts on language (:mod:`ropebook.layout_language`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import altair as alt
import numpy as np

from ropebook import layout_language, layouts
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
    ends = {
        f: layout_language.against_rope(results, f, confidence) for f in (lengths[0], lengths[-1])
    }
    rows = []
    for name in results["models"]:
        row = {"layout": labels[name]}
        for f in lengths:
            e = ablation.estimate(layout_language.ppl(results, name, f), confidence, log=True)
            row[f"ppl at {f}×"] = f"{e.mean:.1f} [{e.low:.1f}, {e.high:.1f}]"
        for f, comparisons in ends.items():
            row[f"vs all-RoPE at {f}×"] = (
                "—" if name == "rope" else comparisons[name].difference.format(digits=1)
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
