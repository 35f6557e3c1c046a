"""Training dynamics shown: the model description, trend tables and charts of
:mod:`ropebook.analysis.dynamics` trajectories.

:func:`describe` (one paragraph on the models), :func:`trend_table` (one row per trend test),
:func:`control_table` (one row per RoPE − NoPE comparison) and :func:`control_claim` (what a
claim decided by such comparisons records),
:func:`trajectory_chart` and its four per-chapter titles (one statistic along training, log
tokens on x), :func:`pair_heatmap` (per-pair norm shares snapshot by snapshot).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ropebook.analysis.dynamics import ControlledTrend, Trajectory, Trend, snapshots


def describe(models: dict[str, list], regime: str) -> str:
    """One paragraph: the models' spectrum against Gemma 7B's, snapshots, tokens and seeds."""
    from ropebook import rope, zoo

    first = next(iter(models.values()))[0]
    c = first.config
    turns = float(rope.turns_per_context(c.head_dim, c.rope_base, c.context)[-1])
    steps = [s.step for s in snapshots(first)]
    n_seeds = min(len(ms) for ms in models.values())
    text = (
        f"regime {regime!r}: {', '.join(models)}; {c.n_layers} layers x {c.n_heads} heads of "
        f"head_dim {c.head_dim} ({c.head_dim // 2} pairs), theta = {c.rope_base:g}, context "
        f"{c.context}: the slowest pair turns {turns:.2f} times over the context "
        f"({zoo.REFERENCE_MODEL['name']} over {zoo.REFERENCE_MODEL['context']:,} tokens: "
        f"{zoo.reference_slowest_turns():.2f}); snapshots at steps {steps} "
        f"({first.tokens_seen:,} tokens at the end); {n_seeds} seed{'s' if n_seeds != 1 else ''}"
    )
    if n_seeds < 2:
        text += (
            " — with one seed there is nothing to pair over, so every trend reads 'cannot decide'"
        )
    return text


def trend_table(trends: Sequence[Trend], digits: int = 3) -> list[dict]:
    """One row per trend: model, statistic, untrained, last snapshot, change (interval), ρ, the
    minimum change the seeds could detect (80% power), verdict."""
    return [
        {
            "model": t.model, "statistic": t.statistic, "untrained": round(t.untrained, digits),
            "last snapshot": round(t.final, digits),
            "change": f"{t.change.mean:+.{digits}f}" + (
                f" [{t.change.low:+.{digits}f}, {t.change.high:+.{digits}f}]" if t.n_seeds > 1
                else " (1 seed)"
            ),
            "Spearman ρ (mean over seeds)": round(float(np.mean(t.spearman)), 2),
            "min. detectable change": "— (1 seed)" if t.mde is None else f"{t.mde:.{digits}f}",
            "verdict": t.verdict,
        }
        for t in trends
    ]  # fmt: skip


def control_table(controlled: Sequence[ControlledTrend], digits: int = 3) -> list[dict]:
    """One row per controlled trend: the statistic, each model's change over training (mean over
    the paired seeds), their difference with its interval, the minimum difference the seeds could
    detect (80% power) and the verdict."""
    rows = []
    for c in controlled:
        d = c.difference
        interval = f" [{d.low:+.{digits}f}, {d.high:+.{digits}f}]" if c.n_seeds > 1 else " (1 seed)"
        rows.append(
            {
                "statistic": c.statistic,
                f"{c.model} change": round(float(np.mean(c.model_changes)), digits),
                f"{c.control} change": round(float(np.mean(c.control_changes)), digits),
                f"{c.model} − {c.control}": f"{d.mean:+.{digits}f}{interval}",
                "min. detectable difference": "— (1 seed)"
                if c.mde is None
                else f"{c.mde:.{digits}f}",
                "verdict": c.verdict,
            }
        )
    return rows


def controlled_to_decide(controlled: ControlledTrend, unit: str = "") -> str:
    """What would decide a controlled trend: the paired seeds whose difference of changes
    (model − control) detects the measured one."""
    from ropebook.present import decide
    from ropebook.stats import power

    return decide.seeds_text(
        power.seeds_to_decide(controlled.changes),
        unit=unit,
        what=f"the measured {controlled.model} − {controlled.control} difference in the "
        f"{controlled.statistic} change",
        samples="paired seeds",
        sd_name="s.d. of the difference over seeds",
    )


def control_claim(
    controlled: Sequence[ControlledTrend], trends: Sequence[Trend], *, control: str = "nope",
    regime: str = "flagship",
) -> dict:  # fmt: skip
    """The fields of a claim decided by RoPE − NoPE comparisons (:func:`ropebook.analysis.dynamics
    .controlled_trend`): ``evidence`` (their combined verdict, or ``not testable here`` without
    the control), ``measured`` (each comparison, then the model's own trend beside it),
    ``interval``, ``seeds``, ``basis`` and ``to_decide`` — to pass to ``ClaimSet.record``."""
    from ropebook.analysis import dynamics as dy

    alone = "; ".join(f"alone: {t.measured()}" for t in trends)
    if not controlled:
        return {
            "evidence": "not testable here",
            "measured": f"no {control} control in the {regime} regime to set against; {alone}",
            "seeds": trends[0].n_seeds if trends else None,
            "to_decide": f"a {control} control trained in the {regime} regime with the same "
            f"seeds and snapshots",
        }
    return {
        "evidence": dy.combined_verdict(controlled),
        "measured": "; ".join(c.measured() for c in controlled) + f" — {alone}",
        "interval": "; ".join(f"{c.statistic}: {c.difference.text}" for c in controlled),
        "seeds": controlled[0].n_seeds,
        "basis": controlled[0].basis(),
        "to_decide": "; ".join(controlled_to_decide(c) for c in controlled),
    }


def chart_rows(trajectories: Sequence[Trajectory]) -> tuple[list[dict], list[dict], list[dict]]:
    """``(points, summary, untrained)`` records: every (model, seed, snapshot after step 0);
    mean, min and max over seeds per snapshot; the step-0 mean per model."""
    points, summary, untrained = [], [], []
    for tr in trajectories:
        values = np.asarray(tr.values, np.float64)
        for j in range(1, len(tr.tokens)):
            column = values[:, j]
            summary.append(
                {
                    "model": tr.model, "tokens seen": int(tr.tokens[j]), "step": int(tr.steps[j]),
                    "mean": float(column.mean()), "low": float(column.min()),
                    "high": float(column.max()),
                }
            )  # fmt: skip
            points += [
                {"model": tr.model, "seed": s, "tokens seen": int(tr.tokens[j]), "value": float(v)}
                for s, v in zip(tr.seeds, column, strict=True)
            ]
        untrained.append({"model": tr.model, "untrained": float(values[:, 0].mean())})
    return points, summary, untrained


def _panel(trajectories, y_title, reference_label, models, width, height):
    import altair as alt

    points, summary, untrained = chart_rows(trajectories)
    x = alt.X(
        "tokens seen:Q", scale=alt.Scale(type="log", nice=False), title="tokens seen (log scale)"
    )
    color = alt.Color(
        "model:N", title="model", scale=alt.Scale(domain=list(models)),
        legend=alt.Legend(orient="bottom"),
    )  # fmt: skip
    base = alt.Chart(alt.InlineData(values=summary))
    band = base.mark_area(opacity=0.2).encode(x=x, y="low:Q", y2="high:Q", color=color)
    line = base.mark_line(point=True).encode(
        x=x, y=alt.Y("mean:Q", title=y_title), color=color,
        tooltip=["model:N", "step:Q", alt.Tooltip("tokens seen:Q", format=","),
                 alt.Tooltip("mean:Q", format=".3f")],
    )  # fmt: skip
    dots = (
        alt.Chart(alt.InlineData(values=points))
        .mark_circle(size=18, opacity=0.5)
        .encode(x=x, y="value:Q", color=color, tooltip=["model:N", "seed:O", "value:Q"])
    )
    rules = (
        alt.Chart(alt.InlineData(values=untrained))
        .mark_rule(strokeDash=[5, 3])
        .encode(y="untrained:Q", color=color, tooltip=["model:N", "untrained:Q"])
    )
    layers = [line, band, dots, rules]  # the line first: the legend shows its symbol
    refs = sorted({tr.reference for tr in trajectories if tr.reference is not None})
    if refs:
        ref_rows = [{"reference": r, "label": reference_label or "reference"} for r in refs]
        layers.append(
            alt.Chart(alt.InlineData(values=ref_rows))
            .mark_rule(color="gray", strokeWidth=2)
            .encode(y="reference:Q", tooltip=["label:N", "reference:Q"])
        )
    return alt.layer(*layers).properties(width=width, height=height)


def trajectory_chart(
    trajectories: Sequence[Trajectory],
    *,
    title: str,
    y_title: str,
    reference_label: str | None = None,
    width: int = 460,
    height: int = 200,
):
    """Altair: per model, the mean over seeds (line) and the range over seeds (band) against
    tokens seen on a log axis, every seed as a dot, the untrained model (step 0) as a dashed rule
    and an optional fixed reference (grey rule, e.g. the isotropic share). One panel per
    statistic, stacked, with a shared colour per model. Width ≤ 680 px with the axis titles.
    """
    import altair as alt

    if width > 520:
        raise ValueError("width must be at most 520 px (axis titles take the rest of 680)")
    models = list(dict.fromkeys(t.model for t in trajectories))
    statistics = list(dict.fromkeys(t.statistic for t in trajectories))
    subtitle = "dashed: untrained model (step 0); band: range over seeds"
    if reference_label:
        subtitle += f"; grey: {reference_label}"
    panels = [
        _panel(
            [t for t in trajectories if t.statistic == stat],
            y_title if len(statistics) == 1 else [stat, y_title],
            reference_label,
            models,
            width,
            height if len(statistics) == 1 else 150,
        )  # fmt: skip
        for stat in statistics
    ]
    chart = panels[0] if len(panels) == 1 else alt.vconcat(*panels).resolve_scale(color="shared")
    return chart.properties(title=alt.Title(title, subtitle=subtitle))


def norm_share_chart(trajectories: Sequence[Trajectory]):
    """:func:`trajectory_chart` of the slowest pairs' norm share against ``1 / pairs``."""
    return trajectory_chart(
        trajectories,
        title="Norm share of one slowest-quarter RoPE pair over training",
        y_title="share of q/k chunk norm per pair",
        reference_label="isotropic: 1 / number of pairs",
    )


def decay_chart(trajectories: Sequence[Trajectory]):
    """:func:`trajectory_chart` of the least-decaying layer's decay contrast (0: no decay)."""
    return trajectory_chart(
        trajectories,
        title="Decay of the least-decaying layer over training",
        y_title="(short − long) / mean |activation|",
        reference_label="no decay",
    )


def positional_chart(trajectories: Sequence[Trajectory]):
    """:func:`trajectory_chart` of the strongest heads' previous-token, diagonal and induction
    scores (one series per model and statistic)."""
    return trajectory_chart(
        trajectories,
        title="Strongest positional and induction heads over training",
        y_title="mean attention on the target key",
    )


def apostrophe_chart(trajectories: Sequence[Trajectory]):
    """:func:`trajectory_chart` of the held-out apostrophe lift (0: a purely positional head)."""
    return trajectory_chart(
        trajectories,
        title="Apostrophe lift of the selected head over training",
        y_title="attention lift on a previous apostrophe",
        reference_label="no lift",
    )


def pair_heatmap(trajectories: Sequence[Trajectory], *, width: int = 230, height: int = 200):
    """Altair heatmaps, side by side, of descriptive ``[seeds, S, K]`` trajectories (e.g.
    ``"queries per pair"`` of :func:`norm_share_measure`): one column per snapshot (step 0 =
    untrained first), one row per pair (fastest at the top), colour = mean over seeds of the
    relative share (1 = isotropic, diverging around it)."""
    import altair as alt

    panels = []
    for tr in trajectories:
        values = np.asarray(tr.values, np.float64)
        if values.ndim != 3:
            raise ValueError(f"{tr.statistic!r}: pair_heatmap needs [seeds, snapshots, pairs]")
        mean = values.mean(0)
        rows = [
            {
                "snapshot": f"{int(tr.tokens[j]):,}", "order": j, "pair": k,
                "relative share": float(mean[j, k]), "step": int(tr.steps[j]),
            }
            for j in range(mean.shape[0]) for k in range(mean.shape[1])
        ]  # fmt: skip
        order = [f"{int(t):,}" for t in tr.tokens]
        panels.append(
            alt.Chart(alt.InlineData(values=rows), title=f"{tr.model}: {tr.statistic}")
            .mark_rect()
            .encode(
                x=alt.X("snapshot:O", sort=order, title="tokens seen (snapshot; 0 = untrained)"),
                y=alt.Y("pair:O", title="RoPE pair (0 = fastest)"),
                color=alt.Color(
                    "relative share:Q",
                    title=["share × pairs", "(1 = isotropic)"],
                    scale=alt.Scale(scheme="blueorange", domainMid=1.0),
                ),
                tooltip=[
                    "step:Q",
                    "snapshot:N",
                    "pair:O",
                    alt.Tooltip("relative share:Q", format=".2f"),
                ],
            )  # fmt: skip
            .properties(width=width, height=height)
        )
    return alt.hconcat(*panels).properties(
        title=alt.Title("Where the query and key norm sits, pair by pair, over training")
    )
