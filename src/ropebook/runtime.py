"""Process-wide settings that make CPU training faster, changing no number beyond float32 rounding.

**Allocator.** XLA and PyTorch ask glibc's ``malloc`` for every activation buffer of every
step. glibc serves a request above 32 MiB (a ``[2048, 4096]`` float32 logits tensor, for
instance) by a fresh ``mmap``, and returns smaller freed memory from per-thread arenas to the
kernel, so the next step page-faults it all back in: ~52,000 page faults per step of the ``cpu``
zoo model, a fifth of its time (measured with ``getrusage``; ``benchmarks/train_throughput.py``).
:func:`tune_allocator` keeps freed memory in one heap instead (``mallopt``: no ``mmap``, no
trimming, one arena), after which a step page-faults zero times. The cost is that the process
keeps its peak heap until it exits. ``ROPEBOOK_TUNE_MALLOC=0`` turns it off.

**One XLA device per core.** XLA runs a CPU program's large matmuls on all cores, but the
many small ones of attention (a ``[128, 16] @ [16, 128]`` product per head and sequence) run
close to serially: on 2 cores a training step's attention gained 1.3× from the second core,
PyTorch's 2×. :func:`split_cpu_devices` makes XLA expose one CPU device per core, and
:mod:`ropebook.train` already shards each batch over the devices (data parallel, gradients
summed across them), so every core runs its own share of every op: the ``cpu`` zoo model's step
went from ~11,600 to ~14,500 tokens/s on 2 cores. Sums over the batch are then formed in
another order, so numbers change at float32 rounding (the same device count reproduces a run
bit for bit). ``ROPEBOOK_CPU_DEVICES=N`` picks the count (``1``: one device, as before).
:func:`data_parallel` is that split: training and evaluation place every batch by it.

**Compilation cache.** :func:`enable_compilation_cache` points JAX's persistent compilation
cache at ``CACHE_DIR/jax``, so a second ``make zoo`` or chapter run loads compiled programs from
disk instead of compiling them again (``benchmarks/compile_cache.py`` measures it). Until
2026-11-27 no program holding the fused attention kernel ever hit it (its custom partitioning
call put a per-process object id into the key); now the key leaves that id out.

The package's ``__init__`` imports this module first thing, so it imports nothing of the package
but :mod:`ropebook.paths` (no circle; ``tests/test_layers.py``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jax.sharding import NamedSharding

# mallopt parameter numbers from glibc's <malloc.h>
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_MAX, _M_ARENA_MAX = -1, -2, -4, -8
_TOP_PAD_BYTES = 256 << 20
_tuned: bool | None = None


def tune_allocator() -> bool:
    """Keep freed memory in the process (glibc only); ``True`` if the settings were applied."""
    global _tuned
    if _tuned is None:
        _tuned = False
        name = ctypes.util.find_library("c")
        if os.environ.get("ROPEBOOK_TUNE_MALLOC", "1") != "0" and name and "libc.so" in name:
            try:
                mallopt = ctypes.CDLL(name).mallopt
            except (OSError, AttributeError):  # not glibc (musl, macOS): leave malloc alone
                return False
            settings = (
                (_M_MMAP_MAX, 0), (_M_TRIM_THRESHOLD, 2**31 - 1),
                (_M_TOP_PAD, _TOP_PAD_BYTES), (_M_ARENA_MAX, 1),
            )  # fmt: skip
            _tuned = all(mallopt(param, value) == 1 for param, value in settings)
    return _tuned


DEVICE_FLAG = "--xla_force_host_platform_device_count"


def pin_cores() -> set[int] | None:
    """Restrict this process to the cores listed in ``ROPEBOOK_CPU_CORES`` (e.g. ``"1"`` or
    ``"0,2"``), as :mod:`ropebook.workers` asks of each worker (a child pins itself: a
    ``preexec_fn`` would run Python between fork and exec in a process with JAX's threads).
    Returns the cores, or ``None`` without the variable; a bad list is named in a ``ValueError``.
    """
    text = os.environ.get("ROPEBOOK_CPU_CORES", "").strip()
    if not text:
        return None
    try:
        chosen = {int(part) for part in text.split(",")}
        os.sched_setaffinity(0, chosen)
    except (ValueError, OSError) as error:
        raise ValueError(
            f"ROPEBOOK_CPU_CORES={text!r} is not a list of this machine's cores: {error}"
        ) from None
    return chosen


def split_cpu_devices(count: int | None = None) -> int:
    """Ask XLA for ``count`` CPU devices (default ``ROPEBOOK_CPU_DEVICES``, else the cores this
    process may use) by adding the flag to ``XLA_FLAGS``; returns the count asked for.

    Takes effect only if it runs before JAX starts its CPU backend (``import ropebook`` does it
    first thing), and leaves a count already set in ``XLA_FLAGS`` alone.
    """
    if count is None:
        text = os.environ.get("ROPEBOOK_CPU_DEVICES", "").strip()
        count = int(text) if text.isdigit() else -1 if text else len(os.sched_getaffinity(0))
    if count < 1:
        raise ValueError(
            "ROPEBOOK_CPU_DEVICES must be a positive integer, got "
            f"{os.environ.get('ROPEBOOK_CPU_DEVICES', count)!r}"
        )
    flags = os.environ.get("XLA_FLAGS", "")
    if DEVICE_FLAG in flags:
        return int(flags.split(DEVICE_FLAG + "=")[1].split()[0])
    os.environ["XLA_FLAGS"] = f"{flags} {DEVICE_FLAG}={count}".strip()
    return count


def data_parallel(batch_size: int) -> tuple[NamedSharding, NamedSharding]:
    """``(batch, replicated)`` shardings: a batch's first axis split over a 1-D ``data`` mesh of as
    many devices as divide ``batch_size``, and params replicated on the same devices."""
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    devices = jax.devices()
    n = max(k for k in range(1, len(devices) + 1) if batch_size % k == 0)
    mesh = Mesh(np.asarray(devices[:n]), ("data",))
    return NamedSharding(mesh, PartitionSpec("data")), NamedSharding(mesh, PartitionSpec())


_DETERMINISTIC_FLAG = "--xla_gpu_deterministic_ops"


def deterministic_gpu() -> bool:
    """Make XLA's GPU kernels deterministic (``--xla_gpu_deterministic_ops=true`` in ``XLA_FLAGS``).

    Without it a resumed run on a GPU does not end bit-identical to an uninterrupted one
    (``tests/test_train.py``, seen on an H200 with JAX 0.11.2: its reductions run in varying
    order), and the zoo's cache promises exactly that. The CPU backend ignores the flag.
    ``ROPEBOOK_GPU_DETERMINISTIC=0``, or the flag already in ``XLA_FLAGS``, leaves it alone.
    Returns whether the flag is on.
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if _DETERMINISTIC_FLAG in flags:
        return f"{_DETERMINISTIC_FLAG}=true" in flags
    if os.environ.get("ROPEBOOK_GPU_DETERMINISTIC", "1") == "0":
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {_DETERMINISTIC_FLAG}=true".strip()
    return True


def enable_compilation_cache(directory: Path | str | None = None) -> Path | None:
    """Use JAX's persistent compilation cache under ``directory`` (default ``CACHE_DIR/jax``).

    ``ROPEBOOK_JAX_CACHE=0`` turns it off (returns ``None``).
    """
    if os.environ.get("ROPEBOOK_JAX_CACHE", "1") == "0":
        return None
    import jax

    from ropebook.paths import CACHE_DIR

    path = Path(directory) if directory is not None else CACHE_DIR / "jax"
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    # A program with the fused attention kernel holds a custom partitioning call, which JAX
    # names by a Python object id: without this, its key differs in every process and the
    # cache never hits (every chapter and zoo process compiled its programs afresh). Safe here:
    # ropebook's only such call shows all its kernel depends on in its operands (attention._tag).
    jax.config.update("jax_remove_custom_partitioning_ptr_from_cache_key", True)
    return path
