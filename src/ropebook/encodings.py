"""Positional encodings by name: how each one changes the attention scores.

An encoding acts on attention in (at most) two ways, and this module says which for every name:

- it **rotates** queries and keys before the dot product (the RoPE family, via
  :func:`ropebook.rope.apply_rope`, so there is one implementation of rotation in the book);
- it **adds a bias** ``[heads, T_q, T_k]`` to the scores, computed from integer positions
  (ALiBi, Kerple, FIRE). ALiBi and Kerple depend on ``i - j`` only (Toeplitz); FIRE also on ``i``.

``nope`` does neither: with a causal mask a decoder can still infer position (Haviv et al. 2022).

Learned biases keep their parameters per layer in the model's params pytree under
``layers[l]["encoding"]``; :func:`init_params` builds them and :func:`bias` reads them.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ropebook import rope

# name -> variant passed to rope.apply_rope (None: no rotation)
_ROTATION: dict[str, str | None] = {
    "nope": None,
    "rope": "rope",
    "p-rope": "p-rope",
    "rope-partial": "partial",
    "rope-reversed": "reversed",
    "alibi": None,
    "kerple": None,
    "fire": None,
}
ENCODINGS: tuple[str, ...] = tuple(_ROTATION)
BIASED: tuple[str, ...] = ("alibi", "kerple", "fire")
FIRE_HIDDEN = 32  # width of FIRE's per-layer MLP (Li et al. 2024)
FIRE_INIT_C = 0.1  # initial c in psi(x) = log(c x + 1), as in the FIRE reference code


@dataclass(frozen=True)
class EncodingConfig:
    """A validated encoding: ``name`` plus the RoPE hyper-parameters it uses.

    ``base``, ``pairing`` and ``proportion`` are ignored by encodings that do not rotate, but are
    still checked so a typo never passes silently.
    """

    name: str
    base: float = 10_000.0
    pairing: str = "half"
    proportion: float = 1.0

    def __post_init__(self) -> None:
        if self.name not in _ROTATION:
            raise ValueError(
                f"unknown positional encoding {self.name!r}; valid encodings: {', '.join(ENCODINGS)}"
            )
        if not self.base > 0:
            raise ValueError(f"RoPE base must be > 0, got {self.base}")
        if self.pairing not in rope.PAIRINGS:
            raise ValueError(
                f"unknown RoPE pairing {self.pairing!r}; valid pairings: {', '.join(rope.PAIRINGS)}"
            )
        if not 0.0 <= self.proportion <= 1.0:
            raise ValueError(f"proportion p must lie in [0, 1], got {self.proportion}")

    @property
    def rope_variant(self) -> str | None:
        """The ``apply_rope`` variant, or ``None`` when queries and keys are not rotated."""
        return _ROTATION[self.name]

    @property
    def rotates(self) -> bool:
        return self.rope_variant is not None

    @property
    def has_bias(self) -> bool:
        return self.name in BIASED

    def check_head_dim(self, head_dim: int) -> None:
        """Raise ``ValueError`` if this encoding cannot rotate a head of ``head_dim``."""
        if self.rotates:
            rope.check_rope_args(head_dim, self.pairing, self.rope_variant, self.proportion)


def rotate(x: jnp.ndarray, positions: jnp.ndarray, enc: EncodingConfig) -> jnp.ndarray:
    """Rotate ``x [B, T, H, D]`` at ``positions [T]`` if the encoding rotates; else return ``x``."""
    if not enc.rotates:
        return x
    return rope.apply_rope(
        x,
        positions,
        base=enc.base,
        pairing=enc.pairing,
        variant=enc.rope_variant,
        proportion=enc.proportion,
    )


def alibi_slopes(n_heads: int) -> np.ndarray:
    """ALiBi slopes ``m_h = 2^(-8h/H)`` for ``h = 1..H`` (Press et al. 2022), float64."""
    if n_heads <= 0:
        raise ValueError(f"n_heads must be positive, got {n_heads}")
    h = np.arange(1, n_heads + 1, dtype=np.float64)
    return 2.0 ** (-8.0 * h / n_heads)


def _inverse_softplus(y: jnp.ndarray | float) -> jnp.ndarray:
    """The raw value whose softplus is ``y`` (float32)."""
    return jnp.log(jnp.expm1(jnp.asarray(y, jnp.float32)))


def init_params(key: jax.Array, enc: EncodingConfig, n_heads: int) -> dict:
    """One layer's encoding parameters (``{}`` for encodings without learned parts).

    Positive quantities are stored before a softplus so that gradient steps keep them positive.
    Kerple's ``r1, r2`` start uniform in the ranges of the reference code; FIRE starts with
    ``c = 0.1`` and a learned multiplier of 1 on the threshold ``L = multiplier · context``.
    """
    if enc.name == "kerple":
        k1, k2 = jax.random.split(key)
        r1 = jax.random.uniform(k1, (n_heads,), minval=0.1, maxval=2.0)
        r2 = jax.random.uniform(k2, (n_heads,), minval=0.1, maxval=1.0)
        return {"r1": _inverse_softplus(r1), "r2": _inverse_softplus(r2)}
    if enc.name == "fire":
        k1, k2 = jax.random.split(key)
        w1 = jax.random.normal(k1, (1, FIRE_HIDDEN))
        w2 = jax.random.normal(k2, (FIRE_HIDDEN, n_heads)) * FIRE_HIDDEN**-0.5
        return {
            "w1": w1,
            "b1": jnp.zeros(FIRE_HIDDEN),
            "w2": w2,
            "b2": jnp.zeros(n_heads),
            "c": _inverse_softplus(FIRE_INIT_C),
            "L": _inverse_softplus(1.0),
        }
    return {}


def bias(
    params: dict,
    enc: EncodingConfig,
    n_heads: int,
    q_positions: jnp.ndarray,
    k_positions: jnp.ndarray,
    context: int,
) -> jnp.ndarray | None:
    """Additive score bias ``[H, T_q, T_k]`` float32 from integer positions, or ``None``.

    ``context`` (the training length) only matters to FIRE, whose threshold ``L`` starts there.

    Distances are ``i - j`` clipped at 0: causal attention never reads ``j > i``, and the clip
    keeps masked entries finite so the mask alone decides them.
    """
    if not enc.has_bias:
        return None
    qi = jnp.asarray(q_positions).astype(jnp.float32)[:, None]
    dist = jnp.maximum(qi - jnp.asarray(k_positions).astype(jnp.float32)[None, :], 0.0)
    if enc.name == "alibi":
        slopes = jnp.asarray(alibi_slopes(n_heads), jnp.float32)
        return -slopes[:, None, None] * dist
    if enc.name == "kerple":
        r1 = jax.nn.softplus(params["r1"])[:, None, None]
        r2 = jax.nn.softplus(params["r2"])[:, None, None]
        return -r1 * jnp.log1p(r2 * dist)
    return _fire_bias(params, qi, dist, context)


def _fire_bias(params: dict, qi: jnp.ndarray, dist: jnp.ndarray, context: int) -> jnp.ndarray:
    """FIRE: ``f_θ(ψ(i-j) / ψ(max(L, i)))`` with ``ψ(x) = log(c x + 1)`` (Li et al. 2024)."""
    c = jax.nn.softplus(params["c"])
    threshold = jax.nn.softplus(params["L"]) * context
    normaliser = jnp.log1p(c * jnp.maximum(threshold, qi))  # [T_q, 1]
    x = jnp.log1p(c * dist) / normaliser  # [T_q, T_k] in [0, 1], as i - j <= max(L, i)
    hidden = jax.nn.relu(x[..., None] * params["w1"][0] + params["b1"])
    out = hidden @ params["w2"] + params["b2"]  # [T_q, T_k, H]
    return jnp.moveaxis(out, -1, 0)
