"""Rotary position embeddings: frequency grids, pairings and the p-RoPE family.

Shapes follow the book's convention: activations are ``[..., seq, heads, head_dim]`` and
positions are integers ``[..., seq]`` (broadcast against the leading axes).

A head of dimension ``d`` is split into ``d/2`` two-dimensional *chunks*; chunk ``k`` rotates by
``position * g_k`` with ``g_k = base ** (-2k/d)``, so chunk 0 is the fastest frequency. Which two
dimensions form chunk ``k`` is the *pairing*:

- ``half`` (Hugging Face ``rotate_half``): dims ``(k, k + d/2)``;
- ``interleaved`` (Meta's reference code): dims ``(2k, 2k + 1)``.

Variants (``variant``, with ``proportion=p``):

- ``rope``: every chunk rotates;
- ``p-rope``: keep the fastest ``floor(p·d/2)`` frequencies, the slowest chunks are not rotated
  (Gemma's ``rope_proportion``);
- ``reversed``: keep the slowest ``floor(p·d/2)`` frequencies, the fastest are not rotated;
- ``partial``: rotate only the first ``p·d`` dims, with the grid recomputed over ``p·d``
  (GPT-NeoX's ``rotary_pct``); the remaining dims pass through unchanged.
"""

from __future__ import annotations

import contextlib
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

Pairing = Literal["half", "interleaved"]
Variant = Literal["rope", "p-rope", "reversed", "partial"]
PAIRINGS: tuple[str, ...] = ("half", "interleaved")
VARIANTS: tuple[str, ...] = ("rope", "p-rope", "reversed", "partial")


def check_rope_args(
    head_dim: int, pairing: str = "half", variant: str = "rope", proportion: float = 1.0
) -> None:
    """Raise ``ValueError`` naming the bad argument and the valid choices."""
    if pairing not in PAIRINGS:
        raise ValueError(f"unknown RoPE pairing {pairing!r}; valid pairings: {', '.join(PAIRINGS)}")
    if variant not in VARIANTS:
        raise ValueError(f"unknown RoPE variant {variant!r}; valid variants: {', '.join(VARIANTS)}")
    if head_dim <= 0 or head_dim % 2:
        raise ValueError(f"head_dim must be a positive even integer, got {head_dim}")
    if not 0.0 <= proportion <= 1.0:
        raise ValueError(f"proportion must lie in [0, 1], got {proportion}")
    if variant == "partial" and int(round(proportion * head_dim)) % 2:
        raise ValueError(
            f"partial RoPE rotates proportion*head_dim = {proportion * head_dim} dims; "
            "that must be an even integer"
        )


def base_frequencies(head_dim: int, base: float = 10_000.0) -> np.ndarray:
    """``g_k = base^(-2k/d)`` for ``k = 0 .. d/2 - 1`` (fastest first), float64."""
    k = np.arange(head_dim // 2, dtype=np.float64)
    return base ** (-2.0 * k / head_dim)


def frequencies(
    head_dim: int,
    base: float = 10_000.0,
    *,
    variant: str = "rope",
    proportion: float = 1.0,
) -> np.ndarray:
    """Angular frequency of each of the ``head_dim/2`` chunks (0 = chunk not rotated).

    For ``partial`` the first ``p·d/2`` chunks of the *rotated sub-head* carry the recomputed grid
    and the rest are zero; the chunk-to-dimension map then differs from the full head (see
    :func:`apply_rope`), so use this grid for spectra, not to rotate a full head by hand.
    """
    check_rope_args(head_dim, "half", variant, proportion)
    n_chunks = head_dim // 2
    if variant == "rope":
        return base_frequencies(head_dim, base)
    if variant == "partial":
        rotated = int(round(proportion * head_dim))
        grid = np.zeros(n_chunks)
        grid[: rotated // 2] = base_frequencies(rotated, base) if rotated else []
        return grid
    kept = int(np.floor(proportion * n_chunks))
    grid = base_frequencies(head_dim, base)
    if variant == "p-rope":
        grid[kept:] = 0.0
    else:  # reversed: keep the slowest `kept` chunks
        grid[: n_chunks - kept] = 0.0
    return grid


def turns_per_context(
    head_dim: int,
    base: float,
    context: int,
    *,
    variant: str = "rope",
    proportion: float = 1.0,
) -> np.ndarray:
    """Full turns (``2π`` each) every plane makes over ``context`` tokens: ``g_k · context / 2π``.

    What a plane can do depends on this, not on ``base`` alone: a plane that turns less than
    once over the training context never sees two positions at the same angle, so it cannot
    tell "near" from "far" by phase and acts almost like an unrotated one.
    """
    return (
        frequencies(head_dim, base, variant=variant, proportion=proportion) * context / (2 * np.pi)
    )


def matched_base(head_dim: int, context: int, slowest_turns: float) -> float:
    """The base whose slowest plane turns ``slowest_turns`` times over ``context`` tokens.

    Solves ``base^(-(d-2)/d) · context / 2π = slowest_turns`` for ``base``: how a small model
    with a short context puts its spectrum where a large model's sits (e.g. Gemma 7B's slowest
    plane turns ~0.14 times over its 8k context).
    """
    if head_dim < 4 or head_dim % 2:
        raise ValueError(f"head_dim must be an even integer >= 4, got {head_dim}")
    if not (context > 0 and slowest_turns > 0):
        raise ValueError(f"context and slowest_turns must be > 0, got {context}, {slowest_turns}")
    return float((context / (2 * np.pi * slowest_turns)) ** (head_dim / (head_dim - 2)))


def rotate(x: jnp.ndarray, angles: jnp.ndarray, pairing: str) -> jnp.ndarray:
    """Rotate chunks of ``x [..., seq, heads, d]`` by ``angles [..., seq, d/2]`` (any angles:
    scaled grids such as Llama 3's build their own angles and rotate with this).

    Angles known while tracing (not a traced value: training's positions) give cosines and
    sines computed once, as the compiled program's constants; XLA's CPU backend would otherwise
    recompute both for every element of every rotation it fuses them into, backward included
    (``benchmarks/README.md`` has the time saved). The same XLA functions compute them, so the
    values are the same bit for bit (``tests/test_model.py``)."""
    return rotate_by(x, *rotation_tables(angles), pairing)


def rotation_tables(angles: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """``(cos, sin)`` of ``angles [..., seq, d/2]`` as ``[..., seq, 1, d/2]`` float32 tables for
    :func:`rotate_by`; computed now when the angles are known now (:func:`rotate`)."""
    with at_trace_time(angles):
        return jnp.cos(angles)[..., None, :], jnp.sin(angles)[..., None, :]


def rotate_by(x: jnp.ndarray, cos: jnp.ndarray, sin: jnp.ndarray, pairing: str) -> jnp.ndarray:
    """Rotate chunks of ``x [..., seq, heads, d]`` by the angles whose :func:`rotation_tables`
    are ``cos`` and ``sin`` (cast to ``x``'s dtype)."""
    cos, sin = cos.astype(x.dtype), sin.astype(x.dtype)
    if pairing == "half":
        first, second = jnp.split(x, 2, axis=-1)
        return jnp.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)
    first, second = x[..., 0::2], x[..., 1::2]
    rotated = jnp.stack([first * cos - second * sin, second * cos + first * sin], axis=-1)
    return rotated.reshape(x.shape)


def apply_rope(
    x: jnp.ndarray,
    positions: jnp.ndarray,
    *,
    base: float = 10_000.0,
    pairing: str = "half",
    variant: str = "rope",
    proportion: float = 1.0,
) -> jnp.ndarray:
    """Rotate queries or keys ``x [..., seq, heads, head_dim]`` at integer ``positions [..., seq]``.

    Angles are formed in float32 from integer positions, so the relative property
    ``<R_m q, R_n k> = <q, R_{n-m} k>`` holds to float32 rounding.
    """
    head_dim = x.shape[-1]
    check_rope_args(head_dim, pairing, variant, proportion)
    with at_trace_time(positions):
        positions = jnp.asarray(positions)
    if variant == "partial":
        rotated = int(round(proportion * head_dim))
        if rotated == 0:
            return x
        head = apply_rope(x[..., :rotated], positions, base=base, pairing=pairing)
        return jnp.concatenate([head, x[..., rotated:]], axis=-1)
    grid = frequencies(head_dim, base, variant=variant, proportion=proportion)
    with at_trace_time(positions):
        angles = positions[..., None].astype(jnp.float32) * jnp.asarray(grid, jnp.float32)
    return rotate(x, angles, pairing)


def at_trace_time(value) -> contextlib.AbstractContextManager:
    """Compute what follows now, not in the traced program, when ``value`` is known now."""
    if isinstance(value, jax.core.Tracer):
        return contextlib.nullcontext()
    return jax.ensure_compile_time_eval()


def chunk_indices(head_dim: int, pairing: str = "half") -> np.ndarray:
    """``[d/2, 2]`` array: the two dimensions that form each chunk, fastest chunk first."""
    check_rope_args(head_dim, pairing)
    k = np.arange(head_dim // 2)
    if pairing == "half":
        return np.stack([k, k + head_dim // 2], axis=-1)
    return np.stack([2 * k, 2 * k + 1], axis=-1)


def rotation_matrix(
    position: float, head_dim: int, *, base: float = 10_000.0, pairing: str = "half"
) -> np.ndarray:
    """The explicit ``d × d`` block rotation ``R^position`` (float64), for tests and figures."""
    grid = base_frequencies(head_dim, base)
    matrix = np.zeros((head_dim, head_dim))
    for (i, j), g in zip(chunk_indices(head_dim, pairing), grid, strict=True):
        c, s = np.cos(position * g), np.sin(position * g)
        matrix[i, i], matrix[i, j], matrix[j, i], matrix[j, j] = c, -s, s, c
    return matrix
