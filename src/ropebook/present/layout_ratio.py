"""Gemma's layouts at their production ratio (:mod:`ropebook.layout_ratio`): tables, the learning
curves and the sentences a page glues, all read from the kept results file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import altair as alt

from ropebook import layout_ratio as ratio
from ropebook import recipes
from ropebook.analysis import interval_text
from ropebook.present import layouts as show_layouts
from ropebook.present import studies as show_studies

TASK_LABELS = {"recall": "recall", "kback": "k-back"}
LABELS = {
    "gemma3-last": "Gemma 3, global last", "gemma3-first": "Gemma 3, global first",
    "gemma4-last": "Gemma 4, global last", "gemma4-first": "Gemma 4, global first",
    "rope": "all-RoPE",
}  # fmt: skip


def _arms(results: dict[str, Any]) -> list[str]:
    return list(results.get("arms") or [a for a, _, _ in ratio.ARMS])


def _mean_interval(values) -> str:
    e = interval_text(values)
    if e.n == 0:
        return "—"
    if e.n < 2:
        return f"{100 * e.mean:.1f}"
    return f"{100 * e.mean:.1f} [{100 * e.low:.1f}, {100 * e.high:.1f}]"


def provenance(results: dict[str, Any]) -> str:
    """Where, when and how the file was measured, and whether the code trains the same runs; the
    runs kept from an earlier measurement (``--keep``) name it."""
    text = show_studies.provenance_text(results, ratio.stale(results), ratio.seeds_text(results))
    for e in results.get("earlier", []):
        text += (f"; {e['runs']} of its runs kept as measured at commit `{e['commit']}` on "
                 f"{e['machine']} (`{e['command']}`)")  # fmt: skip
    return text


def task_rows(results: dict[str, Any], labels: Mapping[str, str] = LABELS) -> list[dict]:
    """One row per task and arm: the seeds that reached the criterion (and at which steps), the
    final accuracy (%) at 1× and beyond the context at the longest length, every seed counted."""
    top = ratio.factors(results)[-1]
    rows = []
    for task in ratio.TASKS:
        for arm in _arms(results):
            k, n, steps = ratio.reached(results, task, arm)
            rows.append({
                "task": TASK_LABELS[task], "layout": labels[arm],
                f"reached {100 * results['criterion']:g} %": f"{k}/{n}",
                "at steps": ", ".join("never" if s is None else f"{s:,d}" for s in steps),
                "accuracy at 1× (%)": _mean_interval(ratio.accuracy(results, task, arm, 1)),
                f"beyond the context at {top}× (%)": _mean_interval(
                    ratio.accuracy(results, task, arm, top, beyond=True)),
            })  # fmt: skip
    return rows


def placement_rows(results: dict[str, Any], confidence: float = 0.95) -> list[dict]:
    """Global last − global first, paired by seed, per layout: accuracy (points) on each task at
    1× and beyond the context at the longest length; perplexity (%) on language."""
    lengths = ratio.factors(results)
    rows = []
    for layout in ratio.LAYOUTS:
        row = {"layout": LABELS[f"{layout}-last"].split(",")[0]}
        for task in ratio.TASKS:
            row[f"{TASK_LABELS[task]} at 1×"] = ratio.placement(results, task, layout).text()
            row[f"{TASK_LABELS[task]} beyond, {lengths[-1]}×"] = ratio.placement(
                results, task, layout, lengths[-1], beyond=True
            ).text()
        for f in (lengths[0], lengths[-1]):
            compared = ratio.language_placement(results, layout, f, confidence)
            row[f"language ppl at {f}× (%)"] = compared.difference.format(digits=1)
        rows.append(row)
    return rows


def language_rows(
    results: dict[str, Any], labels: Mapping[str, str] = LABELS, confidence: float = 0.95
) -> list[dict]:
    """One row per arm: held-out perplexity at each length (geometric mean over seeds
    [interval]) and, at the shortest and longest, the paired difference from all-RoPE (%)."""
    lengths = ratio.factors(results)
    return show_layouts.perplexity_rows(
        _arms(results), labels, lengths,
        lambda arm, f: ratio.ppl(results, arm, f),
        {f: ratio.language_against_rope(results, f, confidence) for f in (lengths[0], lengths[-1])},
        confidence,
    )  # fmt: skip


def curve_chart(results: dict[str, Any], labels: Mapping[str, str] = LABELS) -> alt.FacetChart:
    """Accuracy at 1× against the training step, one line per run (colour: layout and
    placement), one panel per task; the dashed rule is the criterion."""
    values = [
        {"task": TASK_LABELS[r["domain"]], "layout": labels[r["arm"]], "seed": r["seed"],
         "step": step, "accuracy": accuracy}
        for r in results["runs"] if r["domain"] in ratio.TASKS
        for step, accuracy in zip(r["curve"]["steps"], r["curve"]["accuracy"], strict=True)
    ]  # fmt: skip
    order = [labels[a] for a in _arms(results)]
    lines = (
        alt.Chart()
        .mark_line(opacity=0.8)
        .encode(
            x=alt.X("step:Q", title="training step"),
            y=alt.Y("accuracy:Q", scale=alt.Scale(domain=[0, 1]), title="accuracy at 1×"),
            color=alt.Color("layout:N", sort=order),
            detail="seed:N",
            tooltip=["layout:N", "seed:N", "step:Q", alt.Tooltip("accuracy:Q", format=".3f")],
        )
    )
    rule = (
        alt.Chart()
        .mark_rule(strokeDash=[4, 4], color="gray")
        .encode(y=alt.datum(results["criterion"]))
    )
    return (
        alt.layer(lines, rule, data=alt.InlineData(values=values))
        .properties(width=300, height=220)
        .facet(column=alt.Column("task:N", title=None))
    )


def values(
    results: dict[str, Any],
    chapter_language: dict[str, Any] | None = None,
    confidence: float = 0.95,
) -> dict[str, str]:
    """Sentences a page glues (name → text): for each Gemma, last − first on each task at 1×
    and the seeds that reached the criterion at each placement; the 5 : 1 hybrid − all-RoPE on
    k-back and recall beyond the context; and, given the layouts-on-language study's results
    (3 : 1), whether its gap from all-RoPE at 1× agrees with the 5 : 1 one."""
    top = ratio.factors(results)[-1]
    out = {"provenance": provenance(results), "seeds": ratio.seeds_text(results)}
    for layout in ratio.LAYOUTS:
        for task in ratio.TASKS:
            out[f"{layout}.{task}.placement"] = ratio.placement(results, task, layout).text()
            for where in ("last", "first"):
                k, n, _ = ratio.reached(results, task, f"{layout}-{where}")
                out[f"{layout}.{task}.{where}.reached"] = f"{k}/{n}"
            out[f"{layout}.{task}.vs_rope"] = ratio.against_rope(
                results, task, f"{layout}-first", top
            ).text()
        out[f"{layout}.language.placement"] = ratio.language_placement(
            results, layout, 1, confidence
        ).difference.format(digits=1)
        if chapter_language is not None:
            agreement = ratio.against_four_layers(results, chapter_language, layout, 1, confidence)
            out[f"{layout}.language.vs_four_layers"] = (
                f"{agreement.equivalence(recipes.MARGIN)} (agree within ±{recipes.MARGIN:g} %): "
                f"3:1 {agreement.here[0]:+.1f} %, "
                f"5:1 {agreement.kept[0]:+.1f} % of all-RoPE's perplexity"
            )
    return out
