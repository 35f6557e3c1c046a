"""Where a model's RoPE spectrum sits: turns of every plane over its training context.

The paper's models and ours differ in head dimension, base and context, so "the slow planes" of
one are not the slow planes of another. The comparable quantity is how many full turns each plane
makes over the training context (:func:`ropebook.rope.turns_per_context`).
"""

from __future__ import annotations

from dataclasses import dataclass

import altair as alt
import numpy as np

from ropebook import rope


@dataclass(frozen=True)
class RopeSetting:
    """The three numbers that fix a RoPE spectrum, and where they come from."""

    head_dim: int
    base: float
    context: int
    source: str


# The models the paper (and CABLE) measure, at their pre-training context.
REFERENCE_MODELS: dict[str, RopeSetting] = {
    "Gemma 7B": RopeSetting(256, 10_000.0, 8192, "Barbero et al. 2025 (Gemma 7B config)"),
    "Gemma 2B": RopeSetting(256, 10_000.0, 8192, "Barbero et al. 2025, Table 2 (Gemma 2B)"),
    "Llama 3.1 8B": RopeSetting(128, 500_000.0, 8192, "Llama 3.1 8B config, before scaling"),
    "GPT-2 Small (CABLE)": RopeSetting(64, 10_000.0, 512, "Veisi et al. 2025, appendix figures"),
}


def profile_settings(regimes: tuple[str, ...] = ("lesson", "matched")) -> dict[str, RopeSetting]:
    """Each zoo profile's RoPE model in each of ``regimes`` as a :class:`RopeSetting`
    (``ours: cpu`` is the lesson regime, ``ours: cpu, matched`` the matched one)."""
    from ropebook import zoo

    settings = {}
    for profile in zoo.PROFILES:
        for regime in regimes:
            config, _ = zoo.configs("rope", profile=profile, regime=regime)
            label = f"ours: {profile}" + ("" if regime == "lesson" else f", {regime}")
            settings[label] = RopeSetting(
                config.head_dim, config.rope_base, config.context, f"ropebook.zoo ({regime})"
            )
    return settings


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
