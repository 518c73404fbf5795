"""The ``agent-memory`` command: serve, migrate, schema, database helpers, tokens and policies."""

from __future__ import annotations

import argparse
import logging
import sys
import warnings


def _settings(args: argparse.Namespace) -> object:
    from server.settings import Settings

    overrides = {k: v for k, v in vars(args).items() if k in ("host", "port") and v is not None}
    return Settings(**overrides)


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from server import migrate
    from server.app import create_app
    from server.database import Database
    from server.settings import Settings

    settings = _settings(args)
    assert isinstance(settings, Settings)
    database = Database(settings)
    url = database.resolve_url()
    if not args.no_migrate:
        migrate.upgrade(url)
    if settings.dev:
        from server.cli_auth import print_dev_admin_token

        print_dev_admin_token(url, graphiql=f"http://{settings.host}:{settings.port}/graphql")
    app = create_app(settings, database=database)
    try:
        uvicorn.run(
            app, host=settings.host, port=settings.port, log_level=settings.log_level.lower()
        )
    finally:
        database.stop()
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from server import migrate
    from server.database import Database
    from server.settings import Settings

    database = Database(Settings())
    url = database.resolve_url()
    try:
        if args.revision.startswith("-") or args.down:
            migrate.downgrade(url, args.revision)
        else:
            migrate.upgrade(url, args.revision)
    finally:
        database.stop()
    print(f"migrated to {args.revision}")
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
    print(database.resolve_url().render_as_string(hide_password=False))
    return 0


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    parser = argparse.ArgumentParser(prog="agent-memory")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="migrate and serve the GraphQL API")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--no-migrate", action="store_true")
    serve.set_defaults(func=cmd_serve)
    mig = sub.add_parser("migrate", help="upgrade (or --down) the database schema")
    mig.add_argument("revision", nargs="?", default="head")
    mig.add_argument("--down", action="store_true")
    mig.set_defaults(func=cmd_migrate)
    schema = sub.add_parser("schema", help="write (or --check) schema.graphql")
    schema.add_argument("--output", default="schema.graphql")
    schema.add_argument("--check", action="store_true")
    schema.set_defaults(func=cmd_schema)
    dburl = sub.add_parser("db-url", help="print the database URL")
    dburl.set_defaults(func=cmd_db_url)
    from server.cli_auth import add_parsers

    add_parsers(sub)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
