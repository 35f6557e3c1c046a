"""The kept task study (``ropebook.task_study``): Llama 4's chunk ceiling on k-back and the
passkey after a fine-tune, on many task seeds. It reads each model through the functions its
chapter calls (checked against the chapters' former inline code, a closed form and a hand-made
batch), round-trips its file, names a broken one, decides only where its runs are the
chapter's models read with the chapter's settings on the seeds its plan called for, and its
verdicts reach every outcome on constructed data."""

from __future__ import annotations

import json
import math
import types

import numpy as np
import pytest
from scipy import stats

import ropebook
from ropebook import model, pipeline, studies, task_study, tasks, train, zoo
from ropebook.analysis import layouts as lay
from ropebook.analysis import recall as rc

SEEDS = tuple(range(task_study.SEEDS))  # the plan's seeds, 0..11
SETTINGS = dict(task_study.DEFAULTS)
CEILING = 0.7


def untrained(name: str, seeds=(0, 1), **fields):
    """Untrained smoke task models of ``name``, one per seed, as zoo runs look to the readers."""
    config, train_config = zoo.configs(name, profile="smoke", regime="task")
    return train_config, [
        types.SimpleNamespace(
            params=model.init_params(train.jax.random.key(s), config), config=config, seed=s,
            name=name, spec_hash=f"untrained-{name}-{s}", **fields,
        )
        for s in seeds
    ]  # fmt: skip


# ---------------------------------------------------------------- the shared readings


def test_the_chunk_ceiling_is_the_closed_form_on_a_hand_made_batch():
    # one sequence, k = 2, length 10, chunks of 4: answers at 3..9, the source seen at 3, 6, 7
    tokens = np.zeros((1, 10), np.int32)
    mask = (np.arange(10) > 2)[None]
    hand = tasks.Batch(tokens, tokens, mask, np.where(mask, 2, -1))
    n_data = tasks.get("kback").n_data
    assert lay.ceiling(hand, 4) == pytest.approx(3 / 7 + (4 / 7) / n_data)
    # many sequences, chunks of 8: k uniform on 1..4 sees k back from offset k of its chunk on
    batch = tasks.get("kback").batch(np.random.default_rng(0), 512, 512)
    reach = np.mean([(8 - k) / 8 for k in range(1, 5)])
    assert lay.ceiling(batch, 8) == pytest.approx(reach + (1 - reach) / n_data, abs=0.01)


def test_chunk_ceiling_reads_llama4_as_the_chapter_did():
    """The shared reading equals the layouts chapter's former inline code, seed by seed."""
    _, runs = untrained("layout-llama4")
    found = lay.chunk_ceiling(runs, n_sequences=8)
    config = runs[0].config
    chunk = next(layer.chunk for layer in config.layers if layer.local)
    probe = rc.task_batch(tasks.get("kback"), config.context, max(8 // 4, 2))
    reach = lay.local_reach(probe, chunk=chunk)
    assert found.chunk == chunk and found.seeds == (0, 1)
    assert found.ceiling == reach + (1 - reach) / tasks.get("kback").n_data
    np.testing.assert_array_equal(found.accuracy, rc.accuracy(runs, probe))
    # one run at a time (the study) reads what all at once (the chapter) does
    one = [lay.chunk_ceiling([m], 8) for m in runs]
    assert [o.accuracy[0] for o in one] == list(found.accuracy)
    assert {o.ceiling for o in one} == {found.ceiling}
    with pytest.raises(ValueError, match="not one chunk"):
        lay.local_chunk(zoo.configs("layout-gemma4", profile="smoke", regime="task")[0])
    with pytest.raises(ValueError, match="no runs"):
        lay.chunk_ceiling([], 8)


def test_finetuned_sweeps_read_the_passkey_as_the_chapter_did(tmp_path, monkeypatch):
    """The shared fine-tune and test equals the recall chapter's former inline code, and the
    study's reading (the fine-tune scale alone, no recall scored) is the chapter's column at
    that scale."""
    monkeypatch.setattr(ropebook, "CACHE_DIR", tmp_path)  # the fine-tunes' cache
    train_config, runs = untrained("rope", seeds=(0, 1), domain="recall")
    depths, scale, steps, ratio = np.linspace(0, 1, 2), 2, 2, 0.1
    common = dict(n_passkey=1, n_sequences=2)
    swept = rc.finetuned_sweeps(runs, (1, 2), depths, scale=scale, steps=steps, lr_ratio=ratio,
                                train_config=train_config, **common)  # fmt: skip
    assert list(swept) == list(rc.FINETUNE_METHODS)
    batch = max(train_config.batch_size // scale, 2)
    for method in rc.FINETUNE_METHODS:  # the chapter's code before the move, verbatim in effect
        tuned = [rc.finetune(m, tasks.get("recall"), method, scale, steps=steps, batch_size=batch,
                             lr=train_config.lr * ratio, progress=False) for m in runs]  # fmt: skip
        inline = rc.extension_sweep(tuned, method, (1, 2), depths, scale=scale, **common)
        for ours, theirs in zip(swept[method], inline, strict=True):
            np.testing.assert_array_equal(ours, theirs)
    alone = rc.finetuned_sweeps(runs, (scale,), depths, scale=scale, steps=steps, lr_ratio=ratio,
                                train_config=train_config, n_passkey=1, n_sequences=0)  # fmt: skip
    for method in rc.FINETUNE_METHODS:
        np.testing.assert_array_equal(alone[method][0][:, 0], swept[method][0][:, 1])
        assert np.isnan(alone[method][1]).all()  # no recall scored
    with pytest.raises(ValueError, match="lr_ratio"):
        rc.finetuned_sweeps(runs, (2,), depths, scale=2, steps=1, lr_ratio=0.0,
                            train_config=train_config, n_passkey=1, n_sequences=0)  # fmt: skip


# ---------------------------------------------------------------- verdicts on constructed data


@pytest.mark.parametrize(
    ("accuracy", "verdict"),
    [
        ([0.70, 0.71, 0.69, 0.705, 0.695], "held"),  # inside ±5 points of the ceiling
        ([0.40, 0.42, 0.38, 0.41, 0.39], "not held"),  # far below it
        ([0.55, 0.80, 0.62, 0.85, 0.70], "cannot decide"),  # the interval crosses the margin
        ([0.70], "cannot decide"),  # one seed: no interval
    ],
)
def test_the_chunk_ceiling_verdict_reaches_each_outcome(accuracy, verdict):
    found = lay.ChunkCeiling(np.array(accuracy), CEILING, 8, tuple(range(len(accuracy))))
    assert found.verdict(0.05) == verdict
    assert found.gap.estimate.mean == pytest.approx(np.mean(accuracy) - CEILING)
    with pytest.raises(ValueError, match="margin"):
        found.verdict(5.0)  # points, not a share


@pytest.mark.parametrize(
    ("pi", "yarn", "verdict"),
    [
        (0.30, 0.25, "held"),  # both rules above the control
        (-0.30, -0.25, "not held"),  # both below
        (0.30, -0.25, "partly"),  # one held, one not
        (0.00, 0.00, "cannot decide"),  # gains that average 0 with seed noise
    ],
)
def test_the_passkey_verdict_reaches_each_outcome(pi, yarn, verdict):
    noise = 0.05 * np.array([1, -1, 1, -1, 0.5, -0.5])  # mean 0, s.d. about 5 points
    none = np.full(6, 0.5)
    wins = rc.finetune_wins({"none": none, "pi": none + pi + noise, "yarn": none + yarn - noise})
    assert set(wins) == {"pi", "yarn"} and wins["pi"].n == 6
    assert wins["pi"].estimate.mean == pytest.approx(pi)
    assert rc.finetune_verdict(wins) == verdict
    with pytest.raises(ValueError, match="no passkey of \\['yarn'\\]"):
        rc.finetune_wins({"none": none, "pi": none})


# ---------------------------------------------------------------- the results file


def records(seeds=SEEDS, accuracy=None, passkey=None, profile="smoke"):
    """Synthetic runs whose spec hashes are the ones the code trains at ``profile``."""
    rng = np.random.default_rng(3)
    runs = []
    for s in seeds:
        for name, domain in ((task_study.CEILING_MODEL, task_study.CEILING_DOMAIN),
                             (task_study.PASSKEY_MODEL, task_study.PASSKEY_DOMAIN)):  # fmt: skip
            run = {
                "model": name, "domain": domain, "seed": s, "overrides": {},
                "spec_hash": zoo.spec_hash(name, seed=s, profile=profile, regime="task",
                                           domain=domain),
            }  # fmt: skip
            if name == task_study.CEILING_MODEL:
                run |= {"accuracy": CEILING + 0.01 * rng.standard_normal() if accuracy is None
                        else accuracy[s], "ceiling": CEILING, "chunk": 8}  # fmt: skip
            else:
                base = 0.5 + 0.05 * rng.standard_normal()
                run["passkey"] = passkey[s] if passkey else {
                    "none": base, "pi": base + 0.3, "yarn": base + 0.25}  # fmt: skip
            runs.append(run)
    return runs


def written(tmp_path, runs, profile="smoke", **about):
    path = tmp_path / f"{task_study.STUDY}.json"
    studies.write(
        task_study.STUDY, runs, profile=profile, regime="task", domain=task_study.DOMAIN,
        command="python -m ropebook task_study", path=path,
        **({"ceiling": CEILING} | SETTINGS | about),
    )  # fmt: skip
    return task_study.load(path)


def test_the_file_round_trips_and_reads_as_the_chapters_do(tmp_path):
    runs = records()
    results = written(tmp_path, runs)
    assert results["runs"] == runs and studies.stale(results) == []
    ceiling = task_study.ceiling_of(results)
    assert ceiling.seeds == SEEDS and ceiling.ceiling == CEILING and ceiling.chunk == 8
    by_seed = {r["seed"]: r for r in runs if r["model"] == task_study.CEILING_MODEL}
    np.testing.assert_array_equal(ceiling.accuracy, [by_seed[s]["accuracy"] for s in SEEDS])
    passkey = task_study.passkey_of(results)
    assert passkey["pi"] - passkey["none"] == pytest.approx(np.full(len(SEEDS), 0.3))


@pytest.mark.parametrize(
    ("break_it", "problem"),
    [
        (lambda runs, about: runs[0].pop("accuracy"), "layout-llama4 seed 0 has no accuracy in"),
        (lambda runs, about: runs[2].update(accuracy=float("nan")), "seed 1 has no accuracy in"),
        (lambda runs, about: runs[0].update(accuracy=1.5), "has no accuracy in \\[0, 1\\]"),
        (
            lambda runs, about: runs[0].update(ceiling=0.6),
            "seed 0 has the ceiling 0.6, the file 0.7",
        ),
        (
            lambda runs, about: runs[1]["passkey"].pop("yarn"),
            "rope seed 0 has no passkey accuracy in \\[0, 1\\] after the fine-tune \\['yarn'\\]",
        ),
        (lambda runs, about: runs[3].pop("passkey"), "rope seed 1 has no passkey accuracies"),
        (lambda runs, about: runs[1].update(model="nope"), "a run of 'nope'"),
        (
            lambda runs, about: [runs.remove(r) for r in list(runs) if r["model"] == "rope"],
            "no runs of \\['rope'\\]",
        ),
        (lambda runs, about: about.pop("finetune_steps"), "no settings \\['finetune_steps'\\]"),
        (lambda runs, about: runs[0].pop("spec_hash"), "lacks \\['spec_hash'\\]"),
    ],
)
def test_a_broken_file_names_the_problem(tmp_path, break_it, problem):
    runs, about = records(seeds=(0, 1, 2)), {"ceiling": CEILING} | SETTINGS
    break_it(runs, about)
    path = tmp_path / f"{task_study.STUDY}.json"
    path.write_text(json.dumps({
        "format": studies.FORMAT, "study": task_study.STUDY, "profile": "smoke", "regime": "task",
        "domain": task_study.DOMAIN, "seeds": [0, 1, 2], "command": "-", **about, "runs": runs,
    }))  # fmt: skip
    with pytest.raises(ValueError, match=problem) as error:
        task_study.load(path)
    assert str(path) in str(error.value)


def test_a_file_that_is_no_study_is_refused(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        task_study.load(path)
    path.write_text(json.dumps({"format": studies.FORMAT, "study": "decay_study", "runs": [{}]}))
    with pytest.raises(ValueError, match="not a format-1 results file of the task_study study"):
        task_study.load(path)
    with pytest.raises(ValueError, match="no results of the task_study study"):
        task_study.load(tmp_path / "absent.json")


# ---------------------------------------------------------------- when the study decides


def ceiling_call(results, change):
    return task_study.deciding_ceiling(
        results, change.get("profile", "smoke"),
        n_sequences=change.get("n_sequences", SETTINGS["n_sequences"]),
        ceiling=change.get("ceiling", CEILING),
    )  # fmt: skip


def passkey_call(results, change):
    return task_study.deciding_passkey(
        results, change.get("profile", "smoke"),
        **{k: change.get(k, SETTINGS[k]) for k in task_study.PASSKEY_SETTINGS},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("change", "ceiling_reason", "passkey_reason"),
    [
        ({}, None, None),
        ({"profile": "cpu"}, "trained the smoke profile's models", "smoke profile's"),
        ({"n_sequences": 32}, "n_sequences = 64 (this run: 32)", None),
        ({"ceiling": 0.71}, "ceiling = 0.7 (this run: 0.71)", None),
        ({"n_passkey": 2}, None, "n_passkey = 8 (this run: 2)"),
        ({"n_depths": 2}, None, "n_depths = 6 (this run: 2)"),
        ({"finetune_scale": 4}, None, "finetune_scale = 2 (this run: 4)"),
        ({"finetune_steps": 4}, None, "finetune_steps = 50 (this run: 4)"),
        ({"finetune_lr_ratio": 0.2}, None, "finetune_lr_ratio = 0.1 (this run: 0.2)"),
        (
            {"seeds": tuple(range(task_study.CEILING_SEEDS))},
            None,
            f"has {task_study.CEILING_SEEDS} paired seed(s)",
        ),
        ({"seeds": (0, 1, 2)}, "has 3 paired seed(s)", "has 3 paired seed(s)"),
    ],
)
def test_the_study_decides_only_on_the_chapters_models_settings_and_planned_seeds(
    tmp_path, change, ceiling_reason, passkey_reason
):
    results = written(tmp_path, records(seeds=change.get("seeds", SEEDS)))
    for call, reason in ((ceiling_call, ceiling_reason), (passkey_call, passkey_reason)):
        found, why = call(results, change)
        if reason is None:
            n = len(change.get("seeds", SEEDS))
            assert found is not None, why
            span = f"0–{n - 1}"
            assert why.startswith(f"kept study task_study, seeds {span}: the kept study's {n} "
                                  "paired seeds (")  # fmt: skip
            assert results["commit"][:7] in why and results["measured"] in why
        else:
            assert found is None and reason in why


def test_a_stale_or_absent_study_does_not_decide(tmp_path):
    runs = records()
    runs[1]["spec_hash"] = "0" * 16  # a rope run the code no longer trains
    results = written(tmp_path, runs)
    for call in (ceiling_call, passkey_call):
        found, why = call(results, {})
        assert found is None and "stale" in why and "rope seed 0" in why
        assert call(None, {}) == (None, "no kept study (python -m ropebook task_study makes it)")


def test_the_deciding_readings_give_the_studys_verdicts(tmp_path):
    near = {s: CEILING + 0.004 * (-1) ** s for s in SEEDS}  # within a point of the ceiling
    passkey = {
        s: {"none": 0.5, "pi": 0.52 + 0.05 * (-1) ** s, "yarn": 0.9 + 0.01 * (-1) ** s}
        for s in SEEDS
    }
    results = written(tmp_path, records(accuracy=near, passkey=passkey))
    ceiling, _ = ceiling_call(results, {})
    assert ceiling.verdict(0.05) == "held" and ceiling.gap.n == len(SEEDS)
    wins, _ = passkey_call(results, {})
    assert wins["pi"].verdict(above=True) == "cannot decide"
    assert wins["yarn"].verdict(above=True) == "held"
    assert rc.finetune_verdict(wins) == "partly"


# ---------------------------------------------------------------- the plan and the command


def test_the_plan_is_the_pilots_numbers_through_seeds_needed():
    """The pilot's s.d.s are its intervals' (three seeds: half-width = t · s.d. / √3), rounded
    as the plan used them, and the seeds are what power.seeds_needed gives at the targets."""
    t = stats.t.ppf(0.975, len(task_study.PILOT_SEEDS) - 1)
    for (mean, low, high), sd in ((task_study.PILOT_CEILING_GAP, task_study.PILOT_CEILING_SD),
                                  (task_study.PILOT_PASSKEY_GAP, task_study.PILOT_PASSKEY_SD)):  # fmt: skip
        assert mean == pytest.approx((low + high) / 2, abs=1e-3)  # each rounded to 0.1 point
        implied = (high - low) / 2 / t * math.sqrt(len(task_study.PILOT_SEEDS))
        assert implied == pytest.approx(sd, abs=0.006)
    assert (task_study.CEILING_SEEDS, task_study.PASSKEY_SEEDS, task_study.SEEDS) == (5, 12, 12)


def test_the_defaults_are_the_chapters_parameters():
    layouts = pipeline.chapter_parameters(pipeline.read_chapter("layouts"))
    recall = pipeline.chapter_parameters(pipeline.read_chapter("recall"))
    assert task_study.DEFAULTS["n_sequences"] == layouts["n_sequences"].default
    for name in task_study.PASSKEY_SETTINGS:
        assert task_study.DEFAULTS[name] == recall[name].default, name
    assert task_study.CEILING_TARGET == layouts["equivalence"].default


def test_the_command_refuses_bad_arguments_before_measuring(capsys, monkeypatch):
    monkeypatch.setattr(task_study, "measure", lambda *a, **k: pytest.fail("measured"))
    for argv, message in [
        (["--seeds", "2"], "at least 3"),
        (["--n-depths", "1"], "--n-depths must be at least 2"),
        (["--finetune-scale", "1"], "--finetune-scale must be at least 2"),
        (["--finetune-lr-ratio", "0"], "--finetune-lr-ratio must be in (0, 1]"),
    ]:
        with pytest.raises(SystemExit):
            task_study.main(argv)
        assert message in capsys.readouterr().err


def test_the_command_writes_its_settings_and_the_ceiling(tmp_path, monkeypatch):
    runs = records(seeds=(0, 1, 2), profile="cpu")
    asked = {}

    def measure(seeds, **options):
        asked.update(options, seeds=list(seeds))
        return runs

    monkeypatch.setattr(task_study, "measure", measure)
    monkeypatch.setattr(studies, "path_of", lambda study: tmp_path / f"{study}.json")
    assert task_study.main(["--seeds", "3"]) == 0
    results = task_study.load(tmp_path / "task_study.json")
    assert asked == {"seeds": [0, 1, 2], "profile": "cpu", **SETTINGS}
    assert results["command"] == (
        "python -m ropebook task_study --profile cpu --seeds 3 --n-sequences 64 --n-passkey 8 "
        "--n-depths 6 --finetune-scale 2 --finetune-steps 50 --finetune-lr-ratio 0.1"
    )
    assert results["ceiling"] == CEILING and results["models"] == list(task_study.MODELS)
    assert {k: results[k] for k in SETTINGS} == SETTINGS
    runs[2]["ceiling"] = 0.5  # two probes in one file: refused before writing
    with pytest.raises(ValueError, match="ceilings differ"):
        task_study.main(["--seeds", "3"])


def test_the_study_measures_what_the_chapters_read(tiny_zoo, monkeypatch):
    """End to end on the smoke zoo: the study's records are the shared readings of the zoo's
    models, and its file decides where the plan's seeds are met."""
    monkeypatch.setattr(ropebook, "CACHE_DIR", tiny_zoo)
    options = dict(n_sequences=8, n_passkey=1, n_depths=2, finetune_scale=2, finetune_steps=2,
                   finetune_lr_ratio=0.1)  # fmt: skip
    found = task_study.measure((0, 1), profile="smoke", progress=False, **options)
    assert [(r["model"], r["seed"]) for r in found] == [
        (n, s) for s in (0, 1) for n in task_study.MODELS
    ]
    llama = [zoo.load("layout-llama4", seed=s, profile="smoke", regime="task", domain="kback",
                      progress=False) for s in (0, 1)]  # fmt: skip
    rope = [zoo.load("rope", seed=s, profile="smoke", regime="task", domain="recall",
                     progress=False) for s in (0, 1)]  # fmt: skip
    ceiling = lay.chunk_ceiling(llama, 8)
    _, train_config = zoo.configs("rope", profile="smoke", regime="task")
    swept = rc.finetuned_sweeps(rope, (2,), np.linspace(0, 1, 2), scale=2, steps=2, lr_ratio=0.1,
                                train_config=train_config, n_passkey=1, n_sequences=0)  # fmt: skip
    kept_llama = [r for r in found if r["model"] == "layout-llama4"]
    kept_rope = [r for r in found if r["model"] == "rope"]
    assert [r["accuracy"] for r in kept_llama] == list(ceiling.accuracy)
    assert {r["ceiling"] for r in kept_llama} == {ceiling.ceiling}
    for method, (passkey, _) in swept.items():
        assert [r["passkey"][method] for r in kept_rope] == list(passkey[:, 0]), method
    assert all(isinstance(r["trained_now"], bool) and r["provenance"] for r in found)
    path = tiny_zoo / "task_study.json"
    studies.write(task_study.STUDY, found, profile="smoke", regime="task",
                  domain=task_study.DOMAIN, command="-", path=path, ceiling=ceiling.ceiling,
                  **options)  # fmt: skip
    results = task_study.load(path)
    monkeypatch.setattr(task_study, "CEILING_SEEDS", 2)
    kept, why = task_study.deciding_ceiling(results, "smoke", n_sequences=8,
                                            ceiling=ceiling.ceiling)  # fmt: skip
    assert kept is not None and "seeds 0–1" in why
    np.testing.assert_array_equal(kept.accuracy, ceiling.accuracy)
    wins, why = task_study.deciding_passkey(results, "smoke", **{
        k: options[k] for k in task_study.PASSKEY_SETTINGS})  # fmt: skip
    assert wins is None and "has 2 paired seed(s)" in why  # the passkey's plan needs 12


def test_the_kept_study_is_current_and_decides_the_cpu_build():
    """data/results/task_study.json: the cpu profile's task models as the code trains them
    today, on the plan's seeds, read with the chapters' defaults."""
    results = task_study.kept()
    assert results is not None and results["profile"] == "cpu"
    assert studies.stale(results) == []
    assert studies.paired_seeds(results) == list(SEEDS)
    assert results["command"] == (
        f"python -m ropebook task_study --profile cpu --seeds {task_study.SEEDS} "
        "--n-sequences 64 --n-passkey 8 --n-depths 6 --finetune-scale 2 --finetune-steps 50 "
        "--finetune-lr-ratio 0.1"
    )
    config, _ = zoo.configs(task_study.CEILING_MODEL, profile="cpu", regime="task")
    probe = lay.kback_probe(config.context, SETTINGS["n_sequences"])
    ceiling = lay.ceiling(probe, lay.local_chunk(config))
    kept, why = ceiling_call(results, {"profile": "cpu", "ceiling": ceiling})
    assert kept is not None and results["commit"][:7] in why
    wins, _ = passkey_call(results, {"profile": "cpu"})
    assert wins is not None and {w.n for w in wins.values()} == {len(SEEDS)}
    assert ceiling_call(results, {"profile": "smoke", "ceiling": ceiling})[0] is None


def test_the_kept_command_writes_itself_again(monkeypatch, tmp_path):
    """The command the kept file names, given to the command line (measuring stubbed: the kept
    runs), writes the same command, settings and ceiling, so the file says truly how it was
    made."""
    kept = studies.load(task_study.STUDY)
    monkeypatch.setattr(task_study, "measure", lambda seeds, **_: kept["runs"])
    monkeypatch.setattr(studies, "path_of", lambda study: tmp_path / f"{study}.json")
    assert task_study.main(kept["command"].split()[4:]) == 0
    again = json.loads((tmp_path / f"{task_study.STUDY}.json").read_text())
    for field in set(kept) - {"measured", "commit", "machine"}:
        assert again[field] == kept[field], field


def test_the_plans_pilot_numbers_are_the_kept_studys_first_seeds():
    """The pilot the plan typed in (the first cpu build's seeds 0-2) is what the kept study
    measured on those same models: the plan's inputs are data, not invented."""
    results = task_study.kept()
    ceiling = task_study.ceiling_of(results)
    pilot = np.isin(ceiling.seeds, task_study.PILOT_SEEDS)
    gap = ceiling.accuracy[pilot] - ceiling.ceiling
    assert np.std(gap, ddof=1) == pytest.approx(task_study.PILOT_CEILING_SD, abs=0.0005)
    assert np.mean(gap) == pytest.approx(task_study.PILOT_CEILING_GAP[0], abs=0.0005)
    passkey = {m: v[pilot] for m, v in task_study.passkey_of(results).items()}
    for rule in ("pi", "yarn"):
        gain = passkey[rule] - passkey["none"]
        assert np.mean(gain) == pytest.approx(task_study.PILOT_PASSKEY_GAP[0], abs=0.0005)
        assert np.std(gain, ddof=1) == pytest.approx(task_study.PILOT_PASSKEY_SD, abs=0.005)
