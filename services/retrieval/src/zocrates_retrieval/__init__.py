"""Zocrates retrieval: the researcher's Zotero library as searchable evidence.

Plain modules, adapters at the edge:

- `zotero`    read a Zotero data directory (a consistent snapshot of zotero.sqlite)
- `document`  what conversion makes: `Document`, `Block`, `ConversionError`
- `convert`   a file to a `Document` by its content type: `pdf` (layout, headings, running
              lines, hyphenation) or `markup` (HTML, text, markdown)
- `isolation` the converter's child process: memory cap, time limit, one file lost at worst
- `tables`    tables on PDF pages, found by their rules or PyMuPDF's finder
- `structure` section roles and answer units, the one owner of document structure
- `chunking`  section-aware chunks of bounded token length
- `embed`     the sentence-transformers embedder (offline) and the optional reranker
- `store`     the index: qdrant-edge (embedded) or a Qdrant server, one tenant gate
- `ingest`    incremental ingest by content hash
- `search`    hybrid dense + BM25 search fused by RRF, evidence chunks
- `service`   `RetrievalService`, the entry point the bus wiring calls
- `cli`       `python -m zocrates_retrieval.cli ingest|search|status`
- `testing`   Zotero data directories built from Zotero's own schema, for tests and benches
"""
