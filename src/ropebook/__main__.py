"""Command line: ``python -m ropebook {run,proofs,data,zoo,check-site,analyse} ...``."""

from __future__ import annotations

import argparse
import sys


def _run(args: argparse.Namespace) -> int:
    from ropebook import pipeline

    parameters = dict(args.param or [])
    if args.chapter == "all":
        if parameters:
            raise pipeline.ChapterError("-p applies to one chapter; use --profile with 'run all'")
        paths = pipeline.run_all(args.profile, force=args.force)
    else:
        paths = [pipeline.run_chapter(args.chapter, parameters, profile=args.profile)]
    for path in paths:
        print(f"executed: {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
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
    run.set_defaults(handler=_run)

    for name, module, text in (
        ("proofs", "proofs", "check every registered sympy statement"),
        ("data", "data", "fetch, verify and tokenise the corpora"),
        ("zoo", "zoo", "train (or load from cache) every zoo model of a profile"),
        ("check-site", "sitecheck", "check a built site for external assets and error outputs"),
        ("analyse", "analyse", "frequency-usage figures and a summary for a local checkpoint"),
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
