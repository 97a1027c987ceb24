"""Issue 14: quotes are copy-exact. The text retrieval indexes is the PDF's own: line-end
hyphens are taken out only where they are hyphenation, real hyphens stay, split diacritics and
ligatures are put back together."""

from __future__ import annotations

import bisect
import itertools
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pymupdf

from zocrates_retrieval.adapters.pdf import _join_lines, _repair, _Vocabulary, _word_list, convert_pdf
from zocrates_retrieval.convert import convert_file
from zocrates_retrieval.domain.chunking import approx_tokens, chunk_blocks

# --- the join rule ----------------------------------------------------------------------------


def join(lines: list[str], elsewhere: str = "") -> str:
    """`lines` joined as one paragraph of a document whose other text is `elsewhere`."""
    return _join_lines(lines, _Vocabulary([*lines, elsewhere]))


def test_a_hyphen_the_document_spells_elsewhere_is_kept():
    assert join(["the N-", "domain and the C-domain"]) == "the N-domain and the C-domain"
    assert join(["compared with wild-", "type N-domain"], "the wild-type enzyme") == "compared with wild-type N-domain"
    assert (
        join(["quality of patient-", "provider relationships"], "patient-provider trust")
        == "quality of patient-provider relationships"
    )


def test_hyphenation_the_document_spells_as_one_word_is_joined():
    # neither "ketomethylene" nor "thromboprophylaxis" is in the word list: the document says so
    assert (
        join(["designed ketomethyl-", "ene inhibitors"], "a ketomethylene scaffold")
        == "designed ketomethylene inhibitors"
    )
    assert (
        join(["trauma patient thrombopro-", "phylaxis"], "Thromboprophylaxis is") == "trauma patient thromboprophylaxis"
    )


def test_hyphenation_only_the_word_list_knows_is_joined():
    assert join(["a trian-", "gulated approach"]) == "a triangulated approach"
    assert join(["life-threa-", "tening events"]) == "life-threatening events"


def test_a_compound_unknown_to_document_and_word_list_keeps_its_hyphen():
    assert join(["compared with wild-", "type N-domain"]) == "compared with wild-type N-domain"
    assert join(["in under-", "resourced settings"]) == "in under-resourced settings"
    assert join(["the 33RE-", "binding site"]) == "the 33RE-binding site"  # not "33REbinding"


def test_the_more_frequent_spelling_of_the_document_wins():
    assert join(["an anti-", "fibrotic effect"], "antifibrotic antifibrotic anti-fibrotic") == "an antifibrotic effect"
    # "nonmedical" is a word, but this document writes "non-medical"
    assert (
        join(["both medical and non-", "medical care"], "other non-medical staff")
        == "both medical and non-medical care"
    )


def test_line_end_hyphens_that_are_no_hyphenation():
    assert join(["first-", "and second-line providers"]) == "first- and second-line providers"
    assert join(["the Ac-", "SDKP peptide"]) == "the Ac-SDKP peptide"  # a capital starts no syllable
    assert join(["(R)-", "(S)-mixture"]) == "(R)-(S)-mixture"
    assert join(["a pause -", "then more"]) == "a pause - then more"  # a dash, set apart
    assert join(["X-", "ray"]) == "X-ray"  # one letter is never left by hyphenation
    assert join(["plain", "lines"]) == "plain lines"


def test_split_diacritics_and_ligatures_are_repaired():
    assert _repair("solved at 2.2 \u02daA") == "solved at 2.2 \u00c5"
    assert _repair("Schr\u00a8odinger, J\u00b4ulio, \u02c6ete, \u02c7Cech") == "Schrödinger, Júlio, ête, Čech"
    assert (
        _repair("\ufb01nal \ufb02uorogenic a\ufb00ord e\ufb03cient ba\ufb04e")
        == "final fluorogenic afford efficient baffle"
    )
    assert _repair("Ko\u0308ln") == "K\u00f6ln"  # a combining mark: NFC
    assert _repair("median \u02dc\U0001d465 = 4") == "median \u02dc\U0001d465 = 4"  # nothing to compose
    assert _repair("10\u02da C, \u00a8 alone") == "10\u02da C, \u00a8 alone"


def test_a_made_pdf_keeps_hyphens_and_joins_hyphenation(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page()
    lines = [
        "Mutants bound less than the wild-",
        "type enzyme. Binding to the wild-type",
        "enzyme was struc-",
        "tured by the N-",
        "domain; the hyphen-",
        "ation is undone.",
    ]
    for n, line in enumerate(lines):
        page.insert_text((72, 100 + 14 * n), line, fontsize=11)
    path = tmp_path / "hyphens.pdf"
    doc.save(path)
    text = " ".join(b.text for b in convert_pdf(path).blocks)
    assert text == (
        "Mutants bound less than the wild-type enzyme. Binding to the wild-type enzyme was "
        "structured by the N-domain; the hyphenation is undone."
    )


# --- the fixture papers ---------------------------------------------------------------------


def paper_text(pdf_dir: Path, name: str) -> str:
    return "\n".join(b.text for b in convert_file(pdf_dir / name, "application/pdf").blocks)


def test_real_hyphens_of_the_fixture_papers_stay(pdf_dir):
    ace = paper_text(pdf_dir, "cermine/example3.pdf")
    for glued in ("Ndomain", "wildtype", "cocrystallized", "GRIDbased", "angiotensinconverting"):
        assert glued not in ace, glued
    assert "compared with wild-type N-domain" in ace
    assert "the incorporation of the P2 aspartate residue and N-protecting group" in ace
    quality = paper_text(pdf_dir, "cermine/example2.pdf")
    for glued in ("patientprovider", "nonmedical", "resourcelimited", "shortstay", "firstand"):
        assert glued not in quality, glued
    assert "first- and second-line health providers" in quality
    assert "Information obtained relating to the quality of patient-provider relationships" in quality
    dvt = paper_text(pdf_dir, "cermine/test1.pdf")
    assert "metaanalysis" not in dvt and "317day" not in dvt


def test_hyphenation_of_the_fixture_papers_is_undone(pdf_dir):
    ace = paper_text(pdf_dir, "cermine/example3.pdf")
    assert "we previously designed and synthesized ketomethylene inhibitors" in ace  # the paper's word
    assert "Ac-SDKP was first discovered" in ace  # and not "Ac- SDKP"
    quality = paper_text(pdf_dir, "cermine/example2.pdf")
    assert "A triangulated approach for the analysis" in quality  # the word list's
    dvt = paper_text(pdf_dir, "cermine/test1.pdf")
    assert "life-threatening" in dvt


def test_split_diacritics_and_ligatures_of_a_fixture_paper_are_repaired(pdf_dir):
    ace = paper_text(pdf_dir, "cermine/example3.pdf")
    assert "N-domain ACE was solved at 2.2 Å in complex" in ace
    assert "Resolution (Å) | 2.2" in ace  # a table cell
    assert "\u02da" not in ace and not re.search("[\ufb00-\ufb06]", ace)
    assert "a ﬂuorogenic" not in ace and "using a fluorogenic ACE assay" in ace


# Every sentence of every chunk must be text of the PDF. PyMuPDF's own text is the reference:
# whitespace aside, a line-end hyphen of the PDF may be kept or dropped, every other character
# must be there. Diacritics and ligatures are compared decomposed (the tests above check them).
# A sentence may run over lines that are not its own (a running header at a page break, a
# figure in the middle of a column), but only whole lines.

#: Sentences the converter assembles in another order than the PDF sets them: the text is the
#: PDF's, the order is not (figure labels, a footnote inside a paragraph, the title block's
#: separate boxes, math subscripts). Reading order is no concern of this test.
OUT_OF_ORDER = {
    "cermine/example2.pdf": ["Referred cases (36%) Self-Referrals (64%)"],
    "cermine/example3.pdf": [
        "Clinical Science (2014) 126",
        "While this Abbreviations:",
        "(R/S)-2-methyl-3-(((R)-1-(N-(benzyloxycarbonyl)amino)-2-phenylethyl)-hydroxy",
    ],
    "cermine/test1.pdf": ["This review included all * Correspondence:"],
    "papermage/2203.00130v1.pdf": [
        "Paper Plain: Making Medical Research Papers Approachable to Healthcare Consumers "
        "with Natural Language Processing TAL AUGUST",
        "𝛽𝑆𝐿𝐸 2 and 𝛽𝑄𝐴 1",
    ],
}

MAX_SKIPPED_LINES = 90  # a page break with its footer and header, a figure's labels, a table inside a sentence


def canon(text: str) -> str:
    text = unicodedata.normalize("NFKD", text)
    return re.sub(r"\s+", "", "".join(ch for ch in text if not unicodedata.combining(ch)))


class PdfText:
    """The PDF's lines as PyMuPDF extracts them page by page, in `canon` form."""

    def __init__(self, path: Path):
        with pymupdf.open(path) as doc:
            self.lines = [line for page in doc for raw in page.get_text().split("\n") if (line := canon(raw))]
        self.joined: list[tuple[str, list[int]]] = []  # (text, where each line starts): hyphens kept, dropped
        for drop in (False, True):
            parts = [ln[:-1] if drop and ln.endswith("-") else ln for ln in self.lines]
            self.joined.append(("".join(parts), list(itertools.accumulate(map(len, parts[:-1]), initial=0))))

    def has(self, sentence: str) -> bool:
        """Whether `sentence` is the text of consecutive lines, from a place inside one to a
        place inside another, leaving out only whole lines (at most `MAX_SKIPPED_LINES`)."""
        s = canon(sentence)
        if not s:
            return True
        for q in sorted({0, len(s) // 2}):  # a line left out early in the sentence hides its start
            for k, o in self._places(s[q : q + 10]):
                if self._ends_before(s[:q], k, o) and self._goes_on(s[q:], k, o):
                    return True
        return False

    def _places(self, anchor: str) -> Iterator[tuple[int, int]]:
        for text, starts in self.joined:
            at = text.find(anchor)
            while at >= 0:
                k = bisect.bisect_right(starts, at) - 1
                yield k, at - starts[k]
                at = text.find(anchor, at + 1)

    @staticmethod
    def _forms(line: str) -> list[str]:
        return [line, line[:-1]] if line.endswith("-") else [line]

    def _goes_on(self, rest: str, k: int, o: int) -> bool:
        """Whether `rest` starts at offset `o` of line `k` and goes on over the lines after."""
        first, skipped = self.lines[k][o:], 0
        for form in self._forms(first):
            if form.startswith(rest):
                return True
        rest = next((rest[len(f) :] for f in self._forms(first) if rest.startswith(f)), None)
        if rest is None:
            return False
        for line in self.lines[k + 1 :]:
            forms = self._forms(line)
            if any(f.startswith(rest) for f in forms):
                return True
            step = next((len(f) for f in forms if rest.startswith(f)), None)
            if step is None:
                skipped += 1
                if skipped > MAX_SKIPPED_LINES:
                    return False
            else:
                rest = rest[step:]
        return False

    def _ends_before(self, head: str, k: int, o: int) -> bool:
        """Whether `head` ends at offset `o` of line `k`, coming over the lines before."""
        before, skipped = self.lines[k][:o], 0
        if before.endswith(head):
            return True
        if not head.endswith(before):
            return False
        head = head[: len(head) - len(before)]
        for line in reversed(self.lines[:k]):
            forms = self._forms(line)
            if any(f.endswith(head) for f in forms):
                return True
            step = next((len(f) for f in forms if f and head.endswith(f)), None)
            if step is None:
                skipped += 1
                if skipped > MAX_SKIPPED_LINES:
                    return False
            else:
                head = head[: len(head) - step]
        return False


def quotable(chunk) -> list[str]:
    """What an answer can quote from a chunk: each of its answer units (any kind: a question
    may ask for a caption or a footnote); a table row as its cells (a row is rebuilt from cells,
    ' | ' between them, and reads with its caption, a unit of its own; a row of words may wrap
    over several lines, each of them cells)."""
    found = []
    for unit in chunk.units:
        span = chunk.text[unit.start : unit.end]
        if unit.kind in ("table_row", "table_header"):
            found += [cell for line in span.split("\n") for cell in line.split(" | ")]
        else:
            found.append(span)
    return found


def test_every_sentence_indexed_from_a_fixture_pdf_is_text_of_that_pdf(pdf_dir):
    papers = sorted(pdf_dir.rglob("*.pdf"))
    assert len(papers) >= 5
    failures, checked = [], 0
    for path in papers:
        name = path.relative_to(pdf_dir).as_posix()
        pdf = PdfText(path)
        for chunk in chunk_blocks(convert_pdf(path).blocks, 200, approx_tokens):
            for sentence in quotable(chunk):
                if any(sentence.startswith(known) for known in OUT_OF_ORDER.get(name, ())):
                    continue
                checked += 1
                if not pdf.has(sentence):
                    failures.append(f"{name} p. {chunk.page}: {sentence[:160]!r}")
    assert checked > 1500
    assert not failures, "\n".join(failures)


def test_no_indexed_word_is_one_the_pdf_never_spells(pdf_dir):
    """A word glued from a real hyphen ("Ndomain", "wildtype", "patientprovider": 14 in these
    papers before issue 14) is neither in the PDF nor in the word list."""
    letters = re.compile(r"[^\W\d_]+")
    invented = []
    for path in sorted(pdf_dir.rglob("*.pdf")):
        with pymupdf.open(path) as doc:
            spelled = set(letters.findall(canon_words("\n".join(page.get_text() for page in doc))))
        for chunk in chunk_blocks(convert_pdf(path).blocks, 200, approx_tokens):
            invented += [
                f"{path.name}: {w}"
                for w in letters.findall(canon_words(chunk.text))
                if w not in spelled and w not in _word_list()
            ]
    assert not invented, invented


def canon_words(text: str) -> str:
    text = unicodedata.normalize("NFKD", text).lower()
    return "".join(ch for ch in text if not unicodedata.combining(ch))


def test_the_reference_check_itself_tells_a_glued_hyphen_from_a_kept_one(pdf_dir):
    pdf = PdfText(pdf_dir / "cermine" / "example3.pdf")
    assert pdf.has("compared with wild-type N-domain.")  # "wild-" ends a line: kept or dropped
    assert pdf.has("compared with wildtype N-domain.")
    assert not pdf.has("compared with wild-type Ndomain.")  # "N-domain" is inside a line
    assert pdf.has("compared with wild -  type N-domain.")  # whitespace is free
    assert not pdf.has("compared with wild-type N-domains.")
