"""The synthetic tasks: targets are what each definition says, ranges are disjoint, batches are
a function of the seed (property tests over seeds, batch sizes and lengths)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ropebook import tasks

RECALL, KBACK = tasks.get("recall"), tasks.get("kback")
seeds = st.integers(0, 2**32 - 1)
batch_sizes = st.integers(1, 6)


def test_tasks_fit_the_vocabulary_in_disjoint_ranges():
    r = RECALL
    values = set(range(r.key_start))
    keys = set(range(r.key_start, r.filler_start))
    filler = set(range(r.filler_start, r.vocab_size))
    assert len(values) == r.n_classes * r.values_per_class and len(keys) == r.n_classes
    assert not (values & keys or keys & filler or values & filler)
    assert max(r.vocab_size, KBACK.vocab_size) <= tasks.VOCAB_SIZE
    with pytest.raises(ValueError, match="valid tasks: recall, kback"):
        tasks.get("mqar")


@settings(max_examples=40, deadline=None)
@given(seed=seeds, batch_size=batch_sizes, length=st.integers(RECALL.min_length(), 400))
def test_recall_answers_are_the_needles_of_the_queried_classes(seed, batch_size, length):
    b = RECALL.batch(np.random.default_rng(seed), batch_size, length)
    r, span = RECALL, max(int(RECALL.needle_span * length), RECALL.max_needles)
    assert b.tokens.shape == b.targets.shape == b.mask.shape == (batch_size, length)
    for tokens, targets, mask, distance in zip(
        b.tokens, b.targets, b.mask, b.distance, strict=True
    ):
        needles = np.flatnonzero(tokens < r.key_start)
        classes = tokens[needles] // r.values_per_class
        assert 1 <= len(needles) <= r.max_needles and len(set(classes)) == len(classes)
        assert needles.max() < span  # planted in the first needle_span of the sequence
        queries = np.flatnonzero(mask)
        assert len(queries) == r.n_queries and queries.min() >= span
        assert np.all((tokens[queries] >= r.key_start) & (tokens[queries] < r.filler_start))
        others = np.setdiff1d(np.arange(length), np.concatenate([needles, queries]))
        assert np.all(tokens[others] >= r.filler_start)
        for q in queries:
            asked = tokens[q] - r.key_start
            source = q - distance[q]
            assert tokens[source] == targets[q] and targets[q] // r.values_per_class == asked
            assert source in needles
        assert np.all(distance[~mask] == -1) and np.all(targets[~mask] == 0)


@settings(max_examples=30, deadline=None)
@given(
    seed=seeds,
    length=st.integers(RECALL.min_length(), 300),
    depth=st.floats(0, 1),
)
def test_passkey_plants_one_needle_at_its_depth(seed, length, depth):
    b = RECALL.passkey(np.random.default_rng(seed), 3, length, depth)
    first_query = length - RECALL.n_queries
    where = int(round(depth * (first_query - 1)))
    for tokens, targets, mask, distance in zip(
        b.tokens, b.targets, b.mask, b.distance, strict=True
    ):
        assert np.flatnonzero(tokens < RECALL.key_start).tolist() == [where]
        assert np.flatnonzero(mask).tolist() == list(range(first_query, length))
        assert np.all(targets[mask] == tokens[where])
        assert np.all(tokens[mask] - RECALL.key_start == tokens[where] // RECALL.values_per_class)
        assert np.all(distance[mask] == np.arange(first_query, length) - where)


@settings(max_examples=40, deadline=None)
@given(seed=seeds, batch_size=batch_sizes, length=st.integers(KBACK.min_length(), 400))
def test_kback_answers_the_token_k_back(seed, batch_size, length):
    b = KBACK.batch(np.random.default_rng(seed), batch_size, length)
    for tokens, targets, mask, distance in zip(
        b.tokens, b.targets, b.mask, b.distance, strict=True
    ):
        k = int(tokens[0]) + 1  # marker k - 1 sets k
        assert 1 <= k <= KBACK.max_k and np.all(tokens[1:] >= KBACK.max_k)
        assert np.flatnonzero(mask).tolist() == list(range(k + 1, length))
        for t in range(k + 1, length):
            assert targets[t] == tokens[t - k] and distance[t] == k


@settings(max_examples=20, deadline=None)
@given(seed=seeds, task=st.sampled_from(list(tasks.TASKS)))
def test_batches_are_a_function_of_the_seed(seed, task):
    t = tasks.get(task)
    a, b = (t.batch(np.random.default_rng([seed, 3]), 4, 64) for _ in range(2))
    c = t.batch(np.random.default_rng([seed, 4]), 4, 64)
    for x, y in zip(a.arrays(), b.arrays(), strict=True):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a.tokens, c.tokens)


def test_bad_settings_fail_with_the_rule():
    with pytest.raises(ValueError, match="at least 24 tokens"):
        RECALL.batch(np.random.default_rng(0), 1, 20)
    with pytest.raises(ValueError, match="depth must lie in"):
        RECALL.passkey(np.random.default_rng(0), 1, 64, 1.5)
    with pytest.raises(ValueError, match="max_needles"):
        tasks.Recall(max_needles=9)
