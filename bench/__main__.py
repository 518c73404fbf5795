"""``python -m bench NAME [--quick] [--cv] [--data DIR]``: run one benchmark.

Each benchmark is a module with ``run(quick: bool) -> dict``: it prints a
readable table as it goes and returns its figures, which are printed here as
the last line, one JSON object. ``--quick`` finishes in under a minute; the
full run in under 20 minutes. Add a benchmark by adding a line to BENCHES.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

# the LoCoMo benches, and the module of each that cross-validates
LOCOMO: dict[str, str] = {"locomo": "bench.locomo_memory_cv", "locomo-history": "bench.locomo_cv"}
BENCHES: dict[str, str] = {
    "search": "bench.search",
    "request-path": "bench.request_path",
    "peers": "bench.peers",
    "locomo": "bench.locomo",
    "history-ingest": "bench.history_ingest",
    "locomo-history": "bench.locomo_history",
    "history-search": "bench.history_search",
    "review": "bench.review",
    "trace": "bench.trace",
    "keywords": "bench.keywords",
    "citus": "bench.citus",
    "embedding": "bench.embedding",
    "mcp": "bench.mcp",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("name", choices=sorted(BENCHES))
    parser.add_argument("--quick", action="store_true", help="small data, under a minute")
    parser.add_argument(
        "--cv",
        action="store_true",
        help="locomo, locomo-history: choose the ranking's constants by nested "
        "leave-one-conversation-out",
    )
    parser.add_argument(
        "--data", type=Path, help="locomo, locomo-history: the folder of conversations"
    )
    args = parser.parse_args(argv)
    if (args.cv or args.data) and args.name not in LOCOMO:
        parser.error("--cv and --data are for locomo and locomo-history")
    module = LOCOMO[args.name] if args.cv else BENCHES[args.name]
    data = {} if args.data is None else {"data": args.data}
    figures = importlib.import_module(module).run(quick=args.quick, **data)
    sys.stdout.flush()
    print(json.dumps({"bench": args.name, "quick": args.quick, **figures}, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
