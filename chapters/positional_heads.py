# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # How RoPE builds positional heads
#
# Some attention heads ignore *what* the tokens say and attend only by *where* they are: a
# **diagonal** head puts (almost) all of token $i$'s attention on itself, a **previous-token**
# head on token $i-1$. Barbero et al. (2025, Sec. 5) find both in Gemma 7B (their Fig. 5), see
# that such heads run on RoPE's *fastest* frequencies (Fig. 6) and explain why:
#
# - **Prop. 5.2** — a head without positional encoding (NoPE) cannot be diagonal or
#   previous-token: on the input $[\mathrm{bos}, x, x]$ it cannot tell the two copies of $x$
#   apart, so it gives them equal weight, at most $1/2$ each.
# - **Thm. 5.3** — with RoPE it can, as sharply as wanted: set every query to $\psi$ and every
#   key to $\psi$ (diagonal) or to $R\psi$, $\psi$ rotated one step (previous token). The target
#   score is then $\lVert\psi\rVert^2$, the Cauchy–Schwarz maximum, every other key scores less,
#   and the softmax concentrates on the target as $\lVert\psi\rVert^2$ grows (Fig. 1).
# - **App. E.1** — Gemma's positional heads look like this construction: their target
#   activations sit close to the Cauchy–Schwarz bound $\lVert q_i\rVert\lVert k_j\rVert/\sqrt d$
#   (Tables 3–5).
#
# This chapter turns the definition into a detector, checks both proofs with sympy and with
# gradient descent on a head in isolation, measures how large $\lVert\psi\rVert^2$ must be, and
# then scans every head of the book's small RoPE and NoPE models for positional heads.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu
epsilon = 0.01  # Def. 5.1 precision for the constructions: attention on the target > 1 - epsilon
head_threshold = 0.5  # a trained head is positional if its mean target attention reaches this
fast_fraction = 0.25  # the "high frequencies": this fastest fraction of the chunks
n_windows = 32  # held-out windows per model for the head scan
window_len = 0  # tokens per window; 0 means the training context of the model
window_seed = 0  # numpy Generator seed for the window starts
isolated_seeds = 3  # seeds of the isolated-head optimisation (Prop. 5.2 vs Thm. 5.3)
isolated_steps = 400  # Adam steps per isolated head
isolated_vocab = 8  # tokens in the isolated-head task (small, so tokens repeat often)
isolated_len = 16  # sequence length of the isolated-head task
map_tokens = 24  # tokens shown in the attention maps and tables
n_seeds = 0  # 0 uses the profile seeds; more trains (once, cached) zoo seeds 0 .. n_seeds-1

# %%
import time

import altair as alt
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import display

from ropebook import claims, data, model, plots, rope, train, zoo
from ropebook.analysis import chunk_norms, heads, mean_interval
from ropebook.proofs import positional_heads as proofs

plots.setup()
started = time.perf_counter()
if profile == "smoke":
    n_windows, isolated_seeds, isolated_steps = min(n_windows, 4), min(isolated_seeds, 1), 120
seeds = zoo.PROFILES[profile].seeds if n_seeds == 0 else tuple(range(n_seeds))
config, _ = zoo.configs("rope", profile=profile)
head_dim, base = config.head_dim, config.rope_base
grid = rope.frequencies(head_dim, base)
window_len = window_len or config.context
print(
    f"profile {profile!r}: {config.n_layers} layers x {config.n_heads} heads, head_dim {head_dim} "
    f"({head_dim // 2} RoPE planes, fastest g_0 = {grid[0]:g} rad/token), seeds {list(seeds)}"
)


def interval_text(values, digits: int = 2, unit: str = "seeds") -> tuple[float, float, float, str]:
    """Mean, 95% t-interval and how to print it (a single sample has no interval)."""
    mean, low, high = mean_interval(values)
    n = np.size(values)
    if n < 2:
        return mean, low, high, f"1 sample: {mean:.{digits}f}, no interval"
    return mean, low, high, f"95% CI [{low:.{digits}f}, {high:.{digits}f}] over {n} {unit}"


# %% [markdown]
# ## Def. 5.1 as code
#
# The paper calls a head diagonal, for a precision $\epsilon > 0$ and a size $N$, if
# $\alpha_{i,i} > 1-\epsilon$ for every query $i \le N$, and previous-token if
# $\alpha_{i,i-1} > 1-\epsilon$. With a causal mask the first query sees only itself, so
# $\alpha_{1,1} = 1$ for *every* head and there is no token before it: `analysis.heads` leaves
# the first row out of both tests. `epsilon_achieved` returns the smallest $\epsilon$ a head
# reaches on some inputs, $1 - \min_i \alpha_{i,\mathrm{target}}$; trained heads are never
# perfect, so `positional_score` (the *mean* attention on the target) ranks them softly.
#
# On three constructed $12\times 12$ matrices — the identity, the shift onto the sub-diagonal,
# and uniform causal attention — the detector says:

# %%
t = 12
shift = np.eye(t, k=-1)
shift[0, 0] = 1.0  # the first query has only itself to attend to
constructed = {
    "identity": np.eye(t),
    "sub-diagonal shift": shift,
    "uniform causal": np.tril(np.ones((t, t))) / np.arange(1, t + 1)[:, None],
}
detector_rows = [
    {
        "matrix": name,
        "ε reached, diagonal": heads.epsilon_achieved(a, "diagonal"),
        "ε reached, previous": heads.epsilon_achieved(a, "previous"),
        "mean on diagonal": heads.positional_score(a, "diagonal"),
        "mean on i−1": heads.positional_score(a, "previous"),
        f"class at ε = {epsilon}": heads.classify(a, epsilon),
    }
    for name, a in constructed.items()
]
detector_ok = [r[f"class at ε = {epsilon}"] for r in detector_rows] == [
    "diagonal",
    "previous",
    "neither",
]
plots.table(detector_rows)

# %% [markdown]
# ## Prop. 5.2: a NoPE head cannot do it
#
# Take the sequence $[\mathrm{bos}, x, x]$. Without positions, a head computes the query and key
# of a token from the token alone, so the two copies of $x$ get the same key and the third query
# scores them equally: $a_{3,2} = a_{3,3}$. The softmax then splits their weight evenly and
#
# $$\alpha_{3,3} = \alpha_{3,2} = \frac{1}{e^{a_{3,1}-a_{3,3}} + 2} < \tfrac12,$$
#
# which rules out both a diagonal and a previous-token head for every $\epsilon \le 1/2$
# (App. A.2). The same argument with $r$ copies caps the weight of any repeated key at $1/r$.
# sympy checks each step for generic $2\times 2$ query and key maps:

# %%
proofs.nope_cannot()

# %% [markdown]
# ### Empirically: train one head alone
#
# The proof says no NoPE head can; gradient descent should therefore fail however hard it tries.
# We give one head the most freedom a head in isolation has — its queries and keys are free
# lookup tables of the token (token 0 is BOS) — and train it with Adam (optax) to be diagonal or
# previous-token (loss $-\log\alpha_{i,\mathrm{target}}$) on random sequences of
# `isolated_len` tokens over a vocabulary of `isolated_vocab`, where tokens repeat constantly.
# The same head with RoPE (`head_dim` of the book's models, $\theta = 10{,}000$) is trained
# identically. We then read off the attention on the target in the last row of
# $[\mathrm{bos}, x, x]$ (worst case over $x$: the *largest*), the mean attention on held-out
# random sequences, and the $\epsilon$ of Def. 5.1 reached there.

# %%
fits = {
    (enc, kind, s): heads.fit_isolated_head(
        kind,
        enc,
        vocab=isolated_vocab,
        head_dim=head_dim,
        seq_len=isolated_len,
        steps=isolated_steps,
        base=base,
        seed=s,
    )
    for enc in ("nope", "rope")
    for kind in heads.KINDS
    for s in range(isolated_seeds)
}
fit_rows = []
for enc in ("nope", "rope"):
    for kind in heads.KINDS:
        group = [fits[enc, kind, s] for s in range(isolated_seeds)]
        fit_rows.append(
            {
                "encoding": enc,
                "head": kind,
                "max α on [bos,x,x]": max(f.bos_x_x for f in group),
                "mean α, repeated target": float(np.mean([f.repeated_target for f in group])),
                "max (α − 1/r), repeated": max(f.repeat_excess for f in group),
                "mean α, all rows": float(np.mean([f.mean_target for f in group])),
                "ε reached (worst seed)": max(f.epsilon for f in group),
                "final loss": float(np.mean([f.losses[-1] for f in group])),
            }
        )
plots.table(fit_rows)

# %%
curve = [
    {"step": step, "encoding": enc, "head": kind, "seed": s, "loss": float(f.losses[step])}
    for (enc, kind, s), f in fits.items()
    for step in range(0, len(f.losses), max(1, len(f.losses) // 80))
]
alt.Chart(
    alt.InlineData(values=curve), title="One head trained alone to be positional: NoPE vs RoPE"
).mark_line().encode(
    x=alt.X("step:Q", title="Adam step"),
    y=alt.Y("loss:Q", scale=alt.Scale(type="log"), title="loss −log α on the target (nats)"),
    color=alt.Color("encoding:N"),
    strokeDash=alt.StrokeDash("head:N"),
    detail="seed:N",
).properties(width=520, height=260)

# %% [markdown]
# The NoPE head's loss stalls at a floor set by repetition, while the RoPE head's keeps falling.
# On $[\mathrm{bos}, x, x]$ the best NoPE head comes within a hair of $1/2$ but never above it:
# it learns to ignore BOS and then has to split evenly between the two copies (the weights are
# evaluated in float64, so the gap to $1/2$ is printed below rather than rounded away). On every
# repeated row of the held-out sequences its target weight stays at or below $1/r$ (the column
# "max (α − 1/r)" is $\le 0$). The RoPE head, trained identically, puts nearly all of its
# attention on the target on the same inputs.

# %%
nope_bxx = max(fits["nope", k, s].bos_x_x for k in heads.KINDS for s in range(isolated_seeds))
nope_excess = max(
    fits["nope", k, s].repeat_excess for k in heads.KINDS for s in range(isolated_seeds)
)
rope_bxx = [fits["rope", k, s].bos_x_x for k in heads.KINDS for s in range(isolated_seeds)]
rope_bxx_mean, rope_bxx_low, rope_bxx_high, rope_bxx_text = interval_text(
    rope_bxx, 3, "fits (seeds × kinds)"
)
print(
    f"NoPE: max alpha on [bos,x,x] = 1/2 - {0.5 - nope_bxx:.1e}, max (alpha - 1/r) = {nope_excess:.2e}; "
    f"RoPE: alpha on [bos,x,x] = {rope_bxx_mean:.4f} ({rope_bxx_text})"
)

# %% [markdown]
# ## Thm. 5.3: RoPE can, as sharply as wanted
#
# For one plane rotating at $g$ per token, put $q_i = k_j = \psi$. RoPE turns the score into
# $a_{i,j} = \lVert\psi\rVert^2\cos((j-i)g)$, which is the Cauchy–Schwarz maximum
# $\lVert q_i\rVert\lVert k_j\rVert$ at $j=i$ and smaller elsewhere. For the previous-token head,
# keys $k_j = \rho(g)\psi$ make $a_{i,i-1} = \lVert\psi\rVert^2$ instead; with several planes,
# $k^{(k)} = \rho(g_k)\psi^{(k)}$, i.e. $k = R\psi$. The attention on the target,
# $1/(1+\sum_m e^{-\lVert\psi\rVert^2 \delta_m})$ with $\delta_m = 1-\cos(m g) > 0$, tends to 1 as
# $\lVert\psi\rVert^2\to\infty$:

# %%
proofs.rope_can()

# %% [markdown]
# **Fig. 1 of the paper, redrawn from the construction.** One plane, the fastest ($g = 1$
# rad/token). Left: before RoPE every key is the same vector $k = \rho(g)\psi$ and every query
# is $\psi$. Middle: RoPE turns the key at position $j$ by $jg$ and the query at $i$ by $ig$;
# the key at $i-1$ lands exactly on the query of $i$ (drawn for $i = 6$). Right: the attention
# row of query 6, for $\lVert\psi\rVert^2$ just large enough that $\alpha_{6,5} > 0.9$.

# %%
g, i_query = 1.0, 6
psi2 = np.array([1.0, 0.0])
key2 = rope.rotation_matrix(1, 2, base=base) @ psi2
norm_fig1 = heads.exact_threshold_norm(0.1, i_query + 1, "previous", [g], [1.0])
row = heads.construction_attention("previous", psi2 * np.sqrt(norm_fig1), i_query + 1, base=base)[
    i_query
]
fig, axes = plt.subplots(1, 3, figsize=(11, 3.6))
colors = plt.cm.viridis(np.linspace(0, 0.9, i_query + 1))
for ax in axes[:2]:
    ax.add_patch(plt.Circle((0, 0), 1, fill=False, color="0.8"))
    ax.set_xlim(-1.3, 1.3), ax.set_ylim(-1.3, 1.3), ax.set_aspect("equal")
    ax.set_xlabel("plane coordinate 1"), ax.set_ylabel("plane coordinate 2")
arrow = dict(head_width=0.06, length_includes_head=True)
axes[0].arrow(0, 0, *psi2, color="crimson", lw=2, **arrow, label="query ψ (every i)")
axes[0].arrow(0, 0, *key2, color="navy", lw=2, **arrow, label="key ρ(g)ψ (every j)")
axes[0].legend(loc="lower left", fontsize=8)
axes[0].set_title("before RoPE: identical keys")
for j in range(i_query + 1):
    kj = rope.rotation_matrix(j, 2, base=base) @ key2
    axes[1].arrow(0, 0, *kj, color=colors[j], **arrow)
    axes[1].annotate(f"k{j}", 1.15 * kj, ha="center", va="center", fontsize=8)
q_rot = rope.rotation_matrix(i_query, 2, base=base) @ psi2
axes[1].arrow(0, 0, *(0.8 * q_rot), color="crimson", lw=3, **arrow)
axes[1].annotate(f"q{i_query}", 0.6 * q_rot + [0.12, 0.0], color="crimson", fontsize=9)
axes[1].set_title(f"after RoPE: k{i_query - 1} aligns with q{i_query}")
axes[2].bar(np.arange(i_query + 1), row, color=colors)
axes[2].set_xlabel("key position j (tokens)"), axes[2].set_ylabel(f"α_{i_query},j")
axes[2].set_title(f"attention of query {i_query} (‖ψ‖² = {norm_fig1:.1f})")
fig.suptitle("Thm. 5.3 construction on one RoPE plane (g = 1 rad/token): a previous-token head")
fig.tight_layout()

# %% [markdown]
# ### How large must $\lVert\psi\rVert^2$ be?
#
# If every wrong key scores at most $\lVert\psi\rVert^2(1-\delta)$ and a row has at most $N-1$
# of them, the target gets at least $1/(1+(N-1)e^{-\lVert\psi\rVert^2\delta})$, so
#
# $$\lVert\psi\rVert^2 \;\ge\; s^\star(\epsilon, N) = \frac{\ln\big((N-1)(1-\epsilon)/\epsilon\big)}{\delta},
# \qquad \delta = \min_{1\le |m| < N}\; \sum_k w_k\,\big(1-\cos(m g_k)\big)$$
#
# guarantees $\alpha_{i,\mathrm{target}} \ge 1-\epsilon$ for every $i < N$ ($w_k$ is the share
# of $\lVert\psi\rVert^2$ in plane $k$). sympy checks the closed form:

# %%
proofs.threshold()

# %% [markdown]
# The margin $\delta$ is where the frequencies matter. With $\psi$ on the fastest plane alone
# (the paper's $d=2$ proof), $m g$ comes back close to a multiple of $2\pi$ at some distance
# $m < N$ (Lemma A.2: the multiples of $g$ are dense modulo $2\pi$), so $\delta$ shrinks and the
# required norm explodes with $N$. Spreading $\psi$ over all planes, each turning at its own
# speed, keeps $\delta$ large: no distance realigns every plane at once. The figure shows the
# exact $\epsilon = 1 - \min_i \alpha_{i,i}$ of the diagonal construction against
# $\lVert\psi\rVert^2$ (both log scale) for several $N$; the points mark the closed-form
# $s^\star$ for `epsilon`, which always lies at or beyond where the curve crosses `epsilon`.

# %%
sizes = [8, 32, 128] if profile == "smoke" else [8, 32, 128, 512]
placements = {
    "fastest plane only": np.eye(head_dim // 2)[0],
    f"all {head_dim // 2} planes": np.ones(head_dim // 2),
}
norm_grid = np.logspace(-0.5, 6, 50 if profile == "smoke" else 80)
eps_curves, star_points, threshold_rows = [], [], []
for place, weights in placements.items():
    for n in sizes:
        curve_eps = heads.construction_epsilon(norm_grid, n, "diagonal", grid, weights)
        eps_curves += [
            {"‖ψ‖²": float(s), "ε": float(max(e, 1e-12)), "N": n, "ψ on": place}
            for s, e in zip(norm_grid, curve_eps, strict=True)
        ]
        for kind in heads.KINDS:
            s_star = heads.threshold_norm(epsilon, n, kind, grid, weights)
            exact = heads.exact_threshold_norm(epsilon, n, kind, grid, weights)
            psi = heads.plane_vector(head_dim, weights / weights.sum() * s_star)
            reached = heads.epsilon_achieved(
                heads.construction_attention(kind, psi, n, base=base), kind
            )
            threshold_rows.append(
                {
                    "ψ on": place,
                    "head": kind,
                    "N": n,
                    "margin δ": heads.margin(kind, n, grid, weights),
                    "closed form s*": s_star,
                    "exact threshold": exact,
                    "ε reached at s* (apply_rope, float32)": reached,
                    f"< ε = {epsilon}": bool(reached < epsilon * 1.001),
                }
            )
            if kind == "diagonal":
                star_points.append({"‖ψ‖²": s_star, "ε": epsilon, "N": n, "ψ on": place})
construction_ok = all(r[f"< ε = {epsilon}"] for r in threshold_rows)
base_chart = (
    alt.Chart(alt.InlineData(values=eps_curves))
    .mark_line()
    .encode(
        x=alt.X(
            "‖ψ‖²:Q", scale=alt.Scale(type="log"), title="‖ψ‖² (squared norm of queries and keys)"
        ),
        y=alt.Y("ε:Q", scale=alt.Scale(type="log", domain=[1e-12, 1]), title="ε = 1 − min α_i,i"),
        color=alt.Color("N:O", title="N (tokens)"),
        strokeDash=alt.StrokeDash("ψ on:N"),
    )
)
stars = (
    alt.Chart(alt.InlineData(values=star_points))
    .mark_point(filled=True, size=50)
    .encode(x="‖ψ‖²:Q", y="ε:Q", color="N:O", shape=alt.Shape("ψ on:N"))
)
(base_chart + stars).properties(
    width=540,
    height=300,
    title=f"Thm. 5.3: sharpness of the diagonal construction (d = {head_dim})",
)

# %%
plots.table(threshold_rows)

# %% [markdown]
# With $\psi$ on all planes the required norm barely grows with $N$, while on the fastest plane
# alone it grows by orders of magnitude. Both reach $1-\epsilon$ for every $N$ when the models'
# own `apply_rope` (float32) rotates the constructed queries and keys at $s^\star$.

# %% [markdown]
# ## Positional heads in trained models
#
# Now the book's models (`zoo` models `rope` and `nope`, every seed of the profile). We run each
# on `n_windows` windows of held-out Shakespeare (the test split, never trained on) and measure,
# for every head, the mean attention on the diagonal and on $i-1$. A head counts as **diagonal**
# or **previous-token** when that mean is at least `head_threshold`; Def. 5.1's strict
# $\epsilon$ (worst row) is reported next to it.

# %%
test_tokens = data.load_tokens("shakespeare", "test")
windows = train.sample_windows(
    test_tokens, window_len, n_windows, np.random.default_rng([window_seed, 51])
)
models = {
    (name, s): zoo.load(name, seed=s, profile=profile, progress=False)
    for name in ("rope", "nope")
    for s in seeds
}
scans = {key: heads.scan_model(m.params, m.config, windows) for key, m in models.items()}
found = []
for (name, s), scan in scans.items():
    for kind in heads.KINDS:
        for layer, head in scan.heads(kind, head_threshold):
            found.append(
                {
                    "model": name,
                    "seed": s,
                    "kind": kind,
                    "layer": layer,
                    "head": head,
                    "mean α on target": float(scan.score[kind][layer, head]),
                    "ε reached (Def. 5.1)": float(scan.epsilon[kind][layer, head]),
                    "mean α, repeated target": float(scan.repeated[kind][layer, head]),
                    "target a / CS bound": float(scan.cosine[kind][layer, head]),
                }
            )
print(f"{len(windows)} windows x {window_len} tokens; {len(found)} positional heads found")
plots.table(found) if found else print("no head reaches the threshold")

# %%
counts = {}
for name in ("rope", "nope"):
    for kind in heads.KINDS:
        counts[name, kind] = [len(scans[name, s].heads(kind, head_threshold)) for s in seeds]
    counts[name, "either"] = [
        d + p for d, p in zip(counts[name, "diagonal"], counts[name, "previous"], strict=True)
    ]
count_rows = []
for (name, kind), values in counts.items():
    mean, low, high, text = interval_text(values, 1)
    per_layer = np.zeros(config.n_layers, int)
    for s in seeds:
        kinds = heads.KINDS if kind == "either" else (kind,)
        for k in kinds:
            for layer, _ in scans[name, s].heads(k, head_threshold):
                per_layer[layer] += 1
    count_rows.append(
        {
            "model": name,
            "kind": kind,
            "heads per model (mean)": mean,
            "interval": text,
            "of": config.n_layers * config.n_heads,
            "by layer (all seeds)": per_layer.tolist(),
        }
    )
plots.table(count_rows)

# %% [markdown]
# ### Every head at a glance
#
# Each point is one head of one model: its mean attention on the diagonal against its mean
# attention on the previous token. Positional heads sit in the top-left or bottom-right corner
# beyond the dashed threshold; most heads spread their attention and sit near the origin.

# %%
scatter = [
    {
        "model": name,
        "seed": s,
        "layer": layer,
        "head": head,
        "mean α on diagonal": float(scan.score["diagonal"][layer, head]),
        "mean α on i−1": float(scan.score["previous"][layer, head]),
    }
    for (name, s), scan in scans.items()
    for layer in range(config.n_layers)
    for head in range(config.n_heads)
]


def head_scatter(name: str) -> alt.LayerChart:
    rows = [r for r in scatter if r["model"] == name]
    points = (
        alt.Chart(alt.InlineData(values=rows))
        .mark_point(filled=True, opacity=0.7)
        .encode(
            x=alt.X("mean α on diagonal:Q", scale=alt.Scale(domain=[0, 1])),
            y=alt.Y("mean α on i−1:Q", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("layer:O"),
            tooltip=["seed:N", "layer:O", "head:O", "mean α on diagonal:Q", "mean α on i−1:Q"],
        )
    )
    line = alt.InlineData(values=[{"t": head_threshold}])
    rules = alt.Chart(line).mark_rule(strokeDash=[4, 4]).encode(x="t:Q") + alt.Chart(
        line
    ).mark_rule(strokeDash=[4, 4]).encode(y="t:Q")
    return (points + rules).properties(width=330, height=300, title=f"{name} model")


alt.hconcat(head_scatter("rope"), head_scatter("nope")).properties(
    title="Every head: mean attention on itself vs on the previous token"
)

# %% [markdown]
# ### Fig. 5 analogue: what the strongest heads look like
#
# For each model and kind, the head with the highest mean target attention (seed
# `seeds[0]`), on the first `map_tokens` tokens of one held-out window. Whether it passes the
# threshold is in the title.

# %%
first = seeds[0]
window = windows[:1, :map_tokens]
labels = ["<bos>" if x == 0 else repr(data.decode([int(x)]))[1:-1][:8] for x in window[0]]
internals = {
    name: model.forward(
        models[name, first].params, window, models[name, first].config, return_internals=True
    )[1]
    for name in ("rope", "nope")
}


def strongest(name: str, kind: str) -> tuple[int, int]:
    score = scans[name, first].score[kind]
    layer, head = np.unravel_index(np.argmax(score), score.shape)
    return int(layer), int(head)


fig, axes = plt.subplots(2, 2, figsize=(10, 9.5))
for r, name in enumerate(("rope", "nope")):
    for c, kind in enumerate(heads.KINDS):
        layer, head = strongest(name, kind)
        probs = np.asarray(internals[name][layer]["probs"][0, head])
        ax = axes[r, c]
        ax.imshow(probs, cmap="viridis", vmin=0, vmax=1)
        ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=6)
        ax.set_yticks(range(len(labels)), labels, fontsize=6)
        ax.set_xlabel("key (token)"), ax.set_ylabel("query (token)")
        score = scans[name, first].score[kind][layer, head]
        tag = "positional" if score >= head_threshold else "below threshold"
        ax.set_title(
            f"{name}: best {kind} head L{layer} H{head}\nmean α = {score:.2f} ({tag})", fontsize=9
        )
        ax.grid(False)
fig.suptitle("Strongest diagonal and previous-token heads (attention weights, held-out text)")
fig.tight_layout()

# %% [markdown]
# ### Figs 6, 14–16 analogue: which frequencies do they use?
#
# The paper finds that Gemma's positional heads rely on the *fastest* RoPE planes. For the
# strongest RoPE heads we show the 2-norm of every query and key chunk at every token (fastest
# plane at the left, read before rotation: RoPE preserves chunk norms) and the same head's mean
# profile against the average over all heads of its layer.

# %%
fig, axes = plt.subplots(2, 3, figsize=(12, 7.5))
for r, kind in enumerate(heads.KINDS):
    layer, head = strongest("rope", kind)
    layer_int = internals["rope"][layer]
    for c, (key, title) in enumerate((("q", "queries"), ("k", "keys"))):
        norms = chunk_norms(np.asarray(layer_int[key][0, :, head]), config.pairing)
        im = axes[r, c].imshow(norms, aspect="auto", cmap="magma")
        axes[r, c].set_xlabel("RoPE plane k (0 = fastest)")
        axes[r, c].set_ylabel("token position")
        axes[r, c].set_title(f"{kind} head L{layer} H{head}: {title} chunk norms", fontsize=9)
        axes[r, c].grid(False)
        fig.colorbar(im, ax=axes[r, c], label="‖chunk‖₂")
    axes[r, 2].imshow(np.asarray(layer_int["probs"][0, head]), cmap="viridis", vmin=0, vmax=1)
    axes[r, 2].set_xlabel("key position (tokens)"), axes[r, 2].set_ylabel("query position")
    axes[r, 2].set_title(
        f"attention (mean α on target {scans['rope', first].score[kind][layer, head]:.2f})",
        fontsize=9,
    )
    axes[r, 2].grid(False)
fig.suptitle("RoPE model: queries, keys and attention of the strongest positional heads")
fig.tight_layout()

# %%
profiles = []
for kind in heads.KINDS:
    layer, head = strongest("rope", kind)
    scan = scans["rope", first]
    for which, norms in (("queries", scan.q_norms), ("keys", scan.k_norms)):
        for plane in range(head_dim // 2):
            profiles += [
                {
                    "head": f"{kind} L{layer} H{head}",
                    "of": which,
                    "plane k": plane,
                    "curve": "this head",
                    "mean chunk norm": float(norms[layer, head, plane]),
                },
                {
                    "head": f"{kind} L{layer} H{head}",
                    "of": which,
                    "plane k": plane,
                    "curve": "layer average",
                    "mean chunk norm": float(norms[layer, :, plane].mean()),
                },
            ]
alt.Chart(alt.InlineData(values=profiles)).mark_line(point=True).encode(
    x=alt.X("plane k:Q", title="RoPE plane k (0 = fastest, 1 rad/token)"),
    y=alt.Y("mean chunk norm:Q", title="mean chunk 2-norm"),
    color=alt.Color("curve:N"),
    strokeDash=alt.StrokeDash("of:N"),
).properties(width=300, height=220).facet(column=alt.Column("head:N", title=None)).properties(
    title="Frequency usage of the strongest RoPE positional heads vs their layer"
)

# %% [markdown]
# To compare all heads at once we summarise a head by the share of its Cauchy–Schwarz budget
# $\sum_k \lVert q^{(k)}\rVert\,\lVert k^{(k)}\rVert$ that sits in the fastest `fast_fraction`
# of the planes (uniform use gives `fast_fraction`). For every RoPE positional head we subtract
# the mean share of the other heads of its layer.

# %%
fast_rows, fast_gaps = [], []
for s in seeds:
    scan = scans["rope", s]
    share = heads.fast_share(scan.q_norms, scan.k_norms, fast_fraction)  # [L, H]
    for kind in heads.KINDS:
        for layer, head in scan.heads(kind, head_threshold):
            others = np.delete(share[layer], head)
            gap = float(share[layer, head] - others.mean())
            fast_gaps.append(gap)
            fast_rows.append(
                {
                    "seed": s,
                    "kind": kind,
                    "layer": layer,
                    "head": head,
                    "fast share, this head": float(share[layer, head]),
                    "fast share, rest of layer": float(others.mean()),
                    "difference": gap,
                }
            )
plots.table(fast_rows) if fast_rows else print("no RoPE positional heads to compare")

# %% [markdown]
# ### Tables 3–5 analogue: activations against the Cauchy–Schwarz bound
#
# If a head implements the construction, its query and key are aligned at the target and the
# activation $a_{i,j} = \langle R^i q_i, R^j k_j\rangle/\sqrt d$ is close to its bound
# $\lVert q_i\rVert\lVert k_j\rVert/\sqrt d$. For the strongest RoPE diagonal and previous-token
# heads, the first tokens of the held-out window (token 0 is wherever the window starts):

# %%
for kind in heads.KINDS:
    layer, head = strongest("rope", kind)
    print(
        f"RoPE {kind} head L{layer} H{head} (mean α on target {scans['rope', first].score[kind][layer, head]:.2f}):"
    )
    display_rows = heads.activation_table(internals["rope"][layer], head, n_tokens=8)
    display(plots.table(display_rows))

# %% [markdown]
# The paper's numbers, quoted from its Tables 3 and 5 (Gemma 7B; tokens 2–7 of Table 3 and
# tokens 1–7 of Table 5), with the ratio activation / bound computed here:

# %%
paper_t3 = {  # token: (upper bound, diagonal, previous-token), Layer 1 Head 5
    2: (203.65, 156.93, 76.67),
    3: (483.97, 383.00, 82.13),
    4: (141.48, 98.47, 29.01),
    5: (130.71, 92.15, 45.33),
    6: (168.52, 137.10, 73.04),
    7: (122.31, 90.71, 55.25),
}
paper_t5 = {  # token: (upper bound, diagonal, previous-token), Layer 1 Head 8
    1: (76.54, 3.29, 31.04),
    2: (79.13, 5.21, 35.31),
    3: (102.41, -1.46, 18.91),
    4: (61.34, 4.23, 19.72),
    5: (54.54, 4.61, 18.96),
    6: (56.62, 2.47, 17.46),
    7: (57.2, 3.08, 13.67),
}
paper_diag_ratio = [d / u for u, d, _ in paper_t3.values()]
paper_prev_ratio = [p / u for u, _, p in paper_t5.values()]
plots.table(
    [
        {
            "table (paper)": "Table 3, diagonal head",
            "target": "diagonal",
            "activation / bound, per token": ", ".join(f"{x:.2f}" for x in paper_diag_ratio),
            "mean": float(np.mean(paper_diag_ratio)),
        },
        {
            "table (paper)": "Table 5, previous-token head",
            "target": "previous token",
            "activation / bound, per token": ", ".join(f"{x:.2f}" for x in paper_prev_ratio),
            "mean": float(np.mean(paper_prev_ratio)),
        },
    ]
)

# %% [markdown]
# Over all held-out windows, the ratio at the target is the cosine between the rotated query and
# key. We compare it for the positional heads with the same ratio in all other heads of the
# same models (the same offset, i.e. what a non-positional head does at that distance):

# %%
cs_rows, cs_positional = [], []
for kind in heads.KINDS:
    pos, rest = [], []
    for s in seeds:
        scan = scans["rope", s]
        chosen = set(scan.heads(kind, head_threshold))
        for layer in range(config.n_layers):
            for head in range(config.n_heads):
                (pos if (layer, head) in chosen else rest).append(
                    float(scan.cosine[kind][layer, head])
                )
    cs_positional += pos
    cs_rows.append(
        {
            "target": kind,
            "positional heads": len(pos),
            "activation / bound, positional (mean)": float(np.mean(pos)) if pos else float("nan"),
            "activation / bound, other heads (mean)": float(np.mean(rest)),
            "paper (Gemma 7B, quoted tables)": float(
                np.mean(paper_diag_ratio if kind == "diagonal" else paper_prev_ratio)
            ),
        }
    )
plots.table(cs_rows)

# %% [markdown]
# ## NoPE: the bound in layer 0, and what deeper layers do
#
# Prop. 5.2 is about a head *in isolation*. In a NoPE model only the first layer is in that
# situation: its queries and keys are functions of the token embedding alone. So on every row
# whose target token occurs $r$ times among the visible keys, every first-layer head must put
# at most $1/r$ on the target — a check with no slack. Deeper layers read a residual stream that
# has already mixed the prefix, and a causal mask does leak position (a token can count how many
# tokens precede it through the softmax normaliser), so a NoPE model *can* grow positional heads
# there (Kazemnejad et al., 2024; the paper's remark in App. A.2). We report what ours do.

# %%
nope_rows = []
for (name, s), scan in scans.items():
    for layer in range(config.n_layers):
        nope_rows.append(
            {
                "model": name,
                "seed": s,
                "layer": layer,
                "max (α − 1/r), diagonal": float(scan.repeat_excess["diagonal"][layer].max()),
                "max (α − 1/r), previous": float(scan.repeat_excess["previous"][layer].max()),
                "best mean α on diagonal": float(scan.score["diagonal"][layer].max()),
                "best mean α on i−1": float(scan.score["previous"][layer].max()),
            }
        )
plots.table(nope_rows)
nope_layer0_excess = max(
    float(max(scans["nope", s].repeat_excess[k][0].max() for k in heads.KINDS)) for s in seeds
)
rope_layer0_excess = max(
    float(max(scans["rope", s].repeat_excess[k][0].max() for k in heads.KINDS)) for s in seeds
)
print(
    f"layer 0, max over heads of (alpha_target - 1/r) on repeated rows: NoPE {nope_layer0_excess:.2e}, "
    f"RoPE {rope_layer0_excess:.2e}"
)

# %% [markdown]
# In NoPE's first layer the excess never rises above zero (up to float32 rounding): the bound of
# Prop. 5.2 holds exactly in a trained model. RoPE's first layer is free of it. Any NoPE
# positional heads in the counts above live in deeper layers, built from position information
# the earlier layers extracted from the causal mask.

# %% [markdown]
# ## What we claim and what we measured

# %%
rope_counts = counts["rope", "either"]
nope_counts = counts["nope", "either"]
rc_mean, rc_low, rc_high, rc_text = interval_text(rope_counts, 1)
nc_mean, nc_low, nc_high, nc_text = interval_text(nope_counts, 1)
diff = np.asarray(rope_counts) - np.asarray(nope_counts)
d_mean, d_low, d_high, d_text = interval_text(diff, 1)
nope_deep = sum(
    len([h for h in scans["nope", s].heads(k, head_threshold) if h[0] > 0])
    for s in seeds
    for k in heads.KINDS
)
if fast_gaps:
    fg_mean, fg_low, fg_high, fg_text = interval_text(fast_gaps, 3, "heads, pooled over seeds")
    fast_verdict = claims.verdict_from_interval(fg_low, fg_high, threshold=0.0)
    fast_measured = f"fast-plane share minus rest of layer: {fg_mean:+.3f} ({len(fast_gaps)} heads)"
else:
    fast_verdict, fast_measured, fg_text = (
        "not testable here",
        "no RoPE positional head found",
        None,
    )
if cs_positional:
    cs_mean, cs_low, cs_high, cs_text = interval_text(cs_positional, 2, "heads, pooled over seeds")
    cs_verdict = claims.verdict_from_interval(cs_low, cs_high, threshold=0.5)
    cs_measured = (
        f"target activation / CS bound in RoPE positional heads: {cs_mean:.2f} "
        f"(paper, Tables 3/5: {np.mean(paper_diag_ratio):.2f} diagonal, {np.mean(paper_prev_ratio):.2f} previous)"
    )
else:
    cs_verdict, cs_measured, cs_text = "not testable here", "no RoPE positional head found", None
prop52_held = nope_bxx <= 0.5 and nope_excess <= 1e-12
claims.glue_claims(
    [
        claims.Claim(
            id="positional_heads.def51",
            source="Barbero et al. 2025, Def. 5.1",
            statement="Def. 5.1 detector: identity → diagonal, sub-diagonal → previous-token, uniform → neither",
            measured=", ".join(
                f"{r['matrix']}: {r[f'class at ε = {epsilon}']}" for r in detector_rows
            ),
            verdict="held" if detector_ok else "not held",
        ),
        claims.Claim(
            id="positional_heads.prop52",
            source="Barbero et al. 2025, Prop. 5.2, App. A.2",
            statement="A NoPE head cannot be diagonal or previous-token: on [bos, x, x] α ≤ 1/2",
            measured=(
                f"sympy proof; best of {isolated_seeds * 2} trained isolated NoPE heads: "
                f"α = 1/2 − {0.5 - nope_bxx:.1e} on [bos,x,x], max (α − 1/r) = {nope_excess:.1e}"
            ),
            verdict="held" if prop52_held else "not held",
            seeds=isolated_seeds,
        ),
        claims.Claim(
            id="positional_heads.isolated_rope",
            source="Barbero et al. 2025, Thm. 5.3 vs Prop. 5.2",
            statement="The same optimisation with RoPE does learn the positional head",
            measured=f"isolated RoPE heads: α = {rope_bxx_mean:.4f} on [bos,x,x]",
            interval=rope_bxx_text,
            verdict=claims.verdict_from_interval(rope_bxx_low, rope_bxx_high, threshold=0.9),
            seeds=isolated_seeds,
        ),
        claims.Claim(
            id="positional_heads.thm53",
            source="Barbero et al. 2025, Thm. 5.3, Fig. 1",
            statement="q = k = ψ (k = Rψ) reaches α > 1 − ε at ‖ψ‖² = ln((N−1)(1−ε)/ε)/δ",
            measured=(
                f"sympy proof; {sum(r[f'< ε = {epsilon}'] for r in threshold_rows)}/{len(threshold_rows)} "
                f"constructions (N ≤ {max(sizes)}, ε = {epsilon}) within ε via apply_rope"
            ),
            verdict="held" if construction_ok else "not held",
        ),
        claims.Claim(
            id="positional_heads.trained_rope_heads",
            source="Barbero et al. 2025, Sec. 5, Figs 5, 14-16",
            statement="RoPE models grow diagonal / previous-token heads",
            measured=f"{rc_mean:.1f} of {config.n_layers * config.n_heads} heads per model "
            f"(mean α on target ≥ {head_threshold})",
            interval=rc_text,
            verdict=claims.verdict_from_interval(rc_low, rc_high, threshold=0.5),
            seeds=len(seeds),
        ),
        claims.Claim(
            id="positional_heads.trained_nope_heads",
            source="Barbero et al. 2025, Prop. 5.2 (App. A.2 remark)",
            statement="In a trained NoPE model, first-layer heads obey the 1/r bound on repeated tokens",
            measured=(
                f"layer 0 max (α − 1/r) = {nope_layer0_excess:.1e} (RoPE: {rope_layer0_excess:.2f}); "
                f"{nope_deep} NoPE positional head(s) in deeper layers"
            ),
            verdict="held" if nope_layer0_excess <= 1e-5 else "not held",
            seeds=len(seeds),
        ),
        claims.Claim(
            id="positional_heads.rope_vs_nope",
            source="Barbero et al. 2025, Sec. 5",
            statement="RoPE models grow more positional heads than NoPE models",
            measured=f"RoPE {rc_mean:.1f} vs NoPE {nc_mean:.1f} per model; difference {d_mean:+.1f}",
            interval=d_text,
            verdict=claims.verdict_from_interval(d_low, d_high, threshold=0.0),
            seeds=len(seeds),
        ),
        claims.Claim(
            id="positional_heads.high_freq_usage",
            source="Barbero et al. 2025, Sec. 5, Fig. 6",
            statement="Positional heads rely on the highest RoPE frequencies",
            measured=fast_measured,
            interval=fg_text,
            verdict=fast_verdict,
            seeds=len(seeds),
        ),
        claims.Claim(
            id="positional_heads.cauchy_schwarz",
            source="Barbero et al. 2025, App. E.1, Tables 3-5",
            statement="Positional heads' target activations sit near the Cauchy–Schwarz bound (> 1/2 of it)",
            measured=cs_measured,
            interval=cs_text,
            verdict=cs_verdict,
            seeds=len(seeds),
        ),
    ]
)
print(f"chapter ran in {time.perf_counter() - started:.0f} s")
