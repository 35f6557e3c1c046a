"""Semantic channels: Lemma A.2/A.3, Thm. 6.1's swaps, the head-scoring helpers and their charts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ropebook.analysis import semantic
from ropebook.present import semantic as show
from ropebook.proofs import semantic_theory as proofs

G = math.sqrt(2) / 10  # an irrational rotation: g / 2 pi is irrational
N_STAR = 23  # ceil(pi / G)


def test_proofs_hold():
    assert len(proofs.lemma_a3().steps) >= 5
    assert len(proofs.polar_score().steps) == 2


# ---------------------------------------------------------------- Lemma A.3 on random vectors


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(-30, 30, allow_nan=False), min_size=2, max_size=20),
    st.integers(0, 19),
)
def test_lemma_a3_non_maximal_weight_at_most_half(values, index):
    a = np.array(values)
    i = index % a.size
    alpha = semantic.softmax(a)
    competitors = int((a >= a[i]).sum()) - 1  # other activations at least as large
    if competitors >= 1:
        assert alpha[i] <= 0.5 + 1e-12
        assert alpha[i] <= 1.0 / (competitors + 1) + 1e-12
    if alpha[i] > 0.5:
        assert a[i] == a.max() and competitors == 0


# ---------------------------------------------------------------- Lemma A.2 and the threshold


def test_dense_rotation_gaps_shrink_but_rational_ones_do_not():
    gaps = semantic.max_gaps(G, [10, 100, 1000, 10_000])
    assert np.all(np.diff(gaps) < 0) and gaps[-1] < 0.02
    rational = semantic.max_gaps(2 * np.pi * 3 / 17, [100, 1000])
    np.testing.assert_allclose(rational, 2 * np.pi / 17, rtol=1e-9)


def test_first_hit_reaches_the_target_angle():
    n = semantic.first_hit(G, np.pi, 1e-3)
    assert n is not None
    assert abs(np.mod(G * n - np.pi + np.pi, 2 * np.pi) - np.pi) < 1e-3
    assert semantic.first_hit(G, np.pi, 1e-3, n_max=n - 1) is None


@pytest.mark.parametrize("g", [1.0, 0.3, G, 0.01, 1e-3, 2.5])
def test_breaking_length_matches_closed_form(g):
    n = semantic.breaking_length(g, n_max=100_000)
    assert n == semantic.breaking_length_closed_form(g) == math.ceil(math.pi / g)
    assert semantic.in_open_semicircle(g, n - 1) and not semantic.in_open_semicircle(g, n)


# ---------------------------------------------------------------- Thm. 6.1: worst placements


def test_worst_case_alpha_matches_brute_force_over_placements():
    rng = np.random.default_rng(0)
    g, n = 0.7, 4
    for _ in range(5):
        phi_t, phi_o = rng.uniform(0, 2 * np.pi, 2)
        c_t, c_o = rng.uniform(0, 5, 2)
        worst = 1.0
        for m_t in range(n + 1):  # target at distance m_t, other tokens everywhere else
            scores = [
                (c_t * np.cos(phi_t - g * m)) if m == m_t else (c_o * np.cos(phi_o - g * m))
                for m in range(n + 1)
            ]
            worst = min(worst, semantic.softmax(np.array(scores))[m_t])
        got = semantic.worst_case_alpha(g, n, phi_t, phi_o, c_t, c_o)
        np.testing.assert_allclose(got, worst, rtol=1e-10)


def test_robust_below_threshold_and_broken_above():
    for n in (2, 5, N_STAR // 2):
        assert semantic.best_worst_case_alpha(G, n, budget=8.0)["alpha"] > 0.99
    for n in (N_STAR + 1, 2 * N_STAR, 10 * N_STAR):
        assert semantic.best_worst_case_alpha(G, n, budget=50.0)["alpha"] <= 0.5


@settings(max_examples=100, deadline=None)
@given(
    st.floats(0, 2 * np.pi),
    st.floats(0, 2 * np.pi),
    st.floats(0, 100),
    st.floats(0, 100),
    st.integers(N_STAR + 1, 400),
)
def test_no_two_dimensional_head_is_robust_beyond_the_threshold(phi_t, phi_o, c_t, c_o, n):
    """Thm. 6.1 (with g <= pi/2): past N* + 1 every head has a placement with alpha <= 1/2."""
    assert semantic.worst_case_alpha(G, n, phi_t, phi_o, c_t, c_o) <= 0.5 + 1e-12


# ---------------------------------------------------------------- Thm. 6.1: the proof's swaps


@pytest.mark.parametrize("aim", ["previous", "robust"])
def test_swaps_move_attention_off_the_target(aim):
    rng = np.random.default_rng(1)
    for _ in range(10):
        q, keys, target = semantic.semantic_head_2d(rng, 3 * N_STAR, G, aim=aim, spread=0.3)
        attack = semantic.swap_attack(G, q, keys, target)
        assert attack.alpha_before > 0.9
        assert attack.success and attack.alpha_after < 0.5
        assert 1 <= len(attack.swaps) <= 2
        # a swap permutes tokens: same multiset of keys, query key untouched
        final = np.array(keys)
        for a, b in attack.swaps:
            final[[a, b]] = final[[b, a]]
        np.testing.assert_allclose(
            semantic.rope_scores_2d(G, q, final), attack.scores_after, atol=1e-12
        )
        assert all(len(keys) - 1 not in pair for pair in attack.swaps)


def test_swaps_fail_on_the_robust_head_below_the_threshold():
    rng = np.random.default_rng(2)
    for n in (5, 10, N_STAR - 3):
        q, keys, target = semantic.semantic_head_2d(rng, n, G, aim="robust", spread=0.0)
        attack = semantic.swap_attack(G, q, keys, target)
        assert not attack.success


def test_rope_scores_2d_follow_the_polar_form():
    rng = np.random.default_rng(3)
    q, keys = rng.normal(size=2), rng.normal(size=(6, 2))
    scores = semantic.rope_scores_2d(0.4, q, keys, query_position=5)
    theta = np.arctan2(keys[:, 1], keys[:, 0]) - np.arctan2(q[1], q[0])
    expected = (
        np.linalg.norm(q) * np.linalg.norm(keys, axis=1) * np.cos(theta + 0.4 * (np.arange(6) - 5))
    )
    np.testing.assert_allclose(scores, expected, atol=1e-12)


# ---------------------------------------------------------------- scoring helpers


def _apostrophe_head(mask: np.ndarray) -> np.ndarray:
    """Rows after a class token attend to it; every other row attends to BOS (Fig. 7a)."""
    t = mask.size
    probs = np.zeros((1, 1, t, t))
    probs[0, 0, 0, 0] = 1.0
    for i in range(1, t):
        probs[0, 0, i, i - 1 if mask[i - 1] else 0] = 1.0
    return probs


def test_previous_class_lift_on_constructed_heads():
    mask = np.zeros(12, bool)
    mask[[3, 7, 8]] = True
    apostrophe = _apostrophe_head(mask)
    previous = np.eye(12, k=-1)[None, None].copy()
    previous[0, 0, 0, 0] = 1.0
    probs = np.concatenate([apostrophe, previous], axis=1)  # two heads
    on, off, counts = semantic.previous_class_attention(probs, mask[None])
    assert counts.tolist() == [3, 8]
    lift = on / counts[0] - off / counts[1]
    np.testing.assert_allclose(lift, [1.0 - 1 / 8, 0.0])  # row 1 attends to BOS = its i-1
    by_distance = semantic.class_attention_by_distance(probs, mask[None], 4)
    np.testing.assert_allclose(semantic.distance_lift(by_distance)[1], 0.0, atol=1e-12)
    assert semantic.distance_lift(by_distance)[0] > 0.05
    rows_on, _, rows_counts = semantic.previous_class_attention(probs, mask[None], slice(8, 12))
    assert rows_counts.tolist() == [2, 2] and rows_on.tolist() == [2.0, 2.0]


def test_position_explained_separates_positional_from_content_scores():
    rng = np.random.default_rng(4)
    t = 16
    i, j = np.meshgrid(np.arange(t), np.arange(t), indexing="ij")
    by_distance = np.cos(0.5 * (i - j))  # depends on i - j only
    by_content = np.broadcast_to(rng.normal(size=t) * 3, (t, t))  # depends on the key only
    scores = np.stack([by_distance, by_content])[None]
    scores = np.where(j <= i, scores, -np.inf)
    r2 = semantic.position_explained(scores)
    assert r2[0] == pytest.approx(1.0)
    assert r2[1] < 0.5


def test_sink_chunk_contributions_add_up_to_the_scores():
    rng = np.random.default_rng(5)
    q, k = rng.normal(size=(2, 7, 3, 8)), rng.normal(size=(2, 7, 3, 8))
    bos, rest = semantic.sink_chunk_contributions(q, k)
    scores = np.einsum("bihd,bjhd->bhij", q, k) / np.sqrt(8)
    np.testing.assert_allclose(bos.sum(-1), scores[:, :, 1:, 0].transpose(0, 2, 1), atol=1e-12)
    for i in range(1, 7):
        mean_other = scores[:, :, i, 1 : i + 1].mean(-1)  # [B, H]
        np.testing.assert_allclose(rest[:, i - 1].sum(-1), mean_other, atol=1e-12)


def test_bos_mass_by_position_and_class_ids():
    t = 8
    probs = np.tril(np.ones((t, t))) / np.arange(1, t + 1)[:, None]
    masses = semantic.bos_mass_by_position(probs[None, None], bucket=4)
    np.testing.assert_allclose(
        masses[0], [np.mean([1 / 2, 1 / 3, 1 / 4]), np.mean(1 / np.arange(5, 9))]
    )
    vocab = {0: "<bos>", 1: "'s", 2: "the", 3: "o’er", 4: "'"}
    ids = semantic.class_token_ids(lambda ids: vocab[ids[0]], 5)
    assert ids.tolist() == [1, 3, 4]


def test_bos_windows_start_with_bos_and_copy_text():
    docs = [np.arange(10, 40), np.arange(100, 105)]
    windows = semantic.bos_windows(docs, 8, 5, np.random.default_rng(0))
    assert windows.shape == (5, 8) and np.all(windows[:, 0] == 0)
    for w in windows:
        assert np.all(np.diff(w[1:]) == 1) and w[1] >= 10  # consecutive, from the long document
    other = semantic.bos_windows(docs, 8, 5, np.random.default_rng(0), bos=7)  # a checkpoint's BOS
    assert np.all(other[:, 0] == 7) and np.array_equal(other[:, 1:], windows[:, 1:])


def test_disjoint_windows_share_no_token_with_each_other_or_the_used_ones():
    """disjoint_spans cuts documents into runs of length - 1 tokens, drops those touching a used
    span and draws without replacement; window_spans is where bos_windows cuts (same draws)."""
    lengths = [30, 5, 300, 64]
    used = semantic.window_spans(lengths, 8, 20, np.random.default_rng(3))
    docs = [np.arange(n) + 1000 * d for d, n in enumerate(lengths)]
    np.testing.assert_array_equal(
        semantic.windows_at(docs, used, 8, bos=9),
        semantic.bos_windows(docs, 8, 20, np.random.default_rng(3), bos=9),
    )
    free = semantic.disjoint_spans(lengths, 8, 25, np.random.default_rng(4), used)
    assert len(set(free)) == 25 and all(lengths[d] >= 8 and s + 7 <= lengths[d] for d, s in free)
    tokens = [{(d, s + i) for i in range(7)} for d, s in free]
    taken = set().union(*({(d, s + i) for i in range(7)} for d, s in used))
    assert sum(map(len, tokens)) == len(set().union(*tokens)) and not taken & set().union(*tokens)
    every = semantic.disjoint_spans(lengths, 8, 1, np.random.default_rng(0))
    assert every[0][0] != 1  # the 5-token document has no window
    with pytest.raises(ValueError, match="only 55 windows of 8 tokens are disjoint"):
        semantic.disjoint_spans(lengths, 8, 56, np.random.default_rng(0))  # 4 + 42 + 9


def test_a_checkpoints_semantic_scan_reads_transformers_own_attention():
    """``scan_semantic_checkpoint`` on a transformers model (4 query heads over 2 KV heads): the
    attention on a previous class token and on another previous token are transformers' own."""
    torch = pytest.importorskip("torch")
    from ropebook import tiny_models

    checkpoint = tiny_models.tiny_random_model("llama", seed=5)
    windows = np.random.default_rng(1).integers(3, 20, (4, 16))
    windows[:, 0] = 1
    class_ids = np.arange(3, 8)
    scan = semantic.scan_semantic_checkpoint(checkpoint, windows, class_ids, max_distance=4)
    checkpoint.set_attn_implementation("eager")
    with torch.no_grad():
        attentions = checkpoint(torch.as_tensor(windows), output_attentions=True).attentions
    mask = np.isin(windows, class_ids)
    for layer, attention in enumerate(attentions):
        on, off, (n_on, n_off) = semantic.previous_class_attention(attention.numpy(), mask)
        np.testing.assert_allclose(scan.prev_on[layer], on / n_on, rtol=1e-5)
        np.testing.assert_allclose(scan.prev_off[layer], off / n_off, rtol=1e-5)
        np.testing.assert_allclose(scan.bos_mass[layer], attention.numpy()[:, :, 1:, 0].mean((0, 2)), rtol=1e-5)  # fmt: skip
    assert scan.n_windows == 4 and scan.seq_len == 16 and scan.q_norms.shape == (2, 4, 8)


def test_worst_case_alpha_with_one_key_is_one():
    assert semantic.worst_case_alpha(0.3, 0, 0.0, 1.0, 2.0, 2.0) == 1.0


def test_best_move_matches_brute_force():
    rng = np.random.default_rng(6)
    for _ in range(5):
        q, keys = rng.normal(size=2), rng.normal(size=(30, 2))
        exclude = {int(rng.integers(29))}
        k, k2, best = semantic.theory._best_move(0.37, q, keys, 29, exclude)
        brute = max(
            (semantic.rope_scores_2d(0.37, q, np.repeat(keys[a][None], 30, 0))[b], a, b)
            for a in range(29)
            for b in range(29)
            if a != b and a not in exclude and b not in exclude
        )
        assert best == pytest.approx(brute[0]) and (k, k2) == brute[1:]


def test_rotated_chunk_terms_match_rope():
    import jax.numpy as jnp

    from ropebook import rope

    rng = np.random.default_rng(7)
    q, k = rng.normal(size=8), rng.normal(size=8)
    positions = np.array([0, 3, 50])
    terms = semantic.rotated_chunk_terms(q, k, rope.frequencies(8), positions)
    for row, i in zip(terms, positions, strict=True):
        q_rot = np.asarray(rope.apply_rope(jnp.asarray(q[None, None]), jnp.array([i])), np.float64)
        k_rot = np.asarray(rope.apply_rope(jnp.asarray(k[None, None]), jnp.array([0])), np.float64)
        bos, _ = semantic.sink_chunk_contributions(
            np.concatenate([k_rot, q_rot])[None], np.concatenate([k_rot, k_rot])[None]
        )
        np.testing.assert_allclose(row, bos[0, 0, 0], atol=1e-5)


# ---------------------------------------------------------------- the chapter's analyses


def test_interval_text_and_verdicts():
    estimate = semantic.interval_text([1.0, 2.0, np.nan, 3.0])
    half = 4.302652729911275 / math.sqrt(3)  # t_{0.975, 2} * sd / sqrt(n), sd = 1
    assert estimate.mean == pytest.approx(2.0)
    assert (estimate.low, estimate.high) == pytest.approx((2 - half, 2 + half))
    assert estimate.text == "95% CI [-0.48, 4.48] over 3 seeds"
    assert semantic.interval_text([5.0]).text == "1 sample: 5.00, no interval"
    assert semantic.interval_text([np.nan]).text == "no samples"
    one_seed = semantic.seed_or_window_interval([9.0], [1.0, 3.0], n_seeds=1)
    assert one_seed.mean == 2.0 and one_seed.text.endswith("over 2 windows (1 seed)")
    assert semantic.seed_or_window_interval([1.0, 3.0], [7.0], n_seeds=2).text.endswith("2 seeds")
    assert semantic.interval_verdict(0.2, 0.3, 0.1) == "held"
    assert semantic.interval_verdict(0.0, 0.05, 0.1) == "not held"
    assert semantic.interval_verdict(0.05, 0.2, 0.1) == "cannot decide"
    assert semantic.interval_verdict(0.2, 0.2, 0.1) == "cannot decide"  # one sample: open
    assert semantic.interval_verdict(np.nan, np.nan, 0.1) == "not testable here"


def test_check_softmax_bound_counts_every_non_maximal_entry():
    check = semantic.check_softmax_bound(np.random.default_rng(0), 50)
    replay = np.random.default_rng(0)
    lengths = []
    for _ in range(50):
        lengths.append(int(replay.integers(2, 65)))
        replay.normal(0, 3, size=lengths[-1])
    # continuous draws have no ties: every entry but the maximum has a competitor
    assert check.checked == sum(n - 1 for n in lengths)
    assert check.violations == 0 and 0 < check.worst_ratio < 1
    assert show.softmax_bound_text(check).startswith(
        f"{check.checked:,} non-maximal entries in 50 vectors: 0 above"
    )


def test_rotation_gaps_are_dense_only_for_irrational_rotations():
    curves = semantic.rotation_gaps([1.0, 0.1], n_max=10_000, rational=(3, 17))
    assert curves.n_max == 10_000 and curves.rational_label == "rational 2π·3/17"
    assert curves.final["rational 2π·3/17"] == pytest.approx(2 * np.pi / 17, abs=1e-9)
    assert curves.largest_irrational_gap < 0.01 and curves.dense
    n_lengths = len({r["N (tokens)"] for r in curves.rows})
    assert len(curves.rows) == 3 * n_lengths
    # g = 0.01 has covered only 1 rad of the circle after 100 tokens
    short = semantic.rotation_gaps([0.01], n_max=100)
    assert short.final["g = 0.01"] == pytest.approx(2 * np.pi - 1.0) and not short.dense
    assert show.gap_table(short)[0] == {
        "rotation": "g = 0.01", "largest gap at N = 100 (rad)": short.final["g = 0.01"]
    }  # fmt: skip


def test_breaking_table_matches_the_closed_form():
    from ropebook import rope

    gemma = 10_000 ** (-2 * 118 / 256)
    table = semantic.breaking_table(rope.frequencies(16), 64, reference=("Gemma", gemma, 8192))
    assert [r["N* (bisection)"] for r in table.rows] == [4, 10, 32, 100, 315, 994, 3142, 9935,
                                                          15299]  # fmt: skip
    assert table.exact and table.reference_n_star == 15299
    assert table.slope == pytest.approx(-1, abs=0.05)
    assert table.rows[2]["N* / context"] == 0.5
    assert table.rows[-1]["N* / context"] == pytest.approx(15299 / 8192)


def test_best_head_curves_follow_the_theorem_and_the_unrotated_closed_form():
    budget = 8.0
    curves = semantic.best_head_curves([G], budget, n_phi=32)
    unrotated = [r for r in curves.rows if r["frequency"] == "g = 0 (no rotation)"]
    for r in unrotated:  # best head: target at +budget, every other key at -budget
        expected = 1 / (1 + r["N (tokens)"] * np.exp(-2 * budget))
        assert r["best worst-case α"] == pytest.approx(expected, rel=1e-9)
    rotated = [r for r in curves.rows if r["frequency"] == f"g = {G:.3g}"]
    first = curves.first_below[f"g = {G:.3g}"]
    assert N_STAR // 2 < first <= min(r["N (tokens)"] for r in rotated if r["N (tokens)"] > N_STAR)
    assert all(r["best worst-case α"] <= 0.5 for r in rotated if r["N (tokens)"] > N_STAR)
    chart = show.best_head_chart(curves).to_dict()
    assert chart["title"] == "Thm. 6.1: best worst-case attention, scores bounded by 8"


def test_family_check_is_broken_above_and_robust_below():
    family = semantic.family_check([G], 8.0, n_phi=64, first_below={f"g = {G:.3g}": 20})
    assert family.broken_above and family.robust_below
    row = family.rows[0]
    assert row["N*"] == N_STAR and row["first N, α < ½"] == 20
    assert row["α at N*+1"] <= 0.5 < 0.99 < row["α at N*/2"]


def test_attack_sweep_and_its_verdict():
    rows = semantic.attack_sweep([G], [0.5, 2.0], n_heads=3, seed=0)
    assert [(r["head"], r["N"]) for r in rows] == [
        ("previous", 12), ("previous", 46), ("robust", 12), ("robust", 46)
    ]  # fmt: skip
    by = {(r["head"], r["N"]): r for r in rows}
    assert by["robust", 12]["success"] == 0.0 and by["robust", 46]["success"] == 1.0
    assert by["previous", 46]["success"] == 1.0
    assert semantic.attacks_as_proved(rows)
    failed = [*rows, {**by["robust", 46], "success": 2 / 3}]
    assert not semantic.attacks_as_proved(failed)
    robust_broken = [*rows, {**by["robust", 12], "success": 1 / 3}]
    assert not semantic.attacks_as_proved(robust_broken)
    table = show.attack_table(rows, ratios=(2.0,))
    assert len(table) == 2 and "ratio" not in table[0] and table[0]["N / N*"] == 2.0


def test_swap_figure_draws_both_panels():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    q, keys, target = semantic.semantic_head_2d(np.random.default_rng(0), 46, G, aim="robust")
    show.swap_figure(semantic.swap_attack(G, q, keys, target), G)
    fig = plt.gcf()
    assert len(fig.axes) == 2 and "N = 46" in fig._suptitle.get_text()
    plt.close(fig)


def _scan(prev_on, prev_off, position_r2, bos_mass, bos_chunks, rest_chunks, n_windows=3):
    """A hand-made SemanticScan: per-window arrays filled from the means plus 0, +-1 offsets."""
    lh = np.shape(position_r2)
    k = np.shape(bos_chunks)[-1]
    spread = np.array([-1.0, 0.0, 1.0])[:n_windows, None, None]
    norms = np.broadcast_to(np.arange(1.0, k + 1), (*lh, k)).copy()
    return semantic.SemanticScan(
        prev_on=np.asarray(prev_on, float), prev_off=np.asarray(prev_off, float),
        distance_lift=np.zeros(lh), position_r2=np.asarray(position_r2, float),
        bos_mass=np.asarray(bos_mass, float), bos_chunks=np.asarray(bos_chunks, float),
        rest_chunks=np.asarray(rest_chunks, float), q_norms=norms, k_norms=norms[..., ::-1],
        window_prev_lift=np.asarray(prev_on) - np.asarray(prev_off) + 0.01 * spread,
        window_bos_mass=np.broadcast_to(bos_mass, (n_windows, *lh)).copy(),
        window_bos_preference=np.broadcast_to(
            np.asarray(bos_chunks) - np.asarray(rest_chunks), (n_windows, *lh, k)).copy(),
        window_q_norms=np.broadcast_to(norms, (n_windows, *lh, k)).copy(),
        window_k_norms=np.broadcast_to(norms[..., ::-1], (n_windows, *lh, k)).copy(),
        n_class_prev=5, n_windows=n_windows, seq_len=8,
    )  # fmt: skip


def _two_layer_scan(top_lift=(1, 0)):
    prev_on = np.full((2, 2), 0.2)
    prev_on[top_lift] = 0.9
    bos_chunks = np.zeros((2, 2, 4))
    bos_chunks[0, 1] = [-1.0, 0.0, 2.0, 1.0]  # the BOS-heavy head: most preference slow
    return _scan(
        prev_on=prev_on, prev_off=np.full((2, 2), 0.2), position_r2=[[0.01, 0.9], [0.5, 0.2]],
        bos_mass=[[0.1, 0.8], [0.2, 0.3]], bos_chunks=bos_chunks, rest_chunks=np.zeros((2, 2, 4)),
    )  # fmt: skip


def test_content_head_skips_layer_zero():
    scan = _two_layer_scan()
    assert scan.content_head() == (1, 1)  # (0, 0) has the lowest R² but sees only embeddings
    one_layer = _scan([[0.1, 0.1]], [[0.1, 0.1]], [[0.4, 0.3]], [[0, 0]], np.zeros((1, 2, 2)),
                      np.zeros((1, 2, 2)))  # fmt: skip
    assert one_layer.content_head() == (0, 1)


def test_apostrophe_bands_and_content_heads_on_a_hand_made_scan():
    scan = _two_layer_scan()
    heads = semantic.apostrophe_heads({0: _two_layer_scan((0, 1))}, {0: scan})
    assert heads.heads == {0: (0, 1)}  # chosen on the selection scan, not the measuring one
    assert heads.lift_rows[0]["lift, selection"] == pytest.approx(0.7)
    assert heads.lift_rows[0]["lift, measuring"] == pytest.approx(0.0)
    assert heads.lift.text.endswith("over 3 windows (1 seed)") and heads.lift.mean == 0.0
    rows, low_keys, excess = semantic.apostrophe_bands({0: scan}, {0: (1, 0)})
    # chunk norms 1, 2, 3, 4 (queries) and 4, 3, 2, 1 (keys): slowest quarter is the last chunk
    keys, queries = rows
    assert keys["slowest ¼"] == pytest.approx(0.1) and keys["fastest ¼"] == pytest.approx(0.4)
    assert queries["slowest ¼"] == pytest.approx(0.4) and queries["layer, fastest ¼"] == 0.1
    assert low_keys.mean == pytest.approx(0.1)
    assert excess.mean == pytest.approx(0.0)  # every head of the layer has the same keys
    content = semantic.content_heads({0: scan})
    assert content.heads == {0: (1, 1)} and content.rows[0]["query slowest ¼"] == 0.4


def _keys(scan, head, norms):
    """Set one head's key chunk norms, in the mean and in every window."""
    scan.k_norms, scan.window_k_norms = scan.k_norms.copy(), scan.window_k_norms.copy()
    scan.k_norms[head], scan.window_k_norms[:, *head] = norms, norms


def test_the_apostrophe_heads_keys_are_read_against_their_layer():
    """A slow-heavy key profile is no finding when the layer's other heads are as slow-heavy:
    the claim reads the head's slowest-quarter share minus theirs, both ways."""
    scan = _two_layer_scan()
    _keys(scan, (1, 0), [1.0, 1.0, 1.0, 7.0])  # a share of 0.7 against the other head's 0.1
    _, low_keys, excess = semantic.apostrophe_bands({0: scan}, {0: (1, 0)})
    assert low_keys.mean == pytest.approx(0.7) and excess.mean == pytest.approx(0.6)
    _keys(scan, (1, 1), [0.0, 0.0, 0.0, 9.0])  # now the other head is slower still
    _, low_keys, excess = semantic.apostrophe_bands({0: scan}, {0: (1, 0)})
    assert low_keys.mean == pytest.approx(0.7)  # above a flat quarter: the old rule's held
    assert excess.mean == pytest.approx(-0.3)  # below its layer: the claim's excess says no


def test_slow_half_share():
    np.testing.assert_allclose(semantic.slow_half_share([1.0, -1.0, 2.0, 1.0]), 0.75)
    np.testing.assert_allclose(semantic.slow_half_share([[-1.0, -2.0], [0.0, 3.0]]), [0.0, 1.0])


def test_sink_heads_find_the_bos_chunks():
    scans = {("rope", 0): _two_layer_scan(), ("nope", 0): _two_layer_scan()}
    g = np.array([1.0, 0.1, 0.01, 0.001])
    sinks = semantic.sink_heads(scans, scans, {("rope", 0): g, ("nope", 0): np.zeros(4)})
    assert sinks.heads == {("rope", 0): (0, 1), ("nope", 0): (0, 1)}
    rope_row, nope_row = sinks.rows
    assert rope_row["BOS − other score"] == pytest.approx(2.0)
    assert rope_row["slow-half share"] == pytest.approx(1.0)
    top = sinks.chunk_rows[0]
    assert top["top chunk"] == 2 and top["N* = ⌈π/g⌉"] == 315
    assert top["q·k to BOS"] == pytest.approx(2.0 * np.sqrt(8))  # undo the 1/sqrt(head_dim)
    assert sinks.chunk_rows[1]["N* = ⌈π/g⌉"] == "never (not rotated)"
    assert len(sinks.bars) == 8 and sinks.bars[4]["g_k"] == "0 (not rotated)"
    share = semantic.sink_slow_share(sinks, scans, "rope", [0])
    assert share.mean == pytest.approx(1.0) and share.text.endswith("over 3 windows (1 seed)")
    spec = show.sink_chart(sinks, seed=0).to_dict()
    assert spec["title"] == "Which chunks make the sink head prefer BOS"


def _profile(n_buckets=3, t=12, k=2, windows=2):
    shape = (1, 1, n_buckets)
    margin = np.zeros((windows, *shape))
    margin[:, 0, 0, 0] = [2.0, 0.0]
    margin[:, 0, 0, -1] = [1.0, 5.0]
    return semantic.LengthProfile(
        bos_mass=np.full(shape, 0.5), prev_on=np.array([[[1.0, 2.0, 3.0]]])[..., :n_buckets],
        prev_off=np.array([[[4.0, 1.0, 1.0]]])[..., :n_buckets],
        n_on=np.array([2.0, 4.0, 0.0])[:n_buckets], n_off=np.array([8.0, 2.0, 2.0])[:n_buckets],
        bos_margin=margin.mean(0), bos_chunks=np.zeros((1, 1, t - 1, k)),
        rest_chunks=np.zeros((1, 1, t - 1, k)), window_bos_mass=np.zeros((windows, *shape)),
        window_bos_margin=margin, q_mean=np.zeros((1, 1, 2 * k)), k_bos=np.zeros((1, 1, 2 * k)),
        bucket=t // n_buckets, seq_len=t,
    )  # fmt: skip


def test_beyond_context_lift_and_bos_retention():
    prof = _profile()
    lift, n_on = semantic.beyond_context_lift(prof, 0, 0)
    assert n_on == 4 and lift == pytest.approx(5.0 / 4 - 2.0 / 4)  # buckets 1 and 2 only
    one = _profile(n_buckets=1)
    assert semantic.beyond_context_lift(one, 0, 0) == (pytest.approx(1 / 2 - 4 / 8), 2)
    none = _profile()
    none.n_on[:] = 0
    assert np.isnan(semantic.beyond_context_lift(none, 0, 0)[0])
    np.testing.assert_allclose(semantic.bos_retention(prof, 0, 0), [0.5, np.nan])
    pooled = semantic.bos_retentions({("a", 0): prof, ("a", 1): prof}, {("a", 0): (0, 0),
                                                                       ("a", 1): (0, 0)})  # fmt: skip
    assert pooled["a"].shape == (4,)
    difference = semantic.retention_difference({"x": np.array([1.0, 2.0, 9.0]),
                                                "y": np.array([0.5, 1.0])}, "x", "y")  # fmt: skip
    assert difference.mean == pytest.approx(0.75) and "paired" in difference.text
    assert semantic.retention_difference({"x": np.ones(2)}, "x", "y").text == "models missing"


def test_the_retention_difference_counts_seeds_not_windows():
    """Windows are averaged within their seed; the interval runs over seeds (over windows, said
    so, only when there is one seed)."""
    profiles, sink = {}, {}
    for name, scale in (("x", 1.0), ("y", 0.5)):
        for seed in (0, 1, 2):
            p = _profile()
            p.window_bos_margin = np.zeros((3, 1, 1, 3))  # three windows, all with a margin
            p.window_bos_margin[:, 0, 0, 0] = [2.0, 1.0, 4.0]
            p.window_bos_margin[:, 0, 0, -1] = np.array([1.0, 0.7, 3.0]) * scale * (1 + 0.1 * seed)
            profiles[name, seed], sink[name, seed] = p, (0, 0)
    one = semantic.seed_retention_difference(profiles, sink, "x", "y")
    per_seed = [
        np.nanmean(semantic.bos_retention(profiles["x", s], 0, 0))
        - np.nanmean(semantic.bos_retention(profiles["y", s], 0, 0))
        for s in (0, 1, 2)
    ]
    assert one.n == 3 and one.mean == pytest.approx(np.mean(per_seed)) and "3 seeds" in one.text
    single = {k: v for k, v in profiles.items() if k[1] == 0}
    by_window = semantic.seed_retention_difference(single, sink, "x", "y")
    assert by_window.text.endswith("(1 seed)") and by_window.n == 3
    missing = semantic.seed_retention_difference(single, sink, "x", "z")
    assert missing.text == "models missing"


def test_margin_and_length_rows():
    prof = _profile()
    heads = {("rope", 0): (0, 0)}
    margins = show.margin_rows({("rope", 0): prof}, heads, heads)
    assert [r["query block start (tokens)"] for r in margins] == [0, 4, 8]
    assert margins[0]["BOS margin"] == 1.0 and margins[2]["apostrophe lift"] is None  # 0 seen
    lengths = show.length_rows({("rope", 0, 8): prof}, heads, heads)
    assert lengths[0]["BOS margin, last block"] == 3.0 and lengths[0]["apostrophes seen"] == 4
    assert show.length_table(lengths)[0]["× context"] == 8
    margin_spec = show.margin_chart(margins, 4, 8).to_dict()
    assert margin_spec["title"] == "Sink and apostrophe heads on windows of 8× the training length"
    assert len(margin_spec["vconcat"]) == 3
    assert len(show.length_chart(lengths).to_dict()["hconcat"]) == 3


def test_rotation_prediction_is_exact_for_a_pure_rotation():
    rng = np.random.default_rng(8)
    q, k = rng.normal(size=8), rng.normal(size=8)
    g = np.array([0.5, 0.1, 0.02, 0.0])
    prof = _profile(n_buckets=4, t=40, k=4)
    positions = np.arange(1, 40)
    prof.q_mean[0, 0], prof.k_bos[0, 0] = q, k
    prof.bos_chunks[0, 0] = semantic.rotated_chunk_terms(q, k, g, positions)
    prediction = semantic.rotation_prediction(prof, 0, 0, g)
    np.testing.assert_allclose(prediction.correlation[:3], 1.0)
    assert np.isnan(prediction.correlation[3])  # an unrotated chunk is flat: no correlation
    assert prediction.mean_correlation == pytest.approx(1.0)
    spec = show.rotation_chart(prediction, title="t").to_dict()
    rules = spec["layer"][1]
    stars = spec["datasets"][rules["data"]["name"]]
    assert [s["N*"] for s in stars] == [7, 32]  # ceil(pi / g) inside the window; not 158


def test_densest_window_and_raw_score_table():
    doc = np.array([5, 1, 6, 7, 1, 1, 8, 9])
    shown = semantic.densest_window(doc, [1], 4, lambda ids: f"t{ids[0]}")
    # three-token stretches hold 1, 1, 1, 2, 2, 1 class tokens: the first densest starts at 3
    assert shown.tokens.tolist() == [[0, 7, 1, 1]] and shown.tokens.dtype == np.int32
    assert shown.labels == ["BOS", "t7", "t1", "t1"]
    assert shown.is_class.tolist() == [False, False, True, True]
    scores = np.array([[0.0, np.nan, np.nan, np.nan], [1.0, 2.0, np.nan, np.nan],
                       [3.0, 4.0, 5.0, np.nan], [6.0, 7.0, 8.0, 9.0]])  # fmt: skip
    paper, ours = show.raw_score_table(scores, shown.is_class, "ours")
    assert paper["previous apostrophe"] == "≈ 7"
    # only query 3 follows an apostrophe (key 2, score 8); other keys 2, 4, 5, 7 and 9
    assert ours == {"head": "ours", "BOS key": "3.33", "previous apostrophe": "8.00",
                    "other keys": "2.00 to 9.00"}  # fmt: skip


def test_apostrophe_summary():
    text = show.apostrophe_summary([np.array([1, 2, 2]), np.array([2, 3])], np.array([2]),
                                       lambda ids: "'s")  # fmt: skip
    assert (
        text
        == '2 test works, 5 tokens; 1 token ids contain an apostrophe, 60.00% of test tokens, e.g. [("\'s", 3)]'
    )


def _plot_width(spec: dict) -> int:
    """Summed width of a chart's plotting areas side by side (axes and legends come on top)."""
    if "hconcat" in spec:
        return sum(_plot_width(s) for s in spec["hconcat"])
    if "vconcat" in spec:
        return max(_plot_width(s) for s in spec["vconcat"])
    if "layer" in spec and "width" not in spec:
        return max(_plot_width(s) for s in spec["layer"])
    if "column" in spec.get("encoding", {}):  # one panel of ``width`` per column value
        field = spec["encoding"]["column"]["field"]
        values = {r[field] for r in spec["datasets"][spec["data"]["name"]]}
        return spec["width"] * len(values)
    return spec["width"]


def test_charts_fit_the_page():
    """Every chart's panels together leave room for axes and legends within ~680 px."""
    prof = _profile()
    heads = {("rope", 0): (0, 0)}
    scans = {(name, 0): _two_layer_scan() for name in ("rope", "p-rope-0.75", "nope")}
    sinks = semantic.sink_heads(scans, scans, {key: np.ones(4) for key in scans})
    prediction = semantic.rotation_prediction(_profile(n_buckets=4, t=40, k=4), 0, 0, np.ones(4))
    charts = [
        show.gap_chart(semantic.rotation_gaps([0.1], n_max=100)),
        show.best_head_chart(semantic.best_head_curves([1.0], 8.0, n_phi=4)),
        show.attack_chart(semantic.attack_sweep([G], [2.0], n_heads=1, seed=0)),
        show.head_scatter({0: _two_layer_scan()}, title="t"),
        show.sink_chart(sinks, seed=0),
        show.margin_chart(show.margin_rows({("rope", 0): prof}, heads, heads), 4, 8),
        show.length_chart(show.length_rows({("rope", 0, 8): prof}, heads, heads)),
        show.rotation_chart(prediction, title="t"),
    ]
    widths = [_plot_width(c.to_dict()) for c in charts]
    assert len(widths) == 8 and max(widths) <= 500, widths


def test_model_runs_share_windows_and_head_figure_returns_masked_scores():
    import types

    import jax
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ropebook import model

    config = model.ModelConfig(vocab_size=16, n_layers=1, n_heads=2, d_model=16, d_ff=32,
                               context=8)  # fmt: skip
    tiny = types.SimpleNamespace(params=model.init_params(jax.random.PRNGKey(0), config),
                                 config=config)  # fmt: skip
    docs = [np.arange(1, 40) % 15 + 1]
    profiles = semantic.length_profiles({("a", 0): tiny, ("b", 0): tiny}, docs, [3],
                                        lengths=[1, 2], n_windows=2, seed=0)  # fmt: skip
    assert list(profiles) == [("a", 0, 1), ("a", 0, 2), ("b", 0, 1), ("b", 0, 2)]
    assert profiles["a", 0, 2].seq_len == 16 and profiles["a", 0, 2].bos_margin.shape == (1, 2, 2)
    np.testing.assert_array_equal(profiles["a", 0, 2].bos_margin, profiles["b", 0, 2].bos_margin)
    windows = semantic.bos_windows(docs, 8, 2, np.random.default_rng(0))
    scans = semantic.scan_models({"a": tiny}, windows, [3], max_distance=4)
    assert scans["a"].n_windows == 2 and scans["a"].position_r2.shape == (1, 2)
    lift = semantic.previous_lift(tiny.params, config, windows, [3])  # the fast path, same sums
    np.testing.assert_array_equal(lift, scans["a"].prev_lift)
    assert np.isfinite(lift).all() and np.abs(lift).max() > 0
    shown = semantic.densest_window(docs[0], [3], 6, str)
    scores = show.head_figure(tiny, shown, 0, 1, np.ones(4), title="t")
    plt.close("all")
    maps = semantic.head_maps(tiny, shown, 0, 1)
    np.testing.assert_array_equal(maps.scores, scores)  # the figure draws what head_maps read
    assert maps.probs.shape == (6, 6) and maps.q_norms.shape == maps.k_norms.shape == (4, 6)
    _, internals = model.forward(tiny.params, shown.tokens, config, return_internals=True)
    expected = np.asarray(internals[0]["scores"][0, 1])
    lower = np.tril(np.ones((6, 6), bool))
    np.testing.assert_allclose(scores[lower], expected[lower], rtol=1e-6)
    assert np.isnan(scores[~lower]).all()


def test_a_claim_read_on_several_models_combines_the_parts_read():
    above, across = semantic.Estimate(0.3, 0.2, 0.4, "", 3), semantic.Estimate(0.1, 0.0, 0.2, "", 3)
    assert semantic.parts_verdict([above, None], 0.1) == "held"  # the checkpoint not read
    assert semantic.parts_verdict([across, above], 0.1) == "partly"
    assert semantic.parts_verdict([None, None], 0.1) == "not testable here"


def test_the_content_head_is_read_against_its_layers_other_heads():
    # every head of the hand-made scan has the same norms: a share of 0.4 is no excess at all
    content = semantic.content_heads({0: _two_layer_scan()})
    assert content.rows[0]["layer's other heads"] == pytest.approx(0.4)
    assert content.query_excess.mean == pytest.approx(0.0)
    scan = _two_layer_scan()
    scan.q_norms[1, 1] = [1.0, 1.0, 1.0, 7.0]  # the content head (1, 1): 0.7 in its slowest chunk
    scan.window_q_norms[:, 1, 1] = [1.0, 1.0, 1.0, 7.0]
    scan.window_q_norms[1, 1, 1] = [1.0, 1.0, 1.0, 9.0]  # windows vary: a real interval
    content = semantic.content_heads({0: scan})
    assert content.rows[0]["query slowest ¼"] - content.rows[0]["layer's other heads"] == (
        pytest.approx(0.3)
    )
    assert semantic.parts_verdict([content.query_excess], 0.0) == "held"
    scan.window_q_norms[:, 1, 1] = [[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.1], [1, 1, 1, 0.9]]
    assert semantic.parts_verdict([semantic.content_heads({0: scan}).query_excess], 0.0) == (
        "not held"
    )


def test_the_apostrophe_head_is_held_only_where_its_controls_miss_the_line():
    """semantic_channels.apostrophe_head: the RoPE lift above the line is held only if NoPE's
    and the untrained model's best-head lifts lie wholly below it; a control above it makes the
    book's part uninformative here, an open one cannot decide; a RoPE lift below the line is
    not held whatever the controls do; the checkpoint's part (no control) combines beside."""
    est = semantic.Estimate
    above, below = est(0.5, 0.4, 0.6, "", 3), est(0.02, 0.0, 0.05, "", 3)
    across = est(0.1, 0.05, 0.2, "", 3)

    def verdict(rope, controls, real=None):
        return semantic.controlled_parts_verdict(rope, real, controls, 0.1)

    assert verdict(above, [below, below]) == "held"
    assert verdict(above, [above, below]) == "uninformative here"  # NoPE's head clears it too
    assert verdict(above, [below, across]) == "cannot decide"
    assert verdict(below, [above, above]) == "not held"
    assert verdict(across, [below, below]) == "cannot decide"
    assert verdict(above, [below, below], real=below) == "partly"
    assert verdict(above, [below, below], real=above) == "held"
    assert semantic.clears(above, 0.1) and not semantic.clears(across, 0.1)
    assert not semantic.clears(None, 0.1)
    assert semantic.gated_verdict(above, head="not held") == "not testable here"  # no head
    assert semantic.gated_verdict(None, head="held") == "not testable here"
    assert semantic.gated_verdict(above, head="held") == "held"  # its excess above 0
    assert semantic.gated_verdict(est(-0.1, -0.2, -0.05, "", 3), head="held") == "not held"
    # whether there is a head is open: so is what is read on it, whatever the reading says
    assert semantic.gated_verdict(above, head="cannot decide") == "cannot decide"
    head = semantic.interval_verdict(across.low, across.high, 0.1)  # the chapter's gate
    assert semantic.gated_verdict(above, head=head) == "cannot decide"
    # what would decide it says which part is open
    text = show.apostrophe_to_decide(above, {"nope": above, "untrained": below}, 0.1, "seeds")
    assert text.startswith("a line the controls miss: nope's best head lifts 0.500")
    assert "untrained" not in text
    open_control = show.apostrophe_to_decide(above, {"nope": across, "untrained": below}, 0.1,
                                             "seeds")  # fmt: skip
    assert open_control.startswith("nope: ")


def test_apostrophe_controls_select_and_measure_nope_and_the_untrained_twin():
    """The controls go through the RoPE head's own selection and measurement: NoPE's from the
    scans made, the untrained twin's (the initial parameters of the same seed) scanned anew."""
    import types

    import jax

    from ropebook import model

    config = model.ModelConfig(vocab_size=16, n_layers=1, n_heads=2, d_model=16, d_ff=32,
                               context=8)  # fmt: skip
    twin = semantic.Untrained(config, 3)
    np.testing.assert_array_equal(
        jax.tree.leaves(twin.params)[0],
        jax.tree.leaves(model.init_params(jax.random.key(3), config))[0],
    )
    trained = types.SimpleNamespace(params=twin.params, config=config, seed=3)
    docs = [np.arange(1, 40) % 15 + 1]
    windows = [semantic.bos_windows(docs, 8, 2, np.random.default_rng(i)) for i in (0, 1)]
    models = {("rope", 3): trained, ("nope", 3): trained}
    selected, measured = (semantic.scan_models(models, w, [3], max_distance=4) for w in windows)
    controls = semantic.apostrophe_controls(models, selected, measured, tuple(windows), [3],
                                            max_distance=4)  # fmt: skip
    assert list(controls) == ["nope", "untrained rope"]
    # here every model is the untrained twin, so all three read the same lift
    rope = semantic.apostrophe_heads({3: selected["rope", 3]}, {3: measured["rope", 3]})
    assert controls["untrained rope"].heads == rope.heads == controls["nope"].heads
    assert controls["untrained rope"].lift.mean == pytest.approx(rope.lift.mean, abs=1e-6)


def test_the_frequency_claims_text_says_whose_excess_decides():
    from ropebook.analysis import interval_text

    low_key, kept, build = (interval_text(v) for v in ([0.4, 0.5], [0.1, 0.2, 0.3], [0.0, 0.2]))
    alone = show.low_freq_measured(low_key, 0.25, build, None)
    assert alone.startswith("slowest-quarter share of key norm 0.45 (flat 0.25), +0.10 95% CI")
    assert "kept study" not in alone and "beside" not in alone
    decided = show.low_freq_measured(low_key, 0.25, kept, None, build, 2)
    assert "+0.20 95% CI [-0.05, 0.45] over 3 seeds above its layer's other heads" in decided
    assert "(the kept study's 3 seeds)" in decided
    assert decided.endswith("this build's 2 seed(s), beside: +0.10 " + build.text)


def test_the_apostrophe_head_record_rests_on_the_kept_lifts_with_the_build_beside():
    est = semantic.Estimate
    above, below = est(0.5, 0.4, 0.6, "[0.4, 0.6]", 16), est(0.0, -0.1, 0.05, "[-0.1, 0.05]", 16)
    kept = {"rope": above, "nope": below, "untrained rope": below}
    build = {"rope": est(0.3, 0.0, 0.6, "b", 3)} | {n: below for n in ("nope", "untrained rope")}
    decided = show.apostrophe_head_record(kept, None, 0.1, build, 3, "the kept study's 16")
    assert decided["evidence"] == "held" and decided["seeds"] == 16
    assert decided["basis"] == "the kept study's 16"
    assert decided["measured"].endswith(
        "this build's 3 seed(s), beside: rope 0.300 b; "
        "nope 0.000 [-0.1, 0.05]; untrained rope 0.000 [-0.1, 0.05]"
    )
    alone = show.apostrophe_head_record(build, None, 0.1, None, 3, "this build's seeds (why)")
    assert alone["evidence"] == "cannot decide" and alone["seeds"] == 3 and alone["basis"] is None
    assert "beside" not in alone["measured"]
    assert alone["to_decide"] == show.apostrophe_to_decide(
        build["rope"], {n: below for n in ("nope", "untrained rope")}, 0.1, "seeds"
    )
