"""Measurements on queries, keys and attention, one submodule per idea: numbers only.

Arrays and dataclasses in; arrays, dataclasses, numbers and verdict words out. The charts,
tables and sentences that show these results are one layer up, in :mod:`ropebook.present`
(same module names); nothing here imports it, :mod:`ropebook.plots` or Altair
(``tests/test_layers.py``). A package ``analysis/<idea>/`` is split by concern and re-exports its
public names, so ``from ropebook.analysis import <idea>`` reaches all of them.

- ``frequencies`` — chunk norms of queries and keys, band shares, checkpoint readings;
- ``decay`` — activation against distance: closed forms, Prop. 3.1/3.2 checks, Random RoPE;
- ``heads`` — positional-head detectors, graded scores, constructions;
- ``semantic`` — semantic channels: Lemma A.2/Thm 6.1 numerics, trained-model scans, readings;
- ``ablation`` — trained ablations over seeds: paired comparisons, Table 1 by construction;
- ``biases`` — additive-bias encodings (ALiBi, Kerple, FIRE) as matrices; length extrapolation;
- ``scaling`` — context-extension methods applied to trained models: sweeps, fine-tunes, probes;
- ``recall`` — recall at a distance on models trained for retrieval;
- ``layouts`` — production layouts of local and global layers: a task score's trend over a sweep;
- the shared method: ``dynamics`` (a statistic along training snapshots, with a trend verdict),
  ``probes`` (removing RoPE planes at inference), ``regime`` (the RoPE settings compared by turns
  per context). What a run can resolve (power) and how its noise splits are statistics one floor
  down, in :mod:`ropebook.stats`, where the seed plan can use them too.

Shared primitives live here: :func:`chunk_norms`, :func:`mean_interval`, :func:`interval_text`.
"""

from __future__ import annotations

from typing import NamedTuple

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


class Estimate(NamedTuple):
    """A mean, its 95% interval, how to print it (``text``) and the samples behind it (``n``)."""

    mean: float
    low: float
    high: float
    text: str
    n: int = 0

    @property
    def bounds(self) -> tuple[float, float]:
        return self.low, self.high


def interval_text(values, digits: int = 2, unit: str = "seeds") -> Estimate:
    """Mean and 95% t-interval of the finite ``values`` (a single sample has no interval)."""
    values = np.asarray(values, np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), "no samples")
    mean, low, high = mean_interval(values)
    if values.size < 2:
        return Estimate(mean, low, high, f"1 sample: {mean:.{digits}f}, no interval", 1)
    text = f"95% CI [{low:.{digits}f}, {high:.{digits}f}] over {values.size} {unit}"
    return Estimate(mean, low, high, text, int(values.size))
