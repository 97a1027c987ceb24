"""Container health check: exit 0 when this service is ready, 1 otherwise (Docker HEALTHCHECK).

Which service is read from `SERVICE_MODULE` (set by the image), and how to reach it from the
same `ZOCRATES_*` variables the service reads:
- gateway: `GET /health` on its own HTTP port (liveness, no token needed);
- verifier: `GET /health` on its `/v1/systemone` HTTP port (up once the model is loaded), or
  the bus probe below when `ZOCRATES_VERIFIER_HTTP_PORT` is empty (bus only);
- retrieval, discovery, staging: a core NATS request on `health.<service>.<instance>`, which
  only this replica answers, its instance id read from `ZOCRATES_INSTANCE_FILE` (set by the
  image; the service writes it once its consumers run). Without that file the replica has not
  finished starting. `health.<service>`, the probe the gateway's `/health` uses, is answered by
  any replica of the queue group: with `--scale` a replica still loading would pass on a
  sibling's answer. Without `ZOCRATES_INSTANCE_FILE` (outside the image) that is what is asked.

Standard library plus nats-py (already in every image), so it stays cheap to run every 15 s.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import urllib.request
from pathlib import Path

TIMEOUT_S = 4.0


def http_ok(port: str, path: str = "/health") -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=TIMEOUT_S) as response:
        return response.status == 200 and json.load(response).get("status") == "ok"


async def bus_ok(service: str) -> bool:
    import nats

    servers = [s.strip() for s in os.environ.get("ZOCRATES_NATS_URL", "nats://127.0.0.1:4222").split(",") if s.strip()]
    auth: dict = {}
    if creds := os.environ.get("ZOCRATES_NATS_CREDS_FILE"):
        auth["user_credentials"] = creds
    if user := os.environ.get("ZOCRATES_NATS_USER"):
        auth |= {"user": user, "password": os.environ.get("ZOCRATES_NATS_PASSWORD", "")}
    subject = f"health.{service}"
    if instance_file := os.environ.get("ZOCRATES_INSTANCE_FILE"):
        try:
            subject += "." + Path(instance_file).read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            raise RuntimeError(f"{service} has not finished starting (no {instance_file})") from None
    nc = await nats.connect(servers, connect_timeout=2, allow_reconnect=False, max_reconnect_attempts=0, **auth)
    try:
        reply = await nc.request(subject, b"", timeout=TIMEOUT_S / 2)
        return json.loads(reply.data).get("status") == "ok"
    finally:
        await nc.close()


def healthy(service: str) -> bool:
    if service == "gateway":
        return http_ok(os.environ.get("ZOCRATES_GATEWAY_PORT") or "8000")
    if service == "verifier":
        port = os.environ.get("ZOCRATES_VERIFIER_HTTP_PORT", "8005")
        if port:
            return http_ok(port)
    return asyncio.run(bus_ok(service))


def main() -> int:
    service = os.environ.get("SERVICE_MODULE", "").removeprefix("zocrates_")
    if not service:
        print("SERVICE_MODULE is not set (expected e.g. zocrates_gateway)", file=sys.stderr)
        return 1
    try:
        ok = healthy(service)
    except Exception as exc:  # noqa: BLE001 - any failure is "unhealthy", with the reason
        print(f"{service} unhealthy: {exc!r}", file=sys.stderr)
        return 1
    if not ok:
        print(f"{service} answered but is not ready", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
