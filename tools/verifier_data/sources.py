"""Where each public set comes from, under which licence, and how its rows are read.

Every reader returns rows of one shape:

    {"claim": str, "passage": str, "label": "support" | "contradict" | "neither",
     "source": str, "group": str}

The claim is the NLI hypothesis and the passage the premise, the order in which the verifier's
local-torch backend feeds a checkpoint. `group` is what must never straddle two splits: for NLI
sets the (original) premise, for claim sets the claim or the family of claims that share their
evidence.

The raw files under `bench/data/verifier/raw/` are byte-for-byte copies of the upstream files
(gzipped with `gzip -n -9` where they are text), taken from the commits named in `SOURCES`.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
import re
import zipfile
from pathlib import Path

from tools import training_data as common

LABELS = ("support", "contradict", "neither")

NLI_LABELS = {"entailment": "support", "contradiction": "contradict", "neutral": "neither"}

#: Sets we never train or calibrate on, and why. The test checks none of them shows up.
EXCLUDED = {
    "SICK": "CC BY-NC-SA 3.0: non-commercial",
    "ANLI": "CC BY-NC 4.0: non-commercial",
    "HealthVer": "no licence stated by its authors",
    "COVID-Fact": "no licence stated by its authors",
    "Climate-FEVER": "no licence stated by its authors",
    "SciFact dev": "kept for an independent check: its labels and evidence are never read; "
    "its claim texts are used only to leave out the train claims worded "
    "exactly like a dev claim",
}

#: Sets the issue names that we looked for and did not use, and why (reported in MANIFEST.md).
NOT_USED = {
    "MultiNLI dev-matched": "no copy under 4 MiB was found in the stored repositories: the "
    "GLUE-format copies (e.g. ju-resplande/PLUE datasets/MNLI) are over "
    "4 MiB and absent, and nyu-mll/multiNLI holds code only",
    "SciTail test": "the only stored copy found (ju-resplande/PLUE datasets/SciTail) is a "
    "Portuguese machine translation; allenai/scitail holds code only",
    "FEVER claim-evidence dev pairs (beyond FEVER-Symmetric)": "no stored copy found; FEVER's "
    "own files hold evidence ids, not sentences, and the processed dev pairs "
    "are linked from Dropbox, not committed",
    "e-SNLI csv files": "esnli_dev.csv and esnli_test.csv are over 4 MiB and absent; the "
    "same pairs are read from e-SNLI's s1/s2/labels files instead",
    "Fool Me Twice train": "dataset/train.jsonl is over 4 MiB and absent",
    "MED_ver_1.tsv": "an earlier version of MED.tsv (the README describes MED.tsv)",
    "VitaminC, SciFact-Open": "their repositories link the data for download; none is committed",
    "WiCE train and sub-claim files": "over 4 MiB and absent; only the claim-level oracle "
    "chunks (dev, test) are used, for evaluation",
}

#: One entry per public set. `files` maps the committed path (under raw/) to the upstream path
#: at `commit`. `role` is "train" (train and calibration pools) or "eval" (held out whole).
SOURCES = {
    "snli_esnli": {
        "title": "SNLI 1.0 dev and test (the pairs with a gold label), as split out by e-SNLI",
        "repo": "OanaMariaCamburu/e-SNLI",
        "commit": "7b585a3f077fdea899780eb0473940522ae44a2e",
        "files": {
            "esnli/LICENSE": "LICENSE",
            **{
                f"esnli/{kind}.{split}.gz": f"dataset/eSNLI/{kind}.{split}"
                for split in ("dev", "test")
                for kind in ("s1", "s2", "labels")
            },
        },
        "licence": "SNLI text CC BY-SA 4.0 (Stanford NLP); e-SNLI repository MIT",
        "share_alike": True,
        "role": "train",
        "expected_rows": 9842 + 9824,
        "note": "SNLI dev 10,000 less 158 without a gold label; test 10,000 less 176. "
        "Text is tokenised (space before punctuation); the reader joins it back.",
    },
    "cad_nli": {
        "title": "Counterfactually-augmented SNLI (Kaushik et al., 2020), original and revised",
        "repo": "acmi-lab/counterfactually-augmented-data",
        "commit": "6f232a1d2a11462a30ce08fb4825b734ab30828e",
        "files": {
            "cad/LICENSE": "LICENSE",
            **{
                f"cad/{kind}/{split}.tsv.gz": f"NLI/{kind}/{split}.tsv"
                for kind in ("original", "revised_premise", "revised_hypothesis")
                for split in ("train", "dev", "test")
            },
        },
        "licence": "Apache-2.0 (repository); premises from SNLI, CC BY-SA 4.0",
        "share_alike": True,
        "role": "train",
        "expected_rows": 2266 * 5,
        "note": "Each original pair has two revised premises and two revised hypotheses "
        "(rows 2i and 2i+1 of the revised files); all five share the original premise's "
        "group.",
    },
    "breaking_nli": {
        "title": "Breaking NLI (Glockner et al., 2018)",
        "repo": "BIU-NLP/Breaking_NLI",
        "commit": "8a7658c1ce6b732f4e8af3b06560f1a13b8b18b0",
        "files": {
            "breaking_nli/README.md": "README.md",
            "breaking_nli/breaking_nli_dataset.zip": "breaking_nli_dataset.zip",
        },
        "licence": "CC BY-SA 4.0",
        "share_alike": True,
        "role": "train",
        "expected_rows": 8193,
        "note": "7,164 contradiction, 982 entailment, 47 neutral; premises from SNLI train.",
    },
    "med": {
        "title": "MED, monotonicity entailment (Yanaka et al., 2019), entailment rows only",
        "repo": "verypluming/MED",
        "commit": "860ba36ce95ecba9f1ebe348d3d8cf1b3cba435a",
        "files": {"med/LICENSE": "LICENSE", "med/MED.tsv.gz": "MED.tsv"},
        "licence": "CC BY-SA 4.0",
        "share_alike": True,
        "role": "train",
        "expected_rows": 5382,
        "note": "MED's 'neutral' folds neutral and contradiction together, so only its 2,705 "
        "entailment rows are used (as support).",
    },
    "fm2": {
        "title": "Fool Me Twice (Eisenschlos et al., 2021) dev and test",
        "repo": "google-research/fool-me-twice",
        "commit": "d9db753e5acf91c0d9bf543db327ab655661eb94",
        "files": {
            "fm2/LICENSE": "LICENSE",
            "fm2/dev.jsonl.gz": "dataset/dev.jsonl",
            "fm2/test.jsonl.gz": "dataset/test.jsonl",
        },
        "licence": "Apache-2.0 (repository, data included); evidence text from Wikipedia, CC BY-SA 3.0",
        "share_alike": True,
        "role": "train",
        "expected_rows": 1169 + 1380,
        "note": "Claims with gold evidence sentences; 'neither' is the claim with a sentence "
        "of the same Wikipedia page that the game retrieved but that is not gold "
        "evidence. train.jsonl (10,419 claims) is over 4 MiB and absent from the copy.",
    },
    "fever_symmetric": {
        "title": "FEVER-Symmetric (Schuster et al., 2019): v0.1 full and v0.2 dev for training, v0.2 test held out",
        "repo": "TalSchuster/FeverSymmetric",
        "commit": "fa25d17e73ea0694edc78133ec654b9f32f6db73",
        "files": {
            "fever_symmetric/DATA_LICENSE": "DATA_LICENSE",
            "fever_symmetric/fever_symmetric_full.jsonl.gz": "symmetric_v0.1/fever_symmetric_full.jsonl",
            "fever_symmetric/fever_symmetric_dev.jsonl.gz": "symmetric_v0.2/fever_symmetric_dev.jsonl",
            "fever_symmetric/fever_symmetric_test.jsonl.gz": "symmetric_v0.2/fever_symmetric_test.jsonl",
        },
        "licence": "CC BY-SA 3.0 (DATA_LICENSE; Wikipedia and FEVER); code MIT",
        "share_alike": True,
        "role": "train",
        "expected_rows": 956 + 708 + 712,
        "note": "Built from FEVER dev claim-evidence pairs. Group = FEVER claim id (synthetic "
        "pairs carry a 000000{2,3,4} suffix). v0.1 rows whose FEVER id is in v0.2 test "
        "are left out of training. No document context, so no 'neither' is built.",
    },
    "wice": {
        "title": "WiCE (Kamoi et al., 2023), claim-level oracle chunks, dev and test",
        "repo": "ryokamoi/wice",
        "commit": "ddeb6c183665e2a20c5f03c5aa07f03888b9870f",
        "files": {
            "wice/LICENSE.md": "LICENSE.md",
            **{
                f"wice/oracle_chunks_claim_{split}{suffix}": f"code_and_resources/entailment_inputs/oracle_chunks/claim/{split}{upstream}"
                for split in ("dev", "test")
                for suffix, upstream in ((".jsonl.gz", ".jsonl"), ("_stats.json", "_stats.json"))
            },
        },
        "licence": "annotations ODC-BY 1.0; claims from Wikipedia (CC BY-SA 4.0); evidence "
        "from cited web pages archived by Common Crawl (its terms of use apply)",
        "share_alike": True,
        "role": "eval",
        "expected_rows": 1043 + 1070,
        "note": "Evaluation only, never trained on. supported -> support, not_supported -> "
        "neither (WiCE does not separate refuted), partially_supported left out.",
    },
    "scifact_train": {
        "title": "SciFact train claims and their cited abstracts (Wadden et al., 2020)",
        "repo": "allenai/scifact (read from ../shared/fixtures/claims/scifact/)",
        "commit": "",
        "files": {},
        "licence": "claims CC BY 4.0; abstracts ODC-By 1.0",
        "share_alike": False,
        "role": "train",
        "expected_rows": 809,
        "note": "Claims are grouped with every claim that cites one of the same abstracts; a "
        "fifth of the groups (by seeded hash) is held out as eval_scifact_heldout. "
        "Train claims worded exactly like a SciFact dev claim are left out (dev claim "
        "texts from ../shared's BEIR queries; no dev label or evidence is read).",
    },
}

SCIFACT_DIR = Path("fixtures/claims/scifact")
BEIR_QUERIES = Path("fixtures/ir/scifact_beir/queries.jsonl")


# ---- helpers ------------------------------------------------------------------------------

sha256_bytes, read_raw = common.sha256_bytes, common.read_raw


def text_lines(raw: Path, name: str) -> list[str]:
    return read_raw(raw, name).decode("utf-8").splitlines()


def jsonl(raw: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in text_lines(raw, name) if line.strip()]


def tsv(raw: Path, name: str) -> list[dict]:
    text = read_raw(raw, name).decode("utf-8")
    return list(csv.DictReader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE))


_PTB = {
    "-LRB-": "(",
    "-RRB-": ")",
    "-LSB-": "[",
    "-RSB-": "]",
    "-LCB-": "{",
    "-RCB-": "}",
    "-COLON-": ":",
    "``": '"',
    "''": '"',
}


def detokenize(text: str) -> str:
    """Undo the tokenisation of SNLI-as-e-SNLI and FEVER text ("packages ." -> "packages.")."""
    words = [_PTB.get(w, w) for w in text.split()]
    text = " ".join(words)
    text = re.sub(r" ([.,!?;:%)\]}])", r"\1", text)
    text = re.sub(r"([(\[{$]) ", r"\1", text)
    text = re.sub(r" (n't|'s|'re|'ve|'ll|'d|'m)\b", r"\1", text)
    return text.strip()


def norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def nli_group(premise: str) -> str:
    """NLI pairs that share a premise stay together (SNLI, CAD and Breaking NLI share some)."""
    return "nli:" + hashlib.sha1(norm(premise).encode()).hexdigest()[:16]


def row(claim: str, passage: str, label: str, source: str, group: str) -> dict:
    assert label in LABELS, label
    return {"claim": claim.strip(), "passage": passage.strip(), "label": label, "source": source, "group": group}


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


# ---- NLI sets -----------------------------------------------------------------------------


def read_snli_esnli(raw: Path) -> list[dict]:
    rows = []
    for split in ("dev", "test"):
        premises = text_lines(raw, f"esnli/s1.{split}.gz")
        hypotheses = text_lines(raw, f"esnli/s2.{split}.gz")
        labels = text_lines(raw, f"esnli/labels.{split}.gz")
        assert len(premises) == len(hypotheses) == len(labels), split
        for p, h, lab in zip(premises, hypotheses, labels):
            premise = detokenize(p)
            rows.append(row(detokenize(h), premise, NLI_LABELS[lab.strip()], "snli_esnli", nli_group(premise)))
    return rows


def read_cad_nli(raw: Path) -> list[dict]:
    rows = []
    for split in ("train", "dev", "test"):
        original = tsv(raw, f"cad/original/{split}.tsv.gz")
        for kind in ("original", "revised_premise", "revised_hypothesis"):
            per_original = 1 if kind == "original" else 2
            for i, r in enumerate(tsv(raw, f"cad/{kind}/{split}.tsv.gz")):
                group = nli_group(original[i // per_original]["sentence1"])
                rows.append(row(r["sentence2"], r["sentence1"], NLI_LABELS[r["gold_label"]], "cad_nli", group))
    return rows


def read_breaking_nli(raw: Path) -> list[dict]:
    with zipfile.ZipFile(raw / "breaking_nli/breaking_nli_dataset.zip") as z:
        lines = z.read("data/dataset.jsonl").decode("utf-8").splitlines()
    rows = []
    for line in lines:
        r = json.loads(line)
        rows.append(
            row(r["sentence2"], r["sentence1"], NLI_LABELS[r["gold_label"]], "breaking_nli", nli_group(r["sentence1"]))
        )
    return rows


def read_med(raw: Path) -> list[dict]:
    return [
        row(r["sentence2"], r["sentence1"], "support", "med", nli_group(r["sentence1"]))
        for r in tsv(raw, "med/MED.tsv.gz")
        if r["gold_label"] == "entailment"
    ]


# ---- claim sets ---------------------------------------------------------------------------

CLAIM_LABELS = {"SUPPORTS": "support", "SUPPORT": "support", "REFUTES": "contradict", "CONTRADICT": "contradict"}


def read_fm2(raw: Path, seed: str) -> list[dict]:
    """Gold evidence gives support/contradict; a retrieved non-gold sentence of the same page
    gives 'neither' (one per claim, chosen by a seeded draw)."""
    rows = []
    for split in ("dev", "test"):
        for r in jsonl(raw, f"fm2/{split}.jsonl.gz"):
            group = "fm2:" + r["wikipedia_page"]
            gold = [e["text"] for e in r["gold_evidence"]]
            rows.append(row(r["text"], " ".join(gold), CLAIM_LABELS[r["label"]], "fm2", group))
            gold_norm = {norm(g) for g in gold}
            others = sorted(
                {
                    e["text"]
                    for e in r["retrieved_evidence"]
                    if norm(e["text"]) not in gold_norm and len(words(e["text"])) >= 5
                }
            )
            if others:
                pick = random.Random(f"{seed}:fm2:{r['id']}").choice(others)
                rows.append(row(r["text"], pick, "neither", "fm2", group))
    return rows


def fever_base_id(fever_id) -> str:
    """FEVER-Symmetric's synthetic pairs append 000000{2,3,4} to the FEVER claim id."""
    text = str(fever_id)
    return text[:-7] if len(text) > 7 and text[-7:-1] == "000000" else text


def read_fever_symmetric(raw: Path, files: tuple[str, ...]) -> list[dict]:
    rows = []
    for name in files:
        for r in jsonl(raw, f"fever_symmetric/{name}.jsonl.gz"):
            evidence = r.get("evidence_sentence") or r["evidence"]
            rows.append(
                row(
                    detokenize(r["claim"]),
                    detokenize(evidence),
                    CLAIM_LABELS[r["label"]],
                    "fever_symmetric",
                    "fever:" + fever_base_id(r["id"]),
                )
            )
    return rows


def read_wice(raw: Path) -> tuple[list[dict], dict]:
    """Claim vs its oracle chunk; partially supported claims are counted and left out."""
    rows, skipped = [], {"partially_supported": 0}
    mapping = {"supported": "support", "not_supported": "neither"}
    for split in ("dev", "test"):
        for r in jsonl(raw, f"wice/oracle_chunks_claim_{split}.jsonl.gz"):
            if r["label"] not in mapping:
                skipped[r["label"]] = skipped.get(r["label"], 0) + 1
                continue
            rows.append(
                row(r["claim"], " ".join(r["evidence"]), mapping[r["label"]], "wice", "wice:" + r["meta"]["id"])
            )
    return rows, skipped


# ---- SciFact train ------------------------------------------------------------------------


def scifact_groups(claims: list[dict]) -> dict[int, str]:
    """Claims that cite a common abstract form one group (SciFact writes negated twins of a
    claim against the same abstract), so no abstract is seen in training and in evaluation."""
    parent: dict = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for c in claims:
        for doc in c["cited_doc_ids"]:
            parent[find(("claim", c["id"]))] = find(("doc", doc))
    members: dict = {}
    for c in claims:
        members.setdefault(find(("claim", c["id"])), []).append(c["id"])
    return {cid: f"scifact:{min(ids)}" for ids in members.values() for cid in ids}


def scifact_dev_claim_texts(shared: Path) -> set[str]:
    """The text of SciFact dev's claims, only so that the few train claims worded exactly like a
    dev claim stay out of training: the BEIR SciFact queries are train and dev claims, and
    those that are not train claims are dev. No dev label or evidence is read."""
    train_ids = {
        json.loads(line)["id"] for line in (shared / SCIFACT_DIR / "claims_train.jsonl").read_text().splitlines()
    }
    queries = [json.loads(line) for line in (shared / BEIR_QUERIES).read_text().splitlines()]
    return {norm(q["text"]) for q in queries if int(q["_id"]) not in train_ids}


def read_scifact_train(shared: Path, seed: str) -> list[dict]:
    """Sentence-level pairs: each rationale set (its sentences joined) gets the claim's label
    for that abstract; 'neither' is one non-rationale sentence of the same abstract: a seeded
    draw where the abstract holds rationales, the sentence sharing most words with the claim
    where it holds none (the annotators found no evidence anywhere in it)."""
    folder = shared / SCIFACT_DIR
    claims = [json.loads(line) for line in (folder / "claims_train.jsonl").read_text().splitlines()]
    corpus = {}
    for line in (folder / "corpus_cited_subset.jsonl").read_text().splitlines():
        doc = json.loads(line)
        corpus[doc["doc_id"]] = doc["abstract"]
    groups = scifact_groups(claims)
    rows = []
    for c in claims:
        group = groups[c["id"]]
        for doc_id in c["cited_doc_ids"]:
            sentences = corpus[doc_id]
            sets = c["evidence"].get(str(doc_id), [])
            used = {i for s in sets for i in s["sentences"]}
            for s in sets:
                passage = " ".join(sentences[i] for i in s["sentences"])
                rows.append(row(c["claim"], passage, CLAIM_LABELS[s["label"]], "scifact_train", group))
            others = [i for i in range(len(sentences)) if i not in used and len(words(sentences[i])) >= 5]
            if not others:
                continue
            if sets:
                pick = random.Random(f"{seed}:scifact:{c['id']}:{doc_id}").choice(others)
            else:
                claim_words = words(c["claim"])
                pick = max(others, key=lambda i: (len(claim_words & words(sentences[i])), -i))
            rows.append(row(c["claim"], sentences[pick], "neither", "scifact_train", group))
    return rows
