"""How the gateway is served: uvicorn's h11 protocol, with one change to how a broken response ends.

When the app fails after its response started, uvicorn ends the connection with
`transport.close()`, which first waits for the unsent write buffer to drain. The usual case
is an SSE stream whose send timed out because the client stopped reading: its buffer never
drains, so the gateway would keep that socket (an fd and the buffered bytes) until the
client leaves, and a graceful shutdown would wait for it. A truncated response is of no use
to the client, so such a connection is aborted instead. Complete responses (keep-alive,
`Connection: close`, idle timeouts) still close gracefully.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.h11_impl import H11Protocol


class AbortingH11Protocol(H11Protocol):
    """uvicorn's h11 protocol whose connections are aborted when a response ends unfinished."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_AbortUnfinished(transport, self))


class _AbortUnfinished:
    """The connection's transport, as the protocol and its request cycles see it."""

    def __init__(self, transport: asyncio.Transport, protocol: H11Protocol) -> None:
        self._transport = transport
        self._protocol = protocol

    def close(self) -> None:
        cycle = self._protocol.cycle
        unfinished = cycle is not None and cycle.response_started and not cycle.response_complete
        if unfinished and self._transport.get_write_buffer_size() > 0:
            self._transport.abort()  # close() would wait for a client that is not reading
        else:
            self._transport.close()

    def __getattr__(self, name: str):
        return getattr(self._transport, name)
