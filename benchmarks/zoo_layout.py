"""The zoo's device layout: one process over all cores (the batch split over one XLA device per
core, gradients all-reduced every step) against one worker process per core, each pinned to its
core with one device, training its share of the models (``python -m ropebook zoo --shard I/N``).

Per worker there is no all-reduce to wait at, and one worker trains while another compiles; but
each model is then summed over its batch in another order, so its weights leave today's at
float32 rounding and drift apart over training. The script trains the same models both ways,
each in a fresh temporary ``ROPEBOOK_CACHE`` (compilation included), and prints the wall time,
each model's training seconds and validation perplexity under both layouts, and their ratio.

    .venv/bin/python benchmarks/zoo_layout.py [--names nope rope rope-500k p-rope-0.25
        p-rope-0.5 p-rope-0.75] [--regime lesson] [--domain shakespeare] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROW = re.compile(r"^(\S+)\s+(\d+)\s+\S+\s+\S+\s+(trained|cached)\s+([\d.]+)\s+[\d,]+\s+([\d.]+)")


def zoo_command(args, shard: str) -> list[str]:
    return [
        sys.executable, "-m", "ropebook", "zoo", "--profile", "cpu", "--names", *args.names,
        "--seeds", "0", "--regimes", args.regime, "--domains", args.domain, "--shard", shard,
    ]  # fmt: skip


def rows(output: str) -> dict[str, tuple[float, float]]:
    """``{name: (validation perplexity, training seconds)}`` from the zoo's closing table."""
    found = (ROW.match(line) for line in output.splitlines())
    return {m[1]: (float(m[4]), float(m[5])) for m in found if m}


def run(args, workers: int) -> tuple[float, dict[str, tuple[float, float]]]:
    with tempfile.TemporaryDirectory(prefix="zoo-layout-") as cache:
        env = os.environ | {"ROPEBOOK_CACHE": cache}
        start = time.perf_counter()
        if workers == 1:
            procs = [subprocess.Popen(zoo_command(args, "0/1"), env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True)]  # fmt: skip
        else:
            procs = [
                subprocess.Popen(
                    zoo_command(args, f"{i}/{workers}"),
                    env=env,
                    text=True,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    preexec_fn=lambda core=i: os.sched_setaffinity(0, {core}),
                )  # fmt: skip
                for i in range(workers)
            ]
        outputs = [p.communicate()[0] for p in procs]
        wall = time.perf_counter() - start
    if any(p.returncode for p in procs):
        raise SystemExit(f"a zoo process failed:\n{outputs}")
    return wall, {k: v for out in outputs for k, v in rows(out).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--names", nargs="+",
        default=["nope", "rope", "rope-500k", "p-rope-0.25", "p-rope-0.5", "p-rope-0.75"],
    )  # fmt: skip
    parser.add_argument("--regime", default="lesson")
    parser.add_argument(
        "--domain", default="shakespeare", help="recall or kback with --regime task"
    )
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()
    if args.workers > len(os.sched_getaffinity(0)):
        parser.error(f"--workers {args.workers}: this process may use only "
                     f"{len(os.sched_getaffinity(0))} cores")  # fmt: skip
    one_wall, one = run(args, 1)
    many_wall, many = run(args, args.workers)
    print(f"{'model':14s} {'ppl, 1 process':>15s} {f'ppl, {args.workers} workers':>16s} "
          f"{'diff':>7s} {'s, 1 process':>13s} {f's, {args.workers} workers':>13s}")  # fmt: skip
    for name in args.names:
        (p1, s1), (p2, s2) = one[name], many[name]
        print(f"{name:14s} {p1:15.2f} {p2:16.2f} {p2 / p1 - 1:+7.2%} {s1:13.1f} {s2:13.1f}")
    train_one = sum(s for _, s in one.values())
    train_many = sum(s for _, s in many.values()) / args.workers
    print(f"wall: 1 process {one_wall:.0f} s, {args.workers} workers {many_wall:.0f} s "
          f"({one_wall / many_wall:.2f}x); training seconds per model: "
          f"{train_one / len(one):.1f} against {train_many / len(many):.1f} per worker-share "
          f"({train_one / train_many:.2f}x)")  # fmt: skip
    print(f"(cache folders were temporary; {Path(sys.executable).name} {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
