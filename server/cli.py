"""The ``agent-memory`` command: serve, migrate, schema, database helpers, tokens and policies."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import warnings


def _settings(args: argparse.Namespace) -> object:
    from server.settings import Settings

    overrides = {k: v for k, v in vars(args).items() if k in ("host", "port") and v is not None}
    return Settings(**overrides)


def cmd_serve(args: argparse.Namespace) -> int:
    """Take the port, start (or reach) PostgreSQL, check it, migrate, serve. SIGTERM
    stops uvicorn gracefully and then the embedded PostgreSQL (docs/operations.md,
    "Signals")."""
    import uvicorn

    from server import migrate
    from server.app import create_app
    from server.database import Database
    from server.settings import Settings
    from server.startup import listen

    settings = _settings(args)
    assert isinstance(settings, Settings)
    listener = listen(settings.host, settings.port)
    database = Database(settings)
    # uvicorn re-raises the signal it caught once it has shut down; by default that
    # would end the process (or raise KeyboardInterrupt) before PostgreSQL is stopped
    signal.signal(signal.SIGTERM, _exit_cleanly)
    signal.signal(signal.SIGINT, _exit_cleanly)
    try:
        url = database.resolve_url()
        database.check()  # pgvector before migrating
        if not args.no_migrate:
            migrate.upgrade(url)
            if migrate.on_citus(url):  # a release's new tables placed as the others
                migrate.distribute(url)
        if settings.dev:
            from server.cli_auth import print_dev_admin_token

            print_dev_admin_token(url, base=f"http://{settings.host}:{settings.port}")
        workers = args.workers or settings.workers or 1
        host, port = listener.getsockname()[:2]
        if workers == 1:
            # said once the model is loaded and requests are answered, not before
            app = create_app(settings, database=database, address=f"http://{host}:{port}")
            config = uvicorn.Config(
                app, log_level=settings.log_level, log_config=None, access_log=False
            )
            uvicorn.Server(config).run(sockets=[listener])
        else:
            _serve_processes(url.render_as_string(hide_password=False), workers, listener)
    finally:
        database.stop()
        listener.close()
    return 0


def _serve_processes(url: str, workers: int, listener: socket.socket) -> None:
    """``workers`` processes answer on ``listener``, each with its own app, connection
    pool and model (:func:`server.app.from_environment`), against the database this one
    resolved and migrated. uvicorn's supervisor starts them, replaces one that dies, and
    on SIGTERM or SIGINT stops them all and returns."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from server.settings import Settings

    os.environ["AGENT_MEMORY_DATABASE_URL"] = url
    os.environ["AGENT_MEMORY_WORKERS"] = str(workers)
    config = uvicorn.Config(
        "server.app:from_environment",
        factory=True,
        workers=workers,
        log_level=Settings().log_level,
        log_config=None,
        access_log=False,
        # the supervisor kills a process that does not answer its ping in time: on a
        # machine short of CPU, 5 s (uvicorn's default) killed busy ones mid-request
        timeout_worker_healthcheck=60,
    )
    Multiprocess(config, sockets=[listener]).run()


def _exit_cleanly(signum: int, frame: object) -> None:
    raise SystemExit(0)


def cmd_migrate(args: argparse.Namespace) -> int:
    """Upgrade, or downgrade; a downgrade that would destroy data is refused, naming it,
    with nothing changed, unless ``--force`` (server/migrate.py)."""
    from server import migrate
    from server.database import Database
    from server.settings import Settings
    from server.startup import check_database

    down = args.down or (args.revision or "").startswith("-")
    if down and args.citus:
        print(
            "migrate --citus places an upgraded schema on Citus; it does not go down",
            file=sys.stderr,
        )
        return 2
    if down and args.revision is None:
        print(
            "migrate --down needs the revision to go down to: -1 for one step, "
            "base for an empty database, or a revision id",
            file=sys.stderr,
        )
        return 2
    revision = args.revision or "head"
    database = Database(Settings())
    url = database.resolve_url()
    try:
        check_database(url)  # pgvector before migrating
        if down:
            migrate.downgrade(url, revision, force=args.force)
        else:
            migrate.upgrade(url, revision)
            citus = args.citus or migrate.on_citus(url)
            placed = migrate.distribute(url) if citus else []
    finally:
        database.stop()
    print(f"migrated to {revision}")
    if not down and citus:
        print(f"on Citus: placed {', '.join(placed)}" if placed else "on Citus: all placed already")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from pathlib import Path

    from resolvers.schema import printed_schema

    text = printed_schema()
    if args.check:
        current = Path(args.output).read_text() if Path(args.output).exists() else ""
        if current != text:
            print(
                f"{args.output} differs from the schema the code builds; run `make schema`",
                file=sys.stderr,
            )
            return 1
        return 0
    Path(args.output).write_text(text)
    print(f"wrote {args.output}")
    return 0


def cmd_db_url(args: argparse.Namespace) -> int:
    """Start the embedded database (if used) and print its URL, e.g. for psql."""
    from server.database import Database
    from server.settings import Settings

    database = Database(Settings())
    print(database.resolve_url(create=False).render_as_string(hide_password=False))
    return 0


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value} is not 1 or more")
    return number


def build_parser() -> argparse.ArgumentParser:
    from server.cli_auth import add_parsers

    parser = argparse.ArgumentParser(
        prog="agent-memory",
        description="Long-term memory and searchable session history for LLM agents, "
        "served as GraphQL. Settings come from AGENT_MEMORY_* variables and DATABASE_URL "
        "(docs/operations.md).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="migrate and serve the GraphQL API")
    serve.add_argument("--host", help="address to listen on (default AGENT_MEMORY_HOST)")
    serve.add_argument("--port", type=int, help="port to listen on (default AGENT_MEMORY_PORT)")
    serve.add_argument(
        "--no-migrate", action="store_true", help="do not upgrade the database schema first"
    )
    serve.add_argument(
        "--workers",
        type=_positive,
        help="processes answering requests (default AGENT_MEMORY_WORKERS, else 1; an MCP "
        "session lives in one process: docs/mcp.md)",
    )
    serve.set_defaults(func=cmd_serve)
    mig = sub.add_parser("migrate", help="upgrade (or --down) the database schema")
    mig.add_argument(
        "revision", nargs="?", help="target revision (default: head; required with --down)"
    )
    mig.add_argument("--down", action="store_true", help="downgrade to REVISION")
    mig.add_argument(
        "--force",
        action="store_true",
        help="with --down: downgrade even if it destroys data (refused otherwise, naming it)",
    )
    mig.add_argument(
        "--citus",
        action="store_true",
        help="on a Citus coordinator: then distribute the per-agent tables by agent_id and "
        "copy the global ones to every node, once; later upgrades keep new tables placed "
        "(docs/scaling.md)",
    )
    mig.set_defaults(func=cmd_migrate)
    schema = sub.add_parser("schema", help="write (or --check) schema.graphql")
    schema.add_argument(
        "--output", default="schema.graphql", help="file to write or check (default: %(default)s)"
    )
    schema.add_argument(
        "--check", action="store_true", help="exit 1 if the file differs from the schema"
    )
    schema.set_defaults(func=cmd_schema)
    dburl = sub.add_parser("db-url", help="print the database URL")
    dburl.set_defaults(func=cmd_db_url)
    add_parsers(sub)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agent-memory")
    except PackageNotFoundError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    """Run a command; a misconfiguration or a refused request is one line on stderr
    and exit status 1, never a traceback."""
    from pydantic import ValidationError

    from server import logs
    from server.errors import DomainError
    from server.settings import Settings

    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
    args = build_parser().parse_args(argv)
    try:
        logs.configure(Settings())
        return int(args.func(args))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'settings'}: {e['msg']}" for e in exc.errors()
        )
        print(f"error (INVALID_SETTING): {problems}", file=sys.stderr)
    except DomainError as exc:
        print(f"error ({exc.code}): {exc.message}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
