"""Whose contact email the providers' polite pools get for the request being answered.

Crossref's `mailto`, Unpaywall's required `email` and NCBI's `email` name a person the
provider can write to. The researcher's own address (sent by the plugin with `POST /register`
and carried on `DiscoveryRequested.contact_email`) comes first; the deployment's configured
`ZOCRATES_CONTACT_EMAIL` is the fallback. A context variable carries it from `discover` to
the provider calls of that request only, including the tasks they spawn.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_requester_email: ContextVar[str | None] = ContextVar("requester_email", default=None)


def contact_email(configured: str | None) -> str | None:
    """The contact for a provider request: the requester's, else the configured one."""
    return _requester_email.get() or configured


@contextmanager
def requester_contact(email: str | None) -> Iterator[None]:
    """Within this block (and tasks started in it), provider requests name `email`."""
    token = _requester_email.set(email)
    try:
        yield
    finally:
        _requester_email.reset(token)
