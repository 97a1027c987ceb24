"""Retrieval's edges: PDF reading and its isolated converter, the embedding models, the chunk index (Qdrant), the Zotero database, the hosted catalog (KV) and files (object store)."""
