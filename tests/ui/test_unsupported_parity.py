"""The sidebar and the server show unsupported claims alike (issue "Trust you can see").

The client renders a turn's unsupported claims as the user chose (plugin/content/core/
unsupported.js `proseAsChosen`: copy, the message and the note) and the server renders the same
choice for export (zocrates_citations.unsupported `prose_as_chosen`). Rather than trust two
hand-written case lists, this runs both on the same few hundred answers, resolved for real from
random sentences, list items, lines and characters outside the BMP with random support
probabilities, and requires the same text in every mode.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from zocrates_citations import resolve_citations_and_references
from zocrates_citations.unsupported import prose_as_chosen
from zocrates_contracts import Creator, EvidenceChunk

MODULE = Path(__file__).resolve().parents[2] / "plugin" / "content" / "core" / "unsupported.js"
WORDS = [
    "rates",
    "fell",
    "twins",
    "the cohort",
    "ninety percent",
    "ß-blockers",
    "𝛼 decay",
    "costs",
    "(n = 12)",
    "p < 0.05",
]


def chunks(n: int) -> list[EvidenceChunk]:
    return [
        EvidenceChunk(
            chunk_id=f"c{i}",
            item_key=f"ITEM{i:04d}",
            title=f"Paper {i}",
            creators=[Creator(last_name=f"Author{i}")],
            year=2000 + i,
            text=f"Passage {i}.",
        )
        for i in range(1, n + 1)
    ]


def answer(rng: random.Random, sources: int) -> str:
    """An answer as a model might write it: sentences, some in list items, on a few lines,
    each citing one to three sources, some side by side, some uncited."""
    lines = []
    for _ in range(rng.randint(1, 4)):
        marker = rng.choice(["", "", "- ", "1. "])
        sentences = []
        for _ in range(rng.randint(1, 3)):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6))).capitalize()
            cited = rng.sample(range(1, sources + 1), rng.randint(0, min(3, sources)))
            brackets = rng.choice([f" [{', '.join(map(str, cited))}]", "".join(f"[{i}]" for i in cited)])
            sentences.append(f"{text}{brackets if cited else ''}{rng.choice(['.', '.', '!', ';', '?', ':', ','])}")
        lines.append(marker + " ".join(sentences))
    return "\n".join(lines)


def cases(count: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    found = []
    while len(found) < count:
        sources = rng.randint(1, 4)
        text = answer(rng, sources)
        occurrences = {
            i: [rng.choice([0.1, 0.3, 0.45, 0.8, 0.95]) for _ in range(text.count(str(i)))]
            for i in range(1, sources + 1)
        }
        resolved = resolve_citations_and_references(text, chunks(sources), support_probabilities=occurrences)
        if resolved.unsupported:
            claims = [c.model_dump(mode="json") for c in resolved.unsupported]
            found.append({"prose": resolved.prose, "unsupported": claims, "claims": resolved.unsupported})
    return found


def test_the_sidebar_and_the_export_render_unsupported_claims_alike():
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed; the plugin tests need Node 20 (see `make test`)")
    answers = cases(300)
    script = (
        f"const {{ proseAsChosen }} = await import({json.dumps(MODULE.as_uri())});"
        "const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "console.log(JSON.stringify(cases.map((c) => ['mark', 'remove', 'leave'].map((m) =>"
        " proseAsChosen({ unsupported: c.unsupported }, c.prose, m)))));"
    )
    sent = json.dumps([{"prose": a["prose"], "unsupported": a["unsupported"]} for a in answers])
    out = subprocess.run(
        [node, "--input-type=module", "-e", script.replace("require('fs')", "(await import('node:fs'))")],
        input=sent,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    rendered = json.loads(out)
    assert len(rendered) == len(answers)
    differ = [
        (a["prose"], mode, js, prose_as_chosen(a["prose"], a["claims"], mode))
        for a, shown in zip(answers, rendered)
        for mode, js in zip(["mark", "remove", "leave"], shown)
        if js != prose_as_chosen(a["prose"], a["claims"], mode)
    ]
    assert not differ, f"{len(differ)} renderings differ, e.g. {differ[:3]}"
    # the cases reach what the renderers must handle, not only the easy ones
    proses = [a["prose"] for a in answers]
    assert any("𝛼" in p for p in proses) and any(p.startswith(("- ", "1. ")) for p in proses)
    assert any(len(a["claims"]) > 1 for a in answers)
