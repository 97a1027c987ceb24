"""Token administration: `python -m zocrates_gateway.admin <command>`.

ensure-local-token              print the local user's token (created on first use; kept in
                                <data_dir>/local-token, mode 0600, for `make run`'s banner)
token create --user ID [--label TEXT] [--days N]   create a token; it is shown once
token revoke TOKEN_ID           revoke a token (it stops working at once)
token list                      list tokens (ids, users, labels, state; never secrets)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from datetime import UTC, datetime, timedelta

import nats

from zocrates_contracts import is_valid_id
from zocrates_contracts.subjects import TOKENS_BUCKET
from zocrates_gateway.adapters.tokens import TokenStore, parse_token
from zocrates_gateway.config import GatewaySettings
from zocrates_runtime import stores


async def open_store(settings: GatewaySettings) -> tuple[nats.NATS, TokenStore]:
    options = {}
    if settings.nats_creds_file:
        options["user_credentials"] = str(settings.nats_creds_file)
    if settings.nats_user:
        options["user"] = settings.nats_user
        options["password"] = settings.nats_password.get_secret_value() if settings.nats_password else ""
    try:
        nc = await nats.connect(settings.nats_url.split(","), connect_timeout=3, max_reconnect_attempts=1, **options)
    except Exception as exc:  # noqa: BLE001
        raise SystemExit(
            f"error: cannot reach NATS at {settings.nats_url} ({exc}). "
            "Hint: start the stack with `make run`, or set ZOCRATES_NATS_URL."
        ) from None
    js = nc.jetstream()
    kv = await stores.key_value(js, TOKENS_BUCKET, settings.stream_replicas)
    return nc, TokenStore(kv, settings.token_pepper.get_secret_value())


async def ensure_local_token(settings: GatewaySettings) -> str:
    path = settings.data_dir / "local-token"
    nc, store = await open_store(settings)
    try:
        if path.exists():
            token = path.read_text().strip()
            principal = await store.verify(token)
            if principal is not None and principal.user_id == settings.local_user_id:
                return token
        token = await store.create(settings.local_user_id, label="local (make run)")
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(token + "\n")
        return token
    finally:
        await nc.close()


async def run(args: argparse.Namespace) -> int:
    settings = GatewaySettings()
    if args.command == "ensure-local-token":
        print(await ensure_local_token(settings))
        return 0
    nc, store = await open_store(settings)
    try:
        if args.action == "create":
            if not is_valid_id(args.user):
                print(f"error: user id {args.user!r} must be 1-64 of A-Z a-z 0-9 _ -", file=sys.stderr)
                return 2
            expires = datetime.now(UTC) + timedelta(days=args.days) if args.days else None
            token = await store.create(args.user, label=args.label, expires_at=expires)
            print(f"Token for {args.user} (shown once; store it now):", file=sys.stderr)
            print(token)
        elif args.action == "revoke":
            token_id = parse_token(args.token_id)[0] if parse_token(args.token_id) else args.token_id
            if not await store.revoke(token_id):
                print(f"error: no token with id {token_id}", file=sys.stderr)
                return 1
            print(f"revoked {token_id}")
        else:
            for row in await store.list():
                state = "revoked" if row.get("revoked") else "active"
                print(
                    f"{row['token_id']}  {row['user_id']:<20} {state:<8} {row.get('label', '')}  "
                    f"created {row['created_at'][:19]}  expires {(row.get('expires_at') or 'never')[:19]}"
                )
    finally:
        await nc.close()
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m zocrates_gateway.admin",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("ensure-local-token", help="print (creating if needed) the local user's token")
    token = sub.add_parser("token", help="create, revoke or list tokens")
    actions = token.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create")
    create.add_argument("--user", required=True)
    create.add_argument("--label", default="")
    create.add_argument("--days", type=int, default=0, help="expire after N days (default: never)")
    revoke = actions.add_parser("revoke")
    revoke.add_argument("token_id", help="the token id (or the whole token)")
    actions.add_parser("list")
    return p


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(run(parser().parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
