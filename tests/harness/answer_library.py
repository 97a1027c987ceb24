"""The library the answer benchmark asks: the five fixture PDFs as the items they are, plus a real
Zotero database's items.

Each fixture PDF becomes a journal article (the arXiv paper a preprint) with the metadata
printed in the PDF itself (title, authors, year, DOI or arXiv id, journal) and the PDF as its
imported attachment. The one-page PDF that holds only a DOI gets the title Zotero's own
"Retrieve Metadata" finds for that DOI (Zotero's recognizer test asserts it); nothing else
about it is in the file. The items of the real Zotero 7 database
`nagatashigueru-ZoteroDataBase.zotero.sqlite` are copied with all their fields, creators and
collection, without attachments (the database comes without its files), so the library is not
only the papers the questions are about.

Items are named by a stable name (`datta2010`, ...) that the question set uses;
`build_answer_library` returns the name -> Zotero item key map.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from harness.zotero import ZoteroLibraryBuilder

NAGATASHIGUERU_DB = "zotero/db/nagatashigueru-ZoteroDataBase.zotero.sqlite"


@dataclass(frozen=True)
class PaperItem:
    name: str
    pdf: str  # path under the fixtures' pdfs/ folder
    item_type: str
    fields: dict[str, str]
    creators: list[tuple[str, str, str]]
    collection: str | None = None
    filename: str = ""


def _authors(*names: tuple[str, str]) -> list[tuple[str, str, str]]:
    return [(first, last, "author") for first, last in names]


PAPERS: list[PaperItem] = [
    PaperItem(
        "datta2010",
        "cermine/test1.pdf",
        "journalArticle",
        {
            "title": "Complications related to deep venous thrombosis prophylaxis in trauma: "
            "a systematic review of the literature",
            "publicationTitle": "Journal of Trauma Management & Outcomes",
            "date": "2010",
            "volume": "4",
            "pages": "1",
            "DOI": "10.1186/1752-2897-4-1",
            "url": "http://www.traumamanagement.org/content/4/1/1",
        },
        _authors(
            ("Indraneel", "Datta"),
            ("Chad G", "Ball"),
            ("Lucas", "Rudmik"),
            ("S Morad", "Hameed"),
            ("John B", "Kortbeek"),
        ),
        collection="Clinical papers",
        filename="Datta et al. - 2010 - Complications related to deep venous thrombosis prophylaxis in trauma.pdf",
    ),
    PaperItem(
        "agyemanduah2014",
        "cermine/example2.pdf",
        "journalArticle",
        {
            "title": "Understanding the barriers to setting up a healthcare quality improvement process "
            "in resource-limited settings: a situational analysis at the Medical Department of "
            "Kamuzu Central Hospital in Lilongwe, Malawi",
            "publicationTitle": "BMC Health Services Research",
            "date": "2014-01-02",
            "volume": "14",
            "pages": "1",
            "DOI": "10.1186/1472-6963-14-1",
            "url": "http://www.biomedcentral.com/1472-6963/14/1",
        },
        _authors(
            ("Josephine Nana Afrakoma", "Agyeman-Duah"),
            ("Antje", "Theurer"),
            ("Charles", "Munthali"),
            ("Noor", "Alide"),
            ("Florian", "Neuhann"),
        ),
        collection="Clinical papers",
        filename="Agyeman-Duah et al. - 2014 - Understanding the barriers to setting up a healthcare quality improvement process.pdf",
    ),
    PaperItem(
        "douglas2014",
        "cermine/example3.pdf",
        "journalArticle",
        {
            "title": "Fragment-based design for the development of N-domain-selective "
            "angiotensin-1-converting enzyme inhibitors",
            "publicationTitle": "Clinical Science",
            "date": "2014",
            "volume": "126",
            "pages": "305-313",
            "DOI": "10.1042/CS20130403",
        },
        _authors(
            ("Ross G.", "Douglas"),
            ("Rajni K.", "Sharma"),
            ("Geoffrey", "Masuyer"),
            ("Lizelle", "Lubbe"),
            ("Ismael", "Zamora"),
            ("K. Ravi", "Acharya"),
            ("Kelly", "Chibale"),
            ("Edward D.", "Sturrock"),
        ),
        collection="Clinical papers",
        filename="Douglas et al. - 2014 - Fragment-based design for the development of N-domain-selective ACE inhibitors.pdf",
    ),
    PaperItem(
        "august2022",
        "papermage/2203.00130v1.pdf",
        "preprint",
        {
            "title": "Paper Plain: Making Medical Research Papers Approachable to Healthcare Consumers "
            "with Natural Language Processing",
            "repository": "arXiv",
            "archiveID": "arXiv:2203.00130",
            "date": "2022-02-28",
            "url": "https://arxiv.org/abs/2203.00130v1",
        },
        _authors(
            ("Tal", "August"),
            ("Lucy Lu", "Wang"),
            ("Jonathan", "Bragg"),
            ("Marti A.", "Hearst"),
            ("Andrew", "Head"),
            ("Kyle", "Lo"),
        ),
        collection="Reading interfaces",
        filename="August et al. - 2022 - Paper Plain.pdf",
    ),
    PaperItem(
        "pntd0003350",
        "zotero/recognizePDF_test_DOI.pdf",
        "journalArticle",
        {
            "title": "Shaping the Research Agenda",
            "DOI": "10.1371/journal.pntd.0003350",
            "libraryCatalog": "DOI.org (Crossref)",
        },
        [],
        filename="recognizePDF_test_DOI.pdf",
    ),
]


@dataclass
class AnswerLibrary:
    zotero_dir: Path
    keys: dict[str, str] = field(default_factory=dict)  # stable name -> Zotero item key
    titles: dict[str, str] = field(default_factory=dict)
    creators: dict[str, list[str]] = field(default_factory=dict)  # last names
    identifiers: dict[str, list[str]] = field(default_factory=dict)  # DOIs and arXiv ids
    abstracts: dict[str, str] = field(default_factory=dict)  # of the items with an abstract and no file


def _read_items(db: Path) -> list[dict]:
    """Regular items of a Zotero database: key, type, fields, creators, collections."""
    con = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    try:
        items = []
        rows = con.execute(
            "SELECT i.itemID, i.key, t.typeName FROM items i JOIN itemTypes t USING (itemTypeID) "
            "WHERE t.typeName NOT IN ('attachment', 'note', 'annotation') "
            "AND i.itemID NOT IN (SELECT itemID FROM deletedItems) ORDER BY i.itemID"
        ).fetchall()
        for item_id, key, type_name in rows:
            fields = dict(
                con.execute(
                    "SELECT f.fieldName, v.value FROM itemData d JOIN fields f USING (fieldID) "
                    "JOIN itemDataValues v USING (valueID) WHERE d.itemID = ?",
                    (item_id,),
                ).fetchall()
            )
            creators = con.execute(
                "SELECT c.firstName, c.lastName, ct.creatorType FROM itemCreators ic JOIN creators c USING (creatorID) "
                "JOIN creatorTypes ct USING (creatorTypeID) WHERE ic.itemID = ? ORDER BY ic.orderIndex",
                (item_id,),
            ).fetchall()
            collections = [
                r[0]
                for r in con.execute(
                    "SELECT c.collectionName FROM collectionItems ci JOIN collections c USING (collectionID) "
                    "WHERE ci.itemID = ?",
                    (item_id,),
                )
            ]
            items.append(
                {
                    "key": key,
                    "type": type_name,
                    "fields": fields,
                    "creators": [tuple(c) for c in creators],
                    "collections": collections,
                }
            )
        return items
    finally:
        con.close()


def _name_for(item: dict) -> str:
    """`<first author's last name><year>`, lower case ASCII: kaur2021."""
    last = item["creators"][0][1] if item["creators"] else "anon"
    year = item["fields"].get("date", "")[:4]
    return "".join(ch for ch in last.lower() if ch.isalpha()) + year


def build_answer_library(zotero_dir: Path, fixtures_dir: Path) -> AnswerLibrary:
    """Build the benchmark's Zotero data directory at `zotero_dir` from the shared fixtures."""
    fixtures_dir = Path(fixtures_dir)
    builder = ZoteroLibraryBuilder(zotero_dir, fixtures_dir / "zotero" / "schema")
    library = AnswerLibrary(Path(zotero_dir))
    in_collection: dict[str, list[int]] = {}
    try:
        for paper in PAPERS:
            item_id, key = builder.add_item(paper.item_type, paper.fields, paper.creators)
            pdf = fixtures_dir / "pdfs" / paper.pdf
            builder.add_attachment(item_id, paper.filename or pdf.name, pdf.read_bytes(), title="Full Text PDF")
            if paper.collection:
                in_collection.setdefault(paper.collection, []).append(item_id)
            library.keys[paper.name] = key
            library.titles[paper.name] = paper.fields["title"]
            library.creators[paper.name] = [last for _, last, _ in paper.creators]
            library.identifiers[paper.name] = [v for k, v in paper.fields.items() if k in ("DOI", "archiveID")]
        for item in _read_items(fixtures_dir / NAGATASHIGUERU_DB):
            fields = {k: v for k, v in item["fields"].items() if k in builder.field_ids}
            if item["key"] in library.keys.values():
                raise ValueError(f"item key {item['key']} of {NAGATASHIGUERU_DB} was already generated")
            item_id, key = builder.add_item(item["type"], fields, item["creators"], key=item["key"])
            for name in item["collections"]:
                in_collection.setdefault(name, []).append(item_id)
            name = _name_for(item)
            library.keys[name] = key
            library.titles[name] = fields.get("title", "")
            library.creators[name] = [c[1] for c in item["creators"]]
            library.identifiers[name] = [fields["DOI"]] if fields.get("DOI") else []
            if fields.get("abstractNote"):
                library.abstracts[name] = fields["abstractNote"]
        for name, item_ids in in_collection.items():
            builder.add_collection(name, item_ids)
    finally:
        builder.close()
    return library
