"""Where the repository, its data and the cache of trained models and compiled programs live.

The bottom floor of the package (``tests/test_layers.py``): it imports nothing from it, so every
module, :mod:`ropebook.runtime` included, may read these paths without importing the package's
``__init__`` (which imports :mod:`ropebook.runtime`). ``ropebook`` re-exports them: ``from ropebook
import CACHE_DIR`` is the same path.

- ``REPO_ROOT``: the checkout (``src/ropebook/`` sits two levels below it);
- ``DATA_DIR``: downloaded corpora, tokenizers and derived data, ``ROPEBOOK_DATA`` or ``data/``;
- ``CACHE_DIR``: trained zoo models and JAX's compilation cache, ``ROPEBOOK_CACHE`` or
  ``DATA_DIR/cache`` (outside the work tree when set, so that checkouts can share it).
"""

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = Path(os.environ.get("ROPEBOOK_DATA", REPO_ROOT / "data"))
CACHE_DIR = Path(os.environ.get("ROPEBOOK_CACHE", DATA_DIR / "cache"))
