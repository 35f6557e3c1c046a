"""The decay chapter's tables, figures and summary sentences, from :mod:`ropebook.analysis.decay`.

One function per table or figure of ``chapters/decay.py``: Prop. 3.1's peak table and example
rows, Prop. 3.2's intervals, Figs 2, 8 and 9 (matplotlib), the decay-ratio and Random RoPE
tables, and the trained models' curves (Altair) and per-layer table. Nothing here measures.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ropebook import plots
from ropebook.analysis.decay import (
    CONTRAST,
    SETUPS,
    PeakCheck,
    RandomRopeRow,
    TrainedDecay,
    ZeroMeanCheck,
    last_query_profile,
    prop31_key,
)


def peak_table(check: PeakCheck):
    """Prop. 3.1 per distance: hits, peak error, attention on ``r``, runner-up."""
    return plots.table(check.rows)


def zero_mean_summary(check: ZeroMeanCheck) -> str:
    """Prop. 3.2 in one line: intervals containing 0 against the binomial range, and the spread."""
    n = len(check.intervals)
    return (
        f"{check.covered} of {n} intervals contain 0 (expected {check.expected:.0f}; "
        f"99% binomial range {check.binomial_low}-{check.binomial_high}); largest |mean|/s.e. "
        f"{check.largest_z:.2f}; variance over r: {check.variance.mean():.1f} on average, "
        f"range {check.variance.min():.1f}-{check.variance.max():.1f}"
    )


def ratio_table(ratios: dict[str, tuple[float, float, float]], threshold: float):
    """Markdown table of :func:`ropebook.analysis.decay.decay_ratios`: a
    ratio below ``threshold`` counts as decay."""
    return plots.table(
        [
            {
                "set-up": kind,
                "ratio long/short": value,
                "95% interval": f"[{low:.3f}, {high:.3f}]",
                f"decays (< {threshold})": value < threshold,
            }
            for kind, (value, low, high) in ratios.items()
        ]
    )


def random_rope_tables(rows: list[RandomRopeRow]):
    """Two Markdown tables: the all-ones half-distances, then the Gaussian ratios."""
    from IPython.display import Markdown

    ones = plots.table(
        [
            {
                "L": f"{row.factor}N = {row.length}",
                "half-distance (tokens)": row.half[0],
                "95% interval": f"[{row.half[1]:.1f}, {row.half[2]:.1f}]",
                "plain RoPE / (L/N)": row.plain_half,
                "mean, r ≥ N/2": row.far_mean,
            }
            for row in rows
        ]
    )
    gaussian = plots.table(
        [
            {
                "L": f"{row.factor}N = {row.length}",
                "Gaussian ratio long/short": row.gaussian[0],
                "95% interval": f"[{row.gaussian[1]:.2f}, {row.gaussian[2]:.2f}]",
            }
            for row in rows
        ]
    )
    return Markdown(f"**All-ones q, k**\n\n{ones.data}\n\n**Gaussian q, k**\n\n{gaussian.data}")


def _bands(ax, x, sample, label, color) -> None:
    """Mean over draws (line) and their 5th-95th percentile band."""
    low, high = np.quantile(sample, [0.05, 0.95], axis=0)
    ax.fill_between(x, low, high, alpha=0.25, lw=0, color=color)
    ax.plot(x, sample.mean(0), lw=1, color=color, label=label)


def plot_prop31_examples(q, targets, seq_len: int, *, base: float):
    """Attention of one query over its causal row when every key is ``R^r q``, per ``r``."""
    import matplotlib.pyplot as plt

    head_dim = len(q)
    distances = np.arange(seq_len)
    fig, ax = plt.subplots(figsize=(7.5, 3.2))
    for r in targets:
        k_seq = np.broadcast_to(prop31_key(q, r, base=base), (seq_len, head_dim))
        q_seq = np.broadcast_to(q, (seq_len, head_dim))
        logits = last_query_profile(q_seq, k_seq, distances, base=base) / np.sqrt(head_dim)
        probs = np.exp(logits - logits.max())
        ax.plot(distances, probs / probs.sum(), lw=1, label=f"key $R^{{{r}}}q$")
        ax.axvline(r, color="grey", lw=0.5, ls=":")
    ax.set(
        title=f"Prop. 3.1: attention peaks at the chosen distance (d = {head_dim})",
        xlabel="distance r = i − j back from the query (tokens)",
        ylabel="attention probability",
    )
    ax.legend()
    return fig


def plot_zero_mean(check: ZeroMeanCheck, n_samples: int):
    """Prop. 3.2's Monte-Carlo means and their 95% intervals at every distance."""
    import matplotlib.pyplot as plt

    distances = np.arange(len(check.intervals))
    fig, ax = plt.subplots(figsize=(7.5, 3.2))
    mean, low, high = check.intervals.T
    ax.fill_between(distances, low, high, alpha=0.3, lw=0, label="95% interval")
    ax.plot(distances, mean, lw=0.8, label="Monte-Carlo mean")
    ax.axhline(0, color="black", lw=0.8)
    ax.set(
        title=f"Prop. 3.2: E[qᵀR⁻ʳk] = 0 at every distance ({n_samples} fresh pairs per r)",
        xlabel="distance r (tokens)",
        ylabel="activation qᵀR⁻ʳk",
    )
    ax.legend(loc="upper right")
    return fig


def plot_setups(curves: dict, *, head_dim: int, base: float):
    """Figs 2(a), 2(b) and 9 side by side: ``curves[kind] [S, N]`` for each of :data:`SETUPS`."""
    import matplotlib.pyplot as plt

    titles = ("(a) all-ones q, k (Fig. 2a)", "(b) Gaussian q, k per position (Fig. 2b)",
              "Gaussian q, k repeated (Fig. 9)")  # fmt: skip
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4), sharex=True)
    for ax, kind, title, color in zip(axes, SETUPS, titles, ("C0", "C1", "C2"), strict=True):
        sample = curves[kind]
        distances = np.arange(sample.shape[-1])
        _bands(ax, distances, sample, f"mean of {len(sample)} draws", color)
        if kind != "all-ones":
            ax.plot(distances, sample[0], lw=0.4, color="black", alpha=0.6, label="one draw")
        ax.axhline(0, color="black", lw=0.5)
        ax.set(title=title, xlabel="distance r (tokens)")
        ax.legend(fontsize=7, loc="upper right")
    axes[0].set_ylabel("activation (cosine of rotated q, k)")
    fig.suptitle(f"RoPE activation vs distance, d = {head_dim}, θ = {base:,.0f}", y=1.02)
    return fig


def plot_random_rope(random_curves: dict, factors, *, short_window: int, head_dim: int):
    """Fig. 8: (a) the all-ones curves per Random RoPE range ``L``, (b) the Gaussian curves'
    spread (RMS over draws, averaged over ``short_window`` distances) against ``1/sqrt(d)``."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 3.4), sharex=True)
    smooth = np.ones(short_window) / short_window  # moving average over short_window distances
    for i, factor in enumerate(factors):
        ones = random_curves[factor, SETUPS[0]]
        seq_len = ones.shape[-1]
        distances = np.arange(seq_len)
        label = "RoPE (L = N)" if factor == 1 else f"Random RoPE, L = {factor}N"
        _bands(axes[0], distances, ones, label, f"C{i}")
        rms = np.sqrt(np.mean(random_curves[factor, SETUPS[1]] ** 2, axis=0))
        smoothed = np.convolve(rms, smooth, mode="valid")  # centred at r + (short_window - 1) / 2
        centres = distances[: smoothed.size] + (short_window - 1) / 2
        axes[1].plot(centres, smoothed, lw=1, color=f"C{i}", label=label)
    axes[1].axhline(head_dim**-0.5, color="black", lw=0.8, ls="--", label="1/√d (theory)")
    axes[1].set_ylim(0, 2 * head_dim**-0.5)
    axes[0].axhline(0, color="black", lw=0.5)
    axes[0].set(
        title="(a) all-ones q, k: mean and 5–95% band over draws", ylabel="activation (cosine)"
    )
    axes[1].set(
        title="(b) Gaussian q, k per position: spread over draws",
        ylabel=f"RMS activation ({short_window}-token average)",
    )
    for ax in axes:
        ax.set_xlabel("token distance r (tokens)")
        ax.legend(fontsize=7, loc="upper right")
    fig.suptitle(f"Random RoPE (Ruoss et al.): positions from [0, L), N = {seq_len}", y=1.02)
    return fig


def trained_chart(trained: dict, model_names, seeds, *, width: int = 240):
    """Altair line chart of the mean activation vs distance per layer, one facet per model
    (mean over seeds and windows); every distance below 32 and ~96 spread over the rest."""
    import altair as alt

    context = trained[model_names[0], seeds[0]].shape[-1]
    n_layers = trained[model_names[0], seeds[0]].shape[0]
    chart_r = np.unique(
        np.r_[np.arange(min(32, context)), np.linspace(0, context - 1, 96).astype(int)]
    )
    rows = []
    for name in model_names:
        mean_curves = np.mean([trained[name, s].mean(1) for s in seeds], axis=0)  # [layers, T]
        for layer in range(n_layers):
            rows += [
                {"model": name, "layer": layer, "distance r": int(r), "mean activation": float(v)}
                for r, v in zip(chart_r, mean_curves[layer, chart_r], strict=True)
            ]
    title = [  # two lines, so that the title is no wider than the panels
        "Trained models: mean activation qᵢᵀRʲ⁻ⁱkⱼ vs distance",
        f"({len(seeds)} seed(s), held-out text)",
    ]
    return (
        alt.Chart(alt.InlineData(values=rows))
        .mark_line()
        .encode(
            x=alt.X("distance r:Q", title="distance r = i − j (tokens)"),
            y=alt.Y("mean activation:Q", title="mean activation (unscaled)"),
            color=alt.Color("layer:N"),
            tooltip=[
                "model:N",
                "layer:N",
                "distance r:Q",
                alt.Tooltip("mean activation:Q", format=".3f"),
            ],
        )
        .properties(width=width, height=220)
        .facet(column=alt.Column("model:N", title=None))
        .resolve_scale(y="independent")
        .properties(title=title)  # once above both panels, not repeated in each
    )


def _only(result: TrainedDecay, models=None) -> TrainedDecay:
    """``result`` restricted to the rows of ``models`` (all of them with ``None``)."""
    if models is None:
        return result
    return dataclasses.replace(result, rows=[r for r in result.rows if r["model"] in models])


def trained_summary(result: TrainedDecay, models=None) -> str:
    """Per model (of ``models``, all by default), how many layers decay, stay flat (within the
    margin), are uncertain or grow."""
    return "; ".join(
        f"{name}: " + ", ".join(f"{n} of {result.n_layers} layers {b}" for b, n in c.items() if n)
        for name, c in _only(result, models).counts().items()
    )


def trained_measured(result: TrainedDecay, models=None) -> str:
    """The claim's measured text: :func:`trained_summary` (of ``models``, all by default), the
    distances compared and the margin of *flat*."""
    result = _only(result, models)
    return (
        f"{trained_summary(result)} (short r = 1-{result.short} vs last quarter of "
        f"{result.context} tokens; flat = interval within ±{result.margin:g} of the layer's "
        f"mean |activation|)"
    )


def trained_to_decide(result: TrainedDecay, models) -> str:
    """What would decide "need not decay" left open: for each uncertain layer of ``models``,
    the samples that would bound its interval within the margin (at its measured mean and
    s.d.), or that the mean lies past the margin and only a sign (below 0) could show it."""
    from ropebook.analysis.decay import samples_to_bound

    samples = "seeds" if result.over.endswith("seeds") else "windows of the one seed"
    parts = []
    for r in result.rows:
        if r["model"] not in models or r["behaviour"] != "uncertain":
            continue
        mean, label = r[CONTRAST], f"{r['model']} layer {r['layer']}"
        need = samples_to_bound(
            mean, r["low"], r["high"], result.n, result.margin, result.confidence
        )
        if need is not None:
            parts.append(
                f"{label} (mean {mean:+.3f}, {r['interval']}): {need} {samples} would bound "
                f"it within ±{result.margin:g} if its mean and s.d. stay as measured"
            )
        else:
            parts.append(
                f"{label} (mean {mean:+.3f}, {r['interval']}): its mean lies outside "
                f"±{result.margin:g} or has no s.d. (one sample), so more {samples} could "
                f"decide it only by placing it wholly above or below 0"
            )
    tail = (
        "; with one seed the intervals are over text windows, so seeds (zoo seeds 0..n-1, "
        "n_model_seeds) are what would decide it for training"
        if not result.over.endswith("seeds")
        else ""
    )
    return "; ".join(parts) + tail if parts else "no uncertain layer: nothing left to decide"


def trained_table(result: TrainedDecay):
    """The per-layer table of :func:`ropebook.analysis.decay.trained_decay`, with what its
    intervals are over and the margin of *flat*."""
    from IPython.display import Markdown

    rows = [{k: v for k, v in r.items() if k not in ("low", "high")} for r in result.rows]
    return Markdown(
        f"{plots.table(rows).data}\n\n{100 * result.confidence:.4g} % intervals over "
        f"{result.over}; *flat*: the interval "
        f"contains 0 and lies within ±{result.margin:g}, *uncertain*: it contains 0 and reaches "
        f"past ±{result.margin:g}."
    )
