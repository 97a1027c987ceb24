"""The real verifier bus app with a throttled fake model, in its own process.

    python -m reliability.workers.verifier_worker NATS_URL DELAY_S

Used by R-JS-6 (a burst against a throttled verifier) and R-GPU-5 (a verifier process
killed mid-batch and restarted by the supervisor). Prints `ready` once consuming.
"""

from __future__ import annotations

import asyncio
import sys

from harness.system import FakeVerifier
from zocrates_runtime.settings import ZocratesSettings
from zocrates_verifier.app import create_app


async def main(url: str, delay: float) -> None:
    app = create_app(ZocratesSettings(nats_url=url), service=FakeVerifier(delay=delay))
    await app.start()
    print("ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], float(sys.argv[2])))
