"""Fig. 11 on a real checkpoint, decided over prompts: in the last rotating layer, is the query
head that uses the fastest band most the diagonal head of its KV group?

The argmax of mean attention says which member of a group is most diagonal on these prompts, but
not whether another prompt set would say the same: in a group of three, "the top-frequency head
is the most diagonal" is true by chance one time in three. So the reading is a *margin*: per
prompt, the top-frequency head's attention on itself minus that of its group's runner-up (the
other member with the most mean attention on itself), with a t-interval over the prompts.
:func:`diagonal_head_margin` decides it; :func:`self_attention_by_prompt` measures what it reads.

The prompts are samples of text read by one trained model: the interval says how the checkpoint
behaves on text like this, not how training runs vary (one checkpoint has no seeds).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ropebook.analysis.frequencies.readings import SeedInterval, over_seeds
from ropebook.analysis.frequencies.usage import FrequencyUsage, band_share

MIN_PROMPTS = 2  # one prompt has no interval


@dataclass(frozen=True)
class DiagonalHeadMargin:
    """Is the last rotating layer's query head with the largest fastest-band share the diagonal
    head of its KV group (Barbero et al. 2025, App. C, Fig. 11)?"""

    q_high: np.ndarray  # [heads] fastest-band share of the layer's query heads (mean over prompts)
    diagonal: np.ndarray  # [heads] attention on the token itself, mean over prompts
    top: int  # the head with the largest fastest-band share
    members: list[int]  # the query heads sharing its KV head
    most_diagonal: int  # the member with the most mean attention on itself (shown)
    runner_up: int | None  # the other member with the most mean attention on itself
    margin: SeedInterval | None  # top's attention on itself minus the runner-up's, over prompts
    on_itself: SeedInterval  # top's attention on itself, over prompts
    verdict: str

    @property
    def n_prompts(self) -> int:
        return self.on_itself.n


def margin_verdict(margin: SeedInterval | None, on_itself: SeedInterval, mass: float) -> str:
    """The rule. ``not testable here`` without a runner-up (``margin`` ``None``: a KV group of
    one head has no other member to beat); ``cannot decide`` on fewer than :data:`MIN_PROMPTS`
    prompts or where the margin's interval contains 0; ``not held`` where it lies wholly below 0
    (another member is more diagonal); where it lies above 0 the head is its group's most
    diagonal, and the claim is ``held`` if its attention on itself also lies above ``mass`` over
    the prompts (a diagonal head, not merely the least undiagonal), else ``partly``."""
    from ropebook.claims import verdict_from_interval

    if margin is None:
        return "not testable here"
    if margin.n < MIN_PROMPTS:
        return "cannot decide"
    verdict = verdict_from_interval(margin.low, margin.high, threshold=0.0)
    if verdict != "held":
        return verdict
    reaches = verdict_from_interval(on_itself.low, on_itself.high, threshold=mass)
    return "held" if reaches == "held" else "partly"


def diagonal_head_margin(
    usage: FrequencyUsage, per_prompt, fraction: float, mass: float
) -> DiagonalHeadMargin:
    """:class:`DiagonalHeadMargin` from one layer's usage (``usage.q [1, H, K]``, e.g.
    ``CheckpointAnalysis.layer_usage``) and that layer's attention on the token itself per prompt
    and query head, ``per_prompt [prompts, H]`` (:func:`self_attention_by_prompt`; a ``[H]``
    mean counts as one prompt and so cannot decide). A KV group is ``H / kv_heads`` consecutive
    query heads. The runner-up is chosen on the same prompts' means, which can only favour it:
    the margin leans, if anything, against the claim."""
    q_high = band_share(usage.heads("q")[-1], fraction, "high")
    attention = np.atleast_2d(np.asarray(per_prompt, dtype=np.float64))
    if attention.shape[1] != q_high.shape[0]:
        raise ValueError(f"per_prompt has {attention.shape[1]} heads, usage {q_high.shape[0]}")
    diagonal = attention.mean(axis=0)
    group = usage.q.shape[1] // usage.k.shape[1]
    top = int(np.argmax(q_high))
    members = list(range((top // group) * group, (top // group + 1) * group))
    most = members[int(np.argmax(diagonal[members]))]
    others = [m for m in members if m != top]
    runner = others[int(np.argmax(diagonal[others]))] if others else None
    margin = over_seeds(attention[:, top] - attention[:, runner]) if runner is not None else None
    on_itself = over_seeds(attention[:, top])
    verdict = margin_verdict(margin, on_itself, mass)
    return DiagonalHeadMargin(
        q_high, diagonal, top, members, most, runner, margin, on_itself, verdict
    )


def self_attention_by_prompt(model, texts: Sequence[np.ndarray], layer: int) -> np.ndarray:
    """Mean attention of every query head of ``layer`` on the token itself, per prompt (each run
    alone, the first row left out as :func:`ropebook.analysis.heads.target_weights` does):
    ``[prompts, heads]``. ``model`` is a transformers causal LM (:func:`ropebook.capture.load`);
    the mean over prompts is :func:`ropebook.analyse.analyse_checkpoint`'s ``diagonal[layer]``."""
    from ropebook import capture
    from ropebook.analysis import heads

    rows = []
    for ids in texts:
        found = capture.capture(model, np.asarray(ids)[None])
        weights = heads.target_weights(found.layers[layer]["probs"], "diagonal")  # [1, H, T-1]
        rows.append(weights.mean(axis=(0, -1)))
    return np.stack(rows)
