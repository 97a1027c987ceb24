"""A retrieval or verifier replica in its own process: the service's real bus app over the fake
domain of harness.system, answering after `delay` seconds (fault and load tests). Prints
`ready` once consuming.

    python -m harness.slow_service retrieval|verifier NATS_URL DELAY
"""

from __future__ import annotations

import asyncio
import importlib
import sys

from harness.system import FakeRetrieval, FakeVerifier
from zocrates_runtime.settings import ZocratesSettings

FAKES = {"retrieval": FakeRetrieval, "verifier": FakeVerifier}


async def main(name: str, url: str, delay: float) -> None:
    create_app = importlib.import_module(f"zocrates_{name}.app").create_app
    app = create_app(ZocratesSettings(nats_url=url), service=FAKES[name](delay=delay))
    await app.start()
    print("ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
