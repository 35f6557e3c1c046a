"""The trained zoo as a verified download: published beside the book, pulled into a fresh cache.

**Publishing** (``python -m ropebook zoo --publish DIR``; the workflow runs it after ``make
book``): every complete model of a profile's zoo in ``ROPEBOOK_CACHE`` goes into one
uncompressed tar named by the zoo's key, ``zoo-<profile>-<key>.tar`` (:func:`ropebook.zoo.key`,
what ``zoo --key`` prints): ``manifest.json`` first, then each model as ``<spec hash>/`` with its
``checkpoint.json``, its tensors and its snapshots. The tensors keep the params only: the
optimiser state is read only to resume an unfinished run, and without it the cpu zoo fits a
release asset (1.2 GiB against 2.7; GitHub caps an asset at 2 GiB). The manifest lists every
model (spec hash, name, seed, domain, regime, each file's size and sha256, how it was trained:
the checkpoint's provenance) and the commit and package versions of the build that published
it. Beside the tar, ``zoo-<profile>-<key>.json`` holds the tar's size and sha256 and the same
manifest: a pull reads it first, so it downloads nothing when the cache already holds the zoo.

**Pulling** (``python -m ropebook zoo --pull [URL]``, :func:`pull`): pooch fetches both files
(cached under ``ROPEBOOK_CACHE/downloads``, with a progress bar; the tar checked against the
sha256 the JSON names). Every member of the tar must be a regular file named
``manifest.json`` or ``<16 hex>/checkpoint.json | step_N.safetensors | snapshot_N.safetensors``
whose bytes parse as what its name says (a safetensors header, a JSON object), and must match
the manifest's size and sha256; links, folders, other names and other contents are refused.
Nothing in the archive is executed or unpickled, and members are read as streams into paths
this module makes, never extracted by name. Each model's spec must hash, in this checkout, to
its spec hash (``zoo.spec_hash`` of its name, seed, domain and regime): a model this checkout
no longer trains is skipped with a line saying so. Only when the whole archive has passed is
any model installed, each under its own lock, its ``checkpoint.json`` moved in last (so a
model is complete or absent) with an ``origin.json`` beside it (:data:`ropebook.checkpoints.ORIGIN_JSON`:
which archive, when), which chapters' provenance and the build page show. A model already in
the cache is never overwritten, nor an interrupted run's checkpoint (it resumes when loaded).

Where a zoo is published: ``ROPEBOOK_ZOO_URL`` (a folder URL the archive's name is appended to,
an archive's URL, or a template with ``{profile}`` and ``{key}``; set but empty: no pull), else
the GitHub release ``zoo`` of this clone's ``origin``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import tarfile
import tempfile
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ropebook import REPO_ROOT, buildrecord, checkpoints, io, pipeline, zoo
from ropebook.zoo import Job

FORMAT = 1
ZOO_URL_ENV = "ROPEBOOK_ZOO_URL"
RELEASE_TAG = "zoo"  # the GitHub release whose assets are the published zoos, one per key
MANIFEST = "manifest.json"
# A model's files, as the archive names them: nothing else is taken.
MEMBER = re.compile(
    r"(?P<model>[0-9a-f]{16})/(?P<file>checkpoint\.json|(?:step|snapshot)_[0-9]{7}\.safetensors)"
)
ARCHIVE_NAME = re.compile(r"zoo-(?P<profile>[a-z]+)-(?P<key>[0-9a-f]{16})\.tar")
RELEASE_ASSET_BYTES = 2 * 1024**3  # GitHub's limit on one release asset
SHA256 = re.compile(r"[0-9a-f]{64}")


class ZooArchiveError(RuntimeError):
    """A published zoo that cannot be used; the message is one line naming what is wrong."""


class ZooUnreachable(ZooArchiveError):
    """No published zoo could be fetched: offline, or the server has none at that address."""


def archive_name(profile: str, key: str) -> str:
    return f"zoo-{profile}-{key}.tar"


# ------------------------------------------------------------------------------ where it lives


def github_location(remote: str) -> str | None:
    """The download folder of release :data:`RELEASE_TAG` of a GitHub remote URL (https or ssh),
    or ``None`` for a remote elsewhere."""
    match = re.fullmatch(r"(?:https://|ssh://git@|git@)github\.com[/:]([\w.-]+)/([\w.-]+?)(?:\.git)?/?",
                         remote.strip())  # fmt: skip
    if match is None:
        return None
    return f"https://github.com/{match[1]}/{match[2]}/releases/download/{RELEASE_TAG}"


def default_location() -> str | None:
    """``ROPEBOOK_ZOO_URL`` where set (empty: ``None``, pulling is off), else this clone's GitHub
    release (:func:`github_location` of ``origin``), else ``None``."""
    if ZOO_URL_ENV in os.environ:
        return os.environ[ZOO_URL_ENV].strip() or None
    try:
        remote = subprocess.run(
            ["git", "remote", "get-url", "origin"], cwd=REPO_ROOT, capture_output=True,
            text=True, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    return github_location(remote)


def archive_url(location: str, profile: str, key: str) -> str:
    """The archive's URL: ``location`` itself if it names a ``.tar``, the template filled in if
    it has ``{profile}``/``{key}``, else the archive's name under the folder ``location``."""
    if "{" in location:
        return location.format(profile=profile, key=key)
    if location.endswith(".tar"):
        return location
    return f"{location.rstrip('/')}/{archive_name(profile, key)}"


# ------------------------------------------------------------------------------ file contents


def check_safetensors(handle: IO[bytes], size: int, name: str) -> None:
    """Raise :class:`ZooArchiveError` unless ``handle`` holds a well-formed safetensors file: an
    8-byte header length, a JSON header of tensors whose byte ranges tile the rest exactly."""
    head = handle.read(8)
    (length,) = struct.unpack("<Q", head) if len(head) == 8 else (-1,)
    if not 2 <= length <= min(size - 8, 100 * 1024**2):
        raise ZooArchiveError(f"{name}: not a safetensors file (no valid header): refused")
    try:
        header = json.loads(handle.read(length))
        ranges = sorted(tuple(v["data_offsets"]) for k, v in header.items() if k != "__metadata__")
    except (ValueError, TypeError, KeyError, AttributeError):
        raise ZooArchiveError(f"{name}: not a safetensors file (bad header): refused") from None
    ends = [0] + [end for _, end in ranges]
    if [start for start, _ in ranges] != ends[:-1] or ends[-1] != size - 8 - length:
        raise ZooArchiveError(f"{name}: not a safetensors file (tensor bytes do not add up)")


def check_json(data: bytes, name: str) -> dict[str, Any]:
    """``data`` as a JSON object, or :class:`ZooArchiveError` naming the file."""
    try:
        value = json.loads(data)
    except ValueError:
        raise ZooArchiveError(f"{name}: not a JSON file: refused") from None
    if not isinstance(value, dict):
        raise ZooArchiveError(f"{name}: not a JSON object: refused")
    return value


# ------------------------------------------------------------------------------ publishing


def cached_jobs(profile: str, known: set[str] | frozenset[str] = frozenset()) -> dict[str, Job]:
    """Complete models in the cache beyond ``known`` (spec hashes) that this checkout names in
    ``profile`` (a seed a chapter added, say), by spec hash: their checkpoint's spec gives name,
    seed and domain, and the regime is the one whose spec hash is the folder's."""
    found: dict[str, Job] = {}
    for folder in sorted((Path(zoo.CACHE_DIR) / "zoo").glob("*/")):
        if folder.name in known or not MEMBER.fullmatch(
            f"{folder.name}/{checkpoints.CHECKPOINT_JSON}"
        ):
            continue
        try:
            if not zoo.is_done(folder):
                continue
            meta = checkpoints.read_metadata(folder)
        except checkpoints.CheckpointError:
            continue
        spec, seed = meta.get("extra", {}).get("spec", {}), meta["train"].get("seed")
        for regime in zoo.REGIMES:
            job = (spec.get("name"), seed, spec.get("domain"), regime)
            try:
                if zoo.spec_hash(job[0], seed=seed, profile=profile, domain=job[2], regime=regime) == folder.name:  # fmt: skip
                    found[folder.name] = job
                    break
            except (ValueError, TypeError):
                continue
    return found


def _model_files(folder: Path, meta: dict[str, Any]) -> Iterator[tuple[str, Path]]:
    """A complete model's files as published: its snapshots as they are, its tensors with the
    params only, then its ``checkpoint.json`` pointing at them (written to a temporary folder)."""
    from safetensors.numpy import load_file, save_file

    for entry in meta.get("history", {}).get("snapshots", []):
        yield entry["file"], folder / entry["file"]
    with tempfile.TemporaryDirectory(prefix="ropebook-publish-") as scratch:
        tensors = load_file(str(folder / meta["file"]))
        params = Path(scratch) / meta["file"]
        save_file({k: v for k, v in tensors.items() if k.startswith("params.")}, str(params))
        yield meta["file"], params
        dropped = {"optimizer_state": "dropped when published", "sha256_with_it": meta["sha256"]}
        published = meta | {"sha256": io.sha256_file(params), "published": dropped}
        checkpoint = Path(scratch) / checkpoints.CHECKPOINT_JSON
        checkpoint.write_text(json.dumps(published, indent=2, sort_keys=True) + "\n")
        yield checkpoints.CHECKPOINT_JSON, checkpoint


def _add(tar: tarfile.TarFile, name: str, handle: IO[bytes], size: int) -> None:
    info = tarfile.TarInfo(name)  # the same bytes for the same models: no times, owners
    info.size, info.mode, info.mtime = size, 0o644, 0
    tar.addfile(info, handle)


@dataclass(frozen=True)
class Published:
    archive: Path
    pointer: Path
    size: int
    models: int


def publish(
    profile: str, out: Path, *, jobs: list[Job] | None = None, max_bytes: int = RELEASE_ASSET_BYTES
) -> Published:
    """Write the profile's zoo from the cache into ``out`` as ``zoo-<profile>-<key>.tar`` and
    its ``.json`` (see the module docstring): its default jobs and every other cached model of
    the profile this checkout names (:func:`cached_jobs`), or exactly ``jobs`` (the key is
    theirs). :class:`ZooArchiveError` if one of them is missing or incomplete (nothing
    written), or if the tar exceeds ``max_bytes`` (removed)."""
    everything = jobs is None
    jobs = zoo.default_jobs(profile) if jobs is None else jobs
    key = zoo.key(jobs, profile)
    models = {zoo.spec_hash(n, seed=s, profile=profile, domain=d, regime=r): (n, s, d, r)
              for n, s, d, r in jobs}  # fmt: skip
    missing = [h for h in models if not zoo.is_done(Path(zoo.CACHE_DIR) / "zoo" / h)]
    if missing:
        raise ZooArchiveError(
            f"the {profile} zoo is incomplete in {zoo.CACHE_DIR}: {len(missing)} of {len(models)} "
            "models missing (`ropebook zoo --status`); nothing published"
        )
    models |= cached_jobs(profile, set(models)) if everything else {}
    entries, files = [], []
    for spec_hash, (name, seed, domain, regime) in sorted(models.items()):
        folder = Path(zoo.CACHE_DIR) / "zoo" / spec_hash
        meta = checkpoints.read_metadata(folder)
        entry = {"spec_hash": spec_hash, "name": name, "seed": seed, "domain": domain,
                 "regime": regime, "trained_with": meta.get("provenance", []), "files": []}  # fmt: skip
        entries.append(entry)
        files.append((entry, folder, meta))
    manifest = {
        "format": FORMAT, "profile": profile, "key": key, "published": buildrecord.now(),
        "commit": pipeline._git_commit(), "versions": pipeline.package_versions(),
        "build": buildrecord.current_build(), "models": entries,
    }  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    archive = out / archive_name(profile, key)
    with tempfile.TemporaryDirectory(dir=out, prefix=".models-") as scratch:
        body = Path(scratch) / "models.tar"  # the models first: the manifest lists their hashes
        with tarfile.open(body, "w", format=tarfile.PAX_FORMAT) as tar:
            for entry, folder, meta in files:
                for file, path in _model_files(folder, meta):
                    size = path.stat().st_size
                    entry["files"].append(
                        {"path": file, "size": size, "sha256": io.sha256_file(path)}
                    )
                    with open(path, "rb") as handle:
                        _add(tar, f"{entry['spec_hash']}/{file}", handle, size)
        text = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
        with io.atomic_path(archive) as tmp:
            with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
                _add(tar, MANIFEST, _BytesReader(text), len(text))
                with tarfile.open(body) as models_tar:
                    for member in models_tar:
                        tar.addfile(member, models_tar.extractfile(member))
            size = tmp.stat().st_size
            if size > max_bytes:
                raise ZooArchiveError(
                    f"{archive.name} would be {size / 1024**3:.1f} GiB, over the "
                    f"{max_bytes / 1024**3:.1f} GiB a release asset may hold: not published"
                )
    pointer = archive.with_suffix(".json")
    info = {"name": archive.name, "size": size, "sha256": io.sha256_file(archive)}
    io.write_json_atomic(pointer, {"format": FORMAT, "archive": info, "manifest": manifest})
    return Published(archive, pointer, size, len(entries))


class _BytesReader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def read(self, n: int = -1) -> bytes:
        end = len(self.data) if n < 0 else self.at + n
        chunk, self.at = self.data[self.at : end], min(end, len(self.data))
        return chunk


# ------------------------------------------------------------------------------ pulling


def _http_error(error: Exception, url: str) -> ZooArchiveError:
    import requests

    if isinstance(error, requests.HTTPError) and error.response is not None:
        status = f"{error.response.status_code} {error.response.reason}"
        return ZooUnreachable(f"the server answered {status} for {url}: no published zoo there")
    if isinstance(error, requests.ConnectionError | requests.Timeout):
        return ZooUnreachable(f"cannot reach {url} (offline?): {type(error).__name__}")
    return ZooUnreachable(f"cannot fetch {url}: {error}")


class _CheckedDownload:
    """pooch's HTTP downloader, then two checks before pooch's sha256 (so that each failure has
    its own line; pooch deletes the file on any): an HTML page instead of the file, and a file
    shorter or longer than the manifest says."""

    def __init__(self, size: int | None, progress: bool) -> None:
        import pooch

        self.size, self.http = size, pooch.HTTPDownloader(progressbar=progress, timeout=30)

    def __call__(self, url: str, output: str, pooch_: Any) -> None:
        self.http(url, output, pooch_)
        with open(output, "rb") as handle:
            start = handle.read(512).lstrip().lower()
        if start.startswith((b"<!doctype html", b"<html")):
            raise ZooArchiveError(f"the server answered an HTML page for {url}, not the file")
        got = os.path.getsize(output)
        if self.size is not None and got != self.size:
            word = "truncated" if got < self.size else "longer than published"
            raise ZooArchiveError(
                f"{url}: {word}, {got:,} bytes of the {self.size:,} the manifest names"
            )


def _fetch(url: str, folder: Path, *, sha256: str | None, size: int | None, progress: bool) -> Path:
    """``url`` into ``folder`` by pooch (kept there: a second call downloads nothing)."""
    import pooch
    import requests

    name = Path(urllib.parse.urlparse(url).path).name
    pooch.get_logger().setLevel("WARNING")  # its lines name hashes to paste: not ours to show
    try:
        return Path(pooch.retrieve(
            url, known_hash=f"sha256:{sha256}" if sha256 else None, fname=name, path=folder,
            downloader=_CheckedDownload(size, progress),
        ))  # fmt: skip
    except requests.RequestException as error:
        raise _http_error(error, url) from None
    except ValueError as error:  # pooch: the sha256 does not match
        if "hash" not in str(error).lower():
            raise
        raise ZooArchiveError(
            f"{name}: its sha256 does not match the one its manifest names: altered or "
            "replaced; nothing installed"
        ) from None


def _read_pointer(path: Path, url: str) -> dict[str, Any]:
    data = path.read_bytes()
    if data.lstrip()[:1] == b"<":
        raise ZooArchiveError(f"the server answered an HTML page for {url}, not a zoo manifest")
    pointer = check_json(data, url)
    archive, manifest = pointer.get("archive"), pointer.get("manifest")
    if (
        pointer.get("format") != FORMAT
        or not isinstance(archive, dict)
        or not isinstance(manifest, dict)
    ):
        raise ZooArchiveError(f"{url}: not a format-{FORMAT} zoo manifest")
    if not (isinstance(archive.get("size"), int) and SHA256.fullmatch(str(archive.get("sha256")))):
        raise ZooArchiveError(f"{url}: the archive's size or sha256 is missing")
    return pointer


def _check_manifest(manifest: dict[str, Any], profile: str, key: str, where: str) -> None:
    """Every name and number of the manifest well-formed, and it is ``profile``'s zoo ``key``."""
    if manifest.get("profile") != profile:
        raise ZooArchiveError(
            f"{where}: a zoo of the {manifest.get('profile')!r} profile, not {profile!r}: refused"
        )
    if manifest.get("key") != key:
        raise ZooArchiveError(
            f"{where}: its manifest is for zoo key {manifest.get('key')}, not {key}: refused"
        )
    for model in manifest.get("models", []):
        for entry in model.get("files", []):
            name = f"{model.get('spec_hash')}/{entry.get('path')}"
            if not MEMBER.fullmatch(name):
                raise ZooArchiveError(
                    f"{where}: {name}: not a file type a zoo holds (safetensors or JSON): refused"
                )
            if not (
                isinstance(entry.get("size"), int) and SHA256.fullmatch(str(entry.get("sha256")))
            ):
                raise ZooArchiveError(f"{where}: {name}: no size or sha256 in the manifest")


@dataclass
class Pulled:
    """What a pull did: models installed, already here, and skipped (each with its line)."""

    archive: str
    url: str
    published: str
    installed: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{self.archive} (published {self.published}): {len(self.installed)} models "
            f"installed, {len(self.present)} already here, {len(self.skipped)} skipped"
        )


def _sort_models(
    manifest: dict[str, Any], profile: str, say: Callable[[str], None], done: Pulled
) -> list[dict[str, Any]]:
    """The manifest's models this pull installs: those whose spec this checkout hashes the same
    and the cache lacks; each other one counted, the skipped with a line."""
    todo = []
    for model in manifest["models"]:
        spec_hash = model["spec_hash"]
        what = f"{model.get('name')} seed={model.get('seed')} {model.get('domain')} {model.get('regime')}"
        try:
            ours = zoo.spec_hash(model["name"], seed=model["seed"], profile=profile,
                                 domain=model["domain"], regime=model["regime"])  # fmt: skip
        except (ValueError, TypeError, KeyError) as error:
            done.skipped.append(spec_hash)
            say(f"skipped {spec_hash} ({what}): this checkout no longer trains it ({error})")
            continue
        if ours != spec_hash:
            done.skipped.append(spec_hash)
            say(f"skipped {spec_hash} ({what}): this checkout trains it as {ours}, another spec")
        elif zoo.is_done(Path(zoo.CACHE_DIR) / "zoo" / spec_hash):
            done.present.append(spec_hash)
        else:
            todo.append(model)
    return todo


def _stage(
    archive: Path, manifest: dict[str, Any], todo: list[dict[str, Any]], staging: Path
) -> None:
    """Check every member of ``archive`` against ``manifest`` and copy those of ``todo``'s models
    into ``staging/<spec hash>/``; :class:`ZooArchiveError` at the first that fails."""
    listed = {f"{m['spec_hash']}/{f['path']}": f for m in manifest["models"] for f in m["files"]}
    wanted = {m["spec_hash"] for m in todo}
    seen: set[str] = set()
    try:
        tar = tarfile.open(archive, "r:")
    except tarfile.TarError as error:
        raise ZooArchiveError(
            f"{archive.name}: not an uncompressed tar ({error}): refused"
        ) from None
    with tar:
        try:
            for i, member in enumerate(tar):
                name = member.name
                if not member.isreg():
                    kind = (
                        "link"
                        if member.issym() or member.islnk()
                        else "folder"
                        if member.isdir()
                        else "special file"
                    )
                    raise ZooArchiveError(
                        f"{archive.name}: {name} is a {kind}, not a file: refused"
                    )
                if name in seen:
                    raise ZooArchiveError(f"{archive.name}: {name} appears twice: refused")
                seen.add(name)
                if i == 0 and name == MANIFEST:
                    inner = check_json(
                        tar.extractfile(member).read(), f"{archive.name}: {MANIFEST}"
                    )
                    if inner != manifest:
                        raise ZooArchiveError(
                            f"{archive.name}: its {MANIFEST} differs from the published one"
                        )
                    continue
                match = MEMBER.fullmatch(name)
                if match is None:
                    raise ZooArchiveError(
                        f"{archive.name}: {name}: not a file type a zoo holds (safetensors or JSON): refused"
                    )
                if name not in listed:
                    raise ZooArchiveError(f"{archive.name}: {name} is not in the manifest: refused")
                expected = listed[name]
                if member.size != expected["size"]:
                    raise ZooArchiveError(
                        f"{archive.name}: {name} is {member.size:,} bytes, the manifest says "
                        f"{expected['size']:,}: truncated or altered"
                    )
                if match["model"] in wanted:
                    _copy_member(tar, member, staging / name, expected["sha256"], archive.name)
        except tarfile.TarError as error:
            raise ZooArchiveError(f"{archive.name}: a damaged tar ({error}): refused") from None
    if MANIFEST not in seen:
        raise ZooArchiveError(f"{archive.name}: no {MANIFEST} first: not a published zoo")
    if absent := sorted(set(listed) - seen):
        raise ZooArchiveError(f"{archive.name}: {absent[0]} (and {len(absent) - 1} more) missing")


def _copy_member(tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path, sha256: str,
                 where: str) -> None:  # fmt: skip
    """One member's bytes into ``target`` (a path made here), checked for its type and sha256."""
    source = tar.extractfile(member)
    assert source is not None  # a regular file
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with open(target, "wb") as out:
        while block := source.read(1 << 20):
            digest.update(block)
            out.write(block)
    name = f"{where}: {member.name}"
    if digest.hexdigest() != sha256:
        raise ZooArchiveError(f"{name}: sha256 {digest.hexdigest()[:16]}… does not match the "
                              f"manifest's {sha256[:16]}…: refused")  # fmt: skip
    if target.suffix == ".json":
        check_json(target.read_bytes(), name)
    else:
        with open(target, "rb") as handle:
            check_safetensors(handle, member.size, name)


def _check_model(folder: Path, spec_hash: str, where: str) -> None:
    """A staged model is complete, its spec hashes to its folder, and its files are those its
    checkpoint names (so :func:`ropebook.zoo.load` takes it as it takes one trained here)."""
    try:
        meta = checkpoints.read_metadata(folder)
    except checkpoints.CheckpointError as error:
        raise ZooArchiveError(f"{where}: {spec_hash}: {error}") from None
    spec = meta.get("extra", {}).get("spec")
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
    if digest != spec_hash or not meta.get("complete"):
        raise ZooArchiveError(f"{where}: {spec_hash}: its checkpoint is not that model's, or "
                              "not complete: refused")  # fmt: skip
    named = [(meta["file"], meta["sha256"])] + [
        (e["file"], e["sha256"]) for e in meta.get("history", {}).get("snapshots", [])
    ]
    for file, sha256 in named:
        if not (folder / file).exists() or io.sha256_file(folder / file) != sha256:
            raise ZooArchiveError(f"{where}: {spec_hash}/{file}: named by its checkpoint but "
                                  "absent or different: refused")  # fmt: skip


def _install(staged: Path, origin: dict[str, Any]) -> str:
    """Move a checked model into the cache under its lock, ``checkpoint.json`` last; returns
    ``installed``, ``present`` (there already), ``busy`` (another process holds it) or
    ``interrupted`` (an unfinished run's checkpoint is there: kept, it resumes)."""
    import fcntl

    folder = Path(zoo.CACHE_DIR) / "zoo" / staged.name
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "a") as lock:  # "a": never truncate another's lock file
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return "busy"
        if zoo.is_done(folder):
            return "present"
        if (folder / checkpoints.CHECKPOINT_JSON).exists():
            return "interrupted"
        last = staged / checkpoints.CHECKPOINT_JSON
        for path in sorted(staged.iterdir()):
            if path != last:
                os.replace(path, folder / path.name)
        io.write_json_atomic(folder / checkpoints.ORIGIN_JSON, origin)
        os.replace(last, folder / checkpoints.CHECKPOINT_JSON)
    return "installed"


def pull(
    url: str, profile: str, *, progress: bool = True, say: Callable[[str], None] = print
) -> Pulled:
    """Fetch the zoo archive at ``url`` (and its ``.json`` beside it), check it and install the
    models this checkout trains and the cache lacks (module docstring). Raises
    :class:`ZooUnreachable` when nothing could be fetched and :class:`ZooArchiveError` when what
    was fetched is refused; either way the cache is as it was."""
    if not url.startswith(("http://", "https://")):
        raise ZooArchiveError(f"{url}: a zoo is pulled over http(s) only")
    name = Path(urllib.parse.urlparse(url).path).name
    named = ARCHIVE_NAME.fullmatch(name)
    if named is None:
        raise ZooArchiveError(f"{url}: an archive's name is zoo-<profile>-<key>.tar")
    downloads = Path(zoo.CACHE_DIR) / "downloads"
    pointer_url = url.removesuffix(".tar") + ".json"
    pointer_path = _fetch(pointer_url, downloads, sha256=None, size=None, progress=False)
    try:
        return _pull_checked(url, pointer_path, profile, progress=progress, say=say)
    except ZooArchiveError:
        # refused or cut off: nothing of it kept, so that the next pull asks the server again
        pointer_path.unlink(missing_ok=True)
        (downloads / name).unlink(missing_ok=True)
        raise


def _pull_checked(
    url: str, pointer_path: Path, profile: str, *, progress: bool, say: Callable[[str], None]
) -> Pulled:
    """:func:`pull` once the archive's ``.json`` is here."""
    name = Path(urllib.parse.urlparse(url).path).name
    pointer_url = url.removesuffix(".tar") + ".json"
    pointer = _read_pointer(pointer_path, pointer_url)
    manifest = pointer["manifest"]
    if pointer["archive"].get("name") != name:
        raise ZooArchiveError(
            f"{pointer_url}: describes {pointer['archive'].get('name')}, not {name}"
        )
    named = ARCHIVE_NAME.fullmatch(name)
    assert named is not None  # pull checked it
    _check_manifest(manifest, profile, named["key"], pointer_url)
    done = Pulled(name, url, str(manifest.get("published")))
    todo = _sort_models(manifest, profile, say, done)
    if not todo:
        say(f"nothing to download: {done.summary()}")
        return done
    archive = _fetch(url, pointer_path.parent, sha256=pointer["archive"]["sha256"],
                     size=pointer["archive"]["size"], progress=progress)  # fmt: skip
    zoo_dir = Path(zoo.CACHE_DIR) / "zoo"
    zoo_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=zoo_dir, prefix=".pull-"))  # one file system: renames
    try:
        _stage(archive, manifest, todo, staging)
        for model in todo:
            _check_model(staging / model["spec_hash"], model["spec_hash"], name)
        origin = {"archive": name, "url": url, "archive_sha256": pointer["archive"]["sha256"],
                  "published": manifest.get("published"), "commit": manifest.get("commit"),
                  "pulled": buildrecord.now()}  # fmt: skip
        for model in todo:
            outcome = _install(staging / model["spec_hash"], origin)
            if outcome in ("installed", "present"):
                getattr(done, outcome).append(model["spec_hash"])
            else:
                done.skipped.append(model["spec_hash"])
                why = {"busy": "another process is training it",
                       "interrupted": "an interrupted run of it is here, kept (it resumes)"}  # fmt: skip
                say(f"skipped {model['spec_hash']} ({model['name']}): {why[outcome]}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    say(f"pulled {done.summary()}")
    return done
