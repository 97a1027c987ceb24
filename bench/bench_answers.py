"""Offline answers: does the extractive answer writer quote what answers the question?

Two parts: labelled questions asked of a real library through the whole stack, and SciFact's
labelled rationale sentences fed to the sentence chooser directly.

SciFact (Wadden et al., 2020) labels, for each claim, the sentences of the cited abstracts
that support or contradict it (its rationales). Each of the 505 training claims with evidence
is asked as a question; the evidence is its cited abstracts plus the corpus abstracts that
share the most words with it, eight in all, ranked by shared words as a lexical retriever
would (the cited ones are always among them: this measures sentence choice, not retrieval,
which `bench retrieval` measures). One abstract is one chunk, section "Abstract".

Each method answers with up to four quoted sentences; a point is a hit when it is one of the
claim's rationale sentences. Methods: the gateway's `choose_points` (what `make run` answers
with), the synthesizer before 60c59af (in rank order, the best-overlap sentence of each chunk),
and the first sentence of each of the top four chunks.

The library part asks the real system: a Zotero library built from the fixture PDFs and a
real Zotero database (tests/harness/answer_library.py), `python -m zocrates_runtime.stack` as
`make run` starts it (real nats-server on free ports, retrieval indexing that library, the
gateway, the default verifier (the shipped trained model, offline), no LLM: the offline extractive
answer writer answers), and each labelled question of bench/data/answers/ posted to `POST /chat`
one at a time, the `done` payload read from the SSE stream as a client reads it. A follow-up
question is asked as two turns of one session: its first question, then the second with the
`session_id` the first turn's `turn` event gave; only the second turn is scored. Scoring:

- correct: an expected string appears in the answer's prose (the text before its source sections),
  after NFKC, case folding, unicode dashes as `-`, whitespace collapsed, line-end hyphens
  joined or kept, citation tokens removed; a string starting or ending in a digit must not be
  part of a longer number. For unanswerable questions, correct means refused correctly;
- attributed: the piece of the answer holding the expected string (up to the citation tokens
  that follow it on its line) cites a chunk of the expected item; an identifier answer also
  counts when the item is among `references.cited`;
- first point: of a correct answer, its first point (the first line of its prose that cites a
  source) holds an expected string: the best unit comes first;
- refused: the answer cites nothing (`citations` and `references.cited` empty). An answerable
  question refused counts as wrongly refused; a turn that ends in an `error` event is an error;
- latency: POST to the `done` event, client-side (of a follow-up: of its second turn).

The targets: single-turn questions correct >= 85 %, every unanswerable one refused, correct
answers attributed >= 95 %, median turn < 300 ms; follow-ups correct offline >= 80 %.

    .venv/bin/python -m bench answers                  # both parts, both splits -> docs/benchmarks.md
    .venv/bin/python -m bench answers --split design   # the library part on the design split only

The design split writes its per-question results to bench/data/answers/last_run_design.json;
the held-out split is reported in aggregate only (its questions are kept out of sight of whoever
designs the answer writer: thresholds are never tuned on it).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

import httpx

from zocrates_citations import TOKEN_RE
from zocrates_contracts import EvidenceChunk
from zocrates_gateway.domain.synthesis import choose_points, content_words, strip_reference_markers

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the library builder lives with the tests (tests/harness)
DATA = ROOT.parent / "shared" / "fixtures" / "claims" / "scifact"
EVIDENCE_CHUNKS = 8
POINTS = 4


def load() -> tuple[list[dict], dict[int, dict]]:
    claims = [json.loads(line) for line in (DATA / "claims_train.jsonl").open()]
    corpus = {d["doc_id"]: d for d in map(json.loads, (DATA / "corpus_cited_subset.jsonl").open())}
    return [c for c in claims if c["evidence"]], corpus


def _chunk(doc: dict) -> EvidenceChunk:
    """One abstract as retrieval sends it: role, answer units (found as at ingest)."""
    from harness.evidence import with_units

    return with_units(
        EvidenceChunk(
            chunk_id=f"d{doc['doc_id']}",
            item_key=f"K{doc['doc_id']:07d}"[-8:],
            title=doc["title"],
            text=" ".join(doc["abstract"]),
            section="Abstract",
            kind="abstract",
            role="abstract",
        )
    )


def evidence_for(claim: dict, corpus: dict[int, dict], words: dict[int, set[str]]) -> list[dict]:
    """The cited abstracts and the most word-sharing others, ranked by shared words."""
    wanted = content_words(claim["claim"])
    cited = {int(d) for d in claim["cited_doc_ids"]}
    ranked = sorted(corpus, key=lambda d: (-len(words[d] & wanted), d))
    others = [d for d in ranked if d not in cited][: max(0, EVIDENCE_CHUNKS - len(cited))]
    chosen = sorted([*cited, *others], key=lambda d: (-len(words[d] & wanted), d))
    return [corpus[d] for d in chosen if d in corpus]


def rationales(claim: dict, corpus: dict[int, dict]) -> list[str]:
    return [
        corpus[int(doc)]["abstract"][i]
        for doc, sets in claim["evidence"].items()
        if int(doc) in corpus
        for rationale in sets
        for i in rationale["sentences"]
    ]


# --- the methods -------------------------------------------------------------------------------


def current(question: str, chunks: list[EvidenceChunk]) -> list[str]:
    """The answer writer on the units as retrieval scores them against the question."""
    from harness.evidence import scored

    return [p.text for p in choose_points(question, scored(question, chunks), POINTS)]


_OLD_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])")


def before_60c59af(question: str, chunks: list[EvidenceChunk]) -> list[str]:
    """The synthesizer as it was: per chunk in rank order, the sentence sharing most words."""
    wanted = content_words(question)
    points: list[str] = []
    for chunk in chunks:
        best, best_score = None, 0.0
        for raw in _OLD_SENTENCE_RE.split(" ".join(chunk.text.split())):
            sentence = raw.strip()
            words = content_words(sentence)
            if not 25 <= len(sentence) <= 400 or not words:
                continue
            score = len(words & wanted) + 0.01 * min(len(words), 30) / 30
            if score > best_score:
                best, best_score = sentence, score
        if best and best not in points:
            points.append(best)
        if len(points) == POINTS:
            break
    return points


def lead(question: str, chunks: list[EvidenceChunk]) -> list[str]:
    return [_OLD_SENTENCE_RE.split(c.text, maxsplit=1)[0] for c in chunks[:POINTS]]


METHODS = {"`choose_points` (now)": current, "before 60c59af": before_60c59af, "lead sentences": lead}


# --- scoring -----------------------------------------------------------------------------------


def _norm(text: str) -> str:
    return re.sub(r"\W+", " ", strip_reference_markers(text)).strip().lower()


def is_rationale(point: str, gold: list[str]) -> bool:
    p = _norm(point)
    return bool(p) and any(p in g or g in p for g in map(_norm, gold) if g)


def measure(limit: int | None = None) -> dict[str, dict[str, float]]:
    """Each method on the first `limit` claims (all 505 by default)."""
    claims, corpus = load()
    claims = claims[:limit]
    words = {d: content_words(doc["title"] + " " + " ".join(doc["abstract"])) for d, doc in corpus.items()}
    cases = [(c["claim"], [_chunk(d) for d in evidence_for(c, corpus, words)], rationales(c, corpus)) for c in claims]
    results = {}
    for name, method in METHODS.items():
        answered = hits = first = points = good = 0
        times = []
        for question, chunks, gold in cases:
            started = time.perf_counter()
            quoted = method(question, chunks)
            times.append(time.perf_counter() - started)
            marks = [is_rationale(p, gold) for p in quoted]
            answered += bool(quoted)
            hits += any(marks)
            first += bool(marks) and marks[0]
            points += len(marks)
            good += sum(marks)
        n = len(cases)
        results[name] = {
            "claims": n,
            "answered": answered / n,
            "hit": hits / n,
            "first": first / n,
            "precision": good / max(points, 1),
            "points": points / max(answered, 1),
            "ms": statistics.median(times) * 1000,
        }
    return results


def scifact_section() -> str:
    results = measure()
    n = next(iter(results.values()))["claims"]
    lines = [
        "### SciFact rationale sentences",
        "",
        f"{n} SciFact claims with labeled rationale sentences, each asked as a question over "
        f"its cited abstracts and the most word-sharing others ({EVIDENCE_CHUNKS} chunks, "
        "ranked by shared words; the cited ones always included). A point is a hit when it is "
        "one of the claim's rationale sentences.",
        "",
        "| method | answered | a rationale among the points | first point a rationale "
        "| points that are rationales | points per answer | median ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, r in results.items():
        lines.append(
            f"| {name} | {r['answered']:.1%} | {r['hit']:.1%} | {r['first']:.1%} | "
            f"{r['precision']:.1%} | {r['points']:.1f} | {r['ms']:.2f} |"
        )
    now = results["`choose_points` (now)"]
    old = results["before 60c59af"]
    lines += [
        "",
        f"Now vs before: rationale among the points {now['hit']:.1%} vs "
        f"{old['hit']:.1%}, first point {now['first']:.1%} vs {old['first']:.1%}, "
        f"precision {now['precision']:.1%} vs {old['precision']:.1%}. No target: this "
        "measures the offline answer so that changes to it are judged on labeled data.",
    ]
    return "\n".join(lines)


# --- labelled questions over a real library, through the whole stack -------------------------

QUESTIONS_DIR = ROOT / "bench" / "data" / "answers"
LAST_RUN = QUESTIONS_DIR / "last_run_design.json"
FIXTURES = ROOT.parent / "shared" / "fixtures"
SPLITS = {"design": "design", "heldout": "held-out"}
KINDS = (
    "prose",
    "table",
    "paraphrase",
    "unanswerable",
    "identifier",
    "follow-up",
    "summary",
    "named",
    "open-unanswerable",
)
#: Questions the library does not answer: "unanswerable" ones ask for a value or a code it does
#: not hold, "open-unanswerable" ones ask what or which, with no number, about what it never says.
UNANSWERABLE = frozenset(("unanswerable", "open-unanswerable"))
TARGET_CORRECT, TARGET_ATTRIBUTED, TARGET_MEDIAN_MS = 0.85, 0.95, 300.0
TARGET_FOLLOW_UP = 0.80  # second turns correct, offline
STACK_START_S = 300.0  # a first start loads the embedding model and the verifier
INDEX_S = 600.0  # the library's first ingest (about 30 s here)
TURN_TIMEOUT_S = 120.0
#: Asked before the measured turns (connections, consumers, first-use caches), not scored.
WARM_UP = (
    "What does my library say about venous thrombosis prophylaxis?",
    "How was the quality of care assessed in the hospital study?",
)


class StackError(RuntimeError):
    """The stack did not come up or the library did not index: the bench cannot measure."""


def load_questions(split: str) -> list[dict]:
    path = QUESTIONS_DIR / f"{split}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# Matching ---------------------------------------------------------------------------------------

_DASHES = dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"), "-")
_RING_A_RE = re.compile(r"\u02da\s*A")  # PyMuPDF gives Å as a spacing ring above, then A
_LINE_END_HYPHEN_RE = re.compile(r"-[ \t]*\n\s*")


def normalised(text: str, join_hyphens: bool = True) -> str:
    """Case-folded NFKC text, unicode dashes as '-', whitespace collapsed; a hyphen at a line
    end is joined to the next line (`join_hyphens`) or kept as a hyphen."""
    text = unicodedata.normalize("NFKC", _RING_A_RE.sub("\u00c5", text)).translate(_DASHES)
    text = _LINE_END_HYPHEN_RE.sub("" if join_hyphens else "-", text)
    return " ".join(text.split()).casefold()


def _expected_re(expected: str) -> re.Pattern:
    """`expected` as a whole word at its start; one that starts or ends with a digit is not part
    of a longer number ("26" is not found in "126" or "26.0"); words may take a suffix (plurals)."""
    needle = normalised(expected)
    left = r"(?<!\w)(?<!\d\.)" if needle[:1].isdigit() else r"(?<!\w)" if needle[:1].isalnum() else ""
    right = r"(?!\d)(?!\.\d)" if needle[-1:].isdigit() else ""
    return re.compile(left + re.escape(needle) + right)


def occurs(expected: str, text: str) -> bool:
    """Whether `expected` appears in `text`, modulo the normalisation and line-end hyphens."""
    pattern = _expected_re(expected)
    return any(pattern.search(normalised(text, join)) for join in (True, False))


def _plain(prose: str) -> str:
    return TOKEN_RE.sub("", prose).replace("*", "").replace("`", "")


def _pieces(line: str) -> list[tuple[str, list[int]]]:
    """A line cut after each run of citation tokens: (text, the indices that run cites)."""
    tokens = list(TOKEN_RE.finditer(line))
    pieces, start, i = [], 0, 0
    while i < len(tokens):
        j = i
        while j + 1 < len(tokens) and not line[tokens[j].end() : tokens[j + 1].start()].strip(" ,;"):
            j += 1
        indices = [int(n) for t in tokens[i : j + 1] for n in re.findall(r"\d+", t.group(1) or t.group(2))]
        pieces.append((_plain(line[start : tokens[i].start()]), indices))
        start, i = tokens[j].end(), j + 1
    pieces.append((_plain(line[start:]), []))
    return pieces


def holders(expected: str, prose: str) -> list[list[int]]:
    """For each place `expected` appears in the prose, the citation indices of the claim holding
    it: the tokens that end the shortest piece of its line in which it completes."""
    found = []
    for line in prose.splitlines():
        pieces, start = _pieces(line), 0
        for b in range(len(pieces)):
            for a in range(b, start - 1, -1):
                if occurs(expected, " ".join(p[0] for p in pieces[a : b + 1])):
                    found.append(pieces[b][1])
                    start = b + 1
                    break
    return found


def score(question: dict, events: list[dict], ms: float, keys: dict[str, str]) -> dict:
    """One question's result from its turn's SSE events."""
    names = {key: name for name, key in keys.items()}
    result = {
        "id": question["id"],
        "kind": question["kind"],
        "question": question["question"],
        **({"first": question["first"]} if question["kind"] == "follow-up" else {}),
        "expected": question["expected"],
        "item": question["item"],
        "ms": round(ms, 1),
    }
    last = events[-1] if events else {"event": "none", "data": {}}
    if last["event"] != "done":
        data = last.get("data") or {}
        return result | {
            "correct": False,
            "attributed": False,
            "refused": False,
            "error": f"{data.get('code', last['event'])}: {data.get('message', '')}".strip(),
        }
    done = last["data"]
    prose = done["prose"].strip()
    by_index = {c["index"]: c["item_key"] for c in done["citations"]}
    cited_refs = {r["item_key"] for r in done["references"]["cited"]}
    refused = not done["citations"] and not cited_refs
    key = keys.get(question["item"])
    if question["kind"] in UNANSWERABLE:
        correct, attributed, leads = refused, None, None
    else:
        correct = any(occurs(e, _plain(prose)) for e in question["expected"])
        lead = first_point(prose)
        leads = correct and any(occurs(e, _plain(lead)) for e in question["expected"])
        attributed = correct and (
            any(by_index.get(i) == key for e in question["expected"] for idx in holders(e, prose) for i in idx)
            or (question["kind"] == "identifier" and key in cited_refs)
        )
    return result | {
        "correct": correct,
        "attributed": attributed,
        "first_point": leads,
        "refused": refused,
        "error": None,
        "intent": done["intent"],
        "answer": prose,
        "cited": sorted({names.get(k, k) for k in (*by_index.values(), *cited_refs)}),
    }


def first_point(prose: str) -> str:
    """An answer's first point: its first line that cites a source; an introduction ("Here is what
    your library says ...:") cites none. An identifier's is its "Yes — ... [1]. It opens:" line."""
    return next((line for line in prose.splitlines() if re.search(r"\[\d+\]", line)), "")


# The stack --------------------------------------------------------------------------------------


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no output)"


def _get(url: str, token: str) -> dict | None:
    try:
        response = httpx.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=10)
    except httpx.HTTPError:
        return None
    return response.json() if response.status_code == 200 else None


def _wait_for_banner(proc: subprocess.Popen, log: Path, deadline: float) -> tuple[str, str]:
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        url, token = re.search(r"running at (http://\S+)", text), re.search(r"Access token: (\S+)", text)
        if url and token and "Try a turn" in text:
            return url.group(1), token.group(1)
        if proc.poll() is not None:
            raise StackError(f"the stack exited with code {proc.returncode} before it was ready:\n{_tail(log)}")
        time.sleep(0.5)
    raise StackError(f"the stack printed no banner within {STACK_START_S:.0f} s:\n{_tail(log)}")


def _wait_until_ready(proc: subprocess.Popen, log: Path, url: str, token: str, pdfs: int) -> dict:
    """Every service ready and the library indexed with each PDF and no failure."""
    deadline = time.monotonic() + INDEX_S
    health = status = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise StackError(f"the stack exited with code {proc.returncode}:\n{_tail(log)}")
        health = _get(f"{url}/health", token)
        status = _get(f"{url}/library/status", token)
        services = (health or {}).get("services") or {}
        if status and status.get("state") == "failed":
            raise StackError(f"indexing the library failed: {status.get('error')}\n{_tail(log)}")
        if (
            services
            and all(s.get("status") == "ok" for s in services.values())
            and status
            and status.get("ready")
            and status.get("state") == "done"
        ):
            if status.get("failures") or status.get("indexed", 0) + status.get("unchanged", 0) < pdfs:
                raise StackError(
                    f"the library indexed {status.get('indexed')} of {pdfs} PDFs, failures: {status.get('failures')}"
                )
            return status
        time.sleep(1.0)
    raise StackError(f"the stack was not ready within {INDEX_S:.0f} s: health {health}, library {status}\n{_tail(log)}")


@contextlib.contextmanager
def running_stack(zotero_dir: Path, work: Path, pdfs: int, verifier: str = "default", verifier_threads: int = 0):
    """`python -m zocrates_runtime.stack` on free ports over `zotero_dir`, with no LLM and the
    default verifier (or the provider `verifier` names, on `verifier_threads` torch threads when
    given): yields (gateway URL, token, library status) once the library is indexed."""
    from zocrates_runtime.natsserver import free_port

    nats_port = free_port()
    gateway_port = free_port()
    while gateway_port == nats_port:
        gateway_port = free_port()
    # Nothing of the caller's configuration (an LLM, another verifier, a real ~/Zotero) applies.
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZOCRATES_")} | {
        "ZOCRATES_DATA_DIR": str(work / "data"),
        "ZOCRATES_NATS_PORT": str(nats_port),
        "ZOCRATES_GATEWAY_PORT": str(gateway_port),
        "ZOCRATES_ZOTERO_DIR": str(zotero_dir),
        "ZOCRATES_LOG_JSON": "true",
    }
    if verifier != "default":
        env["ZOCRATES_VERIFIER_PROVIDER"] = verifier
    if verifier_threads:
        env["ZOCRATES_VERIFIER_CPU_THREADS"] = str(verifier_threads)
    log = work / "stack.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "zocrates_runtime.stack"], env=env, cwd=work, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        url, token = _wait_for_banner(proc, log, time.monotonic() + STACK_START_S)
        yield url, token, _wait_until_ready(proc, log, url, token, pdfs)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def parse_sse(text: str) -> list[dict]:
    """Server-sent events as {"event", "data"}, data parsed as JSON; comments (pings) skipped."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, list[str]] = {}
        for line in block.split("\n"):
            if line and not line.startswith(":"):
                name, _, value = line.partition(":")
                fields.setdefault(name, []).append(value.removeprefix(" "))
        if "event" in fields:
            events.append({"event": fields["event"][-1], "data": json.loads("\n".join(fields.get("data", ["null"])))})
    return events


def ask(
    client: httpx.Client, url: str, token: str, message: str, session_id: str | None = None
) -> tuple[list[dict], float]:
    """One turn as a client asks it (in session `session_id`, or a new one): the SSE events and
    the time to the last one, in ms."""
    body = {"message": message} | ({"session_id": session_id} if session_id else {})
    started = time.perf_counter()
    with client.stream("POST", f"{url}/chat", json=body, headers={"Authorization": f"Bearer {token}"}) as response:
        if response.status_code != 200:
            raise StackError(f"POST /chat answered {response.status_code}: {response.read()[:500]!r}")
        text = "".join(response.iter_text())
    return parse_sse(text), (time.perf_counter() - started) * 1000


def session_of(events: list[dict]) -> str | None:
    """The session a turn was asked in, from its `turn` event."""
    return next((e["data"].get("session_id") for e in events if e["event"] == "turn" and e["data"]), None)


def ask_question(client: httpx.Client, url: str, token: str, question: dict, keys: dict[str, str]) -> dict:
    """One labelled question asked and scored. A follow-up is two turns of one session: its first
    question, then the second in the session the first turn opened; only the second is scored
    (`first_cited`: the items the first turn cited, to tell a new topic dragged back)."""
    if question["kind"] != "follow-up":
        return score(question, *ask(client, url, token, question["question"]), keys)
    first, _ = ask(client, url, token, question["first"])
    session = session_of(first)
    if session is None:
        events = [{"event": "error", "data": {"code": "no_session", "message": "the first turn opened no session"}}]
        result = score(question, events, 0.0, keys)
    else:
        result = score(question, *ask(client, url, token, question["question"], session), keys)
    names = {key: name for name, key in keys.items()}
    done = first[-1]["data"] if first and first[-1]["event"] == "done" else None
    cited = (
        {c["item_key"] for c in done["citations"]} | {r["item_key"] for r in done["references"]["cited"]}
        if done
        else set()
    )
    return result | {"first_cited": sorted(names.get(k, k) for k in cited)}


def ask_library(splits: list[str], verifier: str = "default", verifier_threads: int = 0) -> dict:
    """Build the library, start the stack, ask every question of `splits`; results by split."""
    from harness.answer_library import PAPERS, build_answer_library

    questions = {split: load_questions(split) for split in splits}
    with tempfile.TemporaryDirectory(prefix="bench-answers-") as tmp:
        work = Path(tmp)
        library = build_answer_library(work / "Zotero", FIXTURES)
        started = time.perf_counter()
        with running_stack(library.zotero_dir, work, len(PAPERS), verifier, verifier_threads) as (url, token, status):
            ready_s = time.perf_counter() - started
            checker = ((_get(f"{url}/health", token) or {}).get("services") or {}).get("verifier") or {}
            with httpx.Client(timeout=TURN_TIMEOUT_S) as client:
                for message in WARM_UP:
                    ask(client, url, token, message)
                asked = time.perf_counter()
                results = {
                    split: [ask_question(client, url, token, q, library.keys) for q in qs]
                    for split, qs in questions.items()
                }
                turns_s = time.perf_counter() - asked
    return {
        "results": results,
        "ready_s": ready_s,
        "turns_s": turns_s,
        "chunks": status.get("chunks_indexed"),
        "items": status.get("items"),
        "verifier": {k: checker.get(k) for k in ("provider", "model", "model_source", "device", "dtype", "threshold")},
    }


# Figures ----------------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else float("nan")


def summarise(results: list[dict]) -> dict:
    def figures(rows: list[dict]) -> dict:
        answerable = [r for r in rows if r["kind"] not in UNANSWERABLE]
        unanswerable = [r for r in rows if r["kind"] in UNANSWERABLE]
        correct = [r for r in answerable if r["correct"]]
        return {
            "questions": len(rows),
            "correct": sum(r["correct"] for r in rows),
            "answerable": len(answerable),
            "answerable_correct": len(correct),
            "attributed": sum(bool(r["attributed"]) for r in correct),
            "first_point": sum(bool(r.get("first_point")) for r in correct),
            "unanswerable": len(unanswerable),
            "refused_correctly": sum(r["correct"] for r in unanswerable),
            "wrongly_refused": sum(r["refused"] for r in answerable),
            "errors": sum(bool(r["error"]) for r in rows),
            "median_ms": statistics.median([r["ms"] for r in rows]) if rows else float("nan"),
            "p90_ms": pct([r["ms"] for r in rows], 0.9),
        }

    return {
        "all": figures(results),
        "single-turn": figures([r for r in results if r["kind"] != "follow-up"]),
        **{k: figures([r for r in results if r["kind"] == k]) for k in KINDS},
    }


def turns(rows: list[dict]) -> int:
    """The turns asked for `rows`: a follow-up is two."""
    return sum(2 if r["kind"] == "follow-up" else 1 for r in rows)


def _share(n: int, of: int) -> str:
    return f"{n}/{of} ({n / of:.0%})" if of else "-"


def kind_table(summary: dict) -> list[str]:
    lines = [
        "| kind | questions | correct | attributed (of correct) | first point (of correct) "
        "| refused, no sources cited | errors | median ms | p90 ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for kind in (*KINDS, "all"):
        s = summary[kind]
        if not s["questions"]:
            continue
        if kind in UNANSWERABLE:
            correct, attributed, first = _share(s["refused_correctly"], s["questions"]), "-", "-"
            refused = f"{s['refused_correctly']} (correctly)"
        else:
            correct = _share(s["correct"], s["questions"])
            attributed = _share(s["attributed"], s["answerable_correct"])
            first = _share(s["first_point"], s["answerable_correct"])
            refused = (
                f"{s['wrongly_refused']} (wrongly)"
                if kind != "all"
                else (f"{s['refused_correctly']} correctly, {s['wrongly_refused']} wrongly")
            )
        lines.append(
            f"| {'**all**' if kind == 'all' else kind} | {s['questions']} | {correct} | {attributed} | {first} | "
            f"{refused} | {s['errors']} | {s['median_ms']:.0f} | {s['p90_ms']:.0f} |"
        )
    return lines


def verdicts(summary: dict) -> str:
    """The targets: those of the single-turn questions (as before follow-ups were asked), then
    the follow-ups' own."""

    def met(ok: bool) -> str:
        return "met" if ok else "NOT met"

    s, f = summary["single-turn"], summary["follow-up"]
    correct = s["correct"] / s["questions"] if s["questions"] else 0.0
    attributed = s["attributed"] / s["answerable_correct"] if s["answerable_correct"] else 0.0
    follow_ups = f["correct"] / f["questions"] if f["questions"] else 0.0
    return (
        f"single-turn questions correct {correct:.0%} (target >= {TARGET_CORRECT:.0%}: "
        f"{met(correct >= TARGET_CORRECT)}); "
        f"unanswerable refused with no sources {s['refused_correctly']}/{s['unanswerable']} "
        f"(target all: {met(s['refused_correctly'] == s['unanswerable'])}); "
        f"correct answers attributed {attributed:.0%} (target >= {TARGET_ATTRIBUTED:.0%}: "
        f"{met(attributed >= TARGET_ATTRIBUTED)}); median turn {s['median_ms']:.0f} ms "
        f"(target < {TARGET_MEDIAN_MS:.0f} ms: {met(s['median_ms'] < TARGET_MEDIAN_MS)}); "
        f"follow-ups correct offline {_share(f['correct'], f['questions'])} "
        f"(target >= {TARGET_FOLLOW_UP:.0%}: {met(bool(f['questions']) and follow_ups >= TARGET_FOLLOW_UP)})"
    )


def write_design_results(run: dict) -> None:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    results = run["results"]["design"]
    LAST_RUN.write_text(
        json.dumps(
            {
                "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "commit": commit,
                "summary": summarise(results)["all"],
                "results": results,
            },
            indent=1,
            ensure_ascii=False,
        )
        + "\n"
    )


def result_line(r: dict) -> str:
    """One design question's result on one line: id, kind, verdict, how it ended, time, question."""
    how = (
        "error"
        if r["error"]
        else "refused"
        if r["refused"]
        else "attributed"
        if r["attributed"]
        else "cites " + ", ".join(r["cited"])
    )
    asked = f"{r['first'][:40]} -> {r['question'][:50]}" if r["kind"] == "follow-up" else r["question"][:60]
    return (
        f"{r['id']} {r['kind']:<12} {'correct' if r['correct'] else 'wrong':<7} {how[:40]:<40} "
        f"{r['ms']:6.0f} ms  {asked}"
    )


def print_design(run: dict) -> None:
    results = run["results"]["design"]
    for r in results:
        print(result_line(r))
    print("\n".join(kind_table(summarise(results))))
    print(verdicts(summarise(results)))
    print(
        f"stack up with the library indexed in {run['ready_s']:.0f} s, {turns(results)} turns in "
        f"{run['turns_s']:.0f} s; per-question results: {LAST_RUN.relative_to(ROOT)}"
    )


def library_section(run: dict) -> str:
    summaries = {split: summarise(rows) for split, rows in run["results"].items()}
    rows = [r for split_rows in run["results"].values() for r in split_rows]
    every = summarise(rows)
    n = every["all"]["questions"]
    lines = [
        "### Labelled questions over a real library, through the whole stack",
        "",
        f"{n} questions a researcher would ask of the fixture PDFs (bench/data/answers/, how they were "
        "written and split: its README), over a Zotero library built from Zotero's schema holding the five "
        "PDFs as their items and the items of a real Zotero database "
        f"({run['items']} items, {run['chunks']} chunks indexed). `python -m zocrates_runtime.stack` as "
        "`make run` starts it, no LLM configured (the offline answer writer answers), the default verifier; "
        "each question posted to `POST /chat` in turn and the `done` payload read from the stream; a follow-up "
        "is its first question then its second in the same session, and only the second turn is scored. "
        "Correct: an expected string in the answer's prose (for unanswerable questions: refused); "
        "attributed: the piece of the answer holding it cites a chunk of the expected item (an identifier "
        "answer may cite it in `references.cited`); refused: no citation and no cited source. "
        "Latency is client-side, POST to `done`. Scoring rules: the module docstring.",
        "",
    ]
    for split, summary in summaries.items():
        lines += [
            f"{SPLITS[split].capitalize()} split ({summary['all']['questions']} questions):",
            "",
            *kind_table(summary),
            "",
        ]
    if len(summaries) > 1:
        lines += [f"Both splits: {verdicts(every)}.", ""]
    lines += [
        f"Setup: library built and the stack up with it indexed in {run['ready_s']:.0f} s; "
        f"{turns(rows)} turns in {run['turns_s']:.0f} s. Per-question results of the design split: "
        "bench/data/answers/last_run_design.json; the held-out split is reported in aggregate only "
        "and nothing is tuned on it.",
        "",
        BEFORE_ISSUE_14,
    ]
    return "\n".join(lines)


#: The first run of this benchmark, on the code before the work of issue 14 ("Answers that
#: answer"), kept as the baseline the issue's figures are compared with.
BEFORE_ISSUE_14 = """\
#### Before issue 14 (a fixed note, not regenerated)

The first run of this benchmark, on the code before the work of issue 14 ("Answers that
answer"): commit `4ab92d2`, measured 2026-12-01 20:23 UTC on 2 cores (Intel Xeon), 24 GiB RAM,
Python 3.11.7, Linux, with `.venv/bin/python -m bench answers` (the libraries and services of
`4ab92d2` first on `PYTHONPATH`). Same library (10 items, 305 chunks), same questions.

| split | kind | questions | correct | attributed (of correct) | refused, no sources cited | errors | median ms | p90 ms |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| design | prose | 11 | 8/11 (73%) | 8/8 (100%) | 0 (wrongly) | 0 | 56 | 82 |
| design | table | 9 | 0/9 (0%) | - | 0 (wrongly) | 0 | 54 | 60 |
| design | paraphrase | 9 | 1/9 (11%) | 1/1 (100%) | 0 (wrongly) | 0 | 52 | 59 |
| design | unanswerable | 8 | 0/8 (0%) | - | 0 (correctly) | 0 | 60 | 75 |
| design | identifier | 7 | 0/7 (0%) | - | 0 (wrongly) | 5 | 102 | 141 |
| design | **all** | 44 | 9/44 (20%) | 9/9 (100%) | 0 correctly, 0 wrongly | 5 | 56 | 102 |
| held-out | prose | 5 | 4/5 (80%) | 4/4 (100%) | 0 (wrongly) | 0 | 58 | 59 |
| held-out | table | 5 | 0/5 (0%) | - | 0 (wrongly) | 0 | 60 | 68 |
| held-out | paraphrase | 5 | 1/5 (20%) | 1/1 (100%) | 0 (wrongly) | 0 | 47 | 61 |
| held-out | unanswerable | 4 | 0/4 (0%) | - | 0 (correctly) | 0 | 45 | 71 |
| held-out | identifier | 3 | 0/3 (0%) | - | 0 (wrongly) | 2 | 55 | 202 |
| held-out | **all** | 22 | 5/22 (23%) | 5/5 (100%) | 0 correctly, 0 wrongly | 2 | 55 | 68 |

Both splits: correct 14/66 (21%, target >= 85%: NOT met); unanswerable refused with no sources
0/12 (target all: NOT met); correct answers attributed 14/14 (100%, target >= 95%: met); median
turn 56 ms (target < 300 ms: met). What went wrong, from the design split's answers: no table
value was ever quoted (the prose around the table was, e.g. the search model 3NXQ for the PDB
code); 7 of the 8 unanswerable questions were answered with tangential quotes; every "I could
not find a passage in your library ..." answer (4 of the 44: a table question, an unanswerable
one and both exact-title lookups) still listed unrelated papers under `# Cited Sources` (the
zero-citation fallback); 7 of the 10 identifier questions (the DOIs and the arXiv id) went to
online discovery and ended in `discovery_unreachable`. The library was indexed and the stack
up in 51 s; the 66 turns took 4 s."""


def run(split: str = "all", verifier: str = "default", verifier_threads: str = "0") -> str | None:
    """Both parts on both splits, as the section of docs/benchmarks.md; `split="design"` runs the
    library part on the design questions only, prints it and writes nothing to the docs.
    `verifier` (a `ZOCRATES_VERIFIER_PROVIDER` value) runs the library part with that verifier in
    place of the default, prints each split's figures (the held-out one in aggregate) and writes
    nothing (`python -m bench answers --verifier heuristic`); `verifier_threads` sets its torch
    threads (`--verifier local --verifier-threads 1`)."""
    if split not in ("all", "design"):
        raise SystemExit(
            f"bench answers: --split must be 'all' or 'design', not {split!r} "
            "(the held-out questions are only ever run together with the design ones)"
        )
    if verifier != "default" or int(verifier_threads):
        result = ask_library(["design"] if split == "design" else list(SPLITS), verifier, int(verifier_threads))
        print(f"verifier: {json.dumps(result['verifier'])}")
        for name, rows in result["results"].items():
            print(f"{SPLITS[name]} split:")
            if name == "design":
                for r in rows:
                    print(result_line(r))
            print("\n".join(kind_table(summarise(rows))))
            print(verdicts(summarise(rows)))
        every = summarise([r for rows in result["results"].values() for r in rows])
        print(f"all: {verdicts(every)}; {result['turns_s']:.0f} s of turns")
        return None
    if split == "design":
        result = ask_library(["design"])
        write_design_results(result)
        print_design(result)
        return None
    result = ask_library(list(SPLITS))
    write_design_results(result)
    return "\n".join(
        [
            "## Offline answers",
            "",
            "Command: `.venv/bin/python -m bench answers` (module `bench/bench_answers.py`); "
            "`--split design` runs only the library part on the design questions and writes nothing here.",
            "",
            library_section(result),
            "",
            scifact_section(),
        ]
    )


if __name__ == "__main__":
    print(run())
