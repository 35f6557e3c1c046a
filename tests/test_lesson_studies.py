"""The kept lesson-regime studies of the decay, pe_zoo and semantic-channels chapters: each
measures what its chapter measures, round-trips its file, names a broken one, and decides only where its runs are the
chapter's models read the chapter's way; a kept study may decide a run's verdicts only for the
reasons :func:`ropebook.studies.why_not_deciding` names, each reached here."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ropebook import (
    apostrophe_study,
    data,
    decay_study,
    head_share_study,
    layout_language,
    layout_ratio,
    pe_zoo_study,
    studies,
    table2_study,
    zoo,
)
from ropebook.analysis import biases, decay
from ropebook.analysis import frequencies as fq
from ropebook.analysis import semantic as sem

SEEDS = (0, 1, 2)


@pytest.fixture
def held_out(tiny_zoo, monkeypatch):
    """The tiny zoo, and random held-out tokens in place of the corpora's splits."""

    def tokens(domain, split, vocab_size=data.DEFAULT_VOCAB, **_):
        rng = np.random.default_rng([data.DOMAINS.index(domain), len(split), 7])
        return rng.integers(0, vocab_size, 6_000).astype(np.uint16)

    monkeypatch.setattr(data, "load_tokens", tokens)
    return tokens


def written(module, tmp_path, records, **about):
    path = tmp_path / f"{module.STUDY}.json"
    studies.write(
        module.STUDY, records, profile="smoke", regime="lesson", domain="shakespeare",
        command=f"python -m ropebook {module.STUDY}", path=path, models=list(module.MODELS),
        **about,
    )  # fmt: skip
    return module.load(path)


# ---------------------------------------------------------------- decay_study


def test_the_decay_study_keeps_the_chapters_curves_and_its_verdict(held_out, tmp_path):
    records = decay_study.measure(
        SEEDS, profile="smoke", n_windows=3, window_seed=5, progress=False
    )
    assert [(r["model"], r["seed"]) for r in records] == [
        (n, s) for n in decay_study.MODELS for s in SEEDS
    ]
    tokens = held_out("shakespeare", "test")
    full = {}  # the chapter's reading: [layers, windows, T] per model and seed
    for name in decay_study.MODELS:
        for s in SEEDS:
            model = zoo.load(name, seed=s, profile="smoke", progress=False)
            full[name, s] = decay.held_out_curves(model, tokens, 3, 5)
    kept = next(r for r in records if (r["model"], r["seed"]) == ("rope", 1))
    np.testing.assert_allclose(kept["curves"], full["rope", 1].mean(axis=1), rtol=1e-5, atol=1e-9)

    results = written(decay_study, tmp_path, records, n_windows=3, window_seed=5)
    found, why = decay_study.deciding_curves(results, "smoke", n_windows=3, window_seed=5)
    assert found is not None and "3 paired seeds" in why
    curves, seeds = found
    names = list(decay_study.MODELS)
    from_study = decay.trained_decay(curves, names, seeds, 2, confidence=0.99)
    from_chapter = decay.trained_decay(full, names, SEEDS, 2, confidence=0.99)
    assert from_study.over == from_chapter.over == "3 seeds"
    for ours, theirs in zip(from_study.rows, from_chapter.rows, strict=True):
        assert ours["behaviour"] == theirs["behaviour"]
        assert ours[decay.CONTRAST] == pytest.approx(theirs[decay.CONTRAST], rel=1e-4, abs=1e-6)


def decay_records(seeds=SEEDS, layers=2, t=8):
    return [
        {
            "model": n, "domain": "shakespeare", "seed": s, "overrides": {},
            "spec_hash": zoo.spec_hash(n, seed=s, profile="smoke"),
            "curves": np.linspace(1.0 + s, 0.0, layers * t).reshape(layers, t).tolist(),
        }
        for n in decay_study.MODELS
        for s in seeds
    ]  # fmt: skip


def test_a_broken_decay_study_names_the_problem(tmp_path):
    bad = decay_records()
    bad[0]["curves"] = [[1.0, float("nan")]]
    with pytest.raises(ValueError, match="rope seed 0 has no finite"):
        written(decay_study, tmp_path, bad)
    uneven = decay_records()
    uneven[1]["curves"] = [[1.0, 2.0]]
    with pytest.raises(ValueError, match="curves of different shapes"):
        written(decay_study, tmp_path, uneven)
    with pytest.raises(ValueError, match="no runs of \\['p-rope-0.75'\\]"):
        written(decay_study, tmp_path, [r for r in decay_records() if r["model"] == "rope"])


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({}, None),
        ({"profile": "cpu"}, "trained the smoke profile's models"),
        ({"n_windows": 8}, "n_windows = 4 (this run: 8)"),
        ({"window_seed": 1}, "window_seed = 0 (this run: 1)"),
        ({"models": ["rope", "nope"]}, "no runs of nope"),
        ({"seeds": (0, 1)}, "2 paired seed(s)"),
    ],
)
def test_the_decay_study_decides_only_on_the_chapters_models_and_windows(tmp_path, change, reason):
    results = written(decay_study, tmp_path, decay_records(change.get("seeds", SEEDS)),
                      n_windows=4, window_seed=0)  # fmt: skip
    found, why = decay_study.deciding_curves(
        results, change.get("profile", "smoke"), n_windows=change.get("n_windows", 4),
        window_seed=change.get("window_seed", 0), models=change.get("models", decay_study.MODELS),
    )  # fmt: skip
    if reason is None:
        assert found is not None and why.startswith("the kept study's 3 paired seeds (")
        assert found[0]["rope", 2].shape == (2, 1, 8)  # [layers, one window: the mean, T]
    else:
        assert found is None and reason in why


def test_a_stale_or_absent_study_does_not_decide(tmp_path):
    runs = decay_records()
    runs[0]["spec_hash"] = "0" * 16
    results = written(decay_study, tmp_path, runs, n_windows=4, window_seed=0)
    found, why = decay_study.deciding_curves(results, "smoke", n_windows=4, window_seed=0)
    assert found is None and "stale" in why
    assert decay_study.deciding_curves(None, "smoke", n_windows=4, window_seed=0) == (
        None, "no kept study (python -m ropebook decay_study makes it)",
    )  # fmt: skip


def test_the_study_commands_refuse_bad_arguments_before_measuring(capsys):
    for main, argv, message in [
        (decay_study.main, ["--seeds", "2"], "at least 3"),
        (decay_study.main, ["--n-windows", "0"], "--n-windows must be at least 1"),
        (pe_zoo_study.main, ["--max-factor", "6"], "power of two"),
        (pe_zoo_study.main, ["--seeds", "1"], "at least 3"),
        (apostrophe_study.main, ["--seeds", "2"], "at least 3"),
        (apostrophe_study.main, ["--n-windows", "1"], "--n-windows must be at least 2"),
        (apostrophe_study.main, ["--max-distance", "0"], "--max-distance must be at least 1"),
    ]:
        with pytest.raises(SystemExit):
            main(argv)
        assert message in capsys.readouterr().err


# ---------------------------------------------------------------- pe_zoo_study


def test_the_pe_zoo_study_keeps_the_chapters_growth_and_its_orderings(held_out, tmp_path):
    records = pe_zoo_study.measure(SEEDS, profile="smoke", max_factor=2, n_windows=2,
                                   progress=False)  # fmt: skip
    results = written(pe_zoo_study, tmp_path, records, max_factor=2, n_windows=2)
    found, why = pe_zoo_study.deciding_losses(
        results, "smoke", domain="shakespeare", max_factor=2, n_windows=2
    )
    assert found is not None
    kept_loss, seeds = found
    tokens = held_out("shakespeare", "val")
    full = {}  # the chapter's reading: [windows, lengths] per model and seed
    for name in pe_zoo_study.MODELS:
        for s in SEEDS:
            model = zoo.load(name, seed=s, profile="smoke", progress=False)
            context = model.config.context
            losses = biases.window_losses(model, tokens, 2 * context, 2)
            full[name, s] = biases.mean_loss_by_length(losses, [context, 2 * context])
    checks = biases.ordering_checks(pe_zoo_study.MODELS, biases.CABLE_RATIO)
    ours, verdicts = biases.ordering_verdicts(kept_loss, checks, seeds, 0.95)
    theirs, their_verdicts = biases.ordering_verdicts(full, checks, SEEDS, 0.95)
    assert verdicts == their_verdicts
    for pair, interval in ours.items():
        np.testing.assert_allclose(interval, theirs[pair], rtol=1e-5, atol=1e-7)


def pe_records(seeds=SEEDS, growth=None, lengths=4):
    growth = growth or {"rope": 0.4, "fire": 0.3, "kerple": 0.2, "alibi": 0.1}
    # seed-to-seed noise that averages to exactly zero over an even number of seeds, so equal
    # growths give an interval centred on 0 rather than one that chance may push off it
    return [
        {
            "model": n, "domain": "shakespeare", "seed": s, "overrides": {},
            "spec_hash": zoo.spec_hash(n, seed=s, profile="smoke"),
            "mean_loss": [3.0 + (growth[n] + 0.01 * (-1) ** s * (1 + i)) * k / (lengths - 1)
                          for k in range(lengths)],
        }
        for i, n in enumerate(pe_zoo_study.MODELS)
        for s in seeds
    ]  # fmt: skip


def test_a_broken_pe_zoo_study_names_the_problem(tmp_path):
    short = pe_records()
    short[2]["mean_loss"] = [3.0, 3.1]
    with pytest.raises(ValueError, match="rope seed 2 has no finite mean loss at each of the 4"):
        written(pe_zoo_study, tmp_path, short, max_factor=8, n_windows=4)
    with pytest.raises(ValueError, match="no valid max_factor"):
        written(pe_zoo_study, tmp_path, pe_records(), max_factor=6, n_windows=4)
    with pytest.raises(ValueError, match="no runs of \\['fire'\\]"):
        written(pe_zoo_study, tmp_path, [r for r in pe_records() if r["model"] != "fire"],
                max_factor=8, n_windows=4)  # fmt: skip
    path = tmp_path / "broken.json"
    path.write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        pe_zoo_study.load(path)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({}, None),
        ({"domain": "python"}, "domain = shakespeare (this run: python)"),
        ({"max_factor": 4}, "max_factor = 8 (this run: 4)"),
        ({"n_windows": 16}, "n_windows = 4 (this run: 16)"),
    ],
)
def test_the_pe_zoo_study_decides_only_when_read_the_chapters_way(tmp_path, change, reason):
    results = written(pe_zoo_study, tmp_path, pe_records(), max_factor=8, n_windows=4)
    found, why = pe_zoo_study.deciding_losses(
        results, "smoke", domain=change.get("domain", "shakespeare"),
        max_factor=change.get("max_factor", 8), n_windows=change.get("n_windows", 4),
    )  # fmt: skip
    assert (found is None) == (reason is not None)
    assert reason in why if reason else found[0]["fire", 1].shape == (1, 4)


@pytest.mark.parametrize(
    ("growth", "alibi", "whole"),
    [
        ({"rope": 0.4, "fire": 0.3, "kerple": 0.2, "alibi": 0.1}, "held", "held"),
        ({"rope": 0.1, "fire": 0.2, "kerple": 0.3, "alibi": 0.4}, "not held", "not held"),
        ({"rope": 0.3, "fire": 0.4, "kerple": 0.2, "alibi": 0.1}, "held", "partly"),
        ({"rope": 0.1, "fire": 0.1, "kerple": 0.1, "alibi": 0.1}, "cannot decide", "cannot decide"),
    ],
)
def test_ordering_verdicts_reach_each_verdict_over_seeds(growth, alibi, whole):
    records = pe_records(seeds=(0, 1, 2, 3), growth=growth)
    mean_loss = {(r["model"], r["seed"]): np.asarray(r["mean_loss"])[None] for r in records}
    checks = biases.ordering_checks(pe_zoo_study.MODELS, biases.CABLE_RATIO)
    difference, verdicts = biases.ordering_verdicts(mean_loss, checks, (0, 1, 2, 3), 0.95)
    assert verdicts["ALiBi degrades least"] == alibi
    assert verdicts[biases.WHOLE_ORDER] == whole
    assert difference["rope", "alibi"][0] == pytest.approx(
        growth["rope"] - growth["alibi"], abs=0.05
    )
    _, one_seed = biases.ordering_verdicts(mean_loss, checks, (0,), 0.95)
    assert set(one_seed.values()) == {"cannot decide"}  # one seed decides no ordering


def test_a_study_pairs_on_the_seeds_every_model_has(tmp_path):
    runs = [r for r in decay_records((0, 1, 2, 3)) if not (r["model"] == "rope" and r["seed"] == 3)]
    results = written(decay_study, tmp_path, runs, n_windows=4, window_seed=0)
    assert studies.paired_seeds(results) == [0, 1, 2]
    assert json.loads(json.dumps(results))["seeds"] == [0, 1, 2, 3]  # all kept, three paired


def test_the_kept_decay_study_is_current_and_decides_the_cpu_build():
    """data/results/decay_study.json: the cpu profile's lesson RoPE and 0.75-RoPE as the code
    trains them today, 16 paired seeds, read on the decay chapter's default windows."""
    results = decay_study.kept()
    assert results is not None and results["profile"] == "cpu"
    assert results["command"] == (
        "python -m ropebook decay_study --profile cpu --seeds 16 --n-windows 64 --window-seed 0"
    )
    assert studies.stale(results) == []
    found, why = decay_study.deciding_curves(
        results, "cpu", n_windows=64, window_seed=0, models=list(decay_study.MODELS)
    )
    assert found is not None and "16 paired seeds" in why and results["commit"][:7] in why
    assert (
        decay_study.deciding_curves(
            results, "smoke", n_windows=64, window_seed=0, models=list(decay_study.MODELS)
        )[0]
        is None
    )  # smoke trains other models


def test_the_kept_pe_zoo_study_is_current_and_decides_the_cpu_build():
    """data/results/pe_zoo_study.json: the cpu profile's lesson zoo as the code trains it today,
    16 paired seeds, read on the pe_zoo chapter's default corpus, lengths and windows."""
    results = pe_zoo_study.kept()
    assert results is not None and results["profile"] == "cpu"
    assert results["command"] == (
        "python -m ropebook pe_zoo_study --profile cpu --seeds 16 --domain shakespeare "
        "--max-factor 8 --n-windows 16"
    )
    assert studies.stale(results) == []
    found, why = pe_zoo_study.deciding_losses(
        results, "cpu", domain="shakespeare", max_factor=8, n_windows=16
    )
    assert found is not None and "16 paired seeds" in why and results["commit"][:7] in why
    assert (
        pe_zoo_study.deciding_losses(
            results, "smoke", domain="shakespeare", max_factor=8, n_windows=16
        )[0]
        is None
    )


# ---------------------------------------------------------------- apostrophe_study


@pytest.fixture
def apostrophe_texts(tiny_zoo, monkeypatch):
    """The tiny zoo, and a held-out "corpus" of random characters in which ids 5 and 9 decode to
    apostrophes, so every scan has apostrophe queries to read."""
    rng = np.random.default_rng(3)
    texts = [("work", "".join(rng.choice(list("ab'cd e"), 2_000)))]
    monkeypatch.setattr(data, "load_texts", lambda domain, split: texts)
    monkeypatch.setattr(
        data, "encode", lambda text, bos=False: np.array([ord(c) % 64 for c in text])
    )
    monkeypatch.setattr(data, "decode", lambda ids: "'" if list(ids) in ([5], [9]) else "x")


def test_the_apostrophe_study_keeps_the_chapters_heads_and_lifts(apostrophe_texts, tmp_path):
    records = apostrophe_study.measure(SEEDS, profile="smoke", n_windows=4, window_seed=2,
                                       max_distance=4, progress=False)  # fmt: skip
    assert [(r["model"], r["seed"]) for r in records] == [
        (n, s) for n in ("rope", "nope") for s in SEEDS
    ]
    models = {(n, s): zoo.load(n, seed=s, profile="smoke", progress=False)
              for n in ("rope", "nope") for s in SEEDS}  # fmt: skip
    context = models["rope", 0].config.context
    documents = [data.encode(t) for _, t in data.load_texts("shakespeare", "test")]
    class_ids = sem.class_token_ids(data.decode, models["rope", 0].config.vocab_size)
    assert class_ids.tolist() == [5, 9]
    windows = [sem.bos_windows(documents, context, 2, np.random.default_rng([2, stream]))
               for stream in (71, 72)]  # the chapter's two halves  # fmt: skip
    selected, measured = (sem.scan_models(models, w, class_ids, max_distance=4) for w in windows)
    rope = sem.apostrophe_heads({s: selected["rope", s] for s in SEEDS},
                                {s: measured["rope", s] for s in SEEDS})  # fmt: skip
    controls = sem.apostrophe_controls(models, selected, measured, windows, class_ids,
                                       max_distance=4)  # fmt: skip
    results = written(apostrophe_study, tmp_path, records, n_windows=4, window_seed=2,
                      max_distance=4)  # fmt: skip
    found, why = apostrophe_study.deciding_lifts(results, "smoke", n_windows=4, window_seed=2,
                                                 max_distance=4)  # fmt: skip
    assert found is not None and "3 paired seeds" in why
    lifts, seeds = found
    assert seeds == SEEDS
    for name, chapter in [("rope", rope), ("nope", controls["nope"]),
                          ("untrained rope", controls["untrained rope"])]:  # fmt: skip
        kept = sem.seed_or_window_interval(lifts[name], None, len(seeds))
        assert (kept.mean, kept.low, kept.high) == pytest.approx(
            (chapter.lift.mean, chapter.lift.low, chapter.lift.high)
        )
    assert records[1]["head"] == list(rope.heads[1])
    _, _, chapter_excess = sem.apostrophe_bands({s: measured["rope", s] for s in SEEDS}, rope.heads)
    kept_excess = sem.seed_or_window_interval(apostrophe_study.key_excess(results), None, 3)
    assert (kept_excess.mean, kept_excess.low, kept_excess.high) == pytest.approx(
        (chapter_excess.mean, chapter_excess.low, chapter_excess.high)
    )  # the low-frequency claim's reading, kept seed by seed


def apostrophe_records(seeds=SEEDS, rope=0.3, nope=0.02, untrained=-0.01):
    return [
        {
            "model": n, "domain": "shakespeare", "seed": s, "overrides": {},
            "spec_hash": zoo.spec_hash(n, seed=s, profile="smoke"), "head": [1, 0],
            "lift": (rope if n == "rope" else nope) + 0.01 * (s - 1),
            **({"untrained_head": [0, 1], "untrained_lift": untrained + 0.001 * s,
                "key_excess": 0.05 + 0.01 * s} if n == "rope" else {}),
        }
        for n in ("rope", "nope")
        for s in seeds
    ]  # fmt: skip


def test_a_broken_apostrophe_study_names_the_problem(tmp_path):
    about = {"n_windows": 48, "window_seed": 0, "max_distance": 32}
    bad = apostrophe_records()
    bad[4]["lift"] = float("nan")
    with pytest.raises(ValueError, match="nope seed 1 has no finite lift"):
        written(apostrophe_study, tmp_path, bad, **about)
    bad = apostrophe_records()
    del bad[0]["untrained_lift"]
    with pytest.raises(ValueError, match="rope seed 0 has no finite untrained_lift"):
        written(apostrophe_study, tmp_path, bad, **about)
    bad = apostrophe_records()
    bad[2]["key_excess"] = None
    with pytest.raises(ValueError, match="rope seed 2 has no finite key_excess"):
        written(apostrophe_study, tmp_path, bad, **about)
    with pytest.raises(ValueError, match="no runs of \\['nope'\\]"):
        written(apostrophe_study, tmp_path, apostrophe_records()[:3], **about)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({}, None),
        ({"profile": "cpu"}, "trained the smoke profile's models"),
        ({"n_windows": 8}, "n_windows = 48 (this run: 8)"),
        ({"window_seed": 1}, "window_seed = 0 (this run: 1)"),
        ({"max_distance": 16}, "max_distance = 32 (this run: 16)"),
        ({"seeds": (0, 1)}, "2 paired seed(s)"),
    ],
)
def test_the_apostrophe_study_decides_only_read_the_chapters_way(tmp_path, change, reason):
    results = written(apostrophe_study, tmp_path, apostrophe_records(change.get("seeds", SEEDS)),
                      n_windows=48, window_seed=0, max_distance=32)  # fmt: skip
    found, why = apostrophe_study.deciding_lifts(
        results, change.get("profile", "smoke"), n_windows=change.get("n_windows", 48),
        window_seed=change.get("window_seed", 0), max_distance=change.get("max_distance", 32),
    )  # fmt: skip
    assert (found is None) == (reason is not None)
    if reason:
        assert reason in why
    else:
        assert found[0]["untrained rope"] == pytest.approx([-0.01, -0.009, -0.008])


@pytest.mark.parametrize(
    ("lifts", "verdict"),
    [
        ({}, "held"),
        ({"rope": 0.05}, "not held"),
        ({"rope": 0.1}, "cannot decide"),
        ({"nope": 0.3}, "uninformative here"),
        ({"nope": 0.1}, "cannot decide"),
    ],
)
def test_the_kept_lifts_reach_each_verdict_of_the_controlled_rule(tmp_path, lifts, verdict):
    """The chapter's rule on the study's lifts: RoPE's best head above the line, held only where
    both controls miss it."""
    results = written(apostrophe_study, tmp_path, apostrophe_records(**lifts),
                      n_windows=48, window_seed=0, max_distance=32)  # fmt: skip
    found, _ = apostrophe_study.deciding_lifts(results, "smoke", n_windows=48, window_seed=0,
                                               max_distance=32)  # fmt: skip
    estimates = {n: sem.seed_or_window_interval(v, None, len(v)) for n, v in found[0].items()}
    controls = [estimates["nope"], estimates["untrained rope"]]
    assert sem.controlled_parts_verdict(estimates["rope"], None, controls, 0.1) == verdict


def test_the_chapter_reads_the_kept_lifts_as_estimates_or_says_why_not(tmp_path):
    results = written(apostrophe_study, tmp_path, apostrophe_records(),
                      n_windows=48, window_seed=0, max_distance=32)  # fmt: skip
    found, why = apostrophe_study.deciding_estimates(
        results, "smoke", n_windows=48, window_seed=0, max_distance=32
    )
    assert list(found.lifts) == ["rope", "nope", "untrained rope"] and found.lifts["rope"].n == 3
    assert found.lifts["rope"].mean == pytest.approx(0.3) and why.startswith("the kept study's 3")
    assert (found.key_excess.mean, found.key_excess.n) == (pytest.approx(0.06), 3)
    assert apostrophe_study.deciding_estimates(
        None, "smoke", n_windows=48, window_seed=0, max_distance=32
    ) == (None, "this build's seeds (no kept study (python -m ropebook apostrophe_study makes it))")


def test_the_kept_apostrophe_study_is_current_and_decides_the_cpu_build():
    """data/results/apostrophe_study.json: the cpu profile's lesson RoPE and NoPE as the code
    trains them today, 56 paired seeds, read on the semantic-channels chapter's default windows."""
    results = apostrophe_study.kept()
    assert results is not None and results["profile"] == "cpu"
    assert results["command"] == (
        "python -m ropebook apostrophe_study --profile cpu --seeds 56 --n-windows 48 "
        "--window-seed 0 --max-distance 32"
    )
    assert studies.stale(results) == []
    about = {"n_windows": 48, "window_seed": 0, "max_distance": 32}
    found, why = apostrophe_study.deciding_lifts(results, "cpu", **about)
    assert found is not None and "56 paired seeds" in why and results["commit"][:7] in why
    assert apostrophe_study.deciding_lifts(results, "smoke", **about)[0] is None


# ---------------------------------------------------------------- head_share_study


def test_the_head_share_study_keeps_the_chapters_shares(tiny_zoo, monkeypatch, tmp_path):
    rng = np.random.default_rng(4)
    prompts = [("p", rng.integers(0, 64, 8)) for _ in range(2)]
    monkeypatch.setattr(fq, "passages", lambda domain, n, length: prompts[:n])
    records = head_share_study.measure(SEEDS, profile="smoke", n_prompts=2, prompt_tokens=8,
                                       band=0.25, progress=False)  # fmt: skip
    assert [(r["model"], r["seed"]) for r in records] == [("rope", s) for s in SEEDS]
    for record in records:  # the chapter's reading of the same model on the same prompts
        model = zoo.load("rope", seed=record["seed"], profile="smoke", progress=False)
        chapter = fq.head_high_share(fq.measure_zoo(model, [ids for _, ids in prompts]), 0.25)
        np.testing.assert_allclose(record["head_high"], chapter, rtol=1e-5)
    about = {"n_prompts": 2, "prompt_tokens": 8, "band": 0.25}
    results = written(head_share_study, tmp_path, records, **about)
    found, why = head_share_study.deciding_shares(results, "smoke", **about)
    assert found is not None and "3 paired seeds" in why
    assert found[1] == SEEDS and len(found[0]) == 3
    other, why = head_share_study.deciding_shares(results, "smoke", **about | {"band": 0.5})
    assert other is None and "band = 0.25 (this run: 0.5)" in why
    assert head_share_study.deciding_shares(results, "cpu", **about)[0] is None


def test_a_broken_head_share_study_names_the_problem(tmp_path):
    def records():
        return [{"model": "rope", "domain": "shakespeare", "seed": s, "overrides": {},
                 "spec_hash": zoo.spec_hash("rope", seed=s, profile="smoke"),
                 "head_high": [[0.1, 0.6], [0.3, 0.2]]} for s in SEEDS]  # fmt: skip

    about = {"n_prompts": 10, "prompt_tokens": 0, "band": 0.25}
    bad = records()
    bad[1]["head_high"][0][1] = float("nan")
    with pytest.raises(ValueError, match="rope seed 1 has no finite"):
        written(head_share_study, tmp_path, bad, **about)
    bad = records()
    bad[2]["head_high"][1][0] = 1.5
    with pytest.raises(ValueError, match="rope seed 2 has a share outside"):
        written(head_share_study, tmp_path, bad, **about)
    bad = records()
    bad[0]["head_high"] = [[0.1, 0.2, 0.3]]
    with pytest.raises(ValueError, match="head shares of different shapes"):
        written(head_share_study, tmp_path, bad, **about)


def test_the_kept_head_share_study_is_current_and_decides_the_cpu_build():
    """data/results/head_share_study.json: the cpu profile's lesson RoPE as the code trains it
    today, 16 seeds, read on the frequency-usage chapter's default prompts and band."""
    results = head_share_study.kept()
    assert results is not None and results["profile"] == "cpu"
    assert studies.stale(results) == []
    about = {"n_prompts": 10, "prompt_tokens": 0, "band": 0.25}
    found, why = head_share_study.deciding_shares(results, "cpu", **about)
    assert found is not None and "16 paired seeds" in why and results["commit"][:7] in why
    assert found[1] == tuple(range(16))


# ---------------------------------------------------------------- every kept study's command


@pytest.mark.parametrize(
    "module",
    [
        decay_study,
        pe_zoo_study,
        apostrophe_study,
        head_share_study,
        table2_study,
        layout_language,
        layout_ratio,
    ],
)
def test_a_kept_studys_command_writes_itself_again(module, monkeypatch, tmp_path):
    """The command a kept file names, given to its module's command line (measuring stubbed:
    the kept runs), writes the same command and the same settings, so the file says truly how
    it was made."""
    kept = studies.load(module.STUDY)
    argv = kept["command"].split()[4:]  # after "python -m ropebook <study>"
    monkeypatch.setattr(module, "measure", lambda seeds, **_: kept["runs"])
    monkeypatch.setattr(studies, "path_of", lambda study: tmp_path / f"{study}.json")
    assert module.main(argv) == 0
    again = json.loads((tmp_path / f"{module.STUDY}.json").read_text())
    assert again["command"] == kept["command"]
    for field in set(kept) - {"measured", "commit", "machine", "earlier"}:  # where, not how
        assert again[field] == kept[field], field
