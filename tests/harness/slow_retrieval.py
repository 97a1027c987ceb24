"""A retrieval replica in its own process whose answers take `delay` seconds (fault tests).

python -m harness.slow_retrieval NATS_URL DELAY
"""

from __future__ import annotations

import asyncio
import sys

from harness.system import FakeRetrieval
from zocrates_retrieval.app import create_app
from zocrates_runtime.settings import ZocratesSettings


async def main(url: str, delay: float) -> None:
    app = create_app(ZocratesSettings(nats_url=url), service=FakeRetrieval(delay=delay))
    await app.start()
    print("ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], float(sys.argv[2])))
