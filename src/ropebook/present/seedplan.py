"""The seed plan as a table and the values its paragraph glues: what each comparison needed,
got and resolves (:mod:`ropebook.seedplan`), beside what this run measured. Nothing here runs a
model."""

from __future__ import annotations

import math
from collections.abc import Mapping

from ropebook.analysis.ablation import Comparison, paired_sd_percent
from ropebook.seedplan import PERPLEXITY_PERCENT, Choice


def _percent(x: float) -> str:
    return f"{x:.2f} %" if math.isfinite(x) else "—"


def _in_units(x: float, units: str) -> str:
    """A planned s.d. or MDE: in % of perplexity as ``0.43 %``, any other units as ``0.024``."""
    return _percent(x) if units == PERPLEXITY_PERCENT else f"{x:.3f}"


def plan_rows(
    choices: list[Choice],
    measured: Mapping[str, Comparison],
    confidence: float = 0.95,
    power: float = 0.8,
) -> list[dict]:
    """One row per planned comparison: the s.d. the plan used (and the range measured), the target
    MDE, seeds needed and planned, the MDE planned, in the comparison's units (a % sign for % of
    perplexity, else a number, the units named beside the comparison); then this run's seeds,
    paired s.d. and MDE (``measured``: comparison id → this run's :class:`Comparison`; missing →
    —)."""
    rows = []
    for c in choices:
        now = measured.get(c.id)
        sd_now = paired_sd_percent(now) if now is not None else math.nan
        low, high = (_in_units(x, c.units).removesuffix(" %") for x in c.sd_range)
        named = "" if c.units == PERPLEXITY_PERCENT else f" (units: {c.units})"
        rows.append(
            {
                "comparison": c.id + named,
                "paired s.d. (book)": _in_units(c.sd, c.units)
                + (f" ({low}–{high})" if low != high else ""),
                "target MDE": _in_units(c.target, c.units),
                "seeds needed": c.needed,
                "seeds planned": c.trained,
                "MDE planned": _in_units(c.mde, c.units),
                "seeds here": now.difference.n if now is not None else "—",
                "s.d. here": _percent(sd_now),
                "MDE here": _percent(now.min_detectable(confidence, power))
                if now is not None and now.paired
                else "—",
            }
        )
    return rows


def shortfall_values(choices: list[Choice], spare_minutes: float) -> dict:
    """What the budget affords: the minutes it leaves for added seeds (``spare``) and the plan
    spends (``added``), floats; how many comparisons meet their target MDE at the planned seeds
    (``met`` of ``n``), and the largest shortfall (``worst_ratio``: planned MDE / target, 0 when
    every target is met). The table of :func:`plan_rows` gives each comparison's numbers."""
    missed = [c.mde / c.target for c in choices if not c.met]
    return {
        "spare": float(spare_minutes),
        "added": float(sum(c.added_seconds for c in choices) / 60),
        "met": sum(c.met for c in choices),
        "n": len(choices),
        "worst_ratio": float(max(missed, default=0.0)),
    }
