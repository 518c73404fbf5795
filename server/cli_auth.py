"""``agent-memory token …`` and ``agent-memory policy …``: principals, tokens, policies.

Every command opens the configured database (the embedded one when no URL is
set), does its work in one transaction, and prints what it did. A token is
printed once, when it is created.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncSession

T = TypeVar("T")
_DURATION = re.compile(r"(\d+)([dhm])")


def _in_session(work: Callable[[AsyncSession], Awaitable[T]], *, url: URL | None = None) -> T:
    """Run ``work`` in one committed transaction on the configured database."""
    from server.database import Database
    from server.settings import Settings

    database = Database(Settings(), url=url, warn_role=False)

    async def run() -> T:
        if url is None:
            database.resolve_url(create=False)
        await database.connect()
        try:
            async with database.session() as db:
                result = await work(db)
                await db.commit()
                return result
        finally:
            await database.dispose()

    try:
        return asyncio.run(run())
    finally:
        if url is None:
            database.stop()


def _expiry(args: argparse.Namespace) -> datetime | None:
    if args.expires_at:
        moment = datetime.fromisoformat(args.expires_at)
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    if args.expires_in:
        match = _DURATION.fullmatch(args.expires_in)
        if match is None:
            raise SystemExit("--expires-in takes a number and d, h or m, e.g. 30d")
        unit = {"d": "days", "h": "hours", "m": "minutes"}[match.group(2)]
        return datetime.now(UTC) + timedelta(**{unit: int(match.group(1))})
    return None


def _describe(principal: Any) -> str:
    bound = principal.agent_id or principal.namespace or "-"
    expires = principal.expires_at.isoformat(timespec="seconds") if principal.expires_at else "-"
    revoked = principal.revoked_at.isoformat(timespec="seconds") if principal.revoked_at else "-"
    return (
        f"{principal.id}  {principal.token_prefix}…  {principal.kind:<7}  {principal.name}  "
        f"bound={bound}  expires={expires}  revoked={revoked}"
    )


def cmd_token_create(args: argparse.Namespace) -> int:
    from server.services import auth
    from server.services.policies import find_agent

    expires_at = _expiry(args)

    async def create(db: AsyncSession) -> auth.IssuedToken:
        agent = (
            await find_agent(db, ref=args.agent, namespace=args.namespace) if args.agent else None
        )
        return await auth.create_principal(
            db,
            kind=args.kind,
            name=args.name,
            namespace=args.namespace,
            agent_id=agent.id if agent is not None else None,
            expires_at=expires_at,
        )

    issued = _in_session(create)
    if args.quiet:
        print(issued.token)
        return 0
    print(f"token: {issued.token}")
    print(_describe(issued.principal))
    print("Store the token now: it is not shown again.", file=sys.stderr)
    return 0


def cmd_token_list(args: argparse.Namespace) -> int:
    from server.services import auth

    for principal in _in_session(lambda db: auth.list_principals(db, include_revoked=args.all)):
        print(_describe(principal))
    return 0


def cmd_token_revoke(args: argparse.Namespace) -> int:
    from server.services import auth

    principal = _in_session(lambda db: auth.revoke_principal(db, ref=args.token))
    print(f"revoked {_describe(principal)}")
    return 0


def _subject(args: argparse.Namespace) -> tuple[str, str]:
    for kind in ("principal", "agent", "tool"):
        value = getattr(args, kind)
        if value:
            return kind, str(value)
    raise SystemExit("name one of --principal, --agent or --tool")


def cmd_policy(args: argparse.Namespace) -> int:
    from server.services import policies

    ns, name = args.namespace, args.name
    if args.action == "create":
        _in_session(lambda db: policies.create_policy(db, namespace=ns, name=name))
        print(f"created policy {ns}/{name}")
    elif args.action == "delete":
        _in_session(lambda db: policies.delete_policy(db, namespace=ns, name=name))
        print(f"deleted policy {ns}/{name}")
    elif args.action in ("grant", "revoke"):
        change = policies.add_grant if args.action == "grant" else policies.remove_grant
        _in_session(
            lambda db: change(
                db, namespace=ns, name=name, privilege=args.privilege, pattern=args.pattern
            )
        )
        verb = "granted" if args.action == "grant" else "revoked"
        print(f"{ns}/{name}: {verb} {args.privilege} {args.pattern}")
    else:
        subject_type, subject = _subject(args)
        link = policies.bind if args.action == "bind" else policies.unbind
        _in_session(
            lambda db: link(db, namespace=ns, name=name, subject_type=subject_type, subject=subject)
        )
        print(f"{ns}/{name}: {args.action} {subject_type} {subject}")
    return 0


def cmd_policy_list(args: argparse.Namespace) -> int:
    from server.services import policies

    for view in _in_session(lambda db: policies.list_policies(db, namespace=args.namespace)):
        print(f"{view.policy.namespace}/{view.policy.name}")
        for grant in view.grants:
            print(f"  grant {grant.privilege} {grant.pattern}")
        for binding in view.bindings:
            print(f"  bound to {binding.subject_type} {binding.subject}")
    return 0


def add_parsers(sub: Any) -> None:
    """Add ``token`` and ``policy`` to the ``agent-memory`` command."""
    token = sub.add_parser("token", help="create, list or revoke API tokens")
    tsub = token.add_subparsers(dest="action", required=True)
    create = tsub.add_parser("create", help="issue a token (printed once)")
    create.add_argument(
        "--kind",
        required=True,
        choices=("admin", "client", "runtime"),
        help="admin: everything; client: a dashboard or application; runtime: an agent's runtime",
    )
    create.add_argument("--name", required=True, help="a label for the token's holder")
    create.add_argument("--namespace", help="the namespace a runtime (or client) serves")
    create.add_argument("--agent", help="the agent (id, or name) a runtime acts for")
    create.add_argument("--expires-in", help="e.g. 30d, 12h, 90m")
    create.add_argument("--expires-at", help="an ISO 8601 time")
    create.add_argument("--quiet", action="store_true", help="print the token only")
    create.set_defaults(func=cmd_token_create)
    lst = tsub.add_parser("list", help="list tokens (prefix only)")
    lst.add_argument("--all", action="store_true", help="include revoked tokens")
    lst.set_defaults(func=cmd_token_list)
    revoke = tsub.add_parser("revoke", help="revoke a token by id or prefix")
    revoke.add_argument("token", help="the token's id or prefix")
    revoke.set_defaults(func=cmd_token_revoke)

    policy = sub.add_parser("policy", help="create policies, grant privileges, bind them")
    psub = policy.add_subparsers(dest="action", required=True)
    for action, text in (("create", "create a policy"), ("delete", "delete a policy")):
        p = psub.add_parser(action, help=text)
        _policy_arguments(p)
        p.set_defaults(func=cmd_policy)
    for action, text in (("grant", "grant a privilege"), ("revoke", "remove a grant")):
        p = psub.add_parser(action, help=f"{text} on a resource pattern")
        _policy_arguments(p)
        p.add_argument(
            "privilege", choices=("SELECT", "INSERT", "UPDATE", "DELETE"), help="the privilege"
        )
        p.add_argument("pattern", help="e.g. financial.AgentMemory.indexes.*")
        p.set_defaults(func=cmd_policy)
    for action in ("bind", "unbind"):
        p = psub.add_parser(action, help=f"{action} a policy to a principal, agent or tool")
        _policy_arguments(p)
        group = p.add_mutually_exclusive_group(required=True)
        group.add_argument("--principal", help="token id or prefix (the client link)")
        group.add_argument("--agent", help="agent id or name (the execution link)")
        group.add_argument("--tool", help="tool name (the tool link)")
        p.set_defaults(func=cmd_policy)
    plist = psub.add_parser("list", help="list policies with grants and bindings")
    plist.add_argument("--namespace", help="only this namespace's policies")
    plist.set_defaults(func=cmd_policy_list)


def _policy_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("namespace", help="the policy's namespace")
    parser.add_argument("name", help="the policy's name")


def print_dev_admin_token(url: URL, base: str | None = None) -> None:
    """Dev mode, first start: issue and print an admin token if no admin exists, bound to
    the dev policy that reads every namespace's sessions and memory, and the links of the
    dashboard and GraphiQL that fill it in (in the URL fragment, which browsers never
    send). Later starts print the links alone."""
    from server.services import auth, policies

    async def issue(db: AsyncSession) -> auth.IssuedToken | None:
        issued = await auth.ensure_admin(db, name="dev admin")
        if issued is not None:
            await policies.grant_dev_reads(db, principal_id=issued.principal.id)
        return issued

    issued = _in_session(issue, url=url)
    if issued is None:
        if base:
            print(
                f"\n  agent-memory dev mode: the dashboard is at {base}/dashboard and GraphiQL "
                f"at {base}/graphql\n  (the admin token was printed at the first start; "
                "`.venv/bin/agent-memory token create --kind admin --name me` makes another)\n",
                flush=True,
            )
        return
    namespace, name = policies.DEV_READER
    fragment = f"#token={issued.token}"
    print(
        "\n  agent-memory dev mode: an admin token was created (shown once)\n"
        f"    Authorization: Bearer {issued.token}\n"
        f"  It manages agents and, through the dev policy {namespace}/{name} (SELECT on *), "
        "reads every namespace's sessions and memory.\n"
        + (
            f"  Dashboard with it: {base}/dashboard{fragment}\n"
            f"  GraphiQL with it:  {base}/graphql{fragment}\n"
            if base
            else ""
        ),
        flush=True,
    )
