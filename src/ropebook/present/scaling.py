"""The rope_scaling chapter's tables and figures, from :mod:`ropebook.analysis.scaling`.

:func:`turns_chart` (which pairs each method changes), :func:`sweep_rows` and
:func:`sweep_chart` (perplexity by length), :func:`head_rows` (previous-token heads under each
method), :func:`accuracy_rows` (passkey accuracy). Figures are matplotlib; tables are records for
:func:`ropebook.plots.table`. Nothing here measures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ropebook import scaling
from ropebook.analysis import mean_interval
from ropebook.analysis.scaling import HeadSurvival, log_estimate


def turns_chart(rows: Sequence[dict], scale: float, *, width: float = 6.0):
    """Figure: turns over the original context per chunk (log scale) before scaling (black) and
    after each method, one panel per setting; dotted lines at YaRN's α = 1 and β = 32 turns."""
    import matplotlib.pyplot as plt

    settings = list(dict.fromkeys(r["setting"] for r in rows))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    fig, axes = plt.subplots(1, len(settings), figsize=(width, 2.9), sharey=False, squeeze=False)
    for ax, setting in zip(axes[0], settings, strict=True):
        mine = [r for r in rows if r["setting"] == setting]
        first = [r for r in mine if r["method"] == methods[0]]
        ax.plot([r["chunk"] for r in first], [r["turns before"] for r in first], "k-", lw=2.2,
                label="trained (before)")  # fmt: skip
        for i, name in enumerate(methods):
            pts = [r for r in mine if r["method"] == name]
            if all(abs(r["slowdown"] - 1) < 1e-12 for r in pts):
                continue  # "plain RoPE": the black line
            ax.plot([r["chunk"] for r in pts], [r["turns after"] for r in pts], lw=1.2,
                    ls=("-", "--", "-.", ":")[i % 4], label=name)  # fmt: skip
        for level in (scaling.YARN_ALPHA, scaling.YARN_BETA):
            ax.axhline(level, color="grey", lw=0.7, ls=":")
        ax.set_yscale("log")
        ax.set_title(setting, fontsize=7)
        ax.set_xlabel("chunk k (fastest → slowest)", fontsize=7)
        ax.tick_params(labelsize=6)
    axes[0][0].set_ylabel("turns over original context L", fontsize=7)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=6, frameon=False)
    fig.suptitle(f"Cycles per original context before and after scaling by s = {scale:g}",
                 fontsize=9)  # fmt: skip
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    plt.close(fig)  # shown once, by the notebook's display of the returned figure
    return fig


def sweep_rows(
    losses: Mapping[tuple[str, str, int], Sequence[float]],
    labels: Mapping[tuple[str, str], str],
    factors: Sequence[int],
    context: int,
    confidence: float = 0.95,
) -> list[dict[str, str]]:
    """Table: one row per (model, method) of ``labels``, perplexity ``[interval]`` per length."""
    rows = []
    for (name, method), label in labels.items():
        row = {"model · method": label}
        for f in factors:
            row[f"{f}× ({f * context})"] = log_estimate(losses[name, method, f], confidence).text()
        rows.append(row)
    return rows


def sweep_chart(
    losses: Mapping[tuple[str, str, int], Sequence[float]],
    labels: Mapping[tuple[str, str], str],
    factors: Sequence[int],
    confidence: float = 0.95,
    *,
    title: str,
    dashed: Sequence[tuple[str, str]] | None = None,
    width: float = 6.0,
):
    """Figure: perplexity (log) against the length in multiples of the training context (log 2),
    one line per (model, method) with its interval over seeds as a band. With ``dashed``, those
    keys are drawn dashed and the others solid; otherwise line styles cycle."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, ax = plt.subplots(figsize=(width, 3.4))
    for i, ((name, method), label) in enumerate(labels.items()):
        ests = [log_estimate(losses[name, method, f], confidence).ppl for f in factors]
        mean, low, high = (np.array(v) for v in zip(*ests, strict=True))
        if dashed is None:
            style = ("-", "--", "-.", ":")[i % 4]
        else:
            style = "--" if (name, method) in dashed else "-"
        (line,) = ax.plot(factors, mean, style, marker="o", ms=3, lw=1.3, label=label)
        ax.fill_between(factors, low, high, color=line.get_color(), alpha=0.15, lw=0)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)
    ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.set_xticks(list(factors), [f"{f}×" for f in factors])
    ax.axvline(1, color="grey", lw=0.7, ls=":")
    ax.set_xlabel("evaluation length (multiples of the training context)")
    ax.set_ylabel("perplexity (log scale)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6, ncol=2, frameon=False)
    fig.tight_layout()
    plt.close(fig)  # shown once, by the notebook's display of the returned figure
    return fig


def head_rows(
    survival: HeadSurvival, labels: Mapping[str, str], confidence: float = 0.95
) -> list[dict[str, str]]:
    """Table: per method, the previous-token heads' mean attention on the previous token, the
    share still above the threshold and how far the method interpolates the pairs they use."""

    def fmt(values: Sequence[float], pct: bool = False) -> str:
        if not values:
            return "no heads"
        mean, low, high = mean_interval(values, confidence)
        k = 100 if pct else 1
        unit = " %" if pct else ""
        if len(values) < 2:
            return f"{k * mean:.3g}{unit} (1 seed)"
        return f"{k * mean:.3g}{unit} [{k * low:.3g}, {k * high:.3g}]"

    return [
        {
            "method": labels.get(method, method),
            "attention on previous token": fmt(survival.scores[method]),
            f"heads still ≥ {survival.threshold}": fmt(survival.survived[method], pct=True),
            "interpolation of their pairs": fmt(survival.share[method], pct=True),
        }
        for method in survival.scores
    ]


def accuracy_rows(
    accuracy: Mapping[tuple[str, str, int], Sequence[float]],
    labels: Mapping[tuple[str, str], str],
    factors: Sequence[int],
    context: int,
    confidence: float = 0.95,
) -> list[dict[str, str]]:
    """Table: passkey accuracy (%) per (model, method) and length, mean [interval] over seeds
    (clipped to [0, 100])."""
    rows = []
    for (name, method), label in labels.items():
        row = {"model · method": label}
        for f in factors:
            values = accuracy[name, method, f]
            mean, low, high = mean_interval(values, confidence)
            cell = f"{100 * mean:.0f}"
            if len(values) > 1:
                cell += f" [{100 * max(low, 0):.0f}, {100 * min(high, 1):.0f}]"
            row[f"{f}× ({f * context})"] = cell
        rows.append(row)
    return rows


def change_rows(
    changes: Mapping[str, Mapping[int, object]],
    lowest: Mapping[int, str],
    context: int,
    digits: int = 1,
) -> list[dict[str, str]]:
    """Table: one row per length factor, the row with the lowest perplexity there (``lowest``)
    and each paired :class:`~ropebook.analysis.scaling.Change` (``changes``: column -> factor ->
    change) as its text; a factor a column lacks reads —."""
    return [
        {"length": f"{f}× ({f * context})", "lowest perplexity": best}
        | {column: by[f].text(digits) if f in by else "—" for column, by in changes.items()}
        for f, best in lowest.items()
    ]


def change_result(change):
    """:class:`~ropebook.stats.power.SeedsToDecide` of a paired
    :class:`~ropebook.analysis.scaling.Change` against 0: a perplexity change (``%``) on the
    log scale its interval was formed on (100 × Δloss), an accuracy change (``pp``) as it is."""
    from ropebook.stats import power

    def log(x: float) -> float:
        return 100 * float(np.log1p(x / 100)) if change.unit == "%" else x

    mean, low, high = (log(x) for x in (change.percent, change.low, change.high))
    return power.seeds_to_decide_interval(mean, low, high, change.n)


def changes_to_decide(changes: Mapping[str, object], what: str = "its measured change") -> str:
    """What would decide a claim over several paired changes (e.g. one per length, all needed):
    the seeds that would resolve the hardest of them (:func:`ropebook.present.decide.hardest`)."""
    from ropebook.present import decide

    unit = next(iter(changes.values())).unit
    parts = {label: change_result(c) for label, c in changes.items()}
    return decide.hardest_to_decide(parts, unit=unit, what=what, samples="paired seeds")
