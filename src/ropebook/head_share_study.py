"""Each head's fastest-band share on many lesson seeds: how many heads use the highest
frequencies strongly? A study kept in the repository (:mod:`ropebook.studies`).

The frequency-usage chapter counts, per seed, the heads whose queries or keys put at least
``high_head_share`` of their norm on the fastest ``band`` of the chunks
(:func:`ropebook.analysis.frequencies.head_high_share`), and reads "a few heads" over seeds (the
seed is the unit of replication: :func:`ropebook.analysis.frequencies.few_heads_reading`). The
build's five seeds disagree (none in some, one in others), so their interval of the mean count
spans the claim's lower line of one head. This study measures every head's share on the same
prompts (the chapter's ``n_prompts`` held-out Shakespeare passages of ``prompt_tokens`` tokens)
for ``--seeds`` lesson seeds once (``python -m ropebook head_share_study``) and keeps the shares,
so the chapter applies its own threshold and decides where the study's runs are the models its
profile trains and it read the same prompts and band (:func:`deciding_shares`), with the build's
own seeds beside. The seeds (16) were fixed before this study's data: the lesson seeds the other
kept lesson studies train (:mod:`ropebook.decay_study`, :mod:`ropebook.apostrophe_study`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ropebook import studies, zoo
from ropebook.analysis import frequencies as fq

STUDY, REGIME, DOMAIN = "head_share_study", "lesson", "shakespeare"
MODELS = ("rope",)  # the frequency-usage chapter's model_name
DIGITS = 6  # significant digits kept of each share (float32 carries about 7)


def measure(
    seeds: Sequence[int],
    *,
    profile: str = "cpu",
    n_prompts: int = 10,
    prompt_tokens: int = 0,
    band: float = 0.25,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Train (or load, from ``ROPEBOOK_CACHE``) the RoPE lesson model on ``seeds`` and keep each
    one's fastest-band share per head ``[layers, heads]`` on the chapter's prompts."""
    records = []
    for name in MODELS:
        runs = zoo.load_seeds(
            name, tuple(seeds), profile=profile, regime=REGIME, domain=DOMAIN, progress=progress
        )
        prompts = [
            ids
            for _, ids in fq.passages(DOMAIN, n_prompts, prompt_tokens or runs[0].config.context)
        ]
        for run in runs:
            shares = fq.head_high_share(fq.measure_zoo(run, prompts), band)
            records.append({
                "model": name, "domain": DOMAIN, "seed": run.seed, "overrides": {},
                "spec_hash": run.spec_hash, "seconds": run.seconds,
                "provenance": studies.provenance(run),
                "head_high": [[float(f"{v:.{DIGITS}g}") for v in layer] for layer in shares],
            })  # fmt: skip
    return records


def kept() -> dict[str, Any] | None:
    """The kept results file (:func:`ropebook.studies.kept`)."""
    return studies.kept(STUDY, load)


def _has_shares(run: dict[str, Any], results: dict[str, Any]) -> str | None:
    shares = np.asarray(run.get("head_high", []), dtype=np.float64)
    if shares.ndim != 2 or shares.size == 0 or not np.isfinite(shares).all():
        return "has no finite [layers, heads] shares"
    if shares.min() < 0 or shares.max() > 1:
        return "has a share outside [0, 1]"
    return None


def load(path=None) -> dict[str, Any]:
    """The kept results file, or a ValueError naming what is wrong with it (also a run whose
    shares are missing, not finite, outside [0, 1] or of another shape than the rest)."""
    results = studies.load_checked(STUDY, path, check_run=_has_shares, required=MODELS)
    if len(shapes := {np.shape(r["head_high"]) for r in results["runs"]}) > 1:
        where = studies.path_of(STUDY) if path is None else path
        raise ValueError(f"{where}: head shares of different shapes {sorted(shapes)}")
    return results


def shares(results: Mapping[str, Any]) -> tuple[list[np.ndarray], tuple[int, ...]]:
    """``([layers, heads] per seed, seeds)``: the RoPE runs' shares in seed order."""
    runs = sorted((r for r in results["runs"] if r["model"] == MODELS[0]), key=lambda r: r["seed"])
    return [np.asarray(r["head_high"], np.float64) for r in runs], tuple(r["seed"] for r in runs)


def deciding_shares(
    results: Mapping[str, Any] | None,
    profile: str,
    *,
    n_prompts: int,
    prompt_tokens: int,
    band: float,
) -> tuple[tuple[list[np.ndarray], tuple[int, ...]] | None, str]:
    """The study's shares and seeds where its runs are this profile's RoPE models read on the
    chapter's prompts and band (:func:`ropebook.studies.deciding`), else ``None``; with the
    reason in words either way (for the page)."""
    settings = {"n_prompts": n_prompts, "prompt_tokens": prompt_tokens, "band": band}
    return studies.deciding(
        None if results is None else dict(results), profile, study=STUDY, read=shares,
        settings=settings, models=MODELS,
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = studies.seeds_parser(
        STUDY, "Measure every head's fastest-band share on many lesson seeds (the frequency-usage "
        "chapter's high-frequency heads) and write their results file.",
    )  # fmt: skip
    parser.add_argument("--n-prompts", type=int, default=10, help="prompts (the chapter's)")
    parser.add_argument(
        "--prompt-tokens", type=int, default=0, help="tokens per prompt (0: the context)"
    )
    parser.add_argument("--band", type=float, default=0.25, help="the chapter's band")
    args = studies.parse(parser, argv, {"n_prompts": (1, "a share needs a prompt")})
    if not 0 < args.band <= 1:
        parser.error(f"--band must be in (0, 1], got {args.band}")
    records = measure(
        range(args.seeds), profile=args.profile, n_prompts=args.n_prompts,
        prompt_tokens=args.prompt_tokens, band=args.band,
    )  # fmt: skip
    studies.write_from(
        STUDY, args, records, regime=REGIME, domain=DOMAIN,
        settings=("n_prompts", "prompt_tokens", "band"), models=list(MODELS),
    )  # fmt: skip
    return 0
