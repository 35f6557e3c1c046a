"""The per-plane causal map: what each RoPE plane of a trained model does, one plane at a time.

For every rotating plane ``k`` of a model (``g_k > 0``; a model without RoPE has none), at
inference and in every head and layer (:class:`ropebook.model.Intervention`):

- **removed**: plane ``k`` of the rotated queries and keys is zeroed, so its term leaves every
  score (``keep_chunks``, as :mod:`ropebook.analysis.probes` does for quarters);
- **mean-ablated** (the control for norm): plane ``k``'s unrotated queries and keys are replaced
  by their means over positions, then rotated (:func:`ropebook.analysis.probes.removal`, means
  over the head-choosing windows or sequences): its average vector stays, its content goes;
- **unrotated**: plane ``k`` keeps its queries and keys but turns at ``g_k = 0`` (NoPE in that
  plane: Oka et al.'s replacement; ``frequencies``).

Measured on the same held-out windows and sequences for every plane and the intact model, per
seed: the change in mean next-token loss (nats; removed and unrotated), in the mean
previous-token attention of the model's strongest previous-token heads, and in the induction
(prefix-matching) score of its strongest induction heads on repeated random tokens
(:func:`ropebook.analysis.dynamics.induction_score`) — a content score: the head must find the
earlier copy of the current token by what it is, wherever it is. Heads are chosen on *other*
windows and sequences with the intact model. Every difference is paired (same seed, same window,
with and without the change), and intervals are over seeds (each seed's mean over windows) with
several seeds, else over the windows of one seed (:func:`ropebook.analysis.probes.paired_estimate`).

:func:`classify` names each plane by a stated rule; :func:`band_contrast` compares the slowest
and fastest planes, for the papers' claims. Numbers only: charts and tables are in
:mod:`ropebook.present.planes`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ropebook.analysis import Estimate
from ropebook.analysis.probes import paired_estimate, strongest_heads

# The removal metrics (zeroed) and their mean-ablated twins (``<metric>_mean``).
REMOVED: tuple[str, ...] = ("loss", "previous", "content")
METRICS: tuple[str, ...] = (
    "loss", "unrotated", "previous", "content", *(f"{m}_mean" for m in REMOVED)
)  # fmt: skip
HARM = {"loss": 1, "unrotated": 1, "previous": -1, "content": -1}  # sign of a harmful change
HARM |= {f"{m}_mean": HARM[m] for m in REMOVED}


def ablated(metric: str, ablation: str) -> str:
    """The metric of ``metric`` (``loss``, ``previous``, ``content``) under ``ablation``."""
    from ropebook.analysis.probes import ABLATIONS

    if metric not in REMOVED or ablation not in ABLATIONS:
        raise ValueError(f"no {ablation!r} reading of {metric!r}")
    return metric if ablation == "zeroed" else f"{metric}_mean"


def rope_planes(config) -> np.ndarray:
    """Indices of the planes that rotate (``g_k > 0``), fastest first; empty without RoPE."""
    from ropebook.analysis.frequencies import zoo_frequencies

    return np.flatnonzero(zoo_frequencies(config) > 0)


def removal_mask(n_planes: int, plane: int) -> np.ndarray:
    """Keep mask ``[K]`` removing only ``plane``."""
    if not 0 <= plane < n_planes:
        raise ValueError(f"plane {plane} out of range for {n_planes} planes")
    keep = np.ones(n_planes, np.float32)
    keep[plane] = 0.0
    return keep


def unrotated_grid(frequencies, plane: int) -> np.ndarray:
    """The model's frequencies ``[K]`` with ``plane`` set to 0 (it no longer turns)."""
    grid = np.array(frequencies, np.float32)
    grid[plane] = 0.0
    return grid


@functools.cache
def _jitted_probs():
    import jax
    import jax.numpy as jnp

    from ropebook import model

    def probs(params, tokens, config, intervention):
        _, layers = model.forward(
            params, tokens, config, return_internals=True, intervention=intervention
        )
        return jnp.stack([x["probs"] for x in layers], axis=1)  # [B, L, H, T, T]

    return jax.jit(probs, static_argnames="config")


def attention(params, config, tokens, intervention=None) -> np.ndarray:
    """Attention probabilities ``[B, L, H, T, T]`` of every layer and head (jitted)."""
    return np.asarray(_jitted_probs()(params, np.asarray(tokens), config, intervention))


def _previous(probs) -> np.ndarray:
    """Mean attention on the previous token per sequence and head: ``[B, L, H]``."""
    from ropebook.analysis import heads

    return heads.target_weights(probs, "previous").mean(-1)


def _content(probs, period: int) -> np.ndarray:
    from ropebook.analysis import dynamics

    return dynamics.induction_score(probs, period)  # [B, L, H]


def qk_norm_share(params, config, windows) -> np.ndarray:
    """Share of the query plus key norm in each plane ``[K]`` (sums to 1): chunk norms of the
    unrotated q and k, averaged over tokens, heads and layers (rotation leaves them unchanged)."""
    from ropebook import model
    from ropebook.analysis import chunk_norms

    _, layers = model.forward(params, np.asarray(windows), config, return_internals=True)
    norms = sum(
        chunk_norms(x[kind], config.pairing).mean(axis=(0, 1, 2))
        for x in layers
        for kind in ("q", "k")
    )
    return norms / norms.sum()


@dataclass(frozen=True)
class PlaneMap:
    """One model's per-plane measurements, over seeds.

    ``planes [K]``: the rotating planes measured (chunk indices, fastest first), with their
    ``frequencies`` and ``turns`` per training context; ``intact[m]``: ``[S, W]`` and
    ``changed[m]``: ``[S, K, W]`` for every metric of :data:`METRICS` (``W`` windows, or
    sequences for ``content``); ``norm_share [S, K]``: each plane's share of q/k norm;
    ``heads``: per seed the previous-token and induction heads read."""

    name: str
    seeds: tuple[int, ...]
    planes: np.ndarray
    frequencies: np.ndarray
    turns: np.ndarray
    intact: dict[str, np.ndarray]
    changed: dict[str, np.ndarray]
    norm_share: np.ndarray
    heads: list[dict[str, list[tuple[int, int]]]]

    @property
    def n_planes(self) -> int:
        return len(self.planes)

    def delta(self, metric: str) -> np.ndarray:
        """``[S, K, W]`` paired change (changed − intact) of ``metric``."""
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; valid: {METRICS}")
        return self.changed[metric] - self.intact[metric][:, None, :]

    def estimates(self, metric: str, digits: int = 3) -> list[Estimate]:
        """Mean change and 95% interval of ``metric`` for every plane."""
        d = self.delta(metric)
        return [paired_estimate(d[:, k, :], digits) for k in range(self.n_planes)]


def map_planes(
    models: Sequence,
    windows,
    select_windows,
    sequences,
    select_sequences,
    period: int,
    *,
    n_heads: int = 2,
) -> PlaneMap:
    """:class:`PlaneMap` of ``models`` (one zoo model per seed, same spec). ``windows [W, T+1]``
    are scored (loss on every next token, attention on the first T), ``select_windows [W', T]``
    choose the previous-token heads; ``sequences`` / ``select_sequences`` (BOS + a ``period`` of
    random tokens twice, :func:`ropebook.analysis.dynamics.repeated_random_tokens`) score and
    choose the induction heads."""
    from ropebook import model, rope
    from ropebook.analysis.frequencies import zoo_frequencies
    from ropebook.analysis.probes import removal, window_losses

    if not models:
        raise ValueError("map_planes needs at least one model")
    config = models[0].config
    if any(m.config != config for m in models):
        raise ValueError("map_planes: every model must be the same spec (one per seed)")
    windows = np.asarray(windows)
    grid = zoo_frequencies(config)
    planes = rope_planes(config)
    intact = {m: [] for m in METRICS}
    changed = {m: [] for m in METRICS}
    shares, chosen = [], []
    for trained in models:
        params = trained.params
        heads = {
            "previous": strongest_heads(_previous(attention(params, config, select_windows)), n_heads),
            "content": strongest_heads(
                _content(attention(params, config, select_sequences), period), n_heads
            ),
        }  # fmt: skip
        chosen.append(heads)
        means = {  # mean-ablation: means over the head-choosing windows and sequences
            "text": removal(params, config, "mean", select_windows),
            "sequences": removal(params, config, "mean", select_sequences),
        }

        def read(intervention, heads=heads, params=params, content_intervention=None):
            def mean_of(values, which):
                return np.stack([values[:, la, h] for la, h in heads[which]], -1).mean(-1)

            prev = mean_of(
                _previous(attention(params, config, windows[:, :-1], intervention)), "previous"
            )
            on_sequences = intervention if content_intervention is None else content_intervention
            content = mean_of(
                _content(attention(params, config, sequences, on_sequences), period), "content"
            )
            return prev, content

        prev, content = read(None)
        intact["loss"].append(window_losses(params, config, windows))
        intact["unrotated"].append(intact["loss"][-1])
        intact["previous"].append(prev)
        intact["content"].append(content)
        for m in REMOVED:
            intact[f"{m}_mean"].append(intact[m][-1])
        rows = {m: [] for m in METRICS}
        for k in planes:
            keep = removal_mask(len(grid), int(k))
            removed = model.Intervention(keep_chunks=keep)
            rows["loss"].append(window_losses(params, config, windows, keep))
            unrot = model.Intervention(frequencies=unrotated_grid(grid, int(k)))
            rows["unrotated"].append(
                np.asarray(_jitted_losses()(params, windows, config, unrot)).mean(-1)
            )
            prev, content = read(removed)
            rows["previous"].append(prev)
            rows["content"].append(content)
            rows["loss_mean"].append(window_losses(params, config, windows, keep, means["text"]))
            prev, content = read(means["text"](keep), content_intervention=means["sequences"](keep))
            rows["previous_mean"].append(prev)
            rows["content_mean"].append(content)
        for m in METRICS:
            width = intact[m][-1].shape[0]
            changed[m].append(np.stack(rows[m]) if rows[m] else np.zeros((0, width)))
        shares.append(qk_norm_share(params, config, windows[:, :-1])[planes])
    turns = rope.turns_per_context(
        config.head_dim, config.encoding_config.base, config.context,
        variant=config.encoding_config.rope_variant, proportion=config.encoding_config.proportion,
    )[planes] if len(planes) else np.zeros(0)  # fmt: skip
    return PlaneMap(
        name=models[0].name,
        seeds=tuple(m.seed for m in models),
        planes=planes,
        frequencies=grid[planes],
        turns=np.asarray(turns),
        intact={m: np.stack(v) for m, v in intact.items()},
        changed={m: np.stack(v) for m, v in changed.items()},
        norm_share=np.stack(shares),
        heads=chosen,
    )


def checkpoint_plane_map(checkpoint, windows, name: str) -> PlaneMap:
    """A transformers RoPE model's map (from :func:`ropebook.capture.load`) for the change that
    needs no hook inside its attention: each plane **unrotated**, its frequency set to 0 in the
    rotary module's ``inv_freq`` (restored after), on ``windows [W, T+1]`` (loss on every next
    token). Holds the ``unrotated`` metric only, as one seed; the q/k norm share is read from
    the intact model's queries and keys (:func:`ropebook.capture.capture`). Every layer must
    rotate every plane on one grid (one ``inv_freq``)."""
    import torch

    from ropebook import capture
    from ropebook.analysis import chunk_norms

    windows = np.asarray(windows)
    buffers = [b for m in checkpoint.modules() for n, b in m.named_buffers(recurse=False)
               if n == "inv_freq"]  # fmt: skip
    if not buffers or any(not torch.equal(b, buffers[0]) for b in buffers):
        raise ValueError(f"{name}: planes can be unrotated only on a single rotary grid")
    ((_, layers, pairing),) = capture.per_head_batches(
        checkpoint, windows[:, :-1], batch_size=len(windows)
    )
    norms = sum(chunk_norms(x[kind], pairing).mean(axis=(0, 1, 2)) for x in layers for kind in "qk")
    frequencies = buffers[0].double().cpu().numpy()

    def losses() -> np.ndarray:  # [W] mean next-token loss per window
        with torch.no_grad():
            ids = torch.as_tensor(windows, dtype=torch.long)
            logp = torch.log_softmax(checkpoint(input_ids=ids, use_cache=False).logits.float(), -1)
            picked = logp[:, :-1].gather(-1, ids[:, 1:, None])[..., 0]
        return -picked.mean(-1).double().numpy()

    intact, changed, saved = losses(), [], buffers[0].clone()
    for k in range(len(frequencies)):
        try:
            for b in buffers:
                b[k] = 0.0
            changed.append(losses())
        finally:
            for b in buffers:
                b.copy_(saved)
    return PlaneMap(
        name=name,
        seeds=(0,),
        planes=np.arange(len(frequencies)),
        frequencies=frequencies,
        turns=frequencies * (windows.shape[1] - 1) / (2 * np.pi),
        intact={"unrotated": intact[None]},
        changed={"unrotated": np.stack(changed)[None]},
        norm_share=(norms / norms.sum())[None],
        heads=[{}],
    )


@functools.cache
def _jitted_losses():
    import jax

    from ropebook import model

    return jax.jit(model.token_losses, static_argnames="config")


# ---------------------------------------------------------------- reading the map


@dataclass(frozen=True)
class Thresholds:
    """Smallest changes that count: ``loss`` in nats (0.005 ≈ 0.5 % of perplexity, the book's
    matched-regime target), ``attention`` in attention weight (previous-token or induction)."""

    loss: float = 0.005
    attention: float = 0.02


CLASSES: tuple[str, ...] = (
    "positional", "semantic", "positional and semantic", "used, neither score", "unused",
    "undecided",
)  # fmt: skip


def classify(
    plane_map: PlaneMap, thresholds: Thresholds = Thresholds(), ablation: str = "zeroed"
) -> list[str]:
    """One class of :data:`CLASSES` per plane, from the 95% intervals of its removal by
    ``ablation`` (:data:`ropebook.analysis.probes.ABLATIONS`):

    - *positional*: previous-token attention falls by more than ``attention`` (whole interval
      below ``-attention``); *semantic*: the induction score does; both: *positional and semantic*;
    - else *used, neither score*: loss rises by more than ``loss`` (interval above ``loss``);
    - else *unused*: the loss interval lies within ``±loss`` and neither score's interval reaches
      below ``-attention`` (a bound, not a null);
    - else *undecided* (an interval straddles a threshold)."""
    loss, prev, content = (
        plane_map.estimates(ablated(m, ablation)) for m in ("loss", "previous", "content")
    )
    out = []
    for lo, pr, co in zip(loss, prev, content, strict=True):
        positional, semantic = pr.high < -thresholds.attention, co.high < -thresholds.attention
        if positional or semantic:
            out.append(
                "positional and semantic" if positional and semantic
                else "positional" if positional else "semantic"
            )  # fmt: skip
        elif lo.low > thresholds.loss:
            out.append("used, neither score")
        elif (
            -thresholds.loss < lo.low
            and lo.high < thresholds.loss
            and min(pr.low, co.low) > -thresholds.attention
        ):
            out.append("unused")
        else:
            out.append("undecided")
    return out


def band(plane_map: PlaneMap, which: str, fraction: float = 0.25) -> np.ndarray:
    """Positions (into ``plane_map.planes``) of the ``fastest`` or ``slowest`` ``fraction`` of the
    rotating planes (at least one)."""
    from ropebook.analysis.frequencies import band_size

    if which not in ("fastest", "slowest"):
        raise ValueError(f"band must be 'fastest' or 'slowest', got {which!r}")
    n = band_size(plane_map.n_planes, fraction)
    order = np.argsort(-plane_map.frequencies, kind="stable")
    return order[:n] if which == "fastest" else order[-n:]


def band_contrast(plane_map: PlaneMap, metric: str, fraction: float = 0.25) -> Estimate:
    """Mean single-plane change of ``metric`` over the slowest ``fraction`` of planes minus that
    over the fastest, paired per seed and window, with its 95% interval."""
    d = plane_map.delta(metric)
    slow, fast = band(plane_map, "slowest", fraction), band(plane_map, "fastest", fraction)
    return paired_estimate(d[:, slow, :].mean(1) - d[:, fast, :].mean(1))


def band_verdict(
    plane_map: PlaneMap, metric: str, threshold: float, *, above: bool, fraction: float = 0.25
) -> tuple[str, Estimate]:
    """A band claim's verdict: :func:`band_contrast` of ``metric`` (slowest − fastest) against a
    material ``threshold`` (:func:`ropebook.claims.verdict_from_interval`: ``held`` when the
    interval lies wholly beyond it on the claimed side), with the estimate."""
    from ropebook.claims import verdict_from_interval

    e = band_contrast(plane_map, metric, fraction)
    return verdict_from_interval(*e.bounds, threshold=threshold, above=above), e


def below_band(plane_map: PlaneMap) -> np.ndarray:
    """Positions of the planes slower than the plane of largest q/k norm share (Oka et al.'s
    "frequency band"; mean share over seeds); empty if that plane is the slowest."""
    peak = int(np.argmax(plane_map.norm_share.mean(0)))
    return np.flatnonzero(plane_map.frequencies < plane_map.frequencies[peak])


def pooled_change(plane_map: PlaneMap, metric: str, positions) -> Estimate:
    """Mean single-plane change of ``metric`` over the planes at ``positions``, with interval."""
    return paired_estimate(plane_map.delta(metric)[:, np.asarray(positions), :].mean(1))


def count_bounds(estimates: Sequence[Estimate], threshold: float) -> tuple[int, int]:
    """``(surely, possibly)``: planes whose interval lies wholly above ``threshold``, and those
    whose interval reaches above it."""
    return (
        sum(e.low > threshold for e in estimates),
        sum(e.high > threshold for e in estimates),
    )


def count_verdict(bounds: tuple[int, int], limit: int) -> str:
    """``held`` if even the possible count is at most ``limit``, ``not held`` if the sure count
    exceeds it, else ``cannot decide``."""
    surely, possibly = bounds
    return "held" if possibly <= limit else "not held" if surely > limit else "cannot decide"


# ---------------------------------------------------------------- along training


@dataclass(frozen=True)
class PlaneTraining:
    """Per-plane loss change of removal and q/k norm share along a run's snapshots:
    ``delta_loss``, ``norm_share``: ``[S, snapshots, K]`` at ``tokens [snapshots]``."""

    name: str
    seeds: tuple[int, ...]
    tokens: np.ndarray
    planes: np.ndarray
    turns: np.ndarray
    delta_loss: np.ndarray
    norm_share: np.ndarray


def map_over_training(models: Sequence, windows) -> PlaneTraining:
    """:class:`PlaneTraining` of ``models`` (one flagship zoo model per seed): at every kept
    snapshot, the mean change in loss over ``windows [W, T+1]`` when each plane is removed."""
    from ropebook import rope
    from ropebook.analysis import dynamics
    from ropebook.analysis.probes import window_losses

    config = models[0].config
    windows = np.asarray(windows)
    planes = rope_planes(config)
    n = config.head_dim // 2
    deltas, shares, tokens = [], [], None
    for trained in models:
        snaps = dynamics.snapshots(trained)
        these = np.array([s.tokens for s in snaps])
        if tokens is not None and not np.array_equal(these, tokens):
            raise ValueError("seeds kept different snapshots")
        tokens = these
        seed_d, seed_s = [], []
        for snap in snaps:
            params = snap.params
            base = window_losses(params, config, windows).mean()
            seed_d.append(
                [window_losses(params, config, windows, removal_mask(n, int(k))).mean() - base
                 for k in planes]
            )  # fmt: skip
            seed_s.append(qk_norm_share(params, config, windows[:, :-1])[planes])
        deltas.append(seed_d)
        shares.append(seed_s)
    enc = config.encoding_config
    turns = rope.turns_per_context(
        config.head_dim, enc.base, config.context, variant=enc.rope_variant,
        proportion=enc.proportion,
    )[planes]  # fmt: skip
    return PlaneTraining(
        name=models[0].name, seeds=tuple(m.seed for m in models), tokens=tokens, planes=planes,
        turns=turns, delta_loss=np.asarray(deltas, np.float64),
        norm_share=np.asarray(shares, np.float64),
    )  # fmt: skip
