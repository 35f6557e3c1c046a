"""The verdict rules on kept studies: a build's agreement with a kept study is an equivalence
test against the margin fixed before the data (never "held" because a wide interval contains 0),
and the recipe claim is decided on fresh seeds only (never on the best of the discovery seeds)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ropebook import claims, recipes, studies
from ropebook.present import recipes as show_recipes
from ropebook.stats import anatomy

MARGIN = recipes.MARGIN  # % of perplexity


def made(difference: tuple[float, float, float], n_here: int = 3, n_kept: int = 60):
    """An agreement whose Welch interval (study − build, %) is ``difference``, from seeds that
    could show agreement (a kept study's s.d. of 0.1 %: the interval at a difference of 0 is
    narrow), so an open test is open on the data, not by design."""
    return studies.Agreement(
        (0.0, -1.0, 1.0),
        (0.0, -0.1, 0.1),
        difference,
        0.5,
        n_here,
        n_kept,
        sd_here=1e-3,
        sd_kept=1e-3,
    )


@pytest.mark.parametrize(
    ("difference", "verdict"),
    [
        ((0.0, -0.3, 0.3), "held"),  # inside the margin
        ((0.3, 0.1, 0.45), "held"),  # a difference detected, but smaller than the margin
        ((1.2, 0.8, 1.6), "not held"),  # excludes 0, beyond the margin
        ((-0.6, -1.1, -0.05), "not held"),  # excludes 0, reaches past the margin
        ((0.1, -2.0, 2.2), "cannot decide"),  # contains 0, reaches past the margin
        ((0.0, -0.4, 0.7), "cannot decide"),  # contains 0, one end past the margin
    ],
)
def test_equivalence_reaches_each_verdict(difference, verdict):
    agreement = made(difference)
    assert agreement.equivalence(MARGIN) == verdict
    assert agreement.verdict(MARGIN) == verdict
    assert show_recipes.agreement_verdict(agreement, {}) == verdict  # MARGIN by default
    rows = show_recipes.agreement_rows({"matched": (agreement, {})})
    assert rows[0][f"agree within ±{MARGIN:g} %"] == verdict  # a disagreement shown, not hidden


def test_a_wide_interval_containing_zero_is_not_agreement():
    """The weak test (the interval contains 0) says "held" on few seeds whatever the truth; the
    equivalence test cannot decide there, and the page calls it uninformative: 2 seeds at the
    study's 1 % s.d. could not show agreement within the margin even at a difference of 0."""
    rng = np.random.default_rng(0)
    kept = 0.01 * rng.standard_normal(60)  # the study: 1 % s.d. over 60 seeds
    build = 0.01 + 0.01 * rng.standard_normal(2)  # 2 build seeds, 1 % off
    agreement = studies.agreement(build, kept)
    assert agreement.agree and agreement.verdict() == "held"  # the weak test: "held"
    assert agreement.equivalence(MARGIN) == "cannot decide"
    assert not agreement.can_show_agreement(MARGIN)
    assert show_recipes.agreement_verdict(agreement, {}) == "uninformative here"


def test_equivalence_on_samples_reaches_held_and_not_held():
    rng = np.random.default_rng(1)
    kept = 0.001 * rng.standard_normal(60)  # 0.1 % s.d.: a tight study
    same = studies.agreement(0.001 * rng.standard_normal(12), kept)
    assert same.equivalence(MARGIN) == "held"
    apart = studies.agreement(0.02 + 0.001 * rng.standard_normal(12), kept)  # 2 % above
    assert apart.equivalence(MARGIN) == "not held"
    one = studies.agreement([0.0], kept)
    assert one.equivalence(MARGIN) == "cannot decide"  # one seed: open, no interval
    with pytest.raises(ValueError, match="margin"):
        same.equivalence(0.0)


def test_specs_that_differ_leave_the_test_uninformative():
    agreement = made((0.0, -0.3, 0.3))
    other = {"n_heads": (2, 4)}
    assert show_recipes.agreement_verdict(agreement, other) == "uninformative here"
    assert "--profile cpu" in show_recipes.agreement_to_decide(agreement, other)


def test_seeds_to_agree_fit_welchs_interval_inside_the_margin():
    rng = np.random.default_rng(2)
    kept = 0.002 * rng.standard_normal(60)
    build = 0.01 * rng.standard_normal(3)
    build -= build.mean() - kept.mean()  # the same mean: only the build's spread stands out
    agreement = studies.agreement(build, kept)
    assert agreement.equivalence(MARGIN) == "cannot decide"
    n = agreement.seeds_to_agree(MARGIN)
    assert n is not None and n > 3

    def half(n_here: int) -> float:  # Welch's half-width in nats at n_here build seeds
        va, vb = agreement.sd_here**2 / n_here, agreement.sd_kept**2 / 60
        dof = (va + vb) ** 2 / (va**2 / (n_here - 1) + vb**2 / 59)
        return stats.t.ppf(0.975, dof) * math.sqrt(va + vb)

    room = math.log1p(MARGIN / 100)
    assert half(n) <= room < half(n - 1)
    assert f"about {n} paired seeds" in show_recipes.agreement_to_decide(agreement, {})
    # a mean difference past the margin: no count of the build's seeds fits it inside
    far = studies.agreement(build + 0.01, kept)
    assert far.seeds_to_agree(MARGIN) is None
    assert "seeds on both sides" in show_recipes.agreement_to_decide(far, {})
    one = studies.agreement([0.0], kept)
    assert one.seeds_to_agree(MARGIN) is None
    assert "at least 2 paired seeds" in show_recipes.agreement_to_decide(one, {})


def result(recipe: str, ratio: tuple[float, float, float], n: int = 8) -> recipes.RecipeResult:
    """A recipe result whose s.d. ratio to today's is ``(value, low, high)``."""
    estimate = anatomy.Estimate(1.0, 0.5, 1.5, "t")
    return recipes.RecipeResult(
        recipe, n, {a: 3.0 for a in recipes.ARMS}, estimate, estimate,
        anatomy.Estimate(*ratio, "Pitman-Morgan"), None,
    )  # fmt: skip


TODAY = result("today", (1.0, 1.0, 1.0))


@pytest.mark.parametrize(
    ("ratio", "verdict"),
    [
        ((0.5, 0.3, 0.8), "held"),
        ((1.6, 1.2, 2.1), "not held"),
        ((0.9, 0.6, 1.3), "cannot decide"),
    ],
)
def test_recipe_verdict_on_fresh_seeds(ratio, verdict):
    confirmed = (TODAY, result("half the peak LR", ratio))
    assert show_recipes.recipe_verdict(confirmed) == verdict
    assert verdict == claims.verdict_from_interval(ratio[1], ratio[2], threshold=1, above=False)
    text = show_recipes.recipe_to_decide(result("LR to zero", (0.4, 0.2, 0.7)), confirmed)
    assert "half the peak LR" in text and "8 now" in text


def test_recipe_verdict_without_fresh_seeds_cannot_decide():
    """However far below 1 the best discovery candidate's ratio lies, it was picked as the best
    of several on those seeds: no verdict without seeds it was not picked on."""
    best = result("LR to zero", (0.3, 0.1, 0.5))  # "held" were the discovery seeds a test
    assert show_recipes.recipe_verdict(None) == "cannot decide"
    text = show_recipes.recipe_to_decide(best, None)
    assert "'cosine to 0'" in text and "fresh paired seeds" in text and "--confirm" in text
    averaged = show_recipes.recipe_to_decide(result("tail average", (0.5, 0.3, 0.8)), None)
    assert "a schedule other than today's" in averaged


def test_recipe_verdict_on_a_results_file_with_and_without_a_confirmation():
    rng = np.random.default_rng(3)
    noises = {recipes.TODAY: 0.02, "cosine to 0": 0.005, "half the peak LR": 0.005,
              "twice the batch": 0.03}  # fmt: skip
    runs = [
        {"schedule": schedule, "model": model, "seed": seed, "last_loss": loss,
         "average_loss": loss, "tail_losses": [loss]}
        for schedule, noise in noises.items()
        for seed in (range(16) if schedule in (recipes.TODAY, "half the peak LR") else range(8))
        for model, loss in zip(recipes.ARMS, 3 + noise * rng.standard_normal(2), strict=True)
    ]  # fmt: skip
    results = {"arms": list(recipes.ARMS), "seeds": list(range(16)),
               "discovery_seeds": list(range(8)), "runs": runs}  # fmt: skip
    assert show_recipes.recipe_verdict(recipes.confirmation(results)) == "cannot decide"
    results["confirmation"] = {"schedule": "half the peak LR", "seeds": list(range(8, 16))}
    assert show_recipes.recipe_verdict(recipes.confirmation(results)) == "held"
