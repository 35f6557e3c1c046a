"""The zoo as a verified download (``ropebook.zoo_archive``): a zoo published from one cache and
served over HTTP (the standard library's server, in a thread) installs into a fresh cache, where
the models then load without training; every bad input is refused with its own line and leaves
the cache as it was; and a chapter run on a pulled zoo trains nothing."""

from __future__ import annotations

import functools
import hashlib
import http.server
import io as bytes_io
import json
import os
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import numpy as np
import pytest

from ropebook import CACHE_DIR, REPO_ROOT, checkpoints, train, zoo, zoo_archive, zoo_command
from ropebook.zoo_archive import ZooArchiveError

JOBS = [("rope", 0, "shakespeare", "lesson"), ("alibi", 0, "shakespeare", "lesson")]


def forbid_training(monkeypatch) -> None:
    monkeypatch.setattr(train, "train", lambda *a, **k: pytest.fail("train.train was called"))


@pytest.fixture
def server():
    """``(base URL, files)``: an HTTP server answering ``files[path] = (status, body)``, and 404
    with an HTML page for any other path; ``files["hits"]`` counts the requests per path."""
    files: dict = {"hits": {}}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            files["hits"][self.path] = files["hits"].get(self.path, 0) + 1
            status, body = files.get(self.path, (404, b"<!DOCTYPE html><html>Not Found</html>"))
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_port}", files
    httpd.shutdown()


@pytest.fixture
def published(tiny_zoo, server, monkeypatch):
    """Two tiny models trained into cache ``a``, published and served; ``zoo.CACHE_DIR`` then
    points at the empty cache ``b``. Returns (archive URL, files, archive bytes, pointer)."""
    monkeypatch.setattr(zoo, "CACHE_DIR", tiny_zoo / "a")
    for name, seed, domain, regime in JOBS:
        zoo.load(name, seed=seed, profile="smoke", domain=domain, regime=regime, progress=False)
    done = zoo_archive.publish("smoke", tiny_zoo / "out", jobs=JOBS)
    assert done.models == 2 and done.archive.name == f"zoo-smoke-{zoo.key(JOBS, 'smoke')}.tar"
    pointer = json.loads(done.pointer.read_text())
    base, files = server
    serve(files, done.archive.name, done.archive.read_bytes(), pointer)
    monkeypatch.setattr(zoo, "CACHE_DIR", tiny_zoo / "b")
    monkeypatch.setenv("ROPEBOOK_EXECUTED", str(tiny_zoo / "executed"))  # the pull's record
    return f"{base}/{done.archive.name}", files, done.archive.read_bytes(), pointer


def serve(files: dict, name: str, archive: bytes, pointer: dict) -> None:
    """Serve ``archive`` and ``pointer`` (its size and sha256 set to the archive's)."""
    info = {"name": name, "size": len(archive), "sha256": hashlib.sha256(archive).hexdigest()}
    files[f"/{name}"] = (200, archive)
    files[f"/{name.removesuffix('.tar')}.json"] = (
        200,
        json.dumps(pointer | {"archive": info}).encode(),
    )


def members(archive: bytes) -> list[tuple[tarfile.TarInfo, bytes | None]]:
    with tarfile.open(fileobj=bytes_io.BytesIO(archive)) as tar:
        return [(m, tar.extractfile(m).read() if m.isreg() else None) for m in tar]


def retar(items: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    out = bytes_io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in items:
            info.size = len(data) if data is not None else 0
            tar.addfile(info, bytes_io.BytesIO(data) if data is not None else None)
    return out.getvalue()


def cache_files(cache: Path) -> dict[str, str]:
    return {str(p.relative_to(cache)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(cache.rglob("*")) if p.is_file()}  # fmt: skip


def test_pull_installs_a_served_zoo_that_then_loads_without_training(published, monkeypatch):
    url, files, _, pointer = published
    lines: list[str] = []
    pulled = zoo_archive.pull(url, "smoke", progress=False, say=lines.append)
    hashes = sorted(m["spec_hash"] for m in pointer["manifest"]["models"])
    assert sorted(pulled.installed) == hashes and not pulled.present and not pulled.skipped
    assert lines == [f"pulled {pulled.summary()}"] and "2 models installed" in lines[0]
    forbid_training(monkeypatch)
    a, b = zoo.CACHE_DIR.parent / "a", zoo.CACHE_DIR
    for name, seed, domain, regime in JOBS:
        model = zoo.load(name, seed=seed, profile="smoke", domain=domain, regime=regime,
                         progress=False)  # fmt: skip
        params_a, _, meta_a = checkpoints.load_checkpoint(a / "zoo" / model.spec_hash)
        for x, y in zip(train.jax.tree.leaves(model.params), train.jax.tree.leaves(params_a),
                        strict=True):  # fmt: skip
            np.testing.assert_array_equal(x, y)  # the very weights trained in cache a
        assert model.history == meta_a["history"] and not model.trained_now
        origin = checkpoints.read_origin(model.path)
        assert origin["archive"] == url.rsplit("/", 1)[1] and origin["url"] == url
        assert checkpoints.read_origin(a / "zoo" / model.spec_hash) is None
        # the published tensors hold the params only: the optimiser state is dropped
        meta = checkpoints.read_metadata(model.path)
        assert meta["published"]["sha256_with_it"] == meta_a["sha256"] != meta["sha256"]
    before = cache_files(b)
    again = zoo_archive.pull(url, "smoke", progress=False, say=lines.append)
    assert sorted(again.present) == hashes and not again.installed
    assert lines[-1].startswith("nothing to download")
    assert files["hits"][f"/{url.rsplit('/', 1)[1]}"] == 1  # the archive was not fetched again
    assert cache_files(b) == before


def test_never_overwrites_and_skips_a_model_this_checkout_no_longer_trains(published, monkeypatch):
    url, _, _, pointer = published
    rope = zoo.load("rope", profile="smoke", progress=False)  # trained in b before the pull
    before = cache_files(rope.path)
    alibi = zoo.spec_hash("alibi", profile="smoke")
    monkeypatch.delitem(zoo.ALL_SPECS, "alibi")
    lines: list[str] = []
    pulled = zoo_archive.pull(url, "smoke", progress=False, say=lines.append)
    assert pulled.present == [rope.spec_hash] and pulled.skipped == [alibi]
    assert not pulled.installed and cache_files(rope.path) == before
    assert checkpoints.read_origin(rope.path) is None
    assert lines[0].startswith(f"skipped {alibi} (alibi seed=0 shakespeare lesson): this "
                               "checkout no longer trains it")  # fmt: skip
    assert not (zoo.CACHE_DIR / "zoo" / alibi).exists()


def tampered_file(archive, pointer):
    """A tensor file's sha256 in the manifest differs from its bytes (the tar is consistent)."""
    manifest = json.loads(json.dumps(pointer["manifest"]))
    entry = manifest["models"][0]["files"][-2]
    entry["sha256"] = "0" * 64
    items = members(archive)
    items[0] = (items[0][0], json.dumps(manifest, indent=2, sort_keys=True).encode())
    return retar(items), pointer | {"manifest": manifest}


def with_member(name: str, data: bytes | None, kind: bytes = tarfile.REGTYPE, listed: bool = True):
    """An extra member (listed in the manifest with its true size and sha256 when ``listed``)."""

    def change(archive, pointer):
        manifest = json.loads(json.dumps(pointer["manifest"]))
        model, _, file = name.partition("/")
        if listed:
            manifest["models"][0]["files"].append({
                "path": file, "size": len(data or b""),
                "sha256": hashlib.sha256(data or b"").hexdigest(),
            })  # fmt: skip
        items = members(archive)
        items[0] = (items[0][0], json.dumps(manifest, indent=2, sort_keys=True).encode())
        info = tarfile.TarInfo(name.replace("MODEL", manifest["models"][0]["spec_hash"]))
        info.type = kind
        if kind == tarfile.SYMTYPE:
            info.linkname = "/etc/passwd"
        return retar([*items, (info, data)]), pointer | {"manifest": manifest}

    return change


def snapshot_named_pickle(archive, pointer):
    """A snapshot file whose bytes are a pickle, listed with its true sha256."""
    import pickle

    return with_member("MODEL/snapshot_0000001.safetensors", pickle.dumps({"a": 1}))(
        archive, pointer
    )


def other_key(archive, pointer):
    manifest = pointer["manifest"] | {"key": "f" * 16}
    items = members(archive)
    items[0] = (items[0][0], json.dumps(manifest, indent=2, sort_keys=True).encode())
    return retar(items), pointer | {"manifest": manifest}


BAD = {
    "wrong hash": (tampered_file, "does not match the manifest's"),
    "archive replaced": ("archive sha256", "its sha256 does not match the one its manifest names"),
    "truncated": ("truncate", "truncated, "),
    "unknown file type": (with_member("MODEL/run.sh", b"rm -rf ~"), "not a file type a zoo holds"),
    "pickle as safetensors": (snapshot_named_pickle, "not a safetensors file"),
    "path traversal": (with_member("MODEL/../../../evil.json", b"{}", listed=False),
                       "not a file type a zoo holds"),
    "symlink": (with_member("MODEL/checkpoint.json", None, tarfile.SYMTYPE, listed=False),
                "is a link, not a file"),
    "another key": (other_key, "its manifest is for zoo key ffffffffffffffff, not"),
    "error page": ("404", "the server answered 404 Not Found for"),
    "HTML page with 200": ("html", "the server answered an HTML page for"),
}  # fmt: skip


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_refused_with_its_line_and_the_cache_unchanged(published, case, capsys):
    url, files, archive, pointer = published
    name = url.rsplit("/", 1)[1]
    zoo.load("nope", profile="smoke", progress=False)  # the cache is not empty: it stays as is
    before = cache_files(zoo.CACHE_DIR)
    change, message = BAD[case]
    if callable(change):
        serve(files, name, *change(archive, pointer))
    elif change == "archive sha256":
        files[f"/{name}"] = (200, archive[:-1] + bytes([archive[-1] ^ 1]))
    elif change == "truncate":
        files[f"/{name}"] = (200, archive[: len(archive) // 2])
    elif change == "404":  # nothing published there
        del files[f"/{name}"], files[f"/{name.removesuffix('.tar')}.json"]
    elif change == "html":
        files[f"/{name.removesuffix('.tar')}.json"] = (200, b"<html><body>Moved</body></html>")
    with pytest.raises(ZooArchiveError, match=message.replace("(", r"\(")):
        zoo_archive.pull(url, "smoke", progress=False)
    assert cache_files(zoo.CACHE_DIR) == before  # nothing installed, no download kept
    # the command line: that one line, exit status 1; with --optional, 0 and training goes on
    capsys.readouterr()
    assert zoo_command.main(["--profile", "smoke", "--pull", url]) == 1
    (line,) = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith(("zoo ", "no "))]
    assert message in line and line.startswith(("zoo refused: ", "no zoo pulled: "))
    assert zoo_command.main(["--profile", "smoke", "--pull", url, "--optional"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("models the cache lacks are trained")
    assert cache_files(zoo.CACHE_DIR) == before


def test_make_pulls_this_keys_zoo_from_ROPEBOOK_ZOO_URL_or_not_at_all(
    published, monkeypatch, capsys
):
    url, _, _, _ = published
    monkeypatch.setattr(zoo, "default_jobs", lambda profile, seeds=None: JOBS)  # the zoo's key
    monkeypatch.setenv(zoo_archive.ZOO_URL_ENV, "")
    assert zoo_command.main(["--profile", "smoke", "--pull", "--optional"]) == 0
    assert "zoo pull off (ROPEBOOK_ZOO_URL is empty)" in capsys.readouterr().out
    monkeypatch.setenv(zoo_archive.ZOO_URL_ENV, "http://127.0.0.1:9/nowhere")  # nothing listens
    assert zoo_command.main(["--profile", "smoke", "--pull", "--optional"]) == 0
    assert (
        "no zoo pulled: cannot reach http://127.0.0.1:9/nowhere/zoo-smoke-"
        in capsys.readouterr().out
    )
    assert not (zoo.CACHE_DIR / "zoo").exists()
    monkeypatch.setenv(zoo_archive.ZOO_URL_ENV, url.rsplit("/", 1)[0] + "/")  # a folder
    assert zoo_command.main(["--profile", "smoke", "--pull", "--optional"]) == 0
    record = json.loads(
        (zoo.CACHE_DIR.parent / "executed" / "records" / "zoo-pull.json").read_text()
    )
    assert (record["outcome"], record["installed"], record["url"]) == ("pulled", 2, url)


def test_where_a_zoo_is_published():
    key = "0123456789abcdef"
    for remote in (
        "https://github.com/someone/ropebook.git",
        "git@github.com:someone/ropebook.git",
    ):
        location = zoo_archive.github_location(remote)
        assert location == "https://github.com/someone/ropebook/releases/download/zoo"
        assert zoo_archive.archive_url(location, "cpu", key) == f"{location}/zoo-cpu-{key}.tar"
    assert zoo_archive.github_location("https://gitlab.com/someone/ropebook.git") is None
    assert (
        zoo_archive.archive_url("http://h/z/{profile}/{key}.tar", "gpu", key)
        == f"http://h/z/gpu/{key}.tar"
    )
    assert zoo_archive.archive_url("http://h/a.tar", "gpu", key) == "http://h/a.tar"


# ------------------------------------------------------------------ a chapter on a pulled zoo


def fresh_cache(root: Path) -> dict[str, str]:
    """An empty ``ROPEBOOK_CACHE`` sharing the compiled kernel and JAX's compilation cache."""
    root.mkdir(parents=True, exist_ok=True)
    for folder in ("kernels", "jax"):
        (Path(CACHE_DIR) / folder).mkdir(parents=True, exist_ok=True)
        (root / folder).symlink_to(Path(CACHE_DIR).resolve() / folder)
    return {"ROPEBOOK_CACHE": str(root)}


def run_layouts(cache: Path, executed: Path) -> Path:
    env = os.environ | fresh_cache(cache) | {"ROPEBOOK_EXECUTED": str(executed)}
    result = subprocess.run(
        [sys.executable, "-m", "ropebook", "run", "layouts", "--profile", "smoke"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return executed / "layouts.ipynb"


@pytest.mark.slow
def test_a_chapter_on_a_pulled_zoo_trains_nothing(tmp_path):
    run_layouts(tmp_path / "a", tmp_path / "executed-a")  # trains the chapter's smoke models
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(zoo, "CACHE_DIR", tmp_path / "a")
        jobs = list(zoo_archive.cached_jobs("smoke").values())
        done = zoo_archive.publish("smoke", tmp_path / "site", jobs=jobs)
        handler = functools.partial(
            http.server.SimpleHTTPRequestHandler, directory=tmp_path / "site"
        )
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        patch.setattr(zoo, "CACHE_DIR", tmp_path / "b")
        url = f"http://127.0.0.1:{httpd.server_port}/{done.archive.name}"
        pulled = zoo_archive.pull(url, "smoke", progress=False)
        httpd.shutdown()
    assert len(pulled.installed) == len(jobs) == done.models > 0
    installed = cache_files(tmp_path / "b" / "zoo")
    page = run_layouts(tmp_path / "b", tmp_path / "executed-b")
    # training nothing: no model folder appeared, and none of the installed files changed
    assert cache_files(tmp_path / "b" / "zoo") == installed
    assert {p.name for p in (tmp_path / "b" / "zoo").iterdir()} == set(pulled.installed)
    notebook = json.loads(page.read_text())
    used = notebook["metadata"]["ropebook"]["models"]
    assert len(used) == len(jobs) and all(m["origin"]["archive"] == done.archive.name for m in used)
    provenance = json.dumps(notebook["cells"][-1]["outputs"])
    assert f"Models: {len(jobs)} downloaded ({done.archive.name}, published" in provenance
    assert "0 trained here" in provenance


def test_the_build_page_says_what_was_downloaded(tmp_path):
    from ropebook import buildrecord
    from ropebook.present import build as page

    build = "make, started 2026-12-01 10:00:00 UTC"
    common = {"format": buildrecord.FORMAT, "build": build, "finished": "2026-12-01 10:05:00 UTC"}
    pulled = {"profile": "cpu", "url": "http://h/zoo-cpu-0123456789abcdef.tar", "installed": 190,
              "present": 8, "skipped": 3, "outcome": "pulled", "seconds": 95.0,
              "archive": "zoo-cpu-0123456789abcdef.tar", "published": "2026-11-30 09:00:00 UTC"}  # fmt: skip
    zoo_record = {"profile": "cpu", "workers": 2, "regimes": [
        {"regime": "lesson", "trained": 3, "cached": 198, "downloaded": 190, "seconds": 60.0,
         "estimated": 70.0}]}  # fmt: skip
    stage = {"stage": "zoo", "seconds": 70.0, "command": ["make"]}
    for name, record in (("zoo-pull", pulled), ("zoo", zoo_record), ("stage-zoo", stage)):
        (tmp_path / f"{name}.json").write_text(json.dumps(record | common))
    records = page.load(tmp_path, build)
    assert page.pull_text(records) == (
        "Pulled (this build, 2 min) from `http://h/zoo-cpu-0123456789abcdef.tar`: "
        "zoo-cpu-0123456789abcdef.tar, published 2026-11-30 09:00:00 UTC; 190 models downloaded "
        "and installed, 8 already in the cache, 3 skipped (not this checkout's specs). "
        "Downloaded models count as cached below."
    )
    assert page.zoo_rows(records)[0]["downloaded"] == 190
    (row,) = [r for r in page.stage_rows(records) if r["stage"] == "zoo"]
    assert (
        row["what it did"]
        == "cpu profile: 3 trained, 198 cached (190 of them downloaded), on 2 worker processes"
    )
    offline = {"profile": "cpu", "outcome": "unreachable", "line": "no zoo pulled: cannot reach x"}
    (tmp_path / "zoo-pull.json").write_text(json.dumps(offline | common))
    assert page.pull_text(page.load(tmp_path, build)) == (
        "No published zoo was pulled (this build): no zoo pulled: cannot reach x."
    )
