"""Measurements of the production layouts chapter (``chapters/layouts.py``): the trend of a
task score over a swept setting, per seed (the p sweep on Gemma 4's global layers), and the
share of a task's answers a local layer can reach (the ceiling of chunked attention)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ropebook import attention, tasks


def slopes(x: Sequence[float], values: np.ndarray) -> np.ndarray:
    """``[seeds]`` least-squares slope of each row of ``values`` (``[seeds, len(x)]``) against
    ``x``, over the row's finite entries; NaN for a row with fewer than two distinct ``x``."""
    x = np.asarray(x, np.float64)
    values = np.asarray(values, np.float64)
    if values.ndim != 2 or values.shape[1] != x.size:
        raise ValueError(
            f"values must be [seeds, {x.size}] for {x.size} x values, got {values.shape}"
        )
    out = np.full(values.shape[0], np.nan)
    for i, row in enumerate(values):
        keep = np.isfinite(row)
        if np.unique(x[keep]).size < 2:
            continue
        xs, ys = x[keep] - x[keep].mean(), row[keep] - row[keep].mean()
        out[i] = float(xs @ ys / (xs @ xs))
    return out


def local_reach(batch: tasks.Batch, window: int | None = None, chunk: int | None = None) -> float:
    """Share of ``batch``'s answers whose source token (``distance`` back from the answer) a
    local layer with this ``window`` or ``chunk`` lets the answer's position see
    (:func:`ropebook.attention.first_keys`): the most a model whose only route to that token is
    such a layer can answer, chance aside."""
    length = batch.tokens.shape[1]
    first = attention.first_keys(length, window, chunk)
    source = np.arange(length)[None, :] - batch.distance
    return float((source >= first[None, :])[batch.mask].mean())
