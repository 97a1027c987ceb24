"""Importing discovered papers: prepare_batch re-checks, stages, and serves PDFs to their owner."""

from __future__ import annotations

import pytest

from harness.system import FakeDiscovery, running_system
from zocrates_contracts import BatchStaged, Candidate, StagedFile

pytestmark = pytest.mark.connected
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
CANDIDATES = [
    Candidate(candidate_id="W1", title="Open paper", pdf_url="https://example.org/w1.pdf"),
    Candidate(candidate_id="W2", title="Closed paper"),
    Candidate(candidate_id="W3", title="Imported meanwhile", doi="10.1/owned"),
]


class FakeStaging:
    """Writes a tiny PDF to the real NATS object store for each candidate with a PDF URL."""

    store = None
    seen: list = []

    async def start(self): ...
    async def close(self): ...
    def health(self):
        return {"status": "ok"}

    async def stage(self, request):
        files = []
        for c in request.candidates:
            self.seen.append(c.candidate_id)
            if not c.pdf_url:
                files.append(StagedFile(candidate_id=c.candidate_id, status="no_pdf", reason="no open-access PDF"))
                continue
            staged_id = f"{request.batch_id[:20]}-{c.candidate_id}"
            path = self.tmp / f"{staged_id}.pdf"
            path.write_bytes(PDF)
            info = await self.store.put(request.user_id, staged_id, path, {"filename": "w1.pdf"})
            files.append(
                StagedFile(
                    candidate_id=c.candidate_id,
                    status="staged",
                    object_name=staged_id,
                    sha256=info.sha256,
                    size=info.size,
                )
            )
        return BatchStaged(**request.reply_fields(), batch_id=request.batch_id, files=files)


async def test_prepare_batch_rechecks_stages_and_serves_only_to_the_owner(nats_server, tmp_path):
    staging = FakeStaging()
    staging.tmp, staging.seen = tmp_path, []
    async with running_system(
        nats_server.url, discovery=FakeDiscovery(CANDIDATES, owned=lambda c: bool(c.doi)), staging=staging
    ) as system:
        staging.store = system.app.state.gateway.staged
        done = (await system.chat("find new papers about graph neural networks"))[-1]["data"]
        assert [c["candidate_id"] for c in done["candidates"]] == ["W1", "W2", "W3"]
        body = {"session_id": done["session_id"], "turn_id": done["turn_id"], "candidate_ids": ["W1", "W2", "W3"]}
        r = await system.client.post(f"{system.url}/discover/prepare_batch", json=body, headers=system.auth)
        assert r.status_code == 200, r.text
        files = {f["candidate_id"]: f for f in r.json()["files"]}
        assert files["W1"]["status"] == "staged" and files["W2"]["status"] == "no_pdf"
        assert files["W3"]["status"] == "duplicate" and "already in your library" in files["W3"]["reason"]
        assert staging.seen == ["W1", "W2"], "an owned paper is never downloaded"

        pdf = await system.client.get(f"{system.url}/staging/{files['W1']['object_name']}", headers=system.auth)
        assert pdf.status_code == 200 and pdf.content == PDF
        assert pdf.headers["content-type"] == "application/pdf"
        bob = {"Authorization": f"Bearer {await system.new_token('bob')}"}
        other = await system.client.get(f"{system.url}/staging/{files['W1']['object_name']}", headers=bob)
        assert other.status_code == 404
        again = await system.client.post(f"{system.url}/discover/prepare_batch", json=body, headers=bob)
        assert again.status_code == 404

        bad = await system.client.post(
            f"{system.url}/discover/prepare_batch", headers=system.auth, json=body | {"candidate_ids": ["W9"]}
        )
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "unknown_candidates"
        missing = await system.client.get(f"{system.url}/staging/nothing-here", headers=system.auth)
        assert missing.status_code == 404
