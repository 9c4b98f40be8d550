"""Command line of `buildtool`: each subcommand lives in the module that does the work."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence

# subcommand module -> it defines `register(subparsers)`, which sets `func` on its parsers
SUBCOMMAND_MODULES: tuple[str, ...] = ("buildtool.cache.cli", "buildtool.images.cli")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="buildtool", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    return func(args)
