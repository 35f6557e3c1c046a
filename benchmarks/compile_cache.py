"""Seconds JAX's persistent compilation cache saves: compile the zoo's programs cold, then warm.

Each measurement is a fresh process that builds a ``cpu``-profile zoo model's training step and
evaluation function and runs each once on a batch split over the devices as training splits it
(what a zoo job or chapter does before its first real step), timing that. Runs: cache off, cache
on with an empty folder (cold: compiles and writes), cache on again (warm: loads). The empty
folder shares this machine's built attention kernel and its measured choice, so neither is
rebuilt or re-timed: only compilation is measured.

    .venv/bin/python benchmarks/compile_cache.py [--profile cpu] [--names rope alibi]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ropebook import attention

CHILD = """
import json, sys, time
start = time.perf_counter()
import jax, numpy as np
from ropebook import evaluation, model, runtime, train, zoo
seconds = {}
for name in sys.argv[2:]:
    t = time.perf_counter()
    cfg, tc = zoo.configs(name, profile=sys.argv[1])
    params = model.init_params(jax.random.key(0), cfg)
    state = train.make_optimizer(tc).init(params)
    sharded, replicated = runtime.data_parallel(tc.batch_size)  # as training splits each batch
    batch = jax.device_put(np.zeros((tc.batch_size, cfg.context + 1), np.int32), sharded)
    params, state = jax.device_put((params, state), replicated)
    jax.block_until_ready(evaluation._token_losses(params, batch, config=cfg))
    jax.block_until_ready(train.train_step(cfg, tc)(params, state, batch))  # donates params
    seconds[name] = time.perf_counter() - t
print(json.dumps(seconds))
"""


def measure(profile: str, names: list[str], cache: str | None) -> dict[str, float]:
    env = {**os.environ, "ROPEBOOK_JAX_CACHE": "1" if cache else "0"}
    if cache:
        env["ROPEBOOK_CACHE"] = cache
        kernels = Path(cache) / "kernels"
        if not kernels.exists():
            kernels.symlink_to(attention.library_path().parent)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, profile, *names], env=env, check=True,
        capture_output=True, text=True,
    ).stdout  # fmt: skip
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--names", nargs="+", default=["rope", "alibi", "fire"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        runs = {
            "cache off": measure(args.profile, args.names, None),
            "cold cache": measure(args.profile, args.names, cache),
            "warm cache": measure(args.profile, args.names, cache),
        }
    print(f"compile + first step and evaluation, {args.profile} profile (seconds):")
    print("model".ljust(12) + "".join(k.rjust(12) for k in runs))
    for name in args.names:
        print(name.ljust(12) + "".join(f"{runs[k][name]:12.2f}" for k in runs))
    off, warm = sum(runs["cache off"].values()), sum(runs["warm cache"].values())
    print(f"saved by a warm cache: {off - warm:.1f} s of {off:.1f} s over {len(args.names)} models "
          f"({(off - warm) / len(args.names):.1f} s per model)")  # fmt: skip


if __name__ == "__main__":
    main()
