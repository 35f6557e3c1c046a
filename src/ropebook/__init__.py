"""ropebook: the library behind the book "Why does RoPE work?".

One module per idea (see DESIGN.md in ../shared): ``rope`` (maths), ``encodings`` and ``model``
(a JAX transformer with every positional encoding), ``data``, ``train``, ``zoo`` (trained models,
cached), ``analysis`` (measurements) with ``present`` above it (their charts, tables and
sentences), ``proofs`` (sympy), ``plots``, ``claims`` and ``pipeline`` (the runner).
"""

import os
from pathlib import Path

__version__ = "0.1.0"

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = Path(os.environ.get("ROPEBOOK_DATA", REPO_ROOT / "data"))
CACHE_DIR = Path(os.environ.get("ROPEBOOK_CACHE", DATA_DIR / "cache"))

# Before any thread allocates: see ropebook.runtime for why and what it measured.
from ropebook import runtime  # noqa: E402

runtime.tune_allocator()
runtime.split_cpu_devices()
runtime.deterministic_gpu()
