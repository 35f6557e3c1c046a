"""A small decoder-only transformer in pure JAX, with every positional encoding of the book.

Pre-norm blocks ``x += attn(norm(x)); x += mlp(norm(x))``, RMSNorm, causal multi-head attention,
no learned absolute positions (position enters only through the chosen encoding, see
:mod:`ropebook.encodings`), a final RMSNorm, and an output layer **tied** to the token embedding
(as in GPT-2, the CABLE baseline: fewer parameters, and the same at every size).

The MLP is ``down(relu(up(x))²)`` (ReLU², So et al. 2021 "Primer"): two matmuls instead of a
gated MLP's three, and an activation that costs one max and one multiply, where GELU's tanh or
erf was the most expensive elementwise op of a CPU step; Primer and modded-nanoGPT found it
competitive with GELU and SwiGLU for small language models.

Attention has two paths that share projections, rotation and bias: training uses
:func:`ropebook.attention.attend`, tuned for CPU and keeping nothing; ``return_internals=True``
spells the maths out and returns every intermediate for the chapters. On CPU, float32 models
without a score bias (every rotary encoding, NoPE) attend through a fused C++ kernel where it
was measured faster (:mod:`ropebook.attention`).
With it, a fused ``qkv`` matmul and one XLA device per core (:mod:`ropebook.runtime`), a
training step of the ``cpu`` zoo model runs 1.1–1.5× as fast as the same model in PyTorch
eager with ``scaled_dot_product_attention`` on 2 CPU cores, depending on the CPU and the model
(``benchmarks/train_throughput.py``; ``benchmarks/README.md`` has the tables). Two forms below
exist only so that XLA's CPU backend moves less memory, the same values bit for bit:
:func:`linear`'s gradient and :func:`_project_qkv`'s split (1.06× a step, 2026-11-28).

Layers may differ (:class:`LayerConfig`, ``ModelConfig.layers``): each its own encoding, θ and p,
and local attention to a sliding window or within a chunk, so that production layouts such as
Gemma's five local RoPE layers to one global layer can be built (:mod:`ropebook.layouts`).

Params are a plain pytree (dicts and a list of layers), so checkpoints name tensors by their path
(``layers.0.qkv``) and chapters can read any weight directly.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ropebook import encodings, rope, runtime
from ropebook.attention import attend, check_local, visible

runtime.enable_compilation_cache()

DTYPES = ("float32", "bfloat16")
Params = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class LayerConfig:
    """How one layer departs from its model: its encoding, θ and p (``None``: the model's) and
    whether it attends locally, to a sliding ``window`` of tokens or within its ``chunk``
    (:func:`ropebook.attention.first_keys`; ``None``: globally, every earlier token)."""

    encoding: str | None = None
    rope_base: float | None = None
    proportion: float | None = None
    window: int | None = None
    chunk: int | None = None

    def __post_init__(self) -> None:
        check_local(self.window, self.chunk)
        for field in ("rope_base", "proportion"):
            if (value := getattr(self, field)) is not None:
                object.__setattr__(self, field, float(value))

    @property
    def local(self) -> bool:
        return self.window is not None or self.chunk is not None

    def to_dict(self) -> dict[str, Any]:
        """The fields set (a spec names only what a layer changes)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


class Layer(NamedTuple):
    """One layer as it runs: its validated encoding and local attention (``None``: global)."""

    encoding: encodings.EncodingConfig
    window: int | None
    chunk: int | None


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """Architecture and encoding of one model; ``head_dim=None`` means ``d_model // n_heads``.

    ``layers``, one :class:`LayerConfig` per layer, makes a per-layer pattern (Gemma's sliding
    RoPE layers between global ones, Llama 4's NoPE layers); ``None``, the default, is every
    layer global with the model's encoding. A spec without a pattern is the same dict, and so
    the same cache key, as before patterns existed (:meth:`to_dict`).
    """

    vocab_size: int
    n_layers: int
    n_heads: int
    d_model: int
    d_ff: int
    context: int
    encoding: str = "rope"
    head_dim: int | None = None
    rope_base: float = 10_000.0
    pairing: str = "half"
    proportion: float = 1.0
    dtype: str = "float32"
    layers: tuple[LayerConfig, ...] | None = None

    def __post_init__(self) -> None:
        for field in ("vocab_size", "n_layers", "n_heads", "d_model", "d_ff", "context"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"ModelConfig.{field} must be a positive integer, got {value!r}")
        if self.head_dim is None:
            if self.d_model % self.n_heads:
                raise ValueError(
                    f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}; "
                    "pass head_dim explicitly"
                )
            object.__setattr__(self, "head_dim", self.d_model // self.n_heads)
        object.__setattr__(self, "rope_base", float(self.rope_base))  # 1e4 and 10_000 hash alike
        object.__setattr__(self, "proportion", float(self.proportion))
        if self.dtype not in DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r}; valid dtypes: {', '.join(DTYPES)}")
        self.encoding_config.check_head_dim(self.head_dim)
        if self.layers is not None:
            layers = tuple(
                layer if isinstance(layer, LayerConfig) else LayerConfig(**layer)
                for layer in self.layers
            )
            if len(layers) != self.n_layers:
                raise ValueError(
                    f"ModelConfig.layers has {len(layers)} entries for n_layers={self.n_layers}"
                )
            object.__setattr__(self, "layers", layers)
            for layer in self.layer_plan:
                layer.encoding.check_head_dim(self.head_dim)

    @property
    def encoding_config(self) -> encodings.EncodingConfig:
        """The model's validated encoding (raises ``ValueError`` listing valid names): every
        layer's, except where :attr:`layers` changes it (see :attr:`layer_plan`)."""
        return encodings.EncodingConfig(
            self.encoding, base=self.rope_base, pairing=self.pairing, proportion=self.proportion
        )

    @property
    def layer_plan(self) -> tuple[Layer, ...]:
        """Every layer's encoding and local attention, the model's values filling what
        :attr:`layers` leaves ``None``."""
        if self.layers is None:
            return (Layer(self.encoding_config, None, None),) * self.n_layers
        return tuple(
            Layer(
                encodings.EncodingConfig(
                    self.encoding if layer.encoding is None else layer.encoding,
                    base=self.rope_base if layer.rope_base is None else layer.rope_base,
                    pairing=self.pairing,
                    proportion=self.proportion if layer.proportion is None else layer.proportion,
                ),
                layer.window,
                layer.chunk,
            )
            for layer in self.layers
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain fields, for specs and checkpoints; ``layers`` only where a pattern is set."""
        data = dataclasses.asdict(self)
        if self.layers is None:
            del data["layers"]  # keeps every spec hash from before patterns existed
        else:
            data["layers"] = [layer.to_dict() for layer in self.layers]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(
                f"unknown ModelConfig fields {sorted(unknown)}; valid: {sorted(known)}"
            )
        return cls(**data)


class Intervention(NamedTuple):
    """Inference-time changes to attention; each ``None``/``1.0`` field leaves the model as trained.

    - ``frequencies [D/2]``: angular frequency of every chunk, replacing the encoding's grid
      (context-extension rules such as Position Interpolation or YaRN; 0 leaves a chunk
      unrotated). Full-head rotary encodings only (``rope``, ``p-rope``, ``rope-reversed``).
    - ``logit_scale``: multiplies every attention score before the softmax (YaRN's temperature).
    - ``keep_chunks [D/2]`` or ``[H, D/2]``: 1 keeps chunk ``k`` of the rotated queries and keys,
      0 removes it (causal probes: what the model loses without its fastest or slowest pairs).
      Chunks are numbered as in :func:`ropebook.rope.chunk_indices` under the model's pairing.
    - ``means [L, 2, H, D]``: with ``keep_chunks``, a removed chunk is *mean-ablated* instead of
      zeroed: its unrotated query and key in layer ``l`` are replaced by ``means[l, 0]`` and
      ``means[l, 1]`` (their means over the positions of reference windows,
      :func:`ropebook.analysis.probes.qk_means`), then rotated as before
      (:func:`substitute_means`). The chunk keeps its average vector, so its norm and the
      relative-position pattern that vector makes as it turns; what it loses is what varies from
      token to token (content).

    A pytree (``None`` fields are empty), so it can be passed through ``jax.jit``.
    """

    frequencies: Any = None
    logit_scale: Any = 1.0
    keep_chunks: Any = None
    means: Any = None


def _chunk_keep(keep_chunks, head_dim: int, pairing: str, dtype) -> jnp.ndarray:
    """``keep_chunks [..., D/2]`` spread over the dimensions of each chunk: ``[..., D]``."""
    pairs = rope.chunk_indices(head_dim, pairing)  # [D/2, 2] dims of each chunk
    dim_to_chunk = np.argsort(pairs.T.ravel()) % len(pairs)  # chunk of every dim
    return jnp.asarray(keep_chunks, dtype)[..., dim_to_chunk]


def substitute_means(
    q: jnp.ndarray, k: jnp.ndarray, keep_chunks, means, pairing: str = "half"
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Mean-ablation before rotation: the chunks that ``keep_chunks [D/2]`` (or ``[H, D/2]``)
    removes (0) take ``means [2, H, D]`` (query, key) in place of ``q, k [B, T, H, D]``; kept
    chunks are untouched. Rotated afterwards, a substituted chunk adds to the score between
    query ``i`` and key ``j`` only ``μ_q^T R((j - i) g) μ_k``, a function of ``j - i``."""
    keep = _chunk_keep(keep_chunks, q.shape[-1], pairing, q.dtype)
    means = jnp.asarray(means, q.dtype)
    return q * keep + means[0] * (1 - keep), k * keep + means[1] * (1 - keep)


def _intervene(
    q_rot: jnp.ndarray,
    k_rot: jnp.ndarray,
    q: jnp.ndarray,
    k: jnp.ndarray,
    positions: jnp.ndarray,
    enc: encodings.EncodingConfig,
    head_dim: int,
    intervention: Intervention,
) -> tuple[jnp.ndarray, jnp.ndarray]:
    if intervention.frequencies is not None:
        if enc.rope_variant not in ("rope", "p-rope", "reversed"):
            raise ValueError(
                f"Intervention.frequencies needs a full-head rotary encoding, not {enc.name!r}"
            )
        grid = jnp.asarray(intervention.frequencies, jnp.float32)
        angles = positions[..., None].astype(jnp.float32) * grid
        q_rot, k_rot = rope.rotate(q, angles, enc.pairing), rope.rotate(k, angles, enc.pairing)
    if intervention.keep_chunks is not None and intervention.means is None:  # zeroed
        keep = _chunk_keep(intervention.keep_chunks, head_dim, enc.pairing, q_rot.dtype)
        q_rot, k_rot = q_rot * keep, k_rot * keep
    return q_rot * jnp.asarray(intervention.logit_scale, q_rot.dtype), k_rot


def init_params(key: jax.Array, config: ModelConfig) -> Params:
    """GPT-2 initialisation: N(0, 0.02), residual projections scaled by ``1/sqrt(2·n_layers)``."""
    d, h, hd = config.d_model, config.n_heads, config.head_dim
    std, out_std = 0.02, 0.02 / (2 * config.n_layers) ** 0.5
    key, embed_key = jax.random.split(key)
    layers = []
    for layer_key, spec in zip(
        jax.random.split(key, config.n_layers), config.layer_plan, strict=True
    ):
        k_qkv, k_out, k_up, k_down, k_enc = jax.random.split(layer_key, 5)
        layers.append(
            {
                "attn_norm": jnp.ones(d),
                "qkv": std * jax.random.normal(k_qkv, (d, 3 * h * hd)),
                "out": out_std * jax.random.normal(k_out, (h * hd, d)),
                "mlp_norm": jnp.ones(d),
                "up": std * jax.random.normal(k_up, (d, config.d_ff)),
                "down": out_std * jax.random.normal(k_down, (config.d_ff, d)),
                "encoding": encodings.init_params(k_enc, spec.encoding, h),
            }
        )
    return {
        "embed": std * jax.random.normal(embed_key, (config.vocab_size, d)),
        "layers": layers,
        "final_norm": jnp.ones(d),
    }


@jax.custom_vjp
def linear(x: jnp.ndarray, w: jnp.ndarray) -> jnp.ndarray:
    """``x @ w`` for ``x [..., i]`` and weights ``w [i, o]``, with JAX's own gradient, formed so
    that XLA's CPU backend transposes the narrower of ``x`` and the output's gradient ``g`` in
    memory for the weights' product ``xᵀ g``, not the wider (JAX writes it ``(gᵀ x)ᵀ``, so XLA
    copied ``g`` transposed: the ``[tokens, vocab]`` logits' gradient, the MLP's hidden one). The
    same values bit for bit (``tests/test_model.py``); ``benchmarks/README.md`` has the time saved."""
    return x @ w


def _linear_forward(x: jnp.ndarray, w: jnp.ndarray):
    return x @ w, (x, w)


def _linear_backward(saved, grad: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    x, w = saved
    if x.shape[-1] <= w.shape[-1]:
        dw = jnp.einsum("...i,...o->io", x, grad)
    else:
        dw = jnp.einsum("...o,...i->oi", grad, x).T
    return grad @ w.T, dw


linear.defvjp(_linear_forward, _linear_backward)


def rms_norm(x: jnp.ndarray, scale: jnp.ndarray, eps: float = 1e-6) -> jnp.ndarray:
    """RMSNorm, computed in float32 whatever the activation dtype."""
    x32 = x.astype(jnp.float32)
    normed = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + eps)
    return (normed * scale).astype(x.dtype)


def mlp(layer: Params, x: jnp.ndarray) -> jnp.ndarray:
    """ReLU² MLP (see the module docstring for why)."""
    hidden = jax.nn.relu(linear(x, layer["up"].astype(x.dtype)))
    return linear(hidden * hidden, layer["down"].astype(x.dtype))


def _project_qkv(layer: Params, x: jnp.ndarray, config: ModelConfig) -> tuple[jnp.ndarray, ...]:
    """One fused matmul, split into ``q, k, v`` of shape ``[B, T, H, D]``.

    Split, not indexed: the gradient of three slices is three zero-padded copies of the whole
    product summed, of a split one concatenation (the same values bit for bit;
    ``benchmarks/step_profile.py --by-line`` shows where a step's time goes)."""
    b, t, _ = x.shape
    qkv = linear(x, layer["qkv"].astype(x.dtype)).reshape(b, t, 3, config.n_heads, config.head_dim)
    return tuple(
        part.reshape(b, t, config.n_heads, config.head_dim) for part in jnp.split(qkv, 3, 2)
    )


def _attend_explicit(
    q: jnp.ndarray,
    k: jnp.ndarray,
    v: jnp.ndarray,
    bias: jnp.ndarray | None,
    *,
    window: int | None = None,
    chunk: int | None = None,
) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """The same maths spelled out, returning ``(out, scores, probs)`` for the chapters."""
    t = q.shape[1]
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32) * q.shape[-1] ** -0.5
    if bias is not None:
        scores = scores + bias[None]
    scores = jnp.where(visible(t, window, chunk), scores, -jnp.inf)
    probs = jax.nn.softmax(scores, axis=-1)
    return jnp.einsum("bhqk,bkhd->bqhd", probs.astype(v.dtype), v), scores, probs


def attention(
    layer: Params,
    x: jnp.ndarray,
    positions: jnp.ndarray,
    config: ModelConfig,
    *,
    index: int,
    return_internals: bool = False,
    intervention: Intervention | None = None,
) -> tuple[jnp.ndarray, dict[str, jnp.ndarray | None] | None]:
    """Causal self-attention of ``x [B, T, d]`` in layer ``index`` of ``config``; returns
    ``(output, internals or None)``.

    The encoding acts here and only here: it rotates ``q, k`` and/or supplies a score bias.
    An ``intervention`` changes the rotated queries and keys (``q_rot``, ``k_rot`` in internals).
    A local layer (window or chunk) masks the keys it does not see, in both paths.
    """
    enc, window, chunk = config.layer_plan[index]
    q, k, v = _project_qkv(layer, x, config)
    if intervention is not None and intervention.means is not None:  # mean-ablated chunks
        if intervention.keep_chunks is None:
            raise ValueError("Intervention.means needs keep_chunks (the chunks to mean-ablate)")
        q, k = substitute_means(
            q, k, intervention.keep_chunks, intervention.means[index], enc.pairing
        )
    q_rot, k_rot = encodings.rotate(q, positions, enc), encodings.rotate(k, positions, enc)
    if intervention is not None:
        q_rot, k_rot = _intervene(q_rot, k_rot, q, k, positions, enc, config.head_dim, intervention)
    bias = encodings.bias(
        layer["encoding"], enc, config.n_heads, positions, positions, config.context
    )
    internals = None
    if return_internals:
        out, scores, probs = _attend_explicit(q_rot, k_rot, v, bias, window=window, chunk=chunk)
        internals = {
            "q": q, "k": k, "q_rot": q_rot, "k_rot": k_rot, "v": v,
            "bias": bias, "scores": scores, "probs": probs,
        }  # fmt: skip
    else:
        out = attend(q_rot, k_rot, v, bias, window=window, chunk=chunk)
    b, t = x.shape[:2]
    return linear(out.reshape(b, t, -1), layer["out"].astype(x.dtype)), internals


def forward(
    params: Params,
    tokens: jnp.ndarray,
    config: ModelConfig,
    *,
    positions: jnp.ndarray | None = None,
    return_internals: bool = False,
    intervention: Intervention | None = None,
) -> jnp.ndarray | tuple[jnp.ndarray, list[dict[str, jnp.ndarray | None]]]:
    """Logits ``[B, T, V]`` float32 for ``tokens [B, T]`` at integer ``positions [T]``.

    ``positions`` defaults to ``arange(T)``; ``T`` may exceed ``config.context`` (extrapolation).
    With ``return_internals`` also returns one dict per layer: ``q, k`` (before rotation) and
    ``q_rot, k_rot`` (after; the same arrays for non-rotary encodings), ``v`` — all
    ``[B, T, H, D]`` — ``bias`` (``[H, T, T]`` or ``None``), ``scores`` (``[B, H, T, T]``,
    scaled by ``1/sqrt(D)``, bias added, masked entries ``-inf``) and ``probs`` (softmax of scores).
    ``intervention`` (see :class:`Intervention`) changes attention at inference.
    """
    t = tokens.shape[1]
    with rope.at_trace_time(positions):  # known positions stay known: rope.rotate's constants
        positions = jnp.arange(t) if positions is None else jnp.asarray(positions)
    dtype = jnp.dtype(config.dtype)
    x = params["embed"][tokens].astype(dtype)
    internals = []
    for index, layer in enumerate(params["layers"]):
        h, info = attention(
            layer, rms_norm(x, layer["attn_norm"]), positions, config, index=index,
            return_internals=return_internals, intervention=intervention,
        )  # fmt: skip
        x = x + h
        x = x + mlp(layer, rms_norm(x, layer["mlp_norm"]))
        internals.append(info)
    x = rms_norm(x, params["final_norm"])
    logits = linear(x, params["embed"].T.astype(dtype)).astype(jnp.float32)
    return (logits, internals) if return_internals else logits


def token_losses(
    params: Params,
    tokens: jnp.ndarray,
    config: ModelConfig,
    intervention: Intervention | None = None,
) -> jnp.ndarray:
    """Next-token cross entropy ``[B, T-1]`` (nats): position ``t`` predicts ``tokens[:, t+1]``."""
    logits = forward(params, tokens[:, :-1], config, intervention=intervention)
    targets = tokens[:, 1:]
    log_z = jax.nn.logsumexp(logits, axis=-1)
    target_logit = jnp.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
    return log_z - target_logit


def loss_fn(params: Params, tokens: jnp.ndarray, config: ModelConfig) -> jnp.ndarray:
    """Mean next-token cross entropy of ``tokens [B, T+1]`` (a window one longer than inputs)."""
    return jnp.mean(token_losses(params, tokens, config))


def n_params(params: Params) -> int:
    return sum(int(x.size) for x in jax.tree_util.tree_leaves(params))


def internal_batches(params: Params, config: ModelConfig, windows, *, batch_size: int):
    """``(tokens, internals, pairing)`` for each batch of ``windows [W, T]``: the model's
    per-layer internals (:func:`forward` with ``return_internals``, one compiled program), the
    book's counterpart of :func:`ropebook.capture.per_head_batches` for the analyses' scans."""
    windows = np.asarray(windows)
    for start in range(0, len(windows), batch_size):
        tokens = windows[start : start + batch_size]
        yield tokens, internals(params, jnp.asarray(tokens), config), config.pairing


@functools.partial(jax.jit, static_argnames="config")
def internals(params: Params, tokens: jnp.ndarray, config: ModelConfig) -> list[dict]:
    """The per-layer internals of :func:`forward` (``return_internals``) as one compiled
    program, compiled once per config and input shape (a model's snapshots and seeds share it)."""
    return forward(params, tokens, config, return_internals=True)[1]
