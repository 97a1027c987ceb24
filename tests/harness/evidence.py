"""Evidence chunks for tests of the answer writer, with their answer units found the way
retrieval finds them at ingest (`zocrates_retrieval.domain.chunking`), so that the gateway's tests
read units exactly as they arrive over the bus."""

from __future__ import annotations

from pathlib import Path

from zocrates_contracts import SCORED_UNITS, AnswerUnit, EvidenceChunk


def units_of(text: str, role: str = "body", kind: str = "text") -> list[AnswerUnit]:
    """`text`'s units as retrieval would find them; a table's text is caption, header, rows."""
    from zocrates_retrieval.domain.structure import prose_units, table_units

    if kind == "table":
        found = table_units(text, 0, len(text), head_lines=2 if "\n" in text else 0)
    else:
        found = [u for start, end in _paragraphs(text) for u in prose_units(text, start, end, role)]
    return [AnswerUnit(kind=u.kind, start=u.start, end=u.end, text=u.text) for u in found]


def _paragraphs(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for line in text.split("\n"):
        if line.strip():
            spans.append((start, start + len(line)))
        start += len(line) + 1
    return spans


def with_units(chunk: EvidenceChunk, text: str | None = None) -> EvidenceChunk:
    """`chunk` (with `text` instead of its own, if given) and the units of its text."""
    text = chunk.text if text is None else text
    return chunk.model_copy(update={"text": text, "units": units_of(text, chunk.role, chunk.kind)})


def evidence_chunk(
    n: int,
    text: str,
    section: str | None = "Results",
    kind: str = "text",
    role: str | None = None,
    item_key: str | None = None,
) -> EvidenceChunk:
    """Chunk `n` of a made-up library, its units found as at ingest."""
    role = role or ("abstract" if kind == "abstract" else "body")
    return EvidenceChunk(
        chunk_id=f"c{n}",
        item_key=item_key or f"ITEM{n:04d}",
        section=section,
        text=text,
        kind=kind,
        role=role,
        units=units_of(text, role, kind),
    )


def scored(question: str, chunks: list[EvidenceChunk]) -> list[EvidenceChunk]:
    """`chunks` with each quotable unit's similarity to `question`, as retrieval scores them at
    search time: the shipped embedding model, the unit's vector stored as at ingest."""
    from zocrates_retrieval.adapters.embed import Embedder
    from zocrates_retrieval.adapters.store import encode_vectors
    from zocrates_retrieval.config import RetrievalSettings
    from zocrates_retrieval.search import answer_units

    embedder = Embedder.shared(RetrievalSettings().embedding_model)
    query = embedder.embed_query(question)
    out = []
    for chunk in chunks:
        key = (chunk.chunk_id, chunk.text)
        if key not in _UNIT_VECTORS:  # embedded once, as at ingest: in the passage's context
            head = " — ".join(x for x in (chunk.title, chunk.section) if x)
            text = f"{head}\n{chunk.text}" if head else chunk.text
            shift = len(text) - len(chunk.text)
            spans = [(shift + u.start, shift + u.end) for u in chunk.units if u.kind in SCORED_UNITS]
            _UNIT_VECTORS[key] = encode_vectors(embedder.embed_with_spans([text], [spans])[1][0])
        payload = {"units": [[u.kind, u.start, u.end, u.text] for u in chunk.units], "unit_vectors": _UNIT_VECTORS[key]}
        out.append(chunk.model_copy(update={"units": answer_units(payload, query)}))
    return out


_UNIT_VECTORS: dict[tuple[str, str], str] = {}


def fixture_pdf_chunks(pdfs: Path, chunk_tokens: int = 200) -> list[EvidenceChunk]:
    """Every chunk retrieval makes of the fixture PDFs, with roles and units (no similarity:
    that is scored at search time)."""
    from zocrates_retrieval.adapters.pdf import convert_pdf
    from zocrates_retrieval.domain.chunking import approx_tokens, chunk_blocks

    chunks = []
    for pdf in sorted(pdfs.glob("*/*.pdf")):
        doc = convert_pdf(pdf)
        for n, chunk in enumerate(chunk_blocks(doc.blocks, chunk_tokens, approx_tokens)):
            chunks.append(
                EvidenceChunk(
                    chunk_id=f"{pdf.stem}-{n}",
                    item_key=pdf.stem[:8].upper(),
                    title=doc.title or "",
                    section=chunk.section_label,
                    text=chunk.text,
                    kind=chunk.kind,
                    role=chunk.role,
                    units=[AnswerUnit(kind=u.kind, start=u.start, end=u.end, text=u.text) for u in chunk.units],
                )
            )
    return chunks
