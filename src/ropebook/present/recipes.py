"""The recipe comparison (``ropebook.recipes``): its table and its figure; and the kept GPU
studies of the headline pair as the verdicts' evidence, with this build's runs beside them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import altair as alt
import numpy as np

from ropebook import claims, recipes, seedplan, studies
from ropebook.analysis import ablation
from ropebook.present import studies as show_studies
from ropebook.present.ablation import paper_gap_percent, resolution_rows
from ropebook.present.noise import interval_text, number_text
from ropebook.recipes import RecipeResult
from ropebook.stats import anatomy, power


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


def mean_loss(result: RecipeResult) -> float:
    """A recipe's mean validation loss over both arms (nats)."""
    return float(np.mean(list(result.mean_loss.values())))


def perplexity_cost(result: RecipeResult, today: RecipeResult) -> float:
    """What ``result``'s recipe costs in perplexity against today's, in %."""
    return float(100 * np.expm1(mean_loss(result) - mean_loss(today)))


def recipe_values(
    results: dict[str, Any],
    compared: list[RecipeResult],
    confirmed: tuple[RecipeResult, RecipeResult] | None,
    stale: Any,
) -> dict[str, Any]:
    """The methods chapter's numbers on the recipes study (``compared``: today's recipe first;
    ``confirmed``: today's and the candidate on fresh seeds, if run), for its prose."""
    today = compared[0]
    best = min((r for r in compared if r.recipe != "today"), key=lambda r: r.sd_ratio.value)
    fresh_seeds = results["confirmation"]["seeds"] if confirmed else []

    def fresh(text) -> str:
        return text if confirmed else "—"

    return {
        "share": recipes.AVERAGE_SHARE,
        "models": len(results["runs"]),
        "schedules": "; ".join(results["schedules"]),
        "provenance": show_studies.provenance_text(results, stale),
        "seeds": best.n_seeds,
        "today_sd": str(today.paired_sd),
        "best": best.recipe,
        "best_sd": str(best.paired_sd),
        "best_ratio": str(best.sd_ratio),
        "best_loss": f"{perplexity_cost(best, today):+.1f} %",
        "today_jitter": "—" if today.jitter is None else str(today.jitter),
        "where": "not measured (no tail evaluations)"
        if today.jitter is None
        else "between runs: they end in different places"
        if today.jitter.value < today.paired_sd.value / 3
        else "largely in the last iterate's jitter",
        "confirm": confirmed[1].recipe if confirmed else "none yet",
        "confirm_seeds": seed_span(fresh_seeds) if confirmed else "—",
        "confirm_today_sd": fresh(confirmed and str(confirmed[0].paired_sd)),
        "confirm_sd": fresh(confirmed and str(confirmed[1].paired_sd)),
        "confirm_ratio": fresh(confirmed and str(confirmed[1].sd_ratio)),
        "confirm_loss": fresh(confirmed and f"{perplexity_cost(*confirmed[::-1]):+.1f} %"),
        "confirm_difference": fresh(confirmed and str(confirmed[1].difference)),
        "today_difference": fresh(confirmed and str(confirmed[0].difference)),
    }


def recipe_verdict(confirmed: tuple[RecipeResult, RecipeResult] | None) -> str:
    """The finding "a change of recipe cuts the headline's paired s.d. below today's", decided
    on fresh seeds only: where the candidate named for confirmation was trained beside today's
    on seeds it was not picked on (``confirmed``), ``held`` if its s.d. ratio's interval lies
    wholly below 1, ``not held`` wholly above, else ``cannot decide``. With no fresh seeds,
    ``cannot decide``: the discovery seeds picked the best of several candidates, so its ratio
    there is biased towards a cut and tests nothing (:func:`recipe_to_decide` says what would)."""
    if confirmed is None:
        return "cannot decide"
    ratio = confirmed[1].sd_ratio
    return claims.verdict_from_interval(ratio.low, ratio.high, threshold=1, above=False)


def recipe_to_decide(
    best: RecipeResult, confirmed: tuple[RecipeResult, RecipeResult] | None, fresh_seeds: int = 8
) -> str:
    """What would decide the recipe claim: a candidate named before the fact, trained beside
    today's on fresh seeds (none yet), or more of them (the ratio's interval still holds 1)."""
    if confirmed is not None:
        return (f"more fresh paired seeds under today's recipe and '{confirmed[1].recipe}' "
                f"({confirmed[1].n_seeds} now; python -m ropebook recipes --confirm "
                f"'{recipes.RECIPES[confirmed[1].recipe][0]}' --confirm-seeds N), until the "
                f"ratio's interval leaves 1")  # fmt: skip
    schedule = recipes.RECIPES[best.recipe][0]
    name = (f"'{schedule}', the schedule of the discovery seeds' best, '{best.recipe}'"
            if schedule != recipes.TODAY else f"a schedule other than today's (the discovery "
            f"seeds' best, '{best.recipe}', is today's schedule averaged)")  # fmt: skip
    return (f"a candidate named before its seeds are trained — {name} — trained beside today's "
            f"on {fresh_seeds} fresh paired seeds (python -m ropebook recipes --confirm SCHEDULE "
            f"--confirm-seeds {fresh_seeds}); its s.d. ratio to today's there decides")  # fmt: skip


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
    """The verdict (margin :data:`ropebook.recipes.MARGIN`), or where the comparison cannot
    decide, the bound it puts on the effect."""
    return c.bound if ordering_verdict(c) == "cannot decide" else ordering_verdict(c)


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


# ---------------------------------------------------------------- the kept study decides


def ordering_verdict(c: ablation.Comparison, margin: float | None = recipes.MARGIN) -> str:
    """The verdict on a Table 2 ordering "``c.a`` has the lower perplexity": ``held`` or ``not
    held`` where the paired interval excludes 0, ``bounded`` where it lies within ``± margin`` %
    (:data:`ropebook.recipes.MARGIN`, fixed before the data), else ``cannot decide`` (also with
    one seed: :meth:`~ropebook.analysis.ablation.Comparison.verdict`)."""
    return c.verdict(c.a, margin=margin)


def ordering_measured(c: ablation.Comparison, margin: float = recipes.MARGIN) -> str:
    """A Table 2 ordering's measured text: both perplexities, the paired difference against the
    margin and, where it cannot decide, the bound its interval puts on the effect."""
    bound = f" ({c.bound})" if ordering_verdict(c, margin) == "cannot decide" else ""
    return (
        f"{c.a} {c.a_est.format(2)} vs {c.b} {c.b_est.format(2)}; paired Δ "
        f"{c.difference.format(2)} (margin ±{margin:g} %){bound}"
    )


def reading(c: ablation.Comparison, margin: float | None = recipes.MARGIN) -> str:
    """:func:`ordering_verdict`, with the bound the interval puts on the effect where it
    cannot decide."""
    verdict = ordering_verdict(c, margin)
    return f"{verdict} ({c.bound})" if verdict == "cannot decide" else verdict


def seed_span(seeds: Sequence[int]) -> str:
    """``"0–63"`` for a run of consecutive seeds, else the list."""
    seeds = sorted(seeds)
    if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"{seeds[0]}–{seeds[-1]}"
    return ", ".join(map(str, seeds))


def study_label(results: dict[str, Any]) -> str:
    """What a verdict resting on a kept study is labelled with: device, date, commit, seeds."""
    return (
        f"{measured_text(results)}, commit {results['commit']}, "
        f"{len(results['seeds'])} seeds ({seed_span(results['seeds'])})"
    )


def spec_text(differences: dict[str, tuple[Any, Any]]) -> str:
    """How a build's models compare with a study's (:func:`ropebook.recipes.spec_differences`)."""
    if not differences:
        return "the very specs this build trains"
    named = list(differences.items())
    fields = "; ".join(
        f"{k} {_value(here)} here, {_value(there)} in the study" for k, (here, there) in named[:4]
    )
    fields += f"; and {len(named) - 4} more" if len(named) > 4 else ""
    if recipes.same_model(differences):
        return (f"the same models as this build's ({fields}: the study keeps a tail average in "
                f"its optimiser state, the weights trained are unchanged)")  # fmt: skip
    return f"other models than this build's ({fields}): the two results are not the same spec"


def _value(x: Any) -> str:
    return "unset" if x is None else repr(x)


def seeds_to_bound(c: ablation.Comparison, margin: float = recipes.MARGIN) -> int | None:
    """Fewest paired seeds whose interval, at the comparison's paired s.d. and mean (on the
    log scale of its test), would lie within ``± margin``: ``None`` without two paired seeds, or
    where the mean itself lies beyond the margin (no count bounds it there)."""
    from scipy import stats

    values = power.paired_log_percent(c)
    if len(values) < 2 or abs(float(np.mean(values))) >= margin:
        return None
    sd, room = float(np.std(values, ddof=1)), margin - abs(float(np.mean(values)))
    n = 2
    while stats.t.ppf(0.5 + c.difference.confidence / 2, n - 1) * sd / math.sqrt(n) > room:
        n += 1
        if n > 100_000:
            return None
    return n


def study_to_decide(c: ablation.Comparison, margin: float = recipes.MARGIN) -> str:
    """What would decide a kept study's comparison that it leaves open: the seeds that detect
    its measured difference, and those that would bound it within the margin."""
    bound = seeds_to_bound(c, margin)
    text = f"{c.difference.n} paired seeds give {c.difference.format(2)}; " + (
        f"about {bound} paired seeds at this s.d. and mean would bound it within ±{margin:g} %"
        if bound
        else f"its mean lies beyond ±{margin:g} %, so no seed count bounds it there"
    )
    detect = power.seeds_to_decide(power.paired_log_percent(c))
    if detect.needed:
        text += f"; {detect.needed} would detect the measured difference (80 % power)"
    return text + " (python -m ropebook recipes, tools/gpu_headline.sh)"


def study_record(
    study: ablation.Comparison,
    results: dict[str, Any],
    here: ablation.Comparison,
    differences: dict[str, tuple[Any, Any]],
    confidence: float = 0.95,
    margin: float = recipes.MARGIN,
) -> dict[str, Any]:
    """``ClaimSet.record``'s arguments for an ordering decided by a kept study (the strongest
    evidence), this build's result beside it: ``evidence`` (the study's verdict), ``measured``,
    ``seeds``, ``basis`` (the study's device, date, commit and seeds; how its specs compare
    with this build's; what it detects) and ``to_decide``."""
    here_text = (
        f"this build: {here.difference.format(2)}, {reading(here, margin)}"
        if here.testable else f"this build: {here.difference.format(2)}, no interval"
    )  # fmt: skip
    return {
        "evidence": ordering_verdict(study, margin),
        "measured": f"paired Δ {study.difference.format(2)} on the kept GPU study "
        f"(margin ±{margin:g} %); {here_text}",
        "seeds": study.difference.n,
        "basis": f"kept study on {study_label(results)}, {spec_text(differences)}; detects "
        f"{study.min_detectable(confidence):.2f} % (80 % power)",
        "to_decide": study_to_decide(study, margin),
    }


def noise_record(
    here: tuple[float, int],
    study: ablation.Comparison,
    results: dict[str, Any],
    differences: dict[str, tuple[Any, Any]],
    target: float = 1.0,
    confidence: float = 0.95,
) -> dict[str, Any] | None:
    """``ClaimSet.record``'s arguments for "the s.d. of paired differences is at most ``target``
    % of perplexity" decided by a kept study of the same models (its pair's s.d. over all its
    seeds, :func:`~ropebook.present.noise.sd_target`'s chi-square interval), with this build's
    ``here`` (its median s.d. in %, over its fewest paired seeds) beside; ``None`` where the
    study trained other models, whose noise says nothing of this build's (this build decides)."""
    from ropebook.present.noise import sd_target

    if not recipes.same_model(differences):
        return None
    sd, n = ablation.paired_sd_percent(study), study.difference.n
    verdict, (low, high) = sd_target(sd, n, target, confidence)
    here_sd, here_n = here
    here_verdict, (here_low, here_high) = sd_target(here_sd, here_n, target, confidence)
    beside = f"this build: median {here_sd:.2f} %" + (
        f" [{here_low:.2f}, {here_high:.2f}] over {here_n} paired seeds" if here_n >= 2 else ""
    )
    return {
        "evidence": verdict,
        "measured": f"s.d. of the paired differences {study.a} − {study.b} on the kept GPU study: "
        f"{sd:.2f} % of perplexity [{low:.2f}, {high:.2f}] (chi-square, {n - 1} d.f.; target "
        f"≤ {target:g} %); {beside}, {here_verdict}",
        "seeds": n,
        "basis": f"kept study on {study_label(results)}, {spec_text(differences)}",
        "to_decide": f"more paired seeds of the study ({n} now): the s.d.'s interval narrows as "
        f"√(seeds) until it leaves {target:g} % (OUT=data/results SEEDS=N bash "
        "tools/gpu_headline.sh matched)",
    }


def agreement_of(
    here: ablation.Comparison,
    here_seeds: Sequence[int],
    results: dict[str, Any],
    confidence: float = 0.95,
) -> studies.Agreement:
    """A build's comparison of the study's arms (on ``here_seeds``) against the kept study's
    today's recipe on the seeds the build did not train (independent samples):
    :func:`ropebook.studies.agreement`."""
    _, kept = recipes.arm_differences(results, "today", exclude=tuple(here_seeds))
    return studies.agreement(power.paired_log_percent(here) / 100, kept, confidence)


def agreement_verdict(
    agreement: studies.Agreement,
    differences: dict[str, tuple[Any, Any]],
    margin: float = recipes.MARGIN,
) -> str:
    """The finding "this build agrees with the kept study within ``± margin`` % of perplexity"
    (:data:`ropebook.recipes.MARGIN`, fixed before the data): the equivalence test
    :meth:`Agreement.equivalence` where the two trained the same models, ``uninformative here``
    where they did not (other specs: no reason to agree), and where an open test could not have
    shown agreement with these seeds even at a difference of 0 (:meth:`Agreement.
    can_show_agreement`: null by design; a disagreement is still ``not held``)."""
    verdict = agreement.equivalence(margin)
    if verdict == "cannot decide" and not agreement.can_show_agreement(margin):
        verdict = "uninformative here"
    return claims.informative_or(recipes.same_model(differences), verdict)


def agreement_to_decide(
    agreement: studies.Agreement,
    differences: dict[str, tuple[Any, Any]],
    margin: float = recipes.MARGIN,
) -> str:
    """What would decide an agreement the test leaves open: the profile that trains the study's
    models, two seeds a side, or the build's seeds whose Welch interval would fit the margin."""
    if not recipes.same_model(differences):
        return (
            "the cpu profile trains the study's models "
            "(python -m ropebook run p_rope_headline --profile cpu)"
        )
    if not agreement.testable:
        return (
            f"at least 2 paired seeds on each side ({agreement.n_here} in this build, "
            f"{agreement.n_kept} in the study)"
        )
    needed = agreement.seeds_to_agree(margin)
    if needed is None:
        return (
            f"seeds on both sides: at these s.d.s and this mean difference no count of this "
            f"build's seeds alone fits Welch's interval inside ±{margin:g} % (the mean difference "
            f"or the study's own spread takes up the margin), while seeds that exclude 0 would "
            f"show a disagreement"
        )
    return (
        f"about {needed} paired seeds in this build (it has {agreement.n_here}) at these s.d.s "
        f"and this mean difference would fit Welch's interval inside ±{margin:g} %"
    )


def _triple(x: tuple[float, float, float]) -> str:
    mean, low, high = x
    if not math.isfinite(low):
        return f"{mean:+.2f} % (one seed)"
    return f"{mean:+.2f} % [{low:+.2f}, {high:+.2f}]"


def agreement_text(agreement: studies.Agreement, margin: float = recipes.MARGIN) -> str:
    """The test in words, for a claim's ``measured`` and the page."""
    if not agreement.testable:
        return (f"this build {_triple(agreement.here)} on {agreement.n_here} seed(s) against the "
                f"study's {_triple(agreement.kept)}: no interval to compare")  # fmt: skip
    return (
        f"study − build {_triple(agreement.difference)} (Welch, p = {agreement.p_value:.2g}; "
        f"margin ±{margin:g} %); "
        f"this build {_triple(agreement.here)} on {agreement.n_here} seeds, the study "
        f"{_triple(agreement.kept)} on its {agreement.n_kept} other seeds; intervals "
        + ("overlap" if agreement.overlap else "do not overlap")
    )


def agreement_rows(
    agreements: dict[str, tuple[studies.Agreement, dict[str, tuple[Any, Any]]]],
    confidence: float = 0.95,
    margin: float = recipes.MARGIN,
) -> list[dict]:
    """One row per regime: this build's paired difference, the study's on the seeds the build
    did not train, their difference (Welch), whether they agree within ``± margin`` % (a
    disagreement shown, never hidden), and whether the specs match."""
    level = f"{confidence:.0%}"
    return [
        {
            "regime": regime,
            f"this build [{level}]": _triple(a.here),
            f"GPU study, other seeds [{level}]": _triple(a.kept),
            f"study − build [{level}]": _triple(a.difference) if a.testable else "—",
            "p": f"{a.p_value:.2g}" if a.testable else "—",
            f"agree within ±{margin:g} %": agreement_verdict(a, d, margin),
            "specs": "same models" if recipes.same_model(d) else "differ: " + ", ".join(d),
        }
        for regime, (a, d) in agreements.items()
    ]
