"""Tiny random checkpoints of every family :mod:`ropebook.capture` reads, built with
``transformers``' own config and model classes in seconds: the tests compare capture with
transformers' eager forward on them, and ``python -m ropebook analyse`` can be tried on one
without downloading a model (``tiny_random_model(f).save_pretrained(folder)``)."""

from __future__ import annotations

from ropebook.capture import FAMILIES

_TINY = dict(
    vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
    bos_token_id=1, eos_token_id=2, pad_token_id=0,
)  # fmt: skip


def tiny_config(family: str, **extra):
    """A tiny config of ``family``: hidden 64, 2 layers, 4 query heads over 2 KV heads (GPT-NeoX:
    4 heads, no GQA), with each family's own twist switched on where it has one (windows and
    chunks of 8 tokens)."""
    import transformers as t

    if family == "llama":
        return t.LlamaConfig(**_TINY, **extra)
    if family == "mistral":
        return t.MistralConfig(**_TINY, sliding_window=8, **extra)
    if family == "qwen2":
        return t.Qwen2Config(**_TINY, **extra)
    if family == "qwen3":
        return t.Qwen3Config(**_TINY, head_dim=16, **extra)
    if family == "gemma":
        return t.GemmaConfig(**_TINY, head_dim=32, **extra)
    if family == "gemma2":
        return t.Gemma2Config(
            **_TINY, head_dim=16, sliding_window=8, attn_logit_softcapping=5.0,
            query_pre_attn_scalar=24, **extra,
        )  # fmt: skip
    if family == "gemma3_text":
        return t.Gemma3TextConfig(
            **_TINY, head_dim=16, sliding_window=8, query_pre_attn_scalar=24,
            layer_types=["sliding_attention", "full_attention"], **extra,
        )  # fmt: skip
    if family == "phi3":
        return t.Phi3Config(**_TINY, **extra)
    if family == "olmo2":
        return t.Olmo2Config(**_TINY, **extra)
    if family == "gpt_neox":
        neox = {k: v for k, v in _TINY.items() if k != "num_key_value_heads"}
        return t.GPTNeoXConfig(**neox, **extra)
    if family == "gemma4_text":  # a local and a global layer; the global head is twice as wide
        return t.Gemma4TextConfig(
            **_TINY, head_dim=16, global_head_dim=32, sliding_window=8,
            layer_types=["sliding_attention", "full_attention"],
            hidden_size_per_layer_input=8, vocab_size_per_layer_input=97, **extra,
        )  # fmt: skip
    if family == "llama4_text":  # a chunked RoPE layer and a global NoPE layer, no experts
        return t.Llama4TextConfig(
            **_TINY, head_dim=16, intermediate_size_mlp=96, attention_chunk_size=8,
            no_rope_layers=[1, 0], moe_layers=[], **extra,
        )  # fmt: skip
    if family == "cohere2":  # a sliding-window RoPE layer and a global NoPE layer
        return t.Cohere2Config(
            **_TINY, sliding_window=8, layer_types=["sliding_attention", "full_attention"],
            **extra,
        )  # fmt: skip
    raise ValueError(f"family must be one of {tuple(FAMILIES)}, got {family!r}")


def tiny_random_model(family: str, seed: int = 0, **extra):
    """A random eager model of ``family`` (:func:`tiny_config`), every weight random — norms
    too, so a missing ``1 + w`` or q/k norm would show — scaled to keep logits O(1)."""
    import torch
    import transformers

    torch.manual_seed(seed)
    config = tiny_config(family, **extra)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name and name.endswith("weight"):
                centre = 0.0 if family in ("gemma", "gemma2", "gemma3_text") else 1.0  # 1 + w
                param.copy_(centre + 0.3 * torch.randn_like(param))
            else:
                param.copy_(0.08 * torch.randn_like(param))
    return model.eval()
