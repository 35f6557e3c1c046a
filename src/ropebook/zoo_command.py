"""``python -m ropebook zoo``: the zoo's command line (:func:`main`).

Trains (or loads) every model a profile needs, or a chosen few, printing the build plan first
(:mod:`ropebook.buildplan`) and one bar over the whole build; splits the jobs into shards for
several processes or machines (``--shard I/N``) or trains them on one worker process per core
(``--workers``, :func:`ropebook.zoo.train_on_workers`); says which models the cache holds
(``--status``) and prints a key over the models' spec hashes for CI caches (``--key``). What a
model is, and how it is trained and cached, lives in :mod:`ropebook.zoo`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from ropebook import buildplan, buildrecord, checkpoints, tasks, train, workers, zoo, zoo_archive
from ropebook.zoo import Job


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` → ``(I, N)`` with ``0 <= I < N``; ``ValueError`` naming the rule otherwise."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise ValueError(f"shard must look like I/N (e.g. 0/4), got {text!r}") from None
    if not 0 <= index < count:
        raise ValueError(f"shard I/N needs 0 <= I < N, got {text!r}")
    return index, count


def shard_jobs(jobs: list, index: int, count: int) -> list:
    """The ``index``-th of ``count`` disjoint shares of ``jobs``, which together cover them all.

    Round-robin over the job order, so every share gets first seeds first and a similar mix of
    encodings; the same list always splits the same way, in every process and on every machine.
    """
    return jobs[index::count]


def print_status(jobs: list[Job], profile: str, overrides: dict[str, Any]) -> int:
    """``zoo --status``: each job's :func:`cache_state` and a count per state; 0 if all done."""
    rows = [("name", "seed", "domain", "regime", "state", "step", "spec hash")]
    for name, seed, domain, regime in jobs:
        folder = zoo.cache_folder(
            name, seed=seed, profile=profile, domain=domain, regime=regime, **overrides
        )
        state, step = zoo.cache_state(folder)
        _, train_config = zoo.configs(name, seed=seed, profile=profile, regime=regime, **overrides)
        rows.append(
            (name, str(seed), domain, regime, state, f"{step}/{train_config.steps}", folder.name)
        )
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    for row in rows:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
    counts = {s: sum(r[4] == s for r in rows[1:]) for s in dict.fromkeys(r[4] for r in rows[1:])}
    print(f"{len(jobs)} models in {zoo.CACHE_DIR / 'zoo'}: "
          + ", ".join(f"{n} {s}" for s, n in counts.items()))  # fmt: skip
    return 0 if all(r[4] == "done" for r in rows[1:]) else 1


def main(argv: list[str] | None = None) -> int:
    """``python -m ropebook zoo``: train (or load) every model a profile needs, then a table.

    With ``--names``, trains those names on ``--domains`` (default Shakespeare); without, the
    default jobs of :func:`ropebook.zoo.default_jobs`, optionally restricted to ``--domains``. With
    ``--shard I/N``, only the I-th of N disjoint shares of those jobs: N processes (or machines
    sharing one ``ROPEBOOK_CACHE``) train the zoo together, each model exactly once; with
    ``--workers N`` (``auto``: one per core on a CPU) this process starts N such processes itself,
    pinned one per core, sharing the jobs (:mod:`ropebook.workers`). Before
    training it prints the plan, per regime: models cached and to train, and the time estimated
    from a few steps timed here (:mod:`ropebook.buildplan`); one bar runs over the whole build.
    """
    parser = argparse.ArgumentParser(prog="python -m ropebook zoo", description=main.__doc__)
    parser.add_argument("--profile", choices=tuple(zoo.PROFILES), default="cpu")
    parser.add_argument("--names", nargs="+", metavar="NAME", help=f"from: {', '.join(zoo.SPECS)}")
    parser.add_argument("--seeds", nargs="+", type=int, help="default: the profile's seeds")
    parser.add_argument("--domains", nargs="+", choices=(*zoo.DOMAINS, *tasks.TASKS))
    parser.add_argument(
        "--regimes", nargs="+", choices=zoo.REGIMES, help="default: all (or lesson)"
    )
    parser.add_argument("--shard", default="0/1", metavar="I/N", help="train the I-th of N shares")
    parser.add_argument("--steps", type=int, help="train each model this many steps (another spec)")
    parser.add_argument(
        "--workers", default="1", metavar="N|auto",
        help="train on N worker processes, each pinned to one core with one device, sharing the "
        "jobs (auto: one per core on a CPU, 1 on a GPU); see ropebook.workers",
    )  # fmt: skip
    parser.add_argument("--queue", type=Path, help=argparse.SUPPRESS)  # a worker's jobs file
    parser.add_argument(
        "--status", action="store_true",
        help="train nothing: say which models are done, running (lock held), interrupted or "
        "missing in the cache; exit status 0 only if all are done",
    )  # fmt: skip
    parser.add_argument(
        "--key", action="store_true",
        help="train nothing: print one hash of these models' spec hashes (a CI cache key)",
    )  # fmt: skip
    parser.add_argument(
        "--pull", nargs="?", const="", metavar="URL",
        help="train nothing: download the published zoo of this checkout's key (or the archive "
        "at URL), verify it and install the models the cache lacks (ropebook.zoo_archive; "
        f"default place: ${zoo_archive.ZOO_URL_ENV}, else this clone's GitHub release)",
    )  # fmt: skip
    parser.add_argument(
        "--optional", action="store_true",
        help="with --pull: no zoo published, none reachable or one refused is not an error "
        "(one line says so; make book and make run then train what is missing)",
    )  # fmt: skip
    parser.add_argument(
        "--publish", type=Path, metavar="DIR",
        help="train nothing: write this profile's zoo from the cache into DIR as the archive "
        "zoo-<profile>-<key>.tar and its manifest zoo-<profile>-<key>.json",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.queue:
        return zoo.work_queue(args.queue)
    if args.pull is not None:
        return pull(args.profile, args.pull, optional=args.optional)
    if args.publish is not None:
        return publish(args.profile, args.publish)
    overrides = {} if args.steps is None else {"steps": args.steps}
    try:
        shard = parse_shard(args.shard)
        n_workers = workers.count(args.workers)
    except ValueError as error:
        parser.error(str(error))
    if n_workers > 1 and shard != (0, 1):
        parser.error("--workers shares the jobs among processes itself: leave out --shard")
    seeds = tuple(args.seeds) if args.seeds else None
    if args.names:
        seeds = seeds or zoo.PROFILES[args.profile].seeds
        unknown = [name for name in args.names if name not in zoo.ALL_SPECS]
        if unknown:
            parser.error(f"unknown model names {unknown}; valid: {', '.join(zoo.SPECS)}")
        domains, regimes = args.domains or ["shakespeare"], args.regimes or ["lesson"]
        jobs = [(n, s, d, r) for r in regimes for d in domains for n in args.names for s in seeds]
    else:
        jobs = [
            j
            for j in zoo.default_jobs(args.profile, seeds)
            if j[2] in (args.domains or (*zoo.DOMAINS, *tasks.TASKS))
            and j[3] in (args.regimes or zoo.REGIMES)
        ]
    jobs = shard_jobs(jobs, *shard)
    if args.status:
        return print_status(jobs, args.profile, overrides)
    if args.key:
        print(zoo.key(jobs, args.profile, overrides))
        return 0
    start = time.perf_counter()
    items = [_plan_item(*job, args.profile, overrides) for job in jobs]
    chosen = buildplan.probes(items)
    rates = buildplan.measure_rates(chosen)
    how = f"from {buildplan.PROBE_STEPS} training steps of one model per shape, timed now"
    print("\n".join(buildplan.describe(buildplan.plan(items, rates), how=how, shard=args.shard)))
    progress = buildplan.Progress(items, rates)
    batched: dict[Job, float] = {}  # trained before the loop below, with their seconds
    if n_workers > 1:
        batched = _train_on_workers(jobs, items, progress, n_workers, args.profile, overrides)
    elif train.seed_batching():  # seeds trained in one program (ROPEBOOK_SEED_BATCH)
        batched = zoo.train_seed_groups(jobs, args.profile, overrides)
    reported = set(batched) if n_workers > 1 else set()  # the workers' polling moved the bar
    rows = []
    regimes = {p.regime: {"trained": 0, "cached": 0, "downloaded": 0, "seconds": 0.0,
                          "estimated": p.seconds} for p in buildplan.plan(items, rates)}  # fmt: skip
    for i, (job, item) in enumerate(zip(jobs, items, strict=True), 1):
        name, seed, domain, regime = job
        print(f"[{i}/{len(jobs)}] {name} seed={seed} domain={domain} regime={regime}", flush=True)
        began = time.perf_counter()
        m = zoo.load(
            name, seed=seed, profile=args.profile, domain=domain, regime=regime, **overrides
        )
        steps = m.tokens_seen // (item.train_config.batch_size * item.train_config.seq_len)
        trained = m.trained_now or job in batched
        seconds = time.perf_counter() - began + batched.get(job, 0.0)
        if job not in reported:
            progress.done(item, seconds, trained=trained, steps=steps)
        status = "trained" if trained else "cached"
        # trained by this build: here, by a seed group or another shard, or in an earlier part
        # of a resumed make book (its checkpoint's provenance names the build)
        new = not item.cached or trained_by(m.path, buildrecord.current_build())
        regimes[regime]["trained" if new else "cached"] += 1
        # of the cached, those a pull installed (zoo --pull; their origin.json says from where)
        regimes[regime]["downloaded"] += not new and checkpoints.read_origin(m.path) is not None
        regimes[regime]["seconds"] += regime_seconds(seconds, trained, new, m.seconds)
        rows.append(
            (
                name,
                seed,
                domain,
                regime,
                status,
                f"{m.val_ppl:.2f}",
                f"{m.tokens_seen:,}",
                f"{m.seconds:.1f}",
            )
        )
    print("\n".join(progress.close()))
    header = ("name", "seed", "domain", "regime", "status", "val ppl", "tokens", "seconds")
    widths = [max(len(str(r[c])) for r in [header, *rows]) for c in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)))
    print(
        f"{len(rows)} models (shard {args.shard}), {time.perf_counter() - start:.0f} s wall in this call"
    )
    if not (args.names or args.domains or args.regimes or overrides) and shard == (0, 1):
        counts = [{"regime": regime, **n} for regime, n in regimes.items()]
        record = {"profile": args.profile, "regimes": counts, "workers": n_workers}  # build page
        print(f"recorded: {buildrecord.write('zoo', record)}")
    return 0


def regime_seconds(
    seconds: float, trained_now: bool, by_this_build: bool, model_seconds: float
) -> float:
    """What one model adds to its regime's training seconds on the build page: this call's
    ``seconds`` if it trained now; its checkpoint's ``model_seconds`` if this build trained it in
    an earlier part (a resumed make book reloads it, and its time must not read 0); else 0
    (found cached)."""
    if trained_now:
        return seconds
    return model_seconds if by_this_build else 0.0


def trained_by(path: Path, build: str | None) -> bool:
    """Whether any training call of the model in ``path`` ran in ``build``."""
    entries = checkpoints.read_metadata(path).get("provenance", [])
    return build is not None and any(entry.get("build") == build for entry in entries)


def pull(profile: str, url: str, *, optional: bool = False) -> int:
    """``zoo --pull [URL]``: the published zoo of this checkout's key for ``profile`` (or the
    archive at ``url``) verified and installed (:func:`ropebook.zoo_archive.pull`), recorded
    for the build page (``zoo-pull.json``). Exit status 0 when pulled; when nothing could be
    fetched or what was fetched is refused, one line and 1, or 0 with ``optional``."""
    began = time.perf_counter()
    location = url or zoo_archive.default_location()
    record: dict[str, Any] = {"profile": profile}
    if location is None:
        why = (f"{zoo_archive.ZOO_URL_ENV} is empty" if zoo_archive.ZOO_URL_ENV in os.environ
               else f"no {zoo_archive.ZOO_URL_ENV} and no GitHub origin")  # fmt: skip
        line = f"zoo pull off ({why}): models the cache lacks are trained"
        buildrecord.write("zoo-pull", record | {"outcome": "off", "line": line})
        print(line)
        return 0
    needs_key = "{" in location or not location.endswith(".tar")
    address = zoo_archive.archive_url(location, profile, _key(profile) if needs_key else "")
    record["url"] = address
    try:
        pulled = zoo_archive.pull(address, profile)
    except zoo_archive.ZooArchiveError as error:
        unreachable = isinstance(error, zoo_archive.ZooUnreachable)
        then = "; models the cache lacks are trained" if optional else ""
        line = f"{'no zoo pulled' if unreachable else 'zoo refused'}: {error}{then}"
        outcome = "unreachable" if unreachable else "refused"
        buildrecord.write("zoo-pull", record | {"outcome": outcome, "line": line})
        print(line, file=sys.stdout if optional else sys.stderr)
        return 0 if optional else 1
    counts = {k: len(getattr(pulled, k)) for k in ("installed", "present", "skipped")}
    buildrecord.write("zoo-pull", record | counts | {
        "outcome": "pulled", "archive": pulled.archive, "published": pulled.published,
        "seconds": round(time.perf_counter() - began, 1), "line": pulled.summary(),
    })  # fmt: skip
    return 0


def _key(profile: str) -> str:
    return zoo.key(zoo.default_jobs(profile), profile)


def publish(profile: str, out: Path) -> int:
    """``zoo --publish DIR``: :func:`ropebook.zoo_archive.publish`, one line; 1 if refused."""
    try:
        done = zoo_archive.publish(profile, out)
    except zoo_archive.ZooArchiveError as error:
        print(f"not published: {error}", file=sys.stderr)
        return 1
    print(f"published {done.models} models: {done.archive} ({done.size / 1024**2:,.1f} MiB), "
          f"{done.pointer}")  # fmt: skip
    return 0


def _plan_item(
    name: str, seed: int, domain: str, regime: str, profile: str, overrides: dict[str, Any]
) -> buildplan.Item:
    """A job as the build plan sees it: its configs, and whether the cache has it complete."""
    where = dict(seed=seed, profile=profile, regime=regime, **overrides)
    cached = zoo.is_done(zoo.cache_folder(name, domain=domain, **where))
    return buildplan.Item(regime, cached, *zoo.configs(name, **where))


def _train_on_workers(
    jobs: list[Job], items: list[buildplan.Item], progress: buildplan.Progress, n: int,
    profile: str, overrides: dict[str, Any],
) -> dict[Job, float]:  # fmt: skip
    """:func:`ropebook.zoo.train_on_workers`, moving ``progress`` as each model completes."""
    by_job = dict(zip(jobs, items, strict=True))

    def moved(job: Job, meta: dict[str, Any]) -> None:
        config = by_job[job].train_config
        steps = meta["tokens_seen"] // (config.batch_size * config.seq_len)
        progress.done(by_job[job], meta["seconds"] / n, trained=True, steps=steps)

    return zoo.train_on_workers(jobs, profile=profile, n=n, overrides=overrides, on_trained=moved)
