"""ropebook.scaling against transformers' ROPE_INIT_FUNCTIONS and against closed forms."""

import math

import numpy as np
import pytest

from ropebook import scaling

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402

RTOL = 2e-6  # float32 rounding of transformers' torch computation
# (head_dim, theta, scale, original context): small and Llama-sized heads, our matched regime
CASES = [
    (16, 10_000.0, 2.0, 64),
    (32, 200.0, 4.0, 128),
    (64, 10_000.0, 8.0, 512),
    (128, 10_000.0, 4.0, 4096),
    (128, 500_000.0, 8.0, 8192),
    (128, 1_000_000.0, 16.0, 2048),
]


def hf_rule(rope_type, head_dim, theta, seq_len=None, max_position=None, **params):
    config = transformers.LlamaConfig(
        hidden_size=head_dim * 2, num_attention_heads=2, head_dim=head_dim,
        max_position_embeddings=max_position or 2048,
        rope_parameters={"rope_type": rope_type, "rope_theta": theta, **params},
    )  # fmt: skip
    inv_freq, factor = ROPE_INIT_FUNCTIONS[rope_type](config, None, seq_len=seq_len)
    return inv_freq.numpy().astype(np.float64), float(factor)


def assert_same(ours: scaling.Scaled, theirs, rtol=RTOL):
    inv_freq, factor = theirs
    assert ours.frequencies.shape == inv_freq.shape
    np.testing.assert_allclose(ours.frequencies, inv_freq, rtol=rtol)
    assert ours.attention_factor == pytest.approx(factor, rel=1e-7)


@pytest.mark.parametrize("d,theta,s,L", CASES)
def test_pi_equals_transformers_linear(d, theta, s, L):
    assert_same(scaling.apply("pi", d, theta, s, L), hf_rule("linear", d, theta, factor=s))


@pytest.mark.parametrize("d,theta,s,L", CASES)
def test_dynamic_ntk_equals_transformers_dynamic_at_several_lengths(d, theta, s, L):
    for length in (L // 2, L, L + 1, 3 * L, int(s * L)):
        ours = scaling.apply("dynamic-ntk", d, theta, s, L, length)
        theirs = hf_rule("dynamic", d, theta, seq_len=length, max_position=L, factor=s)
        assert_same(ours, theirs)
    # up to L nothing changes
    np.testing.assert_allclose(
        scaling.apply("dynamic-ntk", d, theta, s, L, L).frequencies, scaling.default(d, theta)
    )


@pytest.mark.parametrize("d,theta,s,L", CASES)
def test_static_ntk_is_dynamic_ntk_with_factor_one_at_s_times_L(d, theta, s, L):
    """transformers has no static NTK-aware rule; dynamic with factor 1 at length sL is it."""
    theirs = hf_rule("dynamic", d, theta, seq_len=int(s * L), max_position=L, factor=1.0)
    assert_same(scaling.apply("ntk", d, theta, s, L), theirs)
    grid = scaling.ntk(d, theta, s, L).frequencies
    assert grid[0] == 1.0  # fastest chunk kept
    assert grid[-1] == pytest.approx(scaling.default(d, theta)[-1] / s)  # slowest interpolated


@pytest.mark.parametrize("d,theta,s,L", CASES)
def test_yarn_equals_transformers_yarn(d, theta, s, L):
    theirs = hf_rule("yarn", d, theta, factor=s, original_max_position_embeddings=L)
    assert_same(scaling.apply("yarn", d, theta, s, L), theirs)
    assert scaling.apply("yarn", d, theta, s, L).logit_scale == pytest.approx(
        (0.1 * math.log(s) + 1) ** 2
    )


def test_yarn_with_explicit_parameters_equals_transformers():
    params = dict(factor=4.0, original_max_position_embeddings=256, beta_fast=16, beta_slow=2,
                  attention_factor=1.3)  # fmt: skip
    theirs = hf_rule("yarn", 64, 10_000.0, **params)
    ours = scaling.yarn(64, 10_000.0, 4.0, 256, alpha=2, beta=16, attention_factor=1.3)
    assert_same(ours, theirs)


@pytest.mark.parametrize("d,theta,s,L", CASES)
def test_llama3_equals_transformers(d, theta, s, L):
    theirs = hf_rule(
        "llama3", d, theta, factor=s, low_freq_factor=1.0, high_freq_factor=4.0,
        original_max_position_embeddings=L,
    )  # fmt: skip
    assert_same(scaling.apply("llama3", d, theta, s, L), theirs)
    theirs = hf_rule(
        "llama3", d, theta, factor=s, low_freq_factor=2.0, high_freq_factor=8.0,
        original_max_position_embeddings=L,
    )  # fmt: skip
    assert_same(scaling.llama3(d, theta, s, L, low_freq_factor=2.0, high_freq_factor=8.0), theirs)


@pytest.mark.parametrize("d,theta,s,L", CASES)
def test_longrope_equals_transformers_short_and_long(d, theta, s, L):
    rng = np.random.default_rng(d)
    short = list(1 + rng.random(d // 2))
    long = list(1 + s * rng.random(d // 2))
    params = dict(
        short_factor=short, long_factor=long, factor=s, original_max_position_embeddings=L
    )
    for length in (L, L + 1, 4 * L):
        theirs = hf_rule("longrope", d, theta, seq_len=length, max_position=int(s * L), **params)
        ours = scaling.longrope(d, theta, L, length, short_factor=short, long_factor=long, scale=s)
        assert_same(ours, theirs)
    assert ours.attention_factor == pytest.approx(math.sqrt(1 + math.log(s) / math.log(L)))


def test_yarn_paper_ramp_is_linear_in_turns_and_differs_from_transformers():
    d, theta, L = 128, 10_000.0, 4096
    r = scaling.turns(scaling.default(d, theta), L)
    paper = scaling.yarn_ramp(d, theta, L, ramp="paper")
    hf = scaling.yarn_ramp(d, theta, L)
    np.testing.assert_allclose(paper[r >= 32], 1.0)
    np.testing.assert_allclose(paper[r <= 1], 0.0)
    between = (r > 1) & (r < 32)
    np.testing.assert_allclose(paper[between], (r[between] - 1) / 31)
    # transformers: linear in k between floor(k where r = 32) and ceil(k where r = 1)
    lo = math.floor(scaling.correction_index(32, d, theta, L))
    hi = math.ceil(scaling.correction_index(1, d, theta, L))
    k = np.arange(d // 2)
    np.testing.assert_allclose(hf, 1 - np.clip((k - lo) / (hi - lo), 0, 1))
    assert np.abs(paper - hf).max() > 0.1  # the two ramps are not the same function
    # both keep the fastest chunk and fully interpolate the slowest
    assert paper[0] == hf[0] == 1.0 and paper[-1] == hf[-1] == 0.0


def test_closed_forms_and_identities():
    d, theta, L = 32, 200.0, 128
    grid = scaling.default(d, theta)
    np.testing.assert_allclose(scaling.apply("pi", d, theta, 4, L).frequencies, grid / 4)
    for name in scaling.METHODS:  # s = 1 changes nothing
        s1 = scaling.apply(name, d, theta, 1.0, L, L)
        np.testing.assert_allclose(s1.frequencies, grid, rtol=1e-12)
        assert s1.logit_scale == 1.0
    # NTK: slowest chunk slowed by exactly s, geometric in between
    ratio = scaling.ntk(d, theta, 8, L).frequencies / grid
    np.testing.assert_allclose(ratio, 8.0 ** (-np.arange(d // 2) * 2 / (d - 2)))
    assert scaling.dynamic_scale(4, L, 3 * L) == pytest.approx(4 * 3 - 3)
    assert scaling.turns(np.array([2 * np.pi]), 3.0)[0] == pytest.approx(3.0)


def test_unknown_names_and_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"unknown RoPE scaling method 'rope2'.*valid.*yarn"):
        scaling.apply("rope2", 16, 1e4, 2, 64)
    with pytest.raises(ValueError, match="needs the evaluated length"):
        scaling.apply("dynamic-ntk", 16, 1e4, 2, 64)
    with pytest.raises(ValueError, match="scale s must be >= 1"):
        scaling.apply("pi", 16, 1e4, 0.5, 64)
    with pytest.raises(ValueError, match="head_dim"):
        scaling.apply("pi", 15, 1e4, 2, 64)
    with pytest.raises(ValueError, match="unknown YaRN ramp"):
        scaling.yarn_ramp(16, 1e4, 64, ramp="cubic")
    with pytest.raises(ValueError, match="head_dim/2 = 8"):
        scaling.longrope(16, 1e4, 64, 32, short_factor=[1] * 3, long_factor=[1] * 3, scale=2)
