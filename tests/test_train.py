"""Training: learning happens, checkpoints round-trip, resume is exact, sharding is transparent,
the tail evaluations move nothing."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from ropebook import checkpoints, encodings, evaluation, io, train, zoo
from ropebook.model import ModelConfig

VOCAB = 64


def markov_text(n: int, seed: int = 0) -> np.ndarray:
    """Synthetic text: each token has 3 possible successors, so a bigram model learns fast."""
    rng = np.random.default_rng(seed)
    successors = rng.integers(0, VOCAB, (VOCAB, 3))
    choices = rng.integers(0, 3, n)
    out = [0]
    for c in choices[1:]:
        out.append(int(successors[out[-1], c]))
    return np.asarray(out, dtype=np.uint16)


TEXT = markov_text(20_000)
TRAIN, VAL = TEXT[:18_000], TEXT[18_000:]


def tiny(encoding: str = "rope") -> ModelConfig:
    proportion = 0.5 if encoding in ("p-rope", "rope-partial", "rope-reversed") else 1.0
    return ModelConfig(
        vocab_size=VOCAB, n_layers=2, n_heads=2, d_model=32, d_ff=64, context=32,
        encoding=encoding, proportion=proportion,
    )  # fmt: skip


def schedule(steps: int = 12, **kwargs) -> train.TrainConfig:
    settings = dict(steps=steps, batch_size=4, seq_len=32, warmup=2, eval_batches=2, log_every=4)
    return train.TrainConfig(**settings | kwargs)


def assert_trees_equal(a, b) -> None:
    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(leaves_a, leaves_b, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.fixture(scope="module")
def text() -> tuple[np.ndarray, np.ndarray, int]:
    """(train, val, vocab): Shakespeare if ``python -m ropebook data`` has run, else Markov text.

    ``prepare`` is patched out so a test never downloads or tokenises anything.
    """
    from ropebook import data

    def unprepared(*args, **kwargs):
        raise FileNotFoundError("data not prepared")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(data, "prepare", unprepared)
        try:
            tokens = data.load_tokens("shakespeare", "train")
        except (FileNotFoundError, KeyError, OSError):
            return TRAIN, VAL, VOCAB
    return tokens[:200_000], tokens[200_000:220_000], data.DEFAULT_VOCAB


@pytest.mark.parametrize("encoding", encodings.ENCODINGS)
def test_loss_decreases_for_every_encoding(encoding, text):
    train_tokens, val_tokens, vocab = text
    config = dataclasses.replace(tiny(encoding), vocab_size=vocab)
    tc = schedule(40, batch_size=8, lr=1e-2, eval_every=20)
    result = train.train(config, tc, train_tokens, val_tokens, progress=False)
    losses = [row["loss"] for row in result.history["train"]]
    assert losses[0] > np.log(vocab) - 0.3  # starts near uniform
    assert losses[-1] < losses[0] - 1.0, losses  # NoPE (causal mask only) must learn too
    assert result.history["val"][-1]["loss"] < result.history["val"][0]["loss"]


def test_batches_are_a_function_of_seed_and_step():
    tc = schedule()
    np.testing.assert_array_equal(train.batch_at(TRAIN, tc, 5), train.batch_at(TRAIN, tc, 5))
    assert not np.array_equal(train.batch_at(TRAIN, tc, 5), train.batch_at(TRAIN, tc, 6))
    assert train.batch_at(TRAIN, tc, 0).shape == (4, 33)


def test_checkpoint_round_trips_bit_exactly(tmp_path):
    result = train.train(tiny(), schedule(), TRAIN, checkpoint_dir=tmp_path, progress=False)
    params, opt_state, meta = checkpoints.load_checkpoint(
        tmp_path, train.make_optimizer(schedule())
    )
    assert_trees_equal(params, result.params)
    assert_trees_equal(opt_state, result.opt_state)
    assert (
        meta["step"] == 12 and meta["complete"] and ModelConfig.from_dict(meta["model"]) == tiny()
    )
    assert meta["sha256"] == io.sha256_file(tmp_path / meta["file"])


@pytest.mark.parametrize("encoding", ["rope", "fire"])
def test_resume_equals_uninterrupted(tmp_path, encoding):
    tc = schedule(12, checkpoint_every=5)
    whole = train.train(tiny(encoding), tc, TRAIN, VAL, progress=False)
    first = train.train(
        tiny(encoding), tc, TRAIN, VAL, checkpoint_dir=tmp_path, stop_after=7, progress=False
    )
    assert first.step == 7 and not checkpoints.read_metadata(tmp_path)["complete"]
    resumed = train.train(tiny(encoding), tc, TRAIN, VAL, checkpoint_dir=tmp_path, progress=False)
    assert resumed.step == 12 and resumed.tokens_seen == whole.tokens_seen
    assert_trees_equal(resumed.params, whole.params)
    assert resumed.history["val"][-1]["loss"] == whole.history["val"][-1]["loss"]
    assert len(list(tmp_path.glob("*.safetensors"))) == 1  # older tensor files are removed


@pytest.fixture
def checkpoint(tmp_path) -> Path:
    train.train(tiny(), schedule(4), TRAIN, checkpoint_dir=tmp_path, progress=False)
    return tmp_path


def tensor_file(directory: Path) -> Path:
    return directory / checkpoints.read_metadata(directory)["file"]


def rewrite(directory: Path, change) -> None:
    """Edit the tensors and record the new sha256, so only the names/shapes check can object."""
    path = tensor_file(directory)
    tensors = load_file(str(path))
    change(tensors)
    save_file(tensors, str(path))
    meta = json.loads((directory / checkpoints.CHECKPOINT_JSON).read_text())
    io.write_json_atomic(
        directory / checkpoints.CHECKPOINT_JSON, meta | {"sha256": io.sha256_file(path)}
    )


def test_flipped_byte_fails_with_the_file_name(checkpoint):
    path = tensor_file(checkpoint)
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(io.IntegrityError, match=f"{path}.*sha256"):
        checkpoints.load_checkpoint(checkpoint)


def test_missing_tensor_fails_with_its_name(checkpoint):
    rewrite(checkpoint, lambda t: t.pop("params.layers.1.qkv"))
    with pytest.raises(
        checkpoints.CheckpointError, match=r"safetensors: tensor 'params.layers.1.qkv' is missing"
    ):
        checkpoints.load_checkpoint(checkpoint)


def test_wrong_shape_fails_with_both_shapes(checkpoint):
    rewrite(checkpoint, lambda t: t.update({"params.embed": np.zeros((3, 32), np.float32)}))
    with pytest.raises(
        checkpoints.CheckpointError, match=r"params.embed.*\(3, 32\).*expected \(64, 32\)"
    ):
        checkpoints.load_checkpoint(checkpoint)


def test_bad_json_and_other_run_fail_clearly(checkpoint):
    with pytest.raises(checkpoints.CheckpointError, match="another run.*'lr'"):
        train.train(tiny(), schedule(4, lr=1e-4), TRAIN, checkpoint_dir=checkpoint, progress=False)
    (checkpoint / checkpoints.CHECKPOINT_JSON).write_text("{not json")
    with pytest.raises(checkpoints.CheckpointError, match=f"{checkpoint}.*not valid JSON"):
        checkpoints.load_checkpoint(checkpoint)


def test_evaluate_and_loss_by_position_beyond_context():
    config = tiny("alibi")
    result = train.train(config, schedule(4), TRAIN, progress=False)
    metrics = evaluation.evaluate(result.params, config, VAL, seq_len=32, batch_size=4, n_batches=2)
    assert np.isclose(metrics["ppl"], np.exp(metrics["loss"]))
    curve = evaluation.loss_by_position(
        result.params, config, VAL, seq_len=96, n_windows=5, batch_size=2
    )
    assert curve.shape == (96,) and np.isfinite(curve).all()


SHARDED = """
import json, os, sys
import jax, numpy as np
from ropebook import runtime, train
sys.path.insert(0, {tests!r})
from test_train import TRAIN, tiny, schedule
count = int(os.environ["ROPEBOOK_CPU_DEVICES"])
assert jax.device_count() == count, jax.devices()
batch = jax.device_put(train.batch_at(TRAIN, schedule(), 0), runtime.data_parallel(4)[0])
assert len(batch.sharding.device_set) == count
result = train.train(tiny(), schedule(6), TRAIN, progress=False)
print(json.dumps([row["loss"] for row in result.history["train"]]))
"""


def _train_on_devices(count: int) -> list[float]:
    """Train the tiny model in a fresh process that ``import ropebook`` splits into ``count``
    XLA CPU devices (``runtime.split_cpu_devices``; ``XLA_FLAGS`` left unset)."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env |= {"ROPEBOOK_CPU_DEVICES": str(count), "JAX_PLATFORMS": "cpu"}
    script = textwrap.dedent(SHARDED.format(tests=str(Path(__file__).parent)))
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_data_parallel_on_two_host_devices_matches_one_device():
    np.testing.assert_allclose(_train_on_devices(2), _train_on_devices(1), rtol=1e-5)


def test_snapshots_keep_params_at_their_steps_and_survive_resume(tmp_path):
    tc = schedule(12, checkpoint_every=5, snapshots=(0, 3, 8, 12))
    assert train.TrainConfig(**json.loads(json.dumps(tc.to_dict()))) == tc
    assert "snapshots" not in schedule(12).to_dict()  # old spec hashes are unchanged
    train.train(tiny(), tc, TRAIN, VAL, checkpoint_dir=tmp_path, stop_after=7, progress=False)
    assert checkpoints.snapshot_steps(tmp_path) == [0, 3]
    whole = train.train(tiny(), tc, TRAIN, VAL, checkpoint_dir=tmp_path, progress=False)
    assert checkpoints.snapshot_steps(tmp_path) == [0, 3, 8, 12]
    final, entry = checkpoints.load_snapshot(tmp_path, 12)
    assert_trees_equal(final, whole.params)
    assert entry["tokens_seen"] == 12 * 4 * 32
    initial, _ = checkpoints.load_snapshot(tmp_path, 0)
    assert_trees_equal(initial, train.model.init_params(jax.random.key(0), tiny()))
    assert {row["step"] for row in whole.history["val"]} >= {3, 8, 12}
    with pytest.raises(
        checkpoints.CheckpointError, match=r"no snapshot at step 5; kept: \[0, 3, 8, 12\]"
    ):
        checkpoints.load_snapshot(tmp_path, 5)
    with pytest.raises(ValueError, match="snapshots must lie in"):
        schedule(12, snapshots=(13,))


def test_log_spaced_steps():
    assert train.log_spaced_steps(1000, 4) == (1, 10, 100, 1000)
    assert train.log_spaced_steps(1800, 8, first=18)[-1] == 1800


def test_fine_tune_from_initial_params_with_an_intervention(tmp_path):
    """``initial_params`` starts from given weights (not key(seed)); ``intervention`` enters every
    step's loss and the evaluations; both None leave training bit-identical."""
    from ropebook import model

    base = train.train(tiny(), schedule(6), TRAIN, progress=False)
    again = train.train(tiny(), schedule(6), TRAIN, progress=False, intervention=None)
    assert_trees_equal(base.params, again.params)  # defaults change nothing
    parent = jax.tree.map(np.asarray, base.params)
    slowed = model.Intervention(frequencies=0.5 ** np.arange(8), logit_scale=1.2)
    tc = schedule(4, seq_len=64, lr=1e-3)
    tuned = train.train(
        tiny(), tc, TRAIN, VAL, checkpoint_dir=tmp_path, progress=False,
        initial_params=base.params, intervention=slowed,
    )  # fmt: skip
    assert_trees_equal(base.params, parent)  # the parent's weights are not donated or changed
    plain = train.train(tiny(), tc, TRAIN, VAL, progress=False, initial_params=base.params)
    first = jax.tree.leaves(tuned.params)[0]
    assert not np.allclose(first, jax.tree.leaves(parent)[0])  # it trained from the parent
    assert not np.allclose(first, jax.tree.leaves(plain.params)[0])  # the intervention mattered
    loss = evaluation.evaluate(
        tuned.params, tiny(), VAL, seq_len=64, batch_size=4, n_batches=2, intervention=slowed
    )["loss"]
    assert tuned.history["val"][-1]["loss"] == pytest.approx(loss, rel=1e-6)
    params, _, meta = checkpoints.load_checkpoint(tmp_path)
    assert_trees_equal(params, tuned.params) and meta["complete"]


def test_tail_eval_steps():
    assert train.tail_eval_steps(schedule(1000)) == (900, 925, 950, 975, 1000)
    assert train.tail_eval_steps(schedule(12)) == (8, 9, 10, 11, 12)  # at least a step apart
    assert train.tail_eval_steps(schedule(60, tail_evals=3)) == (54, 57, 60)
    assert train.tail_eval_steps(schedule(3)) == (1, 2, 3)
    assert train.tail_eval_steps(schedule(12, tail_evals=1)) == (12,)
    assert train.tail_eval_steps(schedule(12, tail_evals=0)) == ()
    with pytest.raises(ValueError, match="tail_evals must be >= 0"):
        schedule(12, tail_evals=-1)


def test_tail_evaluations_leave_weights_and_spec_hashes_unchanged(text, tmp_path):
    """A smoke model trained with the tail evaluations has bit-identical weights, optimiser state
    and training losses to one trained without; each tail loss is the evaluation of the weights
    at its step; a run resumed inside the tail records the same; and no zoo spec (the input of
    its hash) depends on the setting."""
    train_tokens, val_tokens, vocab = text
    config, tc = zoo.configs("rope", profile="smoke")  # lesson regime: no tails by default
    config = dataclasses.replace(config, vocab_size=vocab)
    tc, plain = (dataclasses.replace(tc, tail_evals=n) for n in (train.TAIL_EVALS, 0))
    assert tc.to_dict() == plain.to_dict() and "tail_evals" not in tc.to_dict()
    without = train.train(config, plain, train_tokens, val_tokens, progress=False)
    tailed = train.train(config, tc, train_tokens, val_tokens, progress=False)
    assert_trees_equal(tailed.params, without.params)
    assert_trees_equal(tailed.opt_state, without.opt_state)
    assert tailed.history["train"] == [  # same losses; only the measured speed may differ
        row | {"tokens_per_s": mine["tokens_per_s"]}
        for row, mine in zip(without.history["train"], tailed.history["train"], strict=True)
    ]
    assert tailed.history["val"] == without.history["val"] and "tail" not in without.history
    steps = [row["step"] for row in tailed.history["tail"]]
    assert steps == list(train.tail_eval_steps(tc)) and len(steps) == train.TAIL_EVALS
    final = evaluation.evaluate(
        tailed.params, config, val_tokens, seq_len=tc.seq_len, batch_size=tc.batch_size,
        n_batches=tc.eval_batches,
    )  # fmt: skip
    assert tailed.history["tail"][-1]["loss"] == final["loss"] == tailed.history["val"][-1]["loss"]
    losses = [row["loss"] for row in tailed.history["tail"]]
    assert len(set(losses)) == len(losses)  # the weights moved between tail evaluations
    middle = steps[2]
    train.train(config, tc, train_tokens, val_tokens, checkpoint_dir=tmp_path,
                stop_after=middle, progress=False)  # fmt: skip
    resumed = train.train(config, tc, train_tokens, val_tokens, checkpoint_dir=tmp_path,
                          progress=False)  # fmt: skip
    assert resumed.history["tail"] == tailed.history["tail"]
    assert checkpoints.read_metadata(tmp_path)["history"]["tail"] == tailed.history["tail"]
    for profile in zoo.PROFILES:
        for name, seed, _, regime in zoo.default_jobs(profile):
            _, spec_tc = zoo.configs(name, seed=seed, profile=profile, regime=regime)
            assert spec_tc.to_dict() == dataclasses.replace(spec_tc, tail_evals=0).to_dict()


def test_tail_average_is_the_mean_of_the_last_steps_params_and_survives_resume(tmp_path):
    """The kept average equals the mean of the snapshots after each averaged step; the weights
    trained are those of the same run without averaging; resuming mid-tail gives the same mean;
    the average is evaluated at the end, and a run that keeps none says so."""
    tc = schedule(steps=8, average_share=0.375, snapshots=(6, 7, 8), eval_every=4)
    assert train.average_steps(tc) == 3
    run = train.train(tiny(), tc, TRAIN, VAL, checkpoint_dir=tmp_path / "a", progress=False)
    kept = [checkpoints.load_snapshot(tmp_path / "a", s)[0] for s in (6, 7, 8)]
    mean = jax.tree.map(lambda *xs: np.mean(np.stack(xs), axis=0), *kept)
    averaged = jax.tree.leaves(train.averaged_params(run.opt_state))
    for x, y in zip(averaged, jax.tree.leaves(mean), strict=True):
        np.testing.assert_allclose(np.asarray(x), y, rtol=1e-5, atol=1e-6)
    plain = train.train(tiny(), dataclasses.replace(tc, average_share=0.0), TRAIN, progress=False)
    assert_trees_equal(run.params, plain.params)
    with pytest.raises(ValueError, match="keeps no tail average"):
        train.averaged_params(plain.opt_state)
    assert run.history["val_average"]["steps_averaged"] == 3
    assert run.history["val_average"]["loss"] != run.history["val"][-1]["loss"]
    train.train(tiny(), tc, TRAIN, VAL, checkpoint_dir=tmp_path / "b", progress=False, stop_after=7)
    resumed = train.train(tiny(), tc, TRAIN, VAL, checkpoint_dir=tmp_path / "b", progress=False)
    assert_trees_equal(
        train.averaged_params(resumed.opt_state), train.averaged_params(run.opt_state)
    )
    assert tc.to_dict()["average_share"] == 0.375
    assert "average_share" not in dataclasses.replace(tc, average_share=0.0).to_dict()
    with pytest.raises(ValueError, match="average_share"):
        schedule(average_share=1.5)
