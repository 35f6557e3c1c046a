"""The p-RoPE chapters' tables, charts and sentences, from the numbers of
:mod:`ropebook.analysis.ablation`: one function per table or figure of ``chapters/p_rope.py``,
``chapters/p_rope_headline.py`` (the headline where the slow planes turn) and
``chapters/p_sweep.py`` (length extrapolation and the p sweep), and the models' names.

Tables are lists of records for :func:`ropebook.plots.table`, charts are Altair; the values
the chapter's Markdown cells glue (:func:`table1_differences`, :func:`ordering_counts`,
:func:`seed_noise_values`, :func:`training_noise_values`) are short phrases and numbers, read
"—" or "none (one seed: ...)" where one seed leaves nothing to measure. Nothing here trains or
measures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np

from ropebook import rope
from ropebook.analysis import ablation
from ropebook.analysis.ablation import Comparison, Estimate, ExtrapolationCurve, SeedNoise
from ropebook.stats.power import sd_interval

# What the p-RoPE chapters call the zoo's Table 2 and p-sweep models (lesson regime, θ = 10k).
LABELS: dict[str, str] = {
    "nope": "NoPE", "rope": "RoPE θ=10k", "rope-500k": "RoPE θ=500k",
    "rope-reversed-0.75": "0.75-RoPE reversed", "rope-partial-0.75": "0.75-RoPE partial",
    "p-rope-0.25": "0.25-RoPE", "p-rope-0.5": "0.5-RoPE", "p-rope-0.75": "0.75-RoPE",
}  # fmt: skip

# ---------------------------------------------------------------- Table 1 by construction


def plane_rows(frequencies: np.ndarray, rotating: np.ndarray, label: str = "0.75-RoPE") -> list:
    """One row per plane (fastest first): RoPE's frequency ``g_k``, its wavelength ``2π/g_k`` and
    whether the variant ``label`` (which rotates the planes in ``rotating``) turns it."""
    return [
        {
            "plane k": k,
            "g_k (rad/token)": float(g),
            "wavelength (tokens)": float(2 * math.pi / g),
            f"{label} rotates it": "yes" if r else "no (free)",
        }
        for k, (g, r) in enumerate(zip(frequencies, rotating, strict=True))
    ]


def construction_rows(constructions: Sequence[ablation.Construction]) -> list[dict]:
    """One row per :func:`~ropebook.analysis.ablation.construction`: the margin ``δ``, the scale
    (``any`` where nothing rotates) and the worst query's attention on its target per head."""
    return [
        {
            "encoding": c.encoding,
            "ψ on": c.where,
            "N": c.n,
            "δ": c.margin,
            "scale s": c.scale if c.sharp else f"any ({c.scale:g} shown)",
            "min α diag.": c.min_diagonal,
            "min α prev.": c.min_previous,
        }
        for c in constructions
    ]


def score_distance_chart(head_dim: int, base: float, *, proportion: float = 0.75, turns=4):
    """Figure: the score ``⟨R^r ψ, ψ⟩`` of a matching key ``r`` tokens back, on RoPE's slowest
    plane and on p-RoPE's free planes, over ``turns`` turns of the slowest plane."""
    slowest = rope.base_frequencies(head_dim, base)[-1]
    shown = np.unique(np.round(np.geomspace(1, turns * 2 * math.pi / slowest, 600)))
    free = ~ablation.rotating_planes(head_dim, base, variant="p-rope", proportion=proportion)
    scores = {
        "RoPE, slowest plane": ablation.plane_scores(
            ablation.plane_vector(head_dim, [head_dim // 2 - 1]), shown, base=base
        ),
        f"{proportion:g}-RoPE, free planes (= NoPE)": ablation.plane_scores(
            ablation.plane_vector(head_dim, free),
            shown,
            base=base,
            variant="p-rope",
            proportion=proportion,
        ),
    }
    values = [
        {"distance r (tokens)": int(r), "score": float(s), "channel": name}
        for name, row in scores.items()
        for r, s in zip(shown, row, strict=True)
    ]
    return (
        alt.Chart(
            alt.InlineData(values=values),
            title=f"Score of a matching key r tokens back (d = {head_dim}, θ = {base:,.0f})",
        )
        .mark_line()
        .encode(
            x=alt.X("distance r (tokens):Q", scale=alt.Scale(type="log"), title="distance r (tokens)"),
            y=alt.Y("score:Q", title="⟨R^r ψ, ψ⟩ / ‖ψ‖²"),
            color=alt.Color("channel:N", legend=alt.Legend(orient="bottom")),
            tooltip=["channel:N", "distance r (tokens):Q", alt.Tooltip("score:Q", format=".4f")],
        )
        .properties(width=560, height=260)
    )  # fmt: skip


def table1_rows(measured: Mapping[str, Mapping[str, bool]], paper: Mapping) -> list[dict]:
    """Table 1, one row per property: each encoding's measured mark and the paper's."""

    def mark(ok: bool) -> str:
        return "✓" if ok else "✗"

    return [
        {"property": prop}
        | {enc: f"{mark(measured[prop][enc])} (paper {mark(ok)})" for enc, ok in marks.items()}
        for prop, marks in paper.items()
    ]


def table1_differences(
    measured: Mapping[str, Mapping[str, bool]], paper: Mapping[str, Mapping[str, bool]]
) -> str:
    """The Table 1 cells whose measured mark differs from the paper's, as a listing
    (``positional, NoPE: measured ✓, paper ✗; ...``), or ``none``."""

    def mark(ok: bool) -> str:
        return "✓" if ok else "✗"

    return (
        "; ".join(
            f"{prop}, {enc}: measured {mark(measured[prop][enc])}, paper {mark(ok)}"
            for prop, marks in paper.items()
            for enc, ok in marks.items()
            if measured[prop][enc] != ok
        )
        or "none"
    )


def table1_text(rows: Sequence[dict]) -> str:
    """Table 1's rows on one line: ``positional: NoPE ✗ (paper ✗), ...; semantic: ...``."""
    return "; ".join(
        f"{r['property']}: " + ", ".join(f"{k} {v}" for k, v in r.items() if k != "property")
        for r in rows
    )


# ---------------------------------------------------------------- Table 2: the trained models


def budget_rows(models: Mapping[tuple[str, str], Sequence], labels: Mapping[str, str]) -> list:
    """Per model: its corpus, seeds, training tokens and mean training time."""
    return [
        {
            "model": labels[name],
            "corpus": domain,
            "seeds": len(runs),
            "tokens/model": ", ".join(f"{t:,}" for t in sorted({m.tokens_seen for m in runs})),
            "train s (mean)": float(np.mean([m.seconds for m in runs])),
        }
        for (name, domain), runs in models.items()
    ]


def profile_rows(current: str) -> list[dict]:
    """What each zoo profile trains (the RoPE model; every Table 2 model has the same shape)."""
    from ropebook import zoo

    rows = []
    for name in zoo.PROFILES:
        mc, tc = zoo.configs("rope", profile=name)
        rows.append(
            {
                "profile": name + (" (this run)" if name == current else ""),
                "L × H × d_h": f"{mc.n_layers} × {mc.n_heads} × {mc.head_dim}",
                "width": mc.d_model,
                "context": mc.context,
                "tokens/model": f"{tc.steps * tc.batch_size * tc.seq_len:,}",
                "seeds": len(zoo.seeds_for("rope", profile=name, domain="python")),
            }
        )
    return rows


def table2_rows(
    table: Mapping[str, Estimate], paper: Mapping[str, float], labels: Mapping[str, str]
) -> list[dict]:
    """One domain of Table 2: our perplexity (mean ± half-width over seeds) and rank, next to the
    paper's single-run perplexity and rank in the column we compare with."""
    ours, theirs = ablation.ranks(ablation.means(table)), ablation.ranks(paper)
    return [
        {
            "encoding": labels[name],
            "ours": est.format(3),
            "rank": ours[name],
            "paper": f"{paper[name]:.4f}",
            "paper rank": theirs[name],
        }
        for name, est in table.items()
    ]


def tau_rows(
    taus: Mapping[tuple[str, str], tuple[float, float, Estimate]],
    paper: Mapping[str, Mapping[str, float]],
) -> list[dict]:
    """The τ table: the paper's first two columns against each other, then every (domain,
    column) of :func:`kendall_taus`."""
    first, second = list(paper)[:2]
    tau, pvalue = ablation.kendall_tau(paper[first], paper[second])
    rows = [{"ranking": f"paper {first} vs paper {second}", "τ": tau, "p-value": pvalue,
             "τ per seed": "—"}]  # fmt: skip
    rows += [
        {"ranking": f"ours {d} vs paper {c}", "τ": t, "p-value": p, "τ per seed": e.format(2)}
        for (d, c), (t, p, e) in taus.items()
    ]
    return rows


def _relation(status: str, c: Comparison) -> str:
    """A comparison status as ``<`` / ``>`` (``a`` against ``b``, separated) or as it is."""
    return {f"{c.a} < {c.b}": "< (separated)", f"{c.a} > {c.b}": "> (separated)"}.get(
        status, status
    )


def pair_rows(
    comparisons: Mapping[tuple[str, str, str], Comparison],
    paper: Mapping[str, float],
    domain: str,
) -> list[dict]:
    """The orderings the paper argues about, on one domain: the paper's difference, our paired
    difference, both tests (as ``a`` against ``b``) and the verdict on "``a`` is lower".
    ``comparisons``: ``{(a name, b name, domain): compare(a label, ..., b label, ...)}``."""
    return [
        {
            "paper's order": f"{c.a} < {c.b}",
            "paper Δ": f"{paper[better] - paper[worse]:+.4f}",
            "our Δ (paired)": c.difference.format(3),
            "paired test": _relation(c.paired_status, c),
            "intervals": _relation(c.status, c),
            "verdict": c.verdict(c.a),
        }
        for (better, worse, d), c in comparisons.items()
        if d == domain
    ]


def ordering_counts(comparisons: Mapping[tuple[str, str, str], Comparison]) -> dict[str, int]:
    """How many of the paper's orderings our runs confirm (``held``), reverse (``not_held``) or
    cannot resolve (``cannot_decide``), how many have one seed and so no interval
    (``untestable``), and how many also pass the unpaired test (``unpaired``) of ``n``; the
    table of :func:`pair_rows` names each ordering's verdict."""
    counts = dict.fromkeys(("held", "not_held", "cannot_decide"), 0)
    for c in comparisons.values():
        if c.testable:
            counts[c.verdict(c.a).replace(" ", "_")] += 1
    return counts | {
        "untestable": sum(not c.testable for c in comparisons.values()),
        "unpaired": sum(c.separated for c in comparisons.values()),
        "n": len(comparisons),
    }


def pair_text(by_domain: Mapping[str, Comparison], digits: int = 3, *, names: bool = True) -> str:
    """A comparison per domain on one line: ``domain: a mean ± hw vs b ... (paired: status)``."""

    def side(name: str, est: Estimate) -> str:
        return f"{name} {est.format(digits)}" if names else est.format(digits)

    return "; ".join(
        f"{d}: {side(c.a, c.a_est)} vs {side(c.b, c.b_est)} (paired: {c.paired_status})"
        for d, c in by_domain.items()
    )


def extrapolation_test_rows(comparisons: Mapping[str, Comparison]) -> list[dict]:
    """One row per extrapolation comparison (``where -> Comparison`` of 0.75-RoPE against RoPE):
    both perplexities, the paired difference and what the paired test says."""
    return [
        {
            "where": where,
            "0.75-RoPE": c.a_est.format(2),
            "RoPE": c.b_est.format(2),
            "paired Δ": c.difference.format(2),
            "paired": c.paired_status,
        }
        for where, c in comparisons.items()
    ]


def exploratory_text(
    planned: Mapping[str, Comparison], later: Mapping[str, Comparison], verdict: str
) -> str:
    """What seeds bought after looking at a comparison add, as an exploratory reading beside the
    planned seeds' verdict (empty when none were bought)."""
    if all(later[d].difference.n == c.difference.n for d, c in planned.items()):
        return ""
    return (
        f". Exploratory, with seeds bought after seeing this effect (not the verdict): "
        f"{difference_text(later, 2)}, {verdict}"
    )


def uninformative_text(head_dim: int, length: int, base: float) -> str:
    """Why a p-RoPE-versus-RoPE test over ``length`` tokens cannot fail, and where it could."""
    from ropebook.analysis.ablation import INFORMATIVE_ANGLE, dropped_turn

    turn = dropped_turn(head_dim, length, base)
    return (
        f"the planes 0.75-RoPE frees turn at most {turn:.2g} rad over {length:,} tokens under "
        f"RoPE (d = {head_dim}, θ = {base:g}), short of the {INFORMATIVE_ANGLE:.2f} rad (a quarter "
        "turn) past which they could turn a match against itself: a regime whose freed planes "
        "turn further (the matched regime, p-RoPE's headline) can decide it"
    )


def beside_text(kept: Mapping | None, build: str) -> str:
    """Where a kept study decides (``kept``: its runs), this build's own reading beside its
    verdict; nothing where the build's seeds decide."""
    if not kept:
        return ""
    return f"; this build's own seeds, beside: {build}"


def reproduction_record(
    reproduction, basis: str, seeds: int, margin: float, kept: Mapping | None
) -> dict[str, Any]:
    """``ClaimSet.record``'s arguments for "this build reproduces the kept study's runs"
    (:func:`ropebook.table2_study.reproduced`): the verdict at ``margin`` %, the largest gap and
    where, the shared runs that are the kept ones loaded again (left out), and what can test it:
    the kept study's profile, on a cache that did not train the study."""
    same = f"; {reproduction.same} shared runs are the kept runs loaded again (same training), "
    return {
        "evidence": reproduction.verdict(margin),
        "measured": f"largest gap {reproduction.largest:.3f} % of perplexity over "
        f"{reproduction.n} shared runs trained apart ({reproduction.where}); margin ±{margin:g} %"
        + (same + "left out" if reproduction.same else ""),
        "seeds": seeds,
        "basis": basis,
        "to_decide": "the kept study's profile on a cache that did not train it: "
        "ROPEBOOK_CACHE=<empty folder> python -m ropebook run p_rope --profile "
        + (kept or {}).get("profile", "cpu"),
    }


def difference_text(by_domain: Mapping[str, Comparison], digits: int = 3) -> str:
    """The paired differences per domain on one line: ``domain paired Δ mean ± hw; ...``."""
    return "; ".join(f"{d} paired Δ {c.difference.format(digits)}" for d, c in by_domain.items())


def relative_rows(
    tables: Mapping[str, Mapping[str, Estimate]],
    paper: Mapping[str, Mapping[str, float]],
    domains: Mapping[str, str],
    labels: Mapping[str, str],
    confidence: float = 0.95,
    reference: str = "rope",
) -> list[dict]:
    """Each encoding's perplexity relative to ``reference`` in %, ours paired seed by seed (mean
    and interval, :func:`~ropebook.analysis.ablation.relative_change`) and the paper's (one run),
    for every ``domain -> paper column``."""
    rows = []
    for domain, column in domains.items():
        quoted = paper[column]
        ours = ablation.relative_change(tables[domain], reference, confidence)
        rows += [
            {
                "encoding": labels[name],
                "domain": f"{domain} (paper: {column})",
                "ours (%)": est.mean,
                "low": est.low,
                "high": est.high,
                "paper (%)": 100 * (quoted[name] / quoted[reference] - 1),
            }
            for name, est in ours.items()
        ]
    return rows


def relative_chart(rows: Sequence[dict], order: Sequence[str], confidence: float = 0.95):
    """Figure: :func:`relative_rows` as dots with interval bars (ours) and diamonds (the paper),
    one panel per domain."""
    base = alt.Chart()
    y = alt.Y("encoding:N", sort=list(order), title=None)
    ours = base.mark_point(filled=True, size=50).encode(
        y=y, x="ours (%):Q",
        tooltip=["encoding:N", *(alt.Tooltip(f, format="+.2f") for f in ("ours (%):Q", "low:Q",
                                                                        "high:Q"))],
    )  # fmt: skip
    return (
        alt.layer(
            base.mark_rule().encode(
                y=y, x=alt.X("low:Q", title="perplexity relative to RoPE θ=10k (%)"), x2="high:Q"
            ),
            ours,
            base.mark_point(shape="diamond", color="black", size=60).encode(
                y=y,
                x="paper (%):Q",
                tooltip=["encoding:N", alt.Tooltip("paper (%):Q", format="+.2f")],
            ),  # fmt: skip
            data=alt.InlineData(values=list(rows)),
        )
        .properties(width=230, height=200)
        .facet(
            column=alt.Column("domain:N", title=None),
            title=f"Perplexity relative to RoPE: ours (dots, {confidence:.0%} interval) vs the "
            "paper (diamonds)",
        )
        .resolve_scale(x="independent")
    )


# ---------------------------------------------------------------- seed noise and resolution


def noise_rows(noise: SeedNoise, domains: Mapping[str, str]) -> list[dict]:
    """The seed-noise table, one row per measure and one column per domain."""
    nan = float("nan")
    measures = {
        "median seed s.d.": lambda d: noise.unpaired[d]["seed_sd"],
        "median gap between variants": lambda d: noise.unpaired[d]["gap"],
        "gap / seed s.d.": lambda d: noise.unpaired[d]["ratio"],
        "paired: |Δ| / s.d. of Δ": lambda d: noise.paired[d]["ratio"] if noise.paired[d] else nan,
        "our seed s.d. (% of ppl)": lambda d: 100 * noise.seed_cv[d],
        "paper column": lambda d: domains[d],
        "paper's median gap (% of ppl)": lambda d: 100 * noise.paper_gap[domains[d]],
    }
    return [{"measure": m} | {d: f(d) for d in domains} for m, f in measures.items()]


def seed_noise_values(noise: SeedNoise, domains: Mapping[str, str]) -> dict[str, dict]:
    """Per domain: the median gap between encodings as a multiple of the seed s.d., unpaired
    and paired (``"2.3×"``), our seed s.d. in % of perplexity (``"0.52%"``) — each ``"—"`` with
    one seed (no paired noise) — and the paper's median gap in % (a float)."""
    values = {}
    for d, c in domains.items():
        one_seed = noise.paired[d] is None
        values[d] = {
            "unpaired": "—" if one_seed else f"{noise.unpaired[d]['ratio']:.1f}×",
            "paired": "—" if one_seed else f"{noise.paired[d]['ratio']:.1f}×",
            "seed_cv": "—" if one_seed else f"{100 * noise.seed_cv[d]:.2f}%",
            "paper_gap": float(100 * noise.paper_gap[c]),
        }
    return values


def regime_rows(settings: Mapping[str, tuple[int, float, int]], proportion: float = 0.75) -> list:
    """Per setting ``label -> (head_dim, base, context)``: how far the planes that p-RoPE frees
    turn under RoPE over the context (fastest and slowest freed plane, in turns), and the share
    of all planes that complete at least one turn."""
    rows = []
    for label, (head_dim, base, context) in settings.items():
        turns = rope.turns_per_context(head_dim, base, context)
        freed = rope.frequencies(head_dim, base, variant="p-rope", proportion=proportion) == 0
        rows.append(
            {
                "setting": label,
                "head_dim, θ, context": f"{head_dim}, {base:,.0f}, {context:,}",
                "freed planes": int(freed.sum()),
                "their turns over the context": f"{turns[freed].min():.3g} – {turns[freed].max():.3g}",
                "planes with ≥ 1 turn": f"{(turns >= 1).mean():.0%}",
            }
        )
    return rows


def _percent(value: float) -> str:
    return f"{value:.2f} %" if np.isfinite(value) else "—"


def paper_gap_percent(paper: Mapping[str, float], a: str, b: str) -> float:
    """The paper's gap between ``a`` and ``b``: ``a``'s perplexity over ``b``'s, in % (< 0: ``a``
    lower)."""
    return 100 * (paper[a] / paper[b] - 1)


def resolution_rows(
    comparisons: Mapping[tuple[str, str], Comparison],
    paper: Mapping[str, float],
    confidence: float = 0.95,
    power: float = 0.8,
) -> list[dict]:
    """What each ordering's run can resolve: the paper's gap and our paired difference (both in
    % of perplexity), the s.d. of our paired difference, the smallest effect the seeds detect
    with ``power`` (paired t-test, two-sided at ``confidence``), the verdict on the paper's order
    and, where the run cannot decide, the bound it puts on the effect."""
    rows = []
    for (better, worse), c in comparisons.items():
        verdict = c.verdict(c.a)
        rows.append(
            {
                "paper's order": f"{c.a} < {c.b}",
                "paper Δ": f"{paper_gap_percent(paper, better, worse):+.2f} %",
                "our paired Δ": c.difference.format(2),
                "s.d. of Δ": _percent(ablation.paired_sd_percent(c)),
                "seeds": c.difference.n,  # differs by pair where seeds were chosen by power
                "detectable": _percent(c.min_detectable(confidence, power)),
                "verdict": verdict,
                "reading": c.bound if verdict == "cannot decide" else verdict,
            }
        )
    return rows


def resolution_text(c: Comparison, confidence: float = 0.95, power: float = 0.8) -> str:
    """A claim's basis: seeds and the smallest effect they can detect."""
    if not c.paired:
        return f"{c.difference.n} seed(s): no paired interval"
    mde = c.min_detectable(confidence, power)
    return f"{c.difference.n} paired seeds; detectable |Δ| ≥ {mde:.2g} % ({power:.0%} power)"


def training_noise_rows(
    series: Mapping[str, Mapping[int, Comparison]], confidence: float = 0.95, power: float = 0.8
) -> list[dict]:
    """One row per comparison and validation step: tokens seen, the paired difference, the s.d.
    of the paired difference (% of perplexity) with its ``confidence`` interval (chi-square,
    :func:`~ropebook.stats.power.sd_interval`), the detectable effect and the verdict on the
    comparison's first model being better."""
    rows = []
    for label, by_tokens in series.items():
        for tokens, c in by_tokens.items():
            sd = ablation.paired_sd_percent(c)
            low, high = sd_interval(sd, c.difference.n, confidence) if c.paired else (sd, sd)
            rows.append(
                {
                    "comparison": label,
                    "tokens": tokens,
                    "paired Δ": c.difference.format(2),
                    "s.d. of Δ (%)": round(sd, 3),
                    "s.d. low": round(low, 3),
                    "s.d. high": round(high, 3),
                    "detectable": _percent(c.min_detectable(confidence, power)),
                    "verdict": c.verdict(c.a),
                }
            )
    return rows


def training_noise_chart(rows: Sequence[dict], target: float = 1.0, confidence: float = 0.95):
    """Figure: :func:`training_noise_rows`' s.d. of the paired difference against tokens seen
    (log axes, ``confidence`` band), one line per comparison, the target as a dashed rule."""
    shown = [r for r in rows if r["s.d. of Δ (%)"] > 0 and r["tokens"] > 0]
    x = alt.X("tokens:Q", scale=alt.Scale(type="log"), title="tokens seen")
    y = alt.Y("s.d. of Δ (%):Q", scale=alt.Scale(type="log"),
              title="s.d. of the paired difference (% of perplexity)")  # fmt: skip
    color = alt.Color("comparison:N", legend=alt.Legend(orient="bottom", title=None))
    base = alt.Chart(alt.InlineData(values=shown))
    return (
        alt.layer(
            base.mark_area(opacity=0.15).encode(x=x, y="s.d. low:Q", y2="s.d. high:Q", color=color),
            base.mark_line(point=True).encode(
                x=x,
                y=y,
                color=color,
                tooltip=["comparison:N", "tokens:Q", "paired Δ:N", "s.d. of Δ (%):Q"],
            ),  # fmt: skip
            alt.Chart(alt.InlineData(values=[{"target": target}]))
            .mark_rule(strokeDash=[4, 4], color="grey")
            .encode(y="target:Q"),
        ).properties(
            width=520,
            height=260,
            title=f"Paired seed noise over training ({confidence:.0%} band from the chi-square "
            "distribution; dashed: the 1 % target)",
        )  # fmt: skip
    )


def training_noise_values(
    by_tokens: Mapping[int, Comparison],
    noise: ablation.TrainingNoise | None,
    earlier_tokens: int,
) -> dict[str, str]:
    """The phrases of a paragraph on one comparison over training (``by_tokens`` from
    :func:`~ropebook.analysis.ablation.comparisons_over_training`, ``noise`` its
    :func:`~ropebook.analysis.ablation.training_noise`): the last step against the earlier run
    (``earlier_tokens`` long), its paired s.d., the s.d. over the second half of training, the
    smallest effect the seeds detect and the seeds its ``effect_percent`` would need. With one
    seed per model (``noise`` is ``None``) every measure of noise reads ``"—"``."""
    tokens, last = max(by_tokens.items())
    values = {
        "tokens": f"{tokens:,}",
        "times": f"{tokens / earlier_tokens:.1f}×",
        "difference": last.difference.format(2),
        "seeds": str(last.difference.n),
    }
    if noise is None:
        return values | dict.fromkeys(
            ("sd", "sd_interval", "earlier_sd", "late_from", "late_range", "trend", "rho",
             "detectable", "seeds_needed"), "—"
        )  # fmt: skip
    return values | {
        "sd": f"{noise.sd:.2f} %",
        "sd_interval": f"{noise.sd_low:.2f}–{noise.sd_high:.2f} %",
        "earlier_sd": f"{noise.earlier_sd:.2f} %",
        "late_from": f"{noise.late_from:,}",
        "late_range": f"{noise.late_min:.2f}–{noise.late_max:.2f} %",
        "trend": noise.trend,
        "rho": f"{noise.rho:.2f}" if np.isfinite(noise.rho) else "—",
        "detectable": f"{noise.detectable:.2f} %",
        "seeds_needed": str(noise.seeds_needed),
    }


# ---------------------------------------------------------------- length extrapolation, p sweep


def extrapolation_rows(
    table: Mapping[tuple[str, str], Mapping[int, Estimate]],
    names: Sequence[str],
    domain: str,
    labels: Mapping[str, str],
    context: int,
) -> list[dict]:
    """One domain of :func:`extrapolation_table`: a row per encoding, a column per length."""
    return [
        {"encoding": labels[name]}
        | {f"{f}× ({f * context})": e.format(2) for f, e in table[name, domain].items()}
        for name in names
    ]


def extrapolation_chart(
    curves: Mapping[tuple[str, str], Sequence[ExtrapolationCurve]],
    labels: Mapping[str, str],
    *,
    max_factor: int,
    confidence: float = 0.95,
):
    """Figure: perplexity at each position (bins of half the training context; mean and interval
    over seeds) for every ``(name, domain)`` of ``curves``, one panel per domain, with the end of
    the training context dashed."""
    context = next(iter(curves.values()))[0].context
    rows = [
        row | {"encoding": labels[name], "domain": domain, "edge": 1.0}
        for (name, domain), cs in curves.items()
        for row in ablation.binned_ppl(cs, max(context // 2, 1), confidence)
    ]
    color = alt.Color("encoding:N", sort=list(labels.values()), legend=alt.Legend(orient="bottom"))
    band = alt.Chart().mark_area(opacity=0.2).encode(
        x=alt.X("x context:Q", title="position (multiples of the training context)"),
        y=alt.Y("low:Q", scale=alt.Scale(type="log"), title="perplexity at the position (log)"),
        y2="high:Q", color=color,
    )  # fmt: skip
    tips = [alt.Tooltip(f"{f}:Q", format=".2f") for f in ("ppl", "low", "high")]
    line = alt.Chart().mark_line().encode(
        x="x context:Q", y="ppl:Q", color=color,
        tooltip=["encoding:N", "start:Q", "stop:Q", *tips],
    )  # fmt: skip
    edge = alt.Chart().mark_rule(strokeDash=[4, 4], color="gray").encode(x="edge:Q")
    return (
        alt.layer(band, line, edge, data=alt.InlineData(values=rows))
        .properties(width=270, height=260)
        .facet(
            column=alt.Column("domain:N", title=None),
            title=f"Perplexity vs position, trained on {context} tokens, evaluated on "
            f"{max_factor * context}",
        )
        .resolve_scale(y="independent")
    )


def sweep_rows(
    table: Mapping[tuple[str, str], Mapping[int, Estimate]],
    sweep: Mapping[float, str],
    factors: Sequence[int],
    labels: Mapping[str, str],
    context: int,
    domain: str = "shakespeare",
) -> list[dict]:
    """The p sweep: perplexity (mean, interval) of each ``p -> model`` at each length."""
    return [
        {
            "p": p,
            "length": f"{f}× context ({f * context} tokens)",
            "ppl": e.mean,
            "low": e.low,
            "high": e.high,
            "model": labels[name],
        }
        for p, name in sweep.items()
        for f in factors
        for e in [table[name, domain][f]]
    ]


def step_rows(steps: Mapping[int, Sequence[Comparison]], context: int, digits: int = 2) -> list:
    """Each step up in p against the step before it (``steps``: length factor -> comparisons of
    the higher p against the lower): the paired difference and what the paired test says."""
    return [
        {
            "step": f"{c.a} vs {c.b}",
            "length": f"{f}× ({f * context} tokens)",
            "paired Δ": c.difference.format(digits),
            "paired test": c.paired_status,
        }
        for f, comparisons in steps.items()
        for c in comparisons
    ]


def sweep_chart(rows: Sequence[dict], title: str):
    """Figure: :func:`sweep_rows` as perplexity against ``p`` with interval bars, one panel per
    length (each with its own perplexity axis)."""
    base = alt.Chart()
    color = alt.Color("length:N", title="evaluated on", legend=alt.Legend(orient="bottom"))
    tips = [alt.Tooltip(f"{f}:Q", format=".3f") for f in ("ppl", "low", "high")]
    line = base.mark_line(point=True).encode(
        x=alt.X("p:Q", title="p (fraction of frequencies kept, fastest first)",
                scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("ppl:Q", scale=alt.Scale(zero=False), title="perplexity"),
        color=color, tooltip=["model:N", "length:N", *tips],
    )  # fmt: skip
    bars = base.mark_errorbar().encode(
        x="p:Q", y=alt.Y("low:Q", title="perplexity"), y2="high:Q", color=color
    )
    return (
        alt.layer(line, bars, data=alt.InlineData(values=list(rows)))
        .properties(width=270, height=260)
        .facet(column=alt.Column("length:N", title=None), title=title)
        .resolve_scale(y="independent")
    )
