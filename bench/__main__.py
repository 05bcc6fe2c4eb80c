"""Run every benchmark module in this package (each exposes ``main()``), or the ones named."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    names = argv or sorted(
        m.name
        for m in pkgutil.iter_modules([str(Path(__file__).parent)])
        if not m.name.startswith("_")
    )
    if not names:
        print("no benchmarks yet")
        return 0
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        print(f"== bench.{name}")
        module.main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
