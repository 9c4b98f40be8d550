"""Command line of `buildtool`: each subcommand lives in the module that does the work."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

# subcommand module -> it defines `register(subparsers)`, which sets `func` on its parsers
SUBCOMMAND_MODULES: tuple[str, ...] = ("buildtool.cache.cli", "buildtool.images.cli")


def _unavailable(subparsers: Any, module: str, error: ImportError) -> None:
    """A subcommand whose module cannot import (e.g. no docker SDK inside a bare image build,
    where only `cache-build` is needed): the others keep working, this one says why."""
    name = module.removeprefix("buildtool.").removesuffix(".cli")

    def fail(_args: argparse.Namespace) -> int:
        print(f"buildtool {name}: unavailable, {module} failed to import: {error}", file=sys.stderr)
        return 2

    stub = subparsers.add_parser(name, help=f"(unavailable: {error})")
    stub.add_argument("rest", nargs=argparse.REMAINDER)
    stub.set_defaults(func=fail)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="buildtool", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError as error:
            _unavailable(subparsers, name, error)
            continue
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    return func(args)
