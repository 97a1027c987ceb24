"""Zocrates retrieval: the researcher's Zotero library as searchable evidence.

Read top-down: the bus wiring, the service, the plain modules it calls (`domain/`), the
adapters (`adapters/`).

- `app`       the bus subscribers, one per request, and the wiring of the stores
- `service`   `RetrievalService`: start, search, lookup, status, sync, upload, close
- `convert`   a file to a `Document` by its content type: `adapters.pdf` or `domain.markup`
- `ingest`    incremental ingest by content hash
- `search`    hybrid dense + BM25 search fused by normalised scores (DBSF), evidence chunks
- `lookup`    which items of a user's library carry a DOI, arXiv id, PMID or title
- `status`    the `LibraryStatus` reply and the "not indexed yet" messages
- `indexing`  hosted libraries indexed one replica at a time, under a lease in the catalog
- `cli`       `python -m zocrates_retrieval.cli ingest|search|status`

`domain/`, plain functions and data:
- `document`  what conversion makes: `Document`, `Block`, `ConversionError`
- `structure` section roles and answer units, the one owner of document structure
- `tables`    tables on PDF pages, found by their rules or PyMuPDF's finder
- `markup`    HTML, text and markdown to a `Document`
- `chunking`  section-aware chunks of bounded token length

`adapters/`, the edges:
- `pdf`        PDF layout: headings, running lines, hyphenation
- `isolation`  the converter's child process: memory cap, time limit, one file lost at worst
- `zotero`     read a Zotero data directory (a consistent snapshot of zotero.sqlite)
- `catalog`    the hosted libraries' catalog in the `zocrates_library_catalog` KV bucket
- `files`      the uploaded files in the `zocrates_library` object store
- `embed`      the sentence-transformers embedder (offline) and the optional reranker
- `store`      the index, qdrant-edge (embedded) or a Qdrant server, one tenant gate
- `edge_build` the embedded index's HNSW build, in a process of its own

Test and bench libraries are built from Zotero's own schema by `tests/harness/zotero.py`.
"""
