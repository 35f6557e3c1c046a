"""Scoring a model: next-token losses on held-out text and answer accuracy on tasks.

Every score is a pure function of the params and a seed: the windows (:func:`ropebook.data.
sample_windows`) and task batches depend only on ``seed`` (training always scores with 0), so
every model of the zoo is scored on the same text and differences between models are paired.
Batches are split over the XLA devices as training splits them
(:func:`ropebook.runtime.data_parallel`); params trained here already live on every device.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ropebook import model
from ropebook.data import sample_windows
from ropebook.model import ModelConfig, Params
from ropebook.runtime import data_parallel

_token_losses = jax.jit(model.token_losses, static_argnames="config")


def answer_outputs(
    params: Params,
    tokens: jnp.ndarray,
    targets: jnp.ndarray,
    config: ModelConfig,
    intervention: model.Intervention | None = None,
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Task outputs at every position of ``tokens [B, T]``: the cross entropy (nats) of
    ``targets [B, T]`` and whether the most likely token is the target, ``[B, T]`` each."""
    logits = model.forward(params, tokens, config, intervention=intervention)
    target_logit = jnp.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
    losses = jax.nn.logsumexp(logits, axis=-1) - target_logit
    return losses, jnp.argmax(logits, axis=-1) == targets


_answer_outputs = jax.jit(answer_outputs, static_argnames="config")


def task_outputs(
    params: Params,
    config: ModelConfig,
    tokens: np.ndarray,
    targets: np.ndarray,
    intervention: model.Intervention | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`answer_outputs` as numpy arrays, split over devices like evaluation batches."""
    batch_sharding, replicated = data_parallel(len(tokens))
    params, tokens, targets = jax.device_put(
        (params, tokens, targets), (replicated, batch_sharding, batch_sharding)
    )
    losses, correct = _answer_outputs(params, tokens, targets, config, intervention)
    return np.asarray(losses), np.asarray(correct)


def evaluate_task(
    params: Params,
    config: ModelConfig,
    task,
    *,
    seq_len: int,
    batch_size: int,
    n_batches: int,
    seed: int = 0,
    intervention: model.Intervention | None = None,
) -> dict[str, float]:
    """Mean answer loss (nats; ``ppl`` its exponential) and accuracy (share of answers whose most
    likely token is right) over ``n_batches`` task batches that depend only on ``seed``, so every
    model is scored on the same sequences (paired)."""
    rng = np.random.default_rng([seed, 2**31])
    loss = correct = count = 0.0
    for _ in range(n_batches):
        b = task.batch(rng, batch_size, seq_len)
        losses, right = task_outputs(params, config, b.tokens, b.targets, intervention)
        loss += float(losses[b.mask].sum())
        correct += float(right[b.mask].sum())
        count += float(b.mask.sum())
    return {"loss": loss / count, "ppl": math.exp(loss / count), "accuracy": correct / count}


def _window_losses(
    params: Params,
    config: ModelConfig,
    windows: np.ndarray,
    intervention: model.Intervention | None = None,
) -> np.ndarray:
    batch_sharding, replicated = data_parallel(len(windows))
    # params trained here live on every device; a batch that does not split evenly uses fewer
    params, windows = jax.device_put((params, windows), (replicated, batch_sharding))
    return np.asarray(_token_losses(params, windows, config, intervention))


def evaluate(
    params: Params,
    config: ModelConfig,
    tokens: np.ndarray,
    *,
    seq_len: int,
    batch_size: int,
    n_batches: int,
    seed: int = 0,
    intervention: model.Intervention | None = None,
) -> dict[str, float]:
    """Mean next-token loss (nats) and perplexity over ``n_batches`` random windows.

    The windows depend only on ``seed`` (training always uses 0), so every model of the zoo is
    scored on the same text and differences between models are paired.
    """
    rng = np.random.default_rng([seed, 2**31])
    losses = [
        _window_losses(
            params, config, sample_windows(tokens, seq_len + 1, batch_size, rng), intervention
        ).mean()
        for _ in range(n_batches)
    ]
    loss = float(np.mean(losses))
    return {"loss": loss, "ppl": math.exp(loss)}


def window_losses(
    params: Params,
    config: ModelConfig,
    tokens: np.ndarray,
    *,
    seq_len: int,
    batch_size: int,
    n_batches: int,
    seed: int = 0,
) -> np.ndarray:
    """Each window's mean next-token loss ``[n_batches * batch_size]`` (nats), on the windows
    :func:`evaluate` scores for the same arguments (their mean is its loss): the unit over which
    evaluation noise is measured (``ropebook.stats.noise``)."""
    rng = np.random.default_rng([seed, 2**31])
    return np.concatenate([
        _window_losses(params, config, sample_windows(tokens, seq_len + 1, batch_size, rng))
        .astype(np.float64).mean(axis=-1)
        for _ in range(n_batches)
    ])  # fmt: skip


def loss_by_position(
    params: Params,
    config: ModelConfig,
    tokens: np.ndarray,
    *,
    seq_len: int,
    n_windows: int,
    seed: int = 0,
    batch_size: int = 8,
    intervention: model.Intervention | None = None,
) -> np.ndarray:
    """Mean loss at each position ``[seq_len]`` over ``n_windows`` windows; ``seq_len`` may exceed
    the training context, which is how the chapters draw length-extrapolation curves."""
    rng = np.random.default_rng([seed, 2**31 + 1])
    total = np.zeros(seq_len)
    for start in range(0, n_windows, batch_size):
        count = min(batch_size, n_windows - start)
        total += _window_losses(
            params, config, sample_windows(tokens, seq_len + 1, count, rng), intervention
        ).sum(0)
    return total / n_windows
