"""The zoo on a real Slurm cluster: one node brought up on this machine (``cluster/slurm up``,
Debian's Slurm from ``make slurm``), jobs submitted with the script the README tells users to
submit (``cluster/submit`` → ``cluster/zoo.sbatch``). An array of more tasks than cores trains
every smoke model of the lesson and flagship regimes on Shakespeare exactly once into a shared
cache (the smoke book's test trains the whole zoo), after which a chapter trains nothing; a task
cancelled mid-training is resumed by the next submission and ends bit-identical to an
uninterrupted run; a corrupt cached file fails its task, and the array, with the book's integrity
error. The cluster is torn down at the end whatever happened."""

from __future__ import annotations

import collections
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

from ropebook import CACHE_DIR, REPO_ROOT, checkpoints, data, zoo

pytestmark = pytest.mark.slow

CLUSTER = REPO_ROOT / "cluster"
# seconds for one array: a guard (the whole file took 4.3 minutes on 2 cores shared with other
# work, load average ~4.5, compilation cache warm; 10 minutes at load ~7 with it cold)
TIMEOUT = 1800
# The cancelled run: the smoke rope model, long enough (checkpoints every RESUME_STEPS / 4) that
# the test sees its first checkpoint and cancels it well before the end.
RESUME_STEPS = 600
RESUME_ARGS = ["--names", "rope", "--seeds", "0", "--steps", str(RESUME_STEPS)]
# The array's share of the smoke zoo: what the decay chapter run after it loads.
REGIMES = ("lesson", "flagship")
ARRAY_ARGS = ["--regimes", *REGIMES, "--domains", "shakespeare"]


def array_jobs() -> list[zoo.Job]:
    """The smoke zoo's jobs that ``ARRAY_ARGS`` select, in the zoo's order."""
    return [j for j in zoo.default_jobs("smoke") if j[2] == "shakespeare" and j[3] in REGIMES]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A one-node cluster: the environment that talks to it (``SLURM_CONF``); torn down after."""
    if shutil.which("slurmctld") is None:
        pytest.fail("Slurm is not installed: run `make slurm` (make test does)")
    if os.geteuid() != 0:
        pytest.skip("starting munged and slurmd needs root")
    home = tmp_path_factory.mktemp("slurm")
    # XLA_FLAGS: `import ropebook` put this process's device count there, which would override
    # the job script's one device per CPU; SLURM_JOB_ID: one we might run inside
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "SLURM_JOB_ID")}
    env |= {"SLURMCTLD_PORT": str(_free_port()), "SLURMD_PORT": str(_free_port())}
    up = subprocess.run([CLUSTER / "slurm", "up", home], env=env, capture_output=True, text=True)
    try:
        assert up.returncode == 0, up.stderr + "".join(
            p.read_text()[-2000:] for p in (home / "log").glob("*.log")
        )
        yield env | {"SLURM_CONF": str(home / "slurm.conf")}
    finally:
        conf = {"SLURM_CONF": str(home / "slurm.conf")}
        subprocess.run(["scancel", "--user", str(os.getuid())], env=env | conf)
        for _ in range(100):  # let cancelled tasks end before their daemons do
            queue = subprocess.run(["squeue", "-h"], env=env | conf, capture_output=True)
            if queue.returncode or not queue.stdout.strip():
                break
            time.sleep(0.2)
        subprocess.run([CLUSTER / "slurm", "down", home], env=env)


def new_cache(root: Path) -> Path:
    """An empty ``ROPEBOOK_CACHE`` sharing only the compiled kernel and JAX's compilation cache
    with this process's (both keyed by everything that changes them), so no task compiles what
    the test run already compiled."""
    root.mkdir(parents=True)
    for folder in ("kernels", "jax"):
        (Path(CACHE_DIR) / folder).mkdir(parents=True, exist_ok=True)
        (root / folder).symlink_to(Path(CACHE_DIR).resolve() / folder)
    return root


def submit(env, cache: Path, logs: Path, *args: str, wait: bool = True) -> tuple[int, str, str]:
    """``cluster/submit ...`` with this cache and log folder: (exit status, job id, output)."""
    flags = ["--logs", str(logs)] + (["--wait"] if wait else [])
    run = subprocess.run(
        [CLUSTER / "submit", *flags, *args], env=env | {"ROPEBOOK_CACHE": str(cache)},
        capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    job = run.stdout.split()[0] if run.stdout.strip() else ""
    return run.returncode, job, run.stdout + run.stderr


def wait(env, job: str, logs: Path) -> tuple[int, str]:
    run = subprocess.run(
        [CLUSTER / "wait", job, str(logs)], env=env, capture_output=True, text=True,
        timeout=TIMEOUT,
    )  # fmt: skip
    return run.returncode, run.stdout + run.stderr


def task_logs(logs: Path, job: str) -> dict[int, str]:
    return {int(p.stem.split("_")[-1]): p.read_text() for p in logs.glob(f"zoo-{job}_*.log")}


def table_rows(log: str) -> list[tuple[tuple[str, int, str, str], str]]:
    """``((name, seed, domain, regime), "trained" | "cached")`` from the table a zoo task prints."""
    rows = []
    for line in log.splitlines():
        f = line.split()
        if len(f) > 4 and f[1].isdigit() and f[4] in ("trained", "cached"):
            rows.append(((f[0], int(f[1]), f[2], f[3]), f[4]))
    return rows


def zoo_folder(cache: Path, job: zoo.Job, **overrides) -> Path:
    name, seed, domain, regime = job
    hash_ = zoo.spec_hash(name, seed=seed, profile="smoke", domain=domain, regime=regime,
                          **overrides)  # fmt: skip
    return cache / "zoo" / hash_


def status(env, cache: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ropebook", "zoo", "--status", "--profile", "smoke", *args],
        env=env | {"ROPEBOOK_CACHE": str(cache)}, capture_output=True, text=True,
    )  # fmt: skip


@pytest.fixture(scope="module")
def smoke_array(slurm, tmp_path_factory):
    """The smoke zoo's lesson and flagship models on Shakespeare, trained by an array of more
    tasks than this machine has cores, one core each: ``(cache, logs, job id, tasks,
    cluster/submit's exit status and output)``."""
    data.prepare()  # before the tasks, which would otherwise all build the data at once
    root = tmp_path_factory.mktemp("array")
    cache, logs, tasks = new_cache(root / "cache"), root / "logs", (os.cpu_count() or 1) + 2
    rc, job, out = submit(slurm, cache, logs, "--profile", "smoke", "--tasks", str(tasks),
                          "--cpus", "1", "--", *ARRAY_ARGS)  # fmt: skip
    return cache, logs, job, tasks, rc, out


def test_array_trains_every_model_it_was_given_exactly_once(smoke_array, slurm):
    cache, logs, job, tasks, rc, out = smoke_array
    logged = task_logs(logs, job)
    assert rc == 0, out + "\n".join(log[-3000:] for log in logged.values())
    assert sorted(logged) == list(range(tasks))
    jobs = array_jobs()
    assert {n for n, _, _, r in jobs if r == "lesson"} == set(zoo.SPECS) and len(jobs) > tasks
    trained = [key for log in logged.values() for key, how in table_rows(log) if how == "trained"]
    assert collections.Counter(trained) == collections.Counter(jobs)  # each once, none missed
    for i, key in enumerate(jobs):  # by the task whose shard holds it, from step 0 to its end
        meta = checkpoints.read_metadata(zoo_folder(cache, key))
        (record,) = meta["provenance"]
        assert meta["complete"] and record["steps"] == [0, meta["step"]], key
        assert record["slurm_job"] == f"{job}_{i % tasks}" and record["devices"] == 1, key
    done = status(slurm, cache, *ARRAY_ARGS)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith(f"{len(jobs)} models in {cache / 'zoo'}: {len(jobs)} done")


def test_a_chapter_after_the_array_loads_every_model_without_training(smoke_array, slurm, tmp_path):
    cache, _, job, *_ = smoke_array

    def files() -> dict[Path, int]:  # lock files aside: every load opens its model's lock
        return {p: p.stat().st_mtime_ns for p in (cache / "zoo").rglob("*") if p.name != ".lock"}

    before = files()
    run = subprocess.run(
        [sys.executable, "-m", "ropebook", "run", "decay", "--profile", "smoke"],
        env=slurm | {"ROPEBOOK_CACHE": str(cache), "ROPEBOOK_EXECUTED": str(tmp_path)},
        capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert files() == before  # nothing written: no model trained, resumed or re-saved
    notebook = json.loads((tmp_path / "decay.ipynb").read_text())
    models = notebook["metadata"]["ropebook"]["models"]
    assert models and all(Path(m["folder"]).parent == cache / "zoo" for m in models)
    assert all(m["provenance"][0]["slurm_job"].startswith(f"{job}_") for m in models)
    shown = json.dumps(notebook["cells"][-1]["outputs"])  # the provenance cell, with the table
    assert all(f"`{Path(m['folder']).name}`" in shown for m in models)


def test_cancelled_task_resumes_from_its_checkpoint_bit_identically(slurm, tmp_path):
    data.prepare()
    env = slurm | {"ROPEBOOK_ATTENTION": "fused"}  # the same path in both runs, not a timing
    spec = ("--profile", "smoke", "--tasks", "1", "--cpus", "1", "--", *RESUME_ARGS)
    cache, reference = new_cache(tmp_path / "cache"), new_cache(tmp_path / "reference")
    rc, cancelled, out = submit(env, cache, tmp_path / "logs", *spec, wait=False)
    assert rc == 0, out
    rc, uninterrupted, out = submit(env, reference, tmp_path / "logs", *spec, wait=False)
    assert rc == 0, out
    folder = zoo_folder(cache, ("rope", 0, "shakespeare", "lesson"), steps=RESUME_STEPS)
    deadline = time.monotonic() + TIMEOUT
    while not (folder / checkpoints.CHECKPOINT_JSON).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    subprocess.run(["scancel", cancelled], env=env, check=True)
    rc, report = wait(env, cancelled, tmp_path / "logs")
    assert rc == 1 and "task 0: CANCELLED" in report, report
    meta = checkpoints.read_metadata(folder)
    assert not meta["complete"], "the run ended before it was cancelled: raise RESUME_STEPS"
    interrupted_at = meta["step"]
    assert 0 < interrupted_at < RESUME_STEPS
    state = status(env, cache, *RESUME_ARGS)
    assert state.returncode == 1 and f"interrupted  {interrupted_at}/{RESUME_STEPS}" in state.stdout

    rc, resumed, out = submit(env, cache, tmp_path / "logs", *spec)
    assert rc == 0, out + "".join(task_logs(tmp_path / "logs", resumed).values())
    assert table_rows(task_logs(tmp_path / "logs", resumed)[0])[0][1] == "trained"
    rc, report = wait(env, uninterrupted, tmp_path / "logs")
    assert rc == 0, report

    meta = checkpoints.read_metadata(folder)
    first, second = meta["provenance"]
    assert first["steps"] == [0, interrupted_at] and first["slurm_job"] == f"{cancelled}_0"
    assert second["steps"] == [interrupted_at, RESUME_STEPS]
    assert second["slurm_job"] == f"{resumed}_0"
    other_folder = reference / "zoo" / folder.name
    other = checkpoints.read_metadata(other_folder)
    (whole,) = other["provenance"]
    assert whole["steps"] == [0, RESUME_STEPS]
    assert {(r["devices"], r["attention"]) for r in (first, second, whole)} == {(1, "fused")}
    ours, theirs = (
        load_file(str(f / m["file"])) for f, m in ((folder, meta), (other_folder, other))
    )
    assert ours.keys() == theirs.keys()
    for name in ours:  # params and optimizer state, bit for bit
        np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)
    assert meta["history"]["val"] == other["history"]["val"]
    losses = [[(r["step"], r["loss"]) for r in m["history"]["train"]] for m in (meta, other)]
    assert losses[0] == losses[1]


def test_corrupt_cached_file_fails_its_task_and_the_array(smoke_array, slurm, tmp_path):
    source, *_ = smoke_array
    cache = new_cache(tmp_path / "cache")
    names = ("rope", "nope")  # task 0 loads rope, task 1 nope
    for name in names:
        folder = zoo_folder(source, (name, 0, "shakespeare", "lesson"))
        shutil.copytree(folder, cache / "zoo" / folder.name, ignore=shutil.ignore_patterns(".lock"))
    broken = cache / "zoo" / zoo_folder(source, ("nope", 0, "shakespeare", "lesson")).name
    tensors = broken / checkpoints.read_metadata(broken)["file"]
    tensors.write_bytes(tensors.read_bytes()[:-8] + b"garbage!")
    rc, job, out = submit(slurm, cache, tmp_path / "logs", "--profile", "smoke", "--tasks", "2",
                          "--cpus", "1", "--", "--names", *names, "--seeds", "0")  # fmt: skip
    logs = task_logs(tmp_path / "logs", job)
    assert rc == 1, out
    assert f"task 1: FAILED, exit code 1, log {tmp_path / 'logs'}/zoo-{job}_1.log" in out
    assert "task 0:" not in out and "2 tasks, 1 completed, 1 not" in out
    assert f"ropebook.io.IntegrityError: {tensors}: sha256 " in logs[1]
    assert "does not match the recorded" in logs[1] and "trained" not in logs[1]
    assert table_rows(logs[0]) == [(("rope", 0, "shakespeare", "lesson"), "cached")]
