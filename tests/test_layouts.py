"""Production layouts: their values read back from transformers' config classes, the scaling
rules checked on the layouts they give, and a Gemma 4 layout trained."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ropebook import checkpoints, layouts, rope, train
from ropebook.model import ModelConfig

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

LOCAL_TYPES = {"window": "sliding_attention", "chunk": "chunked_attention"}
SHAPES = [(2, 32, 128), (4, 32, 128), (12, 64, 512)]  # task, cpu matched, gpu matched


def production_config(production: layouts.Production):
    return getattr(transformers, production.config_class)()


def rope_parameters(config, layer_type: str) -> dict:
    """The rope parameters of one layer type (configs with one set for all give that one)."""
    params = config.rope_parameters
    return params.get(layer_type, params)


@pytest.mark.parametrize("name", layouts.PRODUCTION)
def test_production_values_are_the_config_classes_defaults(name):
    production = layouts.PRODUCTION[name]
    config = production_config(production)
    local_type = LOCAL_TYPES[production.local]
    assert config.max_position_embeddings == production.context
    span = config.sliding_window if production.local == "window" else config.attention_chunk_size
    assert span == production.span
    # rule 1 gives the production layer types at the production depth
    types = config.layer_types
    assert set(types) == {local_type, "full_attention"}
    assert [t == "full_attention" for t in types] == layouts.global_layers(
        len(types), production.period
    )
    local, top = production.local_layer, production.global_layer
    assert rope_parameters(config, local_type)["rope_theta"] == local.theta
    assert local.encoding == "rope"
    if top.encoding != "nope":
        params = rope_parameters(config, "full_attention")
        assert params["rope_theta"] == top.theta
        assert params.get("partial_rotary_factor", 1.0) == top.proportion
        assert params["rope_type"] == ("proportional" if top.encoding == "p-rope" else "default")
    fields = config.to_dict()  # Gemma 4's global heads are wider: a per-layer field
    for index, kind in enumerate(types):
        width = (fields.get("per_layer_config") or {}).get(f"{index:02d}", fields)["head_dim"]
        assert width == (top if kind == "full_attention" else local).head_dim
    if name == "llama4":  # NoPE exactly on the global layers (0 in no_rope_layers)
        assert [not use for use in config.no_rope_layers] == [t == "full_attention" for t in types]


def test_command_a_global_layers_ignore_positions():
    """Cohere2's config does not say that its global layers are NoPE; its attention does: a
    global layer's output does not change with the rotation it is handed, a sliding one's does."""
    from transformers.models.cohere2.modeling_cohere2 import Cohere2Attention

    config = transformers.Cohere2Config(
        vocab_size=32, hidden_size=32, intermediate_size=64, num_hidden_layers=4,
        num_attention_heads=2, num_key_value_heads=2, head_dim=16, attn_implementation="eager",
    )  # fmt: skip
    assert config.layer_types == ["sliding_attention"] * 3 + ["full_attention"]
    torch.manual_seed(0)
    x = torch.randn(1, 6, 32)
    angles = torch.rand(1, 6, 16) * 6
    outputs = {}
    for index in (0, 3):
        layer = Cohere2Attention(config, layer_idx=index).eval()
        with torch.no_grad():
            outputs[index] = [
                layer(x, (torch.cos(a), torch.sin(a)), attention_mask=None)[0]
                for a in (angles, 2 * angles)
            ]
    assert not torch.allclose(*outputs[0])  # sliding: rotated
    assert torch.equal(*outputs[3])  # global: no positions
    assert layouts.PRODUCTION["command-a"].global_layer.encoding == "nope"


@pytest.mark.parametrize("n_layers, head_dim, context", SHAPES)
@pytest.mark.parametrize("name", layouts.PRODUCTION)
def test_layouts_follow_their_rules_or_say_why_not(name, n_layers, head_dim, context):
    production = layouts.PRODUCTION[name]
    chosen = layouts.layout(name, n_layers=n_layers, head_dim=head_dim, context=context, base=1e4)
    config = ModelConfig(
        vocab_size=16, n_layers=n_layers, n_heads=2, head_dim=head_dim, d_model=64, d_ff=64,
        context=context, **chosen.fields,
    )  # fmt: skip
    plan = config.layer_plan
    notes = " ".join(chosen.notes)
    # rule 1: the last of every `period` layers is global, or the last layer where none is
    globals_ = [i for i, layer in enumerate(plan) if layer.window is None and layer.chunk is None]
    if n_layers >= production.period:
        assert globals_ == list(range(production.period - 1, n_layers, production.period))
        kept = (n_layers - len(globals_)) == len(globals_) * (production.period - 1)
        assert kept == ("local :" not in notes)
    else:
        assert globals_ == [n_layers - 1] and "local :" in notes
    # rule 2: the production share of the context, or MIN_SPAN where that is more (and said)
    spans = {layer.window or layer.chunk for layer in plan if layer.window or layer.chunk}
    (span,) = spans
    assert {layer.window is not None for i, layer in enumerate(plan) if i not in globals_} == {
        production.local == "window"
    }
    share = production.span / production.context * context
    if share >= layouts.MIN_SPAN:
        assert abs(span - share) <= 0.5 and f"{production.local} of" not in notes
    else:
        assert span == layouts.MIN_SPAN and f"{production.local} of {span} tokens" in notes
    # rule 3: the slowest rotating plane turns as in production over what the layer sees
    for index, layer in enumerate(plan):
        kind = production.global_layer if index in globals_ else production.local_layer
        enc = layer.encoding
        assert enc.name == kind.encoding and enc.proportion == kind.proportion
        if kind.encoding == "nope":
            continue
        seen, production_seen = (
            (context, production.context) if index in globals_ else (span, production.span)
        )
        want = _slowest(
            kind.head_dim, kind.theta, production_seen, enc.rope_variant, kind.proportion
        )
        got = _slowest(head_dim, enc.base, seen, enc.rope_variant, enc.proportion)
        if want < seen / (2 * math.pi):
            assert got == pytest.approx(want, rel=0.06)  # θ to two significant digits
        else:  # no plane turns that often over our tokens: the production θ, and said
            assert enc.base == kind.theta and f"θ = {kind.theta:.2g} kept" in notes
            turns = rope.turns_per_context(head_dim, enc.base, context, variant=enc.rope_variant,
                                           proportion=enc.proportion)  # fmt: skip
            assert turns[turns > 0].min() >= 1  # the docstring's claim: still at least a turn


def _slowest(head_dim, theta, span, variant, proportion):
    """Turns of the slowest rotating plane over ``span`` tokens, from the plain formula."""
    kept = head_dim // 2 if variant == "rope" else math.floor(proportion * head_dim / 2)
    k = np.arange(kept)
    return float(np.min(theta ** (-2 * k / head_dim)) * span / (2 * math.pi))


@pytest.mark.parametrize("name", ["gemma3", "gemma4"])
def test_gemma_at_its_ratio_places_the_global_layer_last_or_first(name):
    """At 6 layers Gemma keeps its 5 : 1 (no ratio note); ``first`` moves only the global layer
    and says so, the layers' encodings otherwise the same."""
    shape = {"n_layers": 6, "head_dim": 32, "context": 128, "base": 500.0}
    last, first = (layouts.layout(name, **shape, position=w) for w in ("last", "first"))
    kinds = {w: "".join("L" if layer.local else "G" for layer in c.fields["layers"])
             for w, c in (("last", last), ("first", first))}  # fmt: skip
    assert kinds == {"last": "LLLLLG", "first": "GLLLLL"}
    assert not any("local :" in n for n in last.notes)
    assert [n for n in first.notes if n not in last.notes] == [
        f"the global layer first in each period where {layouts.PRODUCTION[name].model} has it last"
    ]
    assert first.fields["layers"][0] == last.fields["layers"][-1]
    assert set(first.fields["layers"][1:]) == set(last.fields["layers"][:-1])
    assert layouts.global_layers(12, 6, "first") == [i % 6 == 0 for i in range(12)]
    with pytest.raises(ValueError, match="unknown global position 'middle'"):
        layouts.global_layers(6, 6, "middle")


def test_uniform_layouts_and_bad_names():
    for name, encoding, p in (("all-rope", "rope", 1.0), ("p-rope-0.75", "p-rope", 0.75)):
        chosen = layouts.layout(name, n_layers=4, head_dim=32, context=128, base=200.0)
        assert chosen.fields == {"encoding": encoding, "proportion": p, "rope_base": 200.0}
        assert chosen.notes == ()
    with pytest.raises(ValueError, match="unknown layout 'gemma5'; valid layouts: all-rope"):
        layouts.layout("gemma5", n_layers=4, head_dim=32, context=128, base=1e4)


def test_a_gemma4_layout_trains_and_round_trips(tmp_path, monkeypatch):
    """Local RoPE layers and a global p-RoPE layer, through the fused kernel: the loss falls on
    text with short-range structure, and the checkpoint's config is the pattern."""
    monkeypatch.setenv("ROPEBOOK_ATTENTION", "fused")
    rng = np.random.default_rng(0)
    successors = rng.integers(0, 64, (64, 3))
    text = [0]
    for choice in rng.integers(0, 3, 20_000):
        text.append(int(successors[text[-1], choice]))
    chosen = layouts.layout("gemma4", n_layers=2, head_dim=16, context=32, base=1e4)
    config = ModelConfig(vocab_size=64, n_layers=2, n_heads=2, head_dim=16, d_model=32, d_ff=64,
                         context=32, **chosen.fields)  # fmt: skip
    assert [layer.window for layer in config.layer_plan] == [layouts.MIN_SPAN, None]
    tc = train.TrainConfig(steps=40, batch_size=8, seq_len=32, warmup=2, lr=1e-2, eval_batches=2,
                           eval_every=20, log_every=4)  # fmt: skip
    result = train.train(config, tc, np.asarray(text, np.uint16), checkpoint_dir=tmp_path,
                         progress=False)  # fmt: skip
    losses = [row["loss"] for row in result.history["train"]]
    assert losses[-1] < losses[0] - 1.0, losses
    _, _, meta = checkpoints.load_checkpoint(tmp_path)
    assert ModelConfig.from_dict(meta["model"]) == config
