"""The zoo on one worker process per CPU core (``python -m ropebook zoo --workers N|auto``, by
:func:`ropebook.zoo.train_on_workers`).

One process over all cores splits every batch over one XLA device per core and all-reduces the
gradients each step; the devices drift apart within a step, so one waits for the other at the
all-reduce, and every model's compilation leaves all cores but one idle. Workers instead train
whole models, each pinned to one core with one device: no all-reduce, and one compiles while
another trains. They read one file of jobs and share it through the models' cache locks
(:func:`ropebook.zoo.train_if_free`): each takes, in order, the next model no other process
holds, so models of unequal length (a flagship run against a lesson one) balance themselves.

A model trained on one device sums its batch in another order than on two, so its weights leave
the two-device run's at float32 rounding, as ``train.provenance`` records (``devices``), and the
difference grows over training like any change of summation order. ``benchmarks/zoo_layout.py``
measures both the speed and that difference.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ropebook import runtime


def cores() -> list[int]:
    """The CPU cores this process may run on, in order."""
    return sorted(os.sched_getaffinity(0))


def count(text: str, flag: str = "--workers") -> int:
    """``--workers`` (or ``flag``): a positive integer, or ``auto``: one per core on a CPU backend
    with several cores, else 1 (a GPU trains one model at a time, the batch on its one device)."""
    if text == "auto":
        import jax

        return len(cores()) if jax.default_backend() == "cpu" else 1
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{flag} must be a positive integer or 'auto', got {text!r}")
    return int(text)


def environment(core: int) -> dict[str, str]:
    """A worker's environment: pinned to ``core`` (:func:`ropebook.runtime.pin_cores`) with one
    XLA CPU device, whatever device count this process asked for (``import ropebook`` wrote its
    own into ``XLA_FLAGS``, which a child would inherit)."""
    env = dict(os.environ, ROPEBOOK_CPU_CORES=str(core), ROPEBOOK_CPU_DEVICES="1")
    flags = [f for f in env.get("XLA_FLAGS", "").split() if not f.startswith(runtime.DEVICE_FLAG)]
    env["XLA_FLAGS"] = " ".join(flags)
    return env


def start(queue: Path, n: int, logs: Path | None = None) -> list[subprocess.Popen]:
    """``n`` processes of ``python -m ropebook zoo --queue <queue>`` (the jobs' file
    :func:`ropebook.zoo.train_on_workers` wrote), the i-th pinned to this process's i-th core
    (round robin if there are fewer cores than workers). Their output goes to this process's, or,
    with ``logs``, to ``logs/worker-<i>.log`` each (:func:`log_tail` reads one back)."""
    available = cores()
    command = [sys.executable, "-m", "ropebook", "zoo", "--queue", str(queue)]
    processes = []
    for i in range(n):
        env = environment(available[i % len(available)])
        if logs is None:
            processes.append(subprocess.Popen(command, env=env))
            continue
        with open(logs / f"worker-{i}.log", "w") as log:  # the child keeps its own copy
            processes.append(
                subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
            )
    return processes


def log_tail(logs: Path, i: int, lines: int = 20) -> str:
    """The last ``lines`` lines worker ``i`` wrote into ``logs`` (see :func:`start`)."""
    path = logs / f"worker-{i}.log"
    return "\n".join(path.read_text().splitlines()[-lines:]) if path.exists() else ""


def wait(
    processes: list[subprocess.Popen], poll: Callable[[], None], every: float = 5.0
) -> list[int]:
    """Call ``poll`` every ``every`` seconds until every worker has exited (once more after);
    their exit codes. On an interruption the workers are stopped before it propagates."""
    try:
        while any(p.poll() is None for p in processes):
            poll()
            time.sleep(every)
    except BaseException:
        for p in processes:
            p.terminate()
        raise
    poll()
    return [p.returncode for p in processes]
