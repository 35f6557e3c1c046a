"""The production layouts on language: a study kept in the repository (:mod:`ropebook.studies`).

The layouts chapter trains Gemma 3's, Gemma 4's, Llama 4's and Command A's layouts of local and
global layers (:mod:`ropebook.layouts`) on the recall and k-back tasks in every build. On
language, in the matched regime, the same six designs (all-RoPE, 0.75-RoPE everywhere and the four
hybrids) on ``--seeds`` seeds cost more than the build's budget leaves, so this study trains them
once (``python -m ropebook layout_language``) and keeps per run the validation loss at the
training length and the perplexity of held-out windows of 1×–``MAX_FACTOR``× the context
(:func:`ropebook.analysis.ablation.extrapolation_curve`, the p-sweep chapter's measure).

Every run keeps the mean of its last weights (``average_share``, as the recipe study's runs
do): the weights trained are unchanged, the two baselines are then the recipe study's own runs
(same specs, from the cache), and the study records the averaged model's loss too.
"""

from __future__ import annotations

from typing import Any

from ropebook import data, recipes, studies, zoo
from ropebook.analysis import ablation

STUDY, DOMAIN, REGIME = "layout_language", "shakespeare", "matched"
MODELS = (
    "rope",
    "p-rope-0.75",
    "layout-gemma3",
    "layout-gemma4",
    "layout-llama4",
    "layout-command-a",
)
MAX_FACTOR = 8
N_WINDOWS = 16
OVERRIDES = {"average_share": recipes.AVERAGE_SHARE}


def measure(
    seeds: tuple[int, ...], *, profile: str = "cpu", progress: bool = True
) -> list[dict[str, Any]]:
    """Train (or load) every model on ``seeds``; one record per run."""
    held_out = data.load_tokens(DOMAIN, "val")
    factors = ablation.length_factors(MAX_FACTOR)
    records = []
    for name in MODELS:
        runs = zoo.load_seeds(
            name, seeds, profile=profile, regime=REGIME, domain=DOMAIN, progress=progress,
            **OVERRIDES,
        )  # fmt: skip
        for run in runs:
            curve = ablation.extrapolation_curve(
                run.params, run.config, held_out, max_factor=MAX_FACTOR, n_windows=N_WINDOWS
            )
            records.append({
                "model": name, "seed": run.seed, "overrides": OVERRIDES,
                "spec_hash": run.spec_hash, "seconds": run.seconds,
                "last_loss": run.history["val"][-1]["loss"],
                "average_loss": run.history["val_average"]["loss"],
                "ppl_by_factor": {str(f): curve.ppl_at(f) for f in factors},
                "provenance": studies.provenance(run),
            })  # fmt: skip
    return records


def load() -> dict[str, Any]:
    return studies.load(STUDY)


def ppl(results: dict[str, Any], model: str, factor: int) -> list[float]:
    """Per-seed perplexities of ``model`` at ``factor`` × the context, in seed order."""
    runs = sorted((r for r in results["runs"] if r["model"] == model), key=lambda r: r["seed"])
    return [r["ppl_by_factor"][str(factor)] for r in runs]


def factors(results: dict[str, Any]) -> list[int]:
    return sorted(int(f) for f in results["runs"][0]["ppl_by_factor"])


def against_rope(
    results: dict[str, Any], factor: int, confidence: float = 0.95
) -> dict[str, ablation.Comparison]:
    """Every other model's perplexity at ``factor`` × the context against all-RoPE's, paired by
    seed (the difference in % of perplexity)."""
    rope = ppl(results, "rope", factor)
    return {
        name: ablation.compare(name, ppl(results, name, factor), "rope", rope, confidence, log=True)
        for name in results["models"]
        if name != "rope"
    }


def within(comparisons: dict[str, ablation.Comparison], margin: float) -> str:
    """``held`` if every paired difference's interval lies within ±``margin`` %, ``not held``
    if one lies wholly outside, else ``cannot decide``."""
    intervals = [(c.difference.low, c.difference.high) for c in comparisons.values()]
    if all(-margin < low and high < margin for low, high in intervals):
        return "held"
    if any(low > margin or high < -margin for low, high in intervals):
        return "not held"
    return "cannot decide"


def all_below(comparisons: dict[str, ablation.Comparison]) -> str:
    """``held`` if every paired difference's interval lies below 0, ``not held`` if one lies
    wholly above, else ``cannot decide``."""
    intervals = [(c.difference.low, c.difference.high) for c in comparisons.values()]
    if all(high < 0 for _, high in intervals):
        return "held"
    if any(low > 0 for low, _ in intervals):
        return "not held"
    return "cannot decide"


def main(argv: list[str] | None = None) -> int:
    parser = studies.seeds_parser(
        STUDY, "Train the production layouts on language and write their results file.", seeds=3
    )
    args = studies.parse(parser, argv)
    records = measure(tuple(range(args.seeds)), profile=args.profile)
    studies.write_from(
        STUDY, args, records, regime=REGIME, domain=DOMAIN,
        models=list(MODELS), max_factor=MAX_FACTOR, n_windows=N_WINDOWS,
    )  # fmt: skip
    return 0
