"""Throughput settings change speed, never numbers: allocator, compilation cache, zoo shards."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import jax
import jax.numpy as jnp
import pytest

from ropebook import REPO_ROOT, runtime, zoo, zoo_command


def test_allocator_keeps_large_buffers_so_steps_stop_page_faulting():
    assert runtime.tune_allocator()  # glibc here; imported ropebook already applied it
    exp = jax.jit(jnp.exp)
    logits = jnp.ones((2048, 4096))  # 32 MiB: glibc would mmap it afresh on every call
    faults = []
    for _ in range(21):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        exp(logits).block_until_ready()
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    median = sorted(faults)[10]  # the heap still grows now and then; a typical call reuses it
    assert median < 500, f"{median} page faults per call (an untuned glibc makes ~8,200)"


def test_compilation_cache_writes_programs_to_its_folder(tmp_path):
    script = (
        "import jax, jax.numpy as jnp\n"
        "from ropebook import runtime\n"
        f"runtime.enable_compilation_cache({str(tmp_path)!r})\n"
        "jax.config.update('jax_persistent_cache_min_compile_time_secs', 0)\n"
        "print(jax.jit(lambda x: jnp.sin(x) @ x.T)(jnp.ones((64, 64))).sum())\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True)
    assert any("cache" in p.name for p in tmp_path.iterdir())


def test_shards_are_disjoint_and_cover_every_job():
    jobs = zoo.default_jobs("cpu")
    for count in (1, 2, 3, 7):
        shares = [zoo_command.shard_jobs(jobs, i, count) for i in range(count)]
        assert sorted(j for s in shares for j in s) == sorted(jobs)
        assert sum(len(s) for s in shares) == len(jobs)
    assert zoo_command.parse_shard("1/4") == (1, 4)
    for bad in ("4/4", "-1/2", "a/b", "1"):
        with pytest.raises(ValueError, match="I/N"):
            zoo_command.parse_shard(bad)


def _zoo(cache, *args: str) -> subprocess.Popen:
    env = {**os.environ, "ROPEBOOK_CACHE": str(cache)}
    command = [sys.executable, "-m", "ropebook", "zoo", "--profile", "smoke", *args]
    return subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, text=True)


def _rows(output: str) -> dict[tuple[str, str], str]:
    """``(name, seed) -> trained | cached`` from the zoo's closing table."""
    rows = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[4] in ("trained", "cached"):
            rows[(parts[0], parts[1])] = parts[4]
    return rows


@pytest.mark.slow
def test_two_shard_processes_train_each_model_once_with_unchanged_results(tmp_path, monkeypatch):
    names = ["--names", "rope", "alibi", "--seeds", "0", "1"]
    workers = [_zoo(tmp_path, *names, "--shard", f"{i}/2") for i in range(2)]
    outputs = [w.communicate(timeout=600)[0] for w in workers]
    assert all(w.returncode == 0 for w in workers), outputs
    shares = [_rows(o) for o in outputs]
    assert all(shares) and not shares[0].keys() & shares[1].keys()
    assert all(v == "trained" for s in shares for v in s.values())
    assert shares[0].keys() | shares[1].keys() == {(n, s) for n in ("rope", "alibi") for s in "01"}
    again = _zoo(tmp_path, *names)
    assert set(_rows(again.communicate(timeout=600)[0]).values()) == {"cached"}

    # Same seed and data as before the allocator and cache existed (zoo trained at d3e5ff8):
    # the validation loss is unchanged to float32 rounding.
    monkeypatch.setattr(zoo, "CACHE_DIR", tmp_path)
    before = {"rope": 6.175575256347656, "alibi": 6.170453071594238}
    for name, loss in before.items():
        model = zoo.load(name, profile="smoke", progress=False)
        assert not model.trained_now
        assert model.history["val"][-1]["loss"] == pytest.approx(loss, rel=1e-5)


def test_split_cpu_devices_sets_the_flag_once(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.setenv("ROPEBOOK_CPU_DEVICES", "3")
    assert runtime.split_cpu_devices() == 3
    assert os.environ["XLA_FLAGS"] == "--xla_force_host_platform_device_count=3"
    assert runtime.split_cpu_devices(5) == 3  # a count already in XLA_FLAGS is kept
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    monkeypatch.delenv("ROPEBOOK_CPU_DEVICES")
    assert runtime.split_cpu_devices() == len(os.sched_getaffinity(0))
    assert os.environ["XLA_FLAGS"].startswith("--xla_cpu_enable_fast_math=false --xla_force")
    for bad in ("0", "two", "-2"):
        monkeypatch.setenv("ROPEBOOK_CPU_DEVICES", bad)
        with pytest.raises(ValueError, match=f"ROPEBOOK_CPU_DEVICES must be .* got '{bad}'"):
            runtime.split_cpu_devices()


def test_deterministic_gpu_adds_the_flag_unless_told_otherwise(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    monkeypatch.delenv("ROPEBOOK_GPU_DETERMINISTIC", raising=False)
    assert runtime.deterministic_gpu()
    assert os.environ["XLA_FLAGS"].endswith(" --xla_gpu_deterministic_ops=true")
    assert runtime.deterministic_gpu()  # added once
    assert os.environ["XLA_FLAGS"].count("deterministic") == 1
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_deterministic_ops=false")
    assert not runtime.deterministic_gpu()  # the user's own setting wins
    monkeypatch.setenv("XLA_FLAGS", "")
    monkeypatch.setenv("ROPEBOOK_GPU_DETERMINISTIC", "0")
    assert not runtime.deterministic_gpu() and os.environ["XLA_FLAGS"] == ""
