"""Identifier and title normalisation: one canonical form for every service that compares them
(retrieval's library lookup, discovery's library index, novelty filter and providers, the
gateway reading a message).

DOIs are case-insensitive (the DOI Handbook), so the canonical form is lower case without any
resolver prefix (`https://doi.org/`, `doi:`, `info:doi/`) and URL-decoded. arXiv ids lose their
version (`v2`), so a preprint matches every version of itself; old-style ids keep their archive
(`hep-th/9901001`) but lose the optional subject class (`math.GT/0309136` is `math/0309136`).
An arXiv DOI (`10.48550/arXiv.<id>`) is both a DOI and an arXiv id. PubMed ids are digits
(Zotero keeps them in Extra as `PMID: 12345678`). Titles are compared the way
Zotero's duplicate finder does: diacritics removed, every run of punctuation or space one space,
lower case (markup from Crossref or OpenAlex titles is dropped first).
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote

_DOI_RE = re.compile(r"10\.\d{4,9}/[^\s\"'<>]+", re.IGNORECASE)
_DOI_URL_RE = re.compile(r"^(?:https?://)?(?:dx\.)?doi\.org/(.+)$", re.IGNORECASE)
_DOI_SCHEME_RE = re.compile(r"^(?:doi\s*:\s*|info:doi/|urn:doi:)", re.IGNORECASE)
_EXTRA_DOI_RE = re.compile(r"^\s*DOI\s*:\s*(\S+)", re.IGNORECASE | re.MULTILINE)
_EXTRA_CITATION_KEY_RE = re.compile(r"^\s*Citation Key\s*:\s*(\S+)\s*$", re.IGNORECASE | re.MULTILINE)

_ARXIV_NEW = r"\d{4}\.\d{4,5}"
_ARXIV_OLD = r"[a-z]+(?:-[a-z]+)?(?:\.[a-z]{2})?/\d{7}"
_ARXIV_ID = rf"(?P<id>{_ARXIV_NEW}|{_ARXIV_OLD})(?:v\d+)?"
# An id only counts in running text when something says it is one: a prefix, a URL, an arXiv DOI.
_ARXIV_IN_TEXT_RE = re.compile(
    rf"(?:arxiv\s*:\s*|arxiv\.org/(?:abs|pdf|html|format)/|10\.48550/arxiv\.){_ARXIV_ID}",
    re.IGNORECASE,
)
_ARXIV_BARE_RE = re.compile(rf"^\s*{_ARXIV_ID}(?:\.pdf)?\s*$", re.IGNORECASE)

# A PMID counts when it is marked as one: `PMID: 123`, `PMID123`, a PubMed URL.
_PMID_RE = re.compile(
    r"(?:\bPMID\s*:?\s*|pubmed\.ncbi\.nlm\.nih\.gov/|ncbi\.nlm\.nih\.gov/pubmed/)(?P<id>[1-9]\d{0,8})\b",
    re.IGNORECASE,
)

_TAG_RE = re.compile(r"<[^>]+>")
_NON_WORD_RE = re.compile(r"[\W_]+")

#: arXiv's DOI prefix at DataCite: such a DOI names an arXiv preprint.
ARXIV_DOI_PREFIX = "10.48550/arxiv."


def _trim_doi(doi: str) -> str:
    # A DOI may contain parentheses (10.1016/0005-2795(76)90109-4) but prose wraps them around
    # DOIs too, so only an unbalanced closing bracket is punctuation; so is a question's `?`.
    doi = doi.rstrip(".,;:?!")
    while doi and doi[-1] in ")]}" and doi.count(doi[-1]) > doi.count({")": "(", "]": "[", "}": "{"}[doi[-1]]):
        doi = doi[:-1].rstrip(".,;:?!")
    return doi


def normalize_doi(value: str | None) -> str | None:
    """The canonical DOI in `value` (a bare DOI, `doi:`, a doi.org URL), or None if there is none."""
    if not value:
        return None
    text = unquote(value.strip())
    url = _DOI_URL_RE.match(text)
    if url:
        text = url.group(1)
    text = _DOI_SCHEME_RE.sub("", text)
    match = _DOI_RE.match(text.strip())
    return _trim_doi(match.group(0)).lower() if match else None


def find_dois(text: str | None) -> list[str]:
    """Every DOI written anywhere in `text` (a query, an Extra field), canonical, in order, once each."""
    if not text:
        return []
    found = (_trim_doi(m.group(0)).lower() for m in _DOI_RE.finditer(unquote(text)))
    return list(dict.fromkeys(found))


def doi_in_url(url: str | None) -> str | None:
    """The DOI of a doi.org URL (Zotero stores some books' DOIs only there); None for other URLs."""
    if not url:
        return None
    match = _DOI_URL_RE.match(url.strip())
    return normalize_doi(match.group(1)) if match else None


def doi_in_extra(extra: str | None) -> str | None:
    """The DOI of a `DOI: ...` line in Zotero's Extra field (item types without a DOI field)."""
    if not extra:
        return None
    match = _EXTRA_DOI_RE.search(extra)
    return normalize_doi(match.group(1)) if match else None


def citation_key_in_extra(extra: str | None) -> str | None:
    """The Better BibTeX citation key of a `Citation Key: ...` line in Zotero's Extra field
    (where Better BibTeX pins an item's key), if any."""
    match = _EXTRA_CITATION_KEY_RE.search(extra or "")
    return match.group(1) if match else None


def _canonical_arxiv(raw: str) -> str:
    raw = raw.lower()
    if "/" in raw:  # old style: drop the optional subject class of the archive
        archive, number = raw.split("/", 1)
        return f"{archive.split('.', 1)[0]}/{number}"
    return raw


def normalize_arxiv(value: str | None) -> str | None:
    """The versionless arXiv id in `value` (a bare id, `arXiv:...`, an arxiv.org URL, an arXiv DOI)."""
    if not value:
        return None
    match = _ARXIV_IN_TEXT_RE.search(value) or _ARXIV_BARE_RE.match(value)
    return _canonical_arxiv(match.group("id")) if match else None


def find_arxiv_ids(text: str | None) -> list[str]:
    """Every arXiv id that `text` marks as one (`arXiv:`, arxiv.org URL, arXiv DOI), versionless, once each."""
    if not text:
        return []
    return list(dict.fromkeys(_canonical_arxiv(m.group("id")) for m in _ARXIV_IN_TEXT_RE.finditer(text)))


def arxiv_doi(arxiv_id: str) -> str:
    """The DataCite DOI arXiv registered for `arxiv_id` (canonical, lower case)."""
    return f"{ARXIV_DOI_PREFIX}{arxiv_id.lower()}"


def arxiv_of_doi(doi: str | None) -> str | None:
    """The arXiv id an arXiv DOI names, else None."""
    if doi and doi.lower().startswith(ARXIV_DOI_PREFIX):
        return normalize_arxiv(doi)
    return None


def find_pmids(text: str | None) -> list[str]:
    """Every PubMed id that `text` marks as one (`PMID: ...`, a PubMed URL), in order, once each."""
    if not text:
        return []
    return list(dict.fromkeys(m.group("id") for m in _PMID_RE.finditer(text)))


def normalize_pmid(value: str | None) -> str | None:
    """The PubMed id in `value`: bare digits, `PMID: ...` or a PubMed URL; None if there is none."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit() and 0 < len(text) <= 9 and text[0] != "0":
        return text
    found = find_pmids(text)
    return found[0] if found else None


@dataclass(frozen=True)
class ItemIdentifiers:
    """The identifiers of one Zotero item, canonical, each once."""

    dois: tuple[str, ...] = ()
    arxiv_ids: tuple[str, ...] = ()
    pmids: tuple[str, ...] = ()


def item_identifiers(
    doi: str | None = None, urls: Iterable[str | None] = (), extra: str | None = None
) -> ItemIdentifiers:
    """An item's identifiers where Zotero users keep them: the DOI field, a `DOI: ...` line in
    Extra (item types without a DOI field), doi.org URLs; arXiv ids in Extra (`arXiv:2203.00130 [cs]`),
    in arxiv.org URLs (the item's and its attachments') and in arXiv DOIs; PMIDs in Extra."""
    urls = [u for u in urls if u]
    dois = [d for d in (normalize_doi(doi), doi_in_extra(extra), *map(doi_in_url, urls)) if d]
    arxiv = [
        *find_arxiv_ids(extra),
        *(a for u in urls for a in find_arxiv_ids(u)),
        *filter(None, map(arxiv_of_doi, dois)),
    ]
    return ItemIdentifiers(tuple(dict.fromkeys(dois)), tuple(dict.fromkeys(arxiv)), tuple(find_pmids(extra)))


@dataclass(frozen=True)
class QueryIdentifiers:
    """Identifiers pasted into a query: looked up directly instead of searched for."""

    dois: tuple[str, ...] = ()
    arxiv_ids: tuple[str, ...] = ()
    openalex_ids: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.dois or self.arxiv_ids or self.openalex_ids)


_OPENALEX_ID_RE = re.compile(r"^\s*(?:https?://(?:api\.)?openalex\.org/(?:works/)?)?(W\d{4,12})\s*$", re.IGNORECASE)


def identifiers_in_query(query: str) -> QueryIdentifiers:
    """The DOIs, arXiv ids and OpenAlex work ids a user pasted into `query`.

    An arXiv DOI counts once, as an arXiv id; a bare new-style arXiv id (`2304.05376`) or an
    OpenAlex id (`W4396723768`) only counts when it is the whole query.
    """
    arxiv_ids = find_arxiv_ids(query)
    bare = _ARXIV_BARE_RE.match(query)
    if bare:
        arxiv_ids.append(_canonical_arxiv(bare.group("id")))
    dois = [d for d in find_dois(query) if not d.startswith(ARXIV_DOI_PREFIX)]
    openalex = _OPENALEX_ID_RE.match(query)
    return QueryIdentifiers(
        dois=tuple(dois),
        arxiv_ids=tuple(dict.fromkeys(arxiv_ids)),
        openalex_ids=(openalex.group(1).upper(),) if openalex else (),
    )


def normalize_title(title: str | None) -> str:
    """A title reduced for comparison: no markup, no diacritics, one space per punctuation run, lower case."""
    if not title:
        return ""
    text = _TAG_RE.sub(" ", html.unescape(title)) if ("<" in title or "&" in title) else title
    if not text.isascii():  # most titles are ASCII: skip the per-character pass for them
        text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return _NON_WORD_RE.sub(" ", text.casefold()).strip()
