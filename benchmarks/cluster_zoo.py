"""Wall time of the zoo on the one-node Slurm cluster (``cluster/slurm``), submitted as users do
(``cluster/submit``), against one process.

1. The whole ``smoke`` zoo as an array of ``--smoke-tasks`` tasks of one CPU each.
2. The first ``--models`` jobs of the ``cpu`` zoo (``zoo.default_jobs``: lesson models on
   Shakespeare, seed 0) trained by one process on every core (one XLA device per core, as
   ``make zoo`` does), then by an array of as many tasks as cores, one core and device each.

Every run starts from an empty cache (models and JAX's compilation cache: compiling is included),
sharing only the compiled attention kernel. Needs root (munged, slurmd) and ``make slurm``:

    .venv/bin/python benchmarks/cluster_zoo.py [--models 4] [--smoke-tasks 4]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ropebook import CACHE_DIR, REPO_ROOT, zoo

CLUSTER = REPO_ROOT / "cluster"


def fresh_cache(root: Path) -> dict[str, str]:
    root.mkdir(parents=True)
    (Path(CACHE_DIR) / "kernels").mkdir(parents=True, exist_ok=True)
    (root / "kernels").symlink_to(Path(CACHE_DIR).resolve() / "kernels")
    return {"ROPEBOOK_CACHE": str(root)}


def timed(command: list, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, cwd=REPO_ROOT)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=4, help="first jobs of the cpu zoo")
    parser.add_argument("--smoke-tasks", type=int, default=4)
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    jobs = zoo.default_jobs("cpu")[: args.models]
    names = [name for name, *_ in jobs]
    assert all(j[1:] == (0, "shakespeare", "lesson") for j in jobs), jobs
    subset = ["--names", *names, "--seeds", "0"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        up = subprocess.run([CLUSTER / "slurm", "up", tmp / "slurm"], check=True,
                            capture_output=True, text=True)  # fmt: skip
        # without XLA_FLAGS, where `import ropebook` put this process's device count: each
        # process then has one XLA device per core it may use (tasks: per CPU given)
        env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
        env["SLURM_CONF"] = up.stdout.split("=", 1)[1].strip()
        try:

            def array(profile: str, tasks: int, cache: str, *zoo_args: str) -> float:
                return timed(
                    [CLUSTER / "submit", "--profile", profile, "--tasks", str(tasks), "--cpus",
                     "1", "--logs", tmp / f"logs-{cache}", "--wait", "--", *zoo_args],
                    env | fresh_cache(tmp / cache),
                )  # fmt: skip

            smoke = array("smoke", args.smoke_tasks, "smoke")
            count = len(zoo.default_jobs("smoke"))
            print(f"smoke zoo ({count} models), array of {args.smoke_tasks} tasks on {cores} "
                  f"cores, 1 CPU each: {smoke:.0f} s")  # fmt: skip
            one = timed(
                [sys.executable, "-m", "ropebook", "zoo", "--profile", "cpu", *subset],
                env | fresh_cache(tmp / "one"),
            )
            split = array("cpu", cores, "split", *subset)
        finally:
            subprocess.run([CLUSTER / "slurm", "down", tmp / "slurm"], check=True)
    print(f"cpu zoo, first {len(jobs)} jobs ({', '.join(names)}; seed 0, lesson, Shakespeare):")
    print(f"  one process, {cores} XLA devices: {one:.0f} s")
    print(f"  array of {cores} tasks, 1 CPU and device each: {split:.0f} s")
    print(f"  one process / array: {one / split:.2f}")
    # other work on the machine slows every run: say how much there was
    print(
        "load average (1, 5, 15 min) at the end: " + ", ".join(f"{x:.1f}" for x in os.getloadavg())
    )


if __name__ == "__main__":
    main()
