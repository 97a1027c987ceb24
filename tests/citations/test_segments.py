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
