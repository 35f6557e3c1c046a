"""The ablation verdict rules on synthetic numbers, each reaching every verdict it can return:
the Table 2 ranking (per-seed Kendall τ against 0), seed noise against the gaps (chi-square
interval of the s.d.), and which steps of a p sweep can fail at all (planes past a quarter turn).
"""

import math

import pytest
from scipy import stats

from ropebook.analysis import ablation


def _tau(*values: float) -> tuple[float, float, ablation.Estimate]:
    """A :func:`ablation.kendall_taus` entry whose per-seed τ are ``values`` (τ and p of the mean
    ranking set to what the old rule leaned on: they must not matter)."""
    return (0.9, 0.001, ablation.estimate(values))


@pytest.mark.parametrize(
    ("domains", "verdict"),
    [
        ([(0.6, 0.7, 0.65), (0.5, 0.55, 0.6)], "held"),  # every seed agrees, both domains
        ([(-0.6, -0.7, -0.65), (-0.5, -0.55, -0.6)], "not held"),  # every seed reversed
        ([(0.6, 0.7, 0.65), (-0.3, 0.4, 0.05)], "partly"),  # held on one, open on the other
        ([(-0.3, 0.4, 0.05), (0.5, -0.6, 0.2)], "cannot decide"),  # seeds disagree on both
        ([(-0.6, -0.7, -0.65), (-0.3, 0.4, 0.05)], "not held"),  # reversed on one, open on one
        ([(0.6,), (0.5,)], "cannot decide"),  # one seed: no interval over seeds, open
    ],
)
def test_rank_verdict_reaches_every_verdict_on_the_per_seed_tau(domains, verdict):
    assert ablation.rank_verdict([_tau(*d) for d in domains]) == verdict


def test_rank_verdict_does_not_lean_to_partly_on_a_near_zero_tau():
    """The old rule's lean: τ = +0.05 (p = 0.9) beside τ = −0.3 was "partly". Decided by seeds,
    a near-zero τ whose seeds straddle 0 leaves its domain open; reversed seeds decide against."""
    near_zero = (0.05, 0.9, ablation.estimate([-0.2, 0.3, 0.05]))
    reversed_ = (-0.3, 0.3, ablation.estimate([-0.3, -0.35, -0.25]))
    assert ablation.tau_verdict(near_zero[2]) == "cannot decide"
    assert ablation.rank_verdict([near_zero, reversed_]) == "not held"


def test_rank_verdict_from_seed_tables():
    """End to end through :func:`ablation.kendall_taus`: three seeds ranking a < b < c, on a
    domain where the paper agrees and one where it has the reverse order."""
    tables = {
        d: ablation.seed_table({"a": [1.0, 1.1, 1.2], "b": [2.0, 2.2, 2.1], "c": [3.0, 3.3, 3.1]})
        for d in ("prose", "code")
    }
    paper = {"W": {"a": 1.0, "b": 2.0, "c": 3.0}, "F": {"a": 3.0, "b": 2.0, "c": 1.0}}
    taus = ablation.kendall_taus(tables, paper)
    # every seed has τ = ±1 exactly: a zero-width interval, decided
    assert ablation.rank_verdict([taus["prose", "W"], taus["code", "W"]]) == "held"
    assert ablation.rank_verdict([taus["prose", "F"], taus["code", "F"]]) == "not held"
    assert ablation.rank_verdict([taus["prose", "W"], taus["code", "F"]]) == "partly"


def _paired(ratio: float, n: int, sd: float = 1.0) -> dict[str, float]:
    return {"seed_sd": sd, "gap": ratio * sd, "ratio": ratio, "n": n}


def _noise(*paired) -> ablation.SeedNoise:
    domains = [f"d{i}" for i in range(len(paired))]
    return ablation.SeedNoise(
        unpaired={d: {} for d in domains},
        paired=dict(zip(domains, paired, strict=True)),
        seed_cv={d: math.nan for d in domains},
        paper_gap={},
    )


def test_noise_ratio_interval_is_the_gap_over_the_sd_chi_square_interval():
    low, high = ablation.noise_ratio_interval(_paired(2.0, 3, sd=0.5))
    chi = stats.chi2.ppf([0.975, 0.025], 2)
    sd_low, sd_high = 0.5 * math.sqrt(2 / chi[0]), 0.5 * math.sqrt(2 / chi[1])
    assert (low, high) == pytest.approx((1.0 / sd_high, 1.0 / sd_low))
    assert high / low == pytest.approx(6.28 / 0.52, rel=0.02)  # 3 seeds: a factor of ~12
    assert ablation.noise_ratio_interval(_paired(0.0, 3, sd=0.0)) != (math.inf, math.inf)


@pytest.mark.parametrize(
    ("paired", "verdict"),
    [
        ((_paired(8.0, 3), _paired(10.0, 3)), "held"),  # gaps beyond 6.3× s.d. on both
        ((_paired(0.3, 3), _paired(0.4, 3)), "not held"),  # gaps under 0.52× s.d. on both
        ((_paired(8.0, 3), _paired(1.5, 3)), "partly"),  # held on one, open on the other
        ((_paired(2.0, 3), _paired(1.5, 3)), "cannot decide"),  # ratios > 1 as points only
        ((_paired(2.0, 3), _paired(0.3, 3)), "not held"),  # open on one, reversed on one
        ((_paired(2.0, 30), _paired(2.5, 30)), "held"),  # the same ratios, decided by seeds
        ((_paired(8.0, 3), None), "partly"),  # held on one, no paired seeds (open) on the other
        ((None, None), "cannot decide"),  # one seed: no paired noise, measured and open
    ],
)
def test_noise_verdict_reaches_every_verdict(paired, verdict):
    assert ablation.noise_verdict(_noise(*paired)) == verdict


def test_noise_verdict_from_seed_tables():
    """Three seeds, paired gaps of 1 against paired s.d. of 0.05 (held), then the same gaps with
    seed offsets that differ by encoding, so the paired s.d. swamps them (not held)."""
    quiet = {"a": [1.0, 1.05, 0.95], "b": [2.0, 2.05, 1.95], "c": [3.0, 3.1, 2.95]}
    loud = {"a": [1.0, 9.0, -5.0], "b": [2.0, -6.0, 8.0], "c": [3.0, 10.0, -4.0]}
    paper = {"W": {"a": 1.0, "b": 2.0, "c": 3.0}}
    for values, verdict in ((quiet, "held"), (loud, "not held")):
        tables = {"x": ablation.seed_table(values)}
        noise = ablation.seed_noise(tables, paper)
        assert noise.paired["x"]["n"] == 3
        assert ablation.noise_verdict(noise) == verdict, noise.paired


def test_noise_seeds_to_decide_is_the_first_count_that_decides():
    paired = _paired(2.0, 3)
    n = ablation.noise_seeds_to_decide(paired)
    assert n is not None and n > 3
    assert ablation.noise_domain_verdict({**paired, "n": n}) == "held"
    assert ablation.noise_domain_verdict({**paired, "n": n - 1}) == "cannot decide"
    assert ablation.noise_seeds_to_decide(_paired(8.0, 3)) == 3  # already decided
    assert ablation.noise_seeds_to_decide(_paired(1.0, 3), max_seeds=50) is None


def test_sweep_steps_differ_only_in_the_planes_one_rotates_and_the_other_frees():
    # d = 16, θ = 10⁴: planes g_k = 10⁴^(-k/8); p = 0.25, 0.5, 0.75 keep 2, 4, 6 of 8 planes
    g = [10_000.0 ** (-k / 8) for k in range(8)]
    assert ablation.changed_frequencies(16, 1e4, 0.5, 0.75) == pytest.approx(g[4:6])
    assert ablation.changed_frequencies(16, 1e4, 0.75, 0.5) == pytest.approx(g[4:6])
    assert ablation.dropped_turn(16, 128, 1e4, 0.5, 0.75) == pytest.approx(128 * g[4])
    assert ablation.dropped_turn(16, 128, 1e4, 0.5, 0.5) == 0.0  # nothing differs
    # the default reference is RoPE: the old reading, planes 0.75-RoPE frees
    assert ablation.dropped_turn(16, 128, 1e4) == pytest.approx(128 * g[6])
    # the lesson regime's steps at 128 tokens: 0.5 → 0.75 turns 1.28 rad, short of π/2
    assert not ablation.freed_planes_informative(16, 128, 1e4, 0.5, 0.75)
    assert ablation.freed_planes_informative(16, 128, 1e4, 0.25, 0.5)
    assert ablation.freed_planes_informative(16, 128, 1e4, 0.0, 0.25)
    edge = ablation.informative_length(16, 1e4, 0.5, 0.75)
    assert edge == math.ceil(ablation.INFORMATIVE_ANGLE / g[4])
    assert ablation.freed_planes_informative(16, edge, 1e4, 0.5, 0.75)
    assert not ablation.freed_planes_informative(16, edge - 1, 1e4, 0.5, 0.75)
    assert ablation.informative_length(16, 1e4, 0.5, 0.5) is None


@pytest.mark.parametrize(
    ("parts", "verdict"),
    [
        ([(True, "held"), (True, "held"), (False, "not held")], "held"),
        ([(True, "held"), (True, "cannot decide"), (False, "held")], "partly"),
        ([(True, "not held"), (True, "cannot decide"), (False, "held")], "not held"),
        ([(True, "cannot decide"), (False, "held")], "cannot decide"),
        ([(False, "held"), (False, "not held")], "uninformative here"),
    ],
)
def test_informative_combine_scores_only_the_parts_that_can_fail(parts, verdict):
    assert ablation.informative_combine(parts) == verdict
