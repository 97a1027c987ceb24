"""The researcher's side of the rehearsal (deploy/rehearsal/rehearse.sh): HTTP through the TLS proxy.

    drive.py library   sync a small library (POST /library/sync), upload its PDFs
                       (PUT /library/attachments/{key}), wait until it is indexed
    drive.py turn      ask one question: the SSE stream must end in `done` with citations the
                       verifier scored, and GET /sessions/{id} must return the same turn
    drive.py turns N   N questions at once (the verifier replicas share them)
    drive.py kill CMD  run CMD (which kills a container), ask a question at once, and require
                       the stream to end: `done` or `error`, never a hang
    drive.py persist   after `down` and `up`: the token still works, the last session and
                       its turn are there, the library is still indexed, a new turn is answered

Environment: REHEARSAL_URL (https://localhost:18443), REHEARSAL_TOKEN, REHEARSAL_CA (the
proxy's root certificate), REHEARSAL_STATE (a JSON file this script keeps between steps).
Exits non-zero with the reason on the first expectation that fails.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(os.environ.get("REHEARSAL_FIXTURES", ROOT.parent / "shared" / "fixtures" / "pdfs"))
URL = os.environ.get("REHEARSAL_URL", "https://localhost:18443")
STATE = Path(os.environ.get("REHEARSAL_STATE", ROOT / ".rehearsal" / "state.json"))
TURN_TIMEOUT_S = float(os.environ.get("REHEARSAL_TURN_TIMEOUT_S", "180"))

# A small library: three PDFs from the shared fixtures, one parent item each.
LIBRARY = [
    (
        "DVT2PAR1",
        "DVT2PDF1",
        "cermine/test1.pdf",
        "journalArticle",
        "2010",
        "Complications related to deep venous thrombosis prophylaxis in trauma: a systematic review",
        ("Indraneel", "Datta"),
        "10.1186/1752-2897-4-1",
    ),
    (
        "QIPARNT2",
        "QIPDFKY2",
        "cermine/example2.pdf",
        "journalArticle",
        "2012",
        "Understanding the barriers to setting up a healthcare quality improvement process",
        ("Dilip", "Kumar"),
        None,
    ),
    (
        "DOIPAR03",
        "DOIPDF03",
        "zotero/recognizePDF_test_DOI.pdf",
        "journalArticle",
        "2014",
        "A one-page PDF that only names its DOI",
        ("Ana", "Lopes"),
        "10.1371/journal.pntd.0003350",
    ),
]
QUESTIONS = [
    "What complications does deep venous thrombosis prophylaxis cause in trauma patients?",
    "How often does bleeding follow thromboprophylaxis with heparin in trauma?",
    "What barriers to setting up a healthcare quality improvement process were found?",
    "Which complications of vena cava filters were reported in trauma patients?",
]


def fail(message: str) -> None:
    print(f"rehearsal: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def say(message: str) -> None:
    print(f"rehearsal: {message}", flush=True)


def client() -> httpx.AsyncClient:
    token = os.environ.get("REHEARSAL_TOKEN") or fail("REHEARSAL_TOKEN is not set")
    return httpx.AsyncClient(
        base_url=URL,
        verify=os.environ.get("REHEARSAL_CA") or True,
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx.Timeout(30, read=TURN_TIMEOUT_S),
    )


def load_state() -> dict:
    return json.loads(STATE.read_text()) if STATE.exists() else {}


def save_state(state: dict) -> None:
    STATE.write_text(json.dumps(state, indent=1))


def parse_sse(text: str) -> list[dict]:
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        item: dict = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            key, _, value = line.partition(":")
            value = value.removeprefix(" ")
            item[key] = item[key] + "\n" + value if key == "data" and "data" in item else value
        if "event" in item:
            item["data"] = json.loads(item.get("data") or "null")
            events.append(item)
    return events


async def ask(http: httpx.AsyncClient, question: str) -> list[dict]:
    async with http.stream("POST", "/chat", json={"message": question}) as response:
        if response.status_code != 200:
            fail(f"POST /chat answered {response.status_code}: {(await response.aread())[:300]!r}")
        text = "".join([chunk async for chunk in response.aiter_text()])
    return parse_sse(text)


def verified(done: dict) -> int:
    """Citation occurrences the verifier scored (a probability, not FAIL_OPEN)."""
    return sum(
        1
        for c in done.get("citations", [])
        for o in c.get("occurrences", [])
        if o.get("probability") is not None and o.get("verdict") != "FAIL_OPEN"
    )


async def library() -> None:
    async with client() as http:
        items, files = [], {}
        for parent, key, rel, kind, year, title, (first, last), doi in LIBRARY:
            data = (FIXTURES / rel).read_bytes()
            files[key] = data
            items.append(
                {
                    "key": parent,
                    "item_type": kind,
                    "date": year,
                    "title": title,
                    "creators": [{"first_name": first, "last_name": last}],
                }
                | ({"doi": doi} if doi else {})
            )
            items.append(
                {
                    "key": key,
                    "item_type": "attachment",
                    "parent_key": parent,
                    "content_type": "application/pdf",
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "filename": Path(rel).name,
                }
            )
        synced = await http.post(
            "/library/sync", json={"sync_id": f"rehearsal-{int(time.time())}", "full": True, "items": items}
        )
        if synced.status_code != 200:
            fail(f"POST /library/sync answered {synced.status_code}: {synced.text[:300]}")
        needs = synced.json()["needs_upload"]
        say(f"synced {len(items)} items; the server asks for {len(needs)} files")
        for key in needs:
            put = await http.put(
                f"/library/attachments/{key}", content=files[key], headers={"Content-Type": "application/pdf"}
            )
            if put.status_code != 200:
                fail(f"PUT /library/attachments/{key} answered {put.status_code}: {put.text[:300]}")
        deadline = time.monotonic() + float(os.environ.get("REHEARSAL_INDEX_TIMEOUT_S", "420"))
        while True:
            status = (await http.get("/library/status")).json()
            if status.get("state") == "done" and status.get("indexed", 0) >= 1 and not status.get("awaiting_upload"):
                break
            if status.get("state") == "error" or time.monotonic() > deadline:
                fail(f"the library was not indexed: {json.dumps(status)[:600]}")
            await asyncio.sleep(2)
        say(
            f"indexed: {status['indexed']} of {status['attachments']} attachments, "
            f"{status['chunks_indexed']} chunks, failures {status['failures_by_reason']}"
        )
        save_state(
            load_state() | {"library": {k: status[k] for k in ("items", "attachments", "indexed", "chunks_indexed")}}
        )


async def turn() -> None:
    async with client() as http:
        started = time.monotonic()
        events = await ask(http, QUESTIONS[0])
        elapsed = time.monotonic() - started
        done = events[-1] if events else {}
        if done.get("event") != "done":
            fail(f"the stream ended in {done.get('event')!r}, not done: {json.dumps(done)[:600]}")
        record = done["data"]
        if not record["citations"]:
            fail(f"the answer has no citations: {record['text'][:400]!r}")
        if not verified(record):
            fail(f"no citation was scored by the verifier: {json.dumps(record.get('verification'))}")
        session = await http.get(f"/sessions/{record['session_id']}")
        if session.status_code != 200:
            fail(f"GET /sessions/{record['session_id']} answered {session.status_code}")
        stored = session.json()["turns"]
        if not stored or stored[-1] != record:
            fail("GET /sessions/{id} does not return the turn the stream ended with")
        say(
            f"turn done in {elapsed:.1f} s through the proxy: {len(record['citations'])} citations, "
            f"{verified(record)} occurrences verified ({record['verification']['provider']}); "
            f"GET /sessions/{record['session_id']} returns the same turn"
        )
        save_state(
            load_state() | {"session_id": record["session_id"], "turn": record, "first_answer_s": round(elapsed, 1)}
        )


async def turns(count: int) -> None:
    async with client() as http:
        results = await asyncio.gather(*(ask(http, QUESTIONS[i % len(QUESTIONS)]) for i in range(count)))
    ends = [events[-1]["event"] if events else "nothing" for events in results]
    if any(end != "done" for end in ends):
        fail(f"not every turn ended in done: {ends}")
    say(f"{count} concurrent turns done, {sum(verified(e[-1]['data']) for e in results)} occurrences verified")


async def kill(command: list[str]) -> None:
    """SIGKILL a service (CMD) and send a question at once: the turn is in flight while the
    container is dead and its restart policy brings it back (on this 2-core machine a turn's
    retrieval answers in well under a second, too fast to aim a kill inside it)."""
    async with client() as http:
        result = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            fail(f"{command} failed: {result.stderr[:300]}")
        started = time.monotonic()
        say(f"killed {result.stdout.strip()}; asking at once")
        try:
            events = await asyncio.wait_for(ask(http, QUESTIONS[3]), TURN_TIMEOUT_S)
        except TimeoutError:
            fail(f"the turn did not end within {TURN_TIMEOUT_S:.0f} s of a container being killed")
        end = events[-1] if events else {"event": "nothing"}
        if end["event"] not in ("done", "error"):
            fail(f"the stream ended without done or error: {json.dumps(end)[:300]}")
        detail = (
            f"{len(end['data']['citations'])} citations" if end["event"] == "done" else json.dumps(end["data"])[:200]
        )
        say(
            f"the turn ended cleanly in {end['event']} ({detail}), {time.monotonic() - started:.1f} s after it was sent"
        )


async def persist() -> None:
    state = load_state()
    async with client() as http:
        session = await http.get(f"/sessions/{state['session_id']}")
        if session.status_code != 200:
            fail(
                f"after down/up, GET /sessions/{state['session_id']} answered {session.status_code}: "
                f"{session.text[:200]} (the token or the session did not survive)"
            )
        if state["turn"] not in session.json()["turns"]:
            fail("after down/up, the session no longer holds the first turn")
        status = (await http.get("/library/status")).json()
        kept = {k: status.get(k) for k in state["library"]}
        if kept != state["library"]:
            fail(f"after down/up, the library changed: {kept} != {state['library']}")
        events = await ask(http, QUESTIONS[1])
        if not events or events[-1]["event"] != "done" or not events[-1]["data"]["citations"]:
            fail(f"after down/up, a new turn was not answered with citations: {json.dumps(events[-1:])[:400]}")
    say(
        f"after down and up: token, session {state['session_id']} and its turn, "
        f"the index ({kept['chunks_indexed']} chunks) kept; a new turn is answered with citations"
    )


def main(argv: list[str]) -> None:
    if not argv:
        fail(__doc__)
    step, rest = argv[0], argv[1:]
    if step == "library":
        asyncio.run(library())
    elif step == "turn":
        asyncio.run(turn())
    elif step == "turns":
        asyncio.run(turns(int(rest[0]) if rest else 4))
    elif step == "kill":
        asyncio.run(kill(rest))
    elif step == "persist":
        asyncio.run(persist())
    else:
        fail(f"unknown step {step!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
