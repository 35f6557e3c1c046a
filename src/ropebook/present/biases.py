"""The pe_zoo chapter's tables and figures, from :mod:`ropebook.analysis.biases`.

One function per table or figure of ``chapters/pe_zoo.py``: the redrawn CABLE head grids and
bias curves (matplotlib), the colour-range, Toeplitz, score, reach, perplexity and ordering
tables (records for :func:`ropebook.plots.table`), and the two length-extrapolation charts
(Altair). Nothing here measures.
"""

from __future__ import annotations

import math

import numpy as np

from ropebook.analysis.biases import (
    CABLE_FIG,
    CABLE_HEADS,
    CABLE_RATIO,
    CABLE_TABLE4,
    CABLE_TICKS,
    LABELS,
    block_pool,
    causal_only,
    panel_range,
)


def head_grid(stack, title: str, colour_label: str, max_image: int = 256):
    """One panel per head (rows of 3, or 2), a colour bar each, blank above the diagonal, as in
    the CABLE appendix figures; panels are mean-pooled to at most ``max_image`` pixels a side."""
    import matplotlib.pyplot as plt

    heads = stack.shape[0]
    ncols = 3 if heads % 3 == 0 else 2 if heads % 2 == 0 else 1
    nrows = math.ceil(heads / ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(3.3 * ncols, 2.75 * nrows), dpi=72, squeeze=False
    )
    t = stack.shape[-1]
    cmap = plt.get_cmap("viridis").with_extremes(bad="white")
    for h, ax in enumerate(axes.flat):
        if h >= heads:
            ax.axis("off")
            continue
        image = block_pool(causal_only(stack[h]), max_image)
        shown = ax.imshow(image, cmap=cmap, extent=(0, t, t, 0), interpolation="nearest")
        fig.colorbar(shown, ax=ax, fraction=0.046, pad=0.03, label=colour_label)
        ax.set_title(f"Head {h + 1}", fontsize=10)
        ax.grid(False)
        if h % ncols == 0:
            ax.set_ylabel("query position i (tokens)")
        if h // ncols == nrows - 1:
            ax.set_xlabel("key position j (tokens)")
    fig.suptitle(title, fontsize=12, wrap=True)
    fig.tight_layout()
    return fig


def colour_range_tables(final: dict, pairs=(("rope", "alibi"), ("kerple", "fire"))) -> list:
    """Rows comparing our panels' colour ranges with the CABLE figures' tick brackets, one table
    per pair of encodings (12 rows: CABLE's heads; "—" where we have fewer heads).

    ``final[name]`` is :func:`final_layer`'s result; RoPE shows its scores, the rest their bias.
    """
    n_heads = final["rope"]["scores"].shape[0]
    tables = []
    for names in pairs:
        rows = []
        for h in range(max(n_heads, CABLE_HEADS)):
            row = {"head": h + 1}
            for name in names:
                matrix = final[name]["scores"] if name == "rope" else final[name]["bias"]
                if h < n_heads:
                    lo, hi = panel_range(matrix[h])
                    row[f"{LABELS[name]} ours"] = f"[{lo:.3g}, {hi:.3g}]"
                else:
                    row[f"{LABELS[name]} ours"] = "—"
                if h < CABLE_HEADS:
                    top, bottom = CABLE_TICKS[name][h]
                    row[f"Fig. {CABLE_FIG[name]}"] = f"⊇ [{bottom:g}, {top:g}]"
                else:
                    row[f"Fig. {CABLE_FIG[name]}"] = "—"
            rows.append(row)
        tables.append(rows)
    return tables


def toeplitz_tables(rows: list[dict], seed: int, short: int, long: int) -> tuple[list, list]:
    """Display rows of :func:`toeplitz_survey` for one seed: ALiBi and Kerple, then FIRE."""
    spread = {"short": f"spread @{short}", "long": f"spread @{long}"}
    plain = [
        {"encoding": r["encoding"], "layer": r["layer"], spread["short"]: r["short"],
         spread["long"]: r["long"], f"finite @{long}": r["finite"]}
        for r in rows if r["encoding"] != "FIRE" and r["seed"] == seed
    ]  # fmt: skip
    fire = [
        {"layer": r["layer"], "L (tokens)": r["L"], spread["short"]: r["short"],
         spread["long"]: r["long"], "i < L": r["below"], "i ≥ L": r["above"],
         f"finite @{long}": r["finite"]}
        for r in rows if r["encoding"] == "FIRE" and r["seed"] == seed
    ]  # fmt: skip
    return plain, fire


def score_table(summary: dict, bias_r2: dict) -> list[dict]:
    """Display rows of :func:`score_summary` per model, with the bias-alone R² (min over heads)."""
    return [
        {
            "model": LABELS[name],
            "R² (scores)": f"{s['mean']:.3f} [{s['low']:.3f}, {s['high']:.3f}]",
            "R² < 0.5": f"{s['content_share']:.0%}",
            "spread: mean (min)": f"{s['dev_mean']:.2f} ({s['dev_min']:.2f})",
            "R² (bias), min": "—" if name not in bias_r2 else f"{float(bias_r2[name].min()):.6f}",
        }
        for name, s in summary.items()
    ]


def reach_table(reach: dict, alibi_closed, profiles: dict) -> list[dict]:
    """Per head: each bias's reach (``∞``: never falls that far), ALiBi's closed form, and the
    total change ``b(r_max) - b(0)`` of the learned biases."""

    def text(r: float) -> str:
        return "∞" if not np.isfinite(r) else f"{int(r)}"

    return [
        {
            "head": h + 1,
            "ALiBi": text(reach["alibi"][h]),
            "closed form": text(alibi_closed[h]),
            "Kerple": text(reach["kerple"][h]),
            "FIRE": text(reach["fire"][h]),
            "Kerple Δb": float(profiles["kerple"][h, -1] - profiles["kerple"][h, 0]),
            "FIRE Δb": float(profiles["fire"][h, -1] - profiles["fire"][h, 0]),
        }
        for h in range(len(alibi_closed))
    ]


def bias_curves_figure(profiles: dict, context: int, threshold: float, title: str):
    """``b(r) - b(0)`` against distance for every head, one panel per biased encoding
    (log distance, symlog bias), with ``ln threshold`` dashed and the training context grey."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(profiles), figsize=(10, 3.4), sharex=True)
    for ax, (name, p) in zip(axes, profiles.items(), strict=True):
        n_heads, length = p.shape
        colours = plt.get_cmap("viridis")(np.linspace(0, 0.95, n_heads))
        distances = np.arange(1, length)
        for h in range(n_heads):
            ax.plot(distances, p[h, 1:] - p[h, 0], color=colours[h], lw=1.2, label=f"head {h + 1}")
        ax.axhline(math.log(threshold), color="black", ls="--", lw=1)
        ax.axvline(context, color="grey", lw=1)
        ax.set_xscale("log")
        ax.set_yscale("symlog", linthresh=1.0)  # linear within ±1 logit, logarithmic beyond
        ax.set_title(LABELS[name])
        ax.set_xlabel("distance r = i − j (tokens)")
    axes[0].set_ylabel("b(r) − b(0) (logits)")
    axes[-1].legend(fontsize=7, ncol=2, loc="lower left")
    fig.suptitle(title, wrap=True)
    fig.tight_layout()
    return fig


def perplexity_tables(ppl: dict, ratio: dict, factors: list[int], lengths: list[int]) -> tuple:
    """Two display tables: perplexity ``mean [low, high]`` at each length per encoding, and the
    growth ratio against CABLE's Table 4. ``ppl[name, k]`` and ``ratio[name]`` come from
    :func:`log_estimate`."""
    names = list(ratio)
    by_length = [
        {"encoding": LABELS[n]}
        | {
            f"{f}× ({length})": "{:.2f} [{:.2f}, {:.2f}]".format(*ppl[n, k][:3])
            for k, (f, length) in enumerate(zip(factors, lengths, strict=True))
        }
        for n in names
    ]
    growth = [
        {
            "encoding": LABELS[n],
            f"ours {factors[-1]}×/1×": "{:.3g} [{:.3g}, {:.3g}]".format(*ratio[n][:3]),
            "CABLE ppl": "{:.2f} → {:.2f}".format(*CABLE_TABLE4[n]),
            "CABLE 8×/1×": f"{CABLE_RATIO[n]:.3g}",
        }
        for n in names
    ]
    return by_length, growth


def relative_perplexity_chart(relative: dict, ppl: dict, factors, lengths, title: str):
    """Altair: each model's perplexity relative to its own at 1× (``relative[name, k]`` from
    :func:`log_estimate`), with intervals, and CABLE's Table 4 as diamonds at 1× and 8×."""
    import altair as alt

    names = sorted({n for n, _ in relative}, key=list(LABELS).index)
    ours = [
        {"encoding": LABELS[n], "factor": f, "relative perplexity": relative[n, k][0],
         "low": relative[n, k][1], "high": relative[n, k][2], "source": "ours",
         "perplexity": ppl[n, k][0], "tokens": lengths[k]}
        for n in names for k, f in enumerate(factors)
    ]  # fmt: skip
    cable = [
        {"encoding": LABELS[n], "factor": f, "relative perplexity": v, "source": "CABLE Table 4"}
        for n in names
        for f, v in ((1, 1.0), (8, CABLE_RATIO[n]))
    ]
    x = alt.X(
        "factor:Q",
        scale=alt.Scale(type="log", base=2),
        title="evaluation length (× training context)",
    )
    y = alt.Y(
        "relative perplexity:Q", scale=alt.Scale(type="log"), title="perplexity / perplexity at 1×"
    )
    colour = alt.Color("encoding:N")
    chart = alt.Chart(alt.InlineData(values=ours))
    return alt.layer(
        chart.mark_line(point=True).encode(
            x=x, y=y, color=colour,
            tooltip=["encoding:N", "factor:Q", "tokens:Q", alt.Tooltip("perplexity:Q", format=".2f"),
                     alt.Tooltip("relative perplexity:Q", format=".3f")],
        ),
        chart.mark_errorbar().encode(x=x, y=alt.Y("low:Q", title=""), y2="high:Q", color=colour),
        alt.Chart(alt.InlineData(values=cable)).mark_point(shape="diamond", size=90, filled=True).encode(
            x=x, y=y, color=colour,
            tooltip=["source:N", "encoding:N", "factor:Q",
                     alt.Tooltip("relative perplexity:Q", format=".3g")],
        ),
    ).properties(width=520, height=300, title=title)  # fmt: skip


def loss_by_position_chart(curves: dict, context: int, title: str, n_bins: int = 64):
    """Altair: mean next-token loss by position (``curves[name]`` over the whole long window) in
    ``n_bins`` bins, with the training context marked by a grey rule."""
    import altair as alt

    length = len(next(iter(curves.values())))
    edges = np.linspace(0, length, n_bins + 1).astype(int)
    rows = [
        {"encoding": LABELS[n], "position (tokens)": int((a + b) // 2),
         "loss (nats)": float(curve[a:b].mean())}
        for n, curve in curves.items() for a, b in zip(edges[:-1], edges[1:], strict=True)
    ]  # fmt: skip
    return alt.layer(
        alt.Chart(alt.InlineData(values=rows))
        .mark_line()
        .encode(
            x=alt.X("position (tokens):Q", title="position in the window (tokens)"),
            y=alt.Y(
                "loss (nats):Q", scale=alt.Scale(zero=False), title="mean next-token loss (nats)"
            ),
            color="encoding:N",
            tooltip=[
                "encoding:N",
                "position (tokens):Q",
                alt.Tooltip("loss (nats):Q", format=".3f"),
            ],
        ),
        alt.Chart(alt.InlineData(values=[{"x": context}])).mark_rule(color="grey").encode(x="x:Q"),
    ).properties(width=520, height=280, title=title)


def rank_rows(ours: dict, cable: dict, labels: dict) -> list[dict]:
    """Display rows: rank by perplexity ratio (1 = degrades least), our encoding and ratio beside
    CABLE's at the same rank (``ours``, ``cable``: name -> ratio)."""
    mine, theirs = sorted(ours, key=ours.get), sorted(cable, key=cable.get)
    return [
        {
            "rank": i,
            "ours": labels[a],
            "our ratio": ours[a],
            "CABLE": labels[b],
            "CABLE ratio": cable[b],
        }
        for i, (a, b) in enumerate(zip(mine, theirs, strict=True), start=1)
    ]


def ordering_table(checks: dict, difference: dict, verdicts: dict) -> list[dict]:
    """Display rows: every difference each ordering needs, its paired ln-ratio difference with
    interval, the ratio of perplexity ratios it amounts to, and the ordering's verdict."""
    return [
        {
            "ordering": label,
            "needs": f"{LABELS[worse]} > {LABELS[better]}",
            "Δ ln ratio": "{:+.3f} [{:+.3f}, {:+.3f}]".format(*difference[worse, better]),
            "ratio": f"{math.exp(difference[worse, better][0]):.3g}",
            "verdict": verdicts[label],
        }
        for label, pairs in checks.items()
        for worse, better in pairs
    ]


def ordering_to_decide(
    pairs, difference: dict, n_seeds: int, one_seed: tuple[str, ...] = ()
) -> str:
    """What would decide an ordering of Table 4 left open (``pairs``: its ``(worse, better)``
    pairs; ``difference``: their paired ln-ratio differences ``(mean, low, high)``). With fewer
    than :data:`~ropebook.analysis.biases.MIN_SEEDS` seeds of each encoding (``one_seed``
    names those that have one), the seeds needed: at least two of every encoding, paired, what
    each profile trains, and, since one seed measures no s.d., how many paired seeds would detect
    the smallest measured difference if the s.d. is as large as it. With more, the paired seeds
    that detect the hardest difference whose interval still contains 0."""
    from ropebook import zoo  # here, not above: the zoo brings the model code with it
    from ropebook.analysis import Estimate
    from ropebook.analysis.biases import MIN_SEEDS
    from ropebook.present import decide

    def label(pair: tuple[str, str]) -> str:
        return f"{LABELS[pair[0]]} − {LABELS[pair[1]]}"

    def estimate(pair: tuple[str, str]) -> Estimate:
        if n_seeds < MIN_SEEDS:  # one seed: its mean over the windows, no s.d. over seeds
            mean = difference[pair][0]
            return Estimate(mean, mean, mean, "", n_seeds)
        return Estimate(*difference[pair], "", n_seeds)

    still_open = [p for p in pairs if difference[p][1] <= 0 <= difference[p][2]]
    chosen = list(pairs) if n_seeds < MIN_SEEDS or not still_open else still_open
    parts = {label(p): decide.interval_result(estimate(p)) for p in chosen}
    text = decide.hardest_to_decide(
        parts, what="its measured ln-ratio difference", samples="paired seeds"
    )
    if n_seeds >= MIN_SEEDS:
        return text
    fewest = ", ".join(  # the paired seeds each profile trains: its fewest of any encoding
        f"{p} {min(len(zoo.seeds_for(n, profile=p)) for n in LABELS)}" for p in zoo.PROFILES
    )
    names = ", ".join(LABELS[n] for n in one_seed) or "the encodings"
    return (
        f"{MIN_SEEDS} or more paired seeds of every encoding ({names}: {n_seeds} here; paired "
        f"seeds per profile: {fewest}); {text}"
    )
