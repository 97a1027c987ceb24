"""Zocrates retrieval: the researcher's Zotero library as searchable evidence.

Read top-down: the bus wiring, the service, the plain modules it calls, the adapters.

- `app`       the bus subscribers, one per request, and the wiring of the stores
- `service`   `RetrievalService`: start, search, lookup, status, sync, upload, close
- `zotero`    read a Zotero data directory (a consistent snapshot of zotero.sqlite)
- `document`  what conversion makes: `Document`, `Block`, `ConversionError`
- `convert`   a file to a `Document` by its content type: `pdf` (layout, headings, running
              lines, hyphenation) or `markup` (HTML, text, markdown)
- `isolation` the converter's child process: memory cap, time limit, one file lost at worst
- `tables`    tables on PDF pages, found by their rules or PyMuPDF's finder
- `structure` section roles and answer units, the one owner of document structure
- `chunking`  section-aware chunks of bounded token length
- `ingest`    incremental ingest by content hash
- `search`    hybrid dense + BM25 search fused by RRF, evidence chunks
- `lookup`    which items of a user's library carry a DOI, arXiv id, PMID or title
- `status`    the `LibraryStatus` reply and the "not indexed yet" messages
- `indexing`  hosted libraries indexed one replica at a time, under a lease in the catalog
- `catalog`   adapter: the hosted libraries' catalog in the `zocrates_library_catalog` KV bucket
- `files`     adapter: the uploaded files in the `zocrates_library` object store
- `embed`     adapter: the sentence-transformers embedder (offline) and the optional reranker
- `store`     adapter: the index, qdrant-edge (embedded) or a Qdrant server, one tenant gate
- `cli`       `python -m zocrates_retrieval.cli ingest|search|status`

Test and bench libraries are built from Zotero's own schema by `tests/harness/zotero.py`.
"""
