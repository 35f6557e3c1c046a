"""The positional-heads chapter's tables and figures, from the numbers of
:mod:`ropebook.analysis.heads`: one function per table or figure of
``chapters/positional_heads.py``.

Tables are lists of records for :func:`ropebook.plots.table`; charts are Altair, figures
matplotlib. Nothing here trains or measures.
"""

from __future__ import annotations

import altair as alt
import numpy as np

from ropebook import rope
from ropebook.analysis import chunk_norms, interval_text
from ropebook.analysis.heads import (
    KINDS,
    PAPER_HEADS,
    FastShare,
    HeadScan,
    IsolatedFit,
    TargetActivations,
    ThresholdStudy,
    by_model,
    classify,
    control_cosines,
    count_heads,
    epsilon_achieved,
    paper_ratios,
    positional_score,
    strongest,
)

# ---------------------------------------------------------------- detector and isolated heads


def detector_table(matrices: dict, eps: float) -> list[dict]:
    """Def. 5.1 on named ``[T, T]`` attention matrices: the ``eps`` each reaches as a diagonal and
    as a previous-token head, its mean attention on each target, and its class at ``eps``."""
    return [
        {
            "matrix": name,
            "ε, diagonal": epsilon_achieved(a, "diagonal"),
            "ε, previous": epsilon_achieved(a, "previous"),
            "mean α_i,i": positional_score(a, "diagonal"),
            "mean α_i,i−1": positional_score(a, "previous"),
            f"class at ε = {eps}": classify(a, eps),
        }
        for name, a in matrices.items()
    ]


def _groups(fits: dict) -> dict[tuple[str, str], list[IsolatedFit]]:
    groups: dict[tuple[str, str], list[IsolatedFit]] = {}
    for (encoding, kind, _), fit in fits.items():
        groups.setdefault((encoding, kind), []).append(fit)
    return groups


def isolated_tables(fits: dict) -> tuple[list[dict], list[dict]]:
    """Two tables over the seeds of each (encoding, kind) of :func:`fit_isolated_heads`.

    First, the Prop. 5.2 probes: the largest target weight on ``[bos, x, x]``, the mean target
    weight on repeated rows and the largest excess ``alpha - 1/r`` there. Second, training: the
    mean target weight on all held-out rows, the worst seed's ``eps`` and the mean final loss.
    """
    probes, training = [], []
    for (encoding, kind), group in _groups(fits).items():
        probes.append(
            {
                "encoding": encoding,
                "head": kind,
                "max α, [bos,x,x]": max(f.bos_x_x for f in group),
                "mean α, repeated": float(np.mean([f.repeated_target for f in group])),
                "max (α − 1/r)": max(f.repeat_excess for f in group),
            }
        )
        training.append(
            {
                "encoding": encoding,
                "head": kind,
                "mean α, all rows": float(np.mean([f.mean_target for f in group])),
                "ε (worst seed)": max(f.epsilon for f in group),
                "final loss": float(np.mean([f.losses[-1] for f in group])),
            }
        )
    return probes, training


def loss_chart(fits: dict, points: int = 80):
    """Training loss of every isolated head (about ``points`` steps per curve), log scale."""
    rows = [
        {"step": step, "encoding": enc, "head": kind, "seed": s, "loss": float(f.losses[step])}
        for (enc, kind, s), f in fits.items()
        for step in range(0, len(f.losses), max(1, len(f.losses) // points))
    ]
    title = "One head trained alone to be positional: NoPE vs RoPE"
    return (
        alt.Chart(alt.InlineData(values=rows), title=title)
        .mark_line()
        .encode(
            x=alt.X("step:Q", title="Adam step"),
            y=alt.Y(
                "loss:Q", scale=alt.Scale(type="log"), title="loss −log α on the target (nats)"
            ),
            color=alt.Color("encoding:N"),
            strokeDash=alt.StrokeDash("head:N"),
            detail="seed:N",
        )
        .properties(width=520, height=260)
    )


def plot_construction(psi, key, row, norm2: float, *, base: float = 10_000.0):
    """Fig. 1 of the paper for one 2-D plane: identical query ``psi`` and key ``key`` before RoPE,
    the rotated keys ``k_0 .. k_i`` against the rotated query ``q_i`` (``i = len(row) - 1``), and
    the attention ``row`` of query ``i`` at ``||psi||^2 = norm2``."""
    import matplotlib.pyplot as plt

    i_query = len(row) - 1
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.6))
    colors = plt.cm.viridis(np.linspace(0, 0.9, i_query + 1))
    for ax in axes[:2]:
        ax.add_patch(plt.Circle((0, 0), 1, fill=False, color="0.8"))
        ax.set_xlim(-1.3, 1.3), ax.set_ylim(-1.3, 1.3), ax.set_aspect("equal")
        ax.set_xlabel("plane coordinate 1"), ax.set_ylabel("plane coordinate 2")
    arrow = dict(head_width=0.06, length_includes_head=True)
    axes[0].arrow(0, 0, *psi, color="crimson", lw=2, **arrow, label="query ψ (every i)")
    axes[0].arrow(0, 0, *key, color="navy", lw=2, **arrow, label="key ρ(g)ψ (every j)")
    axes[0].legend(loc="lower left", fontsize=8)
    axes[0].set_title("before RoPE: identical keys")
    for j in range(i_query + 1):
        kj = rope.rotation_matrix(j, 2, base=base) @ key
        axes[1].arrow(0, 0, *kj, color=colors[j], **arrow)
        axes[1].annotate(f"k{j}", 1.15 * kj, ha="center", va="center", fontsize=8)
    q_rot = rope.rotation_matrix(i_query, 2, base=base) @ psi
    axes[1].arrow(0, 0, *(0.8 * q_rot), color="crimson", lw=3, **arrow)
    axes[1].annotate(f"q{i_query}", 0.6 * q_rot + [0.12, 0.0], color="crimson", fontsize=9)
    axes[1].set_title(f"after RoPE: k{i_query - 1} aligns with q{i_query}")
    axes[2].bar(np.arange(i_query + 1), row, color=colors)
    axes[2].set_xlabel("key position j (tokens)"), axes[2].set_ylabel(f"α_{i_query},j")
    axes[2].set_title(f"attention of query {i_query} (‖ψ‖² = {norm2:.1f})")
    fig.suptitle("Thm. 5.3 construction on one RoPE plane (g = 1 rad/token): a previous-token head")
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- how large ||psi||^2 must be


def threshold_chart(study: ThresholdStudy, head_dim: int):
    """The exact ``eps`` curves of the diagonal construction, with the closed-form points."""
    curves = (
        alt.Chart(alt.InlineData(values=study.curves))
        .mark_line()
        .encode(
            x=alt.X(
                "‖ψ‖²:Q",
                scale=alt.Scale(type="log"),
                title="‖ψ‖² (squared norm of queries and keys)",
            ),
            y=alt.Y(
                "ε:Q", scale=alt.Scale(type="log", domain=[1e-12, 1]), title="ε = 1 − min α_i,i"
            ),
            color=alt.Color("N:O", title="N (tokens)"),
            strokeDash=alt.StrokeDash("ψ on:N"),
        )
    )
    stars = (
        alt.Chart(alt.InlineData(values=study.stars))
        .mark_point(filled=True, size=50)
        .encode(x="‖ψ‖²:Q", y="ε:Q", color="N:O", shape=alt.Shape("ψ on:N"))
    )
    return (curves + stars).properties(
        width=480,
        height=300,
        title=f"Thm. 5.3: sharpness of the diagonal construction (d = {head_dim})",
    )


# ---------------------------------------------------------------- trained models


def found_table(scans: dict, threshold: float) -> list[dict]:
    """Every positional head of ``{(model, seed): HeadScan}`` at ``threshold``: its mean target
    weight, Def. 5.1's ``eps`` reached, its mean on repeated rows and its target cosine."""
    rows = []
    for (name, seed), scan in scans.items():
        for kind in KINDS:
            for layer, head in scan.heads(kind, threshold):
                rows.append(
                    {
                        "model": f"{name} s{seed}",
                        "kind": kind,
                        "head": f"L{layer} H{head}",
                        "mean α": float(scan.score[kind][layer, head]),
                        "ε (Def. 5.1)": float(scan.epsilon[kind][layer, head]),
                        "α, repeated": float(scan.repeated[kind][layer, head]),
                        "a / CS bound": float(scan.cosine[kind][layer, head]),
                    }
                )
    return rows


def count_table(scans: dict, threshold: float) -> list[dict]:
    """Positional heads per model (mean and interval over seeds) and per layer (all seeds)."""
    rows = []
    for (name, kind), values in count_heads(scans, threshold).items():
        by_seed = by_model(scans, name)
        n_layers, n_heads = next(iter(by_seed.values())).shape
        per_layer = np.zeros(n_layers, int)
        for scan in by_seed.values():
            for k in KINDS if kind == "either" else (kind,):
                for layer, _ in scan.heads(k, threshold):
                    per_layer[layer] += 1
        estimate = interval_text(values, 1)
        rows.append(
            {
                "model": name,
                "kind": kind,
                f"per model (of {n_layers * n_heads})": estimate.mean,
                "interval": estimate.text,
                "by layer": per_layer.tolist(),
            }
        )
    return rows


def head_scatter_chart(scans: dict, threshold: float):
    """Every head of every model: mean attention on itself against on the previous token, one
    panel per model, the threshold dashed."""
    rows = [
        {
            "model": name,
            "seed": seed,
            "layer": layer,
            "head": head,
            "mean α on diagonal": float(scan.score["diagonal"][layer, head]),
            "mean α on i−1": float(scan.score["previous"][layer, head]),
        }
        for (name, seed), scan in scans.items()
        for layer in range(scan.shape[0])
        for head in range(scan.shape[1])
    ]

    def panel(name: str):
        points = (
            alt.Chart(alt.InlineData(values=[r for r in rows if r["model"] == name]))
            .mark_point(filled=True, opacity=0.7)
            .encode(
                x=alt.X("mean α on diagonal:Q", scale=alt.Scale(domain=[0, 1])),
                y=alt.Y("mean α on i−1:Q", scale=alt.Scale(domain=[0, 1])),
                color=alt.Color("layer:O"),
                tooltip=["seed:N", "layer:O", "head:O", "mean α on diagonal:Q", "mean α on i−1:Q"],
            )
        )
        line = alt.InlineData(values=[{"t": threshold}])
        rule = alt.Chart(line).mark_rule(strokeDash=[4, 4])
        return (points + rule.encode(x="t:Q") + rule.encode(y="t:Q")).properties(
            width=270, height=260, title=f"{name} model"
        )

    names = dict.fromkeys(name for name, _ in scans)
    return alt.hconcat(*(panel(name) for name in names)).properties(
        title="Every head: mean attention on itself vs on the previous token"
    )


def token_labels(tokens, width: int = 8) -> list[str]:
    """Short printable labels of token ids (``<bos>`` for 0), for attention-map axes."""
    from ropebook import data

    return [
        "<bos>" if x == 0 else repr(data.decode([int(x)]))[1:-1][:width] for x in np.asarray(tokens)
    ]


def plot_strongest_heads(internals: dict, scans: dict, labels, threshold: float):
    """Fig. 5 analogue: for each model (rows) and kind (columns) the attention map of the head
    with the highest mean target weight. ``internals[name]`` is ``model.forward``'s per-layer
    list on one window, ``scans[name]`` the same model's :class:`HeadScan`."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(internals), len(KINDS), figsize=(10, 9.5), squeeze=False)
    for r, name in enumerate(internals):
        for c, kind in enumerate(KINDS):
            layer, head = strongest(scans[name], kind)
            probs = np.asarray(internals[name][layer]["probs"][0, head])
            ax = axes[r, c]
            ax.imshow(probs, cmap="viridis", vmin=0, vmax=1)
            ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=6)
            ax.set_yticks(range(len(labels)), labels, fontsize=6)
            ax.set_xlabel("key (token)"), ax.set_ylabel("query (token)")
            score = scans[name].score[kind][layer, head]
            tag = "positional" if score >= threshold else "below threshold"
            ax.set_title(
                f"{name}: best {kind} head L{layer} H{head}\nmean α = {score:.2f} ({tag})",
                fontsize=9,
            )
            ax.grid(False)
    fig.suptitle("Strongest diagonal and previous-token heads (attention weights, held-out text)")
    fig.tight_layout()
    return fig


def plot_chunk_norms(internals: list, scan: HeadScan, pairing: str = "half"):
    """Figs 6, 14-16 analogue: for the strongest head of each kind (rows), the chunk norms of its
    queries and keys at every token (fastest plane left) and its attention map."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(KINDS), 3, figsize=(12, 7.5))
    for r, kind in enumerate(KINDS):
        layer, head = strongest(scan, kind)
        layer_int = internals[layer]
        for c, (key, title) in enumerate((("q", "queries"), ("k", "keys"))):
            norms = chunk_norms(np.asarray(layer_int[key][0, :, head]), pairing)
            im = axes[r, c].imshow(norms, aspect="auto", cmap="magma")
            axes[r, c].set_xlabel("RoPE plane k (0 = fastest)")
            axes[r, c].set_ylabel("token position")
            axes[r, c].set_title(f"{kind} head L{layer} H{head}: {title} chunk norms", fontsize=9)
            axes[r, c].grid(False)
            fig.colorbar(im, ax=axes[r, c], label="‖chunk‖₂")
        axes[r, 2].imshow(np.asarray(layer_int["probs"][0, head]), cmap="viridis", vmin=0, vmax=1)
        axes[r, 2].set_xlabel("key position (tokens)"), axes[r, 2].set_ylabel("query position")
        axes[r, 2].set_title(
            f"attention (mean α on target {scan.score[kind][layer, head]:.2f})", fontsize=9
        )
        axes[r, 2].grid(False)
    fig.suptitle("RoPE model: queries, keys and attention of the strongest positional heads")
    fig.tight_layout()
    return fig


def frequency_profile_chart(scan: HeadScan):
    """Mean chunk norm per plane of the strongest head of each kind, against its layer's mean."""
    rows = []
    for kind in KINDS:
        layer, head = strongest(scan, kind)
        for which, norms in (("queries", scan.q_norms), ("keys", scan.k_norms)):
            for plane in range(norms.shape[-1]):
                for curve, value in (
                    ("this head", norms[layer, head, plane]),
                    ("layer average", norms[layer, :, plane].mean()),
                ):
                    rows.append(
                        {
                            "head": f"{kind} L{layer} H{head}",
                            "of": which,
                            "plane k": plane,
                            "curve": curve,
                            "mean chunk norm": float(value),
                        }
                    )
    return (
        alt.Chart(alt.InlineData(values=rows))
        .mark_line(point=True)
        .encode(
            x=alt.X("plane k:Q", title="RoPE plane k (0 = fastest, 1 rad/token)"),
            y=alt.Y("mean chunk norm:Q", title="mean chunk 2-norm"),
            color=alt.Color("curve:N"),
            strokeDash=alt.StrokeDash("of:N"),
        )
        .properties(width=240, height=220)
        .facet(column=alt.Column("head:N", title=None))
        .properties(title="Frequency usage of the strongest RoPE positional heads vs their layer")
    )


def fast_share_rows(shares: list[FastShare]) -> list[dict]:
    """One row per :class:`~ropebook.analysis.heads.FastShare`: the head's fast-plane share, the
    rest of its layer's and the difference."""
    return [
        {
            "seed": s.seed,
            "kind": s.kind,
            "head": f"L{s.layer} H{s.head}",
            "this head": s.share,
            "rest of layer": s.rest,
            "difference": s.gap,
        }
        for s in shares
    ]


def checkpoint_heads_table(shares: list[FastShare], scan: HeadScan) -> list[dict]:
    """A real checkpoint's positional heads, one row each: mean attention on the target, the
    fast-plane share against the rest of its layer, and the target cosine (Tables 3-5)."""
    return [
        {
            "kind": s.kind,
            "head": f"L{s.layer} H{s.head}",
            "mean α": float(scan.score[s.kind][s.layer, s.head]),
            "fast share": s.share,
            "rest of layer": s.rest,
            "difference": s.gap,
            "a / CS bound": float(scan.cosine[s.kind][s.layer, s.head]),
        }
        for s in shares
    ]


def two_parts(ours, real, spec: str) -> str:
    """What a claim's two parts measured (:class:`~ropebook.analysis.Estimate` or ``None`` each):
    the book's RoPE models, over seeds, and the real checkpoint, over its heads."""

    def part(estimate) -> str:
        return f"{estimate.mean:{spec}} {estimate.text}" if estimate else "no positional head"

    return f"book's RoPE models: {part(ours)}; SmolLM2-135M: {part(real)}"


def real_heads_text(real_scans: dict, n_positional: int) -> str:
    """How many of the real checkpoint's heads are positional, or that none was read."""
    if not real_scans:
        return "no real checkpoint was read"
    (scan,) = real_scans.values()
    layers, per_layer = scan.shape
    return f"{n_positional} of SmolLM2's {layers * per_layer} heads are positional"


def activation_table(activations: TargetActivations) -> list[dict]:
    """Tables 3-5: one row per query of :func:`~ropebook.analysis.heads.target_activations`."""
    a = activations
    return [
        {
            "token": i,
            "bound ‖q_i‖‖k_i‖/√d": float(a.bound_diagonal[i]),
            "diagonal a_ii": float(a.diagonal[i]),
            "previous a_i,i-1": float(a.previous[i]),
            "bound ‖q_i‖‖k_i-1‖/√d": float(a.bound_previous[i]),
        }
        for i in range(len(a.diagonal))
    ]


def paper_table(threshold: float) -> list[dict]:
    """The paper's quoted heads (:data:`~ropebook.analysis.heads.PAPER_HEADS`), one row each:
    activation / Cauchy-Schwarz bound at the target, token by token, their mean, and how many
    tokens reach ``threshold``."""
    rows = []
    for quoted in PAPER_HEADS:
        ratios = quoted.ratios()
        rows.append(
            {
                "table (paper)": f"Table {quoted.table}, Gemma 7B L{quoted.layer} H{quoted.head}",
                "target": quoted.kind,
                "tokens": ", ".join(str(t) for t in quoted.tokens),
                "activation / bound, per token": ", ".join(f"{x:.2f}" for x in ratios),
                "mean": float(np.mean(ratios)),
                f"tokens ≥ {threshold:g}": f"{sum(x >= threshold for x in ratios)} of {len(ratios)}",
            }
        )
    return rows


def _beside_row(who: str, unit: str, values, rest, threshold: float) -> dict:
    values = [float(v) for v in values]
    mean = float(np.mean(values)) if values else None
    return {
        "heads": who,
        "over": f"{len(values)} {unit}",
        "activation / bound, mean": "—" if mean is None else mean,
        "range": f"{min(values):.2f} – {max(values):.2f}" if values else "—",
        f"mean ≥ {threshold:g}": "—" if mean is None else ("yes" if mean >= threshold else "no"),
        "control heads, mean": float(np.mean(rest)) if len(rest) else "—",
    }


def cauchy_schwarz_beside(
    scans: dict, head_threshold: float, threshold: float, real_scans: dict | None = None
) -> list[dict]:
    """The paper's heads beside ours: each quoted head of the paper (over its tokens), each seed
    of the book's RoPE and NoPE models (over their positional heads, the seed's mean being what
    the claim's interval counts) and a real checkpoint (over its positional heads), with the
    target activation as a fraction of its Cauchy-Schwarz bound, whether the mean reaches
    ``threshold``, and the control: the same ratio at the same targets in the model's heads that
    are positional of neither kind (:func:`~ropebook.analysis.heads.control_cosines`; the paper
    quotes none)."""
    rows = [
        _beside_row(f"paper: {q.label}", "tokens", q.ratios(), [], threshold) for q in PAPER_HEADS
    ]
    sources = (
        (scans, "rope", "book's RoPE, seed"),
        (scans, "nope", "book's NoPE, seed"),
        (real_scans or {}, "rope", "SmolLM2-135M"),
    )
    for source, name, prefix in sources:
        for seed, scan in by_model(source, name).items():
            positional = [
                float(scan.cosine[kind][layer, head])
                for kind in KINDS
                for layer, head in scan.heads(kind, head_threshold)
            ]
            rest = [v for _, v in control_cosines({(name, seed): scan}, head_threshold, name)]
            who = f"{prefix} {seed}" if source is scans else prefix
            rows.append(_beside_row(who, "positional heads", positional, rest, threshold))
    return rows


_PLACE = {"held": "above the line", "not held": "below the line", "bounded": "at the line"}


def control_texts(control: dict, verdicts: dict[str, str]) -> tuple[str, str]:
    """The Cauchy-Schwarz control in words: per control (``{name: Estimate or None}``, with the
    same line's verdict on it), its mean, interval and side of the line; and whether the line
    separates positional heads from the controls (fails every control that was measured)."""
    parts = [
        f"{name} {e.mean:.2f} ({e.text}), {_PLACE.get(verdicts[name], 'undecided')}"
        if e
        else f"{name}: no control head"
        for name, e in control.items()
    ]
    measured = [v for v in verdicts.values() if v != "not testable here"]
    if not measured:
        result = "had no control head to fail"
    elif all(v == "not held" for v in measured):
        result = "fails every control: it separates positional heads from the rest, as predicted"
    elif "held" in measured:
        result = (
            "is cleared by a control too: it does not separate positional heads from the rest "
            "here, so a claim it passes is *uninformative here*"
        )
    else:
        result = (
            "is not shown to fail every control (a control is undecided or sits at the line), so "
            "a claim it passes is *cannot decide*"
        )
    return "; ".join(parts), result


def cauchy_schwarz_rows(cosines: dict[str, tuple[list, list]]) -> list[dict]:
    """Mean target cosine (activation / Cauchy-Schwarz bound) of the RoPE positional heads of each
    kind (:func:`~ropebook.analysis.heads.target_cosines`, pooled over seeds: a description, not
    the claim's unit) against all other heads of the same models, next to the paper's."""
    paper = paper_ratios()
    return [
        {
            "target": kind,
            "heads": len(pos),
            "positional": float(np.mean(pos)) if pos else float("nan"),
            "other heads": float(np.mean(rest)),
            "paper": float(np.mean(paper[kind])),
        }
        for kind, (pos, rest) in cosines.items()
    ]


def layer_table(scans: dict) -> list[dict]:
    """Per model and layer: the largest excess ``alpha - 1/r`` on repeated rows and the best mean
    target weight, for each kind."""
    rows = []
    for (name, seed), scan in scans.items():
        for layer in range(scan.shape[0]):
            rows.append(
                {
                    "model": f"{name} s{seed}",
                    "layer": layer,
                    "α − 1/r, diag.": float(scan.repeat_excess["diagonal"][layer].max()),
                    "α − 1/r, prev.": float(scan.repeat_excess["previous"][layer].max()),
                    "α_i,i": float(scan.score["diagonal"][layer].max()),
                    "α_i,i−1": float(scan.score["previous"][layer].max()),
                }
            )
    return rows
