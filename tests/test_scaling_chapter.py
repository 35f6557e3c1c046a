"""The rope_scaling chapter's measurements (``analysis.scaling``) on constructed inputs."""

import math
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import matplotlib
import numpy as np
import pytest

import ropebook
from ropebook import checkpoints, claims, evaluation, model, scaling
from ropebook.analysis import scaling as stretch
from ropebook.present import scaling as show

matplotlib.use("Agg")
VOCAB = 50


def config(encoding="rope", proportion=1.0, **kw):
    settings = dict(
        vocab_size=VOCAB,
        n_layers=2,
        n_heads=2,
        d_model=32,
        d_ff=64,
        context=16,
        head_dim=16,
        rope_base=50.0,
        encoding=encoding,
        proportion=proportion,
    )
    return model.ModelConfig(**settings | kw)  # fmt: skip


def run(cfg, seed=0):
    params = model.init_params(jax.random.key(seed), cfg)
    # larger weights than the init, so attention is far from uniform and scaling shows
    params = jax.tree.map(lambda x: x * 8 if x.ndim == 2 else x, params)
    return SimpleNamespace(params=params, config=cfg, seed=seed)


TOKENS = np.random.default_rng(0).integers(0, VOCAB, 5000).astype(np.uint16)


def test_intervention_rescales_the_models_own_grid():
    rope_cfg, p_cfg = config(), config("p-rope", 0.75)
    grid = stretch.model_grid(rope_cfg)
    iv = stretch.intervention(rope_cfg, "pi", 4)
    np.testing.assert_allclose(iv.frequencies, grid / 4, rtol=1e-6)
    assert float(iv.logit_scale) == 1.0
    p_grid = stretch.model_grid(p_cfg)
    assert (p_grid == 0).sum() == 2  # 0.75 of 8 planes rotate
    p_iv = stretch.intervention(p_cfg, "yarn", 4)
    assert np.all(p_iv.frequencies[p_grid == 0] == 0)  # free planes stay free
    assert float(p_iv.logit_scale) == pytest.approx((0.1 * math.log(4) + 1) ** 2, rel=1e-6)
    assert stretch.intervention(rope_cfg, "none", 4) is None
    assert stretch.intervention(rope_cfg, "yarn", 1) is None  # s = 1 is the identity
    assert stretch.intervention(config("nope"), "pi", 4) is None
    assert stretch.model_grid(config("alibi")) is None
    with pytest.raises(ValueError, match="unknown RoPE scaling method"):
        stretch.intervention(config("nope"), "stretchy", 2)
    with pytest.raises(ValueError, match="no RoPE grid"):
        stretch.scaled_grid(config("nope"), "pi", 2)


def test_pi_is_exactly_position_interpolation_in_the_model():
    """PI with s = 2 at positions 0..T-1 is the model at positions 0, 0.5, 1, ... ."""
    r = run(config())
    tokens = jnp.asarray(TOKENS[:24].astype(np.int32))[None]
    scaled = model.forward(
        r.params, tokens, r.config, intervention=stretch.intervention(r.config, "pi", 2)
    )
    halves = model.forward(r.params, tokens, r.config, positions=jnp.arange(24) / 2.0)
    np.testing.assert_allclose(np.asarray(scaled), np.asarray(halves), atol=2e-5)
    plain = model.forward(r.params, tokens, r.config)
    assert np.abs(np.asarray(plain) - np.asarray(scaled)).max() > 1e-3


def test_turns_and_changed_rows():
    settings = {"s": (32, 100.0, 64)}
    rows = stretch.turns_rows(settings, ("none", "pi", "yarn", "ntk"), 4)
    assert len(rows) == 4 * 16
    pi = [r for r in rows if r["method"] == "PI"]
    np.testing.assert_allclose([r["slowdown"] for r in pi], 4.0)
    np.testing.assert_allclose(
        [r["turns before"] for r in pi], scaling.default(32, 100.0) * 64 / (2 * np.pi)
    )
    table = {r["method"]: r for r in stretch.changed_rows(rows)}
    assert table["PI"]["kept"] == 0 and table["PI"]["slowed fully"] == 16
    assert table["no scaling"]["kept"] == 16 and table["no scaling"]["slowed fully"] == 0
    gamma = scaling.yarn_ramp(32, 100.0, 64)
    assert table["YaRN"]["kept"] == int(np.sum(gamma == 1))
    assert table["YaRN"]["slowed fully"] == int(np.sum(gamma == 0))
    assert table["YaRN"]["logit scale"] == pytest.approx((0.1 * math.log(4) + 1) ** 2)
    assert table["NTK-aware"]["kept"] == 1 and table["NTK-aware"]["slowed fully"] == 1
    fig = show.turns_chart(rows, 4)
    assert fig.get_size_inches()[0] * fig.dpi <= 680
    assert len(fig.axes) == 1 and fig.axes[0].get_yscale() == "log"


def test_log_scale_intervals_and_paired_changes():
    est = stretch.log_estimate([1.0, 1.2, 1.4])
    p, lo, hi = est.ppl
    assert p == pytest.approx(math.exp(1.2)) and 0 < lo < p < hi
    assert hi - p > p - lo  # asymmetric: formed on the log scale
    assert "1 seed" in stretch.log_estimate([2.0]).text()
    a = np.array([2.0, 2.1, 1.9])
    c = stretch.paired_change(a + math.log(1.1) + np.array([0, 1e-3, -1e-3]), a)
    assert c.percent == pytest.approx(10, abs=0.01) and c.significant
    assert c.verdict_lower() == "not held" and stretch.verdict_higher(c) == "held"
    noisy = stretch.paired_change(a + np.array([0.05, -0.05, 0.01]), a)
    assert not noisy.significant and noisy.verdict_lower() == "cannot decide"
    assert noisy.text().startswith("|Δ| < ")
    one = stretch.paired_change([1.0], [2.0])
    assert one.verdict_lower() == "cannot decide" and "1 seed" in one.text()
    pts = stretch.paired_points([0.5, 0.6], [0.2, 0.3])
    assert pts.percent == pytest.approx(30) and pts.unit == "pp"
    assert stretch.combine(["held", "held"]) == "held"
    assert stretch.combine(["held", "not held"]) == "partly"
    assert stretch.combine(["held", "not testable here"]) == "not testable here"
    rows = show.change_rows({"c vs a": {2: c}, "noisy": {2: noisy, 4: one}}, {2: "x", 4: "y"}, 64)
    assert rows == [
        {"length": "2× (128)", "lowest perplexity": "x", "c vs a": c.text(), "noisy": noisy.text()},
        {"length": "4× (256)", "lowest perplexity": "y", "c vs a": "—", "noisy": one.text()},
    ]


def test_length_sweep_pairs_windows_and_skips_non_rotary_methods():
    models = {"rope": [run(config(), 0), run(config(), 1)], "nope": [run(config("nope"))]}
    losses = stretch.length_sweep(
        models, ("none", "pi", "dynamic-ntk"), [1, 2], TOKENS, n_windows=2, progress=False
    )
    assert set(losses) == {("rope", m, f) for m in ("none", "pi", "dynamic-ntk") for f in (1, 2)} | {
        ("nope", "none", 1), ("nope", "none", 2)}  # fmt: skip
    assert len(losses["rope", "pi", 2]) == 2
    assert losses["rope", "pi", 1] == losses["rope", "none", 1]  # s = 1 is the identity
    assert losses["rope", "pi", 2] != losses["rope", "none", 2]
    r = models["rope"][0]
    direct = evaluation.loss_by_position(
        r.params, r.config, TOKENS, seq_len=32, n_windows=2, batch_size=4,
        intervention=stretch.intervention(r.config, "pi", 2),
    ).mean()  # fmt: skip
    assert losses["rope", "pi", 2][0] == pytest.approx(float(direct), rel=1e-6)
    fake = {("a", "x", 2): [1.0, 3.0], ("b", "y", 2): [1.5, 1.6]}
    assert stretch.lowest(fake, [("a", "x"), ("b", "y")], 2) == ("b", "y")
    labels = {("rope", "pi"): "RoPE · PI", ("nope", "none"): "NoPE"}
    rows = show.sweep_rows(losses, labels, [1, 2], 16)
    assert rows[0]["model · method"] == "RoPE · PI" and "[" in rows[0]["2× (32)"]
    assert "1 seed" in rows[1]["1× (16)"]
    fig = show.sweep_chart(losses, labels, [1, 2], title="t")
    assert fig.get_size_inches()[0] * fig.dpi <= 680 and fig.axes[0].get_title() == "t"
    fig = show.sweep_chart(losses, labels, [1, 2], title="t", dashed=[("nope", "none")])
    assert [line.get_linestyle() for line in fig.axes[0].get_lines()[:2]] == ["-", "--"]
    fixed = stretch.length_sweep(
        {"rope": models["rope"][:1]}, ("pi",), [1, 2], TOKENS, n_windows=2, fixed_scale=2,
        progress=False,
    )  # fmt: skip
    assert fixed["rope", "pi", 2] == [losses["rope", "pi", 2][0]]  # s = factor = 2 here
    assert fixed["rope", "pi", 1] != losses["rope", "pi", 1][:1]  # s = 2 even at 1x


def test_pi_at_s_on_the_1x_windows_is_the_first_L_positions_of_its_long_window():
    """rope_scaling.pi_after_finetune compares PI with the model at 1× on the same positions: a
    causal model's first L tokens of an s×L window are the 1× window, so the sweep's 1× cell with
    the scale fixed at s is PI at s× without the context the longer window adds, on the very
    windows the model at 1× read (the same seed and length)."""
    r = run(config())
    iv = stretch.intervention(r.config, "pi", 4)
    window = jnp.asarray(TOKENS[None, : 4 * 16].astype(np.int32))
    long = model.forward(r.params, window, r.config, intervention=iv)
    short = model.forward(r.params, window[:, :16], r.config, intervention=iv)
    np.testing.assert_allclose(np.asarray(long)[:, :16], np.asarray(short), atol=1e-4)
    first_l = stretch.length_sweep({"pi-ft": [r]}, ("pi",), [1], TOKENS, n_windows=2,
                                   fixed_scale=4, progress=False)  # fmt: skip
    direct = evaluation.loss_by_position(
        r.params, r.config, TOKENS, seq_len=16, n_windows=2, intervention=iv
    ).mean()
    assert first_l["pi-ft", "pi", 1][0] == pytest.approx(float(direct), rel=1e-6)


def test_pi_after_finetune_reaches_every_verdict_on_the_same_positions():
    """The rule: PI on the first L positions lower than the model at 1× and fine-tuned PI lower
    than fine-tuned plain RoPE → held; both higher → not held; one each → partly; unresolved
    → cannot decide."""
    base = np.array([2.0, 2.1, 1.9])
    lower = stretch.paired_change(base - 0.1 + np.array([0, 1e-3, -1e-3]), base)
    higher = stretch.paired_change(base + 0.1 + np.array([0, 1e-3, -1e-3]), base)
    unresolved = stretch.paired_change(base + np.array([0.05, -0.05, 0.01]), base)

    def rule(same, over_plain):
        return claims.combine([same.verdict_lower(), over_plain.verdict_lower()])

    assert rule(lower, lower) == "held"
    assert rule(higher, higher) == "not held"
    assert rule(higher, lower) == "partly"
    assert rule(unresolved, unresolved) == "cannot decide"


def test_finetune_caches_by_recipe(tmp_path, monkeypatch):
    from ropebook import data

    monkeypatch.setattr(ropebook, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(data, "load_tokens", lambda *a, **k: TOKENS)
    r = run(config())
    parent = SimpleNamespace(**vars(r), name="rope", domain="shakespeare", spec_hash="abc")
    first = stretch.finetune(parent, "pi", 2, steps=3, batch_size=2, lr=1e-3, progress=False)
    assert first.trained_now and first.tokens_seen == 3 * 2 * 32
    again = stretch.finetune(parent, "pi", 2, steps=3, batch_size=2, lr=1e-3, progress=False)
    assert not again.trained_now and again.path == first.path
    for x, y in zip(jax.tree.leaves(first.params), jax.tree.leaves(again.params), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    other = stretch.finetune(parent, "yarn", 2, steps=3, batch_size=2, lr=1e-3, progress=False)
    assert other.path != first.path and other.path.parent == tmp_path / "finetune"
    moved = jax.tree.leaves(first.params)[1]
    assert not np.allclose(moved, jax.tree.leaves(r.params)[1])
    with pytest.raises(ValueError, match="changes nothing"):
        stretch.finetune(parent, "pi", 1, steps=1, batch_size=2, lr=1e-3)
    # the control: plain RoPE fine-tuned on the same tokens and steps, cached apart
    plain = stretch.finetune(parent, "none", 2, steps=3, batch_size=2, lr=1e-3, progress=False)
    assert plain.trained_now and plain.tokens_seen == first.tokens_seen
    assert plain.path not in (first.path, other.path) and plain.method == "none"
    assert not np.allclose(jax.tree.leaves(plain.params)[1], jax.tree.leaves(r.params)[1])
    assert stretch.finetune_steps(10_000, 0.1, 2, 50) == 10
    assert stretch.finetune_steps(10, 0.01, 2, 50) == 1


def test_previous_token_scores_match_the_explicit_attention():
    r = run(config())
    windows = np.stack([TOKENS[i : i + 16] for i in (0, 50, 100)]).astype(np.int32)
    iv = stretch.intervention(r.config, "pi", 4)
    scores = stretch.previous_token_scores(r.params, r.config, windows, iv, batch_size=2)
    _, layers = model.forward(
        r.params, jnp.asarray(windows), r.config, return_internals=True, intervention=iv
    )
    for layer, lay in enumerate(layers):
        probs = np.asarray(lay["probs"])  # [B, H, T, T]
        expected = np.mean([probs[:, :, i, i - 1] for i in range(1, 16)], axis=(0, 1))
        np.testing.assert_allclose(scores[layer], expected, rtol=1e-5)
    energy = stretch.chunk_energy(r.params, r.config, windows, batch_size=2)
    assert energy.shape == (2, 2, 8) and np.all(energy > 0)


def test_interpolation_share_and_head_survival():
    grid = np.array([1.0, 0.1, 0.01, 0.0])
    energy = np.array([[4.0, 3.0, 2.0, 1.0]])
    np.testing.assert_allclose(stretch.interpolation_share(energy, grid, grid / 4, 4), [0.9])
    half = np.array([1.0, 0.05, 0.0025, 0.0])  # pair 1 slowed 2x (half of s = 4 in log), pair 2 4x
    np.testing.assert_allclose(stretch.interpolation_share(energy, grid, half, 4), [0.35])
    with pytest.raises(ValueError, match="scale"):
        stretch.interpolation_share(energy, grid, grid, 1)
    none = [np.array([[0.9, 0.1], [0.2, 0.7]]), np.array([[0.8, 0.0], [0.0, 0.1]])]
    pi = [np.array([[0.3, 0.1], [0.2, 0.6]]), np.array([[0.2, 0.0], [0.0, 0.1]])]
    shares = {"none": [np.zeros((2, 2))] * 2, "pi": [np.ones((2, 2))] * 2}
    surv = stretch.head_survival({"none": none, "pi": pi}, shares, threshold=0.5)
    assert surv.heads == {0: [(0, 0), (1, 1)], 1: [(0, 0)]}
    assert surv.scores["none"] == pytest.approx([0.8, 0.8])
    assert surv.scores["pi"] == pytest.approx([0.45, 0.2])
    assert surv.survived["pi"] == pytest.approx([0.5, 0.0]) and surv.share["pi"] == [1.0, 1.0]
    mean, low, high, n = stretch.drop(surv, "pi")
    assert mean == pytest.approx(0.475) and n == 2 and low < mean < high
    rows = show.head_rows(surv, {"pi": "PI"})
    assert rows[1]["method"] == "PI" and rows[1]["interpolation of their pairs"].startswith("100")
    empty = stretch.head_survival({"none": [np.zeros((1, 1))]}, {"none": [np.zeros((1, 1))]}, 0.5)
    assert show.head_rows(empty, {})[0]["attention on previous token"] == "no heads"
    assert stretch.drop(empty, "none")[3] == 0


def _survival(none, pi, yarn) -> stretch.HeadSurvival:
    """A HeadSurvival with per-seed scores of the previous-token heads under each method."""
    scores = {"none": none, "pi": pi, "yarn": yarn}
    return stretch.HeadSurvival(0.5, {i: [(0, 0)] for i in range(len(none))}, scores, {}, {})


def test_the_previous_token_head_rule_pairs_yarn_with_pi_by_seed():
    none = [0.8, 0.82, 0.79]
    assert stretch.head_verdict(_survival(none, [0.3, 0.32, 0.29], [0.6, 0.63, 0.6])) == "held"
    # PI weakens them, YaRN's mean is higher but its paired gap straddles 0: no longer held
    noisy = _survival(none, [0.3, 0.32, 0.29], [0.5, 0.2, 0.45])
    assert np.mean(noisy.scores["yarn"]) > np.mean(noisy.scores["pi"])
    assert stretch.head_verdict(noisy) == "partly"
    # YaRN weakens them more than PI, established, PI's drop unresolved: not held
    worse = _survival(none, [0.9, 0.6, 0.85], [0.1, 0.12, 0.11])
    assert stretch.head_verdict(worse) == "not held"
    unresolved = _survival(none, [0.9, 0.6, 0.85], [0.9, 0.6, 0.86])
    assert stretch.head_verdict(unresolved) == "cannot decide"
    assert stretch.head_verdict(_survival([0.8], [0.3], [0.6])) == "cannot decide"  # one seed
    assert stretch.head_verdict(_survival([], [], [])) == "not testable here"  # no heads


def test_passkey_batch_and_accuracy(monkeypatch):
    rng = np.random.default_rng(3)
    batch = stretch.passkey_batch(rng, TOKENS, 100, 6, vocab_size=VOCAB)
    assert batch.tokens.shape == (6, 100) and batch.depth == 10
    np.testing.assert_array_equal(batch.tokens[:, 10:18], batch.tokens[:, 92:])
    np.testing.assert_array_equal(batch.answers, batch.tokens[:, 95:])
    rows = np.arange(6)[:, None]
    np.testing.assert_array_equal(batch.tokens[rows, batch.positions + 1], batch.answers)
    with pytest.raises(ValueError, match="too short"):
        stretch.passkey_batch(rng, TOKENS, 10, 1, vocab_size=VOCAB)
    r = run(config())
    acc = stretch.passkey_accuracy(r.params, r.config, batch)
    assert 0 <= acc <= 1
    # an oracle that predicts the true next token scores 1; one that repeats the input, ~0
    oracle = lambda p, tokens, c, iv: jnp.concatenate([tokens[:, 1:], tokens[:, :1]], axis=1)  # noqa: E731
    monkeypatch.setattr(stretch, "_predictions", oracle)
    assert stretch.passkey_accuracy(r.params, r.config, batch) == 1.0
    monkeypatch.setattr(stretch, "_predictions", lambda p, tokens, c, iv: tokens * 0)
    assert stretch.passkey_accuracy(r.params, r.config, batch) == 0.0
    sweep = stretch.passkey_sweep(
        {"rope": [r, r]}, ("none", "yarn"), [2, 4], TOKENS, n_trials=2, progress=False
    )
    assert set(sweep) == {("rope", m, f) for m in ("none", "yarn") for f in (2, 4)}
    table = show.accuracy_rows(sweep, {("rope", "yarn"): "RoPE · YaRN"}, [2, 4], 16)
    assert table == [
        {"model · method": "RoPE · YaRN", "2× (32)": "0 [0, 0]", "4× (64)": "0 [0, 0]"}
    ]


def test_transformers_agreement_rows():
    pytest.importorskip("transformers")
    rows = stretch.transformers_agreement({"x": (32, 100.0, 64)}, 4)
    assert [r["transformers rope_type"] for r in rows] == ["linear", "dynamic", "yarn", "llama3"]
    assert max(r["max relative Δ frequency"] for r in rows) < 1e-5
    assert max(r["Δ attention factor"] for r in rows) < 1e-6


def test_dynamic_ntk_keeps_its_factor_and_follows_the_length():
    cfg = config()
    grid = stretch.model_grid(cfg)
    # factor 1 at length 2L is static NTK-aware at s = 2; at length L it is the identity
    at_2l = stretch.intervention(cfg, "dynamic-ntk", 1, 2 * cfg.context)
    np.testing.assert_allclose(
        at_2l.frequencies, scaling.ntk(16, cfg.rope_base, 2, cfg.context).frequencies, rtol=1e-6
    )
    at_l = stretch.intervention(cfg, "dynamic-ntk", 1, cfg.context)
    np.testing.assert_allclose(at_l.frequencies, grid, rtol=1e-6)
    rows = stretch.turns_rows({"x": (16, 50.0, 16)}, ("dynamic-ntk",), 4, dynamic_factor=1.0)
    static = stretch.turns_rows({"x": (16, 50.0, 16)}, ("ntk",), 4)
    np.testing.assert_allclose([r["turns after"] for r in rows], [r["turns after"] for r in static])
    models = {"rope": [run(cfg)]}
    swept = stretch.length_sweep(models, ("dynamic-ntk", "ntk"), [2], TOKENS, n_windows=2,
                                 dynamic_factor=1.0, progress=False)  # fmt: skip
    assert swept["rope", "dynamic-ntk", 2] == pytest.approx(swept["rope", "ntk", 2], rel=1e-6)


def test_exact_ties_are_neither_lower_nor_higher():
    tie = stretch.paired_points([0.0, 0.0, 0.0], [0.0, 0.0, 0.0])
    assert tie.verdict_lower() == "not held" and stretch.verdict_higher(tie) == "not held"


def test_chapter_is_in_the_book_before_the_summaries_with_checked_parameters():
    import jupytext

    from ropebook import pipeline

    names = pipeline.chapter_names()
    assert names.index("rope_scaling") < names.index("scorecard")
    declared = pipeline.chapter_parameters(jupytext.read(pipeline.chapter_path("rope_scaling")))
    assert declared["profile"].default == "cpu"
    values = pipeline.validate_parameters("rope_scaling", declared, {"max_factor": "4"})
    assert values == {"max_factor": 4}
    with pytest.raises(pipeline.ChapterError, match="finetune_fraction"):
        pipeline.validate_parameters("rope_scaling", declared, {"finetune_fraction": 1.5})


def test_task_finetune_shares_the_cached_recipe_and_keys_the_task(tmp_path, monkeypatch):
    """The recall chapter's fine-tune is this module's, on task batches: no corpus is read, the
    task enters the cache key (and only then, so corpus fine-tunes keep their hashes)."""
    from ropebook import data, tasks
    from ropebook.analysis import recall

    monkeypatch.setattr(ropebook, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(data, "load_tokens", lambda *a, **k: pytest.fail("a task reads no corpus"))
    r = run(config(vocab_size=tasks.VOCAB_SIZE, context=32))
    parent = SimpleNamespace(**vars(r), name="rope", domain="recall", spec_hash="abc")
    task = tasks.get("recall")
    first = recall.finetune(parent, task, "pi", 2, steps=3, batch_size=2, lr=1e-3, progress=False)
    assert first.trained_now and first.tokens_seen == 3 * 2 * 64
    meta = checkpoints.read_metadata(first.path)
    assert meta["extra"]["finetune"]["task"] == task.to_dict()
    again = recall.finetune(parent, task, "pi", 2, steps=3, batch_size=2, lr=1e-3, progress=False)
    assert not again.trained_now and again.path == first.path
    other = tasks.get("kback")
    assert (
        recall.finetune(parent, other, "pi", 2, steps=3, batch_size=2, lr=1e-3, progress=False).path
        != first.path
    )


def test_finetune_changes_pair_each_model_with_its_baseline():
    """Each fine-tune comparison is the paired change of the right two rows: PI before and after
    against the model at 1×, on the whole s× window and on the same 1× positions; the fine-tune's
    gain; YaRN against PI; both rules against plain RoPE fine-tuned alike (the control)."""
    rng = np.random.default_rng(0)
    rows = [("rope", "none", 1), ("rope-fixed-s", "pi", 4), ("rope-fixed-s", "pi", 1),
            ("rope-pi-ft", "pi", 4), ("rope-pi-ft", "pi", 1), ("rope-yarn-ft", "yarn", 4),
            ("rope-none-ft", "none", 4)]  # fmt: skip
    view = {row: 3.0 + 0.1 * i + 0.01 * rng.standard_normal(3) for i, row in enumerate(rows)}
    changes = stretch.finetune_changes(view, 4, 0.9)
    want = {"pi_before": (1, 0), "pi_before_same": (2, 0), "pi_gain": (3, 1), "pi_after": (3, 0),
            "pi_same": (4, 0), "yarn_ft": (5, 3), "pi_over_plain": (3, 6),
            "yarn_over_plain": (5, 6)}  # fmt: skip
    assert set(changes) == set(want)
    for name, (a, b) in want.items():
        expected = stretch.paired_change(view[rows[a]], view[rows[b]], 0.9)
        assert changes[name].text() == expected.text(), name
    # a row 0.1 nats above its baseline reads about +10.5 % of perplexity
    assert changes["pi_before"].text().startswith("+10.")
