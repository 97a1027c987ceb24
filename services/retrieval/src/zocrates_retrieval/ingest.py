"""Ingest a Zotero library into the index, incrementally.

Each source (an attachment file, a note, or the annotations made on a file) has a content
hash over its bytes, its parent's metadata and what shapes its chunks (index version, chunk
size, embedding model). A source whose hash is already indexed is not embedded again; where
its item sits (its collections and tags, `ItemMeta.placement`) is no part of the hash, and a
change of it is written onto the indexed chunks in place (`set_placement`). A changed one is
re-chunked and upserted under the same deterministic point ids, then its chunks of other
versions are deleted (so a search never sees the source missing); a source that is gone,
trashed or no longer convertible loses its chunks. Files that cannot be converted are
reported with their reason and the rest of the library still indexes.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import structlog

from zocrates_contracts import SCORED_UNITS, Creator
from zocrates_contracts.messages import UPLOAD_TYPES
from zocrates_retrieval.adapters.embed import Embedder
from zocrates_retrieval.adapters.isolation import ConverterPool, ConvertJob
from zocrates_retrieval.adapters.store import (
    ChunkPoint,
    ChunkStore,
    IndexedSource,
    SparseEncoder,
    Tenant,
    delete_source,
    encode_vectors,
    indexed_sources,
    point_id,
    set_placement,
    source_chunks,
)
from zocrates_retrieval.adapters.zotero import ItemMeta, Source, read_library
from zocrates_retrieval.domain.chunking import Chunk, chunk_blocks
from zocrates_retrieval.domain.document import MISSING, UNSUPPORTED, Block, ConversionError, Document, page_span
from zocrates_retrieval.domain.markup import convert_html
from zocrates_retrieval.domain.priority import ItemRef, file_order, promote, recent_since

log = structlog.get_logger(__name__)

#: Bump when conversion or chunking changes what a source turns into: everything re-indexes.
#: 6: each chunk carries its item's placement (`collection_keys`, `tags`).
#: 7: each chunk carries its `pages` (page index and printed label), which only a new
#: conversion knows: an index of an earlier version is indexed again, once.
#: 8: every part of a long table starts with its caption (cut short when long) and the column
#: headers in force, a header row mid-table included, so its rows read as rows of their table
#: (and a table's footnotes are footnotes, not rows);
#: the re-index also gives older files `domain.searchable`'s folding of mathematical letters
#: (not worth a version of its own: a question is rarely typeset so).
#: 9: in a table of words, a row's cells wrapped onto the lines below it are one row; text of
#: more than 40 words naming institutions is no longer an affiliation (an acknowledgement).
#: 10: a list without bullets in back matter (the people and bodies thanked) is read item by
#: item, where the PDF's layout shows the writer broke the line.
#: 11: in a table of numbers, a line of one cell in words labels the rows under it ("Sex",
#: then "female | 12 | 14" reads "Sex, female — ..."), and is no row of its own.
#: 12: a header of one cell naming the labels ("Parameter") names no value and its table's
#: one-cell lines label groups; a header line stopping on "the", "of", ... goes on onto the next;
#: a part of a long table opening mid-note is notes, not a row; a paragraph cut by a page break
#: (the next page goes on in lower case) is one paragraph, and a sentence may end in a quote.
#: 13: keywords, abbreviation lists and a search strategy's quoted terms are `term_list` units.
#: 14: a sentence opening with a name set in lower case ("h-BN nanoflakes ...") is a sentence.
#: 15: the paragraph after a bulleted list is no longer read as part of the list's last item;
#: a stop that lower-case text goes on after ends no sentence ("1 equiv.) in chloroform ...");
#: a page's notes between a sentence's halves are paragraphs of their own, the sentence goes on
#: past them ("... from" | "1These authors contributed ..." | "their C-domain counterparts ...");
#: a numbered heading run into its paragraph ("6.1.5 Analysis.") is not a sentence to quote; a
#: word hyphenated across two text blocks is joined as across two lines ("Partic-" | "ipants").
#: 16: a sentence goes on past a table or a figure's caption set between its halves, on its
#: page or at the top of the next ("While this" | Table 1 | "allows for effective reduction ...");
#: a paragraph too long for one chunk is cut where its sentences end, as its units are (not after
#: "et al." that a reference follows). 17: a page's note that PyMuPDF gives inside the running
#: text's block ("This review included all" | "* Correspondence: ...") is a paragraph of its own,
#: and the text after a note does not run into it.
INDEX_VERSION = "17"

#: Chunks embedded between two looks at `stop` (about a second of CPU with MiniLM).
EMBED_SLICE = 128

#: Abstracts written at a time by the pass that makes them searchable by their words.
LEXICAL_SLICE = 1024
#: The content hash of a source written without its dense vectors starts with this (so it is
#: never current: the next run embeds it).
LEXICAL = "lexical-"

#: Lab-hosted files are fetched from the object store this many at a time (bounded scratch disk).
FETCH_BATCH = 16

#: Materialises a source's file in a scratch directory and returns its path.
Fetch = Callable[[Source, Path], Path]

#: Content types we convert (the contract's, which the gateway checks uploads against); other
#: attachments (images, audio, ...) are counted as unsupported.
SUPPORTED_TYPES = UPLOAD_TYPES


@dataclass
class Failure:
    library_id: str
    source_key: str
    item_key: str
    title: str
    reason: str
    detail: str
    content_hash: str = ""  # of the version that failed: the same bytes are not tried again


@dataclass
class IngestProgress:
    """Progress and outcome of one ingest run; `as_dict()` is what GET /library/status shows."""

    user_id: str
    source: str = ""
    state: str = "idle"  # idle, running, done, stopped (service closing), failed
    libraries: int = 0
    items: int = 0
    attachments: int = 0  # files found (indexed or not); notes and annotations are not files
    sources_total: int = 0
    sources_done: int = 0
    indexed: int = 0
    unchanged: int = 0
    placed: int = 0  # unchanged sources whose item's collections or tags were updated in place
    removed: int = 0
    chunks: int = 0
    pages: int = 0
    abstracts: int = 0  # items whose abstract is searchable (indexed now or before)
    files_todo: int = 0  # files this run converts (new or changed)
    files_done: int = 0
    files_searchable: int = 0  # files found by their words (the first pass), embedded or not yet
    failures: list[Failure] = field(default_factory=list)
    started_at: float | None = None
    files_started_at: float | None = None  # when the first file was converted
    finished_at: float | None = None
    error: str | None = None

    def failures_by_reason(self) -> dict[str, int]:
        return dict(Counter(f.reason for f in self.failures))

    def as_dict(self) -> dict:
        out = asdict(self)
        out["failures_by_reason"] = self.failures_by_reason()
        out["seconds"] = round((self.finished_at or time.time()) - self.started_at, 2) if self.started_at else None
        out["pages_per_s"], out["eta_s"] = self.rate()
        return out

    def rate(self) -> tuple[float | None, float | None]:
        """Pages converted per second of the file phase, and the seconds it has left (files to
        go at the pace of those done; None until a file is done, 0 once all are)."""
        if self.files_started_at is None or not self.files_done:
            return None, None
        seconds = max((self.finished_at or time.time()) - self.files_started_at, 1e-6)
        left = 0.0 if self.state != "running" else seconds / self.files_done * (self.files_todo - self.files_done)
        return round(self.pages / seconds, 2), round(max(left, 0.0), 1)

    def summary(self) -> dict:
        """What the log says when a run ends."""
        pages_per_s, _ = self.rate()
        return {
            "state": self.state,
            "seconds": self.as_dict()["seconds"],
            "indexed": self.indexed,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "abstracts": self.abstracts,
            "files_searchable": self.files_searchable,
            "pages": self.pages,
            "chunks": self.chunks,
            "pages_per_s": pages_per_s,
            "failures_by_reason": self.failures_by_reason(),
        }


class Ingestor:
    """Turns Zotero sources into indexed chunks for one store and one embedding model."""

    def __init__(
        self,
        store: ChunkStore,
        embedder: Embedder,
        sparse: SparseEncoder | None = None,
        chunk_tokens: int = 200,
        convert_timeout_s: float = 120.0,
        convert_memory_mb: int = 2048,
        max_pages: int = 2000,
        optimize_after: int = 1,
        linked_base_dir: Path | None = None,
        recent_days: float = 30.0,
        convert_workers: int = 0,
    ):
        self.store = store
        self.embedder = embedder
        self.sparse = sparse or SparseEncoder()
        self.chunk_tokens = chunk_tokens
        self.convert_timeout_s = convert_timeout_s
        self.convert_memory_mb = convert_memory_mb
        self.max_pages = max_pages
        self.convert_workers = convert_workers  # 0: one converter per core, at most four
        self.optimize_after = optimize_after
        self.linked_base_dir = linked_base_dir  # Zotero's Linked Attachment Base Directory
        self.recent_days = recent_days  # files of items changed this recently go first
        self._running: set[str] = set()  # users whose run is going
        self._cited_now: dict[str, list[ItemRef]] = {}  # cited during their run, by user (`cited`)
        self._cited_lock = threading.Lock()
        self._written = 0  # chunks written or sources removed since the last optimize()
        self.stop = threading.Event()

    def ingest_zotero(
        self,
        zotero_dir: Path,
        user_id: str,
        progress: IngestProgress | None = None,
        on_progress: Callable[[IngestProgress], None] | None = None,
        *,
        cited: Sequence[ItemRef] = (),
    ) -> IngestProgress:
        """Bring `user_id`'s part of the index in line with the Zotero data directory.
        `cited`: the items cited in the user's recent answers, the most recent first (their
        files are converted early: `domain.priority`)."""

        def load() -> tuple[list[Source], int, int]:
            snap = read_library(Path(zotero_dir), self.linked_base_dir)
            return snap.sources, len(snap.libraries), len(snap.items)

        return self._run(str(zotero_dir), user_id, load, progress, on_progress, cited=cited)

    def ingest_sources(
        self,
        sources: list[Source],
        user_id: str,
        progress: IngestProgress | None = None,
        on_progress: Callable[[IngestProgress], None] | None = None,
        *,
        label: str = "",
        libraries: int = 0,
        items: int = 0,
        fetch: Fetch | None = None,
        known_failures: Iterable[Failure] = (),
        cited: Sequence[ItemRef] = (),
    ) -> IngestProgress:
        """Bring `user_id`'s part of the index in line with `sources`, the whole of their library
        (anything indexed for the user that is not among them is deleted).

        An attachment without a local `path` is materialised by `fetch(source, scratch_dir)`
        just before conversion (a lab-hosted file in the object store), a batch at a time.
        A source whose content hash matches one of `known_failures` is reported failed again
        without being converted again. `cited`: as in `ingest_zotero`.
        """
        return self._run(
            label,
            user_id,
            lambda: (sources, libraries, items),
            progress,
            on_progress,
            fetch=fetch,
            known_failures=known_failures,
            cited=cited,
        )

    def _run(
        self,
        label: str,
        user_id: str,
        load: Callable[[], tuple[list[Source], int, int]],
        progress: IngestProgress | None,
        on_progress: Callable[[IngestProgress], None] | None,
        **options,
    ) -> IngestProgress:
        progress = progress or IngestProgress(user_id=user_id)
        progress.source, progress.state, progress.started_at = label, "running", time.time()
        notify = on_progress or (lambda p: None)
        with self._cited_lock:
            self._running.add(user_id)
        try:
            sources, progress.libraries, progress.items = load()
            self._ingest(sources, user_id, progress, notify, **options)
            progress.state = "stopped" if self.stop.is_set() else "done"
        except Exception as exc:
            log.exception("ingest failed", library=label)
            progress.state, progress.error = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            with self._cited_lock:
                self._running.discard(user_id)
                self._cited_now.pop(user_id, None)  # the next run reads them from the user's list
            progress.finished_at = time.time()
            notify(progress)
        log.info("indexing finished", library=label, user_id=user_id, **progress.summary())
        return progress

    def _ingest(
        self,
        sources: list[Source],
        user_id: str,
        progress: IngestProgress,
        notify: Callable[[IngestProgress], None],
        *,
        fetch: Fetch | None = None,
        known_failures: Iterable[Failure] = (),
        cited: Sequence[ItemRef] = (),
    ) -> None:
        known = {(f.library_id, f.source_key): f for f in known_failures}
        indexed = indexed_sources(self.store, Tenant(user_id))
        keep: set[tuple[str, str]] = set()
        todo: list[tuple[Source, str]] = []
        progress.sources_total = len(sources)
        progress.attachments = sum(1 for src in sources if src.kind == "attachment")
        for src in sources:
            if src.kind == "attachment" and src.content_type not in SUPPORTED_TYPES:
                self._fail(progress, src, UNSUPPORTED, f"{src.content_type or 'unknown type'} is not indexed")
                continue
            if src.kind == "attachment" and src.missing_reason:
                self._fail(progress, src, src.missing_code, src.missing_reason)
                continue
            digest = self._content_hash(src)
            have = indexed.get((src.library_id, src.key))
            if have is not None and self._still_current(user_id, src, digest, have, progress):
                keep.add((src.library_id, src.key))
                progress.unchanged += 1
                progress.sources_done += 1
                progress.abstracts += src.kind == "abstract"
                continue
            failed = known.get((src.library_id, src.key))
            if failed is not None and failed.content_hash == digest:  # same bytes failed before
                progress.failures.append(failed)
                progress.sources_done += 1
                continue
            todo.append((src, digest))
        notify(progress)

        # What needs no conversion first (abstracts, notes, annotations: a 5,000-item library
        # answers from its abstracts within its first minute), then the files: recently changed
        # items, then items cited in the user's recent answers, then the rest (`domain.priority`).
        texts = [(s, h) for s, h in todo if s.kind != "attachment"]
        files = file_order(
            [(s, h) for s, h in todo if s.kind == "attachment"],
            lambda f: (_ref(f[0]), f[0].item.modified),
            cited,
            recent_since(datetime.now(UTC), self.recent_days),
        )
        progress.files_todo = len(files)
        # Abstracts are searchable by their words first (a few seconds for thousands), by their
        # meaning once embedded: until then they are written under a `LEXICAL` content hash, so
        # a run stopped in between embeds them next time.
        abstracts = [(s, h) for s, h in texts if s.kind == "abstract"]
        for start in range(0, len(abstracts), LEXICAL_SLICE):
            if self.stop.is_set():
                return
            batch = [(src, digest, _convert_text(src)) for src, digest in abstracts[start : start + LEXICAL_SLICE]]
            progress.abstracts += len(self._index_many(user_id, batch, progress, lexical=True))
            notify(progress)
        for start in range(0, len(texts), EMBED_SLICE):
            if self.stop.is_set():
                return
            batch = [(src, digest, _convert_text(src)) for src, digest in texts[start : start + EMBED_SLICE]]
            for src in self._index_many(user_id, batch, progress):
                keep.add((src.library_id, src.key))
            notify(progress)
        # Files, like abstracts, are searchable by their words first: conversion runs at tens of
        # pages a second, embedding at a few. A file written so in an earlier run that stopped
        # is not converted for that pass again; one that cannot be converted is reported once.
        # The embedding pass reads the chunks the first one wrote: no file is fetched or
        # converted twice.
        progress.files_started_at = time.time()
        pages: dict[tuple[str, str], int] = {}
        with (
            ConverterPool(
                self.convert_timeout_s,
                self.convert_memory_mb,
                self.max_pages,
                stop=self.stop,
                workers=self.convert_workers,
            ) as pool,
            tempfile.TemporaryDirectory(prefix="zocrates-ingest-") as scratch,
        ):
            read = [(s, h) for s, h in files if _lexical_current(indexed.get((s.library_id, s.key)), h)]
            done = {(s.library_id, s.key) for s, _ in read}
            unread = [(s, h) for s, h in files if (s.library_id, s.key) not in done]
            progress.files_searchable += len(read)
            for src, digest, result in self._converted(user_id, unread, pool, Path(scratch), fetch, progress):
                if isinstance(result, ConversionError):
                    self._fail(progress, src, result.reason, result.detail, digest)
                    progress.files_done += 1
                elif self._index_many(user_id, [(src, digest, result)], progress, lexical=True):
                    progress.files_searchable += 1
                    read.append((src, digest))
                    pages[(src.library_id, src.key)] = result.pages
                else:
                    self._fail(progress, src, "empty", "no text after conversion", digest)
                    progress.files_done += 1
                notify(progress)
        # embedded in the order they were read (answers cited meanwhile moved theirs up)
        while read:
            if self.stop.is_set():
                return
            (src, digest), *read = self._cited_first(user_id, read)
            if self._embed_read(user_id, src, digest, pages.get((src.library_id, src.key)), progress):
                keep.add((src.library_id, src.key))
            progress.files_done += 1
            notify(progress)

        if self.stop.is_set():
            return  # an unfinished run deletes nothing: what it did not reach is not gone
        for library_id, source_key in set(indexed) - keep:  # gone, trashed, or now failing
            delete_source(self.store, Tenant(user_id, library_id), source_key)
            progress.removed += 1
        if progress.indexed or progress.removed:
            self._written += progress.chunks + progress.removed
            if self._written >= self.optimize_after and self.store.optimize():
                self._written = 0  # else (a failed or dropped build) the next run tries again

    def cited(self, user_id: str, refs: Sequence[ItemRef]) -> None:
        """Items just cited in an answer of `user_id` (the most recent first): if a run of that
        user's is converting files, the files of these items still waiting go next (without a
        run going, nothing: the next run reads the user's recently cited items)."""
        with self._cited_lock:
            if user_id in self._running:
                self._cited_now[user_id] = [*refs, *self._cited_now.get(user_id, [])]

    def _converted(
        self,
        user_id: str,
        files: list[tuple[Source, str]],
        pool: ConverterPool,
        scratch: Path,
        fetch: Fetch | None,
        progress: IngestProgress,
    ) -> Iterator[tuple[Source, str, Document | ConversionError]]:
        """Each file converted, in priority order (the user's newly cited items moved up between
        batches); a lab-hosted file is fetched into `scratch` first and deleted after. A file
        that cannot be fetched is reported, not yielded; stops when asked to."""
        while files:
            if self.stop.is_set():
                return
            files = self._cited_first(user_id, files)
            batch: list[tuple[Source, str]] = []  # a list: two attachments may link one file
            jobs: list[ConvertJob] = []
            taken, files = files[:FETCH_BATCH], files[FETCH_BATCH:]
            for src, digest in taken:
                path = src.path
                if path is None:
                    try:
                        if fetch is None:
                            raise FileNotFoundError("no local file and nothing to fetch it from")
                        path = fetch(src, scratch)
                    except Exception as exc:  # noqa: BLE001 - reported; the rest still indexes
                        # no content hash: a fetch failure is retried on the next run
                        self._fail(progress, src, MISSING, f"the uploaded file could not be read: {exc}")
                        continue
                batch.append((src, digest))
                jobs.append(ConvertJob(path, src.content_type))
            try:  # results come in the order of the jobs (ConverterPool.convert_many)
                for (src, digest), (_, result) in zip(batch, pool.convert_many(jobs)):
                    if self.stop.is_set():
                        return  # the next run picks up where this one stopped
                    yield src, digest, result
            finally:
                for job in jobs:  # fetched copies are scratch; Zotero's own files are not ours
                    if job.path.parent == scratch:
                        job.path.unlink(missing_ok=True)

    def _cited_first(self, user_id: str, files: list[tuple[Source, str]]) -> list[tuple[Source, str]]:
        """`files` (still to convert) with those of the items cited during this run first."""
        with self._cited_lock:
            refs = self._cited_now.pop(user_id, None)
        return promote(files, lambda f: _ref(f[0]), refs) if refs else files

    def _still_current(
        self, user_id: str, src: Source, digest: str, have: IndexedSource, progress: IngestProgress
    ) -> bool:
        """Whether the indexed version of `src` is this one (then its item's placement is
        brought up to date in place, when it changed); False: it must be indexed again."""
        placement = src.item.placement()
        if have.content_hash == digest:
            if have.placement != placement:
                set_placement(self.store, Tenant(user_id, src.library_id), src.key, placement)
                progress.placed += 1
            return True
        return False

    def _content_hash(self, src: Source) -> str:
        h = hashlib.sha256()
        shape = {
            "v": INDEX_VERSION,
            "tokens": self.chunk_tokens,
            "model": self.embedder.name,
            "kind": src.kind,
            "item": src.item.payload(),
        }
        h.update(json.dumps(shape, sort_keys=True, default=str).encode())
        if src.abstract is not None:
            h.update(src.abstract.encode())
        elif src.note_html is not None:
            h.update(src.note_html.encode())
        elif src.annotations:
            h.update(json.dumps([asdict(a) for a in src.annotations], sort_keys=True).encode())
        elif src.sha256 is not None:  # an uploaded file: its SHA-256 was taken on upload
            h.update(src.sha256.encode())
        elif src.path is not None:
            with open(src.path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
        return h.hexdigest()[:32]

    def _fail(self, progress: IngestProgress, src: Source, reason: str, detail: str, digest: str = "") -> None:
        progress.failures.append(Failure(src.library_id, src.key, src.item.key, src.item.title, reason, detail, digest))
        progress.sources_done += 1

    def _index_many(
        self,
        user_id: str,
        converted: list[tuple[Source, str, Document | ConversionError]],
        progress: IngestProgress,
        lexical: bool = False,
    ) -> list[Source]:
        """Index converted sources, their chunks embedded together (many small sources, such as
        abstracts, fill the model's batches); returns those indexed. One without text is
        reported failed; none is written when asked to stop. `lexical`: written without dense
        vectors (found by their words only) under the hash `LEXICAL + digest`, and not counted
        as indexed: the pass that embeds them follows."""
        ready: list[tuple[Source, str, Document, ItemMeta, list[Chunk], list[str]]] = []
        for src, digest, result in converted:
            if isinstance(result, ConversionError):
                if not lexical:
                    self._fail(progress, src, result.reason, result.detail, digest)
                continue
            meta = _with_fallbacks(src.item, result)
            chunks = chunk_blocks(result.blocks, self.chunk_tokens, self.embedder.count_tokens)
            if not chunks:
                if not lexical:
                    self._fail(progress, src, "empty", "no text after conversion", digest)
                continue
            chunks = [_with_role(src, c) for c in chunks]
            texts = [_embedding_text(meta.title, c.section_label, c.text) for c in chunks]
            ready.append((src, digest, result, meta, chunks, texts))
        n = sum(len(chunks) for *_, chunks, _ in ready)
        if lexical:
            vectors, unit_vectors = [None] * n, [np.zeros((0, self.embedder.dim), dtype=np.float32)] * n
        else:
            embedded = self._embed(
                [t for *_, texts in ready for t in texts],
                [
                    _scored_spans(t, c.text, [(u.kind, u.start, u.end) for u in c.units])
                    for *_, chunks, texts in ready
                    for t, c in zip(texts, chunks)
                ],
            )
            if embedded is None:
                return []
            vectors, unit_vectors = embedded
        at = 0
        for src, digest, doc, meta, chunks, texts in ready:
            written = LEXICAL + digest if lexical else digest
            points = [
                ChunkPoint(
                    id=point_id(user_id, src.library_id, src.key, no),
                    dense=vectors[at + no],
                    sparse=self.sparse.document(texts[no]),
                    payload=_payload(
                        user_id, src, meta, c, no, written, _kind(src, c), unit_vectors[at + no], doc.page_labels
                    ),
                )
                for no, c in enumerate(chunks)
            ]
            at += len(chunks)
            for start in range(0, len(points), 256):
                self.store.upsert(points[start : start + 256])
            delete_source(self.store, Tenant(user_id, src.library_id), src.key, keep_hash=written)
            if not lexical:
                progress.indexed += 1
                progress.sources_done += 1
                progress.chunks += len(points)
                progress.pages += doc.pages
        return [src for src, *_ in ready]

    def _embed_read(self, user_id: str, src: Source, digest: str, pages: int | None, progress: IngestProgress) -> bool:
        """Embed a file the first pass wrote by its words, from the chunks the index holds of it
        (their text, units and metadata, and where its item sits now), so that it is neither
        fetched nor converted again. False when none is there, or when asked to stop."""
        tenant = Tenant(user_id, src.library_id)
        chunks = source_chunks(self.store, tenant, src.key, LEXICAL + digest)
        if not chunks:
            return False
        texts = [_embedding_text(c["title"], c["section"], c["text"]) for c in chunks]
        embedded = self._embed(texts, [_scored_spans(t, c["text"], c["units"]) for t, c in zip(texts, chunks)])
        if embedded is None:
            return False
        vectors, unit_vectors = embedded
        points = [
            ChunkPoint(
                id=point_id(user_id, src.library_id, src.key, c["chunk_no"]),
                dense=vectors[no],
                sparse=self.sparse.document(texts[no]),
                payload=c | {"content_hash": digest, "unit_vectors": encode_vectors(unit_vectors[no])},
            )
            for no, c in enumerate(chunks)
        ]
        for start in range(0, len(points), 256):
            self.store.upsert(points[start : start + 256])
        delete_source(self.store, tenant, src.key, keep_hash=digest)
        progress.indexed += 1
        progress.sources_done += 1
        progress.chunks += len(points)
        progress.pages += pages if pages is not None else _pages_of(chunks)
        return True

    def _embed(
        self, texts: list[str], spans: list[list[tuple[int, int]]]
    ) -> tuple[np.ndarray, list[np.ndarray]] | None:
        """Each chunk's vector and its scored units' vectors (`spans`: `_scored_spans`), from
        one pass of the model over the chunk in its context (`texts`: `_embedding_text`); a
        slice at a time, so that a long file stops promptly on shutdown (None when it was
        asked to stop)."""
        vectors, unit_vectors = [np.zeros((0, self.embedder.dim), dtype=np.float32)], []
        for start in range(0, len(texts), EMBED_SLICE):
            if self.stop.is_set():
                return None
            dense, per_chunk = self.embedder.embed_with_spans(
                texts[start : start + EMBED_SLICE], spans[start : start + EMBED_SLICE]
            )
            vectors.append(dense)
            unit_vectors += per_chunk
        return np.concatenate(vectors), unit_vectors


def _lexical_current(have: IndexedSource | None, digest: str) -> bool:
    """Whether this version of a file was already written by its words (a run that stopped
    before embedding it): then only the embedding pass is left."""
    return have is not None and have.content_hash == LEXICAL + digest


def _ref(src: Source) -> ItemRef:
    """The item a source belongs to, as answers cite it."""
    return (src.library_id, src.item.key)


def _convert_text(src: Source) -> Document | ConversionError:
    """A source that is text already: a note, the annotations on a file, an abstract."""
    if src.kind == "annotations":
        return _convert_annotations(src)
    if src.kind == "abstract":
        return Document(blocks=[Block(src.abstract or "", ("Abstract",))])
    try:
        return convert_html(src.note_html or "")
    except ConversionError as exc:
        return exc


def _convert_annotations(src: Source) -> Document:
    """A researcher's annotations on one file, each a block of its own (kind "annotation") in
    the section "Annotations > p. <label>": the highlighted passage in quotes, then the
    comment. Each keeps its page and the label Zotero gave it (`Document.page_labels`)."""
    blocks = []
    labels: dict[int, str] = {}
    for a in src.annotations:
        parts = [f"“{a.text}”"] if a.text else []
        if a.comment:
            parts.append(f"Comment: {a.comment}" if a.text else a.comment)
        label = a.page_label or (str(a.page) if a.page else "")
        section = ("Annotations", f"p. {label}") if label else ("Annotations",)
        blocks.append(Block("\n".join(parts), section, a.page, "annotation"))
        if a.page is not None and a.page_label:
            labels[a.page] = a.page_label[:32]
    return Document(blocks=blocks, page_labels=labels)


def _with_fallbacks(item: ItemMeta, doc: Document) -> ItemMeta:
    """Zotero's metadata, completed from the document's own where Zotero's is empty."""
    changes = {}
    if not item.title and doc.title:
        changes["title"] = doc.title
    if not item.creators and doc.authors:
        # PDF "Author" fields separate people by ";" (commas may sit inside a name)
        changes["creators"] = tuple(Creator(name=a.strip()) for a in doc.authors.split(";") if a.strip())[:20]
    if not item.doi and doc.doi:
        changes["doi"] = doc.doi
    return replace(item, **changes) if changes else item


def _with_role(src: Source, chunk: Chunk) -> Chunk:
    """A Zotero note's chunks have the role `note` whatever their headings say."""
    return replace(chunk, role="note") if src.kind == "note" else chunk


def _kind(src: Source, chunk: Chunk) -> str:
    """`note` for Zotero notes, `abstract` for a document's abstract, else the chunk's own kind
    (`text`, `table`, `annotation`)."""
    if src.kind == "note":
        return "note"
    if chunk.section and chunk.section[0].strip().rstrip(".:").lower() == "abstract":
        return "abstract"
    return chunk.kind


def _embedding_text(title: str | None, section: str | None, text: str) -> str:
    """What the models read: the passage in its context (title, section); the user sees only
    the passage."""
    head = " — ".join(x for x in (title, section) if x)
    return f"{head}\n{text}" if head else text


def _scored_spans(embedded: str, text: str, units: Iterable[Sequence]) -> list[tuple[int, int]]:
    """Where in `embedded` (`_embedding_text`, which ends with the chunk's `text`) the chunk's
    scored units lie (`SCORED_UNITS`: how an answer picks what to quote); `units` as
    (kind, start, end, ...) within `text`."""
    at = len(embedded) - len(text)
    return [(at + start, at + end) for kind, start, end, *_ in units if kind in SCORED_UNITS]


def _pages_of(chunks: list[dict]) -> int:
    """A file's pages as its chunks tell them (up to the last page with text), for a file read
    by an earlier run."""
    last = [p["index"] if p.get("last_index") is None else p["last_index"] for c in chunks if (p := c.get("pages"))]
    return max(last) + 1 if last else 0


def _payload(
    user_id: str,
    src: Source,
    meta: ItemMeta,
    chunk: Chunk,
    no: int,
    digest: str,
    kind: str,
    unit_vectors: np.ndarray,
    page_labels: dict[int, str],
) -> dict:
    pages = page_span(chunk.page, chunk.page_end, page_labels)
    return {
        "user_id": user_id,
        "library_id": src.library_id,
        "source_key": src.key,
        "attachment_key": src.key if src.kind == "attachment" else src.attachment_key,
        "chunk_no": no,
        "content_hash": digest,
        "text": chunk.text,
        "section": chunk.section_label,
        "pages": pages.model_dump() if pages else None,
        "kind": kind,
        "role": chunk.role,
        "units": [[u.kind, u.start, u.end, u.text] for u in chunk.units],
        "unit_vectors": encode_vectors(unit_vectors),
        **meta.payload(),
        **meta.placement(),
    }
