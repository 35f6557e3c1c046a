"""The kept study of a real checkpoint's apostrophe head (``ropebook.checkpoint_apostrophe_study``):
its window count is the plan's pilot numbers through ``power.seeds_needed``; on a tiny random
checkpoint it keeps what the semantic-channels chapter reads, rebuilds the chapter's very
intervals from its file, names a broken file, decides only for the checkpoint and settings it
read on the windows its plan set, and its readings reach every verdict of the two findings'
SmolLM2 parts. Where SmolLM2 is in the cache, the pilot's numbers are checked against it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from ropebook import checkpoint_apostrophe_study as study
from ropebook import data, pipeline, real_model, studies, zoo
from ropebook.analysis import interval_text
from ropebook.analysis import semantic as sem

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

WINDOWS, CONTEXT, SEED, DISTANCE = 12, 200, 3, 8  # the tiny checkpoint's scan
SETTINGS = {"context": CONTEXT, "window_seed": SEED, "max_distance": DISTANCE}


def tiny_folder(path, seed: int = 5):
    """A tiny random Llama with a 97-token BPE of held-out Shakespeare (its BOS id 1, the
    apostrophe in its alphabet), saved as a Hugging Face folder the chapter's scan reads."""
    from tokenizers import Tokenizer, models, trainers

    from ropebook import tiny_models

    text = data.load_texts("shakespeare", "test")[0][1][:20_000]
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    trainer = trainers.BpeTrainer(vocab_size=97, special_tokens=["<pad>", "<s>", "</s>", "<unk>"],
                                  limit_alphabet=70, initial_alphabet=["'"])  # fmt: skip
    tokenizer.train_from_iterator([text], trainer)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
        unk_token="<unk>",
    )  # fmt: skip
    tiny_models.tiny_random_model("llama", seed=seed).save_pretrained(path, safe_serialization=True)
    fast.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny checkpoint, the study's record of it and the chapter's own scans of it."""
    folder = tiny_folder(tmp_path_factory.mktemp("ckpt") / "tiny")
    records = study.measure(WINDOWS, context=CONTEXT, seed=SEED, max_distance=DISTANCE,
                            folder=folder, progress=False)  # fmt: skip
    scans = sem.checkpoint_scans(folder, WINDOWS, CONTEXT, SEED, max_distance=DISTANCE)
    return folder, records, scans


def written(tmp_path, records, folder, **about):
    """The records kept as ``main`` keeps them, read back with :func:`study.load`."""
    path = tmp_path / f"{study.STUDY}.json"
    fields = {"n_windows": WINDOWS, **SETTINGS, "checkpoint": folder.name,
              "fingerprint": study.fingerprint(folder), **about}  # fmt: skip
    studies.write(study.STUDY, records, profile="cpu", regime=study.REGIME, domain=study.DOMAIN,
                  command=f"python -m ropebook {study.STUDY}", path=path, **fields)  # fmt: skip
    return study.load(path)


# ---------------------------------------------------------------- the plan


def test_the_plan_is_the_pilots_numbers_through_seeds_needed():
    """The pilot's s.d. is its interval's (27 windows: half-width = t · s.d. / √27); the windows
    are what power.seeds_needed gives at half the line, over the pilot's usable share, doubled."""
    mean, low, high = study.PILOT_LIFT
    assert mean == pytest.approx((low + high) / 2, abs=5e-4)
    t = stats.t.ppf(0.975, study.PILOT_USABLE - 1)
    implied = (high - low) / 2 / t * math.sqrt(study.PILOT_USABLE)
    assert implied == pytest.approx(study.PILOT_SD, abs=5e-4)
    assert study.TARGET == study.LIFT_LINE / 2 == 0.05  # fixed by the line, not by the pilot
    assert (study.USABLE_NEEDED, study.WINDOWS) == (80, 190)
    assert study.WINDOWS // 2 * study.PILOT_USABLE / study.PILOT_MEASURING >= study.USABLE_NEEDED


def test_the_plans_settings_are_the_cpu_chapters_parameters():
    chapter = pipeline.chapter_parameters(pipeline.read_chapter("semantic_channels"))
    assert study.LIFT_LINE == chapter["lift_threshold"].default
    assert study.PILOT_WINDOWS == chapter["checkpoint_windows"].default == 2 * study.PILOT_MEASURING
    assert study.PILOT_SETTINGS == {
        "context": zoo.configs("rope", profile="cpu")[0].context,
        "window_seed": chapter["seed"].default, "max_distance": chapter["max_distance"].default,
    }  # fmt: skip


def test_a_larger_window_count_starts_with_the_smaller_ones_windows():
    """bos_windows draws window after window from one generator, so the study's first windows of
    each half are the chapter's: its first 32 measuring windows are the pilot's."""
    rng = np.random.default_rng(0)
    docs = [rng.integers(1, 50, n) for n in (40, 300, 90, 1000)]
    for stream in (71, 72):
        few = sem.bos_windows(docs, 32, 8, np.random.default_rng([0, stream]))
        many = sem.bos_windows(docs, 32, 95, np.random.default_rng([0, stream]))
        np.testing.assert_array_equal(many[:8], few)


# ---------------------------------------------------------------- what it keeps


def test_the_study_keeps_what_the_chapter_reads(tiny, tmp_path):
    """The file rebuilds the chapter's SmolLM2 readings on the same scan exactly: the head's lift
    (apostrophe_heads) and its key excess over its layer's other heads (apostrophe_bands)."""
    folder, records, (selected, measured) = tiny
    (record,) = records
    heads = sem.apostrophe_heads(selected, measured)
    assert tuple(record["head"]) == heads.heads[0]
    assert (record["model"], record["seed"], record["overrides"]) == (folder.name, SEED, {})
    assert record["spec_hash"] == study.fingerprint(folder)
    assert len(record["window_lift"]) == len(record["window_key_excess"]) == WINDOWS // 2
    kept = study.estimates(written(tmp_path, records, folder))
    assert kept.lift == heads.lift
    assert kept.key_excess == sem.apostrophe_bands(measured, heads.heads)[2]
    assert kept.head == heads.heads[0] and kept.n_windows == WINDOWS
    assert kept.lift.n >= 2 and "windows (1 seed)" in kept.lift.text


def test_the_command_writes_the_file_and_writes_itself_again(tiny, tmp_path, monkeypatch):
    """``main`` keeps the run with its settings, the checkpoint's fingerprint and the command
    that made it; that command, run again (measuring stubbed), writes the same file."""
    folder, records, _ = tiny
    monkeypatch.setattr(studies, "path_of", lambda name: tmp_path / f"{name}.json")
    argv = ["--checkpoint", str(folder), "--windows", str(WINDOWS), "--context", str(CONTEXT),
            "--window-seed", str(SEED), "--max-distance", str(DISTANCE)]  # fmt: skip
    monkeypatch.setattr(study, "measure", lambda n, **kw: records if n == WINDOWS else None)
    assert study.main(argv) == 0
    first = study.load(tmp_path / f"{study.STUDY}.json")
    assert {k: first[k] for k in study.SETTINGS} == {"n_windows": WINDOWS, **SETTINGS}
    assert (first["checkpoint"], first["fingerprint"]) == (folder.name, study.fingerprint(folder))
    assert first["planned_windows"] == study.WINDOWS and first["seeds"] == [SEED]
    assert study.main(first["command"].split()[4:]) == 0
    again = json.loads((tmp_path / f"{study.STUDY}.json").read_text())
    for field in set(first) - {"measured", "commit", "machine"}:
        assert again[field] == first[field], field
    with pytest.raises(SystemExit):
        study.main([*argv[:2], "--windows", "3"])


def test_a_broken_file_is_named(tiny, tmp_path):
    folder, records, _ = tiny
    good = json.loads(json.dumps(written(tmp_path, records, folder)))
    path = tmp_path / "broken.json"

    def refused(change, match):
        results = json.loads(json.dumps(good))
        change(results)
        path.write_text(json.dumps(results))
        with pytest.raises(ValueError, match=match):
            study.load(path)

    run = "run tiny seed 3"
    refused(lambda r: r.pop("fingerprint"), r"no settings \['fingerprint'\]")
    refused(lambda r: r.pop("context"), r"no settings \['context'\]")
    refused(lambda r: r.update(n_windows="12"), r"settings \['n_windows'\] that are not whole")
    refused(lambda r: r["runs"].append(dict(r["runs"][0])), "2 runs, not the one checkpoint's")
    refused(lambda r: r["runs"][0].update(spec_hash="0" * 16), f"{run} is not the file's")
    refused(lambda r: r["runs"][0].pop("head"), f"{run} has no head")
    refused(lambda r: r["runs"][0]["window_lift"].pop(), f"{run} has no lift for each of its 6")
    refused(lambda r: r["runs"][0].update(window_lift=[None] * 5 + [0.2]), "fewer than 2")
    refused(lambda r: r["runs"][0]["window_key_excess"].__setitem__(0, None), "no finite key")
    refused(lambda r: r["runs"][0].pop("spec_hash"), r"lacks \['spec_hash'\]")
    refused(lambda r: r.update(runs=[]), "not a format-1 results file")
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        study.load(path)
    with pytest.raises(ValueError, match=f"no results of the {study.STUDY} study"):
        study.load(tmp_path / "absent.json")


# ---------------------------------------------------------------- when it decides


def test_it_decides_only_for_its_checkpoint_and_settings_on_the_planned_windows(tiny, tmp_path):
    folder, records, _ = tiny
    results = written(tmp_path, records, folder)
    found, why = study.deciding_estimates(results, folder, **SETTINGS, min_windows=WINDOWS)
    assert found == study.estimates(results)
    assert f"the kept study {study.STUDY}'s {WINDOWS} windows of tiny" in why
    assert results["commit"][:7] in why and results["measured"] in why
    for setting, other in (("context", 64), ("window_seed", 0), ("max_distance", 32)):
        found, why = study.deciding_estimates(
            results, folder, **SETTINGS | {setting: other}, min_windows=WINDOWS
        )
        assert found is None and f"{setting} = {SETTINGS[setting]} (this run: {other})" in why
    found, why = study.deciding_estimates(results, folder, **SETTINGS)  # the plan's 190
    assert found is None and f"{WINDOWS} windows, fewer than its plan's {study.WINDOWS}" in why
    other = tiny_folder(tmp_path / "other", seed=6)  # the same files, other weights
    found, why = study.deciding_estimates(results, other, **SETTINGS, min_windows=WINDOWS)
    assert found is None and "read another checkpoint (tiny" in why
    assert study.deciding_estimates(None, folder, **SETTINGS)[1].startswith("no kept study")
    assert study.deciding_estimates(results, None, **SETTINGS)[1] == "no checkpoint read here"


def test_the_fingerprint_takes_the_weights_hash_real_model_recorded(tiny, tmp_path):
    folder, _, _ = tiny
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in folder.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    assert study.fingerprint(copy) == study.fingerprint(folder)  # contents, not the path
    recorded = {"weights_sha256": "f" * 64}
    (copy / real_model.PROVENANCE).write_text(json.dumps(recorded))
    assert study.fingerprint(copy) != study.fingerprint(folder)  # the recorded hash is used
    (copy / real_model.PROVENANCE).unlink()
    (copy / "config.json").write_text((folder / "config.json").read_text() + " ")
    assert study.fingerprint(copy) != study.fingerprint(folder)


def test_without_a_kept_file_the_chapter_reads_the_build_as_before(tiny, tmp_path, monkeypatch):
    """No kept file (as now): the chapter's SmolLM2 readings are its own, the same objects; a
    deciding one puts the study's first, naming it, with the build's own beside."""
    folder, records, (selected, measured) = tiny
    build = sem.apostrophe_heads(selected, measured)
    build_excess = sem.apostrophe_bands(measured, build.heads)[2]
    monkeypatch.setattr(studies, "path_of", lambda name: tmp_path / f"{name}.json")
    alone = study.reading(folder, 64, **SETTINGS)
    assert alone.kept is None and alone.basis.startswith("this build's 64 windows (no kept study")
    assert alone.lift(build.lift) is build.lift and alone.key_excess(build_excess) is build_excess
    assert alone.lift(None) is None
    assert study.reading(None, 64, **SETTINGS) == study.Reading(None, "no checkpoint read here", 64)
    results = written(tmp_path, records, folder)
    layer, head = records[0]["head"]  # the study's head may not be the build's: named
    assert study.basis(results).startswith(f"head L{layer}H{head} in the kept study ")
    decided = study.Reading(study.estimates(results), "the kept study X", WINDOWS)
    lift = decided.lift(build.lift)
    assert lift[:3] == study.estimates(results).lift[:3] and lift.n == build.lift.n
    kept_text = study.estimates(results).lift.text
    assert lift.text == (f"{kept_text}, the kept study X; this build's {WINDOWS} windows, "
                         f"beside: {build.lift.mean:.3f} {build.lift.text}")  # fmt: skip
    assert decided.key_excess(build_excess)[:3] == build_excess[:3]


def test_the_kept_readings_reach_every_verdict_of_the_smollm2_parts(tiny, tmp_path):
    """Constructed window lifts through the file: the head against the line (held, not held,
    cannot decide) and the key excess gated on it, as the chapter decides them."""
    folder, records, _ = tiny
    base = np.linspace(-0.02, 0.02, WINDOWS // 2)
    cases = {"held": 0.3 + base, "not held": base, "cannot decide": 0.1 + 10 * base}
    for expected, lifts in cases.items():
        run = dict(records[0], window_lift=[float(v) for v in lifts],
                   window_key_excess=[float(v) for v in 0.05 + base])  # fmt: skip
        kept = study.estimates(written(tmp_path, [run], folder))
        head = sem.interval_verdict(kept.lift.low, kept.lift.high, study.LIFT_LINE)
        assert head == expected
        low_freq = sem.gated_verdict(kept.key_excess, head)
        assert low_freq == {"held": "held", "not held": "not testable here"}.get(head, head)


# ---------------------------------------------------------------- the confirmation


def confirmed_file(tmp_path, records, folder, **about):
    """A confirmation of the tiny study's head on fresh windows, kept as ``main --confirm``
    keeps it and read back with :func:`study.load_confirmation`."""
    head = tuple(records[0]["head"])
    found = study.measure_confirmation(4, head, context=CONTEXT, seed=SEED, max_distance=DISTANCE,
                                       used_windows=WINDOWS, folder=folder, progress=False)  # fmt: skip
    path = tmp_path / f"{study.CONFIRM_STUDY}.json"
    fields = {"n_windows": 4, **SETTINGS, "checkpoint": folder.name, "used_windows": WINDOWS,
              "stream": study.CONFIRM_STREAM, "fingerprint": study.fingerprint(folder), **about}  # fmt: skip
    studies.write(study.CONFIRM_STUDY, found, profile="cpu", regime=study.REGIME,
                  domain=study.DOMAIN, command="python -m ropebook x", path=path, **fields)  # fmt: skip
    return study.load_confirmation(path)


def test_the_confirmations_plan_is_the_kept_studys_numbers():
    """The confirmation's pilot typed in is the kept study's head and lifts (from its file), and
    its windows are power.seeds_needed at a quarter of the line over the study's usable share."""
    results = study.kept()
    if results is None:
        pytest.skip(f"no kept {study.STUDY}")
    assert results["commit"] == study.STUDY_COMMIT
    assert tuple(results["runs"][0]["head"]) == study.STUDY_HEAD
    assert len(results["runs"][0]["window_lift"]) == study.STUDY_MEASURING
    lift = study.estimates(results).lift
    assert lift.n == study.STUDY_USABLE and lift[:3] == pytest.approx(study.STUDY_LIFT, abs=1e-4)
    lifts = [v for v in results["runs"][0]["window_lift"] if v is not None]
    assert np.std(lifts, ddof=1) == pytest.approx(study.STUDY_SD, abs=1e-4)
    assert study.CONFIRM_TARGET == study.LIFT_LINE / 4 == 0.025
    assert (study.CONFIRM_USABLE_NEEDED, study.CONFIRM_WINDOWS) == (594, 715)
    usable = study.CONFIRM_WINDOWS * study.STUDY_USABLE / study.STUDY_MEASURING
    assert usable >= study.CONFIRM_USABLE_NEEDED


def test_the_confirmation_measures_the_head_on_fresh_windows(tiny, tmp_path):
    """Its windows share no token with the study's (checkpoint_fresh_scan) and its run keeps the
    fixed head's lift and key excess per window, all of them measuring."""
    folder, records, _ = tiny
    confirmed = confirmed_file(tmp_path, records, folder)
    (run,) = confirmed["runs"]
    assert run["head"] == records[0]["head"] and len(run["window_lift"]) == 4
    model, documents, class_ids, bos = sem.checkpoint_inputs(folder)
    lengths = [len(d) for d in documents]
    used = {span for stream in (71, 72) for span in sem.window_spans(
        lengths, CONTEXT, WINDOWS // 2, np.random.default_rng([SEED, stream]))}  # fmt: skip
    fresh = sem.disjoint_spans(lengths, CONTEXT, 4, np.random.default_rng([SEED, 75]), list(used))
    assert not {(d, s) for d, s in fresh} & used
    windows = sem.windows_at(documents, fresh, CONTEXT, bos)
    scan = sem.scan_semantic_checkpoint(model, windows, class_ids, max_distance=DISTANCE)
    layer, head = run["head"]
    lifts = [None if not np.isfinite(v) else v for v in scan.window_prev_lift[:, layer, head]]
    assert run["window_lift"] == pytest.approx(lifts)
    estimates = study.estimates(confirmed)
    assert estimates.head == tuple(run["head"]) and estimates.n_windows == 4


def test_the_confirmation_decides_only_on_the_studys_head_and_windows(tiny, tmp_path, monkeypatch):
    folder, records, (selected, measured) = tiny
    results = written(tmp_path, records, folder)
    confirmed = confirmed_file(tmp_path, records, folder)
    assert study.why_not_confirming(confirmed, results, folder, SETTINGS, min_windows=4) is None
    why = study.why_not_confirming(confirmed, results, folder, SETTINGS)  # the plan's 715
    assert (
        why == f"the kept confirmation has 4 windows, fewer than its plan's {study.CONFIRM_WINDOWS}"
    )
    other = json.loads(json.dumps(results))
    other["runs"][0]["head"] = [9, 9]
    assert "not the kept study's L9H9" in study.why_not_confirming(
        confirmed, other, folder, SETTINGS, min_windows=4)  # fmt: skip
    other = dict(results, n_windows=WINDOWS + 2)
    assert f"left out {WINDOWS} windows, not the kept study's {WINDOWS + 2}" in (
        study.why_not_confirming(confirmed, other, folder, SETTINGS, min_windows=4))  # fmt: skip
    assert "measured with context = 200 (this run: 64)" in study.why_not_confirming(
        confirmed, results, folder, SETTINGS | {"context": 64}, min_windows=4)  # fmt: skip
    assert study.why_not_confirming(None, results, folder, SETTINGS).startswith(
        "no kept confirmation (python -m ropebook checkpoint_apostrophe_study --confirm"
    )
    assert study.why_not_confirming(confirmed, None, folder, SETTINGS, min_windows=4) == (
        "the kept confirmation has no kept study to confirm"
    )
    # the chapter's reading: the confirmation where it decides, the study's lift in its basis
    monkeypatch.setattr(studies, "path_of", lambda name: tmp_path / f"{name}.json")
    monkeypatch.setattr(study, "CONFIRM_WINDOWS", 4)
    monkeypatch.setattr(study, "WINDOWS", WINDOWS)
    read = study.reading(folder, 64, **SETTINGS)
    assert read.kept == study.estimates(confirmed)
    assert read.basis == study.confirmation_basis(confirmed, results)
    assert f"measured on {study.CONFIRM_STUDY}'s 4 fresh windows of tiny" in read.basis
    assert f"the study's own {WINDOWS // 2} measuring windows: " in read.basis
    (tmp_path / f"{study.CONFIRM_STUDY}.json").unlink()
    alone = study.reading(folder, 64, **SETTINGS)  # the study decides, the confirmation is absent
    assert alone.kept == study.estimates(results)
    assert alone.basis == study.basis(results)  # as before the confirmation
    confirmed_file(tmp_path, records, folder, context=64)  # one that cannot decide: said why
    assert study.reading(folder, 64, **SETTINGS).basis == study.basis(results) + (
        "; the kept confirmation measured with context = 64 (this run: 200)"
    )


def test_the_confirm_command_writes_the_file_or_refuses(tiny, tmp_path, monkeypatch):
    folder, records, _ = tiny
    monkeypatch.setattr(studies, "path_of", lambda name: tmp_path / f"{name}.json")
    argv = ["--checkpoint", str(folder), "--confirm", "--windows", "4", "--context",
            str(CONTEXT), "--window-seed", str(SEED), "--max-distance", str(DISTANCE)]  # fmt: skip
    with pytest.raises(SystemExit):  # no kept study to confirm
        study.main(argv)
    written(tmp_path, records, folder)
    monkeypatch.setattr(study, "WINDOWS", WINDOWS)
    seen = {}

    def fake(n, head, **kw):
        seen.update(n=n, head=head, **kw)
        return [dict(records[0], window_lift=[0.2, None, 0.3, 0.1], window_key_excess=[0.1] * 4)]

    monkeypatch.setattr(study, "measure_confirmation", fake)
    assert study.main(argv) == 0
    assert seen["head"] == tuple(records[0]["head"]) and seen["used_windows"] == WINDOWS
    confirmed = study.load_confirmation(tmp_path / f"{study.CONFIRM_STUDY}.json")
    assert confirmed["used_windows"] == WINDOWS and confirmed["stream"] == study.CONFIRM_STREAM
    assert (
        confirmed["planned_windows"] == study.CONFIRM_WINDOWS
        and "--confirm" in confirmed["command"]
    )
    assert (
        confirmed["study_commit"]
        == studies.load(study.STUDY, tmp_path / f"{study.STUDY}.json")["commit"]
    )
    broken = dict(confirmed, runs=[dict(confirmed["runs"][0], window_lift=[0.2] * 3)])
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    with pytest.raises(ValueError, match="has no lift for each of its 4 measuring windows"):
        study.load_confirmation(tmp_path / "broken.json")
    (tmp_path / "broken.json").write_text(json.dumps({k: v for k, v in confirmed.items()
                                                      if k != "used_windows"}))  # fmt: skip
    with pytest.raises(ValueError, match=r"no settings \['used_windows'\]"):
        study.load_confirmation(tmp_path / "broken.json")


# ---------------------------------------------------------------- SmolLM2 itself

SMOLLM2 = real_model.folder()
HAVE_SMOLLM2 = (SMOLLM2 / real_model.PROVENANCE).exists()


def test_the_pilot_is_the_kept_studys_first_windows():
    """Where the kept study chose the pilot's head, its first measuring windows (the pilot's:
    bos_windows above) give the pilot's lift: the plan's inputs are data, not invented."""
    results = study.kept()
    if results is None:
        pytest.skip(f"no kept {study.STUDY} yet")
    found, why = study.deciding_estimates(results, real_model.ensure(), **study.PILOT_SETTINGS)
    assert found is not None, why
    if tuple(results["runs"][0]["head"]) != study.PILOT_HEAD:
        pytest.skip("the kept study chose another head than the pilot's: its lifts are another's")
    first = [np.nan if v is None else v for v in results["runs"][0]["window_lift"]]
    pilot = interval_text(first[: study.PILOT_MEASURING], unit="windows (1 seed)")
    assert pilot.n == study.PILOT_USABLE
    assert pilot[:3] == pytest.approx(study.PILOT_LIFT, abs=5e-4)


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_SMOLLM2, reason="SmolLM2 is not in the cache")
def test_the_pilots_numbers_are_smollm2s_64_windows():
    """The pilot typed in is the chapter's cpu scan of SmolLM2 (64 windows, ~2 min of CPU)."""
    pilot = study.PILOT_SETTINGS
    (record,) = study.measure(study.PILOT_WINDOWS, context=pilot["context"],
                              seed=pilot["window_seed"], max_distance=pilot["max_distance"],
                              progress=False)  # fmt: skip
    assert tuple(record["head"]) == study.PILOT_HEAD
    lifts = np.array([np.nan if v is None else v for v in record["window_lift"]])
    pilot = interval_text(lifts, unit="windows (1 seed)")
    assert pilot.n == study.PILOT_USABLE
    assert pilot[:3] == pytest.approx(study.PILOT_LIFT, abs=5e-4)
