"""Atomic writes and checksummed reads: every file the book writes goes through here."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class IntegrityError(RuntimeError):
    """A file on disk does not match the checksum recorded for it."""


def sha256_file(path: Path | str, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def verify_sha256(path: Path | str, expected: str) -> None:
    """Raise :class:`IntegrityError` naming the file if its sha256 is not ``expected``."""
    actual = sha256_file(path)
    if actual != expected:
        raise IntegrityError(
            f"{path}: sha256 {actual} does not match the recorded {expected}; "
            "the file is corrupt or was changed — delete it and regenerate it"
        )


@contextmanager
def atomic_path(path: Path | str) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it over ``path`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp_path = Path(tmp)
    tmp_path.chmod(0o644)  # mkstemp makes 0600 files; results are meant to be shared
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    finally:
        tmp_path.unlink(missing_ok=True)


def write_bytes_atomic(path: Path | str, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_json_atomic(path: Path | str, obj: Any) -> None:
    write_bytes_atomic(path, (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode())
