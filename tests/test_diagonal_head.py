"""Fig. 11's reading on a real checkpoint (``ropebook.analysis.frequencies.diagonal``): the
top-frequency head's margin of attention on itself over its KV group's runner-up, decided by its
interval over prompts; every verdict the rule returns is reached on constructed attention."""

import numpy as np
import pytest

from ropebook import rope
from ropebook.analysis import frequencies as fq
from ropebook.analysis.frequencies import diagonal as dg


def usage(n_heads: int = 6, n_kv: int = 2, top: int = 4) -> fq.FrequencyUsage:
    """One layer whose query head ``top`` puts most of its norm on the fastest chunks."""
    rising = np.arange(1.0, 9.0)  # norm grows towards the slow chunks
    q = np.broadcast_to(rising, (1, n_heads, 8)).copy()
    q[0, top] = rising[::-1]
    kv = np.broadcast_to(rising, (1, n_kv, 8)).copy()
    return fq.FrequencyUsage(q, kv, kv, rope.base_frequencies(16), "half", 1, 1)


def prompts(means, n: int = 10, noise: float = 0.02, seed: int = 0) -> np.ndarray:
    """``[n, heads]`` attention on itself scattered around ``means`` prompt by prompt."""
    rng = np.random.default_rng(seed)
    return np.clip(np.asarray(means) + noise * rng.standard_normal((n, len(means))), 0, 1)


def test_the_top_head_clearly_ahead_and_diagonal_is_held():
    # heads 3-5 share a KV head; head 4 is the top-frequency head
    reading = dg.diagonal_head_margin(usage(), prompts([0.1, 0.1, 0.1, 0.2, 0.8, 0.3]), 0.25, 0.5)
    assert (reading.top, reading.members, reading.most_diagonal) == (4, [3, 4, 5], 4)
    assert reading.runner_up == 5 and reading.n_prompts == 10
    assert reading.margin.low > 0 and reading.on_itself.low > 0.5
    assert reading.verdict == "held"


def test_ahead_of_its_group_but_below_the_mass_is_partly():
    reading = dg.diagonal_head_margin(usage(), prompts([0.1, 0.1, 0.1, 0.1, 0.3, 0.15]), 0.25, 0.5)
    assert reading.margin.low > 0 and reading.on_itself.high < 0.5
    assert reading.verdict == "partly"


def test_another_member_clearly_more_diagonal_is_not_held():
    reading = dg.diagonal_head_margin(usage(), prompts([0.1, 0.1, 0.1, 0.9, 0.6, 0.1]), 0.25, 0.5)
    assert reading.most_diagonal == 3 and reading.runner_up == 3
    assert reading.margin.high < 0 and reading.verdict == "not held"


def test_a_margin_within_prompt_noise_cannot_decide():
    """The top head leads its group on the means (the old argmax rule said held), but the lead
    is smaller than the prompts' scatter."""
    attention = prompts([0.1, 0.1, 0.1, 0.7, 0.71, 0.1], noise=0.1, seed=3)
    reading = dg.diagonal_head_margin(usage(), attention, 0.25, 0.5)
    assert reading.margin.low < 0 < reading.margin.high
    assert reading.verdict == "cannot decide"


def test_one_prompt_has_no_interval_and_cannot_decide():
    means = np.array([0.1, 0.1, 0.1, 0.2, 0.8, 0.3])
    assert dg.diagonal_head_margin(usage(), means, 0.25, 0.5).verdict == "cannot decide"
    assert dg.diagonal_head_margin(usage(), means[None], 0.25, 0.5).n_prompts == 1


def test_a_group_of_one_head_is_not_testable():
    """Without grouped-query attention each KV group is one head: no member to be ahead of."""
    reading = dg.diagonal_head_margin(
        usage(n_heads=4, n_kv=4, top=2), prompts([0.1, 0.1, 0.9, 0.1]), 0.25, 0.5
    )
    assert reading.members == [2] and reading.runner_up is None and reading.margin is None
    assert reading.verdict == "not testable here"


def test_shapes_must_agree():
    with pytest.raises(ValueError, match="heads"):
        dg.diagonal_head_margin(usage(), prompts([0.1] * 4), 0.25, 0.5)


def test_self_attention_by_prompt_averages_to_the_analysis():
    """Per prompt, the same attention on itself the CLI's analysis averages over prompts."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from ropebook import analyse, tiny_models

    model = tiny_models.tiny_random_model("llama", seed=3)
    model.eval()
    texts = [np.arange(1, 13) % 50, (np.arange(20) * 7) % 50]
    per_prompt = dg.self_attention_by_prompt(model, texts, layer=1)
    result = analyse.analyse_checkpoint(model, texts)
    assert per_prompt.shape == (2, result.diagonal.shape[1])
    np.testing.assert_allclose(per_prompt.mean(axis=0), result.diagonal[1], rtol=1e-5)
    assert np.all((per_prompt >= 0) & (per_prompt <= 1))
