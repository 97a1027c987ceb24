"""A live smoke test against the real OpenAlex API; skipped when this machine is offline."""

from __future__ import annotations

import socket

import pytest

from zocrates_discovery.config import DiscoverySettings
from zocrates_discovery.service import DiscoveryService


def _online(host: str = "api.openalex.org") -> bool:
    try:
        socket.create_connection((host, 443), timeout=3).close()
        return True
    except OSError:
        return False


@pytest.mark.network
async def test_a_pasted_doi_is_found_on_the_real_openalex():
    if not _online():
        pytest.skip("api.openalex.org is unreachable from this machine")
    # A singleton lookup: free even in demo mode (no key), so this costs no budget.
    service = DiscoveryService(DiscoverySettings(_env_file=None, zotero_dir=None, contact_email=None))
    await service.start()
    try:
        result = await service.find(["10.1038/s42256-024-00832-8"], 1, "local")
    finally:
        await service.close()
    assert result.error is None, result.error
    [candidate] = result.candidates
    assert candidate.openalex_id == "W4396723768"
    assert "chemistry tools" in candidate.title.lower()
