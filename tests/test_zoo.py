"""The zoo: names and profiles validate early, models train once and then load from the cache."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ropebook import buildplan, checkpoints, io, seedplan, tasks, train, zoo, zoo_command


def forbid_training(monkeypatch) -> None:
    def fail(*args, **kwargs):
        raise AssertionError("train.train was called")

    monkeypatch.setattr(train, "train", fail)


def test_every_spec_builds_in_every_profile():
    for profile in zoo.PROFILES:
        for name in zoo.SPECS:
            config, tc = zoo.configs(name, profile=profile)
            assert tc.seq_len == config.context and config.head_dim >= 16 or profile == "smoke"
    assert set(zoo.TABLE2) <= set(zoo.SPECS) and set(zoo.PE_ZOO) <= set(zoo.SPECS)
    assert zoo.configs("rope-500k")[0].rope_base == 500_000.0
    assert zoo.configs("alibi", profile="cpu")[0].n_heads == 12


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            dict(name="rope3"),
            "unknown model name 'rope3'; valid model names: nope, rope, rope-500k",
        ),
        (dict(profile="tpu"), "valid profiles: smoke, cpu, gpu"),
        (dict(domain="latin"), "valid domains: shakespeare, python"),
        (dict(lr_peak=1.0), "unknown override 'lr_peak'; valid overrides: n_layers"),
    ],
)
def test_bad_arguments_fail_before_any_training(tiny_zoo, monkeypatch, kwargs, message):
    forbid_training(monkeypatch)
    monkeypatch.setattr(zoo, "_tokens", lambda *a: pytest.fail("tokens were loaded"))
    with pytest.raises(ValueError, match=message):
        zoo.load(**{"name": "rope", "profile": "smoke"} | kwargs)


def test_trains_once_then_loads_from_cache(tiny_zoo, monkeypatch):
    first = zoo.load("kerple", profile="smoke", progress=False)
    assert first.path == tiny_zoo / "zoo" / first.spec_hash
    assert first.tokens_seen == 6 * 8 * 64 and np.isfinite(first.val_ppl)
    forbid_training(monkeypatch)
    again = zoo.load("kerple", profile="smoke", progress=False)
    assert again.spec_hash == first.spec_hash and again.history == first.history
    for a, b in zip(*(train.jax.tree.leaves(m.params) for m in (first, again)), strict=True):
        np.testing.assert_array_equal(a, b)


def test_spec_hash_covers_seed_domain_and_overrides(tiny_zoo):
    variants = (dict(), dict(seed=1), dict(domain="python"), dict(rope_base=500.0), dict(steps=7))
    hashes = {zoo.spec_hash("rope", profile="smoke", **kw) for kw in variants}
    assert len(hashes) == len(variants)
    assert zoo.spec_hash("rope", profile="smoke") == zoo.spec_hash("rope", profile="smoke")
    assert not (tiny_zoo / "zoo").exists()  # hashing trains nothing


def test_corrupt_cache_entry_fails_naming_the_file(tiny_zoo):
    model = zoo.load("nope", profile="smoke", progress=False)
    tensors = model.path / checkpoints.read_metadata(model.path)["file"]
    tensors.write_bytes(tensors.read_bytes()[:-8] + b"garbage!")
    with pytest.raises(io.IntegrityError, match=str(tensors)):
        zoo.load("nope", profile="smoke", progress=False)


def test_main_trains_the_requested_models_and_prints_a_table(tiny_zoo, capsys):
    assert zoo_command.main(["--profile", "smoke", "--names", "alibi", "fire", "--seeds", "0"]) == 0
    out = capsys.readouterr().out
    assert "val ppl" in out and "2 models" in out
    lines = out.splitlines()
    table = next(i for i, line in enumerate(lines) if line.split()[:2] == ["name", "seed"])
    assert {line.split()[0] for line in lines[table + 1 : table + 3]} == {"alibi", "fire"}


def test_default_jobs_cover_specs_and_table2_per_seed():
    jobs = zoo.default_jobs("smoke", seeds=(0, 1))
    groups = len(zoo.SPECS) + len(zoo.TABLE2) + len(zoo.MATCHED) + len(zoo.FLAGSHIP)
    groups += len(zoo.TASK_MODELS) * len(tasks.TASKS)
    groups += len(zoo.LAYOUT_MODELS) * len(tasks.TASKS) + len(zoo.LAYOUT_SWEEP_P)  # layouts
    assert len(jobs) == len(set(jobs)) == 2 * groups
    assert {j[2] for j in jobs} == {"shakespeare", "python", *tasks.TASKS}
    assert {j[3] for j in jobs} == set(zoo.REGIMES)
    cpu = zoo.default_jobs("cpu")
    flagship = {(n, s) for n, s, _, r in cpu if r == "flagship"}
    assert flagship == {(n, s) for n in zoo.FLAGSHIP for s in (0, 1, 2)}
    matched = [(n, s) for n, s, _, r in cpu if r == "matched"]
    planned = seedplan.planned_counts("cpu")  # seeds chosen by power add to the profile's 3
    extra = sum(max(n - 3, 0) for (regime, *_), n in planned.items() if regime == "matched")
    assert len(matched) == 3 * len(zoo.MATCHED) + extra and ("alibi", 2) in matched
    in_plan = {name: n for (regime, name, _), n in planned.items() if regime == "matched"}
    assert all({(name, s) for s in range(n)} <= set(matched) for name, n in in_plan.items())


def test_regimes_match_gemma_7b_slowest_plane_and_keep_lesson_hashes():
    from ropebook import rope

    assert zoo.reference_slowest_turns() == pytest.approx(0.1401, abs=1e-4)
    assert zoo.regime_settings("cpu", "lesson") == {}
    for profile in zoo.PROFILES:
        for regime in ("matched", "flagship"):
            config, tc = zoo.configs("rope", profile=profile, regime=regime)
            turns = rope.turns_per_context(config.head_dim, config.rope_base, config.context)
            assert turns[-1] == pytest.approx(0.14, rel=0.05) and config.head_dim >= 32
            assert zoo.configs("rope-500k", profile=profile, regime=regime)[0].rope_base == (
                50 * config.rope_base
            )
        flagship = zoo.configs("nope", profile=profile, regime="flagship")[1]
        assert flagship.snapshots[0] == 0 and flagship.snapshots[-1] == flagship.steps
        assert len(flagship.snapshots) == zoo.SNAPSHOTS + 1
    with pytest.raises(ValueError, match="valid regimes: lesson, matched, flagship"):
        zoo.configs("rope", regime="tuned")


def test_flagship_model_keeps_snapshots(tiny_zoo):
    m = zoo.load(
        "rope",
        profile="smoke",
        regime="flagship",
        steps=6,
        warmup=1,
        snapshots=(0, 2, 6),
        progress=False,
    )
    assert m.snapshot_steps == [0, 2, 6] and m.config.head_dim == 32
    params, tokens_seen = m.snapshot(6)
    assert tokens_seen == m.tokens_seen
    np.testing.assert_array_equal(np.asarray(params["embed"]), np.asarray(m.params["embed"]))


def test_existing_spec_hashes_are_unchanged(tiny_zoo):
    """Hashes computed by the code before task models existed (tiny_zoo's tokens): adding the
    task regime and ``stop_accuracy`` must leave every cached model loadable."""
    assert zoo.spec_hash("rope", profile="cpu") == "9ae4776b1f568f1e"
    assert zoo.spec_hash("alibi", profile="gpu", seed=1) == "17e5bdc3e054528e"
    assert (
        zoo.spec_hash("p-rope-0.75", profile="cpu", regime="matched", domain="python")
        == "1150df89de2c7543"
    )
    assert zoo.spec_hash("nope", profile="cpu", regime="flagship", seed=2) == "f0591065ca093756"


def test_task_model_trains_every_step_on_its_learning_curve_and_caches(tiny_zoo, monkeypatch):
    """Equal training: a task model never stops at the criterion; it trains all its steps (the
    same for every encoding and task of a profile), evaluated every ``eval_every`` steps."""
    monkeypatch.setattr(zoo, "_tokens", lambda *a: pytest.fail("a task loads no corpus"))
    m = zoo.load("rope", profile="smoke", regime="task", domain="kback", progress=False)
    _, tc = zoo.configs("rope", profile="smoke", regime="task")
    val = m.history["val"]
    assert m.config.vocab_size == tasks.VOCAB_SIZE and tc.stop_accuracy is None
    assert [r["step"] for r in val] == list(range(tc.eval_every, tc.steps + 1, tc.eval_every))
    assert len(val) >= 2 and m.tokens_seen == tc.steps * tc.batch_size * tc.seq_len
    for profile in zoo.PROFILES:
        steps = {
            zoo.configs(name, profile=profile, regime="task")[1].steps
            for name, _ in zoo._task_groups()
        }
        assert len(steps) == 1, (profile, steps)  # every arm of every comparison alike
        _, cfg = zoo.configs("rope", profile=profile, regime="task")
        assert cfg.stop_accuracy is None and cfg.eval_every and cfg.steps % cfg.eval_every == 0
    forbid_training(monkeypatch)
    again = zoo.load("rope", profile="smoke", regime="task", domain="kback", progress=False)
    assert again.spec_hash == m.spec_hash and again.history == m.history
    with pytest.raises(ValueError, match="task regime trains the tasks"):
        zoo.load("rope", profile="smoke", regime="task", domain="shakespeare")
    with pytest.raises(ValueError, match="task regime trains the tasks"):
        zoo.load("rope", profile="smoke", domain="recall")


def test_stop_accuracy_stops_a_task_run_and_marks_it_complete(tmp_path):
    config, tc = zoo.configs("rope", profile="smoke", regime="task")
    tc = dataclasses.replace(tc, steps=60, eval_every=5, stop_accuracy=1e-3)  # met early
    run = train.train(config, tc, None, task=tasks.get("recall"), checkpoint_dir=tmp_path,
                      progress=False)  # fmt: skip
    accuracy = [r["accuracy"] for r in run.history["val"]]
    assert run.stopped and run.step < tc.steps and run.step == 5 * len(accuracy)
    assert accuracy[-1] >= 1e-3 and all(a < 1e-3 for a in accuracy[:-1])
    meta = checkpoints.read_metadata(tmp_path)
    assert meta["complete"] and meta["stopped"] and meta["step"] == run.step
    again = train.train(config, tc, None, task=tasks.get("recall"), checkpoint_dir=tmp_path,
                        progress=False)  # fmt: skip
    assert again.step == run.step  # a stopped run is not resumed past its criterion
    with pytest.raises(ValueError, match="or a task, not both"):
        train.train(config, tc, np.zeros(500, np.int32), task=tasks.get("recall"))


def test_status_says_done_running_interrupted_missing_and_damaged(tiny_zoo, monkeypatch, capsys):
    import fcntl

    folder = tiny_zoo / "zoo" / zoo.spec_hash("rope", profile="smoke")
    assert zoo.cache_state(folder) == ("missing", 0)
    config, tc = zoo.configs("rope", profile="smoke")
    tokens = zoo._tokens("shakespeare", "train", config.vocab_size)
    train.train(config, tc, tokens, checkpoint_dir=folder, progress=False, stop_after=3)
    (folder / ".lock").touch()
    assert zoo.cache_state(folder) == ("interrupted", 3)
    with open(folder / ".lock") as lock:  # what load() holds while it trains
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert zoo.cache_state(folder) == ("running", 3)
    zoo.load("rope", profile="smoke", progress=False)  # resumes and finishes it
    assert zoo.cache_state(folder) == ("done", 6)
    args = ["--status", "--profile", "smoke", "--names", "rope", "nope", "--seeds", "0"]
    assert zoo_command.main(args) == 1  # nope is missing
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[4:6] == ["done", "6/6"] and out[2].split()[4:6] == ["missing", "0/6"]
    assert out[-1] == f"2 models in {tiny_zoo / 'zoo'}: 1 done, 1 missing"
    assert not (tiny_zoo / "zoo" / zoo.spec_hash("nope", profile="smoke")).exists()
    (folder / checkpoints.CHECKPOINT_JSON).write_text("{")
    assert zoo.cache_state(folder) == ("damaged", 0)


def test_the_zoo_bar_shows_one_remaining_time_the_plans():
    """While the zoo trains, its overall bar shows the plan's time left, scaled by the measured
    over the estimated time of the models trained so far, and not tqdm's own beside it."""
    items = [
        buildplan.Item("lesson", False, *zoo.configs(name, profile="cpu"))
        for name in ("rope", "nope", "alibi")
    ]
    rates = {items[0].shape: buildplan.Rate(0.5, 10.0)}
    planned = [buildplan.estimate(item, rates) for item in items]
    progress = buildplan.Progress(items, rates)
    assert str(progress.bar).endswith(f"~{buildplan.duration(sum(planned))} left (estimate)]")
    steps = items[0].train_config.steps
    progress.done(items[0], 2 * planned[0], trained=True, steps=steps)  # twice its estimate
    shown = str(progress.bar)
    progress.close()
    assert f"| {steps}/{3 * steps} [" in shown
    assert shown.endswith(f"~{buildplan.duration(2 * sum(planned[1:]))} left (estimate)]")
    assert "<" not in shown and shown.count("left") == 1  # tqdm's "elapsed<remaining" is gone


def test_only_the_dissected_regimes_record_tail_evaluations():
    """The methods chapter reads the matched and flagship runs' tail evaluations; other regimes
    skip them, and the choice moves no spec hash (evaluation only)."""
    for regime in zoo.REGIMES:
        _, tc = zoo.configs("rope", profile="cpu", regime=regime)
        assert tc.tail_evals == (train.TAIL_EVALS if regime in zoo.TAIL_REGIMES else 0), regime
        assert "tail_evals" not in tc.to_dict()
    assert set(zoo.TAIL_REGIMES) == {"matched", "flagship"}


def test_the_seed_plans_lesson_seeds_reach_the_corpus_it_names_only():
    from ropebook import seedplan

    planned = {k: n for k, n in seedplan.planned_counts("cpu").items() if k[0] == "lesson"}
    assert planned, "the plan buys lesson seeds (0.25-RoPE vs NoPE, data/seed_plan.json)"
    for (_, name, domain), n in planned.items():
        assert zoo.seeds_for(name, profile="cpu", domain=domain) == tuple(range(n))
        assert zoo.seeds_for(name, profile="cpu", domain=domain, planned=False) == (0, 1, 2)
    assert zoo.seeds_for("rope", profile="cpu", domain="python") == (0, 1, 2)  # not planned
    jobs = set(zoo.default_jobs("cpu"))
    assert all((name, n - 1, domain, "lesson") in jobs for (_, name, domain), n in planned.items())
