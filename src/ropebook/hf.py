"""Hugging Face Llama / Gemma checkpoints in an analysis-only JAX forward pass.

:func:`load` reads a local checkpoint folder (``config.json`` plus ``model.safetensors``, or
shards listed in ``model.safetensors.index.json``) and :func:`forward` runs it, returning the
final logits and, per layer, the queries, keys and values before and after RoPE — the arrays the
book's analyses read. It is a reading of the published architecture, not a serving stack: no KV
cache, no padding masks, float32 by default.

What it follows, field by field of ``config.json``:

- ``head_dim`` when given (Gemma 7B: 256 ≠ 3072 / 16), else ``hidden_size / num_attention_heads``;
- grouped-query attention (``num_key_value_heads``): keys and values keep their own head count in
  the internals, and each is shared by ``num_attention_heads / num_key_value_heads`` query heads;
- RoPE with ``rope_theta`` and the *half* pairing (``rotate_half``: chunk ``k`` is dims
  ``(k, k + d/2)``); scaling types ``default`` (or none), ``linear`` (all frequencies divided by
  ``factor``), ``llama3`` (Llama 3.1's wavelength-dependent rescaling), ``dynamic`` (NTK-aware
  with the scale recomputed from the sequence length), ``yarn`` (ramped interpolation and an
  attention factor) and ``longrope`` (per-chunk short/long factors and an attention factor), each
  computed by :mod:`ropebook.scaling`. As in transformers, the attention factor ``m`` multiplies
  the rotated queries and keys (``q_rot``, ``k_rot`` include it), and ``dynamic`` / ``longrope``
  pick their grid from the length ``max(positions) + 1`` of the call. Anything else is refused
  by name;
- Llama: RMSNorm ``w · x̂``, SiLU-gated MLP, untied ``lm_head`` unless ``tie_word_embeddings``;
- Gemma: RMSNorm ``(1 + w) · x̂``, embeddings scaled by ``sqrt(hidden_size)``, GELU (tanh
  approximation) gated MLP, tied output embedding.

Every check that can fail — missing or unparsable files, a config that is not a RoPE decoder
(GPT-2, say), an unsupported scaling type, truncated or corrupt safetensors, missing tensors or
wrong shapes — runs on the config and the safetensors *headers* before a single weight is read,
and raises :class:`CheckpointError` naming the file and the problem.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ropebook import rope, scaling

FAMILIES: tuple[str, ...] = ("llama", "gemma")
ROPE_TYPES: tuple[str, ...] = ("default", "linear", "llama3", "dynamic", "yarn", "longrope")
ACTIVATIONS: tuple[str, ...] = ("silu", "gelu_pytorch_tanh", "gelu_new", "gelu")
INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
_SAFETENSORS_DTYPES = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
    "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1,
}  # fmt: skip
_WHY_NOT = {
    "gpt2": "GPT-2 uses learned absolute position embeddings, not RoPE",
    "gpt_neox": "GPT-NeoX uses partial rotary embeddings and a parallel block",
    "gemma2": "Gemma 2 adds logit soft-capping, sandwich norms and sliding windows",
    "gemma3": "Gemma 3 adds QK-norm, sandwich norms and per-layer RoPE bases",
    "bert": "BERT is an encoder with learned absolute position embeddings",
}


class CheckpointError(ValueError):
    """A checkpoint folder cannot be read by :mod:`ropebook.hf`; the message says why."""


@dataclass(frozen=True)
class HFConfig:
    """What the forward pass needs from ``config.json``, validated."""

    family: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    rope_theta: float
    rope_type: str = "default"
    # the scaling type's parameters, sorted; values are floats, or tuples (LongRoPE's factors)
    rope_scaling: tuple[tuple[str, Any], ...] = ()
    rms_norm_eps: float = 1e-6
    activation: str = "silu"
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    max_position_embeddings: int = 2048

    @property
    def embed_scale(self) -> float:
        """Gemma multiplies token embeddings by ``sqrt(hidden_size)``; Llama does not."""
        return math.sqrt(self.hidden_size) if self.family == "gemma" else 1.0

    @property
    def norm_offset(self) -> float:
        """Gemma's RMSNorm scales by ``1 + w``; Llama's by ``w``."""
        return 1.0 if self.family == "gemma" else 0.0

    @property
    def pairing(self) -> str:
        return "half"

    def scaled(self, length: int | None = None) -> scaling.Scaled:
        """The RoPE grid after scaling and the attention factor ``m``, for a call whose longest
        position is ``length - 1`` (:func:`scaled_grid`)."""
        return scaled_grid(
            self.rope_type, self.head_dim, self.rope_theta, dict(self.rope_scaling),
            self.max_position_embeddings, length,
        )  # fmt: skip

    def frequencies(self, length: int | None = None) -> np.ndarray:
        """Angular frequency of each RoPE chunk after scaling, fastest first (float64)."""
        return self.scaled(length).frequencies


def scaled_grid(
    rope_type: str,
    head_dim: int,
    theta: float,
    params: dict[str, Any],
    max_position_embeddings: int,
    length: int | None = None,
) -> scaling.Scaled:
    """The grid of ``head_dim`` rotated dims at base ``theta`` after the scaling ``rope_type``
    with ``params`` (as :func:`scaling_params` fills them), and the attention factor ``m``, for a
    call whose longest position is ``length - 1``: only ``dynamic`` and ``longrope`` depend on it;
    ``None``: ``max_position_embeddings`` for dynamic, the short factors for LongRoPE, as at
    transformers' initialisation. Each rule is :mod:`ropebook.scaling`'s."""
    d, p = head_dim, params
    if rope_type == "linear":
        return scaling.position_interpolation(d, theta, p["factor"])
    if rope_type == "llama3":
        return scaling.llama3(
            d, theta, p["factor"], p["original_max_position_embeddings"],
            low_freq_factor=p["low_freq_factor"], high_freq_factor=p["high_freq_factor"],
        )  # fmt: skip
    if rope_type == "dynamic":
        n = max_position_embeddings if length is None else length
        return scaling.dynamic_ntk(d, theta, p["factor"], max_position_embeddings, n)
    if rope_type == "yarn":
        return scaling.yarn(
            d, theta, p["factor"], p["original_max_position_embeddings"],
            alpha=p["beta_slow"], beta=p["beta_fast"], attention_factor=p["attention_factor"],
        )  # fmt: skip
    if rope_type == "longrope":
        original = p["original_max_position_embeddings"]
        return scaling.longrope(
            d, theta, original, original if length is None else length,
            short_factor=p["short_factor"], long_factor=p["long_factor"], scale=p["factor"],
            attention_factor=p.get("attention_factor"),
        )  # fmt: skip
    return scaling.Scaled(rope.base_frequencies(d, theta))


def _fail(path: Path, problem: str) -> CheckpointError:
    return CheckpointError(f"{path}: {problem}")


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise _fail(path, "file not found")
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise _fail(path, f"not valid JSON ({error})") from None
    if not isinstance(data, dict):
        raise _fail(path, f"expected a JSON object, found {type(data).__name__}")
    return data


def _rope_settings(raw: dict[str, Any], where: Path) -> tuple[float, str, tuple]:
    """``(theta, type, scaling params)`` from either transformers-5 ``rope_parameters`` or the
    older ``rope_theta`` + ``rope_scaling`` fields."""
    params = dict(raw.get("rope_parameters") or raw.get("rope_scaling") or {})
    if any(isinstance(v, dict) for v in params.values()):
        raise _fail(where, "per-layer-type RoPE parameters are not supported")
    theta = float(params.pop("rope_theta", raw.get("rope_theta", 10_000.0)))
    rope_type = params.pop("rope_type", None) or params.pop("type", None) or "default"
    params.pop("type", None)
    partial_factor = params.pop("partial_rotary_factor", raw.get("partial_rotary_factor", 1.0))
    if partial_factor not in (None, 1, 1.0):
        raise _fail(where, f"partial_rotary_factor={partial_factor} is not supported (only 1.0)")
    if rope_type not in ROPE_TYPES:
        raise _fail(
            where,
            f"RoPE scaling type {rope_type!r} is not supported; supported types: "
            f"{', '.join(ROPE_TYPES)} (or no rope_scaling)",
        )
    needed = {
        "default": (),
        "linear": ("factor",),
        "llama3": ("factor", "low_freq_factor", "high_freq_factor"),
        "dynamic": ("factor",),
        "yarn": ("factor",),
        "longrope": ("short_factor", "long_factor"),
    }[rope_type]
    missing = [key for key in needed if key not in params]
    if missing:
        raise _fail(where, f"RoPE scaling {rope_type!r} needs {missing} in its parameters")
    if rope_type in ("llama3", "yarn", "longrope"):  # as transformers' standardize_rope_params
        original = raw.get("original_max_position_embeddings")
        if original is not None:
            params["original_max_position_embeddings"] = original
        params.setdefault(
            "original_max_position_embeddings", raw.get("max_position_embeddings", 8192)
        )
    settings = tuple(sorted(scaling_params(rope_type, params, raw, where).items()))
    if not theta > 0:
        raise _fail(where, f"rope_theta must be > 0, got {theta}")
    return theta, rope_type, settings


def scaling_params(
    rope_type: str, params: dict[str, Any], raw: dict[str, Any], where: Path
) -> dict[str, Any]:
    """The parameters each scaling type reads, with transformers' defaults filled in (``raw``:
    the config's top-level fields, for ``max_position_embeddings``); :func:`scaled_grid` reads
    them."""
    if rope_type == "default":
        return {}
    if rope_type in ("linear", "dynamic"):
        return {"factor": float(params["factor"])}
    if rope_type == "llama3":
        keep = ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")
        return {k: float(params[k]) for k in keep}
    original = float(params["original_max_position_embeddings"])
    factor = params.get("factor")
    if factor is None:  # transformers: the ratio of the two context lengths
        factor = raw.get("max_position_embeddings", 2048) / original
    out: dict[str, Any] = {"factor": float(factor), "original_max_position_embeddings": original}
    attention_factor = params.get("attention_factor")
    if rope_type == "longrope":
        for key in ("short_factor", "long_factor"):
            out[key] = tuple(float(v) for v in params[key])
        out["attention_factor"] = None if attention_factor is None else float(attention_factor)
        return out
    if params.get("truncate", True) is not True:
        raise _fail(where, "YaRN with truncate=false is not supported (only the default, true)")
    mscale, mscale_all_dim = params.get("mscale"), params.get("mscale_all_dim")
    if attention_factor is None and mscale and mscale_all_dim:

        def get_mscale(scale: float, m: float) -> float:
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

        attention_factor = get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)
    out["attention_factor"] = None if attention_factor is None else float(attention_factor)
    out["beta_fast"] = float(params.get("beta_fast") or 32)
    out["beta_slow"] = float(params.get("beta_slow") or 1)
    return out


def read_config(path: Path | str) -> HFConfig:
    """Validate ``path/config.json`` as a Llama- or Gemma-style RoPE decoder."""
    path = Path(path)
    if not path.is_dir():
        raise _fail(path, "checkpoint folder not found (expected config.json + *.safetensors)")
    where = path / "config.json"
    raw = _read_json(where)
    model_type = raw.get("model_type")
    if model_type not in FAMILIES:
        reason = _WHY_NOT.get(str(model_type), "")
        has_rope = any(k in raw for k in ("rope_theta", "rope_parameters", "rope_scaling"))
        if not reason and not has_rope:
            reason = "the config has no rotary embedding (no rope_theta / rope_parameters)"
        raise _fail(
            where,
            f"model_type {model_type!r} is not a supported RoPE decoder"
            + (f" ({reason})" if reason else "")
            + f"; ropebook.hf (the JAX reader) reads model_type "
            f"{' or '.join(map(repr, FAMILIES))}"
            + (
                ""
                if not has_rope
                else "; `python -m ropebook analyse` reads any transformers "
                "RoPE decoder (ropebook.capture)"
            ),
        )
    if raw.get("use_bidirectional_attention"):
        raise _fail(where, "bidirectional attention is not supported (causal decoders only)")

    def integer(name: str, default: int | None = None) -> int:
        value = raw.get(name, default)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise _fail(where, f"{name} must be a positive integer, got {value!r}")
        return value

    hidden, n_heads = integer("hidden_size"), integer("num_attention_heads")
    n_kv = integer("num_key_value_heads", n_heads)
    if raw.get("head_dim") is None and hidden % n_heads:
        raise _fail(where, f"hidden_size {hidden} is not divisible by {n_heads} heads")
    head_dim = integer("head_dim", hidden // n_heads)
    if head_dim % 2:
        raise _fail(where, f"head_dim must be even for RoPE, got {head_dim}")
    if n_heads % n_kv:
        raise _fail(where, f"num_attention_heads {n_heads} is not a multiple of {n_kv} KV heads")
    theta, rope_type, scaling = _rope_settings(raw, where)
    if model_type == "gemma":
        activation = raw.get("hidden_activation") or raw.get("hidden_act") or "gelu_pytorch_tanh"
        activation = "gelu_pytorch_tanh" if activation == "gelu" else activation  # as HF does
    else:
        activation = raw.get("hidden_act", "silu")
    if activation not in ACTIVATIONS:
        raise _fail(where, f"activation {activation!r} is not supported; supported: {ACTIVATIONS}")
    return HFConfig(
        family=model_type,
        vocab_size=integer("vocab_size"),
        hidden_size=hidden,
        intermediate_size=integer("intermediate_size"),
        n_layers=integer("num_hidden_layers"),
        n_heads=n_heads,
        n_kv_heads=n_kv,
        head_dim=head_dim,
        rope_theta=theta,
        rope_type=rope_type,
        rope_scaling=scaling,
        rms_norm_eps=float(raw.get("rms_norm_eps", 1e-6)),
        activation=activation,
        tie_word_embeddings=bool(raw.get("tie_word_embeddings", model_type == "gemma")),
        attention_bias=bool(raw.get("attention_bias", False)),
        mlp_bias=bool(raw.get("mlp_bias", False)),
        max_position_embeddings=int(raw.get("max_position_embeddings", 2048)),
    )


# ---------------------------------------------------------------------------------------------
# safetensors headers: checked before any weight is read


def safetensors_header(path: Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    """``name -> (dtype, shape)`` from a safetensors file's header, checking that the file is
    complete: the header parses and every tensor's byte range lies inside the file."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise _fail(path, "weights file not found") from None
    with open(path, "rb") as handle:
        prefix = handle.read(8)
        if len(prefix) < 8:
            raise _fail(path, f"corrupt safetensors file: only {size} bytes, no header")
        (header_len,) = struct.unpack("<Q", prefix)
        if header_len > size - 8:
            raise _fail(
                path,
                f"corrupt safetensors file: header claims {header_len} bytes but the file has "
                f"{size} (truncated or not a safetensors file)",
            )
        try:
            header = json.loads(handle.read(header_len))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise _fail(path, f"corrupt safetensors file: header is not JSON ({error})") from None
    if not isinstance(header, dict):
        raise _fail(path, "corrupt safetensors file: header is not a JSON object")
    data_size = size - 8 - header_len
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (start, end) = info["dtype"], tuple(info["shape"]), info["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise _fail(path, f"corrupt safetensors file: bad entry for {name!r}") from None
        expected = math.prod(shape) * _SAFETENSORS_DTYPES.get(dtype, 0)
        if dtype not in _SAFETENSORS_DTYPES:
            raise _fail(path, f"tensor {name!r} has unsupported dtype {dtype!r}")
        if not 0 <= start <= end <= data_size or end - start != expected:
            raise _fail(
                path,
                f"corrupt safetensors file: tensor {name!r} needs bytes {start}..{end} "
                f"({expected} expected) of a {data_size}-byte data section (truncated?)",
            )
        tensors[name] = (dtype, shape)
    return tensors


def weight_files(path: Path | str) -> dict[str, Path]:
    """``tensor name -> file`` for a single-file or sharded safetensors checkpoint."""
    path = Path(path)
    index = path / INDEX_FILE
    if index.exists():
        weight_map = _read_json(index).get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise _fail(index, "no weight_map in the shard index")
        files = {name: path / file for name, file in weight_map.items()}
        missing = sorted({str(f.name) for f in files.values() if not f.is_file()})
        if missing:
            raise _fail(index, f"shards listed in the index are missing: {missing}")
    else:
        shards = [path / SINGLE_FILE] if (path / SINGLE_FILE).exists() else []
        shards = shards or sorted(path.glob("*.safetensors"))
        if not shards:
            other = sorted(p.name for p in path.glob("*.bin")) + sorted(
                p.name for p in path.glob("*.pt*")
            )
            hint = f" (found {other}: re-save with safe_serialization=True)" if other else ""
            raise _fail(path, f"no {SINGLE_FILE}, {INDEX_FILE} or *.safetensors weights{hint}")
        files = {}
        for shard in shards:
            files.update(dict.fromkeys(safetensors_header(shard), shard))
    return files


def expected_shapes(config: HFConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor the forward pass reads, by Hugging Face name (without ``model.``)."""
    d, hd, f = config.hidden_size, config.head_dim, config.intermediate_size
    shapes = {"embed_tokens.weight": (config.vocab_size, d), "norm.weight": (d,)}
    if not config.tie_word_embeddings:
        shapes["lm_head.weight"] = (config.vocab_size, d)
    for i in range(config.n_layers):
        p = f"layers.{i}."
        out = {"q": config.n_heads * hd, "k": config.n_kv_heads * hd, "v": config.n_kv_heads * hd}
        for name, rows in out.items():
            shapes[f"{p}self_attn.{name}_proj.weight"] = (rows, d)
            if config.attention_bias:
                shapes[f"{p}self_attn.{name}_proj.bias"] = (rows,)
        shapes[f"{p}self_attn.o_proj.weight"] = (d, config.n_heads * hd)
        if config.attention_bias:
            shapes[f"{p}self_attn.o_proj.bias"] = (d,)
        for name, shape in (("gate", (f, d)), ("up", (f, d)), ("down", (d, f))):
            shapes[f"{p}mlp.{name}_proj.weight"] = shape
            if config.mlp_bias:
                shapes[f"{p}mlp.{name}_proj.bias"] = (shape[0],)
        shapes[f"{p}input_layernorm.weight"] = (d,)
        shapes[f"{p}post_attention_layernorm.weight"] = (d,)
    return shapes


def _resolve_names(
    config: HFConfig, files: dict[str, Path], path: Path
) -> dict[str, tuple[str, Path]]:
    """Map each expected name to ``(stored name, file)``, accepting a ``model.`` prefix."""
    resolved, missing = {}, []
    for name in expected_shapes(config):
        candidates = [name] if name == "lm_head.weight" else [f"model.{name}", name]
        stored = next((c for c in candidates if c in files), None)
        if stored is None:
            missing.append(candidates[0])
        else:
            resolved[name] = (stored, files[stored])
    if missing:
        shown = ", ".join(missing[:5]) + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        )
        raise _fail(path, f"checkpoint lacks tensors the {config.family} config needs: {shown}")
    return resolved


# ---------------------------------------------------------------------------------------------
# loading


@dataclass
class HFModel:
    """A loaded checkpoint: its config, weights as a pytree of JAX arrays, and where it came from."""

    config: HFConfig
    params: dict[str, Any]
    path: Path
    dtype: str = "float32"
    tensors: int = field(default=0)

    @property
    def n_params(self) -> int:
        return sum(int(x.size) for x in jax.tree_util.tree_leaves(self.params))


def check(path: Path | str) -> tuple[HFConfig, dict[str, tuple[str, Path]]]:
    """Every check :func:`load` makes before reading weights; returns the config and tensor map."""
    path = Path(path)
    config = read_config(path)
    files = weight_files(path)
    resolved = _resolve_names(config, files, path)
    headers: dict[Path, dict[str, tuple[str, tuple[int, ...]]]] = {}
    for name, shape in expected_shapes(config).items():
        stored, file = resolved[name]
        if file not in headers:
            headers[file] = safetensors_header(file)
        if stored not in headers[file]:
            raise _fail(file, f"tensor {stored!r} is listed in the index but not in this shard")
        found = headers[file][stored][1]
        if found != shape:
            raise _fail(file, f"tensor {stored!r} has shape {found}, the config implies {shape}")
    return config, resolved


def load(path: Path | str, *, dtype: str = "float32") -> HFModel:
    """Validate and load a Llama/Gemma checkpoint folder (see the module docstring).

    ``dtype`` is the dtype weights are kept in (``float32`` or ``bfloat16``); norms, softmax and
    RoPE angles are always computed in float32.
    """
    from safetensors import safe_open

    if dtype not in ("float32", "bfloat16"):
        raise ValueError(f"dtype must be 'float32' or 'bfloat16', got {dtype!r}")
    path = Path(path)
    config, resolved = check(path)
    by_file: dict[Path, list[str]] = {}
    for name, (_, file) in resolved.items():
        by_file.setdefault(file, []).append(name)
    tensors: dict[str, jnp.ndarray] = {}
    for file, names in by_file.items():
        with safe_open(str(file), framework="flax") as handle:
            for name in names:
                tensors[name] = jnp.asarray(handle.get_tensor(resolved[name][0]), dtype=dtype)
    return HFModel(config, _arrange(config, tensors), path, dtype, len(tensors))


def _arrange(config: HFConfig, t: dict[str, jnp.ndarray]) -> dict[str, Any]:
    """Hugging Face names → the pytree :func:`forward` reads (matrices as ``x @ W``)."""

    def linear(prefix: str, bias: bool) -> dict[str, jnp.ndarray]:
        out = {"w": t[f"{prefix}.weight"].T}
        if bias:
            out["b"] = t[f"{prefix}.bias"]
        return out

    layers = []
    for i in range(config.n_layers):
        p = f"layers.{i}."
        layers.append(
            {
                "attn_norm": t[f"{p}input_layernorm.weight"],
                **{
                    n: linear(f"{p}self_attn.{n}_proj", config.attention_bias)
                    for n in ("q", "k", "v", "o")
                },
                "mlp_norm": t[f"{p}post_attention_layernorm.weight"],
                **{n: linear(f"{p}mlp.{n}_proj", config.mlp_bias) for n in ("gate", "up", "down")},
            }
        )
    lm_head = t["embed_tokens.weight"] if config.tie_word_embeddings else t["lm_head.weight"]
    return {
        "embed": t["embed_tokens.weight"],
        "layers": layers,
        "final_norm": t["norm.weight"],
        "lm_head": lm_head,
    }


# ---------------------------------------------------------------------------------------------
# forward pass


def _rms_norm(x: jnp.ndarray, weight: jnp.ndarray, eps: float, offset: float) -> jnp.ndarray:
    x32 = x.astype(jnp.float32)
    normed = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + eps)
    return (normed * (offset + weight.astype(jnp.float32))).astype(x.dtype)


def _apply(linear: dict[str, jnp.ndarray], x: jnp.ndarray) -> jnp.ndarray:
    y = x @ linear["w"].astype(x.dtype)
    return y + linear["b"].astype(x.dtype) if "b" in linear else y


def _activation(name: str, x: jnp.ndarray) -> jnp.ndarray:
    if name == "silu":
        return jax.nn.silu(x)
    return jax.nn.gelu(x, approximate=name != "gelu")


def rotation_tables(
    positions: jnp.ndarray, frequencies: np.ndarray
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """``rope.rotation_tables`` at ``positions [T]`` for ``frequencies`` (one per chunk, e.g. a
    scaled grid), angles formed in float32 as transformers does. :func:`forward` makes them once
    per call, outside the jitted layer: inside it, XLA's CPU backend would recompute the cosines
    and sines for every element of every rotation they fuse into."""
    angles = positions.astype(jnp.float32)[:, None] * jnp.asarray(frequencies, jnp.float32)
    return rope.rotation_tables(angles)


@partial(jax.jit, static_argnames=("config", "with_probs"))
def _layer(layer, x, cos, sin, factor, config: HFConfig, with_probs: bool):
    b, t, _ = x.shape
    h = _rms_norm(x, layer["attn_norm"], config.rms_norm_eps, config.norm_offset)
    q = _apply(layer["q"], h).reshape(b, t, config.n_heads, config.head_dim)
    k = _apply(layer["k"], h).reshape(b, t, config.n_kv_heads, config.head_dim)
    v = _apply(layer["v"], h).reshape(b, t, config.n_kv_heads, config.head_dim)
    q_rot, k_rot = rope.rotate_by(q, cos, sin, "half"), rope.rotate_by(k, cos, sin, "half")
    q_rot, k_rot = q_rot * factor.astype(q_rot.dtype), k_rot * factor.astype(k_rot.dtype)
    group = config.n_heads // config.n_kv_heads
    k_all, v_all = jnp.repeat(k_rot, group, axis=2), jnp.repeat(v, group, axis=2)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q_rot, k_all).astype(jnp.float32)
    scores = scores * config.head_dim**-0.5
    scores = jnp.where(jnp.tril(jnp.ones((t, t), dtype=bool)), scores, -jnp.inf)
    probs = jax.nn.softmax(scores, axis=-1)
    attended = jnp.einsum("bhqk,bkhd->bqhd", probs.astype(v.dtype), v_all).reshape(b, t, -1)
    x = x + _apply(layer["o"], attended)
    h = _rms_norm(x, layer["mlp_norm"], config.rms_norm_eps, config.norm_offset)
    gated = _activation(config.activation, _apply(layer["gate"], h)) * _apply(layer["up"], h)
    x = x + _apply(layer["down"], gated)
    internals = {"q": q, "k": k, "q_rot": q_rot, "k_rot": k_rot, "v": v}
    if with_probs:
        internals["probs"] = probs
    return x, internals


def forward(
    model: HFModel,
    tokens: jnp.ndarray | np.ndarray,
    *,
    positions: jnp.ndarray | np.ndarray | None = None,
    return_internals: bool = False,
    return_probs: bool = False,
) -> jnp.ndarray | tuple[jnp.ndarray, list[dict[str, jnp.ndarray]]]:
    """Logits ``[B, T, V]`` (float32) for ``tokens [B, T]``, causal, no padding.

    With ``return_internals`` also one dict per layer: ``q``, ``q_rot`` ``[B, T, H, D]``;
    ``k``, ``k_rot``, ``v`` ``[B, T, H_kv, D]`` (``_rot`` = after RoPE); with ``return_probs``
    also ``probs [B, H, T, T]`` (attention weights, float32).
    """
    config = model.config
    tokens = jnp.asarray(tokens)
    if tokens.ndim != 2:
        raise ValueError(f"tokens must be [batch, seq], got shape {tokens.shape}")
    t = tokens.shape[1]
    positions = jnp.arange(t) if positions is None else jnp.asarray(positions)
    length = int(np.max(np.asarray(positions))) + 1  # what transformers' dynamic rules read
    scaled = config.scaled(length)
    cos, sin = rotation_tables(positions, scaled.frequencies)
    factor = jnp.asarray(scaled.attention_factor, jnp.float32)
    dtype = jnp.dtype(model.dtype)
    x = model.params["embed"][tokens].astype(dtype)
    if config.embed_scale != 1.0:
        x = x * jnp.asarray(config.embed_scale, dtype=dtype)
    internals = []
    for layer in model.params["layers"]:
        x, info = _layer(layer, x, cos, sin, factor, config, return_probs)
        internals.append(info)
    x = _rms_norm(x, model.params["final_norm"], config.rms_norm_eps, config.norm_offset)
    logits = (x @ model.params["lm_head"].T.astype(dtype)).astype(jnp.float32)
    return (logits, internals) if return_internals else logits


def tokenize(path: Path | str, texts: list[str], *, max_tokens: int | None = None) -> list:
    """Token ids (with the checkpoint's own BOS) of each text, via the folder's tokenizer files."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    ids = [np.asarray(tokenizer(text, add_special_tokens=True)["input_ids"]) for text in texts]
    return [i[:max_tokens] if max_tokens else i for i in ids]


# ---------------------------------------------------------------------------------------------
# checking the loader against transformers (CPU torch, no network)


def tiny_random_checkpoint(path: Path | str, family: str, *, seed: int = 0) -> Path:
    """Save a tiny random ``family`` model with transformers (hidden 64, 2 layers, 4 query heads
    sharing 2 KV heads; Gemma with ``head_dim = 32 ≠ 64/4``). Every weight, norms included, is
    random, so a wrong norm offset or a missing embedding scale cannot hide."""
    import torch
    import transformers

    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    common = dict(
        vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        attn_implementation="eager",
    )  # fmt: skip
    torch.manual_seed(seed)
    if family == "llama":
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**common))
    else:
        model = transformers.GemmaForCausalLM(transformers.GemmaConfig(**common, head_dim=32))
    with torch.no_grad():
        for name, param in model.named_parameters():
            centre = 1.0 if "norm" in name and family == "llama" else 0.0
            spread = 0.3 if "norm" in name else 0.08
            param.copy_(centre + spread * torch.randn_like(param))
    transformers.utils.logging.disable_progress_bar()
    try:
        model.save_pretrained(Path(path), safe_serialization=True)
    finally:
        transformers.utils.logging.enable_progress_bar()
    return Path(path)


def compare_with_transformers(path: Path | str, tokens: np.ndarray) -> dict[str, float]:
    """Largest absolute difference between :func:`forward` and transformers' eager float32
    forward on ``tokens [B, T]``: logits, and per-layer queries/keys before and after RoPE
    (theirs read with hooks on ``q_proj``/``k_proj`` and their ``apply_rotary_pos_emb``)."""
    import torch
    import transformers
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    transformers.utils.logging.disable_progress_bar()
    try:
        reference = transformers.AutoModelForCausalLM.from_pretrained(
            str(path), dtype=torch.float32, attn_implementation="eager", local_files_only=True
        ).eval()
    finally:
        transformers.utils.logging.enable_progress_bar()
    captured: dict[tuple[int, str], torch.Tensor] = {}
    hooks = []
    for i, layer in enumerate(reference.model.layers):
        for name in ("q", "k"):
            hooks.append(
                getattr(layer.self_attn, f"{name}_proj").register_forward_hook(
                    lambda _m, _a, out, key=(i, name): captured.__setitem__(key, out.detach())
                )
            )
    ids = torch.tensor(np.asarray(tokens))
    with torch.no_grad():
        logits = reference(ids).logits.numpy()
        cos, sin = reference.model.rotary_emb(torch.zeros(1), torch.arange(ids.shape[1])[None])
    for hook in hooks:
        hook.remove()
    ours = load(path)
    our_logits, internals = forward(ours, np.asarray(tokens), return_internals=True)
    diffs = {"logits": float(np.abs(np.asarray(our_logits) - logits).max())}
    for key in ("q", "k", "q_rot", "k_rot"):
        diffs[key] = 0.0
    for i, layer in enumerate(internals):
        q, k = (captured[(i, n)].view(*ids.shape, -1, ours.config.head_dim) for n in "qk")
        q_rot, k_rot = apply_rotary_pos_emb(q.transpose(1, 2), k.transpose(1, 2), cos, sin)
        theirs = {"q": q, "k": k, "q_rot": q_rot.transpose(1, 2), "k_rot": k_rot.transpose(1, 2)}
        for key, value in theirs.items():
            gap = float(np.abs(np.asarray(layer[key]) - value.numpy()).max())
            diffs[key] = max(diffs[key], gap)
    return diffs
