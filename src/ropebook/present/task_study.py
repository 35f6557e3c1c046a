"""The kept task study (:mod:`ropebook.task_study`) as the layouts and recall chapters glue it:
its plan (the pilot's numbers, the target fixed in advance, the seeds they call for) and what it
measured, or why it does not decide here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ropebook import task_study as ts
from ropebook.present.recall import paired_values


def _gap(values: tuple[float, float, float]) -> str:
    mean, low, high = (100 * v for v in values)
    return f"{mean:+.1f} [{low:+.1f}, {high:+.1f}]"


def _plan(results: Mapping[str, Any] | None) -> dict[str, str | int]:
    return {
        "pilot_seeds": ", ".join(map(str, ts.PILOT_SEEDS)),
        "pilot_commit": ts.PILOT_COMMIT,
        "seeds": len(results["seeds"]) if results else "no",
    }


def ceiling_values(results: Mapping[str, Any] | None, kept) -> dict[str, str | int]:
    """The layouts chapter's glue (``layouts.task_study.*``): the chunk ceiling's plan and the
    study's gap (``kept``, a :class:`~ropebook.analysis.layouts.ChunkCeiling`, where it
    decides)."""
    return _plan(results) | {
        "pilot_gap": _gap(ts.PILOT_CEILING_GAP),
        "pilot_sd": f"{100 * ts.PILOT_CEILING_SD:.1f}",
        "target": f"{100 * ts.CEILING_TARGET:g}",
        "planned": ts.CEILING_SEEDS,
        "gap": kept.gap.text() if kept else "not read here (the study does not decide)",
    }


def passkey_values(results: Mapping[str, Any] | None, wins) -> dict[str, str | int]:
    """The recall chapter's glue (``recall.task_study.*``): the passkey's plan and each rule's
    gain over the control on the study's seeds (``wins``, ``{rule: Paired}``, where it
    decides; else ``—``)."""
    values = _plan(results) | {
        "pilot_gap": _gap(ts.PILOT_PASSKEY_GAP),
        "pilot_sd": f"{100 * ts.PILOT_PASSKEY_SD:.0f}",
        "target": f"{100 * ts.PASSKEY_TARGET:g}",
        "planned": ts.PASSKEY_SEEDS,
    }
    for rule in ("pi", "yarn"):
        for field, value in paired_values(wins.get(rule) if wins else None).items():
            values[f"{rule}.{field}"] = value
    return values
