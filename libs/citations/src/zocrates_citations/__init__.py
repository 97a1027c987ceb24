"""Zocrates citation core: pure, synchronous, deterministic citation logic.

Parsing of citation tokens, per-occurrence claim extraction, verified resolution into two
tiers of sources, the clean views of an answer, APA author labels, the evidence block the
synthesizer reads, the segmentation of source passages for sentence-level attribution, and the
export of an answer for a manuscript (Pandoc citations, BibTeX, CSL-JSON).
"""

from zocrates_citations.authors import format_authors
from zocrates_citations.claims import (
    Bracket,
    ClaimOccurrence,
    ParsedAnswer,
    extract_claim_occurrences,
    parse_answer,
)
from zocrates_citations.evidence_xml import format_evidence_xml
from zocrates_citations.export import ExportedAnswer, export_answer
from zocrates_citations.parsing import TOKEN_RE
from zocrates_citations.resolve import (
    Resolution,
    VerificationCounts,
    resolve_citations_and_references,
    split_sources,
    upgrade_turn_record,
)
from zocrates_citations.segments import Span, segment_source_text
from zocrates_citations.views import build_coordinator_view, strip_citations, to_author_year

__all__ = [
    "TOKEN_RE",
    "Bracket",
    "ClaimOccurrence",
    "ExportedAnswer",
    "ParsedAnswer",
    "Resolution",
    "Span",
    "VerificationCounts",
    "build_coordinator_view",
    "export_answer",
    "extract_claim_occurrences",
    "format_authors",
    "format_evidence_xml",
    "parse_answer",
    "resolve_citations_and_references",
    "segment_source_text",
    "split_sources",
    "strip_citations",
    "to_author_year",
    "upgrade_turn_record",
]
