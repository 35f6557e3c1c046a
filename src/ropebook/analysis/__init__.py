"""Measurements on queries, keys and attention, one submodule per idea.

``analysis.frequencies`` (chunk norms), ``analysis.decay`` (activation vs distance),
``analysis.heads`` (positional-head detectors), ``analysis.semantic`` (semantic channels),
``analysis.biases`` (additive-bias encodings). Shared primitives live here.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ropebook import rope


def chunk_norms(x: np.ndarray | jnp.ndarray, pairing: str = "half") -> np.ndarray:
    """2-norm of every 2-D RoPE chunk: ``[..., head_dim] -> [..., head_dim/2]``, fastest first.

    Chunk ``k`` is the pair of dimensions that rotates at frequency ``g_k`` under ``pairing``
    (``half``: ``(k, k+d/2)``; ``interleaved``: ``(2k, 2k+1)``).
    """
    x = np.asarray(x, dtype=np.float64)
    pairs = rope.chunk_indices(x.shape[-1], pairing)
    return np.sqrt(x[..., pairs[:, 0]] ** 2 + x[..., pairs[:, 1]] ** 2)


def mean_interval(samples, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and a Student-t interval over independent samples (e.g. seeds): ``(mean, low, high)``.

    With one sample the interval is the point itself (reported as such, never as certainty).
    """
    from scipy import stats

    values = np.asarray(samples, dtype=np.float64).ravel()
    mean = float(values.mean())
    if values.size < 2:
        return mean, mean, mean
    half = float(stats.t.ppf(0.5 + confidence / 2, values.size - 1) * stats.sem(values))
    return mean, mean - half, mean + half
