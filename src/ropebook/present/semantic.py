"""The semantic-channels chapter's charts, tables and sentences, from the numbers of
:mod:`ropebook.analysis.semantic`: one function per figure or table of
``chapters/semantic_channels.py`` (gap curves, best-head curves, the proof's swaps, apostrophe,
content and sink heads, the runs past the training length).

Tables are lists of records with short headers for :func:`ropebook.plots.table`; charts are
Altair charts at most ~680 px wide, legends included (matplotlib for the two heatmap figures).
Nothing here trains or measures, except that :func:`head_figure` reads the head it draws.
"""

from __future__ import annotations

import altair as alt
import matplotlib.pyplot as plt
import numpy as np

from ropebook.analysis import interval_text
from ropebook.analysis.semantic import (
    BestHeadCurves,
    GapCurves,
    RotationPrediction,
    SemanticScan,
    ShownWindow,
    SinkHeads,
    SoftmaxBoundCheck,
    SwapAttack,
    beyond_context_lift,
    breaking_length_closed_form,
    frequency_label,
    head_maps,
    softmax,
)


def softmax_bound_text(check: SoftmaxBoundCheck) -> str:
    """One line on :func:`~ropebook.analysis.semantic.check_softmax_bound`'s count."""
    return (
        f"{check.checked:,} non-maximal entries in {check.n_draws:,} vectors: {check.violations} "
        f"above 1/(m+1); largest alpha_i (m+1) = {check.worst_ratio:.4f}"
    )


# ---------------------------------------------------------------- Lemma A.2: gap curves


def gap_table(curves: GapCurves) -> list[dict]:
    return [
        {"rotation": k, f"largest gap at N = {curves.n_max:,} (rad)": v}
        for k, v in curves.final.items()
    ]


def gap_chart(curves: GapCurves):
    return (
        alt.Chart(
            alt.InlineData(values=curves.rows),
            title="Lemma A.2: largest empty arc of {g·m mod 2π : m ≤ N}",
        )
        .mark_line()
        .encode(
            x=alt.X("N (tokens):Q", scale=alt.Scale(type="log"), title="N (tokens)"),
            y=alt.Y(
                "largest gap (rad):Q", scale=alt.Scale(type="log"), title="largest empty arc (rad)"
            ),
            color=alt.Color("rotation:N"),
            tooltip=[
                "rotation:N",
                "N (tokens):Q",
                alt.Tooltip("largest gap (rad):Q", format=".3g"),
            ],
        )
        .properties(width=480, height=300)
    )


# ---------------------------------------------------------------- Thm. 6.1: best heads


def best_head_chart(curves: BestHeadCurves):
    """The curves, dashed rules at each ``N*`` and a grey line at 1/2."""
    color = alt.Color("frequency:N", sort=None)
    lines = (
        alt.Chart(alt.InlineData(values=curves.rows))
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "N (tokens):Q", scale=alt.Scale(type="log"), title="sequence length N (tokens)"
            ),
            y=alt.Y("best worst-case α:Q", title="best worst-case attention on the target"),
            color=color,
            tooltip=[
                "frequency:N",
                "N (tokens):Q",
                alt.Tooltip("best worst-case α:Q", format=".3g"),
            ],
        )
    )
    stars = [
        {"N*": breaking_length_closed_form(g), "frequency": frequency_label(g)}
        for g in curves.frequencies
    ]
    rules = (
        alt.Chart(alt.InlineData(values=stars))
        .mark_rule(strokeDash=[4, 4])
        .encode(x="N*:Q", color=color)
    )
    half = alt.Chart(alt.InlineData(values=[{"y": 0.5}])).mark_rule(color="gray").encode(y="y:Q")
    return (lines + rules + half).properties(
        width=460,
        height=320,
        title=f"Thm. 6.1: best worst-case attention, scores bounded by {curves.budget:g}",
    )


# ---------------------------------------------------------------- Thm. 6.1: swaps on heads


def swap_figure(attack: SwapAttack, g: float):
    """Scores of one 2-D head before and after :func:`swap_attack` (target in red, swapped
    positions dashed), with the target's attention in each panel title."""
    n = len(attack.scores_before) - 1
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4), sharey=True)
    for ax, scores, where, title in (
        (axes[0], attack.scores_before, attack.target_before, "before the swaps"),
        (axes[1], attack.scores_after, attack.target_after, "after the swaps"),
    ):
        alpha = softmax(scores)[where]
        ax.bar(np.arange(len(scores)), scores, color="0.7", width=1.0, label="other tokens")
        ax.bar([where], [scores[where]], color="C3", width=1.5, label="target token")
        ax.set_title(f"{title}: α on target = {alpha:.3g}")
        ax.set_xlabel("key position (query at the last position)")
    for a, b in attack.swaps:
        for p in (a, b):
            axes[1].axvline(p, color="C0", lw=0.8, ls="--")
    axes[0].set_ylabel("score a_{N,j}")
    axes[0].legend(loc="lower left", fontsize=8)
    fig.suptitle(
        f"Thm. 6.1's swaps on a 2-D head, g = {g:.3g} rad/token, N = {n} "
        f"({len(attack.swaps)} swap(s), dashed)"
    )
    plt.tight_layout()
    plt.show()


def attack_table(rows: list[dict], ratios=(0.5, 1.1, 4.0)) -> list[dict]:
    keep = ("g", "head", "N", "N / N*", "α before", "α after", "success")
    return [{k: r[k] for k in keep} for r in rows if r["ratio"] in ratios]


def attack_chart(rows: list[dict]):
    return (
        alt.Chart(alt.InlineData(values=rows), title="Thm. 6.1's swaps: success rate around N*")
        .mark_line(point=True)
        .encode(
            x=alt.X("N / N*:Q", scale=alt.Scale(type="log"), title="sequence length / N* = ⌈π/g⌉"),
            y=alt.Y("success:Q", title="share of heads pushed to α ≤ ½"),
            color="frequency:N",
            strokeDash="head:N",
            tooltip=["frequency:N", "head:N", "N:Q", alt.Tooltip("α after:Q", format=".3g")],
        )
        .properties(width=480, height=260)
    )


# ---------------------------------------------------------------- trained models: apostrophe heads


def apostrophe_summary(documents, class_ids, decode, n_examples: int = 6) -> str:
    """How common the apostrophe tokens are in ``documents``, with the most frequent ones."""
    tokens = np.concatenate(documents)
    share = float(np.isin(tokens, class_ids).mean())
    counts = {int(i): int((tokens == i).sum()) for i in class_ids}
    common = sorted(counts, key=counts.get, reverse=True)[:n_examples]
    return (
        f"{len(documents)} test works, {sum(map(len, documents)):,} tokens; {len(class_ids)} token "
        f"ids contain an apostrophe, {100 * share:.2f}% of test tokens, e.g. "
        f"{[(decode([i]), counts[i]) for i in common]}"
    )


def checkpoint_rows(rows: list[dict], name: str = "SmolLM2") -> list[dict]:
    """A real checkpoint's rows of a per-seed table, its name where the seed goes."""
    return [{**row, "seed": name} for row in rows]


def with_checkpoint(rows: list[dict], real, field: str) -> list[dict]:
    """The book's rows of a reading, then the real checkpoint's (``real``: the same reading of
    the checkpoint, or ``None`` when none was read)."""
    return rows + (checkpoint_rows(getattr(real, field)) if real is not None else [])


def checkpoint_part(estimate, what: str) -> str:
    """The real checkpoint's part of a claim's measured text ("" when none was read)."""
    if estimate is None:
        return ""
    return f"; SmolLM2-135M: {what} {estimate.mean:.3f} {estimate.text}"


def apostrophe_measured(lifts: dict, real, beside: dict | None = None, n_seeds: int = 0) -> str:
    """The apostrophe head claim's measured text: RoPE's best-head lift (``lifts``: name ->
    Estimate, RoPE first, then its controls), the real checkpoint's part, the controls, and the
    build's own lifts ``beside`` (on its ``n_seeds`` seeds) where a kept study decided."""
    rope, *controls = lifts.items()
    text = (
        f"best rope head's lift on held-out windows {rope[1].mean:.3f} {rope[1].text}"
        + checkpoint_part(real, "best head's lift")
        + "; controls: "
        + "; ".join(f"{n}'s best head {e.mean:.3f} {e.text}" for n, e in controls)
    )
    if beside:
        text += f"; this build's {n_seeds} seed(s), beside: " + "; ".join(
            f"{name} {e.mean:.3f} {e.text}" for name, e in beside.items()
        )
    return text


def apostrophe_head_record(
    lifts: dict,
    real,
    threshold: float,
    build: dict | None = None,
    n_seeds: int = 0,
    basis: str | None = None,
) -> dict:
    """The apostrophe head claim's record (``CLAIMS.record``'s evidence and keywords), read on
    ``lifts`` (name -> Estimate, RoPE first, then its controls: the kept study's where it
    decided, on ``basis``, the build's own ``build`` beside on its ``n_seeds``), the real
    checkpoint's ``real`` and the line ``threshold``."""
    from ropebook.analysis.semantic import controlled_parts_verdict

    (_, lift), *controls = lifts.items()
    over = "seeds" if lift.n > 1 else "windows of one seed"  # what the intervals are over
    return {
        "evidence": controlled_parts_verdict(lift, real, [e for _, e in controls], threshold),
        "measured": apostrophe_measured(lifts, real, build, n_seeds),
        "seeds": lift.n if build else n_seeds,
        "basis": basis if build else None,
        "to_decide": apostrophe_to_decide(lift, dict(controls), threshold, over),
    }


def low_freq_measured(low_key, flat: float, excess, real, beside=None, n_seeds: int = 0) -> str:
    """The apostrophe head's frequency claim's measured text: this build's slowest-quarter key
    share (``low_key``, against a ``flat`` profile's), the ``excess`` over its layer's other
    heads that decides (the kept study's where it decided), the real checkpoint's part, and the
    build's own excess ``beside`` (on its ``n_seeds`` seeds) where a kept study decided."""
    text = (
        f"slowest-quarter share of key norm {low_key.mean:.2f} (flat {flat:.2f}), "
        f"{excess.mean:+.2f} {excess.text} above its layer's other heads"
        + (f" (the kept study's {excess.n} seeds)" if beside else "")
        + checkpoint_part(real, "its apostrophe head's excess")
    )
    if beside:
        text += f"; this build's {n_seeds} seed(s), beside: {beside.mean:+.2f} {beside.text}"
    return text


def apostrophe_to_decide(lift, controls: dict, threshold: float, samples: str) -> str:
    """What would decide the apostrophe head's claim left open
    (:func:`~ropebook.analysis.semantic.controlled_parts_verdict`): while the RoPE lift's
    interval contains the line, that interval resolved; past it, a control that clears the line
    too needs a line or a model that separates them, an open control its own interval resolved
    (``controls``: name -> the control's best-head lift)."""
    from ropebook.analysis.semantic import interval_verdict
    from ropebook.present import decide

    what = f"the lift's distance from {threshold}"
    if interval_verdict(lift.low, lift.high, threshold) != "held":
        return decide.interval_to_decide(lift, threshold, what=what, samples=samples)
    verdicts = {n: interval_verdict(e.low, e.high, threshold) for n, e in controls.items()}
    above = [
        f"{n}'s best head lifts {controls[n].mean:.3f} ({controls[n].text})"
        for n, v in verdicts.items()
        if v == "held"
    ]
    if above:
        return (
            "a line the controls miss: " + "; ".join(above) + f", above {threshold} as well, so "
            "this line does not single out RoPE's head; a new run with a line fixed above the "
            "controls' lifts before its data, or models whose controls grow no apostrophe head"
        )
    return "; ".join(
        f"{n}: " + decide.interval_to_decide(controls[n], threshold, what=what, samples=samples)
        for n, v in verdicts.items()
        if v != "not held"
    )


def low_freq_to_decide(
    excess, lift, found: bool, threshold: float, samples: str, profile: str
) -> str:
    """What would decide the apostrophe head's frequency claim: its key excess over the layer's
    other heads resolved where a head was ``found``; else a head to read, whose ``lift`` must
    clear ``threshold`` (seeds, or models that grow one when it lies below)."""
    from ropebook import zoo
    from ropebook.present import decide

    if found:
        what = "the excess over the layer's other heads"
        return decide.interval_to_decide(excess, 0.0, what=what, samples=samples)
    head = (
        f"an apostrophe head to read: the best head's lift {lift.mean:.3f} ({lift.text}) must "
        f"lie above {threshold}; "
    )
    if lift.high < threshold:
        return head + (
            f"it lies below, so models that grow one (here {zoo.budget(profile)}; other "
            f"profiles: {decide.other_profiles(profile)})"
        )
    what = f"the lift's distance from {threshold}"
    return head + decide.interval_to_decide(lift, threshold, what=what, samples=samples)


def head_scatter(measured: dict[int, SemanticScan], title: str):
    """Every head of one model (per seed): apostrophe lift against position R²."""
    rows = [
        {
            "seed": s,
            "head": f"L{layer}H{head}",
            "layer": layer,
            "apostrophe lift": float(scan.prev_lift[layer, head]),
            "position R²": float(scan.position_r2[layer, head]),
            "BOS mass": float(scan.bos_mass[layer, head]),
        }
        for s, scan in measured.items()
        for layer in range(scan.position_r2.shape[0])
        for head in range(scan.position_r2.shape[1])
    ]
    return (
        alt.Chart(alt.InlineData(values=rows), title=title)
        .mark_point(filled=True, opacity=0.75)
        .encode(
            x=alt.X(
                "position R²:Q",
                scale=alt.Scale(domain=[0, 1]),
                title="score variance explained by distance (R²)",
            ),
            y=alt.Y("apostrophe lift:Q", title="apostrophe lift (attention)"),
            color="layer:O",
            shape="seed:N",
            tooltip=[
                "seed:N",
                "head:N",
                alt.Tooltip("apostrophe lift:Q", format=".3f"),
                alt.Tooltip("position R²:Q", format=".2f"),
                alt.Tooltip("BOS mass:Q", format=".2f"),
            ],
        )
        .properties(width=440, height=300)
    )


def head_figure(trained, window: ShownWindow, layer: int, head: int, frequencies, title: str):
    """Draw one head on ``window`` as in Fig. 17 (attention, raw scores, query and key chunk
    norms, fastest chunk on top); return its raw scores ``[T, T]`` (masked entries NaN)."""
    maps = head_maps(trained, window, layer, head)
    probs, scores, q_norms, k_norms = maps.probs, maps.scores, maps.q_norms, maps.k_norms
    labels, red = window.labels, window.is_class
    fig, axes = plt.subplots(2, 2, figsize=(11, 8.5))
    panels = [
        (axes[0, 0], probs, "attention α_{i,j}", "viridis"),
        (axes[0, 1], scores, "raw scores a_{i,j} (masked: grey)", "RdBu_r"),
        (axes[1, 0], q_norms, "query chunk norms", "magma"),
        (axes[1, 1], k_norms, "key chunk norms", "magma"),
    ]
    for ax, matrix, name, cmap in panels:
        kwargs = {}
        if cmap == "RdBu_r":
            bound = np.nanmax(np.abs(matrix))
            cmap = plt.get_cmap(cmap).with_extremes(bad="0.85")
            kwargs = {"vmin": -bound, "vmax": bound}
        image = ax.imshow(matrix, cmap=cmap, aspect="auto", **kwargs)
        ax.grid(False)
        fig.colorbar(image, ax=ax, fraction=0.046)
        ax.set_title(name)
        ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=6)
        for tick, is_red in zip(ax.get_xticklabels(), red, strict=True):
            tick.set_color("C3" if is_red else "black")
        ax.set_xlabel("key token" if matrix.shape[0] == len(labels) else "token")
        if matrix.shape[0] == len(labels):
            ax.set_yticks(range(len(labels)), labels, fontsize=6)
            for tick, is_red in zip(ax.get_yticklabels(), red, strict=True):
                tick.set_color("C3" if is_red else "black")
            ax.set_ylabel("query token")
        else:
            ax.set_yticks(range(len(frequencies)), [f"{g:.2g}" for g in frequencies], fontsize=7)
            ax.set_ylabel("chunk frequency g_k (rad/token), fastest on top")
    fig.suptitle(title)
    plt.tight_layout()
    plt.show()
    return scores


def raw_score_table(scores, is_class, label: str) -> list[dict]:
    """Fig. 12's reading of an apostrophe head: the paper's raw scores for Gemma 7B next to ours
    (``scores [T, T]`` from :func:`head_figure`, queries 1 onwards): mean score of the BOS key,
    mean score of a previous apostrophe, range of every other causal key."""
    t = len(is_class)
    rows_after = [i for i in range(2, t) if is_class[i - 1]]
    others = np.array(
        [scores[i, j] for i in range(1, t) for j in range(1, i + 1)
         if not (j == i - 1 and is_class[j])]
    )  # fmt: skip
    previous = (
        f"{np.mean([scores[i, i - 1] for i in rows_after]):.2f}" if rows_after else "none in window"
    )
    return [
        {"head": "Gemma 7B (paper, Fig. 12)", "BOS key": "≈ 2", "previous apostrophe": "≈ 7",
         "other keys": "≈ −12 to ≈ 0"},
        {"head": label, "BOS key": f"{np.nanmean(scores[1:, 0]):.2f}",
         "previous apostrophe": previous,
         "other keys": f"{np.nanmin(others):.2f} to {np.nanmax(others):.2f}"},
    ]  # fmt: skip


# ---------------------------------------------------------------- trained models: the BOS sink


def gemma_sink_row() -> dict:
    """App. E.1's numbers for Gemma 7B's apostrophe head, as a row of ``SinkHeads.chunk_rows``
    (its chunk's breaking length from the closed form)."""
    from ropebook.analysis.semantic import GEMMA_G119, breaking_length_closed_form

    n_star = breaking_length_closed_form(GEMMA_G119)
    return {"model": "Gemma 7B (paper)", "seed": "—", "top chunk": "119 of 128",
            "its g": GEMMA_G119, "N* = ⌈π/g⌉": n_star, "q·k to BOS": 24.9,
            "q·k to others": -85.5}  # fmt: skip


def sink_chart(sinks: SinkHeads, seed: int):
    return (
        alt.Chart(alt.InlineData(values=[r for r in sinks.bars if r["seed"] == seed]))
        .mark_bar()
        .encode(
            x=alt.X("chunk:O", title="chunk (0 = fastest frequency)"),
            y=alt.Y("BOS preference:Q", title="BOS term − mean other term (score units)"),
            color=alt.Color("model:N", legend=None),
            column=alt.Column("model:N", title=None),
            tooltip=["model:N", "chunk:O", "g_k:N", alt.Tooltip("BOS preference:Q", format=".3f")],
        )
        .properties(width=160, height=240, title="Which chunks make the sink head prefer BOS")
    )


# ---------------------------------------------------------------- past the training length


_MARGIN_FIELDS = ("BOS margin", "BOS attention", "apostrophe lift")


def margin_rows(profiles: dict, sink: dict, apostrophe: dict) -> list[dict]:
    """Chart records per bucket of query positions: the sink head's BOS margin and attention
    and the apostrophe head's lift. ``profiles``: ``(model, seed) -> LengthProfile``; ``sink``
    and ``apostrophe``: ``(model, seed) -> (layer, head)``."""
    rows = []
    for (name, s), prof in profiles.items():
        layer, head = sink[name, s]
        a_layer, a_head = apostrophe[name, s]
        for b in range(prof.bos_margin.shape[-1]):
            lift = prof.prev_lift[a_layer, a_head, b]
            rows.append(
                {
                    "model": name,
                    "seed": s,
                    "query block start (tokens)": b * prof.bucket,
                    "BOS margin": float(prof.bos_margin[layer, head, b]),
                    "BOS attention": float(prof.bos_mass[layer, head, b]),
                    "apostrophe lift": float(lift) if np.isfinite(lift) else None,
                }
            )
    return rows


def margin_chart(rows: list[dict], context: int, longest: int):
    """The three quantities of :func:`margin_rows` against the query position, stacked, with a
    dashed rule at the training context."""
    rule = (
        alt.Chart(alt.InlineData(values=[{"x": context}]))
        .mark_rule(strokeDash=[4, 4], color="gray")
        .encode(x="x:Q")
    )
    panels = [
        alt.Chart(alt.InlineData(values=rows))
        .mark_line(point=True)
        .encode(
            x=alt.X("query block start (tokens):Q", title="query position (tokens)"),
            y=alt.Y(f"{field}:Q", title=field),
            color="model:N",
            strokeDash="seed:N",
            tooltip=[
                "model:N",
                "seed:N",
                "query block start (tokens):Q",
                alt.Tooltip(f"{field}:Q", format=".3f"),
            ],  # fmt: skip
        )
        .properties(width=480, height=150, title=f"{field} past the context ({context} tokens)")
        + rule
        for field in _MARGIN_FIELDS
    ]
    return alt.vconcat(*panels).properties(
        title=f"Sink and apostrophe heads on windows of {longest}× the training length"
    )


_LENGTH_FIELDS = ("BOS margin, last block", "BOS attention, last block", "apostrophe lift")


def length_rows(profiles: dict, sink: dict, apostrophe: dict) -> list[dict]:
    """Records per model, seed and length: the sink head's BOS margin and attention over the
    last bucket, the apostrophe head's lift beyond the context (:func:`beyond_context_lift`).
    ``profiles``: ``(model, seed, length factor) -> LengthProfile``."""
    rows = []
    for (name, s, factor), prof in profiles.items():
        layer, head = sink[name, s]
        lift, n_on = beyond_context_lift(prof, *apostrophe[name, s])
        rows.append(
            {
                "model": name,
                "seed": s,
                "length (× context)": factor,
                "BOS margin, last block": float(prof.bos_margin[layer, head, -1]),
                "BOS attention, last block": float(prof.bos_mass[layer, head, -1]),
                "apostrophe lift": lift if np.isfinite(lift) else None,
                "apostrophes seen": n_on,
            }
        )
    return rows


def length_table(rows: list[dict]) -> list[dict]:
    short = {"length (× context)": "× context", "BOS margin, last block": "BOS margin",
             "BOS attention, last block": "BOS α", "apostrophe lift": "apostr. lift",
             "apostrophes seen": "apostr. seen"}  # fmt: skip
    return [{short.get(k, k): v for k, v in r.items()} for r in rows]


def length_chart(rows: list[dict]):
    panels = [
        alt.Chart(alt.InlineData(values=rows))
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "length (× context):Q",
                scale=alt.Scale(type="log", base=2),
                title="length (× training context)",
            ),  # fmt: skip
            y=alt.Y(f"{field}:Q", title=field),
            color="model:N",
            strokeDash="seed:N",
            tooltip=[
                "model:N",
                "seed:N",
                "length (× context):Q",
                alt.Tooltip(f"{field}:Q", format=".3f"),
            ],  # fmt: skip
        )
        .properties(width=140, height=220)
        for field in _LENGTH_FIELDS
    ]
    return alt.hconcat(*panels).properties(
        title="Semantic heads as the window grows past the training length"
    )


def rotation_chart(prediction: RotationPrediction, title: str, n_points: int = 96):
    """Measured (solid) and rotation-only (dashed) BOS term per chunk, about ``n_points``
    positions each, and a dotted rule at each chunk's ``N*`` inside the window."""
    p = prediction
    step = max(1, len(p.positions) // n_points)
    label = [f"{c}: g={g:.2g}" for c, g in enumerate(p.frequencies)]
    rows = [
        {"chunk": label[c], "query position": int(p.positions[i]), "BOS term": float(terms[i, c]),
         "source": source}
        for c in range(len(label))
        for i in range(0, len(p.positions), step)
        for source, terms in (("measured", p.measured), ("rotation only", p.predicted))
    ]  # fmt: skip
    stars = [
        {"chunk": label[c], "N*": breaking_length_closed_form(g)}
        for c, g in enumerate(p.frequencies)
        if g > 0 and breaking_length_closed_form(g) < p.positions[-1] + 1
    ]
    color = alt.Color("chunk:N", sort=None)
    lines = (
        alt.Chart(alt.InlineData(values=rows))
        .mark_line()
        .encode(
            x=alt.X("query position:Q", title="query position i = distance to BOS (tokens)"),
            y=alt.Y("BOS term:Q", title="chunk term of a_{i,0}"),
            color=color,
            strokeDash=alt.StrokeDash("source:N"),
        )
    )
    rules = (
        alt.Chart(alt.InlineData(values=stars))
        .mark_rule(strokeDash=[1, 3])
        .encode(x="N*:Q", color=color)
    )
    return (lines + rules).properties(width=480, height=320, title=title)


def retention_table(retention: dict[str, np.ndarray], longest: int) -> list[dict]:
    """Mean and interval of :func:`bos_retention` per model (samples: seeds × windows)."""
    rows = []
    for name, samples in retention.items():
        estimate = interval_text(samples, unit="seeds × windows")
        rows.append(
            {"model": name, f"retention at {longest}×": estimate.mean, "interval": estimate.text}
        )
    return rows
