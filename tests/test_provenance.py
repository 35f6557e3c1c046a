"""Provenance: what can move a model's numbers at float32 rounding without changing its spec hash
(XLA device count, attention path, JAX version, host) is recorded with the model, and a model
trained any of those ways serves any other machine: the same smoke spec trained on 1 and 2
devices, with the fused kernel and with XLA's attention, agrees to a stated tolerance."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from ropebook import CACHE_DIR, checkpoints, pipeline, train, zoo

# The four ways below end within these of each other after the smoke profile's 60 steps of
# AdamW at lr 3e-3 (measured 2026-11-25, JAX 0.10.2: validation loss within 7.7e-8 relative,
# every weight within 1.7e-6 of its tensor's largest magnitude); ~10x the measurement, as
# rounding differences grow along training and another CPU rounds differently.
VAL_LOSS_RTOL = 1e-6
PARAM_ATOL = 2e-5  # relative to each tensor's largest absolute value

TRAIN_ONE = """
import json
from ropebook import train, zoo
m = zoo.load("rope", profile="smoke", progress=False)
print(json.dumps({"path": str(m.path), "spec_hash": m.spec_hash}))
"""


def shared_cache(root: Path) -> dict[str, str]:
    """A fresh ``ROPEBOOK_CACHE`` for a subprocess that shares the compiled kernel and JAX's
    compilation cache with this one (both are keyed by everything that changes them)."""
    root.mkdir(parents=True, exist_ok=True)
    for folder in ("kernels", "jax"):
        (Path(CACHE_DIR) / folder).mkdir(parents=True, exist_ok=True)
        (root / folder).symlink_to(Path(CACHE_DIR).resolve() / folder)
    return {"ROPEBOOK_CACHE": str(root)}


@pytest.fixture(scope="module")
def four_ways(tmp_path_factory):
    """The smoke ``rope`` model trained in fresh processes on 1 and 2 XLA devices, with the fused
    kernel and with XLA's attention: ``{(devices, attention): (spec hash, metadata, params)}``."""
    ways = list(itertools.product((1, 2), ("fused", "xla")))
    processes = {}
    for devices, attention in ways:
        env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
        env |= shared_cache(tmp_path_factory.mktemp(f"cache-{devices}-{attention}"))
        env |= {"ROPEBOOK_CPU_DEVICES": str(devices), "ROPEBOOK_ATTENTION": attention}
        processes[devices, attention] = subprocess.Popen(
            [sys.executable, "-c", TRAIN_ONE], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
    results = {}
    for way, process in processes.items():
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err[-3000:]
        done = json.loads(out.strip().splitlines()[-1])
        params, _, meta = checkpoints.load_checkpoint(done["path"])
        results[way] = (done["spec_hash"], meta, params)
    return results


def test_metadata_records_devices_attention_jax_and_host(four_ways):
    for (devices, attention), (_, meta, _) in four_ways.items():
        (record,) = meta["provenance"]  # trained in one call, from step 0 to the end
        assert record["steps"] == [0, meta["train"]["steps"]]
        assert (record["devices"], record["attention"]) == (devices, attention)
        assert record["jax"] == jax.__version__ and record["platform"] == "cpu"
        assert record["host"] == socket.gethostname()
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", record["started"])
        assert ("slurm_job" in record) == ("SLURM_JOB_ID" in os.environ)


def test_same_spec_agrees_across_devices_and_attention(four_ways):
    (hash_,) = {spec_hash for spec_hash, _, _ in four_ways.values()}  # none of it is in the spec
    assert hash_ == zoo.spec_hash("rope", profile="smoke")
    (_, reference, ref_params), *others = four_ways.values()
    ref_loss = reference["history"]["val"][-1]["loss"]
    for _, meta, params in others:
        np.testing.assert_allclose(meta["history"]["val"][-1]["loss"], ref_loss, rtol=VAL_LOSS_RTOL)
        for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(ref_params), strict=True):
            scale = float(np.max(np.abs(b)))
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=PARAM_ATOL * scale)
    # and they are not bit-identical: otherwise recording how a model was trained would be moot
    assert not all(
        np.array_equal(a, b)
        for _, _, params in others
        for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(ref_params), strict=True)
    )


def test_biased_encodings_record_xla_attention_even_when_fused_is_asked(monkeypatch):
    monkeypatch.setenv("ROPEBOOK_ATTENTION", "fused")
    for name, path in (("alibi", "xla"), ("rope", "fused")):
        config, tc = zoo.configs(name, profile="smoke")
        assert train.provenance(config, tc)["attention"] == path
    bf16 = dataclasses.replace(config, dtype="bfloat16")
    assert train.provenance(bf16, tc)["attention"] == "xla"
    monkeypatch.setenv("ROPEBOOK_ATTENTION", "xla")
    assert train.provenance(config, tc)["attention"] == "xla"


def test_chapters_show_each_models_spec_hash_beside_its_provenance():
    segment = {"devices": 2, "platform": "cpu", "attention": "fused", "jax": "0.1", "host": "h"}
    meta = {"train": {"seed": 1}, "extra": {"spec": {"name": "rope", "domain": "python"}}}
    resumed = [
        segment | {"steps": [0, 30], "slurm_job": "7_3"},
        segment | {"steps": [30, 60], "devices": 1, "attention": "xla"},
    ]
    tune = {"train": {"seed": 0}, "extra": {"finetune": {"parent": "aaaa", "method": "yarn"}}}
    loaded = {
        Path("/c/zoo/aaaa"): meta | {"provenance": [segment | {"steps": [0, 60]}]},
        Path("/c/zoo/bbbb"): meta | {"provenance": resumed},
        Path("/c/zoo/cccc"): meta,  # trained before provenance was recorded
        Path("/c/finetune/dddd"): tune,
    }
    origin = {"archive": "zoo-cpu-0123456789abcdef.tar", "published": "P", "pulled": "Q"}
    table = pipeline.models_table(loaded, {Path("/c/zoo/bbbb"): origin}).splitlines()
    assert table[:2] == ["| model | spec hash | trained with | source |", "|---|---|---|---|"]
    rows = {row.split(" | ")[1].strip("`"): row for row in table[2:]}
    assert rows["aaaa"] == (
        "| rope, seed 1, python | `aaaa` | steps 0–60: 2 cpu devices, fused attention, "
        "JAX 0.1 on h | trained here |"
    )
    assert (
        "steps 0–30: 2 cpu devices, fused attention, JAX 0.1 on h, Slurm job 7_3; " in rows["bbbb"]
    )
    assert rows["bbbb"].endswith(
        "steps 30–60: 1 cpu device, xla attention, JAX 0.1 on h | downloaded: "
        "zoo-cpu-0123456789abcdef.tar, published P, pulled Q |"
    )
    assert "`cccc` | not recorded" in rows["cccc"]
    assert rows["dddd"].startswith("| fine-tune of `aaaa`, yarn, seed 0 | `dddd` | not recorded")
    line = pipeline.models_line([origin, None, origin, None, None])
    assert line == "2 downloaded (zoo-cpu-0123456789abcdef.tar, published P), 3 trained here"
