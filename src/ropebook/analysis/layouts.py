"""Measurements of the production layouts chapter (``chapters/layouts.py``): the trend of a
task score over a swept setting, per seed (the p sweep on Gemma 4's global layers), the
share of a task's answers a local layer can reach (the ceiling of chunked attention), and
Llama 4's k-back at 1× against that ceiling (:func:`chunk_ceiling`, which the chapter and the
kept :mod:`ropebook.task_study` both read)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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


# ---------------------------------------------------------------- Llama 4's chunk ceiling on k-back


def kback_probe(context: int, n_sequences: int) -> tasks.Batch:
    """The chapter's k-back test batch at 1× (``context`` tokens): a quarter of its
    ``n_sequences``, at least 2, as every k-back sweep of the chapter draws it
    (:func:`ropebook.analysis.recall.task_batch`, test seed 0)."""
    from ropebook.analysis import recall as rc

    if n_sequences < 1 or context < 2:
        raise ValueError(f"need n_sequences >= 1 and context >= 2, got {n_sequences}, {context}")
    return rc.task_batch(tasks.get("kback"), context, max(n_sequences // 4, 2))


def ceiling(batch: tasks.Batch, chunk: int) -> float:
    """The share of ``batch``'s k-back answers a model answers whose only route to an answer's
    source is a local layer of ``chunk``-token chunks (:func:`local_reach`), plus chance (one
    of the task's data tokens) on the rest: a global layer without positions cannot tell
    "2 back" from "3 back"."""
    reach = local_reach(batch, chunk=chunk)
    return reach + (1 - reach) / tasks.get("kback").n_data


def local_chunk(config) -> int:
    """The chunk of a model's local layers (Llama 4's layout: every local layer has the same)."""
    chunks = {layer.chunk for layer in config.layers if layer.local}
    if len(chunks) != 1 or None in chunks:
        raise ValueError(f"not one chunk shared by every local layer: {sorted(map(str, chunks))}")
    return int(chunks.pop())


@dataclass(frozen=True)
class ChunkCeiling:
    """Llama 4's k-back accuracy at 1× per seed (learnt or not) against the closed-form
    :func:`ceiling` of its chunks on the same probe: ``gap`` is accuracy − ceiling, paired
    (the ceiling one number for every seed), read as an equivalence within a margin."""

    accuracy: np.ndarray  # [seeds], shares
    ceiling: float
    chunk: int
    seeds: tuple[int, ...]

    @property
    def gap(self):
        """:class:`ropebook.analysis.recall.Paired` of accuracy − ceiling over the seeds."""
        from ropebook.analysis import recall as rc

        accuracy = np.asarray(self.accuracy, np.float64)
        return rc.paired(accuracy, np.full_like(accuracy, self.ceiling))

    def verdict(self, margin: float) -> str:
        """``held`` where the gap's interval lies inside ``± margin``, ``not held`` where it
        lies wholly outside, else ``cannot decide`` (fewer than 2 seeds too)."""
        if not 0 < margin < 1:
            raise ValueError(f"the margin is a share in (0, 1), got {margin}")
        return self.gap.equivalence(margin)


def chunk_ceiling(runs: Sequence, n_sequences: int) -> ChunkCeiling:
    """:class:`ChunkCeiling` of ``runs`` (Llama 4's layout trained on k-back, one per seed) on
    the chapter's probe (:func:`kback_probe` of ``n_sequences``)."""
    from ropebook.analysis import recall as rc

    if not runs:
        raise ValueError("no runs to score")
    config = runs[0].config
    chunk = local_chunk(config)
    probe = kback_probe(config.context, n_sequences)
    return ChunkCeiling(
        rc.accuracy(runs, probe), ceiling(probe, chunk), chunk, tuple(int(m.seed) for m in runs)
    )
