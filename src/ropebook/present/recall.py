"""Charts and tables of the recall chapter, from the numbers of :mod:`ropebook.analysis.recall`.

Each function takes plain rows (lists of dicts) or arrays and returns an Altair chart, table
rows, or the values (numbers and short phrases) the chapter glues into its prose; nothing here
trains or scores a model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import altair as alt
import numpy as np

from ropebook.analysis import mean_interval
from ropebook.analysis import recall as rc


def _data(rows: Sequence[dict]) -> alt.InlineData:
    return alt.InlineData(values=[dict(r) for r in rows])


def learning_rows(curves: Mapping[tuple[str, str], Sequence]) -> list[dict]:
    """``(task, encoding) -> [Learning per seed]`` as chart rows (``learnt``: whether that seed
    reached the criterion, for its line's style)."""
    return [
        {"task": task, "encoding": enc, "seed": i, "step": int(s), "accuracy": float(a),
         "learnt": "learnt" if run.learnt else "not learnt"}
        for (task, enc), runs in curves.items()
        for i, run in enumerate(runs)
        for s, a in zip(run.steps, run.accuracy, strict=True)
    ]  # fmt: skip


def learning_chart(rows: Sequence[dict], criterion: float, width: int = 230):
    """Accuracy at 1× against training step: one panel per arm (row) and task (column), one
    line per seed (dashed: a seed that never reached the criterion); the grey dashed line is the
    criterion. Every arm trains the same steps, so the panels share their axes."""
    chart = alt.Chart(_data(rows))
    lines = chart.mark_line(opacity=0.8).encode(
        x=alt.X("step:Q", title="training step"),
        y=alt.Y("accuracy:Q", title="accuracy at 1×", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("seed:N", title="seed"),
        strokeDash=alt.StrokeDash("learnt:N", title=None, sort=["learnt", "not learnt"]),
        tooltip=["encoding:N", "seed:N", "step:Q", alt.Tooltip("accuracy:Q", format=".3f")],
    )
    rule = chart.mark_rule(strokeDash=[4, 3], color="gray").encode(y=alt.datum(criterion))
    order = list(dict.fromkeys(r["encoding"] for r in rows))
    return (
        alt.layer(lines, rule)
        .properties(width=width, height=70)
        .facet(
            row=alt.Row("encoding:N", title=None, sort=order, header=alt.Header(labelAngle=0)),
            column=alt.Column("task:N", title=None),
        )
        .properties(title="Learning curves: accuracy at the training length, every seed")
    )


def interval_rows(values: Mapping[str, np.ndarray], edges, confidence: float = 0.95) -> list[dict]:
    """``encoding -> [seeds, bins]`` as rows of mean and interval per bin (empty bins left out)."""
    rows = []
    for enc, array in values.items():
        array = np.asarray(array, np.float64)
        for j in range(array.shape[1]):
            column = array[:, j][np.isfinite(array[:, j])]
            if column.size == 0:
                continue
            mean, low, high = mean_interval(column, confidence)
            rows.append(
                {"encoding": enc, "from": int(edges[j]), "to": int(edges[j + 1]),
                 "mean": mean, "low": max(low, 0.0), "high": min(high, 1.0), "seeds": column.size}
            )  # fmt: skip
    return rows


def bin_chart(rows: Sequence[dict], *, x_title: str, title: str, context: int, width: int = 420):
    """Accuracy (mean and interval over seeds) per bin of distance or position, one line per
    encoding, log-scaled axis at each bin's upper edge; the dashed line marks the training
    context."""
    base = alt.Chart(_data(rows)).encode(
        x=alt.X("to:Q", title=x_title, scale=alt.Scale(type="log", base=2)),
        color=alt.Color("encoding:N", title="encoding"),
    )
    y = alt.Y("mean:Q", title="answer accuracy (share)", scale=alt.Scale(domain=[0, 1]))
    context_rule = (
        alt.Chart(alt.InlineData(values=[{"x": context}]))
        .mark_rule(strokeDash=[4, 3], color="gray")
        .encode(x="x:Q")
    )
    return alt.layer(
        base.mark_line(point=True).encode(
            y=y,
            tooltip=[
                "encoding:N",
                "from:Q",
                "to:Q",
                alt.Tooltip("mean:Q", format=".3f"),
                "seeds:Q",
            ],
        ),  # fmt: skip
        base.mark_errorbar().encode(y=alt.Y("low:Q", title=""), y2="high:Q"),
        context_rule,
    ).properties(width=width, height=220, title=title)


def passkey_rows(
    grids: Mapping[str, np.ndarray], lengths: Sequence[int], depths: Sequence[float]
) -> list[dict]:
    """``encoding -> [seeds, lengths, depths]`` as mean-over-seeds heat-map rows."""
    return [
        {"encoding": enc, "length": int(n), "depth": f"{100 * d:.0f} %",
         "accuracy": float(np.mean(g[:, j, k]))}
        for enc, g in grids.items()
        for j, n in enumerate(lengths)
        for k, d in enumerate(depths)
    ]  # fmt: skip


def passkey_chart(rows: Sequence[dict], columns: int = 4):
    """Heat map of passkey accuracy: length (tokens) across, needle depth down, one panel per
    encoding."""
    depths = list(dict.fromkeys(r["depth"] for r in rows))
    return (
        alt.Chart(_data(rows))
        .mark_rect()
        .encode(
            x=alt.X("length:O", title="sequence length (tokens)"),
            y=alt.Y("depth:O", title="needle depth", sort=depths),
            color=alt.Color(
                "accuracy:Q", title="accuracy", scale=alt.Scale(domain=[0, 1], scheme="viridis")
            ),
            tooltip=["encoding:N", "length:O", "depth:O", alt.Tooltip("accuracy:Q", format=".2f")],
        )
        .properties(width=110, height=110)
        .facet(facet=alt.Facet("encoding:N", title=None), columns=columns)
        .properties(title="Passkey accuracy by needle depth and length (mean over seeds)")
    )


def probe_rows(probes: Mapping[tuple[str, str], Mapping[str, np.ndarray]]) -> list[dict]:
    """``(task, encoding) -> condition -> [seeds] Δ accuracy`` as heat-map rows (mean)."""
    return [
        {"task": task, "encoding": enc, "planes removed": c, "Δ accuracy": float(np.mean(v))}
        for (task, enc), conditions in probes.items()
        for c, v in conditions.items()
        if c != "intact"
    ]


def probe_chart(rows: Sequence[dict]):
    """Heat map of the accuracy change when planes are removed: condition across (quarters, then
    single planes fastest to slowest), model down, one panel per task."""
    order = list(dict.fromkeys(r["planes removed"] for r in rows))
    return (
        alt.Chart(_data(rows))
        .mark_rect()
        .encode(
            x=alt.X("planes removed:N", sort=order, title="planes removed (plane 0 = fastest)"),
            y=alt.Y("encoding:N", title=None),
            color=alt.Color(
                "Δ accuracy:Q",
                title="Δ accuracy",
                scale=alt.Scale(domain=[-1, 1], scheme="redblue"),
            ),  # fmt: skip
            tooltip=[
                "task:N",
                "encoding:N",
                "planes removed:N",
                alt.Tooltip("Δ accuracy:Q", format="+.3f"),
            ],
        )  # fmt: skip
        .properties(width=440, height=alt.Step(16))
        .facet(row=alt.Row("task:N", title=None))
        .properties(title="Accuracy change at 1× when RoPE planes are removed (mean over seeds)")
    )


def extension_rows(
    values: Mapping[tuple[str, str], np.ndarray], factors: Sequence[int]
) -> list[dict]:
    """``(what, method label) -> [seeds, factors]`` accuracy as rows of mean and interval."""
    rows = []
    for (what, label), array in values.items():
        for j, f in enumerate(factors):
            mean, low, high = mean_interval(np.asarray(array)[:, j])
            rows.append({"test": what, "method": label, "factor": int(f), "mean": mean,
                         "low": max(low, 0.0), "high": min(high, 1.0)})  # fmt: skip
    return rows


def extension_chart(rows: Sequence[dict], width: int = 260):
    """Accuracy against length (× the training context) per context-extension method, one
    panel per test (passkey, recall), mean and interval over seeds."""
    base = alt.Chart().encode(
        x=alt.X("factor:Q", title="length (× training context)", scale=alt.Scale(type="log", base=2)),
        color=alt.Color("method:N", title="method"),
    )  # fmt: skip
    layers = alt.layer(
        base.mark_line(point=True).encode(
            y=alt.Y("mean:Q", title="accuracy (share)", scale=alt.Scale(domain=[0, 1])),
            tooltip=["method:N", "factor:Q", alt.Tooltip("mean:Q", format=".3f")],
        ),
        base.mark_errorbar().encode(y="low:Q", y2="high:Q"),
        data=_data(rows),
    )
    return (
        layers.properties(width=width, height=200)
        .facet(column=alt.Column("test:N", title=None))
        .properties(title="Context extension on the recall-trained RoPE models")
    )


# ---------------------------------------------------------------- tables and glued values


def _steps(learnt_at: int | None) -> str:
    return "—" if learnt_at is None else str(learnt_at)


def share_text(runs: Sequence, confidence: float = 0.95) -> str:
    """The seeds of an arm that learnt: ``2/3 (67 % [21, 94])``, the interval Wilson's."""
    share, low, high = rc.learnt_share(runs, confidence)
    learnt = sum(r.learnt for r in runs)
    return f"{learnt}/{len(runs)} ({100 * share:.0f} % [{100 * low:.0f}, {100 * high:.0f}])"


def learning_table(
    learning: Mapping, labels: Mapping, task_labels: Mapping, confidence: float = 0.95
) -> list[dict]:
    """One row per (task, encoding): the seeds that learnt with the share's interval, steps to
    the criterion and accuracy at the end per seed (every seed counts at the latter, learnt or
    not), the steps trained (the same for every arm), mean training seconds per model and
    training tokens per second."""
    rows = []
    for (task, name), runs in learning.items():
        trained = sorted({int(r.steps[-1]) for r in runs if r.steps.size})
        rows.append(
            {
                "task": task_labels[task], "encoding": labels[name],
                f"learnt ({100 * confidence:g} % interval)": share_text(runs, confidence),
                "steps to learn (per seed)": ", ".join(_steps(r.learnt_at) for r in runs),
                "accuracy at the end (%, per seed)": ", ".join(
                    f"{100 * r.final:.1f}" for r in runs),
                "steps trained": ", ".join(map(str, trained)),
                "seconds per model": f"{np.mean([r.seconds for r in runs]):.0f}",
                "tokens/s": f"{np.mean([r.tokens_per_s for r in runs]):,.0f}",
            }
        )  # fmt: skip
    return rows


def median_steps(learning: Mapping) -> dict[tuple[str, str], str]:
    """``(task, encoding) -> `` the median steps to the criterion over the seeds that learnt (a
    reading of speed: the others are counted by :func:`share_text`), or ``never (in N steps)``
    where no seed learnt (N: the steps it trained), for the chapter to glue."""
    phrases = {}
    for key, runs in learning.items():
        steps = [r.learnt_at for r in runs if r.learnt]
        phrases[key] = (
            str(int(np.median(steps))) if steps else f"never (in {int(runs[0].steps[-1])} steps)"
        )
    return phrases


def paired_values(difference, scale: float = 100.0) -> dict[str, str | int]:
    """A paired difference (:class:`ropebook.analysis.recall.Paired`, or ``None`` where none
    was measured) as the values the chapter glues: ``mean`` (signed, one decimal), ``interval``
    (``[low, high]``), ``seeds`` and ``detectable`` (the smallest detectable difference), in
    ``scale`` units; ``—`` for a mean without a seed and for an interval or a detectable
    difference with fewer than two seeds."""
    n = 0 if difference is None else difference.n
    values: dict[str, str | int] = {"mean": "—", "interval": "—", "seeds": n, "detectable": "—"}
    if n >= 1:
        values["mean"] = f"{scale * difference.estimate.mean:+.1f}"
    if n >= 2:
        e = difference.estimate
        values["interval"] = f"[{scale * e.low:+.1f}, {scale * e.high:+.1f}]"
        values["detectable"] = f"{scale * difference.mde:.1f}"
    return values


def paired_to_decide(
    difference, threshold: float = 0.0, *, steps: int, what: str = "its measured difference"
) -> str:
    """What would decide a paired accuracy contrast (:class:`ropebook.analysis.recall.Paired`,
    shares; the text in points): scored seeds of both models when there is none, else the paired
    seeds that detect its distance from ``threshold`` (a share)."""
    from ropebook.present import decide

    if difference is None or difference.n == 0:
        return f"seeds of both models, each trained {steps} steps and scored (none here)"
    return decide.interval_to_decide(
        difference.estimate, threshold, unit="points", scale=100.0, what=what,
        samples="paired seeds",
    )  # fmt: skip


def _cell(values, confidence: float) -> str:
    values = np.asarray(values, np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return "—"
    mean, low, high = mean_interval(values, confidence)
    if values.size < 2:
        return f"{100 * mean:.0f}"
    # an accuracy cannot leave [0, 100] %: the t-interval is clipped to it, as rope_scaling does
    return f"{100 * mean:.0f} [{100 * max(low, 0):.0f}, {100 * min(high, 1):.0f}]"


def sweep_table(sweeps: Mapping, labels: Mapping, context: int, confidence: float) -> list[dict]:
    """Accuracy (%) at each length, mean [interval] over every seed (learnt or not: ``learnt``
    counts those that reached the criterion), then the accuracy on answers beyond the training
    context at the longest length."""
    rows = []
    for name, s in sweeps.items():
        row = {"encoding": labels[name], "learnt": f"{sum(s.learnt)}/{len(s.learnt)}"}
        for j, f in enumerate(s.factors):
            row[f"{f}× ({f * context})"] = _cell(s.overall[:, j], confidence)
        row[f"beyond {context}, at {s.factors[-1]}×"] = _cell(s.beyond[:, -1], confidence)
        rows.append(row)
    return rows


def probe_table(probes: Mapping, labels: Mapping, task_labels: Mapping) -> list[dict]:
    """Per (task, encoding): intact accuracy and the mean change (points) for each quarter."""
    rows = []
    for (task, name), p in probes.items():
        row = {"task": task_labels[task], "encoding": labels[name],
               "intact (%)": f"{100 * np.mean(p['intact']):.0f}"}  # fmt: skip
        for c in ("fastest", "slowest", "random"):
            row[f"Δ {c} quarter (points)"] = f"{100 * np.mean(p[c]):+.1f}"
        rows.append(row)
    return rows


def extension_table(values: Mapping, factors: Sequence[int], context: int, confidence: float):
    """Accuracy (%) per (test, method) and length, mean [interval] over seeds."""
    return [
        {"test": what, "method": label,
         **{f"{f}× ({f * context})": _cell(np.asarray(a)[:, j], confidence)
            for j, f in enumerate(factors)}}
        for (what, label), a in values.items()
    ]  # fmt: skip
