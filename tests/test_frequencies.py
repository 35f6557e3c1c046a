"""Frequency usage: chunk norms on constructed vectors, GQA shapes, RoPE invariance, summaries."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ropebook import claims, hf, model, rope
from ropebook.analysis import frequencies as fq
from ropebook.present import frequencies as show


def one_chunk(head_dim: int, chunk: int, pairing: str, value=(3.0, 4.0)) -> np.ndarray:
    """A vector whose only energy is in RoPE chunk ``chunk`` under ``pairing``."""
    x = np.zeros(head_dim)
    i, j = rope.chunk_indices(head_dim, pairing)[chunk]
    x[i], x[j] = value
    return x


@pytest.mark.parametrize("pairing", rope.PAIRINGS)
@pytest.mark.parametrize("chunk", [0, 3, 7])
def test_energy_in_one_chunk_lands_in_that_chunk(pairing, chunk):
    x = np.broadcast_to(one_chunk(16, chunk, pairing), (2, 5, 3, 16))
    usage = fq.chunk_usage(x, pairing)
    expected = np.zeros((3, 8))
    expected[:, chunk] = 5.0
    np.testing.assert_allclose(usage, expected)
    # ... and the other pairing spreads it over two different chunks (unless they coincide)
    other = fq.chunk_usage(x, "half" if pairing == "interleaved" else "interleaved")
    assert np.count_nonzero(other[0]) in (1, 2)


def test_half_and_interleaved_chunks_are_the_documented_dims():
    x = np.arange(8, dtype=float)[None, None, None]
    half = fq.chunk_usage(x, "half")[0]
    interleaved = fq.chunk_usage(x, "interleaved")[0]
    np.testing.assert_allclose(half, np.hypot([0, 1, 2, 3], [4, 5, 6, 7]))
    np.testing.assert_allclose(interleaved, np.hypot([0, 2, 4, 6], [1, 3, 5, 7]))


def fake_runner(layers=2, heads=4, kv_heads=2, head_dim=8):
    """Internals where every chunk norm equals the (1-based) token position."""

    def run(tokens):
        t = tokens.shape[1]
        scale = np.arange(1, t + 1, dtype=float)[None, :, None, None] / np.sqrt(2)
        q = np.ones((1, t, heads, head_dim)) * scale
        kv = np.ones((1, t, kv_heads, head_dim)) * scale
        return [{"q": q, "k": kv, "v": 2 * kv} for _ in range(layers)]

    return run


def test_measure_shapes_under_gqa_and_equal_text_weights():
    texts = [np.zeros(3, int), np.zeros(7, int)]  # mean position 2 and 4
    usage = fq.measure(fake_runner(), texts, frequencies=rope.base_frequencies(8))
    assert usage.q.shape == (2, 4, 4) and usage.k.shape == usage.v.shape == (2, 2, 4)
    assert usage.layers("k").shape == (2, 4)
    np.testing.assert_allclose(usage.q, 3.0)  # (2 + 4) / 2: texts weigh the same
    np.testing.assert_allclose(usage.v, 6.0)
    assert (usage.n_texts, usage.n_tokens) == (2, 10)
    skipped = fq.measure(fake_runner(), texts, frequencies=np.ones(4), skip_first=1)
    np.testing.assert_allclose(skipped.q, (2.5 + 4.5) / 2)
    with pytest.raises(ValueError, match="kind"):
        usage.heads("x")


def test_gqa_checkpoint_and_rope_invariance():
    """A random GQA checkpoint built in memory: 6 query heads share 2 KV heads."""
    config = hf.HFConfig(
        family="llama", vocab_size=50, hidden_size=48, intermediate_size=64, n_layers=2,
        n_heads=6, n_kv_heads=2, head_dim=16, rope_theta=10_000.0,
    )  # fmt: skip
    keys = iter(jax.random.split(jax.random.key(0), 64))

    def w(*shape):
        return 0.2 * jax.random.normal(next(keys), shape)

    d, hd = config.hidden_size, config.head_dim
    layers = [
        {
            "attn_norm": jnp.ones(d), "mlp_norm": jnp.ones(d),
            "q": {"w": w(d, 6 * hd)}, "k": {"w": w(d, 2 * hd)}, "v": {"w": w(d, 2 * hd)},
            "o": {"w": w(6 * hd, d)}, "gate": {"w": w(d, 64)}, "up": {"w": w(d, 64)},
            "down": {"w": w(64, d)},
        }
        for _ in range(2)
    ]  # fmt: skip
    embed = w(50, d)
    params = {"embed": embed, "layers": layers, "final_norm": jnp.ones(d), "lm_head": embed}
    checkpoint = hf.HFModel(config, params, path=None)
    texts = [np.arange(20) % 50, (np.arange(33) * 7) % 50]
    usage = fq.measure_hf(checkpoint, texts)
    assert usage.q.shape == (2, 6, 8) and usage.k.shape == (2, 2, 8) and usage.v.shape == (2, 2, 8)
    np.testing.assert_allclose(usage.frequencies, rope.base_frequencies(16))
    _, internals = hf.forward(checkpoint, texts[1][None], return_internals=True)
    assert fq.rotation_invariance_error(internals) < 1e-5


@pytest.mark.parametrize("pairing", rope.PAIRINGS)
def test_rope_preserves_chunk_norms_in_the_book_model(pairing):
    config = model.ModelConfig(
        vocab_size=40, n_layers=2, n_heads=2, d_model=32, d_ff=64, context=64, pairing=pairing
    )
    params = model.init_params(jax.random.key(1), config)
    tokens = (np.arange(60) * 11 % 40)[None]
    _, internals = model.forward(params, tokens, config, return_internals=True)
    assert fq.rotation_invariance_error(internals, pairing) < 1e-5
    # chunk norms are NOT preserved if read with the wrong pairing: the check has teeth
    wrong = "half" if pairing == "interleaved" else "interleaved"
    assert fq.rotation_invariance_error(internals, wrong) > 1e-2
    usage = fq.measure(
        fq.zoo_runner(params, config), [tokens[0]], frequencies=fq.zoo_frequencies(config),
        pairing=pairing,
    )  # fmt: skip
    assert usage.q.shape == (2, 2, 8)


def test_band_share_and_trend_on_constructed_profiles():
    flat = np.ones(8)
    assert fq.band_share(flat, 0.25, "low") == pytest.approx(0.25)
    assert fq.band_share(flat, 0.25, "high") == pytest.approx(0.25)
    slow = np.array([0, 0, 0, 0, 0, 0, 1.0, 1.0])
    assert fq.band_share(slow, 0.25, "low") == pytest.approx(1.0)
    assert fq.band_share(slow, 0.25, "high") == pytest.approx(0.0)
    assert fq.band_size(8, 0.01) == 1
    assert fq.frequency_trend(np.arange(8.0)) == pytest.approx(1.0)
    assert fq.frequency_trend(-np.arange(8.0)) == pytest.approx(-1.0)
    assert fq.frequency_trend(flat) == pytest.approx(0.0)
    rows = np.stack([np.arange(8.0), -np.arange(8.0)])
    np.testing.assert_allclose(fq.frequency_trend(rows), [1, -1])
    with pytest.raises(ValueError, match="band"):
        fq.band_share(flat, 0.25, "middle")


def test_map_similarity():
    rng = np.random.default_rng(0)
    a = rng.uniform(1, 2, size=(3, 8))
    same = fq.map_similarity(a, 5 * a)
    assert same["cosine"] == pytest.approx(1.0) and same["profile correlation"] == pytest.approx(1)
    reversed_ = fq.map_similarity(a, a[:, ::-1])
    assert reversed_["profile correlation"] < same["profile correlation"]
    with pytest.raises(ValueError, match="shape"):
        fq.map_similarity(a, a[:, :4])


def test_offset_attention():
    t = 6
    diagonal = np.eye(t)[None, None]
    previous = np.eye(t, k=-1)[None, None]
    previous[0, 0, 0, 0] = 1.0  # the first query can only attend to itself
    assert fq.offset_attention(diagonal, 0)[0] == pytest.approx(1.0)
    assert fq.offset_attention(diagonal, 1)[0] == pytest.approx(0.0)
    assert fq.offset_attention(previous, 1)[0] == pytest.approx(1.0)


def test_heatmap_records():
    usage = fq.measure(fake_runner(), [np.zeros(4, int)], frequencies=rope.base_frequencies(8))
    rows = show.heatmap_records(usage, "q", per_head=True, layers=[0])
    assert len(rows) == 4 * 4 and rows[0]["wavelength (tokens)"] == pytest.approx(2 * np.pi)
    assert {r["head"] for r in rows} == {0, 1, 2, 3}
    assert len(show.heatmap_records(usage, "v")) == 2 * 4


# ---------------------------------------------------------------------------------------------
# the chapter's analysis: prompts, readings over seeds, tables and figures


def usage_of(q, k=None, v=None, frequencies=None) -> fq.FrequencyUsage:
    """A hand-made FrequencyUsage (k and v default to q)."""
    q = np.asarray(q, dtype=float)
    k = q if k is None else np.asarray(k, dtype=float)
    v = k if v is None else np.asarray(v, dtype=float)
    if frequencies is None:
        frequencies = rope.base_frequencies(2 * q.shape[-1])
    return fq.FrequencyUsage(q, k, v, np.asarray(frequencies), "half", n_texts=1, n_tokens=1)


@pytest.fixture
def char_tokens(monkeypatch):
    """Character-level stand-ins for the book's tokenizer and test split (BOS = 0)."""
    from ropebook import data

    def encode(text, *, bos=True, **_):
        return np.asarray(([0] if bos else []) + [ord(c) for c in text])

    def decode(ids, **_):
        return "".join(chr(int(i)) for i in ids)

    docs = {
        "shakespeare": [("b_doc", "line one\nline two\nline three\n"), ("a_doc", "AAAA\nBBBB\nCCCC\nDDDD\nEEEE\n")],
        "python": [("x.py", "import os\nprint(os)\nx = 1\n")],
    }  # fmt: skip
    monkeypatch.setattr(data, "encode", encode)
    monkeypatch.setattr(data, "decode", decode)
    monkeypatch.setattr(data, "load_texts", lambda domain, split: docs[domain])
    return encode, decode


def test_pick_documents_spreads_picks_and_counts_repeats():
    assert fq.pick_documents(10, 4) == [(0, 0, 1), (2, 0, 1), (5, 0, 1), (7, 0, 1)]
    assert fq.pick_documents(3, 5) == [(0, 0, 2), (0, 1, 2), (1, 0, 2), (1, 1, 2), (2, 0, 1)]


def test_passages_start_after_a_line_break_past_the_midpoint(char_tokens):
    encode, decode = char_tokens
    quotes = fq.passages("shakespeare", 3, 6)
    # sorted by name: a_doc, a_doc, b_doc. a_doc (25 chars) is picked twice: after the first
    # line breaks past char 8 and 16; b_doc once, after the first line break past its midpoint
    assert [name for name, _ in quotes] == ["a_doc", "a_doc", "b_doc"]
    assert [decode(ids[1:]) for _, ids in quotes] == ["CCCC\n", "EEEE\n", "line "]
    assert all(ids[0] == 0 and len(ids) == 6 for _, ids in quotes)
    rows = show.prompt_table(quotes, chars=3)
    assert rows[0] == {"#": 0, "document": "a_doc", "tokens": 6, "text": "'CCC'"}


def test_windows_arithmetic_and_domains(char_tokens):
    encode, decode = char_tokens
    parts = fq.windows("abcdefghij", n=5, length=4)  # BOS + 3 characters each, whole windows only
    assert [decode(w[1:]) for w in parts] == ["abc", "def", "ghi"] and all(w[0] == 0 for w in parts)
    assert len(fq.windows("abcdefghij", n=2, length=4)) == 2
    text = fq.arithmetic_text(np.random.default_rng(0), lines=3)
    for line in text.splitlines():
        a, rest = line.split("+")
        b, c = rest.split("=")
        assert len(a) == len(b) == 6 and int(a) + int(b) == int(c)
    prompts = fq.arithmetic(2, 10, seed=0)
    assert decode(prompts[0][1:]) == fq.arithmetic_text(np.random.default_rng(0))[:9]
    assert fq.lossless(fq.DAODEJING) and fq.lossless(fq.DANTE)
    domains = fq.domain_prompts([encode("Shakespeare")], 2, 8, seed=0)
    assert list(domains) == ["Shakespeare", "Python", "arithmetic", "Italian (Dante)", fq.CHINESE]
    assert all(len(p) == 2 for name, p in domains.items() if name != "Shakespeare")
    table = show.domain_table(domains, chars=4)
    assert table[-1] == {
        "domain": fq.CHINESE,
        "prompts": 2,
        "tokens each": 8,
        "first prompt": "'道可道，'",
    }


def test_domain_prompts_drop_a_text_the_tokenizer_cannot_round_trip(char_tokens, monkeypatch):
    from ropebook import data

    monkeypatch.setattr(data, "decode", lambda ids, **_: "?")
    assert fq.CHINESE not in fq.domain_prompts([np.zeros(8, int)], 1, 8, seed=0)


def test_over_seeds_and_verdict_helpers():
    one = fq.over_seeds([0.3])
    assert (one.mean, one.low, one.high, one.n, one.text) == (0.3, 0.3, 0.3, 1, None)
    two = fq.over_seeds([1.0, 3.0])  # sem = 1, t(0.975, 1) = 12.706
    assert two.mean == 2.0 and two.high - 2.0 == pytest.approx(12.7062, abs=1e-3)
    assert two.text == "95% CI [-10.706, 14.706] over 2 seeds"
    assert fq.combine_verdicts(["held", "held"]) == "held"
    assert fq.combine_verdicts(["not held", "not held"]) == "not held"
    assert fq.combine_verdicts(["held", "not held"]) == "partly"
    assert fq.combine_verdicts(["partly", "held"]) == "partly"
    above, below = fq.over_seeds([0.3, 0.31]), fq.over_seeds([0.3, 0.29])
    assert (
        fq.interval_verdict(above, 0.2) == "held" and fq.interval_verdict(below, 0.5) == "not held"
    )
    assert fq.interval_verdict(one, 0.25) == "cannot decide"  # one seed: the point, no interval
    assert fq.flat_bound(2, 8) == pytest.approx(2 / np.sqrt(14))
    assert fq.flat_verdict([0.1, 0.11], 0.5)[0] == "held"
    assert fq.flat_verdict([-0.9, -0.91], 0.5)[0] == "not held"
    assert fq.flat_verdict([0.1], 0.5)[0] == "cannot decide"  # one seed decides nothing
    assert fq.flat_verdict([0.4, 0.6], 0.5)[0] == "cannot decide"  # interval across the bound
    assert fq.combine_verdicts(["cannot decide", "not held"]) == "not held"
    assert fq.combine_verdicts(["cannot decide", "cannot decide"]) == "cannot decide"


def test_band_shares_trends_and_their_tables():
    rising = np.array([1.0, 1.0, 1.0, 5.0])  # the slowest chunk (last) holds 5/8
    falling = rising[::-1]
    seed0 = usage_of(np.stack([rising, falling])[:, None, :])  # 2 layers, 1 head
    seed1 = usage_of(np.stack([rising, rising])[:, None, :])
    low = fq.band_shares([seed0, seed1], "q", 0.25, "low")
    np.testing.assert_allclose(low, [[5 / 8, 1 / 8], [5 / 8, 5 / 8]])
    np.testing.assert_allclose(fq.trends([seed0, seed1], "q"), [0.0, np.sqrt(0.6)])
    shares = {("m", "q"): low, ("m", "v"): low / 2}
    rows = show.band_share_table(shares, [("m", "q"), ("m", "v")])
    assert rows[1] == {
        "layer": 1,
        "m queries": pytest.approx(3 / 8),
        "m values": pytest.approx(3 / 16),
    }
    assert rows[-1]["layer"] == "mean" and rows[-1]["m queries"] == pytest.approx(0.5)
    trend = {("m", k): np.full(2, 0.9 if k == "q" else 0.01) for k in fq.KINDS}  # two seeds alike
    table = show.trend_table(trend, {("m", k): low for k in fq.KINDS}, ["m"], bound=0.5)
    assert [r["profile"] for r in table] == ["structured", "flat", "flat"]
    one = {key: values[:1] for key, values in trend.items()}  # one seed: no interval
    assert {
        r["profile"] for r in show.trend_table(one, {("m", k): low for k in fq.KINDS}, ["m"], 0.5)
    } == {"unclear"}
    assert table[0]["trend"] == pytest.approx(0.9) and table[0]["slowest-band share"] == 0.5


def test_low_band_reading():
    def seeds(*layers):  # two seeds that read the same: a zero-width interval, decided
        return np.array([layers, layers])

    above = seeds(0.3, 0.4)  # two layers
    reading = fq.low_band_reading(above, seeds(0.35, 0.2), uniform=0.25)
    assert reading.q.mean == pytest.approx(0.35) and reading.k.mean == pytest.approx(0.275)
    assert reading.verdict == "held"
    assert reading.every_layer_fraction == 0.75 and reading.every_layer_verdict == "partly"
    below = fq.low_band_reading(above, seeds(0.1, 0.2), uniform=0.25)
    assert below.verdict == "partly" and below.every_layer_verdict == "partly"
    none = fq.low_band_reading(above / 4, above / 4, uniform=0.25)
    assert none.verdict == "not held" and none.every_layer_verdict == "not held"
    one = fq.low_band_reading(above[:1], above[:1], uniform=0.25)  # one seed: no interval
    assert one.verdict == "cannot decide" == one.every_layer_verdict


def test_every_layer_is_read_over_seeds_per_layer():
    """Seeds are replicates: a layer is above uniform when its interval over seeds is, and one
    seed's point below uniform does not make the claim "partly" by itself."""
    q = np.array([[0.40, 0.35], [0.42, 0.36], [0.41, 0.34]])  # three seeds, two layers
    assert fq.low_band_reading(q, q, uniform=0.25).every_layer_verdict == "held"
    noisy_k = np.array([[0.40, 0.45], [0.42, 0.20], [0.41, 0.40]])  # layer 1: one seed below
    noisy = fq.low_band_reading(q, noisy_k, uniform=0.25)
    assert noisy.every_layer_fraction < 1 and noisy.every_layer_verdict == "partly"
    assert interval_verdict_of(noisy, 1, "k") == "cannot decide"
    low = np.array([[0.1, 0.12], [0.11, 0.1], [0.12, 0.11]])
    assert fq.low_band_reading(low, low, uniform=0.25).every_layer_verdict == "not held"
    wide = np.array([[0.45, 0.5], [0.05, 0.1], [0.3, 0.2]])
    assert fq.low_band_reading(wide, wide, uniform=0.25).every_layer_verdict == "cannot decide"


def interval_verdict_of(reading, layer: int, kind: str) -> str:
    return fq.interval_verdict(reading.per_layer[layer, kind], reading.uniform)


def test_edge_layer_reading():
    fast, slow = [3.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 3.0]  # fastest-band share 1/2 and 1/6
    two = fq.edge_layer_reading([usage_of(np.array([fast, slow])[:, None])], 0.25)
    assert two.verdict == "not testable here" and two.gap is None
    assert show.edge_layer_measured(two) == "only 2 layers: no middle layers to compare with"
    edges, centre = usage_of(np.array([fast, slow, fast])[:, None]), usage_of(np.array([slow, fast, slow])[:, None])  # fmt: skip
    three = fq.edge_layer_reading([edges, edges], 0.25)  # two seeds alike: a zero-width interval
    assert three.gap.mean == pytest.approx(1 / 2 - 1 / 6) and three.verdict == "held"
    assert show.edge_layer_measured(three).endswith("+0.333 (per layer: 0.500, 0.167, 0.500)")
    assert fq.edge_layer_reading([centre, centre], 0.25).verdict == "not held"
    assert fq.edge_layer_reading([edges], 0.25).verdict == "cannot decide"  # one seed


def test_edge_layers_must_each_beat_every_middle_layer_over_seeds():
    """The edges are "strongest": the weaker edge layer minus the strongest middle one, per
    seed, its interval over seeds above 0 (held), below (not held) or across it (cannot
    decide). A mean over the middle layers would call the second case held."""
    from ropebook.analysis.frequencies.readings import edge_gaps

    shares = np.array([[0.5, 0.2, 0.3, 0.6], [0.6, 0.1, 0.5, 0.55]])
    np.testing.assert_allclose(edge_gaps(shares), [0.2, 0.05])
    # one middle layer matches the edges in every seed: above the middle mean, not strongest
    matched = np.array([[0.5, 0.1, 0.6, 0.5], [0.6, 0.2, 0.7, 0.6], [0.4, 0.1, 0.5, 0.45]])
    assert (matched[:, [0, -1]].mean(axis=1) > matched[:, 1:-1].mean(axis=1)).all()
    assert fq.interval_verdict(fq.over_seeds(edge_gaps(matched)), 0.0) == "not held"
    fast, slow, mid = [3.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 3.0], [2.0, 1.0, 1.0, 1.0]

    def reading(*seeds):
        return fq.edge_layer_reading([usage_of(np.array(s)[:, None]) for s in seeds], 0.25)

    held = reading([fast, slow, mid, fast], [fast, mid, slow, fast], [fast, mid, mid, fast])
    assert held.verdict == "held" and held.gap.low > 0
    not_held = reading([fast, fast, slow, mid], [mid, fast, slow, fast], [fast, slow, fast, mid])
    assert not_held.verdict == "not held" and not_held.gap.high < 0
    # the edges beat the middle in one seed and lose to it in another: the interval straddles 0
    split = reading([fast, slow, slow, fast], [mid, fast, slow, mid])
    assert split.verdict == "cannot decide" and split.gap.low < 0 < split.gap.high


def test_edge_readings_over_prompts_say_so_and_plot_at_relative_depth():
    fast, slow = [3.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 3.0]
    prompts = [usage_of(np.array([fast, slow, slow, fast])[:, None] * w) for w in (1.0, 2.0)]
    four = fq.edge_layer_reading(prompts, 0.25)  # scaling a usage leaves its shares alone
    assert four.gap.text_over("prompts") == "95% CI [0.333, 0.333] over 2 prompts"
    assert four.gap.text == "95% CI [0.333, 0.333] over 2 seeds"
    three = fq.edge_layer_reading([usage_of(np.array([fast, slow, fast])[:, None])], 0.25)
    figure = show.plot_edge_layers({"four layers": four, "three layers": three})
    lines = figure.axes[0].get_lines()  # per model: its layers, then its first and last circled
    np.testing.assert_allclose(lines[0].get_xdata(), [0, 1 / 3, 2 / 3, 1])
    np.testing.assert_allclose(lines[1].get_ydata(), [0.5, 0.5])
    np.testing.assert_allclose(lines[2].get_xdata(), [0, 0.5, 1])


def test_head_high_share_repeats_keys_over_their_query_group():
    q = np.ones((1, 4, 4))  # fastest-band share 1/4 for every query head
    k = np.array([[[1.0, 0, 0, 0], [1.0, 1, 1, 1]]])  # kv head 0 all fast (share 1), head 1: 1/4
    share = fq.head_high_share(usage_of(q, k), 0.25)
    np.testing.assert_allclose(share, [[1.0, 1.0, 0.25, 0.25]])


@pytest.mark.parametrize(
    ("counts", "verdict"),
    [
        ([2, 2, 3, 2, 2], "held"),  # one head to a quarter of them, on every reading
        ([1, 1, 1], "held"),  # no spread: the interval is the point
        ([0, 0, 0, 0, 0], "not held"),  # none
        ([0, 1, 0, 0, 0, 1, 0, 0] * 2, "not held"),  # some seeds have one: fewer than one head
        ([30, 31, 30, 32], "not held"),  # more than half of the 48
        ([15, 16, 15, 16], "partly"),  # more than a quarter, at most half
        ([0, 0, 1, 1, 0], "cannot decide"),  # the build's five seeds: the interval spans one head
        ([2], "cannot decide"),  # one seed: no interval
    ],
)
def test_a_few_heads_is_read_over_seeds(counts, verdict):
    reading = fq.few_heads_reading(counts, 48)
    assert reading.verdict == verdict
    assert reading.count.mean == pytest.approx(np.mean(counts))
    assert reading.counts == counts and "of 48 heads per model" in reading.text
    to_decide = show.few_heads_to_decide(reading)
    if verdict == "cannot decide" and len(counts) > 1:
        assert "seeds would detect the mean count's distance from one head" in to_decide
    elif len(counts) > 1:
        assert to_decide.startswith("nothing")


def test_positional_reading_and_table():
    shares = [np.array([[0.5, 0.1], [0.3, 0.2]])]  # one seed, 2 layers x 2 heads
    positional = np.zeros((2, 2, 2))  # [layers, offsets, heads]
    positional[0, 0, 0] = 0.9  # the top head (L0H0) attends to itself
    positional[1, 1, 0] = 0.6  # L1H0 to the previous token
    positional[1, 0, 1], positional[0, 1, 1] = 0.3, 0.1
    flagged = [shares[0] >= 0.3]
    reading = fq.positional_reading(shares, [positional], flagged, mass=0.5)
    assert reading.top_heads == [(0, 0)] and reading.top_is_positional == [True]
    assert reading.correlations[0].statistic == pytest.approx(1.0)  # same order: .5 .3 .2 .1
    assert reading.flagged_positional == 1.0 and reading.rest_positional == 0.0
    assert reading.verdict == "cannot decide"  # one seed: top head positional, ρ = 1, no replicate
    assert show.positional_measured(reading, [7]).startswith(
        "seed 7: top head L0H0 puts 0.90 of its attention"
    )
    assert show.positional_measured(reading, [7]).endswith(
        "positional: 100% of high-frequency heads, 0% of others"
    )
    rows = show.top_heads_table([7], shares, [positional], 0.5, per_seed=3)
    assert [(r["layer"], r["head"], r["positional"]) for r in rows] == [
        (0, 0, True), (1, 0, True), (1, 1, False),
    ]  # fmt: skip
    assert rows[1]["on previous"] == 0.6 and rows[2]["on itself"] == 0.3
    nobody = fq.positional_reading(shares, [positional / 10], [shares[0] > 1], mass=0.5)
    assert np.isnan(nobody.flagged_positional)
    assert "— of high-frequency heads" in show.positional_measured(nobody, [0])


def _reading(tops, rhos_sign):
    """Three seeds of 2 x 3 heads: the top-share head positional or not (``tops``), and the
    positional attention ranked with the shares (+1), against them (-1) or shuffled (0)."""
    from ropebook.analysis import frequencies as fq

    share = np.array([[0.6, 0.5, 0.4], [0.3, 0.2, 0.1]])
    shuffled = [np.array([[0.2, 0.4, 0.1], [0.3, 0.05, 0.15]]),
                np.array([[0.1, 0.05, 0.3], [0.2, 0.15, 0.4]]),
                np.array([[0.15, 0.3, 0.05], [0.1, 0.4, 0.2]])]  # fmt: skip
    positional = []
    for seed, (top, sign) in enumerate(zip(tops, rhos_sign, strict=True)):
        strongest = {1: share * 0.9, -1: 0.7 - share, 0: shuffled[seed]}[sign].copy()
        # positional (≥ 0.5) or not, keeping the top head's rank where the sign needs it
        strongest[0, 0] = max(strongest[0, 0], 0.9) if top else min(strongest[0, 0], 0.49)
        p = np.zeros((2, 2, 3))
        p[:, 0] = strongest
        positional.append(p)
    return fq.positional_reading([share] * 3, positional, [share > 0.45] * 3, mass=0.5)


def test_high_frequency_heads_are_positional_over_seeds_not_per_seed_parts():
    assert _reading([True] * 3, [1] * 3).verdict == "held"
    assert _reading([False] * 3, [-1] * 3).verdict == "not held"
    # one seed's top head positional, one seed's ranks: "partly" under the old per-seed parts
    mixed = _reading([True, False, False], [0, 0, 1])
    assert claims.graded(mixed.evidence) == "partly" and mixed.verdict == "cannot decide"
    # the rank part established, the top head positional in only some seeds: partly
    assert _reading([True, False, True], [1] * 3).verdict == "partly"


def test_domain_similarity_reading_and_tables():
    rng = np.random.default_rng(0)
    a = rng.uniform(1, 2, size=(2, 1, 4))
    b = a[:, :, ::-1].copy()
    domains = [{"x": usage_of(a), "y": usage_of(2 * a), "z": usage_of(b)}]
    similarity = fq.domain_similarities(domains)
    assert list(similarity[0]) == [("x", "y"), ("x", "z"), ("y", "z")]
    assert similarity[0]["x", "y"]["profile correlation"] == pytest.approx(1.0)
    least = similarity[0]["x", "z"]["profile correlation"]
    reference = fq.seed_similarities([usage_of(a)], "q", [usage_of(b)], "q")
    assert reference[0]["profile correlation"] == pytest.approx(least)
    rows = show.similarity_table(similarity, {"ref": reference})
    assert [r["maps compared"] for r in rows] == ["x vs y", "x vs z", "y vs z", "ref"]
    twice = similarity * 2  # two seeds that read alike: a zero-width interval, decided
    assert fq.domain_reading(twice, threshold=least - 0.1).verdict == "held"
    reading = fq.domain_reading(twice, threshold=least + 0.1)
    assert reading.verdict == "not held" and reading.least.mean == pytest.approx(least)
    assert fq.domain_reading(similarity, threshold=least - 0.1).verdict == "cannot decide"


def test_the_domain_reading_is_the_threshold_alone_over_seeds():
    """No reference map turns a miss into "partly": above the threshold over seeds is held,
    below is not held, across it cannot decide."""

    def seeds(*least):
        return [{("a", "b"): {"profile correlation": x}, ("a", "c"): {"profile correlation": 1.0}}
                for x in least]  # fmt: skip

    assert fq.domain_reading(seeds(0.95, 0.96, 0.97), 0.9).verdict == "held"
    assert fq.domain_reading(seeds(0.6, 0.62, 0.61), 0.9).verdict == "not held"
    # well above queries vs values (0.6, say) but below 0.9: still not held, not partly
    assert fq.domain_reading(seeds(0.8, 0.85, 0.82), 0.9).verdict == "not held"
    straddle = fq.domain_reading(seeds(0.85, 0.95, 0.92), 0.9)
    assert straddle.verdict == "cannot decide" and straddle.least.low < 0.9 < straddle.least.high


def test_loader_table_and_gap():
    found = {
        "llama": {"head_dim": 16, "heads / KV heads": "4/2", "max |Δ| logits": 1e-6, "max |Δ| q": 3e-6},
        "gemma": {"head_dim": 32, "heads / KV heads": "4/2", "max |Δ| logits": 2e-6, "max |Δ| q": 1e-7},
    }  # fmt: skip
    rows = show.loader_table(found)
    assert rows[0] == {"": "head_dim", "llama": 16, "gemma": 32}
    assert [r[""] for r in rows] == ["head_dim", "heads / KV heads", "max |Δ| logits", "max |Δ| q"]
    assert fq.loader_gap(found) == 3e-6


def test_checkpoint_readings_on_constructed_usage():
    rising = np.arange(1.0, 9.0)  # norm grows towards the slow chunks
    flat = np.array([1.0, 2.0, 1.0, 2.0, 2.0, 1.0, 2.0, 1.0])  # no monotone trend
    q = np.broadcast_to(rising, (3, 4, 8)).copy()
    kv = np.broadcast_to(rising, (3, 2, 8)).copy()
    wobble = [0.3 * np.sin(p + np.arange(8.0)) for p in range(5)]  # keeps each profile rising

    def prompts(q, k, v=None):  # five prompts, each the profiles plus its own wobble
        return [usage_of(q + w, k + w, None if v is None else v + w) for w in wobble]

    held = fq.checkpoint_low_reading(prompts(q, kv, np.broadcast_to(flat, (3, 2, 8))), 0.25)
    assert held.verdict == "held" and held.uniform == 0.25 and held.low["q"].n == 5
    assert held.low["q"].low > 0.25 and held.trend["q"].mean == pytest.approx(1.0)
    assert held.low["q"].mean == pytest.approx(
        np.mean([fq.band_share(rising + w, 0.25, "low") for w in wobble])
    )
    assert held.bound == pytest.approx(2 / np.sqrt(21)) and abs(held.trend["v"].mean) < held.bound
    assert "95% intervals over 5 prompts" in held.text
    # values are reported, never judged: a trend among them cannot lower the verdict
    assert fq.checkpoint_low_reading(prompts(q, kv, kv), 0.25).verdict == "held"
    assert fq.checkpoint_low_reading(prompts(q, kv[..., ::-1], kv), 0.25).verdict == "partly"
    falling = fq.checkpoint_low_reading(prompts(q[..., ::-1], kv[..., ::-1]), 0.25)
    assert falling.verdict == "not held"
    assert show.checkpoint_low_to_decide(falling) == "nothing: no part of the reading is open"
    # one prompt has no interval: open, and more prompts decide it
    one = fq.checkpoint_low_reading(prompts(q, kv)[:1], 0.25)
    assert one.verdict == "cannot decide" and "one prompt: no interval" in one.text
    # prompts that disagree (half rising, half falling): the intervals straddle their lines
    mixed = [usage_of(x, x[:, :2]) for x in (q, q[..., ::-1], q + 0.1, q[..., ::-1] + 0.1)]
    straddle = fq.checkpoint_low_reading(mixed, 0.25)
    assert straddle.verdict == "cannot decide"
    assert straddle.low["q"].low < 0.25 < straddle.low["q"].high
    assert "prompts" in show.checkpoint_low_to_decide(straddle)
    # last layer: query head 2 uses the fastest band most; its group is heads 2-3
    q[-1, 2] = rising[::-1]
    usage = usage_of(q, kv)
    diagonal = np.array([0.9, 0.1, 0.7, 0.2])
    head = fq.diagonal_head_reading(usage, diagonal, 0.25, mass=0.5)
    assert (head.top, head.members, head.most_diagonal, head.verdict) == (2, [2, 3], 2, "held")
    assert fq.diagonal_head_reading(usage, diagonal, 0.25, mass=0.8).verdict == "partly"
    other = fq.diagonal_head_reading(usage, np.array([0.9, 0.1, 0.2, 0.3]), 0.25, mass=0.5)
    assert other.most_diagonal == 3 and other.verdict == "not held"


def test_model_runs_positional_attention_and_invariance():
    config = model.ModelConfig(
        vocab_size=40, n_layers=2, n_heads=2, d_model=32, d_ff=64, context=64
    )
    trained = type(
        "Trained", (), {"params": model.init_params(jax.random.key(2), config), "config": config}
    )
    texts = [np.arange(12) % 40, (np.arange(20) * 3) % 40]
    positional = fq.positional_attention(trained, texts)
    assert positional.shape == (2, 2, 2)
    assert np.all(positional >= 0) and np.all(positional.sum(axis=1) <= 1 + 1e-6)
    one = [fq.positional_attention(trained, [t]) for t in texts]
    np.testing.assert_allclose(positional, (one[0] + one[1]) / 2, rtol=1e-6)  # texts weigh the same
    pattern = fq.attention_pattern(trained, texts[0], layer=1, head=0)
    assert pattern.shape == (12, 12) and np.allclose(pattern.sum(axis=1), 1, atol=1e-5)
    assert np.allclose(np.triu(pattern, 1), 0)  # causal
    assert fq.offset_attention(pattern[None, None], 0)[0] == pytest.approx(
        one[0][1, 0, 0], rel=1e-5
    )
    assert fq.zoo_invariance_error(trained, texts[1]) < 1e-5


def test_last_layer_self_attention_averages_texts_equally():
    config = hf.HFConfig(
        family="llama", vocab_size=50, hidden_size=32, intermediate_size=48, n_layers=2,
        n_heads=4, n_kv_heads=2, head_dim=8, rope_theta=10_000.0,
    )  # fmt: skip
    keys = iter(jax.random.split(jax.random.key(3), 64))

    def w(*shape):
        return 0.3 * jax.random.normal(next(keys), shape)

    layer = {
        "attn_norm": jnp.ones(32), "mlp_norm": jnp.ones(32), "q": {"w": w(32, 32)},
        "k": {"w": w(32, 16)}, "v": {"w": w(32, 16)}, "o": {"w": w(32, 32)},
        "gate": {"w": w(32, 48)}, "up": {"w": w(32, 48)}, "down": {"w": w(48, 32)},
    }  # fmt: skip
    embed = w(50, 32)
    params = {
        "embed": embed,
        "layers": [layer, layer],
        "final_norm": jnp.ones(32),
        "lm_head": embed,
    }
    checkpoint = hf.HFModel(config, params, path=None)
    texts = [np.arange(10), (np.arange(16) * 7) % 50]
    both = fq.last_layer_self_attention(checkpoint, texts)
    one = [fq.last_layer_self_attention(checkpoint, [t]) for t in texts]
    assert both.shape == (4,) and np.all((0 < both) & (both < 1))
    np.testing.assert_allclose(both, (one[0] + one[1]) / 2, rtol=1e-6)
    _, layers = hf.forward(checkpoint, texts[0][None], return_internals=True, return_probs=True)
    probs = np.asarray(layers[-1]["probs"])[0]
    expected = [np.mean([probs[h, i, i] for i in range(1, 10)]) for h in range(4)]
    np.testing.assert_allclose(one[0], expected, rtol=1e-5)


def test_figures_and_charts():
    import matplotlib

    matplotlib.use("Agg")
    usage = usage_of(np.arange(2 * 3 * 4, dtype=float).reshape(2, 3, 4) + 1)
    fig = show.plot_layer_maps(
        {"a": usage.layers("q"), "b": usage.layers("k")}, usage.wavelengths, "T"
    )
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert titles == ["a", "b"] and fig._suptitle.get_text() == "T"
    fig = show.plot_head_closeup(usage, np.eye(40), 1, 2, "close")
    assert [ax.get_title() for ax in fig.axes[:3]] == [
        "queries, layer 1 head 2", "keys, layer 1 head 2", "attention weights, prompt 0",
    ]  # fmt: skip
    assert fig.axes[2].images[0].get_array().shape == (32, 32)
    np.testing.assert_allclose([p.get_height() for p in fig.axes[0].patches], usage.q[1, 2])
    spec = show.usage_heatmaps(
        usage, fq.KINDS, "a title that is a good deal longer than it should be (x)"
    ).to_dict()
    assert len(spec["hconcat"]) == 3 and spec["title"] == [
        "a title that is a good deal longer than it should be", "(x)",
    ]  # fmt: skip
    assert all(p["width"] == 150 and p["height"] == 60 for p in spec["hconcat"])
    heads = show.usage_heatmaps(
        usage, ("q",), "t", per_head=True, layers=[1], heads=[0, 2], row_height=18
    )
    heads = heads.to_dict()
    rows = [r for values in heads["datasets"].values() for r in values]  # altair hoists the data
    assert heads["hconcat"][0]["height"] == 36 and {r["head"] for r in rows} == {0, 2}
    assert {r["layer"] for r in rows} == {1} and len(rows) == 2 * 4
    strip = show.head_strip_chart([usage, usage], [0, 1], 0.25, threshold=0.2).to_dict()
    assert sorted(len(v) for v in strip["datasets"].values()) == [1, 2 * 2 * 3]  # rule, dots
    assert [{"threshold": 0.2}] in strip["datasets"].values() and strip["width"] == 520
    assert show.wrap_title("short") == "short"


def test_the_nope_control_needs_rope_above_a_flat_control():
    from ropebook.analysis import frequencies as fq

    flat = np.array([0.01, -0.02, 0.0, 0.01])
    rope = {"q": np.array([0.6, 0.7, 0.65, 0.62]), "k": np.array([0.5, 0.55, 0.6, 0.52])}
    control = {"q": flat, "k": flat}
    assert fq.control_reading(rope, control, bound=0.2).verdict == "held"
    # a flat control beside a RoPE model with no structure either: the control proves nothing,
    # and its flatness (true by construction) no longer makes the claim "partly"
    same = {"q": flat + np.array([0.01, -0.01, 0.02, -0.02]), "k": flat[::-1]}
    reading = fq.control_reading(same, control, bound=0.2)
    assert reading.flat == {"q": "held", "k": "held"} and reading.verdict == "cannot decide"
    # RoPE less structured than its control: the contrast is established the other way
    below = {k: flat[::-1] - 0.5 for k in ("q", "k")}
    reading = fq.control_reading(below, control, bound=0.2)
    assert reading.verdict == "not held" and reading.flat == {"q": "held", "k": "held"}
    # one kind established, the other not: partly
    half = {"q": rope["q"], "k": same["k"]}
    assert fq.control_reading(half, control, bound=0.2).verdict == "partly"
    # spread too wide to tell anything
    noisy = np.array([0.3, -0.3, 0.25, -0.2])
    assert (
        fq.control_reading({"q": noisy, "k": noisy}, {"q": -noisy, "k": -noisy}, bound=0.2).verdict
        == "cannot decide"
    )
