"""Source passages cut into numbered spans for sentence-level attribution (seed 4.5)."""

from __future__ import annotations

from zocrates_citations import segment_source_text

PASSAGE = """## 3.2 Attention

An attention function maps a query to an output. Dr. J. Smith et al. showed this in Fig. 2, e.g. for
long inputs! Is it fast?

| model | BLEU |
|:------|-----:|
| base | 27.3 |

$$
\\mathrm{Attention}(Q, K, V) = \\mathrm{softmax}(QK^T / \\sqrt{d_k}) V.
$$

- First item. Second sentence of it.
- Inline math $a. b$ and code `x. y` stay inside.

```python
print("a. b")
```
"""


def test_spans_are_numbered_exact_slices_in_reading_order():
    spans = segment_source_text(PASSAGE)
    assert [s.index for s in spans] == list(range(1, len(spans) + 1))
    assert all(PASSAGE[s.start : s.end] == s.text for s in spans)
    assert [s.start for s in spans] == sorted(s.start for s in spans)


def test_segments_keep_headings_table_rows_and_display_math_whole():
    spans = segment_source_text(PASSAGE)
    assert [(s.kind, s.text) for s in spans] == [
        ("heading", "## 3.2 Attention"),
        ("sentence", "An attention function maps a query to an output."),
        ("sentence", "Dr. J. Smith et al. showed this in Fig. 2, e.g. for\nlong inputs!"),
        ("sentence", "Is it fast?"),
        ("table_row", "| model | BLEU |"),
        ("table_row", "| base | 27.3 |"),
        ("math", "$$\n\\mathrm{Attention}(Q, K, V) = \\mathrm{softmax}(QK^T / \\sqrt{d_k}) V.\n$$"),
        ("sentence", "First item."),
        ("sentence", "Second sentence of it."),
        ("sentence", "Inline math $a. b$ and code `x. y` stay inside."),
        ("code", '```python\nprint("a. b")\n```'),
    ]


def test_single_line_display_math_is_one_span():
    spans = segment_source_text("$$x = 1. y = 2$$\nAfter it.")
    assert [(s.kind, s.text) for s in spans] == [("math", "$$x = 1. y = 2$$"), ("sentence", "After it.")]


def test_blank_text_has_no_spans():
    assert segment_source_text("") == [] and segment_source_text("  \n\n ") == []


def test_text_without_terminal_punctuation_is_one_sentence():
    [span] = segment_source_text("a table caption without a full stop")
    assert span.kind == "sentence" and span.index == 1


def test_a_stop_that_lower_case_text_goes_on_after_ends_no_sentence():
    """A chemist's "1 equiv.)" or a question quoted mid-sentence is followed by more of the same
    sentence in lower case; cut there, each half was quoted as a sentence of its own. A name set
    in lower case still opens one, and so does what follows a lone letter (a symbol font's bullet)."""
    from zocrates_citations.sentences import sentence_ends

    def split(text: str) -> list[str]:
        cuts = [0, *sentence_ends(text)]
        return [text[a:b].strip() for a, b in zip(cuts, cuts[1:])]

    assert split("To phosphinate 1 (600 mg, 1 equiv.) in chloroform silver oxide was added. It dissolved.") == [
        "To phosphinate 1 (600 mg, 1 equiv.) in chloroform silver oxide was added.",
        "It dissolved.",
    ]
    assert split("She asked “What did the paper find?” and read on. Then she stopped.") == [
        "She asked “What did the paper find?” and read on.",
        "Then she stopped.",
    ]
    assert split("Expression fell. mRNA levels rose twofold. p53 binds DNA.") == [
        "Expression fell.",
        "mRNA levels rose twofold.",
        "p53 binds DNA.",
    ]
    assert split("It was specific for the N-domain. r A molecule displayed potent inhibition.") == [
        "It was specific for the N-domain.",
        "r A molecule displayed potent inhibition.",
    ]
