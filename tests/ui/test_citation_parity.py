"""The plugin's JavaScript citation code (plugin/content/core/citations.js) gives exactly the
output of zocrates_citations for masking, `to_author_year` and `strip_citations`; copying a
turn record from its `prose` and `sources` gives what copying its `text` gave."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from zocrates_citations import resolve_citations_and_references, strip_citations, to_author_year
from zocrates_citations.parsing import find_tokens, mask
from zocrates_contracts import Creator, EvidenceChunk

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "plugin" / "test" / "parity-runner.mjs"


def chunk(
    chunk_id: str, item_key: str, title: str, authors: list[str | Creator], year: int | None, text: str, **fields
) -> EvidenceChunk:
    """A chunk of the item `item_key`, each author given by surname or as a `Creator`."""
    creators = [a if isinstance(a, Creator) else Creator(last_name=a) for a in authors]
    return EvidenceChunk(
        chunk_id=chunk_id, item_key=item_key, title=title, creators=creators, year=year, text=text, **fields
    )


#: The item of chunks c1 and c3 (key, title, authors, year).
SOMATIC = ("ITEMAAAA", "Somatic mutation rates", ["Jonsson", "Stefansson"], 2021)
CHUNKS = [
    chunk("c1", *SOMATIC, "Mutation rates were estimated.", publication="Nature Genetics"),
    chunk(
        "c2", "ITEMBBBB", "Attention Is All You Need", ["Vaswani", "Shazeer", "Parmar"], 2017, "Attention maps queries."
    ),
    chunk("c3", *SOMATIC, "A second chunk of the first item."),
    chunk("c4", "ITEMDDDD", "  Untitled & <odd> *title*?  ", [], None, "Orphan text.", publication="Proc. [X]"),
    chunk(
        "c5", "ITEMEEEE", "World Health Report", [Creator(name="World Health Organization")], 2020, "Global figures."
    ),
    # Group libraries: source links carry data-library-id; one key is also a My Library key.
    chunk("c6", "ITEMGGGG", "A group paper", ["Okafor"], 2019, "Shared in the lab.", library_id="group-4711"),
    chunk(
        "c7", "ITEMBBBB", "Same key, another library", ["Lindqvist"], 2015, "A different paper.", library_id="group-12"
    ),
]

HAND = [
    "Rates were high [1]. Attention helps [2, 3].",
    "A claim [1][2] and another [1;4]【5】 and [E1] and [Chunk 2] and [chunk2].",
    "Out of range [9] and [99] and [0] are removed [1].",
    "```python\nx = a[1]\n```\nAfter code [1].",
    "~~~\n[2]\n~~~~\nTilde fence then [2].",
    "```\r\nweird [1]  \r\n```\r\nCRLF text [1].\r\n",
    "Inline `code [1]` and ``double `[2]` ticks`` then [3].",
    "An image ![alt [1]](x.png) and ![ref][2] then [1].",
    '[1]: https://example.org "title"\nA link def above, a citation [2].',
    "See [1](https://example.org) link, not a citation; but this is [1].",
    "[1] opens a line.\n  [2] opens an indented line.\n- [3] in a list",
    "Unterminated fence\n```\nstill code [1]",
    "Fullwidth 【1, 2】 and ascii [2 ,  3] and semicolons [1 ; 5].",
    "Arabic-Indic digits [١] and wide [１] stay as written by Python.",
    "Before punctuation [1], then [2]; then [3]: then (see [4]) end [5]!",
    "Emoji 😀 outside code [1] and `😀 [2]` inside.",
    "# Heading [1]\n\nParagraph [2].\n\n| a | b [3] |\n|---|---|\n| c [4] | d |",
    "Tab\tbefore [1]\tand after.",
    "A group paper [6] and the same key in two libraries [2, 7] then [7].",
    "",
    "No citations at all.",
]

FRAGMENTS = [
    "Claim",
    " text",
    " [1]",
    " [2]",
    "[3]",
    " [1, 2]",
    "[4;5]",
    " [6]",
    "[7, 2]",
    "【2】",
    ". ",
    ", ",
    "\n",
    "\n\n",
    "`[1]`",
    "```\n[2]\n```\n",
    "~~~\n[1]\n~~~\n",
    "![a](b.png)",
    " [9]",
    "[E2]",
    "\r\n",
    "(",
    ")",
    "- ",
    "# H\n",
    "$x_[1]$",
    "[x]: http://e.org\n",
    " ",
    "\t",
    "`",
    "!",
    "~",
    "[",
    "]",
    "1",
]


def _cited_tokens_only(text: str, citations) -> bool:
    """Whether every token of a resolved text names a cited chunk.

    Not always so: removing a token can turn the text before it into a fence opening and so
    unmask a later bracket (`" [9]~~~"` becomes `" ~~~"`), which `to_author_year` then reads as
    a citation of a chunk the turn never cited. The UI has only the turn's citations, so it
    drops such a bracket; those cases are compared for masking and stripping only.
    """
    cited = {c.index for c in citations}
    return all(set(t.indices) <= cited for t in find_tokens(mask(text).masked, len(CHUNKS)))


def cases() -> list[dict]:
    rng = random.Random(7)
    texts = list(HAND)
    for _ in range(300):
        texts.append("".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 25))))
    out = []
    for i, raw in enumerate(texts):
        probabilities = {n: [rng.choice([0.95, 0.7, 0.3, None]) for _ in range(12)] for n in range(1, len(CHUNKS) + 1)}
        resolution = resolve_citations_and_references(
            raw, CHUNKS, support_probabilities=probabilities, considered_disclosure=i % 3 != 0
        )
        record = {
            "text": resolution.text,
            "prose": resolution.text.removesuffix(resolution.sources),
            "sources": resolution.sources,
            "citations": [c.model_dump(mode="json") for c in resolution.citations],
            "references": resolution.references.model_dump(mode="json"),
        }
        expected = {
            "masked": mask(raw).masked,
            "strip_raw": strip_citations(raw),
            "author_year": to_author_year(resolution.text, CHUNKS),
            "strip": strip_citations(resolution.text),
        }
        expected["record_author_year"] = expected["author_year"]
        expected["record_strip"] = expected["strip"]
        if not _cited_tokens_only(resolution.text, resolution.citations):
            # The JS side only knows the turn's citations; see _cited_tokens_only.
            del expected["author_year"], expected["record_author_year"]
        out.append(
            {
                "raw": raw,
                "record": record,
                "expected": expected,
            }
        )
    return out


def test_javascript_citation_views_match_python_byte_for_byte(tmp_path):
    node = shutil.which("node")
    if node is None:
        pytest.fail(
            "node is not installed: the plugin's citation code cannot be checked "
            "(install Node 20, as `make test` expects)"
        )
    data = cases()
    src, dst = tmp_path / "cases.json", tmp_path / "out.json"
    src.write_text(json.dumps([{"raw": c["raw"], "record": c["record"]} for c in data]))
    subprocess.run([node, str(RUNNER), str(src), str(dst)], check=True, timeout=60)
    results = json.loads(dst.read_text())
    mismatches = []
    for case, got in zip(data, results):
        for key, want in case["expected"].items():
            if got[key] != want:
                mismatches.append((key, case["raw"], want, got[key]))
    assert not mismatches, f"{len(mismatches)} mismatches; first: {mismatches[0]!r}"
