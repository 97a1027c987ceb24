"""Command line: ingest a Zotero library, search it, show what is indexed.

    python -m zocrates_retrieval.cli ingest --zotero-dir ~/Zotero
    python -m zocrates_retrieval.cli search "does heparin raise bleeding risk in trauma?"
    python -m zocrates_retrieval.cli status

Settings come from the environment (`ZOCRATES_RETRIEVAL_*`, `ZOCRATES_DATA_DIR`) and the
flags below. The embedded index allows one process at a time: stop a running retrieval
service before ingesting from here. `main(argv)` is reusable by a top-level `zocrates` script.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from zocrates_retrieval.config import RetrievalSettings


def _settings(args: argparse.Namespace) -> RetrievalSettings:
    overrides = {}
    if getattr(args, "zotero_dir", None):
        overrides["zotero_dir"] = Path(args.zotero_dir).expanduser()
    if getattr(args, "zotero_base_dir", None):
        overrides["zotero_base_dir"] = Path(args.zotero_base_dir).expanduser()
    if args.data_dir:
        overrides["data_dir"] = Path(args.data_dir).expanduser()
    return RetrievalSettings(**overrides)


def _open(settings: RetrievalSettings):
    from zocrates_retrieval.adapters.embed import Embedder
    from zocrates_retrieval.service import open_store

    embedder = Embedder.shared(
        settings.embedding_model, settings.embedding_device, settings.embedding_batch_size, settings.embedding_precision
    )
    return embedder, open_store(settings, embedder.dim)


def cmd_ingest(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from zocrates_retrieval.ingest import Ingestor

    settings = _settings(args)
    if settings.zotero_dir is None:
        print("no Zotero data directory: pass --zotero-dir or set ZOCRATES_ZOTERO_DIR", file=sys.stderr)
        return 2
    user = args.user or settings.local_user_id
    embedder, store = _open(settings)
    bar = tqdm(total=0, unit="file", desc="ingest", file=sys.stderr, disable=args.quiet)

    def on_progress(p) -> None:
        bar.total = p.sources_total
        bar.n = p.sources_done
        bar.set_postfix(chunks=p.chunks, failed=len(p.failures), refresh=False)
        bar.refresh()

    try:
        ingestor = Ingestor(
            store,
            embedder,
            chunk_tokens=settings.chunk_tokens,
            convert_timeout_s=settings.convert_timeout_s,
            convert_memory_mb=settings.convert_memory_mb,
            max_pages=settings.max_pages,
            linked_base_dir=settings.zotero_base_dir,
            recent_days=settings.recent_days,
            convert_workers=settings.convert_workers,
        )
        progress = ingestor.ingest_zotero(settings.zotero_dir, user, on_progress=on_progress)
    finally:
        bar.close()
        store.close()
    print(summary(progress))
    return 0 if progress.state == "done" else 1


def summary(p) -> str:
    """A human summary of an ingest run."""
    seconds = (p.finished_at or time.time()) - (p.started_at or time.time())
    rate = f" ({p.pages / seconds:.1f} pages/s)" if p.pages and seconds > 0 else ""
    lines = [
        f"{'Ingested' if p.state == 'done' else 'Ingest ' + p.state}: {p.source} for user {p.user_id!r} in {seconds:.1f} s",
        f"  libraries {p.libraries}, items {p.items}, attachments, notes and annotated files {p.sources_total}: "
        f"{p.indexed} indexed, {p.unchanged} unchanged, {p.removed} removed from the index",
        f"  chunks written {p.chunks}, PDF pages read {p.pages}{rate}",
    ]
    if p.error:
        lines.append(f"  error: {p.error}")
    if p.failures:
        by_reason = ", ".join(f"{reason} {n}" for reason, n in sorted(p.failures_by_reason().items()))
        lines.append(f"  not indexed {len(p.failures)}: {by_reason}")
        for f in p.failures[:50]:
            lines.append(f"    {f.reason:<12} {f.library_id}/{f.source_key}  {f.title[:60]!r}: {f.detail}")
        if len(p.failures) > 50:
            lines.append(f"    ... and {len(p.failures) - 50} more")
    return "\n".join(lines)


def cmd_search(args: argparse.Namespace) -> int:
    from zocrates_retrieval.adapters.store import Tenant
    from zocrates_retrieval.search import Searcher, to_evidence

    settings = _settings(args)
    embedder, store = _open(settings)
    try:
        started = time.perf_counter()
        hits = Searcher(store, embedder, candidates=settings.candidates).search(
            Tenant(args.user or settings.local_user_id, args.library), args.query, args.k, args.mode
        )
        took = (time.perf_counter() - started) * 1000
    finally:
        store.close()
    if args.json:
        print(json.dumps([to_evidence(h).model_dump(mode="json") for h in hits], indent=2))
        return 0
    if not hits:
        print("no passages found (is the library ingested? try `status`)")
        return 1
    for rank, hit in enumerate(hits, start=1):
        ev = to_evidence(hit)
        authors = ", ".join(c.last_name or c.name for c in ev.creators[:3]) + (
            " et al." if len(ev.creators) > 3 else ""
        )
        where = " | ".join(x for x in (ev.section, ev.pages.shown() if ev.pages else None) if x)
        print(f"[{rank}] {ev.title} ({authors or 'n.a.'}, {ev.year or 'n.d.'}) {where}")
        print(f"    {ev.text[:400]}{'...' if len(ev.text) > 400 else ''}\n")
    print(f"{len(hits)} passages in {took:.0f} ms ({args.mode})")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from zocrates_retrieval.adapters.store import Tenant, count_chunks, indexed_sources

    settings = _settings(args)
    _, store = _open(settings)
    try:
        user = args.user or settings.local_user_id
        versions = indexed_sources(store, Tenant(user))
        libraries = sorted({lib for lib, _ in versions})
        print(
            json.dumps(
                {
                    "user_id": user,
                    "chunks": count_chunks(store, Tenant(user)),
                    "sources": len(versions),
                    "libraries": libraries,
                    "zotero_dir": str(settings.zotero_dir) if settings.zotero_dir else None,
                },
                indent=2,
            )
        )
    finally:
        store.close()
    return 0


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog or "python -m zocrates_retrieval.cli", description="Zocrates library ingest and search"
    )
    parser.add_argument("--data-dir", help="Zocrates data directory (default: $ZOCRATES_DATA_DIR or ./data)")
    parser.add_argument("--user", help="the user whose library this is (default: the local user)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ingest", help="index a Zotero data directory (incremental)")
    p.add_argument("--zotero-dir", help="Zotero's data directory, holding zotero.sqlite and storage/")
    p.add_argument(
        "--zotero-base-dir",
        help="Zotero's Linked Attachment Base Directory (default: from "
        "Zotero's prefs.js), for linked files stored relative to it",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("search", help="search the indexed library")
    p.add_argument("query")
    p.add_argument("-k", type=int, default=8, help="passages to show")
    p.add_argument("--library", help="only this library (user, group-<id>)")
    p.add_argument("--mode", choices=("hybrid", "dense", "lexical"), default="hybrid")
    p.add_argument("--json", action="store_true", help="print EvidenceChunk JSON")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("status", help="what is indexed for the user")
    p.set_defaults(func=cmd_status)

    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except Exception as exc:  # a clear line, not a traceback, for the expected failures
        from zocrates_retrieval.adapters.store import StoreError
        from zocrates_retrieval.adapters.zotero import ZoteroReadError

        if isinstance(exc, (StoreError, ZoteroReadError, ValueError)):
            print(f"error: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
