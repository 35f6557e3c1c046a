"""The recipe comparison (``ropebook.recipes``): its table and its figure."""

from __future__ import annotations

from typing import Any

import altair as alt
import numpy as np

from ropebook import recipes
from ropebook.present.noise import _interval, _number
from ropebook.recipes import RecipeResult


def rows(results: list[RecipeResult], names: tuple[str, str], confidence: float) -> list[dict]:
    """One row per recipe: schedule, model evaluated, each arm's mean loss, the paired difference
    a − b, its s.d. over seeds and that s.d. over today's, with intervals, and the jitter."""
    a, b = names
    level = f"{confidence:.0%}"
    out = []
    for r in results:
        schedule, evaluated = recipes.RECIPES[r.recipe]
        arm_a, arm_b = r.mean_loss.values()
        out.append({
            "recipe": r.recipe, "schedule": schedule,
            "model evaluated": "last iterate" if evaluated == "last" else
                               f"mean of the last {recipes.AVERAGE_SHARE:.0%} of steps",
            f"loss {a} / {b} (nats)": f"{arm_a:.4f} / {arm_b:.4f}",
            f"{a} − {b} [{level}]": f"{_number(r.difference.value)} % [{_interval(r.difference, ' %')}]",
            f"paired s.d. [{level}]": f"{_number(r.paired_sd.value)} % [{_interval(r.paired_sd, ' %')}]",
            f"s.d. / today's [{level}]": "1 (reference)" if r.recipe == "today" else
                f"{r.sd_ratio.value:.2f} [{r.sd_ratio.low:.2f} – {r.sd_ratio.high:.2f}]",
            "jitter": "—" if r.jitter is None else f"{_number(r.jitter.value)} %",
        })  # fmt: skip
    return out


def differences_chart(results: dict[str, Any], names: tuple[str, str]) -> alt.Chart:
    """Each seed's paired difference a − b (% of perplexity) under each recipe, seeds joined by
    a line across recipes: a recipe that cuts the noise pulls the points together."""
    frame = alt.InlineData(values=[
        {"recipe": recipe, "seed": seed, "difference": float(100 * np.expm1(a - b))}
        for recipe in recipes.measured_recipes(results)
        for seed, a, b in zip(sorted({r["seed"] for r in results["runs"]}),
                              *recipes.losses(results, recipe), strict=True)
    ])  # fmt: skip
    order = recipes.measured_recipes(results)
    x = alt.X("recipe:N", sort=order, title=None, axis=alt.Axis(labelAngle=0))
    y = alt.Y("difference:Q", title=f"{names[0]} − {names[1]} (% of perplexity)")
    lines = alt.Chart(frame).mark_line(opacity=0.35).encode(x=x, y=y, detail="seed:N")
    points = (
        alt.Chart(frame)
        .mark_point(filled=True)
        .encode(x=x, y=y, tooltip=["recipe:N", "seed:N", alt.Tooltip("difference:Q", format=".2f")])
    )
    zero = (
        alt.Chart(alt.InlineData(values=[{"zero": 0.0}]))
        .mark_rule(strokeDash=[4, 4])
        .encode(y="zero:Q")
    )
    return (lines + points + zero).properties(width=420, height=240)
