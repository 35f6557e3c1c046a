"""The production layouts chapter's tables (``chapters/layouts.py``): the layouts as their
``transformers`` config classes set them, and the layouts at our scale with what they could not
keep (:mod:`ropebook.layouts`)."""

from __future__ import annotations

from collections.abc import Mapping

from ropebook import layouts


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
