"""``python -m bench NAME [--quick] [--cv]``: run one benchmark.

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
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("name", choices=sorted(BENCHES))
    parser.add_argument("--quick", action="store_true", help="small data, under a minute")
    parser.add_argument(
        "--cv",
        action="store_true",
        help="locomo-history: choose the ranking's constants by leave-one-conversation-out",
    )
    args = parser.parse_args(argv)
    if args.cv and args.name != "locomo-history":
        parser.error("--cv is for locomo-history")
    module = "bench.locomo_cv" if args.cv else BENCHES[args.name]
    figures = importlib.import_module(module).run(quick=args.quick)
    sys.stdout.flush()
    print(json.dumps({"bench": args.name, "quick": args.quick, **figures}, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
