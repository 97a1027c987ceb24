"""Citation tokens: the forms that are read, the regions that are never read, and bounds."""

from __future__ import annotations

import pytest

from zocrates_citations import extract_claim_occurrences, resolve_citations_and_references


def indices(text: str, n_chunks: int = 9) -> list[int]:
    return [o.chunk_index for o in extract_claim_occurrences(text, n_chunks)]


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("[1]", [1]),
        ("[1, 2]", [1, 2]),
        ("[1,2]", [1, 2]),
        ("[1;2]", [1, 2]),
        ("[1 ; 2 , 3]", [1, 2, 3]),
        ("[E1]", [1]),
        ("[E 1]", [1]),
        ("[E1, E2]", [1, 2]),
        ("[Chunk 1]", [1]),
        ("[chunk 2]", [2]),
        ("【1】", [1]),
        ("【1, 2】", [1, 2]),
        ("[01]", [1]),
    ],
)
def test_regex_matching_reads_every_supported_token_form(token, expected):
    assert indices(f"The measured rate rose sharply over the decade {token}.") == expected


@pytest.mark.parametrize(
    "text",
    [
        "A year in brackets [2021] is not a citation.",
        "A markdown link [1](https://example.org) is not a citation.",
        "Words in brackets [see above] are not citations.",
        "An empty bracket [] is not a citation.",
    ],
)
def test_non_citation_brackets_are_not_read(text):
    assert indices(text) == []
    resolved = resolve_citations_and_references(text, [])
    assert resolved.prose == text


def test_tokens_are_rewritten_in_canonical_form(make_chunks):
    text = "A [E1]. B [Chunk 2]. C 【1;2】. D [2 ,1]."
    resolved = resolve_citations_and_references(text, make_chunks("ab"))
    assert resolved.prose == "A [1]. B [2]. C [1, 2]. D [2, 1]."


def test_repeated_index_in_one_bracket_counts_once(make_chunks):
    occurrences = extract_claim_occurrences("The rate is well established here [1, 1].", 2)
    assert [(o.chunk_index, o.compound) for o in occurrences] == [(1, False)]
    resolved = resolve_citations_and_references("Claim [1, 1].", make_chunks("a"))
    assert resolved.prose == "Claim [1]."


PROTECTED = [
    "```python\nx = arr[1]\ny = val[1, 2]\n```",
    "~~~\nfoo [2]\n\nbar [1]\n~~~",
    "````\n```\nnested [1]\n```\n````",
    "`arr[1]`",
    "``code with ` and [2]``",
    "![figure [1]](https://example.org/fig[2].png)",
    "![chart][1]",
    "[1]: https://example.org/paper \"Title [2]\"",
    "  [2]: <https://example.org/x>",
]


@pytest.mark.parametrize("block", PROTECTED)
def test_code_block_protection_ignores_tokens_in_masked_regions(make_chunks, block):
    text = f"Intro sentence long enough to be a claim [1].\n\n{block}\n\nAfter it comes a claim [2].\n"
    assert indices(text) == [1, 2]
    resolved = resolve_citations_and_references(text, make_chunks("ab"), support_probabilities={1: [0.0], 2: [0.0]})
    assert block in resolved.prose  # byte-identical, tokens inside untouched
    assert resolved.prose.count("[1]") == block.count("[1]")


def test_masked_regions_come_back_byte_identical_when_neighbours_are_removed(make_chunks):
    block = "```\r\n  weird\tspacing [1]  \r\n```"
    text = f"Claim [99] `x [1]` [99].\n{block}\n[99] ![a](b[1]) [99]."
    resolved = resolve_citations_and_references(text, make_chunks("a"))
    assert block in resolved.prose and "`x [1]`" in resolved.prose and "![a](b[1])" in resolved.prose


def test_unterminated_fence_protects_the_rest_of_the_text():
    assert indices("Claim before the code block [1].\n\n```\ncode [2]\nmore [3]") == [1]


def test_inline_backticks_on_a_fence_line_are_inline_code_not_a_fence():
    assert indices("```inline``` text after it is a real claim [2].") == [2]


def test_a_line_starting_with_a_citation_and_colon_is_not_a_reference_definition():
    assert indices("[1]: rates rose by five percent over the decade.") == [1]


def test_out_of_bounds_index_is_stripped_with_whitespace_before_punctuation(make_chunks):
    resolved = resolve_citations_and_references("The rate rose [99].", make_chunks("ab"))
    assert resolved.prose == "The rate rose."
    assert resolved.citations == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Rates rose [3], then fell [0].", "Rates rose, then fell."),
        ("Rates rose [1, 99].", "Rates rose [1]."),
        ("Rates rose [99, 1, 42].", "Rates rose [1]."),
        ("Rates rose [99] and fell [2].", "Rates rose and fell [2]."),
        ("Rates rose [99] [1].", "Rates rose [1]."),
        ("Rates rose [1][99].", "Rates rose [1]."),
        ("Rates rose [99]\nnext line", "Rates rose\nnext line"),
        ("[99] Rates rose.", "Rates rose."),
        ("- [99] Rates rose.", "- Rates rose."),
        ("Rates (see [99]) rose.", "Rates (see) rose."),
        ("Rates rose【7】!", "Rates rose!"),
    ],
)
def test_brackets_that_lose_every_index_disappear(make_chunks, text, expected):
    assert resolve_citations_and_references(text, make_chunks("ab")).prose == expected


def test_out_of_range_tokens_are_removed_even_without_any_chunks():
    resolved = resolve_citations_and_references("Claim [1].", [])
    assert resolved.prose == "Claim." and resolved.text == "Claim."
