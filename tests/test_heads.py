"""Positional heads: the Def. 5.1 detector, the Thm. 5.3 construction and the Prop. 5.2 bound."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from ropebook import rope
from ropebook.analysis import heads
from ropebook.present import heads as show
from ropebook.proofs import positional_heads as proofs

HEAD_DIM = 16
GRID = rope.frequencies(HEAD_DIM)
FASTEST = np.eye(HEAD_DIM // 2)[0]  # psi on the fastest plane only (the paper's d = 2 proof)
SPREAD = np.ones(HEAD_DIM // 2)  # psi spread evenly over every plane


def causal_uniform(t: int) -> np.ndarray:
    mask = np.tril(np.ones((t, t)))
    return mask / mask.sum(-1, keepdims=True)


def shifted(t: int) -> np.ndarray:
    """All attention on key i-1 (row 0 has only key 0)."""
    a = np.zeros((t, t))
    a[0, 0] = 1
    a[np.arange(1, t), np.arange(t - 1)] = 1
    return a


# ---------------------------------------------------------------- detector (Def. 5.1)


def test_identity_is_diagonal():
    a = np.eye(12)
    assert heads.is_positional(a, "diagonal", 1e-9)
    assert not heads.is_positional(a, "previous", 0.5)
    assert heads.epsilon_achieved(a, "diagonal") == 0.0
    assert heads.positional_score(a, "diagonal") == 1.0
    assert heads.classify(a, 0.1) == "diagonal"


def test_subdiagonal_is_previous_token():
    a = shifted(12)
    assert heads.is_positional(a, "previous", 1e-9)
    assert not heads.is_positional(a, "diagonal", 0.5)
    assert heads.positional_score(a, "diagonal") == 0.0
    assert heads.classify(a, 0.1) == "previous"


def test_uniform_is_neither():
    a = causal_uniform(12)
    assert heads.classify(a, 0.5) == "neither"
    # Row 1 puts 1/2 on each key: the best eps either kind reaches is exactly 1/2 (row 1).
    assert heads.epsilon_achieved(a, "diagonal") == pytest.approx(1 - 1 / 12)
    assert heads.epsilon_achieved(a, "previous") == pytest.approx(1 - 1 / 12)
    rows = np.arange(2, 13)
    assert heads.positional_score(a, "diagonal") == pytest.approx(np.mean(1 / rows))


def test_detector_batches_and_size():
    a = np.stack([np.eye(8), causal_uniform(8)])
    assert not heads.is_positional(a, "diagonal", 0.1)  # every matrix must pass
    assert heads.is_positional(a[:1], "diagonal", 0.1)
    # Over size N = 2 the uniform matrix has alpha_{1,1} = 1/2: diagonal for eps > 1/2 only.
    assert heads.epsilon_achieved(causal_uniform(8), "diagonal", n=2) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="valid kinds"):
        heads.target_weights(a, "next")
    with pytest.raises(ValueError, match="T, T"):
        heads.target_weights(np.ones((3, 4)), "diagonal")


def test_repeat_counts():
    tokens = np.array([0, 5, 5, 7, 5])
    assert heads.repeat_counts(tokens, "diagonal").tolist() == [1, 2, 1, 3]
    assert heads.repeat_counts(tokens, "previous").tolist() == [1, 2, 2, 1]


# ---------------------------------------------------------------- construction (Thm. 5.3)


@pytest.mark.parametrize("kind", heads.KINDS)
@pytest.mark.parametrize("weights", [FASTEST, SPREAD], ids=["fastest", "spread"])
@pytest.mark.parametrize("eps", [0.1, 1e-3])
def test_closed_form_threshold_reaches_epsilon(kind, weights, eps):
    n = 24
    s_star = heads.threshold_norm(eps, n, kind, GRID, weights)
    # The closed form is sufficient: at s* the exact construction is within eps ...
    assert heads.construction_epsilon(s_star, n, kind, GRID, weights) <= eps
    # ... and the exact threshold lies below it and is tight.
    exact = heads.exact_threshold_norm(eps, n, kind, GRID, weights)
    assert exact <= s_star * (1 + 1e-6)
    assert heads.construction_epsilon(exact * 0.98, n, kind, GRID, weights) > eps
    # The same through the models' apply_rope (float32), with psi of squared norm s*.
    psi = heads.plane_vector(HEAD_DIM, weights / weights.sum() * s_star)
    assert np.dot(psi, psi) == pytest.approx(s_star)
    attention = heads.construction_attention(kind, psi, n)
    assert heads.is_positional(attention, kind, eps * 1.01)
    assert heads.classify(attention, min(eps * 1.01, 0.5)) == kind


def test_threshold_closed_form_single_plane():
    # One plane at g = 1, N = 3: wrong offsets 1, 2; delta = 1 - cos(1).
    eps = 0.05
    expected = np.log(2 * (1 - eps) / eps) / (1 - np.cos(1.0))
    assert heads.threshold_norm(eps, 3, "diagonal", GRID, FASTEST) == pytest.approx(expected)
    assert heads.margin("diagonal", 3, GRID, FASTEST) == pytest.approx(1 - np.cos(1.0))


def test_epsilon_falls_with_norm_and_rises_with_n():
    norms = np.array([1.0, 10.0, 100.0])
    eps = heads.construction_epsilon(norms, 16, "diagonal", GRID, SPREAD)
    assert np.all(np.diff(eps) < 0)
    small, large = (heads.construction_epsilon(50.0, n, "diagonal", GRID, FASTEST) for n in (8, 64))
    assert large > small


def test_construction_targets_are_cauchy_schwarz_tight():
    psi = heads.plane_vector(HEAD_DIM, SPREAD)
    for kind, offset in heads.OFFSET.items():
        q, k = (x.astype(np.float32) for x in heads.construction(kind, psi, 6))
        positions = np.arange(6)
        q_rot = np.asarray(rope.apply_rope(q, positions))[:, 0]
        k_rot = np.asarray(rope.apply_rope(k, positions))[:, 0]
        i = np.arange(offset, 6)
        target = np.einsum("id,id->i", q_rot[i], k_rot[i - offset])
        assert np.allclose(target, psi @ psi, atol=1e-5)  # = ||q|| ||k||: the maximum


# ---------------------------------------------------------------- NoPE bound (Prop. 5.2)


def test_prop52_bound_on_random_nope_activations():
    rng = np.random.default_rng(0)
    vocab, d, t = 5, 8, 12
    tokens = np.concatenate([np.zeros((200, 1), int), rng.integers(1, vocab + 1, (200, t - 1))], 1)
    for seed in range(5):
        params = {
            "q": rng.standard_normal((vocab + 1, d)),
            "k": rng.standard_normal((vocab + 1, d)),
        }
        attention = heads.isolated_attention(params, tokens, "nope")
        for kind in heads.KINDS:
            w = heads.target_weights(attention, kind)
            r = heads.repeat_counts(tokens, kind)
            assert np.all(w <= 1 / r + 1e-12), (seed, kind)
        probes = np.array([[0, x, x] for x in range(1, vocab + 1)])
        a = heads.isolated_attention(params, probes, "nope")
        assert np.all(a[:, 2, 2] < 0.5) and np.allclose(a[:, 2, 2], a[:, 2, 1])
        a31 = params["q"][1:] @ params["k"][0]  # query of x against the BOS key
        a33 = np.einsum("xd,xd->x", params["q"][1:], params["k"][1:])  # against its own key
        expected = 1 / (np.exp(a31 - a33) + 2)
        assert np.allclose(a[:, 2, 2], expected, rtol=1e-4)


def test_isolated_fit_nope_stays_below_half_rope_succeeds():
    kw = dict(vocab=6, head_dim=8, seq_len=10, steps=150, batch_size=32, n_eval=128)
    nope = heads.fit_isolated_head("previous", "nope", **kw)
    rope_fit = heads.fit_isolated_head("previous", "rope", **kw)
    assert nope.bos_x_x < 0.5 and nope.repeat_excess <= 0
    assert rope_fit.bos_x_x > 0.9 and rope_fit.mean_target > 0.9
    assert rope_fit.losses[-1] < nope.losses[-1]


# ---------------------------------------------------------------- a tiny model end to end


def test_scan_model_on_random_model():
    from ropebook import model

    config = model.ModelConfig(
        vocab_size=32, n_layers=2, n_heads=2, d_model=16, d_ff=32, context=16, encoding="nope"
    )
    params = model.init_params(jax.random.key(0), config)
    windows = np.random.default_rng(0).integers(0, 32, (4, 16))
    scan = heads.scan_model(params, config, windows, batch_size=3)
    assert scan.shape == (2, 2)
    for kind in heads.KINDS:
        assert np.all((scan.score[kind] >= 0) & (scan.score[kind] <= 1))
        assert np.all(np.abs(scan.cosine[kind]) <= 1 + 1e-6)
        # Layer 0 of a NoPE model sees tokens only: Prop. 5.2's 1/r bound holds exactly.
        assert np.all(scan.repeat_excess[kind][0] <= 1e-5)
    assert scan.q_norms.shape == (2, 2, config.head_dim // 2)
    # The running sums agree with a direct computation on all windows at once.
    _, internals = model.forward(params, windows, config, return_internals=True)
    for layer, info in enumerate(internals):
        for kind in heads.KINDS:
            w = heads.target_weights(np.asarray(info["probs"]), kind)  # [B, H, T-1]
            assert np.allclose(scan.score[kind][layer], w.mean(axis=(0, 2)), atol=1e-6)
            assert np.allclose(scan.epsilon[kind][layer], 1 - w.min(axis=(0, 2)), atol=1e-6)
    logits, internals = model.forward(params, windows[:1], config, return_internals=True)
    activations = heads.target_activations(internals[0], head=1, n_tokens=5)
    assert np.isnan(activations.previous[0]) and np.isnan(activations.bound_previous[0])
    table = show.activation_table(activations)
    assert len(table) == 5
    for row in table[1:]:
        assert abs(row["diagonal a_ii"]) <= row["bound ‖q_i‖‖k_i‖/√d"] + 1e-5
        assert abs(row["previous a_i,i-1"]) <= row["bound ‖q_i‖‖k_i-1‖/√d"] + 1e-5


def test_fast_share():
    q = np.array([[4.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]])
    assert heads.fast_share(np.ones(8), np.ones(8)) == pytest.approx(0.25)
    assert heads.fast_share(q, np.ones(8))[0] == pytest.approx(5 / 11)


# ---------------------------------------------------------------- sympy statements


@pytest.mark.parametrize("statement", [proofs.nope_cannot, proofs.rope_can, proofs.threshold])
def test_statements_prove(statement):
    proof = statement()
    assert proof.steps


# ---------------------------------------------------------------- the chapter's tables and figures


def test_interval_text_closed_form():
    one = heads.interval_text([0.25], 2)
    assert one == (0.25, 0.25, 0.25, "1 sample: 0.25, no interval", 1)
    # Two samples 1 and 3: mean 2, standard error 1, t_{0.975, 1} = 12.706.
    two = heads.interval_text([1.0, 3.0], 2, "fits")
    assert two.mean == 2.0 and two.bounds == pytest.approx((2 - 12.7062, 2 + 12.7062), abs=1e-4)
    assert two.text == "95% CI [-10.71, 14.71] over 2 fits" and two.n == 2


def test_verdict_above_counts_seeds_and_fails_both_ways():
    assert heads.verdict_above([], 0.0, 3) == ("not testable here", None)
    assert heads.verdict_above({}, 0.0, 3) == ("not testable here", None)
    verdict, estimate = heads.verdict_above({0: 0.9, 1: 1.0, 2: 1.1}, 0.5, 2)
    assert verdict == "held" and estimate.mean == pytest.approx(1.0)
    assert estimate.text.endswith("over 3 seeds") and estimate.n == 3
    assert heads.verdict_above([0.1, 0.2, 0.3], 0.5, 2)[0] == "not held"
    # straddling the threshold beyond the margin: cannot decide; inside it: bounded
    assert heads.verdict_above([-1.0, 1.0], 0.0, 2, margin=0.05)[0] == "cannot decide"
    assert heads.verdict_above([0.24, 0.25, 0.26], 0.25, 2, margin=0.05)[0] == "bounded"
    assert heads.verdict_above([0.24, 0.25, 0.26], 0.25, 2)[0] == "cannot decide"  # no margin
    # one seed has no interval: cannot decide, however far its value is from the threshold
    assert heads.verdict_above([0.99], 0.5, 2)[0] == "cannot decide"
    assert heads.verdict_above([0.01], 0.5, 2)[0] == "cannot decide"
    verdict, estimate = heads.verdict_above([0.4, 0.5], 0.3, 2, unit="heads of one checkpoint")
    assert estimate.text.endswith("over 2 heads of one checkpoint")


@pytest.mark.parametrize(
    ("values", "margin", "verdict"),
    [
        ([0.9, 0.95, 1.0], None, "held"),
        ([0.1, 0.15, 0.2], None, "not held"),
        ([0.299, 0.3, 0.301], 0.05, "bounded"),
        ([0.0, 0.6], 0.05, "cannot decide"),
        ([0.95], None, "cannot decide"),
    ],
)
def test_seeds_above_rule(values, margin, verdict):
    estimate = heads.over_seeds(values, 3)
    assert heads.seeds_above(0.3, margin=margin)(estimate) == verdict


def test_seeds_above_rule_without_samples():
    assert heads.over_seeds([], 2) is None and heads.over_seeds({}, 2) is None
    assert heads.seeds_above(0.0)(None) == "not testable here"
    assert heads.seeds_above(0.0)(heads.interval_text([], 2)) == "not testable here"
    assert heads.MIN_SEEDS == 2


def test_seed_means_make_the_seed_the_unit():
    pairs = [(0, 1.0), (0, 3.0), (0, 2.0), (1, 10.0)]
    assert heads.seed_means(pairs) == {0: 2.0, 1: 10.0}
    # Pooled, four heads would give an interval over 4 samples; by seed there are only 2.
    assert heads.over_seeds(heads.seed_means(pairs), 2).n == 2
    assert heads.seed_means([]) == {}


def test_detector_table():
    rows = show.detector_table({"identity": np.eye(6), "shift": shifted(6)}, 0.01)
    assert rows[0] == {
        "matrix": "identity",
        "ε, diagonal": 0.0,
        "ε, previous": 1.0,
        "mean α_i,i": 1.0,
        "mean α_i,i−1": 0.0,
        "class at ε = 0.01": "diagonal",
    }
    assert rows[1]["class at ε = 0.01"] == "previous" and rows[1]["ε, previous"] == 0.0


def fake_fit(encoding, kind, bos_x_x, excess, loss):
    return heads.IsolatedFit(
        encoding=encoding, kind=kind, losses=np.array([2.0, loss]), mean_target=bos_x_x,
        epsilon=1 - bos_x_x / 2, repeated_target=bos_x_x / 2, repeat_excess=excess,
        bos_x_x=bos_x_x,
    )  # fmt: skip


FITS = {
    ("nope", "diagonal", 0): fake_fit("nope", "diagonal", 0.4, -0.1, 1.0),
    ("nope", "diagonal", 1): fake_fit("nope", "diagonal", 0.5 - 1e-9, -1e-8, 0.5),
    ("nope", "previous", 0): fake_fit("nope", "previous", 0.3, -0.2, 2.0),
    ("nope", "previous", 1): fake_fit("nope", "previous", 0.2, -0.3, 3.0),
    ("rope", "diagonal", 0): fake_fit("rope", "diagonal", 0.99, 0.8, 0.01),
    ("rope", "diagonal", 1): fake_fit("rope", "diagonal", 0.97, 0.7, 0.03),
    ("rope", "previous", 0): fake_fit("rope", "previous", 0.95, 0.6, 0.05),
    ("rope", "previous", 1): fake_fit("rope", "previous", 0.93, 0.5, 0.07),
}


def test_isolated_tables_and_summary():
    probes, training = show.isolated_tables(FITS)
    assert [(r["encoding"], r["head"]) for r in probes] == [
        ("nope", "diagonal"), ("nope", "previous"), ("rope", "diagonal"), ("rope", "previous")
    ]  # fmt: skip
    assert probes[0]["max α, [bos,x,x]"] == 0.5 - 1e-9  # the larger of the two seeds
    assert probes[0]["max (α − 1/r)"] == -1e-8
    assert probes[3]["mean α, repeated"] == pytest.approx((0.95 + 0.93) / 4)
    assert training[1]["final loss"] == 2.5 and training[2]["ε (worst seed)"] == 1 - 0.97 / 2
    summary = heads.isolated_summary(FITS)
    assert summary.nope_fits == 4 and summary.nope_bos_x_x == 0.5 - 1e-9
    assert summary.nope_excess == -1e-8 and summary.nope_bound_held
    # the seed is the unit: each seed's weaker kind (0.95, 0.93), an interval over 2 seeds
    assert summary.rope_bos_x_x.mean == pytest.approx(0.94) and summary.rope_bos_x_x.n == 2
    assert summary.rope_bos_x_x.text.endswith("over 2 seeds (weaker kind per seed)")
    one_seed = {key: fit for key, fit in FITS.items() if key[2] == 0}
    assert heads.isolated_summary(one_seed).rope_bos_x_x.n == 1
    assert heads.seeds_above(0.9)(heads.isolated_summary(one_seed).rope_bos_x_x) == (
        "cannot decide"
    )
    # a seed whose previous-token head fails is not rescued by its diagonal head
    weak = dict(FITS)
    weak["rope", "previous", 0] = fake_fit("rope", "previous", 0.5, 0.1, 0.5)
    assert heads.isolated_summary(weak).rope_bos_x_x.mean == pytest.approx((0.5 + 0.93) / 2)
    broken = dict(FITS)
    broken["nope", "previous", 1] = fake_fit("nope", "previous", 0.2, 1e-6, 3.0)
    assert not heads.isolated_summary(broken).nope_bound_held


def chart_values(spec: dict, data: dict) -> list[dict]:
    """The rows of an Altair ``data`` entry (``to_dict`` moves inline data to ``datasets``)."""
    return spec["datasets"][data["name"]] if "name" in data else data["values"]


def test_loss_chart():
    spec = show.loss_chart(FITS).to_dict()
    assert spec["title"] == "One head trained alone to be positional: NoPE vs RoPE"
    assert spec["width"] <= 680
    values = chart_values(spec, spec["data"])
    assert len(values) == 2 * len(FITS)  # two steps per fit
    assert {"step": 1, "encoding": "rope", "head": "previous", "seed": 1, "loss": 0.07} in values


def test_plot_construction():
    psi = np.array([1.0, 0.0])
    key = rope.rotation_matrix(1, 2) @ psi
    row = np.array([0.1, 0.1, 0.8])
    fig = show.plot_construction(psi, key, row, 12.345)
    axes = fig.axes
    assert len(axes) == 3
    assert [p.get_height() for p in axes[2].patches] == pytest.approx(row)
    assert axes[1].get_title() == "after RoPE: k1 aligns with q2"
    assert axes[2].get_title() == "attention of query 2 (‖ψ‖² = 12.3)"
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_threshold_study_single_plane_closed_form():
    grid = rope.frequencies(4)
    study = heads.threshold_study(0.05, [3], {"fast": [1.0, 0.0]}, grid, np.array([1.0, 10.0]))
    # One plane at g = 1, N = 3: delta = 1 - cos(1) for both kinds (wrong offsets 1, 2 and 1).
    expected = np.log(2 * 0.95 / 0.05) / (1 - np.cos(1.0))
    assert [r["head"] for r in study.rows] == list(heads.KINDS)
    for row in study.rows:
        assert row["δ"] == pytest.approx(1 - np.cos(1.0))
        assert row["s*"] == pytest.approx(expected)
        assert row["exact"] <= row["s*"] * (1 + 1e-6)
        # apply_rope in float32 at s*: within eps up to float32 rounding (tolerance 0.1%).
        assert row["ε at s*"] <= 0.05 * 1.001 and row["< 0.05"]
    # Previous token: both wrong keys of row 2 sit at |m| = 1, so the closed form is tight.
    assert study.rows[1]["exact"] == pytest.approx(expected, rel=1e-6)
    assert study.rows[1]["ε at s*"] == pytest.approx(0.05, rel=1e-3)
    assert study.rows[0]["exact"] < expected * 0.99  # diagonal: key 0 is at m = 2, farther
    assert study.ok and study.within == [True, True]
    assert study.stars == [{"‖ψ‖²": pytest.approx(expected), "ε": 0.05, "N": 3, "ψ on": "fast"}]
    eps_10 = heads.construction_epsilon(10.0, 3, "diagonal", grid, [1.0, 0.0])
    assert study.curves[1] == {"‖ψ‖²": 10.0, "ε": pytest.approx(eps_10), "N": 3, "ψ on": "fast"}
    spec = show.threshold_chart(study, 4).to_dict()
    assert spec["title"] == "Thm. 5.3: sharpness of the diagonal construction (d = 4)"
    assert spec["width"] <= 680


def fake_scan(score_diag, score_prev, cosine=None, excess=None, q_norms=None) -> heads.HeadScan:
    """A HeadScan of hand-made ``[L, H]`` arrays (everything else constant)."""
    sd, sp_ = np.asarray(score_diag, float), np.asarray(score_prev, float)
    shape = sd.shape
    cos = np.full(shape, 0.2) if cosine is None else np.asarray(cosine, float)
    exc = np.full(shape, -0.1) if excess is None else np.asarray(excess, float)
    qn = np.ones((*shape, 4)) if q_norms is None else np.asarray(q_norms, float)
    return heads.HeadScan(
        score={"diagonal": sd, "previous": sp_},
        epsilon={"diagonal": 1 - sd / 2, "previous": 1 - sp_ / 2},
        repeated={"diagonal": sd / 2, "previous": sp_ / 2},
        repeat_excess={"diagonal": exc, "previous": exc - 0.05},
        cosine={"diagonal": cos, "previous": cos / 2},
        q_norms=qn,
        k_norms=np.ones((*shape, 4)),
        n_windows=1,
        seq_len=8,
    )


# RoPE seed 0: a diagonal head L1 H0 and a previous-token head L0 H1; seed 1: one diagonal head
# L1 H1. NoPE seed 0: none; seed 1: a diagonal head in layer 0 (breaking the bound) at L0 H0.
FAST = np.ones((2, 2, 4))
FAST[1, 0] = [3.0, 1.0, 1.0, 1.0]  # the diagonal head of RoPE seed 0 uses its fastest plane
SCANS = {
    ("rope", 0): fake_scan(
        [[0.1, 0.1], [0.9, 0.2]], [[0.1, 0.7], [0.1, 0.1]], cosine=[[0.1, 0.8], [0.6, 0.3]],
        excess=[[0.5, 0.4], [0.1, 0.1]], q_norms=FAST,
    ),
    ("rope", 1): fake_scan([[0.1, 0.1], [0.2, 0.6]], [[0.2, 0.1], [0.1, 0.1]]),
    ("nope", 0): fake_scan([[0.1, 0.1], [0.2, 0.2]], [[0.3, 0.1], [0.1, 0.1]]),
    ("nope", 1): fake_scan(
        [[0.55, 0.1], [0.2, 0.2]], [[0.1, 0.1], [0.1, 0.1]], excess=[[-1e-7, -0.2], [0.3, 0.0]]
    ),
}  # fmt: skip


def test_found_and_count_tables():
    found = show.found_table(SCANS, 0.5)
    assert [(r["model"], r["kind"], r["head"]) for r in found] == [
        ("rope s0", "diagonal", "L1 H0"),
        ("rope s0", "previous", "L0 H1"),
        ("rope s1", "diagonal", "L1 H1"),
        ("nope s1", "diagonal", "L0 H0"),
    ]
    assert found[1]["mean α"] == 0.7 and found[1]["a / CS bound"] == 0.4  # cosine / 2
    assert found[0]["ε (Def. 5.1)"] == pytest.approx(0.55)
    counts = heads.count_heads(SCANS, 0.5)
    assert counts == {
        ("rope", "diagonal"): [1, 1], ("rope", "previous"): [1, 0], ("rope", "either"): [2, 1],
        ("nope", "diagonal"): [0, 1], ("nope", "previous"): [0, 0], ("nope", "either"): [0, 1],
    }  # fmt: skip
    # the count rule (heads per model, > 0.5, interval over seeds): RoPE's counts 2 and 1 are two
    # seeds whose t-interval (mean 1.5, [-4.9, 7.9]) reaches below 0.5, so cannot decide
    rule = heads.seeds_above(0.5)
    assert rule(heads.interval_text(counts["rope", "either"], 1)) == "cannot decide"
    assert rule(heads.interval_text([2, 2, 3], 1)) == "held"
    assert rule(heads.interval_text([0, 0, 0], 1)) == "not held"
    assert rule(heads.interval_text([2], 1)) == "cannot decide"
    rows = show.count_table(SCANS, 0.5)
    either = rows[2]
    assert (either["model"], either["kind"]) == ("rope", "either")
    assert either["per model (of 4)"] == 1.5 and either["by layer"] == [1, 2]
    assert either["interval"] == heads.interval_text([2, 1], 1).text
    assert rows[3]["by layer"] == [1, 0]


def test_the_strongest_head_compares_models_no_threshold_separates():
    scores = {key: heads.strongest_score(scan) for key, scan in SCANS.items()}
    assert scores == {("rope", 0): 0.9, ("rope", 1): 0.6, ("nope", 0): 0.3, ("nope", 1): 0.55}
    # past 0.95 no head of any model counts, yet RoPE's strongest heads still lead NoPE's
    counts = heads.count_heads(SCANS, 0.95)
    assert all(n == 0 for per_seed in counts.values() for n in per_seed)
    assert min(scores["rope", s] - scores["nope", s] for s in (0, 1)) > 0
    gaps = heads.strongest_gaps(SCANS)
    assert gaps == pytest.approx({0: 0.6, 1: 0.05})
    rule = heads.seeds_above(0.0, margin=heads.STRONGEST_MARGIN)
    assert rule(heads.over_seeds(gaps, 3)) == "cannot decide"  # 2 seeds, wide interval
    assert rule(heads.over_seeds([0.3, 0.31, 0.32], 3)) == "held"
    assert rule(heads.over_seeds([-0.3, -0.31, -0.32], 3)) == "not held"
    assert rule(heads.over_seeds([-0.01, 0.0, 0.01], 3)) == "bounded"
    assert rule(heads.over_seeds([0.3], 3)) == "cannot decide"
    # only seeds both models have are paired
    assert heads.strongest_gaps({**SCANS, ("rope", 7): SCANS["rope", 0]}) == pytest.approx(gaps)


def test_head_scatter_chart():
    spec = show.head_scatter_chart(SCANS, 0.5).to_dict()
    assert spec["title"] == "Every head: mean attention on itself vs on the previous token"
    panels = spec["hconcat"]
    assert [p["title"] for p in panels] == ["rope model", "nope model"]
    assert sum(p["width"] for p in panels) <= 600
    points = chart_values(spec, panels[0]["layer"][0]["data"])
    assert len(points) == 8  # 2 seeds x 2 layers x 2 heads
    assert {"model": "rope", "seed": 0, "layer": 1, "head": 0, "mean α on diagonal": 0.9,
            "mean α on i−1": 0.1} in points  # fmt: skip


def test_strongest_and_fast_share_table():
    assert heads.strongest(SCANS["rope", 0], "diagonal") == (1, 0)
    assert heads.strongest(SCANS["rope", 0], "previous") == (0, 1)
    shares = heads.positional_fast_shares(SCANS, 0.5, 0.25)
    rows, gaps = show.fast_share_rows(shares), [s.gap for s in shares]
    assert [(r["seed"], r["kind"], r["head"]) for r in rows] == [
        (0, "diagonal", "L1 H0"), (0, "previous", "L0 H1"), (1, "diagonal", "L1 H1")
    ]  # fmt: skip
    # Chunk budgets [3, 1, 1, 1]: the fastest quarter holds 3/6; the other head holds 1/4.
    assert rows[0]["this head"] == pytest.approx(0.5) and rows[0]["rest of layer"] == 0.25
    assert gaps == pytest.approx([0.25, 0.0, 0.0])
    # heads averaged within their seed: seed 0 (0.25 and 0.0) and seed 1 (0.0)
    by_seed = heads.seed_fast_gaps(shares)
    assert by_seed == pytest.approx({0: 0.125, 1: 0.0})
    assert heads.verdict_above(by_seed, 0.0, 3, margin=heads.FAST_MARGIN)[0] == "cannot decide"
    assert heads.seed_fast_gaps([]) == {}


def test_frequency_profile_chart():
    spec = show.frequency_profile_chart(SCANS["rope", 0]).to_dict()
    assert spec["title"] == "Frequency usage of the strongest RoPE positional heads vs their layer"
    assert 2 * spec["spec"]["width"] <= 600
    values = chart_values(spec, spec["data"])
    assert len(values) == 2 * 2 * 4 * 2  # kinds x (queries, keys) x planes x curves
    this = {"head": "diagonal L1 H0", "of": "queries", "plane k": 0}
    assert {**this, "curve": "this head", "mean chunk norm": 3.0} in values
    assert {**this, "curve": "layer average", "mean chunk norm": 2.0} in values


def test_paper_tables():
    ratios = heads.paper_ratios()
    assert ratios["diagonal"][0] == pytest.approx(156.93 / 203.65)
    assert ratios["previous"][2] == pytest.approx(18.91 / 102.41)
    assert len(ratios["diagonal"]) == 6 + 5 and len(ratios["previous"]) == 7
    assert [q.table for q in heads.PAPER_HEADS] == [3, 4, 5]
    table5 = heads.paper_head(5)
    assert (table5.layer, table5.head, table5.kind) == (1, 8, "previous")
    assert table5.tokens[3] == (102.41, -1.46, 18.91)
    assert table5.source.startswith("Barbero et al. 2025, App. E.1, Table 5 (Gemma 7B, Layer 1")
    assert heads.paper_head(4).ratios()[0] == pytest.approx(55.84 / 64.42)
    rows = show.paper_table(0.25)
    assert rows[0]["activation / bound, per token"].startswith("0.77, 0.79, 0.70")
    assert rows[2]["mean"] == pytest.approx(np.mean(ratios["previous"]))
    assert rows[2]["mean"] == pytest.approx(0.322, abs=5e-4)
    assert rows[2]["tokens ≥ 0.25"] == "5 of 7" and rows[0]["tokens ≥ 0.25"] == "6 of 6"


def test_the_paper_heads_pass_the_cauchy_schwarz_line():
    """The rule is set against the paper: each quoted head's mean ratio clears the line with the
    margin added (held, not bounded), while half the bound would fail Table 5's head."""
    means = {q.table: np.mean(q.ratios()) for q in heads.PAPER_HEADS}
    assert all(m > heads.CS_THRESHOLD + heads.CS_MARGIN for m in means.values())
    assert means[5] < 0.5 < min(means[3], means[4])
    assert min(heads.paper_head(5).ratios()) == pytest.approx(0.18, abs=0.01)
    assert max(heads.paper_head(5).ratios()) == pytest.approx(0.45, abs=0.01)


@pytest.mark.parametrize(
    ("per_seed", "verdict"),
    [
        ([0.6, 0.7, 0.65], "held"),
        ([0.05, 0.1, 0.08], "not held"),
        ([0.24, 0.25, 0.26], "bounded"),
        ([0.1, 0.6], "cannot decide"),
        ([0.9], "cannot decide"),
        ([], "not testable here"),
    ],
)
def test_cauchy_schwarz_rule(per_seed, verdict):
    got, _ = heads.verdict_above(per_seed, heads.CS_THRESHOLD, 2, margin=heads.CS_MARGIN)
    assert got == verdict


def test_cauchy_schwarz_table():
    cosines = heads.target_cosines(SCANS, 0.5)
    rows, positional = (
        show.cauchy_schwarz_rows(cosines),
        cosines["diagonal"][0] + cosines["previous"][0],
    )
    # Diagonal heads: rope s0 L1 H0 (0.6) and rope s1 L1 H1 (0.2); previous: rope s0 L0 H1 (0.4).
    assert positional == pytest.approx([0.6, 0.2, 0.4])
    assert rows[0]["heads"] == 2 and rows[0]["positional"] == pytest.approx(0.4)
    assert rows[0]["other heads"] == pytest.approx((0.1 + 0.8 + 0.3 + 0.2 * 3) / 6)
    assert rows[1]["paper"] == pytest.approx(np.mean(heads.paper_ratios()["previous"]))
    none = heads.target_cosines(SCANS, 0.95)
    assert none["diagonal"][0] == none["previous"][0] == []
    assert np.isnan(show.cauchy_schwarz_rows(none)[0]["positional"])
    # by seed: seed 0 averages its diagonal (0.6) and previous-token (0.4) heads, seed 1 has 0.2
    assert heads.seed_cosines(SCANS, 0.5) == pytest.approx({0: 0.5, 1: 0.2})
    assert heads.seed_cosines(SCANS, 0.95) == {}


def test_cauchy_schwarz_beside_table():
    real = {("rope", 0): SCANS["rope", 0]}
    rows = show.cauchy_schwarz_beside(SCANS, 0.5, 0.25, real)
    assert [r["heads"] for r in rows] == [
        "paper: Table 3: L1 H5, diagonal", "paper: Table 4: L27 H8, diagonal",
        "paper: Table 5: L1 H8, previous", "book's RoPE, seed 0", "book's RoPE, seed 1",
        "book's NoPE, seed 0", "book's NoPE, seed 1", "SmolLM2-135M",
    ]  # fmt: skip
    assert rows[2]["over"] == "7 tokens" and rows[2]["mean ≥ 0.25"] == "yes"
    assert rows[2]["range"] == "0.18 – 0.45" and rows[2]["control heads, mean"] == "—"
    assert rows[3]["over"] == "2 positional heads"
    assert rows[3]["activation / bound, mean"] == pytest.approx(0.5)
    assert rows[3]["mean ≥ 0.25"] == "yes" and rows[4]["mean ≥ 0.25"] == "no"
    assert rows[4]["activation / bound, mean"] == pytest.approx(0.2)
    # seed 0's control: heads positional of neither kind (L0 H0, L1 H1), at both targets
    assert rows[3]["control heads, mean"] == pytest.approx((0.1 + 0.05 + 0.3 + 0.15) / 4)
    assert rows[6]["over"] == "1 positional heads" and rows[5]["over"] == "0 positional heads"
    assert rows[7]["activation / bound, mean"] == pytest.approx(0.5)
    empty = show.cauchy_schwarz_beside(SCANS, 0.95, 0.25)
    assert len(empty) == 7 and empty[3]["range"] == empty[3]["mean ≥ 0.25"] == "—"


def test_control_cosines_leave_out_every_positional_head():
    pairs = heads.control_cosines(SCANS, 0.5)
    # RoPE seed 0: L0 H0 (0.1, 0.05) and L1 H1 (0.3, 0.15); seed 1: three heads at (0.2, 0.1)
    assert [seed for seed, _ in pairs] == [0, 0, 1, 1, 1]
    assert [v for _, v in pairs] == pytest.approx([0.075, 0.225, 0.15, 0.15, 0.15])
    assert heads.seed_means(pairs) == pytest.approx({0: 0.15, 1: 0.15})
    assert len(heads.control_cosines(SCANS, 0.5, "nope")) == 4 + 3  # NoPE seed 1's L0 H0 is out
    assert len(heads.control_cosines(SCANS, 1.1)) == 8  # no positional head: every head


@pytest.mark.parametrize(
    ("verdict", "controls", "expected"),
    [
        ("held", ["not held", "not held"], "held"),  # the line separates
        ("held", ["not held", "held"], "uninformative here"),  # a control clears it too
        ("held", ["bounded", "not held"], "cannot decide"),  # a control sits at the line
        ("held", ["cannot decide"], "cannot decide"),
        ("held", ["not testable here"], "cannot decide"),  # no control: separation not shown
        ("not held", ["held"], "not held"),  # positional heads miss the line whatever
        ("bounded", ["not held"], "bounded"),
        ("cannot decide", ["not held"], "cannot decide"),
        ("not testable here", ["held"], "not testable here"),
    ],
)
def test_the_cauchy_schwarz_line_must_fail_its_controls(verdict, controls, expected):
    assert heads.controlled(verdict, controls) == expected


def test_the_control_decides_on_measured_heads():
    """End to end on scans: positional heads clear the line over seeds; the control heads of the
    same models sit below it (held) or clear it too (uninformative here)."""
    line = {"threshold": heads.CS_THRESHOLD, "margin": heads.CS_MARGIN}

    def verdict(control_cosine):
        scans = {
            ("rope", s): fake_scan(
                [[0.9, 0.1], [0.1, 0.1]], [[0.1, 0.1], [0.1, 0.1]],
                cosine=[[0.7 + 0.01 * s, control_cosine + 0.01 * s], [control_cosine + 0.01 * s] * 2],
            )
            for s in range(3)
        }  # fmt: skip
        positional, _ = heads.verdict_above(
            heads.seed_cosines(scans, 0.5), heads.CS_THRESHOLD, 2, margin=heads.CS_MARGIN
        )
        control = heads.over_seeds(heads.seed_means(heads.control_cosines(scans, 0.5)), 2)
        return heads.controlled(positional, [heads.seed_verdict(control, **line)])

    # the control heads' mean over both targets is 0.75 x their diagonal cosine (previous: half)
    assert verdict(0.1) == "held"
    assert verdict(0.7) == "uninformative here"
    assert verdict(0.33) == "cannot decide"  # 0.25 ± 0.01: at the line, not below it
    with pytest.raises(ValueError, match="no control"):
        heads.controlled("held", [])


def test_control_texts():
    est = heads.interval_text([0.1, 0.12, 0.11], 2)
    text, result = show.control_texts({"RoPE's": est, "SmolLM2's": None},
                                      {"RoPE's": "not held", "SmolLM2's": "not testable here"})  # fmt: skip
    assert text.startswith("RoPE's 0.11 (95% CI") and "below the line" in text
    assert "SmolLM2's: no control head" in text and result.startswith("fails every control")
    _, result = show.control_texts({"a": est}, {"a": "held"})
    assert "uninformative here" in result
    _, result = show.control_texts({"a": est}, {"a": "bounded"})
    assert "cannot decide" in result
    _, result = show.control_texts({"a": None}, {"a": "not testable here"})
    assert result == "had no control head to fail"


def test_layer_table_and_layer0_bound():
    rows = show.layer_table(SCANS)
    assert len(rows) == 8 and rows[0]["model"] == "rope s0"
    assert rows[0]["α − 1/r, diag."] == 0.5 and rows[0]["α − 1/r, prev."] == 0.45
    assert rows[1]["α_i,i"] == 0.9 and rows[0]["α_i,i−1"] == 0.7
    assert heads.layer0_excess(SCANS, "rope") == 0.5
    assert heads.layer0_excess(SCANS, "nope") == pytest.approx(-1e-7)
    assert heads.deep_positional_heads(SCANS, "rope", 0.5) == 2  # L1 H0 (s0) and L1 H1 (s1)
    assert heads.deep_positional_heads(SCANS, "nope", 0.5) == 0  # its only one is in layer 0


def test_attention_figures_on_tiny_model():
    import matplotlib.pyplot as plt

    from ropebook import model

    config = model.ModelConfig(
        vocab_size=32, n_layers=2, n_heads=2, d_model=16, d_ff=32, context=8, encoding="rope"
    )
    params = model.init_params(jax.random.key(1), config)
    window = np.arange(8)[None]
    _, internals = model.forward(params, window, config, return_internals=True)
    scan = heads.scan_model(params, config, window)
    labels = [str(x) for x in range(8)]
    fig = show.plot_strongest_heads({"rope": internals}, {"rope": scan}, labels, 0.5)
    assert len(fig.axes) == 2
    layer, head = heads.strongest(scan, "previous")
    shown = fig.axes[1].images[0].get_array()
    assert np.allclose(shown, np.asarray(internals[layer]["probs"][0, head]))
    assert fig.axes[1].get_title().startswith(f"rope: best previous head L{layer} H{head}")
    plt.close(fig)
    fig = show.plot_chunk_norms(internals, scan)
    assert len(fig.axes) == 2 * 3 + 2 * 2  # panels and one colour bar per chunk-norm panel
    plt.close(fig)


def test_token_labels():
    from ropebook import data

    text = "Hello world\n"
    labels = show.token_labels(data.encode(text))
    assert labels[0] == "<bos>"
    assert "".join(labels[1:]) == repr(text)[1:-1]  # short tokens: nothing cut
    assert show.token_labels([0, 0]) == ["<bos>", "<bos>"]


def test_a_checkpoints_scan_reads_transformers_own_attention():
    """``scan_checkpoint`` on a transformers model (4 query heads over 2 KV heads): its mean target
    weights are those of transformers' own eager attention, and query heads sharing a KV head
    share its key chunk norms."""
    torch = pytest.importorskip("torch")
    from ropebook import tiny_models

    checkpoint = tiny_models.tiny_random_model("llama", seed=3)
    windows = np.random.default_rng(0).integers(3, checkpoint.config.vocab_size, (3, 12))
    scan = heads.scan_checkpoint(checkpoint, windows, batch_size=2)
    checkpoint.set_attn_implementation("eager")
    with torch.no_grad():
        attentions = checkpoint(torch.as_tensor(windows), output_attentions=True).attentions
    assert scan.shape == (2, 4) and scan.n_windows == 3 and scan.seq_len == 12
    for layer, attention in enumerate(attentions):
        for kind in heads.KINDS:
            expected = heads.target_weights(attention.numpy(), kind).mean(axis=(0, 2))
            np.testing.assert_allclose(scan.score[kind][layer], expected, rtol=1e-5)
    np.testing.assert_array_equal(scan.k_norms[:, 0], scan.k_norms[:, 1])
    np.testing.assert_array_equal(scan.k_norms[:, 2], scan.k_norms[:, 3])
    assert not np.allclose(scan.k_norms[:, 0], scan.k_norms[:, 2])
