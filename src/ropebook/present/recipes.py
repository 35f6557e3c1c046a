"""The recipe comparison (``ropebook.recipes``): its table and its figure."""

from __future__ import annotations

from typing import Any

import altair as alt
import numpy as np

from ropebook import recipes, seedplan, studies
from ropebook.analysis import ablation
from ropebook.present import studies as show_studies
from ropebook.present.ablation import paper_gap_percent, resolution_rows
from ropebook.present.noise import interval_text, number_text
from ropebook.recipes import RecipeResult
from ropebook.stats import anatomy


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
            f"{a} − {b} [{level}]": f"{number_text(r.difference.value)} % [{interval_text(r.difference, ' %')}]",
            f"paired s.d. [{level}]": f"{number_text(r.paired_sd.value)} % [{interval_text(r.paired_sd, ' %')}]",
            f"s.d. / today's [{level}]": "1 (reference)" if r.recipe == "today" else
                f"{r.sd_ratio.value:.2f} [{r.sd_ratio.low:.2f} – {r.sd_ratio.high:.2f}]",
            "jitter": "—" if r.jitter is None else f"{number_text(r.jitter.value)} %",
        })  # fmt: skip
    return out


QUALITY_TOLERANCE = 1.0  # % of perplexity a recipe may cost the models and still be adopted


def adoption_text(verdict: str, perplexity_cost: float) -> str:
    """Whether the candidate confirmed on fresh seeds is adopted: only if its cut in noise held
    there and it costs the models at most :data:`QUALITY_TOLERANCE` % of perplexity."""
    reasons = [
        *([] if verdict == "held" else
          ["its cut in noise is not established on seeds it was not picked on"]),
        *([f"it costs the models {perplexity_cost:+.1f} % of perplexity"]
          if abs(perplexity_cost) > QUALITY_TOLERANCE else []),
    ]  # fmt: skip
    if not reasons:
        return ("The candidate qualifies: adopting it for the language regimes (the zoo retrains "
                "them once) is the next change.")  # fmt: skip
    return ("The zoo keeps training today's recipe: a recipe changes every language model's "
            "spec, and this candidate does not earn that yet: " + "; ".join(reasons) + ".")  # fmt: skip


def headline_rows(
    results: dict[str, Any],
    names: dict[str, str],
    paper: dict[str, float],
    confidence: float = 0.95,
) -> list[dict]:
    """The headline comparison (the study's arms) under today's recipe and the candidate named
    for confirmation, each on every seed it was trained on, as the p_rope_headline chapter's resolution
    table shows its own runs, with where and when the study measured it."""
    candidate = recipes.confirmed_recipe(results)
    return [
        headline_row("recipe", recipe, study_comparison(results, recipe, names, confidence),
                     tuple(results["arms"]), paper, measured_text(results), confidence)
        for recipe in ("today", candidate) if recipe is not None
    ]  # fmt: skip


def study_comparison(
    results: dict[str, Any], recipe: str, names: dict[str, str], confidence: float = 0.95
) -> ablation.Comparison:
    """The study's arms compared under ``recipe`` on every seed it was trained on."""
    seeds = recipes.seeds_of(results, recipe)
    a, b = (np.exp(x) for x in recipes.losses(results, recipe, seeds))
    arms = results["arms"]
    return ablation.compare(names[arms[0]], a, names[arms[1]], b, confidence, log=True)


def beside_rows(
    here: dict[str, ablation.Comparison],
    kept: dict[str, tuple[ablation.Comparison, dict[str, Any]]],
    pair: tuple[str, str],
    paper: dict[str, float],
    confidence: float = 0.95,
) -> list[dict]:
    """Per regime, this build's comparison of ``pair`` (``here``) beside a kept study's
    (``kept``: regime -> its comparison and results file), the study's row saying where and
    when it was measured."""
    return [
        headline_row("runs", f"{regime}, {where}", c, pair, paper, measured, confidence)
        for regime, (study, results) in kept.items()
        for where, c, measured in (("this build", here[regime], "this run"),
                                   ("GPU study", study, measured_text(results)))
    ]  # fmt: skip


def study_values(
    c: ablation.Comparison,
    results: dict[str, Any],
    paper: dict[str, float],
    confidence: float = 0.95,
) -> dict[str, Any]:
    """What a page glues of a kept study's comparison of its arms: provenance, seeds,
    difference, the effect it detects against the seed plan's target for that comparison in
    the study's regime (% of perplexity), its reading, the paper's gap between the arms
    (``paper``: perplexity by model) and whether it lies inside the study's interval."""
    detectable = c.min_detectable(confidence)
    a, b = results["arms"]
    target = next(
        p["target_mde"] for p in seedplan.load_plan()["comparisons"]
        if p["regime"] == results["regime"] and p["models"] == [a, b]
    )  # fmt: skip
    paper_gap = paper_gap_percent(paper, a, b)
    return {
        "paper_gap": f"{paper_gap:+.2f} %",
        "provenance": show_studies.provenance_text(results, studies.stale(results)),
        "seeds": c.difference.n,
        "difference": c.difference.format(2),
        "detectable": f"{detectable:.2f} %",
        "target": f"{target:g} %",
        "meets": "within" if detectable <= target else "above",
        "reading": _reading(c),
        "paper": {None: "—", True: "inside", False: "outside"}[_inside(c, paper_gap)],
    }


def study_text(c: ablation.Comparison, results: dict[str, Any], confidence: float = 0.95) -> str:
    """A claim's "to decide" addition: what a kept study of the same comparison reads, and where
    it was measured (never this run's verdict)."""
    return (
        f"; a study kept in the repository ({len(results['seeds'])} paired seeds on "
        f"{measured_text(results)}) gives {c.difference.format(2)}, detectable "
        f"{c.min_detectable(confidence):.2f} %: {_reading(c)}"
    )


def _reading(c: ablation.Comparison) -> str:
    """The verdict, or where the comparison cannot decide, the bound it puts on the effect."""
    return c.bound if c.verdict(c.a) == "cannot decide" else c.verdict(c.a)


def _inside(c: ablation.Comparison, gap: float) -> bool | None:
    """Whether ``gap`` (%) lies inside the paired difference's interval (None: no interval)."""
    d = c.difference
    if not (c.paired and np.isfinite(d.low) and np.isfinite(d.high)):
        return None
    return bool(d.low <= gap <= d.high)


def measured_text(results: dict[str, Any]) -> str:
    """A table's short "measured on": the study's devices and date (the CPU's name is in its
    provenance line)."""
    machine = results["machine"]
    return f"{machine.get('devices', machine['cpu'])}, {results['measured']}"


def headline_row(
    key: str,
    label: str,
    c: ablation.Comparison,
    pair: tuple[str, str],
    paper: dict[str, float],
    measured: str,
    confidence: float = 0.95,
) -> dict:
    """One row of a headline table: the resolution table's columns (the pair named by the page,
    so the table fits its width), whether the paper's gap lies inside our interval, and where
    the row was measured; ``key`` names the first column, ``label`` fills it."""
    gap = paper_gap_percent(paper, *pair)
    row = resolution_rows({pair: c}, paper, confidence)[0]
    del row["paper's order"]
    inside = {None: "—", True: "yes", False: "no: excluded"}[_inside(c, gap)]
    return {key: label, **row, "paper Δ inside": inside, "measured on": measured}


def same_spec_rows(
    first: dict[str, Any], second: dict[str, Any], names: dict[str, str], confidence: float = 0.95
) -> list[dict]:
    """How far one spec lands on two machines (the runs both files trained under today's
    recipe: the s.d. of the loss differences) against how far two seeds of one spec land on
    the second (√2 × each arm's s.d. over its seeds there), in % of perplexity, with intervals
    and their ratio."""
    level = f"{confidence:.0%}"
    same = recipes.same_run_differences(first, second)
    same_sd = anatomy.sd_estimate(100 * float(np.std(same, ddof=1)), len(same) - 1, confidence)
    where = (measured_text(first), measured_text(second))
    rows = [{"models compared": "one spec and seed, both machines", "runs": len(same),
             f"s.d. of the loss difference [{level}]": _sd_text(same_sd), "ratio": "1 (reference)",
             "machines": " and ".join(where)}]  # fmt: skip
    arms = zip(second["arms"], recipes.losses(second, "today", second["seeds"]), strict=True)
    for arm, losses in arms:
        seeds = anatomy.sd_estimate(
            100 * np.sqrt(2) * float(np.std(losses, ddof=1)), len(losses) - 1, confidence
        )
        ratio = anatomy.sd_ratio(seeds, same_sd, confidence)
        rows.append({"models compared": f"two seeds of {names[arm]}, one machine", "runs": len(losses),
                     f"s.d. of the loss difference [{level}]": _sd_text(seeds),
                     "ratio": f"{ratio.value:.2f} [{ratio.low:.2f} – {ratio.high:.2f}]",
                     "machines": where[1]})  # fmt: skip
    return rows


def _sd_text(sd) -> str:
    return f"{number_text(sd.value)} % [{interval_text(sd, ' %')}]"


def differences_chart(results: dict[str, Any], names: tuple[str, str]) -> alt.HConcatChart:
    """Each seed's paired difference a − b (% of perplexity) under each recipe, seeds joined by
    a line across recipes (a recipe that cuts the noise pulls the points together): the discovery
    seeds, and beside them the fresh seeds of the confirmation where the file has one."""
    panels = [_differences_panel(results, names, recipes.discovery_seeds(results), "discovery")]
    if fresh := results.get("confirmation"):
        panels.append(_differences_panel(results, names, fresh["seeds"], "confirmation"))
    return alt.hconcat(*panels).resolve_scale(y="shared")


def _differences_panel(
    results: dict[str, Any], names: tuple[str, str], seeds: list[int], stage: str
) -> alt.LayerChart:
    order = recipes.measured_recipes(results, seeds)
    frame = alt.InlineData(values=[
        {"recipe": recipe, "seed": seed, "difference": float(100 * np.expm1(a - b))}
        for recipe in order
        for seed, a, b in zip(sorted(seeds), *recipes.losses(results, recipe, seeds), strict=True)
    ])  # fmt: skip
    x = alt.X("recipe:N", sort=order, title=None, axis=alt.Axis(labelAngle=-30))
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
    title = f"{stage}: seeds {min(seeds)}–{max(seeds)}"
    return (lines + points + zero).properties(width=60 * len(order) + 60, height=240, title=title)
