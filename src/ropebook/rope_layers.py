"""``python -m ropebook layers CONFIG``: what a config rotates, layer by layer, without weights.

``CONFIG`` is a ``config.json``, a model folder holding one, or a transformers model type (its
config class's defaults: ``gemma4_text``, ``llama4_text``, ...). Nothing is downloaded and no
weight is read. For every layer, or every set of identical layers, :func:`read` gives

- its **scope**: global, a sliding window (``layer_types``' ``sliding_attention``, or every layer
  of a family without layer types that sets ``sliding_window``: Mistral) or chunks (Llama 4's
  ``chunked_attention``);
- its **encoding**: RoPE, p-RoPE (the grid's slowest planes set to 0: transformers'
  ``proportional``), partial rotary (only the first ``rotary_dim`` dims rotate: GPT-NeoX, Phi) or
  NoPE (Llama 4's ``no_rope_layers`` zeros, Command A's global layers, a layer type whose
  ``rope_parameters`` entry is ``None``), as a :class:`ropebook.capture.RotaryGrid`, the reading
  ``analyse`` makes of a running model;
- θ, the scaling rule and its parameters, the pairing (*half* ``(k, k + R/2)``; *interleaved*
  ``(2k, 2k + 1)``: Cohere 2, Llama 4), the dims that rotate, every rotated plane's angular
  frequency and wavelength, how many turn less than once over the context (and over the window
  or chunk of a local layer), and the unrotated planes.

The frequencies are transformers' own: the model's rotary module is built from the config (no
weights), so its ``inv_freq`` buffers come from the functions its layers use
(``ROPE_INIT_FUNCTIONS`` in ``transformers.modeling_rope_utils``, or the module's
``compute_default_rope_parameters``). Every grid whose rule :mod:`ropebook.scaling` implements is
recomputed there (:func:`ropebook.hf.scaled_grid`; ``proportional`` as the full-width grid's
fastest planes) and the largest relative gap reported.

The traps a config falls into or near are named, one warning line each with its reason, never an
error (:data:`TRAPS`). Bad input — no such file or type, not a config, an unknown rope type, a
model without RoPE — raises :class:`ropebook.hf.CheckpointError`, one line.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ropebook import hf, preflight
from ropebook.capture import FAMILIES, RotaryGrid, span_text
from ropebook.hf import CheckpointError

INTERLEAVED = ("cohere", "cohere2", "llama4", "llama4_text")  # rotate (2k, 2k + 1) pairs
SCALED_TYPES = ("linear", "dynamic", "yarn", "llama3", "longrope")  # context-extension rules
AGREE = 1e-4  # relative gap under which transformers' and ropebook.scaling's grids agree (float32)
TRAPS: dict[str, str] = {
    "proportional-without-factor": "a proportional entry without partial_rotary_factor",
    "proportional-planes": "proportional keeps the fastest planes: under the half pairing two "
    "blocks of dims rotate, not the first share of the head",
    "partial-default": "a partial factor on a default-type grid, where proportional may have "
    "been meant",
    "no-rope-mask": "Llama 4's no_rope_layers is a mask, 1 = RoPE; chunks on RoPE layers only",
    "scaled-local-layers": "a context-extension rule on layers that attend within a window",
    "global-only-scaling": "scaling on the global layers only (Gemma 3, 4B and larger)",
    "sliding-window-off": "a sliding_window the config switches off (use_sliding_window false)",
    "window-from-max-window-layers": "the window applies to layers >= max_window_layers only",
    "interleaved-pairing": "dims paired (2k, 2k + 1), not (k, k + d/2)",
    "per-layer-type-rope": "θ and scaling differ per layer type (transformers 5 rope_parameters)",
    "legacy-rope-fields": "transformers 4 fields (rope_theta, rope_scaling) at the top level",
    "pairing-assumed": "a family not read by ropebook.capture: the half pairing is assumed",
    "scaling-mismatch": "transformers' grid differs from ropebook.scaling's",
}


@dataclass(frozen=True)
class Trap:
    """A trap the config falls into or near: its name (:data:`TRAPS`) and why, for this config."""

    name: str
    reason: str

    def line(self) -> str:
        return f"warning [{self.name}]: {self.reason}"


@dataclass(frozen=True)
class LayerRope:
    """One layer's positions: its :class:`ropebook.capture.RotaryGrid` (scope, encoding, θ,
    pairing, frequencies), the scaling rule's parameters and the function that made its grid."""

    index: int
    grid: RotaryGrid
    parameters: tuple[tuple[str, Any], ...] = ()  # the rule's, without rope_type and rope_theta
    init_function: str = ""

    @property
    def scope(self) -> str:
        if self.grid.window is not None:
            return "sliding window"
        return "chunk" if self.grid.chunk is not None else "global"

    @property
    def span(self) -> int | None:
        """Tokens a local layer sees (its window or chunk); ``None`` for a global layer."""
        return self.grid.window if self.grid.window is not None else self.grid.chunk

    @property
    def rotated_planes(self) -> np.ndarray:
        return np.flatnonzero(self.grid.rotated)

    @property
    def unrotated_planes(self) -> np.ndarray:
        return np.flatnonzero(~self.grid.rotated)

    @property
    def frequencies(self) -> np.ndarray:
        """Angular frequency (rad/token) of every rotated plane, fastest first."""
        return self.grid.frequencies[self.rotated_planes]

    @property
    def wavelengths(self) -> np.ndarray:
        """Tokens per full turn of every rotated plane, ``2π / ω``."""
        return 2 * math.pi / self.frequencies

    @property
    def rotated_dims(self) -> list[tuple[int, int]]:
        """The dims that rotate, as ``[start, stop)`` runs (Gemma 4's global layers under the
        half pairing: ``[0, 64)`` and ``[256, 320)`` of 512)."""
        dims = np.unique(self.grid.pairs[self.rotated_planes].ravel())
        if dims.size == 0:
            return []
        breaks = np.flatnonzero(np.diff(dims) > 1)
        starts = [dims[0], *dims[breaks + 1]]
        stops = [*dims[breaks] + 1, dims[-1] + 1]
        return [(int(a), int(b)) for a, b in zip(starts, stops, strict=True)]

    def slow_planes(self, span: int) -> int:
        """How many rotated planes turn less than once over ``span`` tokens."""
        return int(np.sum(self.frequencies * span < 2 * math.pi))

    def key(self) -> tuple:
        """Everything but the index: layers with equal keys are identical."""
        g = self.grid
        return (g.layer_type, g.window, g.chunk, g.head_dim, g.rotary_dim, g.pairing, g.rope_type,
                g.rope_theta, g.attention_scaling, tuple(np.round(g.inv_freq, 12)),
                self.parameters, self.init_function)  # fmt: skip


@dataclass(frozen=True)
class ConfigReading:
    """Every layer of a config, the traps it falls into or near, and the cross-check of each
    layer kind's grid against :mod:`ropebook.scaling` (its largest relative gap, or why none)."""

    source: str
    model_type: str
    context: int  # max_position_embeddings
    layers: tuple[LayerRope, ...]
    traps: tuple[Trap, ...] = ()
    crosscheck: tuple[tuple[str, str], ...] = ()

    def groups(self) -> list[tuple[LayerRope, list[int]]]:
        """Identical layers together, in order of their first layer: ``(first layer, indices)``."""
        found: dict[tuple, tuple[LayerRope, list[int]]] = {}
        for layer in self.layers:
            found.setdefault(layer.key(), (layer, []))[1].append(layer.index)
        return list(found.values())

    @property
    def pattern(self) -> str:
        """One letter a layer: ``G`` global, ``L`` local; lower case where it rotates nothing."""
        letters = [
            ("L" if layer.span else "G", layer.grid.encoding == "NoPE") for layer in self.layers
        ]
        return "".join(letter.lower() if nope else letter for letter, nope in letters)

    def headline(self, layer: LayerRope) -> str:
        """One line: scope, encoding, θ and rule, pairing, planes and their turns."""
        g = layer.grid
        kind = f"{g.layer_type}, " if g.layer_type else ""
        scope = kind + "global" if layer.span is None else kind + (
            f"sliding window {layer.span:,}" if layer.scope == "sliding window"
            else f"chunks of {layer.span:,}")  # fmt: skip
        if g.encoding == "NoPE":
            return f"{scope}; NoPE: no plane rotates ({g.n_chunks} unrotated planes of {g.head_dim} dims)"  # fmt: skip
        rule = describe_rule(g.rope_type, dict(layer.parameters))
        if g.attention_scaling != 1:
            rule += f", cos/sin × {g.attention_scaling:.4g}"
        dims = ", ".join(f"[{a}, {b})" for a, b in layer.rotated_dims)
        slow = f"{layer.slow_planes(self.context)} turn less than once over the context ({self.context:,})"  # fmt: skip
        if layer.span:
            slow += f", {layer.slow_planes(layer.span)} over the {layer.scope} ({layer.span:,})"
        lam = layer.wavelengths
        return (
            f"{scope}; {g.encoding}, θ {g.rope_theta:,.0f}, {rule}; {describe_pairing(g.pairing)}; "
            f"{g.n_rotated} of {g.n_chunks} planes rotate (dims {dims} of {g.head_dim}); "
            f"wavelengths {tokens(lam[0])} to {tokens(lam[-1])} tokens; {slow}"
        )

    def text(self, planes: bool = True) -> str:
        """The table: a header, then per set of identical layers its headline, its unrotated
        planes and (with ``planes``) every rotated plane's frequency and wavelength; the traps."""
        lines = [
            f"{self.source}: {self.model_type}, {len(self.layers)} layers, context "
            f"{self.context:,} tokens",
            f"pattern (G global, L local; lower case: NoPE): {self.pattern}",
        ]
        for layer, indices in self.groups():
            lines += ["", f"{layers_text(indices)}: {self.headline(layer)}"]
            if layer.grid.encoding == "NoPE":
                continue
            lines.append(f"  grid: {layer.init_function}")
            unrotated = layer.unrotated_planes
            lines.append(
                "  unrotated planes: " + (f"{span_text(unrotated)} ({len(unrotated)})"
                                          if len(unrotated) else "none")
            )  # fmt: skip
            if planes:
                lines.append("  plane: ω (rad/token), wavelength (tokens)")
                cells = [
                    f"{k:>4}: {w:.4g}, {lam:.4g}"
                    for k, w, lam in zip(layer.rotated_planes, layer.frequencies,
                                         layer.wavelengths, strict=True)
                ]  # fmt: skip
                lines += ["  " + "   ".join(f"{c:<28}" for c in cells[i : i + 4]).rstrip()
                          for i in range(0, len(cells), 4)]  # fmt: skip
        if self.crosscheck:
            lines += ["", "ropebook.scaling cross-check:"]
            lines += [f"  {name}: {verdict}" for name, verdict in self.crosscheck]
        if self.traps:
            lines += ["", *(trap.line() for trap in self.traps)]
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source, "model_type": self.model_type, "context": self.context,
            "pattern": self.pattern,
            "layers": [_layer_json(layer, self.context) for layer in self.layers],
            "groups": [indices for _, indices in self.groups()],
            "crosscheck": dict(self.crosscheck),
            "warnings": [{"name": t.name, "reason": t.reason} for t in self.traps],
        }  # fmt: skip


def _layer_json(layer: LayerRope, context: int) -> dict[str, Any]:
    g = layer.grid
    return {
        "layer": layer.index, "layer_type": g.layer_type, "scope": layer.scope,
        "sliding_window": g.window, "chunk": g.chunk, "encoding": g.encoding,
        "rope_type": g.rope_type, "rope_theta": g.rope_theta,
        "parameters": {k: list(v) if isinstance(v, tuple) else v for k, v in layer.parameters},
        "grid_function": layer.init_function, "attention_scaling": g.attention_scaling,
        "pairing": g.pairing, "head_dim": g.head_dim, "rotary_dim": g.rotary_dim,
        "rotated_dims": [list(r) for r in layer.rotated_dims],
        "rotated_planes": layer.rotated_planes.tolist(),
        "unrotated_planes": layer.unrotated_planes.tolist(),
        "frequencies": layer.frequencies.tolist(), "wavelengths": layer.wavelengths.tolist(),
        "planes_under_one_turn_over_context": layer.slow_planes(context) if g.n_rotated else 0,
        "planes_under_one_turn_over_span": (
            layer.slow_planes(layer.span) if layer.span and g.n_rotated else None
        ),
    }  # fmt: skip


def index_text(indices) -> str:
    """``[0, 1, 2, 4]`` → "0–2, 4"."""
    indices = [int(i) for i in indices]
    runs, start = [], indices[0]
    for before, after in zip(indices, [*indices[1:], None], strict=True):
        if after != before + 1:
            runs.append(str(start) if start == before else f"{start}–{before}")
            start = after
    return ", ".join(runs)


def layers_text(indices: list[int]) -> str:
    """``[0, 1, 2, 4]`` → "layers 0–2, 4 (4)"; ``[5]`` → "layer 5"."""
    if len(indices) == 1:
        return f"layer {indices[0]}"
    return f"layers {index_text(indices)} ({len(indices)})"


def tokens(x: float) -> str:
    """A length in tokens: 3 significant digits below 1,000, else whole with commas."""
    return f"{x:.3g}" if x < 1000 else f"{x:,.0f}"


def describe_pairing(pairing: str) -> str:
    return "half pairing (k, k + R/2)" if pairing == "half" else "interleaved pairing (2k, 2k + 1)"


def describe_rule(rope_type: str, params: dict[str, Any]) -> str:
    """``"linear ×8"``, ``"llama3 (factor 8, low_freq_factor 1, ...)"``, ``"no scaling"``."""
    if rope_type == "default":
        shown = {k: v for k, v in params.items() if k == "partial_rotary_factor"}
        return "default (no scaling" + (
            f"; partial_rotary_factor {shown['partial_rotary_factor']:g})" if shown else ")"
        )
    if rope_type == "linear":
        return f"linear ×{params.get('factor', 1):g}"

    def value(v: Any) -> str:
        if isinstance(v, tuple | list):
            return f"[{len(v)} values]"
        return f"{v:g}" if isinstance(v, int | float) and not isinstance(v, bool) else str(v)

    if not params:
        return rope_type
    return f"{rope_type} (" + ", ".join(f"{k} {value(v)}" for k, v in params.items()) + ")"


# ---------------------------------------------------------------------------------------------
# reading a config


def load(spec: str | Path) -> tuple[Any, dict[str, Any] | None, str]:
    """``(transformers config, the file's text-model fields or None, source)`` for a
    ``config.json``, a folder holding one, or a model type (its config class's defaults)."""
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    path = Path(spec)
    if path.is_dir():
        path = path / "config.json"
    if path.is_file():
        raw = hf._read_json(path)
        model_type = raw.get("model_type")
        if not isinstance(model_type, str):
            raise CheckpointError(f"{path}: not a model config (no model_type)")
        if model_type not in CONFIG_MAPPING:
            raise CheckpointError(f"{path}: model_type {model_type!r} is unknown to transformers")
        verbosity = transformers.utils.logging.get_verbosity()
        transformers.utils.logging.set_verbosity_error()  # its rope warnings are ours to name
        try:
            config = CONFIG_MAPPING[model_type].from_dict(raw)
        except (ValueError, KeyError, TypeError) as error:
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise CheckpointError(
                f"{path}: transformers cannot read this config ({first})"
            ) from None
        finally:
            transformers.utils.logging.set_verbosity(verbosity)
        text = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else raw
        return config, text, str(path)
    if str(spec) in CONFIG_MAPPING:
        cls = CONFIG_MAPPING[str(spec)]
        return cls(), None, f"{cls.__name__} defaults"
    raise CheckpointError(
        f"{spec}: no such file or folder, and not a transformers model type (e.g. llama, "
        "gemma4_text, llama4_text)"
    )


def _field_defaults(config) -> dict[str, Any]:
    """A config class's declared defaults, before its ``__post_init__`` rewrites them (Qwen's
    ``sliding_window`` becomes ``None`` where ``use_sliding_window`` is false)."""
    if not dataclasses.is_dataclass(config):
        return {}
    return {f.name: f.default for f in dataclasses.fields(config)
            if f.default is not dataclasses.MISSING}  # fmt: skip


def _rotary_class(config):
    """The text model's rotary-embedding module class, from its modeling file."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    name = MODEL_MAPPING_NAMES.get(config.model_type)
    model_class = getattr(transformers, name, None) if isinstance(name, str) else None
    if model_class is None:
        raise CheckpointError(f"model_type {config.model_type!r}: transformers has no model class")
    module = importlib.import_module(model_class.__module__)
    found = [cls for n, cls in vars(module).items() if isinstance(cls, type)
             and n.endswith("RotaryEmbedding") and "Vision" not in n and "Audio" not in n]  # fmt: skip
    found.sort(key=lambda cls: "Text" not in cls.__name__)
    if not found:
        raise CheckpointError(
            f"model_type {config.model_type!r} has no rotary position embedding module; "
            "ropebook reads RoPE models"
        )
    return found[0]


def _per_layer(config, index: int):
    """The config as layer ``index`` sees it (Gemma 4's global layers have their own head size)."""
    per_layer = getattr(config, "per_layer_config", None)
    try:
        return per_layer[index] if per_layer is not None else config
    except (KeyError, IndexError, TypeError):
        return config


def _head_dim(config, index: int) -> int:
    own = _per_layer(config, index)
    return int(getattr(own, "head_dim", None) or config.hidden_size // config.num_attention_heads)


def _rotates(config, index: int, layer_type: str | None, params) -> bool:
    """Whether layer ``index``'s modeling code rotates its queries and keys."""
    if params is None:  # a layer type without RoPE parameters
        return False
    mask = getattr(config, "no_rope_layers", None)
    if mask:  # Llama 4: 1 = RoPE, 0 = NoPE
        return bool(mask[index])
    if config.model_type == "cohere2":  # its attention rotates sliding-window layers only
        return layer_type == "sliding_attention"
    return True


def _span(config, layer_type: str | None) -> tuple[int | None, int | None]:
    """``(window, chunk)`` of a layer of ``layer_type``."""
    window = getattr(config, "sliding_window", None)
    if getattr(config, "layer_types", None) is None:  # Mistral, Phi-3: every layer, if set
        return (int(window) if window else None), None
    if layer_type == "sliding_attention" and window:
        return int(window), None
    chunk = getattr(config, "attention_chunk_size", None)
    if layer_type == "chunked_attention" and chunk:
        return None, int(chunk)
    return None, None


def _check_rope_types(config, params: dict[str, Any], nested: list[str], source: str) -> None:
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    known = ("default", *ROPE_INIT_FUNCTIONS)
    for entry in [params[k] for k in nested] if nested else [params]:
        rope_type = (entry or {}).get("rope_type", "default")
        if rope_type not in known:
            raise CheckpointError(
                f"{source}: unknown rope type {rope_type!r}; transformers knows {', '.join(known)}"
            )


def read(config, raw: dict[str, Any] | None = None, source: str = "") -> ConfigReading:
    """Every layer of a transformers ``config`` (a multimodal one: its text model), with
    transformers' own frequencies, the traps and the cross-check (module docstring). ``raw``: the
    ``config.json`` fields as written (``None`` for a class's defaults)."""
    import torch
    import transformers
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    config = preflight.text_config(config)
    params = preflight.rope_parameters(config)
    if not params:
        raise CheckpointError(
            f"{source or config.model_type}: model_type {config.model_type!r} has no rotary "
            "position embedding (no rope_parameters / rope_theta)"
        )
    nested = [k for k in params if isinstance(params[k], dict) or params[k] is None
              if k in set(getattr(config, "layer_types", None) or ())]  # fmt: skip
    _check_rope_types(config, params, nested, source or config.model_type)
    rotary_class = _rotary_class(config)
    verbosity = transformers.utils.logging.get_verbosity()
    transformers.utils.logging.set_verbosity_error()
    try:
        with torch.no_grad():
            rotary = rotary_class(config)
    finally:
        transformers.utils.logging.set_verbosity(verbosity)
    layer_types = getattr(config, "layer_types", None)
    layers = []
    for index in range(config.num_hidden_layers):
        layer_type = layer_types[index] if layer_types else None
        own = params.get(layer_type) if nested else params
        window, chunk = _span(config, layer_type)
        head_dim = _head_dim(config, index)
        if not _rotates(config, index, layer_type, own):
            grid = RotaryGrid(head_dim=head_dim, rotary_dim=0, inv_freq=np.zeros(0),
                              rope_type="none", layer_type=layer_type, source="no rotation",
                              pairing=_pairing(config), window=window, chunk=chunk)  # fmt: skip
            layers.append(LayerRope(index, grid, init_function="none (NoPE)"))
            continue
        prefix = f"{layer_type}_" if nested else ""
        inv_freq = getattr(rotary, f"{prefix}inv_freq").detach().double().cpu().numpy()
        rope_type = own.get("rope_type", "default")
        function = (f"{rotary_class.__name__}.compute_default_rope_parameters"
                    if rope_type == "default" else
                    f"ROPE_INIT_FUNCTIONS[{rope_type!r}] "
                    f"({ROPE_INIT_FUNCTIONS[rope_type].__name__})")  # fmt: skip
        grid = RotaryGrid(
            head_dim=head_dim, rotary_dim=2 * len(inv_freq), inv_freq=inv_freq,
            attention_scaling=float(getattr(rotary, f"{prefix}attention_scaling")),
            rope_type=rope_type, rope_theta=float(own["rope_theta"]), layer_type=layer_type,
            source=f"{rotary_class.__name__}.{prefix}inv_freq", pairing=_pairing(config),
            window=window, chunk=chunk,
        )  # fmt: skip
        rule = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in own.items()
                            if k not in ("rope_type", "rope_theta", "type")))  # fmt: skip
        layers.append(LayerRope(index, grid, rule, function))
    context = int(config.max_position_embeddings)
    reading = ConfigReading(source or f"{type(config).__name__}", config.model_type, context,
                            tuple(layers))  # fmt: skip
    checks = crosscheck(reading)
    traps = find_traps(reading, config, raw, checks)
    return dataclasses.replace(reading, traps=tuple(traps), crosscheck=tuple(checks.items()))


def _pairing(config) -> str:
    return "interleaved" if config.model_type in INTERLEAVED else "half"


def read_config(spec: str | Path) -> ConfigReading:
    """:func:`read` of what :func:`load` finds at ``spec``."""
    config, raw, source = load(spec)
    return read(config, raw, source)


def disagreements(reading: ConfigReading, grids) -> list[int]:
    """The layers where a running model's :class:`ropebook.capture.RotaryGrid` (``grids``, from
    :func:`ropebook.capture.capture`) differs from the config's reading: scope, encoding,
    pairing, rotated dims or frequencies (relative 1e-5)."""
    out = []
    for layer, grid in zip(reading.layers, grids, strict=True):
        g = layer.grid
        same = (g.encoding, g.pairing, g.window, g.chunk, g.head_dim, g.rotary_dim) == (
            grid.encoding, grid.pairing, grid.window, grid.chunk, grid.head_dim, grid.rotary_dim,
        ) and np.allclose(g.inv_freq, grid.inv_freq, rtol=1e-5, atol=0)  # fmt: skip
        if not same:
            out.append(layer.index)
    return out


# ---------------------------------------------------------------------------------------------
# the cross-check against ropebook.scaling


def expected_frequencies(layer: LayerRope, context: int) -> np.ndarray | None:
    """``inv_freq`` of a RoPE layer by :mod:`ropebook.scaling`'s rules (``None`` where it
    implements none: a rope type it lacks, YaRN without truncation)."""
    g, params = layer.grid, dict(layer.parameters)
    if g.rope_type == "proportional":  # the full-width grid's fastest planes, then zeros
        kept = int(params.get("partial_rotary_factor", 1.0) * g.head_dim // 2)
        full = hf.scaled_grid("default", g.head_dim, g.rope_theta, {}, context).frequencies
        grid = np.concatenate([full[:kept], np.zeros(g.head_dim // 2 - kept)])
        return grid / params.get("factor", 1.0)
    if g.rope_type not in ("default", *SCALED_TYPES):
        return None
    try:
        filled = hf.scaling_params(g.rope_type, dict(params), {"max_position_embeddings": context},
                                   Path("rope_parameters"))  # fmt: skip
    except (CheckpointError, KeyError):
        return None
    return hf.scaled_grid(g.rope_type, g.rotary_dim, g.rope_theta, filled, context).frequencies


def crosscheck(reading: ConfigReading) -> dict[str, str]:
    """Per layer kind (layer type, or "all layers"): transformers' grid against
    :func:`expected_frequencies`: its largest relative gap, or why it was not checked."""
    out: dict[str, str] = {}
    for layer, indices in reading.groups():
        g = layer.grid
        if g.encoding == "NoPE":
            continue
        name = f"{g.rope_type} grid of {layers_text(indices)}"
        expected = expected_frequencies(layer, reading.context)
        if expected is None:
            out[name] = f"not checked (ropebook.scaling has no {g.rope_type!r} rule)"
            continue
        ours = np.asarray(g.inv_freq)
        if expected.shape != ours.shape or not np.array_equal(expected > 0, ours > 0):
            out[name] = f"differs: {len(expected)} planes expected, {len(ours)} found"
            continue
        live = expected > 0
        gap = float(np.max(np.abs(ours[live] - expected[live]) / expected[live], initial=0.0))
        out[name] = f"{'agrees' if gap < AGREE else 'differs'} (largest relative gap {gap:.1e})"
    return out


def largest_gap(reading: ConfigReading) -> float:
    """The largest relative gap between transformers' grids and :mod:`ropebook.scaling`'s over
    every checked layer of ``reading`` (0 where none was checked)."""
    gaps = [0.0]
    for layer in reading.layers:
        expected = expected_frequencies(layer, reading.context) if layer.grid.n_rotated else None
        if expected is not None and expected.shape == layer.grid.inv_freq.shape:
            live = expected > 0
            gaps.append(float(np.max(np.abs(layer.grid.inv_freq[live] / expected[live] - 1))))
    return max(gaps)


# ---------------------------------------------------------------------------------------------
# the traps


def theta_rule(entry: dict[str, Any]) -> str:
    rule = {k: v for k, v in entry.items() if k not in ("rope_type", "rope_theta", "type")}
    return f"θ {entry.get('rope_theta', 10_000):,.0f}, {describe_rule(entry.get('rope_type', 'default'), rule)}"  # fmt: skip


def find_traps(
    reading: ConfigReading, config, raw: dict[str, Any] | None, checks: dict[str, str]
) -> list[Trap]:
    """The traps of :data:`TRAPS` this config falls into or near, each with its reason."""
    traps: list[Trap] = []
    rope = [layer for layer in reading.layers if layer.grid.encoding != "NoPE"]
    seen: set[tuple] = set()
    for layer in rope:
        g, params = layer.grid, dict(layer.parameters)
        if (g.rope_type, g.layer_type, g.head_dim) in seen:
            continue
        seen.add((g.rope_type, g.layer_type, g.head_dim))
        where = f"{g.layer_type} layers" if g.layer_type else "every layer"
        factor = params.get("partial_rotary_factor")
        if g.rope_type == "proportional" and factor is None:
            traps.append(Trap("proportional-without-factor", (
                f"{where}: rope_type 'proportional' without partial_rotary_factor rotates every "
                f"plane: it is linear scaling with factor {params.get('factor', 1.0):g} "
                "(transformers only logs a warning); Gemma 4 sets 0.25")))  # fmt: skip
        if g.rope_type == "proportional" and g.n_rotated < g.n_chunks and g.pairing == "half":
            dims = " and ".join(f"[{a}, {b})" for a, b in layer.rotated_dims)
            traps.append(Trap("proportional-planes", (
                f"{where}: 'proportional' keeps the fastest {g.n_rotated} of {g.n_chunks} planes "
                f"of the full-width grid θ^(−2i/{g.head_dim}) (slowest wavelength "
                f"{tokens(layer.wavelengths[-1])} tokens); under the half pairing the dims that "
                f"rotate are {dims} of {g.head_dim}, not the first {2 * g.n_rotated}")))  # fmt: skip
        if g.rope_type != "proportional" and g.partial:
            full = hf.scaled_grid("default", g.head_dim, g.rope_theta, {}, 1).frequencies
            kept = full[g.rotary_dim // 2 - 1]
            traps.append(Trap("partial-default", (
                f"{where}: partial_rotary_factor {factor:g} on rope_type {g.rope_type!r} "
                f"squeezes the whole spectrum onto {g.rotary_dim // 2} planes, θ^(−2i/"
                f"{g.rotary_dim}) (slowest wavelength {tokens(layer.wavelengths[-1])} tokens); "
                f"'proportional' would keep the fastest {g.rotary_dim // 2} planes of "
                f"θ^(−2i/{g.head_dim}) (slowest {tokens(2 * math.pi / kept)} tokens) and leave "
                "the rest unrotated")))  # fmt: skip
    traps += _layout_traps(reading, config, raw)
    traps += _parameter_traps(reading, config, raw)
    for name, verdict in checks.items():
        if verdict.startswith("differs"):
            traps.append(Trap("scaling-mismatch", f"{name}: transformers' grid {verdict}"))
    return traps


def _layout_traps(reading: ConfigReading, config, raw: dict[str, Any] | None) -> list[Trap]:
    traps = []
    layers = reading.layers
    nope = [layer.index for layer in layers if layer.grid.encoding == "NoPE"]
    mask = getattr(config, "no_rope_layers", None)
    if mask:
        chunk = getattr(config, "attention_chunk_size", None)
        written = (raw or {}).get("no_rope_layers")
        odd = [v for v in (written or []) if v not in (0, 1)]
        reason = (
            f"no_rope_layers is a mask, 1 = RoPE, 0 = NoPE (not a list of NoPE layers): "
            f"{len(nope)} NoPE layers ({index_text(nope) if nope else 'none'})"
        )
        if odd:
            reason += f"; it holds {odd}, read as 'nonzero = RoPE', not as layer indices"
        if chunk:
            reason += f"; attention_chunk_size {chunk:,} applies to the RoPE layers only, the NoPE layers attend globally"  # fmt: skip
        chunked_nope = [x.index for x in layers if x.grid.encoding == "NoPE" and x.grid.chunk]
        if chunked_nope:
            reason += (f"; but layer_types chunk NoPE layers ({index_text(chunked_nope)}): "
                       "layer_types and no_rope_layers disagree")  # fmt: skip
        traps.append(Trap("no-rope-mask", reason))
    for layer in layers:
        if layer.span and layer.grid.rope_type in SCALED_TYPES:
            scaled = [x.index for x in layers if x.span and x.grid.rope_type in SCALED_TYPES]
            traps.append(Trap("scaled-local-layers", (
                f"{layers_text(scaled)} attend within {layer.span:,} tokens yet take the "
                f"{layer.grid.rope_type!r} context extension meant for positions past the "
                "original context, which a window never reaches (one rotary module for every "
                "layer); Gemma 3 scales its global layers only")))  # fmt: skip
            break
    kinds = {(x.span is not None, x.grid.rope_type) for x in layers if x.grid.encoding != "NoPE"}
    local_scaled = {t for local, t in kinds if local}
    global_scaled = {t for local, t in kinds if not local} & set(SCALED_TYPES)
    if global_scaled and local_scaled and not local_scaled & set(SCALED_TYPES):
        traps.append(Trap("global-only-scaling", (
            f"the {', '.join(sorted(global_scaled))} scaling applies to the global layers only; "
            "the local layers keep their grid unscaled (as Gemma 3 4B and larger: linear ×8 at "
            "θ 10⁶ globally, θ 10⁴ locally): a port applying one scaling everywhere gets one of "
            "them wrong")))  # fmt: skip
    fields = raw if raw is not None else _field_defaults(config)
    if "use_sliding_window" in fields or hasattr(config, "max_window_layers"):
        window = fields.get("sliding_window")
        on = fields.get("use_sliding_window", getattr(config, "use_sliding_window", False))
        first = getattr(config, "max_window_layers", None)
        if window and not on:
            traps.append(Trap("sliding-window-off", (
                f"sliding_window {window:,} is ignored: use_sliding_window is false, so every "
                "layer attends globally")))  # fmt: skip
        if window and on and first is not None:
            local = [x.index for x in layers if x.span]
            traps.append(Trap("window-from-max-window-layers", (
                f"use_sliding_window is true, but the window applies to layers >= "
                f"max_window_layers ({first}) only: "
                f"{layers_text(local) if local else 'no layer'} slide, the rest attend "
                "globally")))  # fmt: skip
    if reading.layers and reading.layers[0].grid.pairing == "interleaved":
        traps.append(Trap("interleaved-pairing", (
            f"{config.model_type} pairs dims (2k, 2k + 1), as Meta's and Cohere's code do, not "
            "(k, k + d/2) as most transformers families (rotate_half): a port that rotates "
            "halves turns the wrong pairs")))  # fmt: skip
    elif config.model_type not in FAMILIES:
        traps.append(Trap("pairing-assumed", (
            f"{config.model_type} is not among the families ropebook.capture reads; the half "
            "pairing (k, k + d/2) is assumed (`python -m ropebook analyse` reads it from the "
            "running model)")))  # fmt: skip
    return traps


def _parameter_traps(reading: ConfigReading, config, raw: dict[str, Any] | None) -> list[Trap]:
    traps = []
    params = preflight.rope_parameters(config)
    types = set(getattr(config, "layer_types", None) or ())
    nested = {k: v for k, v in params.items() if k in types and isinstance(v, dict)}
    if len(nested) > 1 and len({json.dumps(v, sort_keys=True) for v in nested.values()}) > 1:
        traps.append(Trap("per-layer-type-rope", (
            "rope_parameters differ per layer type (transformers 5): "
            + "; ".join(f"{k}: {theta_rule(v)}" for k, v in nested.items())
            + " — a reader of a single rope_theta gets some layers wrong")))  # fmt: skip
    if raw is not None:
        legacy = [k for k in ("rope_theta", "rope_scaling", "rope_local_base_freq") if k in raw]
        if legacy:
            read_as = "; ".join(f"{k}: {theta_rule(v)}" for k, v in nested.items()) if nested \
                else theta_rule(params)  # fmt: skip
            text = (f"config.json has transformers 4 fields ({', '.join(legacy)}); transformers "
                    f"5 moves them into rope_parameters, read here as {read_as}")  # fmt: skip
            written = raw.get("rope_parameters")
            if isinstance(written, dict) and "rope_theta" in raw and "rope_theta" in written:
                if float(written["rope_theta"]) != float(raw["rope_theta"]):
                    text += (f"; the top-level rope_theta {raw['rope_theta']:,} is ignored for "
                             f"rope_parameters' {written['rope_theta']:,}")  # fmt: skip
            traps.append(Trap("legacy-rope-fields", text))
    return traps


# ---------------------------------------------------------------------------------------------
# the command


def main(argv: list[str] | None = None) -> int:
    """``python -m ropebook layers CONFIG [--json] [--brief]``."""
    parser = argparse.ArgumentParser(
        prog="python -m ropebook layers",
        description="What a config rotates, layer by layer: scope, encoding, θ, scaling, "
        "pairing, rotated dims and every plane's frequency and wavelength, with the traps it "
        "falls into or near. No weights are read and nothing is downloaded.",
    )
    parser.add_argument("config", help="a config.json, a model folder, or a transformers model "
                        "type (its config class's defaults), e.g. gemma4_text")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print JSON (for tools)")
    parser.add_argument("--brief", action="store_true", help="no per-plane listing")
    args = parser.parse_args(argv)
    try:
        reading = read_config(args.config)
    except CheckpointError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(reading.to_json(), indent=1))
    else:
        print(reading.text(planes=not args.brief), end="")
    return 0
