"""The layouts of local and global layers that production models use, scaled to our models.

Since 2025 the largest open models mix layer types: most layers attend locally with RoPE, and
every few layers one attends globally with another encoding. What ``transformers`` (our pin)
sets by default in each model's config class (:data:`PRODUCTION`; ``tests/test_layouts.py``
reads them back from the classes):

- **Gemma 3** (``Gemma3TextConfig``): five sliding-window RoPE layers (θ = 10⁴, 4,096 tokens of
  a 131,072 context) to one global RoPE layer at θ = 10⁶.
- **Gemma 4** (``Gemma4TextConfig``): five sliding RoPE layers (θ = 10⁴, 512 tokens) to one
  global p-RoPE layer, p = 0.25 of a 512-dimension head, θ = 10⁶.
- **Llama 4** (``Llama4TextConfig``): three RoPE layers (θ = 5·10⁵) attending within chunks of
  8,192 tokens, then one global NoPE layer (``no_rope_layers``).
- **Command A / R7B** (``Cohere2Config``): three sliding RoPE layers (θ = 10⁴, 4,096 of 8,192
  tokens) to one global layer without positions (its modelling code rotates sliding layers only).

Two uniform layouts are the baselines: **all-RoPE** and **0.75-RoPE** everywhere, at the base
the caller passes (the regime's, e.g. :func:`ropebook.zoo.regime_settings`).

**The rules** (:func:`layout`), for a model of ``n_layers`` layers, head dimension ``head_dim``
and context ``context``:

1. *Which layers are global*: layer ``i`` is global when ``(i + 1)`` is a multiple of the
   production period (6 for Gemma, 4 for Llama 4 and Command A), as in the config classes'
   ``layer_types``; where that makes none (fewer layers than the period), the last layer is.
2. *Window and chunk as a share of the context*: ``round(production span / production context
   × context)`` tokens, but at least :data:`MIN_SPAN`.
3. *θ by the turns of the slowest rotating plane*: each rotating layer's θ is set so that its
   slowest *rotating* plane (for p-RoPE the slowest one kept) turns as often over the tokens it
   sees (its window, its chunk, or the whole context) as the production layer's does over its
   own, with the production layer's own head dimension; rounded to two significant digits as
   the matched regime's base is. A global layer therefore matches over the context, and a local
   layer over its window, which is the same thing wherever rule 2 keeps the share.

**Where a ratio cannot be kept** (each :class:`Layout` lists its own in ``notes``):

- At context 128 Gemma 3's window is 4 tokens by rule 2 and Gemma 4's half a token; both get
  :data:`MIN_SPAN` = 8 (a sixteenth of the context, where production has a 32nd and a 256th):
  fewer than 8 tokens is about the k-back task's largest ``k`` (4) and would make the local
  layers a different design, not a smaller one. Llama 4's chunk (a 16th) and Command A's window
  (a half) keep their shares.
- With fewer layers than the period (2 or 4 layers against Gemma's 6) the local : global ratio is
  ``n_layers − 1 : 1``, not 5 : 1.
- Gemma 4's global θ: its slowest rotating plane (the slowest of the fastest quarter) turns ~700
  times over 131,072 tokens, and no plane of ours can turn more often than the fastest, one
  radian a token (~20 turns over 128 tokens, ~80 over 512). Rule 3 cannot be met, so those
  layers keep the production θ = 10⁶, at which every plane they rotate still turns at least
  once over our context (the character of a p = 0.25 layer: only fast planes rotate).
- One head dimension for every layer: Gemma 4's global heads are twice as wide as its local
  ones (512 and 256); ours are equal, and only rule 3's turns carry over.
- Llama 4's attention-temperature tuning on its NoPE layers is not modelled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ropebook import rope
from ropebook.model import LayerConfig

MIN_SPAN = 8  # fewest tokens a local layer sees (rule 2; see the module docstring)
LAYOUTS: tuple[str, ...] = ("all-rope", "p-rope-0.75", "gemma3", "gemma4", "llama4", "command-a")
UNIFORM: dict[str, dict[str, Any]] = {
    "all-rope": {"encoding": "rope", "proportion": 1.0},
    "p-rope-0.75": {"encoding": "p-rope", "proportion": 0.75},
}


@dataclass(frozen=True)
class LayerKind:
    """One kind of production layer: its encoding, θ (``None`` for NoPE), p and head width."""

    encoding: str  # "rope", "p-rope" or "nope"
    theta: float | None
    proportion: float
    head_dim: int


@dataclass(frozen=True)
class Production:
    """A production layout, as its ``transformers`` config class sets it by default."""

    model: str
    config_class: str
    context: int  # max_position_embeddings
    local: str  # "window" (sliding_window) or "chunk" (attention_chunk_size)
    span: int
    period: int  # a global layer every `period` layers, the last of each group
    local_layer: LayerKind
    global_layer: LayerKind
    not_modelled: str = ""  # what of the design our model leaves out


PRODUCTION: dict[str, Production] = {
    "gemma3": Production(
        "Gemma 3", "Gemma3TextConfig", 131_072, "window", 4096, 6,
        LayerKind("rope", 1e4, 1.0, 256), LayerKind("rope", 1e6, 1.0, 256),
    ),
    "gemma4": Production(
        "Gemma 4", "Gemma4TextConfig", 131_072, "window", 512, 6,
        LayerKind("rope", 1e4, 1.0, 256), LayerKind("p-rope", 1e6, 0.25, 512),
    ),
    "llama4": Production(
        "Llama 4", "Llama4TextConfig", 131_072, "chunk", 8192, 4,
        LayerKind("rope", 5e5, 1.0, 128), LayerKind("nope", None, 1.0, 128),
        "attention-temperature tuning on the NoPE layers",
    ),
    "command-a": Production(
        "Command A / R7B", "Cohere2Config", 8192, "window", 4096, 4,
        LayerKind("rope", 1e4, 1.0, 128), LayerKind("nope", None, 1.0, 128),
    ),
}  # fmt: skip


@dataclass(frozen=True)
class Layout:
    """A layout at our scale: the :class:`ropebook.model.ModelConfig` fields it sets
    (``encoding``, ``rope_base``, ``proportion`` and, unless uniform, ``layers``) and the
    production ratios it could not keep."""

    name: str
    fields: dict[str, Any]
    notes: tuple[str, ...]


def _round_significant(x: float, digits: int = 2) -> float:
    return float(f"{x:.{digits - 1}e}")


def slowest_turns(head_dim: int, theta: float, span: int, variant: str, proportion: float) -> float:
    """Turns of the slowest rotating plane over ``span`` tokens (rule 3's quantity)."""
    turns = rope.turns_per_context(head_dim, theta, span, variant=variant, proportion=proportion)
    rotating = turns[turns > 0]
    if rotating.size == 0:
        raise ValueError(f"{variant} with p={proportion} rotates no plane of a {head_dim}-dim head")
    return float(rotating.min())


def matched_theta(head_dim: int, span: int, turns: float, variant: str, proportion: float) -> float:
    """The θ at which the slowest rotating plane of a ``head_dim`` head turns ``turns`` times
    over ``span`` tokens, rounded to two significant digits."""
    grid = rope.frequencies(head_dim, math.e, variant=variant, proportion=proportion)
    exponent = -math.log(grid[grid > 0].min())  # that plane's frequency is θ^(-exponent)
    if exponent == 0:
        raise ValueError(f"the only rotating plane of {variant} p={proportion} ignores θ")
    return _round_significant((2 * math.pi * turns / span) ** (-1 / exponent))


def span_for(production: Production, context: int, min_span: int = MIN_SPAN) -> int:
    """Rule 2: the production share of the context, in our tokens, at least ``min_span``."""
    return max(round(production.span / production.context * context), min_span)


def _layer(
    kind: LayerKind, head_dim: int, seen: int, production_seen: int
) -> tuple[dict[str, Any], str | None]:
    """Encoding, θ and p of one layer kind at our scale (rule 3), and a note where rule 3
    cannot be met: no plane turns faster than the fastest, one radian a token (``seen / 2π``
    turns), so a production plane that turns more often than that keeps the production θ."""
    if kind.encoding == "nope":
        return {"encoding": "nope"}, None
    turns = slowest_turns(
        kind.head_dim, kind.theta, production_seen, kind.encoding, kind.proportion
    )
    fields = {"encoding": kind.encoding, "proportion": kind.proportion}
    if turns < seen / (2 * math.pi):
        return fields | {"rope_base": matched_theta(head_dim, seen, turns, kind.encoding, kind.proportion)}, None  # fmt: skip
    ours = slowest_turns(head_dim, kind.theta, seen, kind.encoding, kind.proportion)
    note = (
        f"θ = {kind.theta:.2g} kept on the {kind.encoding} p={kind.proportion:g} layers: their "
        f"slowest rotating plane turns {turns:.3g} times over {production_seen} tokens in "
        f"production, more than any plane can over our {seen} ({seen / (2 * math.pi):.3g}); "
        f"here it turns {ours:.3g} times"
    )
    return fields | {"rope_base": float(kind.theta)}, note


POSITIONS: tuple[str, ...] = ("last", "first")


def global_layers(n_layers: int, period: int, position: str = "last") -> list[bool]:
    """Rule 1: whether each layer is global: the ``last`` layer of each period as in production
    (the last layer where there are fewer layers than the period), or the ``first``."""
    if position not in POSITIONS:
        raise ValueError(f"unknown global position {position!r}; valid: {', '.join(POSITIONS)}")
    flags = [(i + (position == "last")) % period == 0 for i in range(n_layers)]
    if not any(flags):
        flags[-1] = True
    return flags


def layout(
    name: str,
    *,
    n_layers: int,
    head_dim: int,
    context: int,
    base: float,
    min_span: int = MIN_SPAN,
    position: str = "last",
) -> Layout:
    """Layout ``name`` (one of :data:`LAYOUTS`) for a model of this shape, by the module's rules;
    ``base`` is the θ of the uniform layouts (all-RoPE, 0.75-RoPE); ``position`` places the
    global layer last (production) or first in each period (rule 1)."""
    if name not in LAYOUTS:
        raise ValueError(f"unknown layout {name!r}; valid layouts: {', '.join(LAYOUTS)}")
    if name in UNIFORM:
        return Layout(name, {**UNIFORM[name], "rope_base": float(base)}, ())
    production = PRODUCTION[name]
    span = span_for(production, context, min_span)
    top, top_note = _layer(production.global_layer, head_dim, context, production.context)
    local, local_note = _layer(production.local_layer, head_dim, span, production.span)
    local[production.local] = span  # "window" or "chunk"
    flags = global_layers(n_layers, production.period, position)
    layers = tuple(LayerConfig() if is_global else LayerConfig(**local) for is_global in flags)
    fields = {"encoding": top["encoding"], "rope_base": top.get("rope_base", 10_000.0),
              "proportion": top.get("proportion", 1.0), "layers": layers}  # fmt: skip
    notes = _notes(production, flags, span, context, head_dim)
    if position != "last":
        notes = (*notes, f"the global layer {position} in each period where {production.model} "
                 "has it last")  # fmt: skip
    return Layout(name, fields, tuple(n for n in (*notes, top_note, local_note) if n))


def layer_dicts(chosen: Layout) -> list[dict[str, Any]]:
    """``chosen``'s layers as plain dicts (a global layer: ``{}``), the form a zoo override and a
    results file keep; ``ModelConfig`` reads them back. A uniform layout has no layers."""
    if "layers" not in chosen.fields:
        raise ValueError(f"layout {chosen.name!r} is uniform: it has no per-layer pattern")
    return [layer.to_dict() for layer in chosen.fields["layers"]]


def with_global_proportion(chosen: Layout, proportion: float) -> Layout:
    """``chosen`` with p-RoPE at ``proportion`` on its global layers, at their θ, its local
    layers unchanged: the p sweep (p = 0 rotates nothing there, p = 1 every plane)."""
    if not 0.0 <= proportion <= 1.0:
        raise ValueError(f"proportion p must lie in [0, 1], got {proportion}")
    if "layers" not in chosen.fields:
        raise ValueError(f"layout {chosen.name!r} has no local layers: sweep p with its encoding")
    if chosen.fields["encoding"] == "nope":
        raise ValueError(f"layout {chosen.name!r}'s global layers are NoPE: they have no θ to keep")
    fields = chosen.fields | {"encoding": "p-rope", "proportion": float(proportion)}
    note = f"p = {proportion:g} on the global layers at θ = {chosen.fields['rope_base']:.2g}"
    return Layout(f"{chosen.name}-p{proportion:g}", fields, (*chosen.notes, note))


def _notes(
    production: Production, flags: list[bool], span: int, context: int, head_dim: int
) -> tuple[str, ...]:
    notes = []
    share = production.span / production.context
    if span != round(share * context):
        notes.append(
            f"{production.local} of {span} tokens ({span / context:.3g} of the context) where "
            f"{production.model}'s share of {share:.3g} gives {share * context:.3g}"
        )
    n_global = sum(flags)
    if (len(flags) - n_global) != n_global * (production.period - 1):
        notes.append(
            f"{len(flags) - n_global} local : {n_global} global layers where "
            f"{production.model} has {production.period - 1} : 1"
        )
    widths = {production.local_layer.head_dim, production.global_layer.head_dim}
    if len(widths) > 1:
        notes.append(
            f"one head width ({head_dim}) for every layer where {production.model}'s local and "
            f"global heads have {' and '.join(map(str, sorted(widths)))} dimensions"
        )
    if production.not_modelled:
        notes.append(f"{production.model}'s {production.not_modelled} is not modelled")
    return tuple(notes)


def table(
    *,
    n_layers: int,
    head_dim: int,
    context: int,
    base: float,
    min_span: int = MIN_SPAN,
    position: str = "last",
) -> list[dict[str, Any]]:
    """One row per layout: its layers as ``L``/``G`` with encoding, θ, p and span, and notes."""
    rows = []
    for name in LAYOUTS:
        chosen = layout(
            name, n_layers=n_layers, head_dim=head_dim, context=context, base=base,
            min_span=min_span, position=position,
        )  # fmt: skip
        fields = chosen.fields
        pattern = fields.get("layers") or (LayerConfig(),) * n_layers
        rows.append({
            "layout": name,
            "layers": "".join("L" if layer.local else "G" for layer in pattern),
            "global": _describe(fields["encoding"], fields["rope_base"], fields["proportion"]),
            "local": _describe_local(pattern),
            "notes": "; ".join(chosen.notes),
        })  # fmt: skip
    return rows


def _describe(encoding: str, base: float | None, proportion: float | None) -> str:
    if encoding == "nope":
        return "nope"
    share = "" if encoding == "rope" else f" p={proportion:g}"
    return f"{encoding}{share} θ={base:.2g}"


def _describe_local(pattern: tuple[LayerConfig, ...]) -> str:
    local = [layer for layer in pattern if layer.local]
    if not local:
        return ""
    layer = local[0]
    span = f"window {layer.window}" if layer.window else f"chunk {layer.chunk}"
    return f"{_describe(layer.encoding, layer.rope_base, layer.proportion)}, {span}"
