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
# # Stretching RoPE: interpolation, NTK, YaRN and Llama 3 scaling, seen through frequencies
#
# {glue:md}`in_short`

# %% [markdown]
# The rest of this book explains RoPE by *which frequencies a model uses*: fast pairs turn by
# about a radian per token and let a head find "the previous token"; slow pairs barely turn over
# the training context and carry content. Practitioners meet RoPE mostly somewhere else: when
# they stretch a trained model past its training context. A family of rules does this by
# changing the frequency grid at inference (and usually fine-tuning a little afterwards):
#
# - **Position Interpolation** (PI), from {cite:t}`chen2023pi`, divides every frequency by the scale $s$,
#   so positions $0 \dots sL$ land on the angles $0 \dots L$ had in training;
# - **NTK-aware** scaling {cite:p}`bloc97_2023ntk` raises the base to $\theta s^{d/(d-2)}$: the slowest pair is
#   interpolated, the fastest is left alone, and the pairs in between geometrically in between;
#   **dynamic NTK** {cite:p}`emozilla2023dynamic` recomputes the scale from the current length;
# - **YaRN** {cite:p}`peng2024yarn` keeps pairs that turn more than $\beta = 32$ times over the
#   original context, interpolates those that turn less than $\alpha = 1$ time, ramps in between,
#   and sharpens attention by $(0.1 \ln s + 1)^2$;
# - **Llama 3.1**'s rule {cite:p}`llama2024herd` does the same by wavelength, with two cut-offs.
#
# Each rule is a statement about frequencies, so the book's lens applies directly. This chapter
# measures all of them on small models trained from scratch, which no published study does, and
# asks the paper's question of them: *which pairs does each method change, and what breaks when
# they change?*
#
# 1. which pairs each method changes, as cycles per context, for our models and for Llama 2
#    {cite:p}`touvron2023llama2` and Llama 3.1;
# 2. perplexity at 1× to `max_factor`× the training context without fine-tuning, beside plain RoPE,
#    NoPE, 0.75-RoPE and ALiBi;
# 3. a short fine-tune at the longer context for PI and YaRN (the PI paper's central result);
# 4. do previous-token heads survive PI, which slows the fast pairs, and YaRN, which keeps them?
# 5. a passkey retrieval probe at every length.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu
confidence = 0.95  # in (0, 1): level of every interval over seeds
max_seeds = 3  # in [1, 16]: use at most this many of the profile's seeds (fewer: faster)
max_factor = 16  # in [2, 64]: longest evaluation, in multiples of the training context
n_windows = 8  # in [1, inf): text windows per (model, method, length) for perplexity
picture_scale = 8  # in [1, 64]: the scale s of the frequency picture (section 1)
dynamic_factor = 2.0  # in [1, 16]: dynamic NTK's factor, one for every length
finetune_scale = 4  # in [2, 16]: fine-tune at this multiple of the context, with s equal to it
finetune_fraction = 0.05  # in (0, 1): fine-tune tokens as a share of pre-training tokens
finetune_lr_ratio = 0.1  # in (0, 1]: fine-tune learning rate over the pre-training one
head_threshold = 0.2  # in (0, 1): a previous-token head puts at least this on token i - 1
heads_scale = 4  # in [2, 64]: the scale s at which heads are probed
n_head_windows = 16  # in [1, inf): windows of the training length for the head probe
n_passkey = 16  # in [1, inf): passkey trials per (model, method, length)

# %% tags=["hide-input"]
import numpy as np
from IPython.display import display
from myst_nb import glue

from ropebook import claims, data, plots, scaling, zoo
from ropebook.analysis import scaling as stretch
from ropebook.present import decide
from ropebook.present import scaling as show

plots.setup()
REGIME, DOMAIN = "matched", "shakespeare"
NAMES = ("rope", "p-rope-0.75", "nope", "alibi")
seeds = zoo.PROFILES[profile].seeds[:max_seeds]
if profile == "smoke":
    n_windows, n_passkey, n_head_windows = min(n_windows, 2), min(n_passkey, 4), 4
factors = [2**i for i in range(int(np.log2(max_factor)) + 1)]  # 1, 2, 4, ..., max_factor
finetune_scale = min(finetune_scale, max_factor)
model_config, train_config = zoo.configs("rope", profile=profile, regime=REGIME)
head_dim, context, base = model_config.head_dim, model_config.context, model_config.rope_base
for name, value in {
    "profile": profile,
    "regime": REGIME,
    "n_seeds": len(seeds),
    "seeds": ", ".join(map(str, seeds)),  # the seeds themselves: a listing
    "head_dim": head_dim,
    "base": float(base),
    "context": context,
}.items():
    glue(f"rope_scaling.{name}", value, display=False)

# %% [markdown]
# This run: profile **{glue:text}`rope_scaling.profile`**, the {glue:text}`rope_scaling.regime`
# zoo models, {glue:text}`rope_scaling.n_seeds` seed(s) ({glue:text}`rope_scaling.seeds`), head
# size {glue:text}`rope_scaling.head_dim`, base {glue:text}`rope_scaling.base:g`, training context
# {glue:text}`rope_scaling.context` tokens.
#
# The claims this chapter tests, each with its source; the papers' claims are about 7B-scale
# Llama models fine-tuned for hundreds of steps, ours about what the frequency lens predicts.
# The table at the end gives what we measured.

# %% tags=["hide-input"]
PI, YARN, OURS = "Chen et al. 2023 (PI)", "Peng et al. 2024 (YaRN)", "ours"
CLAIMS = claims.ClaimSet(
    claims.ClaimSpec(
        "rope_scaling.rules_match_transformers", f"{OURS} (transformers' modeling_rope_utils)",
        "Our PI, dynamic NTK, YaRN and Llama 3.1 rules give transformers' inverse frequencies "
        "and attention factors to float32 rounding",
        claims.holds, kind=claims.CHECKED,
    ),
    claims.ClaimSpec(
        "rope_scaling.plain_rope_fails", f"{PI}, Sec. 1; Press et al. 2022 (ALiBi), Sec. 2",
        "Without any scaling, RoPE's perplexity rises beyond the training context",
        claims.given,
    ),
    claims.ClaimSpec(
        "rope_scaling.pi_poor_without_finetune", f"{PI}, Table 3 (0 steps)",
        "Without fine-tuning, PI at s× the context is worse than the original model at 1×",
        claims.given,
    ),
    claims.ClaimSpec(
        "rope_scaling.finetune_helps_pi", f"{PI}, Table 3",
        "A short fine-tune at the longer context lowers PI's perplexity there, and below plain "
        "RoPE's after the same fine-tune (PI's direct fine-tuning baseline)",
        claims.given,
    ),
    claims.ClaimSpec(
        "rope_scaling.pi_after_finetune", f"{PI}, Table 3",
        "After the fine-tune, PI at s× the context is at least as good as the original model "
        "at 1× on the same positions (the first L tokens), and better than plain RoPE "
        "fine-tuned the same way",
        claims.given,
    ),
    claims.ClaimSpec(
        "rope_scaling.yarn_beats_pi", f"{YARN}, Sec. 3 (argument; its Tables 1-2 fine-tune)",
        "Without fine-tuning, YaRN has lower perplexity than PI at every length beyond 1×",
        claims.given,
    ),
    claims.ClaimSpec(
        "rope_scaling.yarn_beats_ntk", f"{YARN}, Sec. 3 (argument; its Tables 1-2 fine-tune)",
        "Without fine-tuning, YaRN has lower perplexity than NTK-aware scaling beyond 1×",
        claims.given,
    ),
    claims.ClaimSpec(
        "rope_scaling.yarn_finetuned_beats_pi", f"{YARN}, Tables 1-2",
        "After the same fine-tune, YaRN has lower perplexity than PI at s× the context",
        claims.given,
    ),
    claims.ClaimSpec(
        "rope_scaling.previous_token_heads", OURS,
        "PI weakens previous-token heads (it slows the fast pairs they use); YaRN, which keeps "
        "the fast pairs, weakens them less",
        claims.given,
    ),
    claims.ClaimSpec(
        "rope_scaling.passkey", f"{PI}, Sec. 3.3 (passkey); {YARN}, Sec. 4.3.2",
        "After fine-tuning at s× with PI or YaRN, passkey retrieval at s× the context beats "
        "plain RoPE's at the same length after the same fine-tune",
        claims.given,
    ),
)  # fmt: skip

# %% [markdown]
# ## The rules are functions of frequencies
#
# `ropebook.scaling` writes each rule as a pure function of the head size $d$, the base
# $\theta$, the scale $s$ and the original context $L$, returning the new angular frequency of
# every pair and the attention factor $m$ that multiplies queries and keys (so the logits are
# multiplied by $m^2$). We check each against Hugging Face transformers' own implementation for
# our models and for Llama 2 and Llama 3.1 settings:

# %%
ours = {f"ours (d={head_dim}, θ={base:g}, L={context})": (head_dim, base, context)}
settings = ours | stretch.REFERENCE_SETTINGS
agreement = stretch.transformers_agreement(settings, scale=picture_scale)
plots.table(agreement, digits=2)

# %% tags=["remove-input"]
worst_freq = max(r["max relative Δ frequency"] for r in agreement)
worst_factor = max(r["Δ attention factor"] for r in agreement)
CLAIMS.record(
    "rope_scaling.rules_match_transformers",
    worst_freq < 1e-5 and worst_factor < 1e-6,
    f"largest relative difference {worst_freq:.1g} in frequency, {worst_factor:.1g} in the "
    f"attention factor over {len(agreement)} (setting, method) pairs at s = {picture_scale}",
)
glue("rope_scaling.worst_freq", float(worst_freq), display=False)
glue("rope_scaling.worst_factor", float(worst_factor), display=False)

# %% [markdown]
# The largest relative difference in any frequency is **{glue:text}`rope_scaling.worst_freq:.1g`**
# (float32 rounding in transformers' torch code) and in any attention factor
# {glue:text}`rope_scaling.worst_factor:.1g`. Static NTK-aware scaling has no rule of its own in
# transformers: it is the `dynamic` rule with factor 1 evaluated at length $sL$ (checked in
# `tests/test_scaling.py`).

# %% [markdown]
# One difference between the YaRN paper and transformers is worth knowing. The paper ramps
# *linearly in the turns* $r = L/\lambda$ between $\alpha = 1$ and $\beta = 32$; transformers
# ramps *linearly in the pair index* between the (fractional) indices where $r = 32$ and $r = 1$,
# rounded outwards with floor and ceil. Turns fall exponentially with the index, so the two
# ramps differ in the middle pairs. The largest gap between the two ramps, in each setting:

# %%
ramp_gap = {
    label: np.abs(
        scaling.yarn_ramp(d, theta, L, ramp="paper") - scaling.yarn_ramp(d, theta, L)
    ).max()
    for label, (d, theta, L) in settings.items()
}

# %% tags=["remove-input"]
for key, label in zip(("ours", "llama2", "llama31"), settings, strict=True):
    glue(f"rope_scaling.ramp.{key}.setting", label, display=False)  # the setting's label: data
    glue(f"rope_scaling.ramp.{key}.gap", float(ramp_gap[label]), display=False)

# %% [markdown]
# Largest difference in the ramp weight $\gamma$ (0 = fully interpolated, 1 = kept):
# {glue:text}`rope_scaling.ramp.ours.setting`: **{glue:text}`rope_scaling.ramp.ours.gap:.2f`**;
# {glue:text}`rope_scaling.ramp.llama2.setting`:
# **{glue:text}`rope_scaling.ramp.llama2.gap:.2f`**;
# {glue:text}`rope_scaling.ramp.llama31.setting`:
# **{glue:text}`rope_scaling.ramp.llama31.gap:.2f`**. The book's `yarn` follows transformers (what deployed
# checkpoints run); `yarn-paper` is the paper's formula, drawn below beside it.

# %% [markdown]
# ## 1. Which pairs each method changes
#
# The figure draws, for each pair (fastest left), how many full turns it makes over the
# *original* context before scaling (black) and after each method at scale $s$. Look at where
# each coloured line leaves the black one: PI moves every pair down by the same factor, NTK-aware
# moves the slow end most, YaRN and Llama 3.1 leave the fast pairs exactly where they were and
# move only pairs below a few tens of turns. The dotted lines are YaRN's $\alpha = 1$ and
# $\beta = 32$ turns. Dynamic NTK is drawn at length $sL$ with its own factor
# (`dynamic_factor`): its effective scale there is $f \cdot s - (f - 1)$, more than $s$ when
# $f > 1$, so it interpolates the slow end harder than static NTK-aware scaling does.

# %%
picture_methods = ("none", "pi", "ntk", "dynamic-ntk", "yarn", "yarn-paper", "llama3")
turn_rows = stretch.turns_rows(
    settings, picture_methods, picture_scale, dynamic_factor=dynamic_factor
)
show.turns_chart(turn_rows, picture_scale)
# %% [markdown]
# The same in numbers: per setting and method, how many of the pairs are kept as trained, how
# many slowed by the full factor, the turns over $L$ of the fastest pair that is changed, and the
# factor on the logits.

# %% tags=["hide-input"]
changed = [r for r in stretch.changed_rows(turn_rows) if r["method"] != "no scaling"]
plots.table(changed, digits=3)

# %% tags=["remove-input"]
mine = {r["method"]: r for r in changed if r["setting"] in ours}
ref = zoo.REFERENCE_MODEL
llama_pairs = next(iter(stretch.REFERENCE_SETTINGS.values()))[0] // 2
llama_label = next(iter(stretch.REFERENCE_SETTINGS))
llama_yarn = next(r for r in changed if r["setting"] == llama_label and r["method"] == "YaRN")
for name, value in {
    "pairs": head_dim // 2,
    "pi_changes": mine["PI"]["chunks"],
    "yarn_keeps": mine["YaRN"]["kept"],
    "llama3_keeps": mine["Llama 3.1"]["kept"],
    "reference_name": ref["name"],
    "reference_context": ref["context"],
    "llama_pairs": llama_pairs,
    "fastest_turns": float(context / (2 * np.pi)),
    "yarn_beta": float(scaling.YARN_BETA),
    "llama_label": llama_label,
    "llama_yarn_keeps": llama_yarn["kept"],
}.items():
    glue(f"rope_scaling.{name}", value, display=False)

# %% [markdown]
# In our matched models ($d$ = {glue:text}`rope_scaling.head_dim`, {glue:text}`rope_scaling.pairs`
# pairs) PI changes all {glue:text}`rope_scaling.pi_changes` pairs, YaRN keeps
# {glue:text}`rope_scaling.yarn_keeps` and Llama 3.1's rule keeps
# {glue:text}`rope_scaling.llama3_keeps`. The base of our models was chosen so that the slowest
# pair turns over the training context as rarely as {glue:text}`rope_scaling.reference_name`'s does
# over its {glue:text}`rope_scaling.reference_context:,d` tokens, so the same methods act on the
# same part of the spectrum as they do on the large models; the pair counts differ because the
# Llama heads have {glue:text}`rope_scaling.llama_pairs` pairs to our
# {glue:text}`rope_scaling.pairs`. One difference no base can remove: the fastest pair turns by 1
# radian per token whatever the base, so over our {glue:text}`rope_scaling.context` tokens it makes
# only {glue:text}`rope_scaling.fastest_turns:.0f` turns, below YaRN's β =
# {glue:text}`rope_scaling.yarn_beta:g`; YaRN therefore keeps only
# {glue:text}`rope_scaling.yarn_keeps` of our pairs exactly and partly slows the others, where on
# {glue:text}`rope_scaling.llama_label` it keeps {glue:text}`rope_scaling.llama_yarn_keeps` of
# {glue:text}`rope_scaling.llama_pairs`.

# %% [markdown]
# ## 2. Perplexity at longer contexts, without fine-tuning
#
# We load the `matched` zoo models — RoPE and 0.75-RoPE, with NoPE and ALiBi as encodings that
# have no frequencies to rescale — for every seed of the profile, and evaluate each on windows of
# $1\times$ to `max_factor`$\times$ the training context from the validation split. Every method
# is applied with $s$ equal to the length factor (the scale each rule is set to for that length),
# except dynamic NTK, which keeps one factor (`dynamic_factor`) and recomputes its grid from
# each window's length, as it does when deployed. Every model and method sees the same windows at a given length, so
# differences are paired by window and by seed.

# %%
models = {
    name: [zoo.load(name, seed=s, profile=profile, regime=REGIME, domain=DOMAIN) for s in seeds]
    for name in NAMES
}
val_tokens = data.load_tokens(DOMAIN, "val", vocab_size=model_config.vocab_size)
losses = stretch.length_sweep(
    models, stretch.SWEEP_METHODS, factors, val_tokens, n_windows=n_windows,
    dynamic_factor=dynamic_factor,
)  # fmt: skip

# %% tags=["remove-input"]
LABEL = {m: scaling.METHODS[m].label for m in scaling.METHODS}
BASELINE_LABELS = {("nope", "none"): "NoPE", ("alibi", "none"): "ALiBi",
                   ("p-rope-0.75", "none"): "0.75-RoPE, plain"}  # fmt: skip
rope_labels = {("rope", m): f"RoPE · {LABEL[m]}" for m in stretch.SWEEP_METHODS}
p_labels = {("p-rope-0.75", m): f"0.75-RoPE · {LABEL[m]}" for m in stretch.SWEEP_METHODS}
intervals = f"over {len(seeds)} seeds" if len(seeds) > 1 else "none (one seed in this profile)"
glue("rope_scaling.confidence", confidence, display=False)
glue("rope_scaling.n_windows", n_windows, display=False)
glue("rope_scaling.intervals", intervals, display=False)

# %% [markdown]
# Perplexity ($e$ to the mean over {glue:text}`rope_scaling.n_seeds` seed(s) of each model's mean
# loss; {glue:text}`rope_scaling.confidence:.0%` interval formed on the loss, then exponentiated)
# for windows of $L$ tokens, {glue:text}`rope_scaling.n_windows` windows each. Intervals:
# **{glue:text}`rope_scaling.intervals`**. RoPE with every method, then the baselines:

# %% tags=["remove-input"]
display(plots.table(show.sweep_rows(losses, rope_labels | BASELINE_LABELS, factors, context)))

# %% [markdown]
# The figure shows the same for the RoPE models (lines, with the interval as a band) beside the
# encodings without frequencies. Look at the right half: how far does plain RoPE (no scaling)
# climb once the window outgrows the training context, which rule keeps the curve lowest, and
# does any reach NoPE or ALiBi, which never meet an angle they have not seen? (The windows
# start at random places in the text, so the perplexity of a longer window also reflects more
# context for its later tokens, which lowers it when nothing breaks.)

# %%
show.sweep_chart(
    losses, rope_labels | BASELINE_LABELS, factors, confidence,
    title="Perplexity by length without fine-tuning (RoPE model, s = length factor)",
)  # fmt: skip

# %% [markdown]
# 0.75-RoPE's free pairs never rotate, so every method touches only its fast 75%. Its table:

# %% tags=["hide-input"]
plots.table(show.sweep_rows(losses, p_labels, factors, context))

# %% [markdown]
# Paired comparisons at every length beyond the training context: YaRN against PI and against
# NTK-aware scaling, and plain RoPE against itself at $1\times$. A negative change means the
# first has the lower perplexity; an interval that straddles zero is written as a bound.

# %%
longer = factors[1:]
yarn_vs = {
    rival: {f: stretch.paired_change(losses["rope", "yarn", f], losses["rope", rival, f],
                                     confidence) for f in longer}
    for rival in ("pi", "ntk")
}  # fmt: skip
plain_rise = {
    f: stretch.paired_change(losses["rope", "none", f], losses["rope", "none", 1], confidence)
    for f in longer
}


# %% tags=["remove-input"]
def change_list(changes):
    return "; ".join(f"{f}×: {c.text()}" for f, c in changes.items())


def by_length(changes):
    return {f"{f}×": c for f, c in changes.items()}


for rival, cid in (("pi", "yarn_beats_pi"), ("ntk", "yarn_beats_ntk")):
    CLAIMS.record(
        f"rope_scaling.{cid}",
        stretch.combine([c.verdict_lower() for c in yarn_vs[rival].values()]),
        f"YaRN vs {LABEL[rival]} (RoPE model): " + change_list(yarn_vs[rival]),
        seeds=len(seeds),
        to_decide=show.changes_to_decide(by_length(yarn_vs[rival])),
    )
CLAIMS.record(
    "rope_scaling.plain_rope_fails",
    stretch.combine([stretch.verdict_higher(c) for c in plain_rise.values()]),
    "plain RoPE at n× vs at 1×: " + change_list(plain_rise),
    seeds=len(seeds),
    to_decide=show.changes_to_decide(by_length(plain_rise)),
)
best = {f: rope_labels[stretch.lowest(losses, list(rope_labels), f)] for f in factors}
for name, changes in {"yarn_vs_pi": yarn_vs["pi"], "yarn_vs_ntk": yarn_vs["ntk"],
                      "plain_rise": plain_rise}.items():  # fmt: skip
    glue(
        f"rope_scaling.{name}.resolved", sum(c.significant for c in changes.values()), display=False
    )
glue("rope_scaling.n_longer", len(longer), display=False)

# %% [markdown]
# Each longer length against its rival, paired by seed (perplexity change, interval, or the
# bound when the interval contains 0). YaRN differs from PI beyond noise at
# {glue:text}`rope_scaling.yarn_vs_pi.resolved` of the {glue:text}`rope_scaling.n_longer` longer
# lengths and from NTK-aware at {glue:text}`rope_scaling.yarn_vs_ntk.resolved`; plain RoPE's
# rise over its own 1× perplexity is resolved at {glue:text}`rope_scaling.plain_rise.resolved`.

# %%
plots.table(
    show.change_rows(
        {"YaRN vs PI": yarn_vs["pi"], "YaRN vs NTK-aware": yarn_vs["ntk"],
         "plain RoPE at n× vs 1×": plain_rise},
        best, context,
    )
)  # fmt: skip

# %% [markdown]
# ## 3. A short fine-tune at the longer context
#
# The PI paper's central result is not about PI without training: at 7B scale PI is poor
# out of the box but becomes good after about 1,000 steps of fine-tuning at the new length,
# while direct extrapolation never does (its Table 3). We test the same at our scale: each RoPE
# model is fine-tuned at `finetune_scale` times its context with PI or YaRN applied in every
# step, for `finetune_fraction` of its pre-training tokens, at `finetune_lr_ratio` times its
# pre-training learning rate. Fine-tuned models are cached like zoo models.
#
# **The control: plain RoPE fine-tuned the same way.** A gain after fine-tuning may be the
# fine-tune's rather than the rule's, so plain RoPE (no rule) is fine-tuned at the same length on
# the same tokens and steps — the PI paper's own baseline, "direct fine-tuning" (Table 3). The
# prediction, written before the run: if the rules' gains were the fine-tune's alone, fine-tuned
# plain RoPE would reach PI's and YaRN's perplexity (and passkey accuracy) at the fine-tuning
# length, and every comparison of a rule against it would fail to hold. The verdicts compare
# each rule with fine-tuned RoPE; the rows without a fine-tune stay for the zero-shot story.

# %%
ft_len = finetune_scale * context
ft_batch = max(train_config.batch_size // finetune_scale, 2)
pretrain_tokens = models["rope"][0].tokens_seen
ft_steps = stretch.finetune_steps(pretrain_tokens, finetune_fraction, ft_batch, ft_len)
tuned = {
    method: [
        stretch.finetune(m, method, finetune_scale, steps=ft_steps, batch_size=ft_batch,
                         lr=train_config.lr * finetune_lr_ratio)
        for m in models["rope"]
    ]
    for method in ("none", "pi", "yarn")  # "none": plain RoPE fine-tuned, the control
}  # fmt: skip

# %% tags=["remove-input"]
ft_tokens = tuned["pi"][0].tokens_seen
for name, value in {
    "ft_steps": ft_steps,
    "ft_batch": ft_batch,
    "ft_len": ft_len,
    "ft_tokens": ft_tokens,
    "ft_percent": 100 * ft_tokens / pretrain_tokens,
    "pretrain_tokens": pretrain_tokens,
}.items():
    glue(f"rope_scaling.{name}", value, display=False)

# %% [markdown]
# Each fine-tune takes {glue:text}`rope_scaling.ft_steps` steps of
# {glue:text}`rope_scaling.ft_batch` windows × {glue:text}`rope_scaling.ft_len` tokens =
# {glue:text}`rope_scaling.ft_tokens:,d` tokens, {glue:text}`rope_scaling.ft_percent:.1f` % of the
# {glue:text}`rope_scaling.pretrain_tokens:,d` pre-training tokens (the PI paper fine-tuned LLaMA
# models for 1,000 steps at the extended length, a far smaller share of their pre-training).

# %% [markdown]
# Now the length sweep again, with the scale fixed at the fine-tuning one ($s$ =
# `finetune_scale`) for both the fine-tuned models and the same methods without fine-tuning,
# so each pair of rows differs only by the fine-tune:

# %%
fixed = dict(n_windows=n_windows, fixed_scale=finetune_scale)
before_ft = stretch.length_sweep({"rope-fixed-s": models["rope"]}, ("pi", "yarn"), factors,
                                 val_tokens, **fixed)  # fmt: skip
after_ft = {}
for method, runs in tuned.items():
    after_ft |= stretch.length_sweep({f"rope-{method}-ft": runs}, (method,), factors,
                                     val_tokens, **fixed)  # fmt: skip
ft_view = losses | before_ft | after_ft

# %% tags=["remove-input"]
ft_labels = {
    ("rope", "none"): "RoPE · plain",
    ("rope-fixed-s", "pi"): f"RoPE · PI (s={finetune_scale}), no fine-tune",
    ("rope-none-ft", "none"): "RoPE · plain, fine-tuned",
    ("rope-pi-ft", "pi"): f"RoPE · PI (s={finetune_scale}), fine-tuned",
    ("rope-fixed-s", "yarn"): f"RoPE · YaRN (s={finetune_scale}), no fine-tune",
    ("rope-yarn-ft", "yarn"): f"RoPE · YaRN (s={finetune_scale}), fine-tuned",
}
display(plots.table(show.sweep_rows(ft_view, ft_labels, factors, context)))

# %% [markdown]
# The figure: the dashed lines are the methods before fine-tuning, the solid ones after (and
# plain RoPE, solid, for reference). Look
# at the fine-tuning length (`finetune_scale`×): the PI paper predicts the largest drop there.

# %%
show.sweep_chart(
    ft_view, ft_labels, factors, confidence,
    title=f"Before and after fine-tuning at {finetune_scale}× (s = {finetune_scale})",
    dashed=[("rope-fixed-s", "pi"), ("rope-fixed-s", "yarn")],
)  # fmt: skip

# %% tags=["remove-input"]
at = finetune_scale
# each change paired over seeds; the PI claims decide on the same first L positions
# (stretch.finetune_changes), the control is plain RoPE fine-tuned on the same tokens and steps
changes = stretch.finetune_changes(ft_view, at, confidence)
pi_before, pi_before_same, pi_gain, pi_after, pi_same, yarn_ft = (changes[k] for k in (
    "pi_before", "pi_before_same", "pi_gain", "pi_after", "pi_same", "yarn_ft"))  # fmt: skip
over_plain = {m: changes[f"{m}_over_plain"] for m in ("pi", "yarn")}
plain_text = {m: f"{LABEL[m]} vs plain RoPE, both fine-tuned: {c.text()}"
              for m, c in over_plain.items()}  # fmt: skip
CLAIMS.record(
    "rope_scaling.pi_poor_without_finetune",
    stretch.verdict_higher(pi_before_same),
    f"PI (s = {at}, no fine-tune) vs the model at 1×, on the same first {context} positions: "
    f"{pi_before_same.text()}; over the whole {at}× window (not scored): {pi_before.text()}",
    seeds=len(seeds),
    to_decide=show.changes_to_decide({"first L": pi_before_same}),
)
CLAIMS.record(
    "rope_scaling.finetune_helps_pi",
    claims.combine([pi_gain.verdict_lower(), over_plain["pi"].verdict_lower()]),
    f"PI at {at}×, fine-tuned vs not: {pi_gain.text()} ({ft_steps} steps, "
    f"{100 * ft_tokens / pretrain_tokens:.1f} % of pre-training tokens); {plain_text['pi']}",
    seeds=len(seeds),
    to_decide=show.changes_to_decide({f"{at}×": pi_gain, "against plain": over_plain["pi"]}),
)
# "at least as good": held if lower, cannot decide if not resolved, not held if higher; decided
# on the same positions (the whole s× window, shown beside, gains from context alone)
CLAIMS.record(
    "rope_scaling.pi_after_finetune",
    claims.combine([pi_same.verdict_lower(), over_plain["pi"].verdict_lower()]),
    f"PI (s = {at}) after fine-tuning vs the model at 1×, on the same first {context} "
    f"positions: {pi_same.text()}; over the whole {at}× window (more context for later "
    f"tokens, not scored): {pi_after.text()}; {plain_text['pi']}",
    seeds=len(seeds),
    to_decide=show.changes_to_decide({"first L": pi_same, "against plain": over_plain["pi"]}),
)
CLAIMS.record(
    "rope_scaling.yarn_finetuned_beats_pi",
    yarn_ft.verdict_lower(),
    f"YaRN vs PI at {at}×, both fine-tuned (the same fine-tune on both sides, so no control "
    f"is needed): {yarn_ft.text()}; beside it, {plain_text['yarn']}",
    seeds=len(seeds),
    to_decide=show.changes_to_decide({f"{at}×": yarn_ft}),
)
glue("rope_scaling.at", at, display=False)
for name, change in changes.items():
    glue(f"rope_scaling.{name}", change.text(), display=False)  # a change, or a bound on it

# %% [markdown]
# At {glue:text}`rope_scaling.at`× the context: PI without fine-tuning against the model at its
# own length, {glue:text}`rope_scaling.pi_before`; the fine-tune changes PI's perplexity by
# {glue:text}`rope_scaling.pi_gain`; after it, PI against the model at 1× over the whole window:
# {glue:text}`rope_scaling.pi_after`. Both whole-window comparisons lean to PI: the later tokens
# of a longer window see more context, which lowers perplexity whatever the rule. So both PI
# claims are decided on the same positions: a causal model's first $L$ tokens of an $s\times$
# window are a $1\times$ window, and PI (still at $s$) on the very windows the model read at
# $1\times$ differs from it by {glue:text}`rope_scaling.pi_before_same` without the fine-tune
# and by {glue:text}`rope_scaling.pi_same` after it. Fine-tuned YaRN against fine-tuned PI:
# {glue:text}`rope_scaling.yarn_ft`. Against plain RoPE fine-tuned on the same tokens and steps
# (the control): fine-tuned PI {glue:text}`rope_scaling.pi_over_plain`; fine-tuned YaRN
# {glue:text}`rope_scaling.yarn_over_plain`.

# %% [markdown]
# ## 4. Do previous-token heads survive?
#
# Here is the link to the paper. A previous-token head works because a fast pair turns by about
# a radian per token: query and key agree after exactly one step of rotation and disagree at
# every other distance {cite:p}`barbero2025round{Thm 5.3}`. PI divides that rotation by $s$, so at
# $s = 4$ "one token back" looks like a quarter of a token; YaRN leaves every pair that turns
# more than 32 times over the context as trained. The frequency lens therefore predicts that
# PI damages previous-token heads and YaRN does not, *even at the training length*, where
# nothing else changes. We find the heads that put at least `head_threshold` of their attention
# on the previous token in the unscaled RoPE models, then measure them under each method at
# $s$ = `heads_scale`, on windows of the training length, and after fine-tuning:

# %%
rng = np.random.default_rng(0)
windows = data.sample_windows(val_tokens, context, n_head_windows, rng).astype(np.int32)
head_methods = ("none", "pi", "ntk", "yarn", "llama3")
runs = models["rope"]
head_scores = {m: [stretch.previous_token_scores(r.params, r.config, windows,
                   stretch.intervention(r.config, m, heads_scale)) for r in runs]
               for m in head_methods}  # fmt: skip
energy = [stretch.chunk_energy(r.params, r.config, windows) for r in runs]

# %% tags=["remove-input"]
grid = stretch.model_grid(model_config)
shares = {
    m: [stretch.interpolation_share(
        e, grid, stretch.scaled_grid(model_config, m, heads_scale, context).frequencies,
        heads_scale) for e in energy]
    for m in head_methods if m != "none"
} | {"none": [np.zeros(e.shape[:-1]) for e in energy]}  # fmt: skip
for method in ("pi", "yarn"):  # the fine-tuned models under the method they learnt
    runs_ft, key = tuned[method], f"{method}-ft"
    head_scores[key] = [
        stretch.previous_token_scores(
            r.params, r.config, windows, stretch.intervention(r.config, method, finetune_scale)
        )
        for r in runs_ft
    ]
    ft_grid = stretch.scaled_grid(model_config, method, finetune_scale).frequencies
    shares[key] = [stretch.interpolation_share(e, grid, ft_grid, finetune_scale) for e in energy]
    LABEL[key] = f"{LABEL[method]}, fine-tuned at {finetune_scale}×"
survival = stretch.head_survival(head_scores, shares, head_threshold)
n_heads = [len(h) for h in survival.heads.values()]
uniform = np.mean(1 / np.arange(2, context + 1))  # causal uniform attention on token i - 1
for name, value in {
    "uniform": float(uniform),
    "head_threshold": head_threshold,
    "heads_found": ", ".join(map(str, n_heads)),  # one count per seed
    "all_heads": model_config.n_layers * model_config.n_heads,
    "heads_scale": heads_scale,
    "finetune_scale": finetune_scale,
}.items():
    glue(f"rope_scaling.{name}", value, display=False)

# %% [markdown]
# A head that attended uniformly to all earlier tokens would put
# {glue:text}`rope_scaling.uniform:.3f` on the previous token on average over a window of
# {glue:text}`rope_scaling.context`. Previous-token heads found (unscaled, ≥
# {glue:text}`rope_scaling.head_threshold`): {glue:text}`rope_scaling.heads_found` per seed, out of
# {glue:text}`rope_scaling.all_heads` heads. Their mean attention on the previous token, the share
# still above the threshold, and how far the method slows the pairs they use: each pair's
# slowdown in log units of $s$ (0 = kept, 100 % = slowed $s$-fold as by PI), weighted by the
# pair's query × key norm in these heads (s = {glue:text}`rope_scaling.heads_scale`; fine-tuned
# rows: s = {glue:text}`rope_scaling.finetune_scale`):

# %% tags=["remove-input"]
display(plots.table(show.head_rows(survival, LABEL, confidence)))

# %% tags=["remove-input"]
pi_drop = stretch.drop(survival, "pi", confidence)
yarn_drop = stretch.drop(survival, "yarn", confidence)
# PI's drop above 0, and YaRN's score above PI's paired by seed (not their means compared)
head_verdict = stretch.head_verdict(survival, confidence)
CLAIMS.record(
    "rope_scaling.previous_token_heads", head_verdict,
    f"drop in previous-token attention at s = {heads_scale}: PI {pi_drop[0]:.3f} "
    f"[{pi_drop[1]:.3f}, {pi_drop[2]:.3f}], YaRN {yarn_drop[0]:.3f} "
    f"[{yarn_drop[1]:.3f}, {yarn_drop[2]:.3f}] ({sum(n_heads)} heads)",
    seeds=int(pi_drop[3]),
    # the probe needs previous-token heads in at least 2 seeds' unscaled models
    to_decide=f"at least 2 seeds whose unscaled RoPE models have previous-token heads (mean "
    f"attention ≥ {head_threshold} on the previous token): found here "
    f"{', '.join(map(str, n_heads))} per seed of {model_config.n_layers * model_config.n_heads} "
    f"heads ({zoo.budget(profile)}); other profiles: {decide.other_profiles(profile)}",
)  # fmt: skip
share_pi, share_yarn = (np.mean(survival.share[m]) if survival.share[m] else np.nan
                        for m in ("pi", "yarn"))  # fmt: skip
for name, value in {  # with no head found there is nothing to compare: "—"
    "pi_drop": f"{pi_drop[0]:.3f}" if pi_drop[3] else "—",
    "yarn_drop": f"{yarn_drop[0]:.3f}" if pi_drop[3] else "—",
    "share_pi": f"{100 * share_pi:.0f} %" if pi_drop[3] else "—",
    "share_yarn": f"{100 * share_yarn:.0f} %" if pi_drop[3] else "—",
}.items():
    glue(f"rope_scaling.{name}", value, display=False)

# %% [markdown]
# Under PI the previous-token heads lose {glue:text}`rope_scaling.pi_drop` of their attention on
# the previous token on average; under YaRN {glue:text}`rope_scaling.yarn_drop`. PI slows the
# pairs these heads use by {glue:text}`rope_scaling.share_pi` of the full factor, YaRN by
# {glue:text}`rope_scaling.share_yarn` (a dash where no previous-token head reached the
# threshold, as in the smoke models, which are too small and too briefly trained: the probe then
# says nothing). If the frequency lens is right, the method that slows their pairs more should
# cost them more attention. The claim is decided seed by seed: PI's drop must lie above 0, and
# YaRN's attention above PI's on the same heads (their paired difference, not the two means).

# %% [markdown]
# ## 5. Passkey retrieval
#
# Both papers test retrieval as well as perplexity: a random key is planted early in a long
# text and asked for at the end (PI Sec. 3.3, YaRN Sec. 4.3.2). Our models were never taught a
# prompt such as "the pass key is", so we plant a random 3-token marker and a random 5-token key
# at 10 % of the window and repeat the marker at the end: a model that can look back that far
# copies the key (an induction pattern small models learn from text). Accuracy is the share of
# key tokens predicted exactly; chance is $1/V$.

# %%
probes = {"rope": ("none", "pi", "yarn"), "p-rope-0.75": ("none", "yarn"),
          "nope": ("none",), "alibi": ("none",)}  # fmt: skip
passkey = {}
for name, methods in probes.items():
    passkey |= stretch.passkey_sweep({name: models[name]}, methods, factors, val_tokens,
                                     n_trials=n_passkey)  # fmt: skip
for method, runs_ft in tuned.items():
    passkey |= stretch.passkey_sweep(
        {f"rope-{method}-ft": runs_ft},
        (method,),
        factors,
        val_tokens,
        n_trials=n_passkey,
        fixed_scale=finetune_scale,
    )

# %% tags=["remove-input"]
passkey_labels = {
    ("rope", "none"): "RoPE · plain", ("rope", "pi"): "RoPE · PI",
    ("rope", "yarn"): "RoPE · YaRN",
    ("rope-none-ft", "none"): "RoPE · plain, fine-tuned",
    ("rope-pi-ft", "pi"): f"RoPE · PI, fine-tuned (s={finetune_scale})",
    ("rope-yarn-ft", "yarn"): f"RoPE · YaRN, fine-tuned (s={finetune_scale})",
    ("p-rope-0.75", "none"): "0.75-RoPE · plain", ("p-rope-0.75", "yarn"): "0.75-RoPE · YaRN",
    ("nope", "none"): "NoPE", ("alibi", "none"): "ALiBi",
}  # fmt: skip
glue("rope_scaling.n_passkey", n_passkey, display=False)
glue("rope_scaling.chance", 100 / model_config.vocab_size, display=False)

# %% [markdown]
# Passkey accuracy (% of key tokens, {glue:text}`rope_scaling.n_passkey` trials per cell, mean
# [interval] over {glue:text}`rope_scaling.n_seeds` seed(s); chance
# {glue:text}`rope_scaling.chance:.2f` %):

# %% tags=["remove-input"]
display(plots.table(show.accuracy_rows(passkey, passkey_labels, factors, context, confidence)))
passkey_cmp = {  # plain RoPE fine-tuned minus the fine-tuned method: negative = method wins
    m: stretch.paired_points(passkey["rope-none-ft", "none", at], passkey[f"rope-{m}-ft", m, at],
                             confidence)
    for m in ("pi", "yarn")
}  # fmt: skip


def accuracy_text(key):
    return f"{100 * np.mean(passkey[key]):.0f} %"


floor = 0.05  # the probe separates nothing if plain RoPE cannot retrieve within its context
within = float(np.mean(passkey["rope", "none", 1]))
passkey_verdict = stretch.combine([c.verdict_lower() for c in passkey_cmp.values()])
CLAIMS.record(
    "rope_scaling.passkey",
    claims.informative_or(within >= floor, passkey_verdict),  # measured, but blind below floor
    f"at {at}×: plain RoPE {accuracy_text(('rope', 'none', at))} without a fine-tune, "
    f"{accuracy_text(('rope-none-ft', 'none', at))} fine-tuned; PI fine-tuned "
    f"{accuracy_text(('rope-pi-ft', 'pi', at))}, YaRN fine-tuned "
    f"{accuracy_text(('rope-yarn-ft', 'yarn', at))}; plain minus rule, both fine-tuned: "
    + "; ".join(f"{LABEL[m]} {c.text()}" for m, c in passkey_cmp.items())
    + f"; plain RoPE within its context (1×): {100 * within:.0f} %"
    + ("" if within >= floor else "; decided instead on a task the models pass, in the recall "
       "chapter (claim recall.passkey_extension)"),
    seeds=len(seeds),
    to_decide=show.changes_to_decide({LABEL[m]: c for m, c in passkey_cmp.items()})
    if within >= floor
    else f"models that retrieve within their own context: plain RoPE at 1× retrieves "
    f"{100 * within:.0f} % of key tokens, the probe needs {100 * floor:.0f} %; the recall "
    f"chapter's task models do (claim recall.passkey_extension), or text models trained far "
    f"beyond these {pretrain_tokens:,} tokens",
)  # fmt: skip
glue("rope_scaling.within", 100 * within, display=False)
glue("rope_scaling.floor", 100 * floor, display=False)
glue(  # whether the models can do the task at all, unstretched
    "rope_scaling.passkey_probe",
    "enough: the probe compares the methods at longer lengths"
    if within >= floor
    else "not enough: this probe cannot separate the methods at our scale",
    display=False,
)

# %% [markdown]
# Within its own context (1×) plain RoPE retrieves {glue:text}`rope_scaling.within:.0f` % of key
# tokens; the probe needs at least {glue:text}`rope_scaling.floor:.0f` %, where nothing is
# stretched, to say anything. Here that is **{glue:text}`rope_scaling.passkey_probe`**. Below the
# floor the claim is recorded as *uninformative here* (no verdict on the paper, tallied apart):
# the papers' 7B models learnt retrieval from trillions of tokens, ours saw
# {glue:text}`rope_scaling.pretrain_tokens:,d`, and the chapter {doc}`Recall at a distance
# <recall>` decides the claim on models trained for retrieval, which pass the passkey at 1×.

# %% [markdown]
# ## What we claim and what we measured
#
# Every number above was computed in this run from the cached zoo models and their fine-tunes.
# Where a comparison is not resolved by our seeds it is written as a bound on the difference,
# not as agreement.

# %% tags=["remove-input"]
CLAIMS.glue()
