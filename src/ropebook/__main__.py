"""Command line: ``python -m ropebook {run,proofs,data,zoo,check-site,analyse,layers,recipes,layout_language,layout_ratio,table2_study,decay_study,decay_training_study,pe_zoo_study,apostrophe_study,head_share_study,checkpoint_apostrophe_study,task_study,matched_study,verdicts,machine,stage} ...``."""

from __future__ import annotations

import argparse
import json
import sys


def _run(args: argparse.Namespace) -> int:
    from ropebook import pipeline, workers

    parameters = dict(args.param or [])
    if args.chapter == "all":
        if parameters:
            raise pipeline.ChapterError("-p applies to one chapter; use --profile with 'run all'")
        paths = pipeline.run_all(
            args.profile, force=args.force, jobs=workers.count(args.jobs, flag="--jobs")
        )
    else:
        paths = [pipeline.run_chapter(args.chapter, parameters, profile=args.profile)]
    for path in paths:
        print(f"executed: {path}")
    return 0


def _machine(args: argparse.Namespace) -> int:
    """Record this machine, the versions, the lesson model's training speed measured now and the
    attention path it takes (``machine.json``, :mod:`ropebook.buildrecord`), and print them."""
    import jax

    from ropebook import buildplan, buildrecord, pipeline, zoo

    model_config, train_config = zoo.configs("rope", profile=args.profile, regime="lesson")
    item = buildplan.Item("lesson", False, model_config, train_config)
    rate = buildplan.measure_rates({item.shape: item}, steps=args.steps)[item.shape]
    tokens = train_config.batch_size * train_config.seq_len
    earlier = buildrecord.earlier_benchmarks(buildrecord.read("machine"))
    record = {
        **buildrecord.machine(),
        "devices": sorted({f"{d.platform}:{d.device_kind}" for d in jax.devices()}),
        "device_count": len(jax.devices()),
        "versions": pipeline.package_versions(),
        "benchmark": {
            "model": f"rope, {args.profile} profile, lesson regime",
            "profile": args.profile,  # what ropebook.seedplan.machine_speedup reads
            "batch": [train_config.batch_size, train_config.seq_len],
            "steps": args.steps,
            "step_seconds": rate.step_seconds,
            "tokens_per_second": tokens / rate.step_seconds,
            # every part's reading of a resumed build (the build page takes the fastest)
            "parts": [*earlier, tokens / rate.step_seconds],
        },
        "attention": _attention_path(model_config, train_config),
    }
    path = buildrecord.write("machine", record)
    print(json.dumps(record, indent=2))
    print(f"recorded: {path}")
    return 0


def _attention_path(model_config, train_config) -> dict:
    """The attention path the lesson model's training step takes here, and why
    (:func:`ropebook.attention.decision`; ``auto``'s measured decision with its timings)."""
    from ropebook import attention

    shape = (train_config.batch_size, train_config.seq_len, model_config.n_heads,
             model_config.head_dim)  # fmt: skip
    has_bias = model_config.encoding_config.has_bias
    chosen = attention.decision(shape, model_config.dtype, bias=has_bias)
    record = {"path": chosen.path, "reason": chosen.reason}
    return record | ({"seconds": chosen.choice.seconds} if chosen.choice else {})


def _stage(argv: list[str]) -> int:
    """``stage NAME -- command...``: run the command and record its time; ``stage --begin
    PROFILE`` opens (or resumes) a ``make book`` build, ``stage --end`` closes it."""
    from ropebook import buildrecord

    if argv[:1] == ["--begin"] and len(argv) == 2 or argv == ["--end"]:
        state = buildrecord.begin(argv[1]) if argv[0] == "--begin" else buildrecord.end()
        parts = len(state["parts"])
        print(f"build {state['name']} ({state['profile']} profile): "
              + ("complete" if state["complete"] else "new" if parts == 1 else f"resumed, part {parts}"))  # fmt: skip
        return 0
    name, *rest = argv or [""]
    command = rest[1:] if rest[:1] == ["--"] else rest
    if name not in buildrecord.STAGES or not command:
        print(f"usage: python -m ropebook stage {{{','.join(buildrecord.STAGES)}}} -- command...",
              file=sys.stderr)  # fmt: skip
        return 2
    return buildrecord.run_stage(name, command)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["stage"]:  # before argparse: the command's own options are not ours
        return _stage(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m ropebook", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="execute a chapter (or 'all') with papermill")
    run.add_argument("chapter", help="chapter name, e.g. rope_basics, or 'all'")
    run.add_argument(
        "-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
        help="set a parameter of the chapter's parameters cell (repeatable)",
    )  # fmt: skip
    run.add_argument("--profile", choices=("smoke", "cpu", "gpu"), default=None)
    run.add_argument("--force", action="store_true", help="with 'all': re-run up-to-date chapters")
    run.add_argument(
        "--jobs", default="1", metavar="N|auto",
        help="with 'all': run N chapters at a time, each in its own process (auto: one per core "
        "on a CPU, 1 on a GPU); the summaries run last",
    )  # fmt: skip
    run.set_defaults(handler=_run)

    machine = commands.add_parser(
        "machine", help="record this machine, versions and the lesson model's tokens/s (~30 s)"
    )
    machine.add_argument(
        "--profile",
        choices=("smoke", "cpu", "gpu"),
        default="cpu",
        help="whose lesson model to time (default cpu: the book's reference)",
    )
    machine.add_argument("--steps", type=int, default=10, help="training steps timed")
    machine.set_defaults(handler=_machine)
    commands.add_parser("stage", help="stage NAME -- command...: run and time a make book stage")

    for name, module, text in (
        ("proofs", "proofs", "check every registered sympy statement"),
        ("data", "data", "fetch, verify and tokenise the corpora"),
        ("zoo", "zoo_command", "train (or load from cache) every zoo model of a profile"),
        ("check-site", "sitecheck", "check a built site for external assets and error outputs"),
        ("analyse", "analyse", "frequency-usage figures and a summary for a local checkpoint"),
        ("layers", "rope_layers", "what a config rotates, layer by layer (no weights)"),
        ("recipes", "recipes", "train the recipe candidates on paired seeds, write their results"),
        (
            "layout_language",
            "layout_language",
            "train the production layouts on language, write their results",
        ),
        ("layout_ratio", "layout_ratio", "train Gemma's layouts at 5:1, write their results"),
        ("table2_study", "table2_study", "train Table 2 on many lesson seeds, write their results"),
        ("decay_study", "decay_study", "measure trained decay on many lesson seeds, write it"),
        (
            "decay_training_study",
            "decay_training_study",
            "follow decay over training on many flagship seeds, write it",
        ),
        ("pe_zoo_study", "pe_zoo_study", "measure the PE zoo's growth on many seeds, write it"),
        (
            "apostrophe_study",
            "apostrophe_study",
            "find the apostrophe head on many seeds, write it",
        ),
        (
            "head_share_study",
            "head_share_study",
            "measure each head's fastest-band share on many lesson seeds, write it",
        ),
        (
            "checkpoint_apostrophe_study",
            "checkpoint_apostrophe_study",
            "find SmolLM2's apostrophe head on many held-out windows, write it",
        ),
        ("task_study", "task_study", "read two task findings on many task seeds, write them"),
        (
            "matched_study",
            "matched_study",
            "train Table 2 orderings in the matched regime on many seeds, write them",
        ),
        ("verdicts", "verdict_record", "what changed against the kept verdicts; --keep keeps them"),
    ):
        sub = commands.add_parser(name, help=text, add_help=False)
        sub.set_defaults(module=module)

    args, rest = parser.parse_known_args(argv)
    if hasattr(args, "module"):
        from importlib import import_module

        return import_module(f"ropebook.{args.module}").main(rest)
    if rest:
        parser.error(f"unrecognised arguments: {' '.join(rest)}")
    from ropebook.pipeline import ChapterError

    try:
        return args.handler(args)
    except ChapterError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
