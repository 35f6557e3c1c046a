"""Process-wide settings that make CPU training faster without changing a single number.

**Allocator.** XLA and PyTorch ask glibc's ``malloc`` for every activation buffer of every
step. glibc serves a request above 32 MiB (a ``[2048, 4096]`` float32 logits tensor, for
instance) by a fresh ``mmap``, and returns smaller freed memory from per-thread arenas to the
kernel, so the next step page-faults it all back in: ~52,000 page faults per step of the ``cpu``
zoo model, a fifth of its time (measured with ``getrusage``; ``benchmarks/train_throughput.py``).
:func:`tune_allocator` keeps freed memory in one heap instead (``mallopt``: no ``mmap``, no
trimming, one arena), after which a step page-faults zero times. The cost is that the process
keeps its peak heap until it exits. ``ROPEBOOK_TUNE_MALLOC=0`` turns it off.

**Compilation cache.** :func:`enable_compilation_cache` points JAX's persistent compilation
cache at ``CACHE_DIR/jax``, so a second ``make zoo`` or chapter run loads compiled programs from
disk instead of compiling them again (``benchmarks/compile_cache.py`` measures it).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

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


def enable_compilation_cache(directory: Path | str | None = None) -> Path | None:
    """Use JAX's persistent compilation cache under ``directory`` (default ``CACHE_DIR/jax``).

    ``ROPEBOOK_JAX_CACHE=0`` turns it off (returns ``None``).
    """
    if os.environ.get("ROPEBOOK_JAX_CACHE", "1") == "0":
        return None
    import jax

    from ropebook import CACHE_DIR

    path = Path(directory) if directory is not None else Path(CACHE_DIR) / "jax"
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path
