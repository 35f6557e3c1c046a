"""Where a RoPE spectrum sits, shown: the turns-per-context chart and table of
:mod:`ropebook.analysis.regime`, and the variant-spectrum chart of the rope_basics chapter
(:func:`ropebook.proofs.rope_basics.variant_spectrum`).
"""

from __future__ import annotations

import altair as alt
import numpy as np

from ropebook import rope
from ropebook.analysis.regime import RopeSetting


def regime_rows(settings: dict[str, RopeSetting]) -> list[dict]:
    """Per model: planes, share turning at least once over the context, the slowest's turns."""
    rows = []
    for name, s in settings.items():
        turns = rope.turns_per_context(s.head_dim, s.base, s.context)
        rows.append(
            {
                "model": name, "d": s.head_dim, "θ": f"{s.base:,.0f}", "context": s.context,
                "planes": turns.size, "≥ 1 turn": f"{np.mean(turns >= 1):.0%}",
                "slowest plane, turns": float(turns.min()),
            }
        )  # fmt: skip
    return rows


def turns_chart(settings: dict[str, RopeSetting]) -> alt.Chart:
    """Turns per context of every plane, planes placed by their rank from fastest (0) to
    slowest (1) so that models with different head dimensions share one axis."""
    records = []
    for name, s in settings.items():
        turns = rope.turns_per_context(s.head_dim, s.base, s.context)
        rank = np.arange(turns.size) / max(turns.size - 1, 1)
        records += [
            {"model": name, "plane rank": float(r), "turns": float(t), "plane": k}
            for k, (r, t) in enumerate(zip(rank, turns, strict=True))
        ]
    lines = (
        alt.Chart(alt.Data(values=records))
        .mark_line(point=alt.OverlayMarkDef(size=12))
        .encode(
            x=alt.X("plane rank:Q", title="plane, fastest (0) to slowest (1)"),
            y=alt.Y("turns:Q", scale=alt.Scale(type="log"), title="turns over the context"),
            color=alt.Color("model:N", legend=alt.Legend(orient="bottom", columns=3)),
            tooltip=["model:N", "plane:Q", alt.Tooltip("turns:Q", format=".3g")],
        )
    )
    one_turn = (
        alt.Chart(alt.Data(values=[{"turns": 1.0}]))
        .mark_rule(strokeDash=[4, 4])
        .encode(y="turns:Q")
    )
    return (lines + one_turn).properties(
        width=560, height=280, title="Turns of each RoPE plane over the training context"
    )


def spectrum_chart(spectrum: list[dict], *, head_dim: int, base: float, width: int = 480):
    """Frequency of each plane per variant, log scale, with a tooltip per point."""
    import altair as alt

    return (
        alt.Chart(
            alt.InlineData(values=spectrum),
            title=f"RoPE variants: frequency of each plane (d = {head_dim}, θ = {base:,.0f})",
        )
        .mark_line(point=True)
        .encode(
            x=alt.X("plane k:Q", title="plane k (0 = fastest)"),
            y=alt.Y(
                "plotted frequency:Q",
                scale=alt.Scale(type="log"),
                title="angular frequency g_k (rad/token)",
            ),
            color=alt.Color("variant:N"),
            strokeDash=alt.StrokeDash("variant:N"),
            tooltip=[
                "variant:N",
                "plane k:Q",
                alt.Tooltip("frequency g_k (rad/token):Q", format=".3g"),
                alt.Tooltip("wavelength (tokens):Q", format=",.1f"),
                "rotates:N",
            ],
        )
        .properties(width=width, height=300)
    )
