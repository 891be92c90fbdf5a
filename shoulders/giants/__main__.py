"""``python -m shoulders.giants list | export NAME DIR [--scale S] | import DIR``."""
from __future__ import annotations

import argparse
import sys

from .._scale import SCALES
from . import CATALOGUE, cached, export, import_folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shoulders.giants", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the book's giants and where each scale is cached")
    ex = sub.add_parser("export", help="write a giant's folder (trained first if needed) to DIR")
    ex.add_argument("name")
    ex.add_argument("dir")
    ex.add_argument("--scale", choices=SCALES, default=None, help="default: SHOULDERS_SCALE")
    im = sub.add_parser("import", help="check an exported folder and put it into the cache")
    im.add_argument("dir")
    args = parser.parse_args(argv)
    if args.command == "list":
        for name, giant in CATALOGUE.items():
            where = ", ".join(f"{s}: {cached(name, scale=s) or 'not cached'}" for s in SCALES)
            print(f"{name:12} chapter {giant.chapter} -- {giant.title}\n{'':12} {where}")
    elif args.command == "export":
        print(export(args.name, args.dir, scale=args.scale))
    else:
        print(import_folder(args.dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
