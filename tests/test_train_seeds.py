"""Seeds batched in one program (``train.train_seeds``): each seed ends as its sequential run
would, within the float32 tolerance of the provenance tests, with the same checkpoint files;
an interrupted batched run resumes exactly; bad input fails before any training."""

from __future__ import annotations

import json
import re
import shutil
from types import SimpleNamespace

import jax
import numpy as np
import pytest
from test_provenance import PARAM_ATOL, VAL_LOSS_RTOL
from test_train import TRAIN, VAL, assert_trees_equal, schedule, tiny

from ropebook import buildplan, checkpoints, train, zoo, zoo_command

SEEDS = (0, 3, 5)
CONFIGS = [schedule(12, seed=s, eval_every=6, checkpoint_every=5) for s in SEEDS]


def assert_close_params(a, b) -> None:
    """Every weight within PARAM_ATOL of its tensor's largest magnitude (test_provenance)."""
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        scale = float(np.max(np.abs(np.asarray(y))))
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), atol=PARAM_ATOL * scale)


def curve(run: train.TrainResult, kind: str) -> list[float]:
    return [row["loss"] for row in run.history[kind]]


@pytest.fixture(scope="module")
def sequential(tmp_path_factory) -> list[tuple[train.TrainResult, object]]:
    """Each seed trained alone: ``[(result, checkpoint folder)]``."""
    out = []
    for tc in CONFIGS:
        folder = tmp_path_factory.mktemp(f"alone-{tc.seed}")
        extra = {"spec": {"seed": tc.seed}}
        run = train.train(
            tiny(), tc, TRAIN, VAL, checkpoint_dir=folder, extra=extra, progress=False
        )
        out.append((run, folder))
    return out


@pytest.fixture(scope="module")
def batched(tmp_path_factory) -> list[tuple[train.TrainResult, object]]:
    """The same seeds trained together: ``[(result, checkpoint folder)]``."""
    folders = [tmp_path_factory.mktemp(f"together-{s}") for s in SEEDS]
    runs = train.train_seeds(
        tiny(), CONFIGS, TRAIN, VAL, checkpoint_dirs=folders, progress=False,
        extras=[{"spec": {"seed": s}} for s in SEEDS],
    )  # fmt: skip
    return list(zip(runs, folders, strict=True))


def test_batched_seeds_equal_their_sequential_runs(sequential, batched):
    for (alone, _), (together, _) in zip(sequential, batched, strict=True):
        assert together.step == alone.step == 12 and together.tokens_seen == alone.tokens_seen
        np.testing.assert_allclose(curve(together, "train"), curve(alone, "train"), rtol=1e-6)
        np.testing.assert_allclose(curve(together, "val"), curve(alone, "val"), rtol=VAL_LOSS_RTOL)
        assert [r["step"] for r in together.history["val"]] == [6, 12]
        np.testing.assert_allclose(
            curve(together, "tail"), curve(alone, "tail"), rtol=VAL_LOSS_RTOL
        )
        assert [r["step"] for r in together.history["tail"]] == [8, 9, 10, 11, 12]
        assert_close_params(together.params, alone.params)
        assert_close_params(together.opt_state, alone.opt_state)
    # each seed kept its own initialisation and batches: the seeds' models are not alike
    first, second = (jax.tree.leaves(run.params)[0] for run, _ in batched[:2])
    assert not np.allclose(first, second, atol=1e-3)


def test_each_seed_is_saved_as_its_sequential_run(sequential, batched):
    volatile = {"seconds", "provenance", "history", "sha256"}  # timings, and float32 rounding
    for (_, alone_dir), (together, folder) in zip(sequential, batched, strict=True):
        assert sorted(p.name for p in folder.iterdir()) == sorted(
            p.name for p in alone_dir.iterdir()
        )
        meta, reference = checkpoints.read_metadata(folder), checkpoints.read_metadata(alone_dir)
        assert {k: v for k, v in meta.items() if k not in volatile} == {
            k: v for k, v in reference.items() if k not in volatile
        }
        assert meta["extra"] == {"spec": {"seed": meta["train"]["seed"]}}
        assert [r["step"] for r in meta["history"]["train"]] == [4, 8, 12]
        tails = (meta["history"]["tail"], reference["history"]["tail"])
        assert [r["step"] for r in tails[0]] == [r["step"] for r in tails[1]] == [8, 9, 10, 11, 12]
        np.testing.assert_allclose(*([r["loss"] for r in t] for t in tails), rtol=VAL_LOSS_RTOL)
        (entry,) = meta["provenance"]
        assert entry["seed_batch"] == len(SEEDS) and entry["steps"] == [0, 12]
        assert "seed_batch" not in reference["provenance"][0]
        params, opt_state, _ = checkpoints.load_checkpoint(folder, train.make_optimizer(CONFIGS[0]))
        assert_trees_equal(params, together.params)
        assert_trees_equal(opt_state, together.opt_state)


def test_interrupted_batched_run_resumes_to_the_uninterrupted_one(batched, tmp_path):
    folders = [tmp_path / str(s) for s in SEEDS]
    first = train.train_seeds(
        tiny(), CONFIGS, TRAIN, VAL, checkpoint_dirs=folders, stop_after=7, progress=False
    )
    assert [run.step for run in first] == [7] * len(SEEDS)
    assert not any(checkpoints.read_metadata(f)["complete"] for f in folders)
    resumed = train.train_seeds(
        tiny(), CONFIGS, TRAIN, VAL, checkpoint_dirs=folders, progress=False
    )
    for run, folder, (whole, _) in zip(resumed, folders, batched, strict=True):
        assert run.step == 12 and run.tokens_seen == whole.tokens_seen
        assert_trees_equal(run.params, whole.params)
        assert curve(run, "val") == curve(whole, "val")
        steps = [entry["steps"] for entry in checkpoints.read_metadata(folder)["provenance"]]
        assert steps == [[0, 7], [7, 12]]
        assert len(list(folder.glob("*.safetensors"))) == 1


def test_seeds_at_different_steps_are_brought_level_first(sequential, tmp_path):
    """Seed 0 interrupted alone at step 3, seed 3 complete, seed 5 new: seed 3 is only loaded,
    seed 5 catches up alone, then 0 and 5 train together; all end as their sequential runs."""
    folders = [tmp_path / str(s) for s in SEEDS]
    train.train(
        tiny(), CONFIGS[0], TRAIN, VAL, checkpoint_dir=folders[0], stop_after=3, progress=False
    )
    shutil.copytree(sequential[1][1], folders[1])
    complete_json = (folders[1] / checkpoints.CHECKPOINT_JSON).read_text()
    runs = train.train_seeds(tiny(), CONFIGS, TRAIN, VAL, checkpoint_dirs=folders, progress=False)
    assert (folders[1] / checkpoints.CHECKPOINT_JSON).read_text() == complete_json
    for run, (alone, _) in zip(runs, sequential, strict=True):
        assert run.step == 12
        np.testing.assert_allclose(curve(run, "val"), curve(alone, "val"), rtol=VAL_LOSS_RTOL)
        assert_close_params(run.params, alone.params)
    for folder in (folders[0], folders[2]):
        calls = json.loads((folder / checkpoints.CHECKPOINT_JSON).read_text())["provenance"]
        assert [(c["steps"], c.get("seed_batch")) for c in calls] == [([0, 3], None), ([3, 12], 2)]


@pytest.mark.parametrize(
    "configs, kwargs, message",
    [
        ([], {}, r"at least one TrainConfig \(S = 0"),
        ([schedule(seed=1), schedule(seed=2), schedule(seed=1)], {}, r"seed\(s\) \[1\] more than once"),
        ([schedule(seed=1), schedule(seed=2, lr=1e-4)], {}, r"seeds 1 and 2 also differ in \['lr'\]"),
        ([schedule(seed=1), schedule(seed=2, steps=9, snapshots=(3,))], {}, r"\['snapshots', 'steps'\]"),
        ([schedule(seed=1, stop_accuracy=0.9), schedule(seed=2, stop_accuracy=0.9)], {}, "stop_accuracy"),
        ([schedule(seed=1), schedule(seed=2, tail_evals=2)], {}, r"also differ in \['tail_evals'\]"),
        ([schedule(seed=1), schedule(seed=2)], {"checkpoint_dirs": ["a"]}, "2 configs, 1 checkpoint_dirs"),
        ([schedule(seed=1), schedule(seed=2)], {"checkpoint_dirs": ["a", "./a"]}, "one checkpoint folder"),
    ],
)  # fmt: skip
def test_bad_input_fails_before_training(monkeypatch, configs, kwargs, message):
    monkeypatch.setattr(train, "_start", lambda *a: pytest.fail("training started"))
    with pytest.raises(ValueError, match=message):
        train.train_seeds(tiny(), configs, TRAIN, **kwargs)


def test_seed_batch_setting(monkeypatch):
    monkeypatch.setenv("ROPEBOOK_SEED_BATCH", "on")
    assert train.seed_batching()
    monkeypatch.setenv("ROPEBOOK_SEED_BATCH", "off")
    assert not train.seed_batching()
    monkeypatch.setenv("ROPEBOOK_SEED_BATCH", "auto")
    assert train.seed_batching() == (jax.default_backend() == "gpu")
    monkeypatch.delenv("ROPEBOOK_SEED_BATCH")
    assert train.seed_batching() == (jax.default_backend() == "gpu")
    monkeypatch.setenv("ROPEBOOK_SEED_BATCH", "yes")
    with pytest.raises(ValueError, match="ROPEBOOK_SEED_BATCH must be one of auto, on, off"):
        train.seed_batching()


def test_zoo_caches_batched_seeds_as_load_would(tiny_zoo, monkeypatch):
    models = zoo.load_seeds("rope", (0, 1), profile="smoke", progress=False, together=True)
    for m, seed in zip(models, (0, 1), strict=True):
        assert m.seed == seed and m.trained_now
        assert m.path == tiny_zoo / "zoo" / zoo.spec_hash("rope", seed=seed, profile="smoke")
        assert checkpoints.read_metadata(m.path)["provenance"][0]["seed_batch"] == 2
    monkeypatch.setattr(train, "train", lambda *a, **k: pytest.fail("trained again"))
    monkeypatch.setattr(train, "train_seeds", lambda *a, **k: pytest.fail("trained again"))
    again = zoo.load_seeds("rope", (0, 1), profile="smoke", progress=False)
    for m, cached in zip(models, again, strict=True):
        assert not cached.trained_now and cached.history == m.history
        assert_trees_equal(cached.params, m.params)
    assert_trees_equal(zoo.load("rope", seed=1, profile="smoke").params, models[1].params)


def test_zoo_groups_jobs_by_spec(monkeypatch):
    calls = []

    def load_seeds(name, seeds, **kw):
        calls.append((name, seeds, kw))
        return [SimpleNamespace(seed=s, trained_now=s == 1) for s in seeds]

    monkeypatch.setattr(zoo, "load_seeds", load_seeds)
    jobs = [("rope", 0, "shakespeare", "lesson"), ("nope", 0, "shakespeare", "lesson"),
            ("rope", 1, "shakespeare", "lesson"), ("rope", 2, "python", "lesson")]  # fmt: skip
    trained = zoo.train_seed_groups(jobs, "smoke", {"steps": 4})
    assert calls == [
        (
            "rope",
            (0, 1),
            {
                "profile": "smoke",
                "domain": "shakespeare",
                "regime": "lesson",
                "together": True,
                "steps": 4,
            },
        )
    ]
    assert list(trained) == [("rope", 1, "shakespeare", "lesson")]  # seed 0 was cached


def test_zoo_counts_the_seeds_it_trained_in_one_program(tiny_zoo, monkeypatch, capsys):
    """With ROPEBOOK_SEED_BATCH=on the seeds train before the main loop, which then loads them
    from the cache: the bar, the table and the regime's time still count them as trained."""
    monkeypatch.setenv("ROPEBOOK_SEED_BATCH", "on")
    groups, done = [], []
    group_seeds, progress_done = zoo.train_seed_groups, buildplan.Progress.done

    def spy_groups(*args):
        groups.append(group_seeds(*args))
        return groups[-1]

    def spy_done(self, item, seconds, **kwargs):
        done.append((seconds, kwargs["trained"]))
        progress_done(self, item, seconds, **kwargs)

    monkeypatch.setattr(zoo, "train_seed_groups", spy_groups)
    monkeypatch.setattr(buildplan.Progress, "done", spy_done)
    jobs = [("rope", s, "shakespeare", "lesson") for s in (0, 1)]
    assert zoo_command.main(["--profile", "smoke", "--names", "rope", "--seeds", "0", "1"]) == 0
    assert list(groups[0]) == jobs and all(seconds > 0 for seconds in groups[0].values())
    assert [trained for _, trained in done] == [True, True]
    assert all(seconds >= groups[0][job] for (seconds, _), job in zip(done, jobs, strict=True))
    out = capsys.readouterr().out
    for seed in (0, 1):
        assert re.search(rf"rope\s+{seed}\s+shakespeare\s+lesson\s+trained", out), out
    done.clear()
    assert zoo_command.main(["--profile", "smoke", "--names", "rope", "--seeds", "0", "1"]) == 0
    assert groups[1] == {} and [trained for _, trained in done] == [False, False]
    assert len(re.findall(r"shakespeare\s+lesson\s+cached", capsys.readouterr().out)) == 2


def test_batched_seeds_keep_each_seeds_tail_average():
    """The tail average rides in the optimiser state, so each batched seed keeps its own, equal
    to its sequential run's within the provenance tolerance, and evaluates it at the end."""
    configs = [schedule(8, seed=s, average_share=0.5) for s in SEEDS[:2]]
    together = train.train_seeds(tiny(), configs, TRAIN, VAL, progress=False)
    for tc, run in zip(configs, together, strict=True):
        alone = train.train(tiny(), tc, TRAIN, VAL, progress=False)
        assert_close_params(
            train.averaged_params(run.opt_state), train.averaged_params(alone.opt_state)
        )
        assert run.history["val_average"]["loss"] == pytest.approx(
            alone.history["val_average"]["loss"], rel=VAL_LOSS_RTOL
        )
    first, second = (train.averaged_params(r.opt_state)["embed"] for r in together)
    assert not np.allclose(first, second, atol=1e-3)


def test_zoo_loads_seeds_one_after_another_unless_batching_is_on(tiny_zoo, monkeypatch):
    monkeypatch.setenv("ROPEBOOK_SEED_BATCH", "off")
    monkeypatch.setattr(train, "train_seeds", lambda *a, **k: pytest.fail("trained together"))
    models = zoo.load_seeds("rope", (0, 1), profile="smoke", progress=False)
    assert [m.seed for m in models] == [0, 1] and all(m.trained_now for m in models)
    for m in models:
        assert "seed_batch" not in checkpoints.read_metadata(m.path)["provenance"][0]
