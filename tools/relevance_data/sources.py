"""Where each public set comes from, under which licence, and how its rows are read.

Every reader returns rows of one shape:

    {"question": str, "sentence": str, "label": 1 | 0, "source": str, "group": str}

Label 1: the sentence answers the question (it holds the annotated answer span, or is the
abstract's conclusion for PubMedQA); label 0: it does not. Negatives are hard where the set allows:
other sentences of the same paragraph or paper. `group` is what must never straddle two splits:
the Wikipedia article (XQuAD, and QNLI rows tied to it), the paper (COVID-QA, PubMedQA), or the
question (other QNLI rows).

The raw files under `bench/data/relevance/raw/` are byte-for-byte copies of the upstream files
(gzipped with `gzip -n -9` where they are data), taken from the commits named in `SOURCES`.

Sentences are cut by `sentence_spans`, a small regular-expression splitter kept here (not the
service's) so that the committed splits depend only on this package and the raw files.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
from pathlib import Path

from tools import training_data as common

LABELS = (1, 0)

#: Sets we never read, and why. The test checks none of them shows up.
EXCLUDED = {
    "WikiQA": "Microsoft Research Data License Agreement: research use only, not an open licence",
    "SciQ": "CC BY-NC 3.0: non-commercial",
    "BioASQ": "its own terms of use (registration, no redistribution): not openly licensed",
    "MS MARCO": "non-commercial research terms",
    "NewsQA": "Microsoft research licence; CNN text under its own terms",
    "COVID-QA papers without a licence line": "the 6 papers of COVID-QA whose text carries no "
    "'License:' line (145 questions) are left out",
}

#: Sets the brief names (or that we tried) that were not used, and why.
NOT_USED = {
    "QNLI train": "train.tsv (104,743 pairs, 25.7 MB) is over 4 MiB: every stored copy found "
    "(e.g. thrudgelmir/datas QNLI/train.tsv, jonny-vr/LLMCBench) is absent or a "
    "Git LFS pointer",
    "SQuAD v1.1 / v2.0 dev and train": "dev-v1.1.json (4.9 MB), dev-v2.0.json (4.4 MB) and the "
    "train files are over 4 MiB; the stored copies found (e.g. salmedina/SQuAD, "
    "sdpetrides/safesaph-data, acul3/squad-test) are absent or LFS pointers. "
    "SQuAD dev is still used twice over: QNLI dev is built from it, and XQuAD's "
    "English file is 240 of its paragraphs with their questions",
    "QASPER": "qasper-train-v0.3.json, qasper-dev-v0.3.json (11.5 MB) and the test file are over "
    "4 MiB; the only stored copy found (wideyard/timeaware) is an LFS pointer, and "
    "allenai/qasper-led-baseline holds only synthetic fixtures",
    "COVID-QA final release": "data/question-answering/COVID-QA.json (2,019 questions) is over "
    "4 MiB and absent; the 2020-04-23 release (1,380 questions) is "
    "used instead",
    "PubMedQA PQA-A and PQA-U": "linked from Google Drive, not committed; only the 1,000 "
    "expert-labelled PQA-L questions are in the repository",
    "XQuAD other languages": "not English; the answer writer's model is English-only",
}

#: One entry per public set. `files` maps the committed path (under raw/) to the upstream path
#: at `commit`.
SOURCES = {
    "qnli": {
        "title": "QNLI dev (GLUE), question-sentence pairs from SQuAD v1.1 dev paragraphs",
        "repo": "jonny-vr/LLMCBench",
        "commit": "720be179c2492271f61d7a09291ffd003f36f47d",
        "files": {"qnli/dev.tsv.gz": "data/QNLI/dev.tsv"},
        "licence": "CC BY-SA 4.0 (SQuAD text, Wikipedia); GLUE's QNLI packaging; the "
        "copying repository's MIT licence covers its code only",
        "share_alike": True,
        "expected_rows": 5463,
        "note": "GLUE's QNLI dev, 5,463 pairs over 4,100 questions, checked complete (the copy's "
        "last row is intact). entailment -> 1, not_entailment -> 0. QNLI pairs a "
        "question only with sentences of its own paragraph, so its negatives are hard. "
        "Questions or sentences that belong to an XQuAD paragraph take that article's "
        "group; the rest are grouped by question.",
    },
    "xquad": {
        "title": "XQuAD English (Artetxe et al., 2020): 240 SQuAD v1.1 dev paragraphs, 1,190 questions",
        "repo": "google-deepmind/xquad",
        "commit": "7d30520c717524000f0d9d2f9c10a069acd9d285",
        "files": {"xquad/README.md": "README.md", "xquad/xquad.en.json.gz": "xquad.en.json"},
        "licence": "CC BY-SA 4.0",
        "share_alike": True,
        "expected_rows": 1190,
        "note": "Each question against every sentence of its paragraph: the sentence(s) holding "
        "the answer span -> 1, the others -> 0. Grouped by Wikipedia article; half the "
        "48 articles (by seeded hash) are held out as eval_xquad.",
    },
    "covidqa": {
        "title": "COVID-QA (Möller et al., 2020), SQuAD-style questions on CORD-19 papers, release of 2020-04-23",
        "repo": "deepset-ai/COVID-QA",
        "commit": "fb2eb5e249618457e5359806601086c635c8eb8f",
        "files": {
            "covidqa/LICENSE": "LICENSE",
            "covidqa/200423_covidQA.json.gz": "data/question-answering/200423_covidQA.json",
        },
        "licence": "annotations Apache-2.0 (repository); paper texts CC BY, as each paper's own "
        "'License: cc-by' line states (papers without that line are left out)",
        "share_alike": False,
        "expected_rows": 1380,
        "note": "Scientific domain (virology, epidemiology; full papers). The sentence(s) holding "
        "the answer span -> 1; negatives from the same paper: up to 6 neighbours in the "
        "answer's paragraph, the 6 other sentences sharing most words with the question, "
        "and 6 more at random (seeded). Answer offsets off by one (234 questions) are "
        "re-anchored to the nearest exact occurrence. Grouped by paper; half the papers "
        "are held out as eval_covidqa.",
    },
    "pubmedqa": {
        "title": "PubMedQA PQA-L (Jin et al., 2019), 1,000 expert-labelled questions on PubMed abstracts",
        "repo": "pubmedqa/pubmedqa",
        "commit": "1cbae8e92f72f20c8d3747cbb3bf5bc53554d997",
        "files": {"pubmedqa/LICENSE": "LICENSE", "pubmedqa/ori_pqal.json.gz": "data/ori_pqal.json"},
        "licence": "MIT",
        "share_alike": False,
        "expected_rows": 1000,
        "note": "Biomedical. The question (the article's title as a question) against its "
        "abstract: sentences of the conclusion (LONG_ANSWER) -> 1; sentences of the "
        "background, objective and methods sections -> 0. Results sections are left out: "
        "they often answer the question too, so they are neither clean positives nor "
        "clean negatives. Grouped by PubMed id; a fifth is held out as eval_pubmedqa.",
    },
}


sha256_bytes, read_raw = common.sha256_bytes, common.read_raw


def norm(text: str) -> str:
    return " ".join(text.lower().split())


# --- sentences ----------------------------------------------------------------------------------

_BOUNDARY = re.compile(r"[.!?][\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])")
_ABBREV = re.compile(
    r"(?:\b(?:e\.g|i\.e|et al|etc|vs|cf|ca|approx|resp|Fig|Figs|Eq|Eqs|Ref|Refs|No|Nos|Vol|pp|"
    r"Tab|Sect|Suppl|Dr|Mr|Mrs|Ms|Prof|St|Jr|Sr|Inc|Ltd|Co|Corp|U\.S|U\.K|a\.m|p\.m)|"
    r"(?:^|[\s(])[A-Z])\.$"
)


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """(start, end) of each sentence of text[start:end], whitespace trimmed, in order."""
    end = len(text) if end is None else end
    spans, s = [], start
    for m in _BOUNDARY.finditer(text, start, end):
        if text[m.start()] == "." and _ABBREV.search(text[max(s, m.start() - 12) : m.start() + 1]):
            continue
        spans.append((s, m.end()))
        s = m.end()
    spans.append((s, end))
    out = []
    for a, b in spans:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            out.append((a, b))
    return out


def sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in sentence_spans(text)]


_STOP = frozenset(
    "the and for are was were with that this from what which who whom whose when "
    "where why how does did has have had not but its into than then they their "
    "there these those can could would should may might will been being also any "
    "all one two our out use used using".split()
)


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) >= 3 and w not in _STOP}


def contains_answer(sentence: str, answer: str) -> bool:
    """Whether `answer` occurs in `sentence` as whole words (case-insensitive)."""
    a = norm(answer).strip(" .,;:")
    if not a:
        return False
    return re.search(r"(?<!\w)" + re.escape(a) + r"(?!\w)", norm(sentence)) is not None


def anchor(context: str, text: str, start: int) -> int | None:
    """The answer's start: as annotated if the text is there, else its nearest exact occurrence."""
    if context[start : start + len(text)] == text:
        return start
    hits = [m.start() for m in re.finditer(re.escape(text), context)]
    return min(hits, key=lambda h: abs(h - start)) if hits else None


def overlaps(span: tuple[int, int], answer: tuple[int, int]) -> bool:
    """A sentence answers when it holds the whole answer or at least 10 of its characters."""
    inter = min(span[1], answer[1]) - max(span[0], answer[0])
    return inter >= min(10, answer[1] - answer[0])


def row(question: str, sentence: str, label: int, source: str, group: str) -> dict:
    return {
        "question": " ".join(question.split()),
        "sentence": " ".join(sentence.split()),
        "label": label,
        "source": source,
        "group": group,
    }


# --- readers ------------------------------------------------------------------------------------


def read_qnli(raw: Path) -> list[dict]:
    """QNLI dev as rows; `group` is the question, `build` re-groups rows tied to XQuAD."""
    text = read_raw(raw, "qnli/dev.tsv.gz").decode("utf-8")
    reader = csv.reader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE)
    header = next(reader)
    assert header == ["index", "question", "sentence", "label"], header
    out = []
    for idx, question, sentence, label in reader:
        assert label in ("entailment", "not_entailment"), (idx, label)
        out.append(row(question, sentence, int(label == "entailment"), "qnli", f"squad-question:{norm(question)}"))
    return out


def qnli_row_count(raw: Path) -> int:
    return len(read_raw(raw, "qnli/dev.tsv.gz").decode("utf-8").splitlines()) - 1


def read_xquad(raw: Path) -> tuple[list[dict], dict[str, str], dict[str, str], int]:
    """XQuAD English rows, plus question -> group and sentence -> group maps for QNLI,
    and how many ambiguous negatives (a non-answer sentence holding the answer text) were left out."""
    data = json.loads(read_raw(raw, "xquad/xquad.en.json.gz"))["data"]
    out, by_question, by_sentence, ambiguous = [], {}, {}, 0
    for article in data:
        group = f"squad-article:{article['title']}"
        for para in article["paragraphs"]:
            context = para["context"]
            spans = sentence_spans(context)
            for a, b in spans:
                by_sentence[norm(context[a:b])] = group
            for qa in para["qas"]:
                by_question[norm(qa["question"])] = group
                answers = []
                for ans in qa["answers"]:
                    start = anchor(context, ans["text"], ans["answer_start"])
                    if start is not None:
                        answers.append((start, start + len(ans["text"]), ans["text"]))
                for a, b in spans:
                    sent = context[a:b]
                    if any(overlaps((a, b), (s, e)) for s, e, _ in answers):
                        out.append(row(qa["question"], sent, 1, "xquad", group))
                    elif any(contains_answer(sent, t) for _, _, t in answers):
                        ambiguous += 1
                    else:
                        out.append(row(qa["question"], sent, 0, "xquad", group))
    return out, by_question, by_sentence, ambiguous


def xquad_question_count(raw: Path) -> int:
    data = json.loads(read_raw(raw, "xquad/xquad.en.json.gz"))["data"]
    return sum(len(p["qas"]) for a in data for p in a["paragraphs"])


_LICENCE_LINE = re.compile(r"^License:\s*(\S.*)$", re.MULTILINE)
_MIN_WORDS = 6
COVIDQA_NEGATIVES = {"paragraph": 6, "overlap": 6, "random": 6}


def covidqa_papers(raw: Path) -> list[dict]:
    return [p for a in json.loads(read_raw(raw, "covidqa/200423_covidQA.json.gz"))["data"] for p in a["paragraphs"]]


def covidqa_paper_sentences(context: str) -> list[tuple[int, int, int]]:
    """(start, end, paragraph number) of each body sentence of one COVID-QA paper.

    The text opens with a header (title, URL, authors, date, DOI, licence) and then
    'Abstract: ...'; the header is skipped, and so are fragments under six words."""
    body = context.find("\nAbstract:")
    pos = body + 1 if body >= 0 else 0
    out = []
    for n, line in enumerate(context[pos:].split("\n")):
        if line.startswith("Abstract:"):
            a = len("Abstract:")
            while a < len(line) and line[a].isspace():
                a += 1
        else:
            a = 0
        for s, e in sentence_spans(line, a):
            if len(line[s:e].split()) >= _MIN_WORDS:
                out.append((pos + s, pos + e, n))
        pos += len(line) + 1
    return out


def read_covidqa(raw: Path, seed: str) -> tuple[list[dict], dict[str, int]]:
    """COVID-QA rows from the CC BY papers, and the counts left out (by reason)."""
    out: list[dict] = []
    skipped = {
        "questions on papers without a licence line": 0,
        "questions whose answer no body sentence holds": 0,
        "ambiguous negatives (a non-answer sentence holding the answer text)": 0,
    }
    for paper in covidqa_papers(raw):
        context = paper["context"]
        m = _LICENCE_LINE.search(context)
        if not m or m.group(1).strip().lower() != "cc-by":
            skipped["questions on papers without a licence line"] += len(paper["qas"])
            continue
        group = f"covidqa-paper:{paper['document_id']}"
        spans = covidqa_paper_sentences(context)
        words = [content_words(context[s:e]) for s, e, _ in spans]
        for qa in paper["qas"]:
            ans = qa["answers"][0]
            start = anchor(context, ans["text"], ans["answer_start"])
            answer = (start, start + len(ans["text"])) if start is not None else None
            pos = [i for i, (s, e, _) in enumerate(spans) if answer and overlaps((s, e), answer)]
            if not pos:
                skipped["questions whose answer no body sentence holds"] += 1
                continue
            rest = []
            for i, (s, e, _) in enumerate(spans):
                if i in pos:
                    continue
                if contains_answer(context[s:e], ans["text"]):
                    skipped["ambiguous negatives (a non-answer sentence holding the answer text)"] += 1
                    continue
                rest.append(i)
            paras = {spans[i][2] for i in pos}
            near = sorted((i for i in rest if spans[i][2] in paras), key=lambda i: (min(abs(i - p) for p in pos), i))
            chosen = near[: COVIDQA_NEGATIVES["paragraph"]]
            left = [i for i in rest if i not in chosen]
            q_words = content_words(qa["question"])
            by_overlap = sorted(left, key=lambda i: (-len(words[i] & q_words), i))
            chosen += by_overlap[: COVIDQA_NEGATIVES["overlap"]]
            left = [i for i in left if i not in chosen]
            random.Random(f"{seed}:covidqa:{qa['id']}").shuffle(left)
            chosen += left[: COVIDQA_NEGATIVES["random"]]
            for i in pos:
                s, e, _ = spans[i]
                out.append(row(qa["question"], context[s:e], 1, "covidqa", group))
            for i in sorted(chosen):
                s, e, _ = spans[i]
                out.append(row(qa["question"], context[s:e], 0, "covidqa", group))
    return out, skipped


def covidqa_question_count(raw: Path) -> int:
    return sum(len(p["qas"]) for p in covidqa_papers(raw))


#: Abstract sections whose sentences do not answer the question (every word of the section
#: label must be one of these); results, findings, outcomes and conclusions never are.
_NON_ANSWER_SECTION_WORDS = frozenset(
    "BACKGROUND BACKGROUNDS OBJECTIVE OBJECTIVES PURPOSE PURPOSES AIM AIMS INTRODUCTION CONTEXT "
    "METHOD METHODS METHODOLOGY DESIGN STUDY SETTING SETTINGS PATIENTS PARTICIPANTS SUBJECTS "
    "MATERIAL MATERIALS AND INTERVENTION INTERVENTIONS".split()
)


def is_non_answer_section(label: str) -> bool:
    words = re.findall(r"[A-Z]+", label.upper())
    return bool(words) and all(w in _NON_ANSWER_SECTION_WORDS for w in words)


def read_pubmedqa(raw: Path) -> list[dict]:
    data = json.loads(read_raw(raw, "pubmedqa/ori_pqal.json.gz"))
    out = []
    for pmid, item in data.items():
        group = f"pubmed:{pmid}"
        question = item["QUESTION"]
        for sent in sentences(item["LONG_ANSWER"]):
            out.append(row(question, sent, 1, "pubmedqa", group))
        for context, label in zip(item["CONTEXTS"], item["LABELS"], strict=True):
            if is_non_answer_section(label):
                for sent in sentences(context):
                    out.append(row(question, sent, 0, "pubmedqa", group))
    return out


def pubmedqa_question_count(raw: Path) -> int:
    return len(json.loads(read_raw(raw, "pubmedqa/ori_pqal.json.gz")))


ROW_COUNTS = {
    "qnli": qnli_row_count,
    "xquad": xquad_question_count,
    "covidqa": covidqa_question_count,
    "pubmedqa": pubmedqa_question_count,
}
