"""The causal probe's table, chart and claim text, from the numbers of
:mod:`ropebook.analysis.probes`. Nothing here runs a model.
"""

from __future__ import annotations

import altair as alt

from ropebook.analysis.probes import (
    ABLATION_NAMES,
    CONDITIONS,
    ProbeReading,
    ProbeResult,
    min_detectable,
    paired_estimate,
)
from ropebook.stats import power


def probe_table(result: ProbeResult, digits: int = 3) -> list[dict]:
    """One row per condition: planes removed, Δ loss (nats) with interval and as a perplexity
    change, Δ previous-token attention with interval, and the smallest Δs the samples could
    detect (80% power)."""
    rows = []
    for c in CONDITIONS:
        dl, dp = (paired_estimate(result.delta(m, c), digits) for m in ("loss", "previous"))
        rows.append(
            {
                "planes removed": c,
                "removed by": ABLATION_NAMES[result.ablation],
                "planes (first seed)": " or ".join(map(str, result.removed[0][c][:2]))
                + (
                    f" … ({len(result.removed[0][c])} draws)"
                    if len(result.removed[0][c]) > 2
                    else ""
                ),
                "Δ loss (nats)": f"{dl.mean:+.{digits}f}",
                "Δ loss interval": dl.text,
                "perplexity change": f"{power.percent_of_perplexity(dl.mean):+.1f}%",
                "Δ prev.-token attention": f"{dp.mean:+.{digits}f}",
                "Δ attention interval": dp.text,
                "min. detectable Δ (loss, attention)": (
                    f"{min_detectable(result.delta('loss', c)):.3f}, "
                    f"{min_detectable(result.delta('previous', c)):.3f}"
                ),
            }
        )
    return rows


def reading_measured(reading: ProbeReading) -> str:
    """The two contrasts of a :class:`~ropebook.analysis.probes.ProbeReading`, as measured."""
    return (
        f"removing the fastest instead of the slowest quarter changes previous-token attention "
        f"by {reading.positional.mean:+.3f} ({reading.positional.text}); removing the slowest "
        f"instead of a random quarter changes loss by {reading.semantic.mean:+.3f} nats "
        f"({reading.semantic.text})"
    )


def readings_measured(readings: dict[str, ProbeReading]) -> str:
    """The claim's measured text from both readings: each part on the ablation that decides it
    (:data:`~ropebook.analysis.probes.DECIDING`), the other beside, and, where the two readings
    of a part disagree, which way each points."""
    from ropebook.analysis.probes import DECIDING, probe_parts

    parts = {a: probe_parts(r) for a, r in readings.items()}
    out = []
    for i, (part, what, unit) in enumerate(
        (
            ("positional", "removing the fastest instead of the slowest quarter changes "
             "previous-token attention by", ""),
            ("semantic", "removing the slowest instead of a random quarter changes loss by",
             " nats"),
        )
    ):  # fmt: skip
        decides = DECIDING[part]
        beside = next(a for a in readings if a != decides)
        e, f = (getattr(readings[a], part) for a in (decides, beside))
        text = (
            f"{what} {e.mean:+.3f}{unit} ({e.text}) under {ABLATION_NAMES[decides]}, which "
            f"decides it ({parts[decides][i]}); {f.mean:+.3f}{unit} ({f.text}) under "
            f"{ABLATION_NAMES[beside]} ({parts[beside][i]})"
        )
        if parts[decides][i] != parts[beside][i]:
            text += f": the readings disagree, {ABLATION_NAMES[beside]} alone would say {parts[beside][i]}"
        out.append(text)
    return "; ".join(out)


def reading_basis(reading: ProbeReading) -> str:
    """What a :class:`~ropebook.analysis.probes.ProbeReading` rests on: seeds, pairing and the
    smallest differences they detect."""
    return (
        f"{reading.n_seeds} seed{'s' if reading.n_seeds != 1 else ''}, paired per seed and "
        "window; minimum detectable differences "
        f"{reading.positional_mde:.3g} (attention) and {reading.semantic_mde:.3g} nats (80% power)"
    )


def reading_to_decide(reading: ProbeReading) -> str:
    """What would decide a :class:`~ropebook.analysis.probes.ProbeReading`, each part against its
    material line (−attention threshold, +loss threshold; :func:`~ropebook.analysis.probes.
    material_verdict`): with one seed, the seeds a verdict on training needs (the window
    intervals describe one model); with several, the seeds that would resolve each part whose
    interval still contains its line."""
    from ropebook.present import decide
    from ropebook.stats import power

    parts = {
        "attention": (reading.positional, "", -reading.attention_threshold),
        "loss": (reading.semantic, "nats", reading.loss_threshold),
    }
    what = "its measured distance from the material line {:+g}".format
    if reading.n_seeds < 2:  # the verdict is undecided by rule: the s.d. over seeds is unknown
        return "; ".join(
            f"{name}: "
            + decide.seeds_text(
                power.seeds_to_decide([e.mean], threshold=line), unit=unit, samples="seeds",
                what=what(line), sd_name="s.d. over seeds",
            )
            for name, (e, unit, line) in parts.items()
        )  # fmt: skip
    return "; ".join(
        f"{name}: " + decide.interval_to_decide(e, line, unit=unit, what=what(line))
        for name, (e, unit, line) in parts.items()
        if e.low <= line <= e.high
    )


def probe_chart(results: ProbeResult | list[ProbeResult], width: int = 400):
    """Altair, two panels: mean Δ loss and Δ previous-token attention per condition with 95%
    intervals (over seeds, or windows of one seed), zero marked; with several results (zeroing
    and mean-ablation) one colour each, side by side in every row."""
    results = [results] if isinstance(results, ProbeResult) else list(results)
    panels = []
    for metric, label in (
        ("loss", "Δ loss (nats)"),
        ("previous", "Δ previous-token attention"),
    ):
        rows = []
        for result in results:
            for c in CONDITIONS:
                e = paired_estimate(result.delta(metric, c))
                rows.append(
                    {"planes removed": c, "removed by": ABLATION_NAMES[result.ablation],
                     "mean": e.mean, "low": e.low, "high": e.high}
                )  # fmt: skip
        y = alt.Y("planes removed:N", sort=list(CONDITIONS), title="planes removed")
        offset = alt.YOffset("removed by:N")
        colour = alt.Color("removed by:N", title="removed by")
        base = alt.Chart(alt.InlineData(values=rows))
        panels.append(
            alt.layer(
                base.mark_rule(strokeWidth=2).encode(
                    x=alt.X("low:Q", title=label), x2="high:Q", y=y, yOffset=offset, color=colour
                ),
                base.mark_point(filled=True, size=70).encode(
                    x="mean:Q",
                    y=y,
                    yOffset=offset,
                    color=colour,
                    tooltip=["planes removed:N", "removed by:N", "mean:Q", "low:Q", "high:Q"],
                ),  # fmt: skip
                alt.Chart(alt.InlineData(values=[{"zero": 0.0}]))
                .mark_rule(strokeDash=[4, 3], color="gray")
                .encode(x="zero:Q"),
            ).properties(
                width=width,
                height=90 if len(results) == 1 else 140,
                title=f"{label} when a quarter of planes is removed",
            )  # fmt: skip
        )
    return alt.vconcat(*panels)
