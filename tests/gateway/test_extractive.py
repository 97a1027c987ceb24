"""The offline extractive answer, on real chunks of the fixture PDFs and on small made-up ones.

The fixture PDFs are converted and chunked with the retrieval service's own code, ranked by a
plain lexical score (which, unlike the real retrieval, happily ranks title blocks, affiliation
lines and acknowledgements high: the synthesizer must cope on its own), and answered.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import PlainTextResponse

from harness.evidence import evidence_chunk, fixture_pdf_chunks, scored
from harness.serving import serving
from zocrates_contracts import Creator, EvidenceChunk
from zocrates_gateway.config import GatewaySettings
from zocrates_gateway.domain.synthesis import (
    ANSWER_INTRO,
    ANSWER_TYPE_BONUS,
    FOCUS_PENALTY,
    NOT_FOUND,
    RANK_PRIOR,
    Earlier,
    asks_about_back_matter,
    back_matter_topics,
    candidate_sentences,
    choose_points,
    content_words,
    defines,
    defines_concept,
    describes,
    extractive_answer,
    names_paper,
    read_question,
    strip_reference_markers,
    system_prompt,
    unmentioned_qualifiers,
)
from zocrates_gateway.turn import synthesize

PDFS = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "pdfs"
QUESTIONS = [
    "What are the complications of DVT prophylaxis in trauma patients?",
    "What barriers to quality improvement were found at Kamuzu Central Hospital?",
    "Which inhibitors are selective for the N-domain of ACE?",
]
# What the smoke test quoted before: a search strategy, acknowledgements, an affiliation line,
# a title block, figure captions and an abbreviation box.
NEVER_QUOTED = [
    "Search terms included",
    "Davidoff",
    "Lilongwe",
    "RESEARCH ARTICLE",
    "Open Access",
    "Figure 7",
    "Schematic diagram",
    "Abbreviations",
    "LIGPLOT",
]
BACK_MATTER = re.compile(
    r"acknowledg|author|affiliation|competing|conflict|funding|abbreviation|"
    r"ethic|consent|availability|publisher|additional file|reference",
    re.IGNORECASE,
)
SOURCE_MARKER = re.compile(r"\[\s*\d+(?:\s*[-–,;]\s*\d+)*\s*\]")
POINT = re.compile(r"^- (.+) \[(\d+)\]([.!?])$")


@pytest.fixture(scope="module")
def library() -> list[EvidenceChunk]:
    if not PDFS.exists():
        pytest.skip(f"PDF fixtures not found at {PDFS}")
    return fixture_pdf_chunks(PDFS)  # the service's default chunk size


def lexical_top(library: list[EvidenceChunk], question: str, k: int = 12) -> list[EvidenceChunk]:
    """The chunks sharing the most (IDF-weighted) words with the question, best first."""
    words = [content_words(c.text) for c in library]
    df = Counter(w for ws in words for w in ws)
    wanted = content_words(question)
    score = [sum(math.log(1 + len(library) / df[w]) for w in ws & wanted) for ws in words]
    order = sorted(range(len(library)), key=lambda i: -score[i])
    return [library[i] for i in order[:k]]


def points_of(answer: str) -> list[tuple[str, int]]:
    lines = [line for line in answer.splitlines() if line.startswith("- ")]
    points = []
    for line in lines:
        m = POINT.match(line)
        assert m, f"a point ends with one citation: {line!r}"
        points.append((m.group(1) + m.group(3), int(m.group(2))))
    return points


def without_markers(text: str) -> str:
    text = SOURCE_MARKER.sub("", " ".join(text.split()))
    return re.sub(r" +(?=[.,;:!?])", "", re.sub(r"\(\s*\)", "", text)).replace("  ", " ")


@pytest.mark.parametrize("question", QUESTIONS)
def test_real_library_answers_quote_prose_that_matches_the_question(library, question):
    evidence = lexical_top(library, question)
    answer = "".join(extractive_answer(question, evidence).pieces())
    assert answer.startswith(ANSWER_INTRO) and "verbatim" not in answer
    points = points_of(answer)
    assert 1 <= len(points) <= 4, answer
    for text, index in points:
        chunk = evidence[index - 1]
        assert not BACK_MATTER.search(chunk.section or ""), (text, chunk.section)
        assert not any(bad in text for bad in NEVER_QUOTED), text
        assert len(content_words(text) & content_words(question)) >= 2, text
        assert not SOURCE_MARKER.search(text), text
        if chunk.kind == "table":  # a row, with its table's caption: its cells are the table's
            row = text.split("): ", 1)[1].rstrip(".")
            assert all(cell.strip() in chunk.text for cell in re.split(r" \| | — |; ", row)), (text, index)
            continue
        assert not re.match(r"\d+[A-Z]|(?:Figure|Fig\.|Table)\s*\d|\([A-Z]\) ", text), text
        # the cited chunk is the one the sentence is from
        assert text in without_markers(chunk.text), (text, index)
    assert len({p for p, _ in points}) == len(points)
    assert max(Counter(i for _, i in points).values()) <= 2


def test_dvt_answer_drops_the_papers_own_reference_numbers(library):
    question = "Which trauma patients are at the highest risk of venous thrombosis?"
    evidence = lexical_top(library, question)
    risk = next(c for c in evidence if "[2,3,7-9]" in c.text)
    answer = "".join(extractive_answer(question, evidence).pieces())
    assert "highest risk" in answer and "[2,3,7-9]" not in answer
    cited = int(re.search(r"highest risk.*\[(\d+)\]", answer).group(1))
    assert evidence[cited - 1] == risk


def test_an_unrelated_question_gets_the_honest_fallback(library):
    question = "What is the boiling point of tungsten?"
    assert "".join(extractive_answer(question, lexical_top(library, question)).pieces()) == NOT_FOUND


# --- choosing across the evidence --------------------------------------------------------------


def chunk(
    n: int, text: str, section: str | None = "Results", kind: str = "text", role: str | None = None
) -> EvidenceChunk:
    return evidence_chunk(n, text, section, kind, role)


def points_for(question: str, evidence: list[EvidenceChunk]):
    """The points chosen from `evidence`, its units scored against the question as retrieval scores them."""
    return choose_points(question, scored(question, evidence))


def test_a_section_named_for_what_is_asked_states_it():
    """ "What are the limitations of the Paper Plain study?": the sentences of its section "8.4
    Limitations" say what they are without the word; a sentence saying "limitations" elsewhere
    answers nothing."""
    evidence = [
        chunk(
            1,
            "Sarah is glad they deepened their understanding of the paper's limitations with this final question.",
            "4 PAPER PLAIN > 4.1 Paper Plain design",
        ),
        chunk(
            2,
            "The usability study was a timed, relatively short reading task, which might have skewed participant "
            "reading habits of the Paper Plain study.",
            "8 DISCUSSION & FUTURE WORK > 8.4 Limitations",
        ),
    ]
    points = points_for("What are the limitations of the Paper Plain study?", evidence)
    assert points and points[0].index == 2


def test_a_row_of_numbers_does_not_open_an_answer_to_a_question_asking_for_no_value():
    """ "Which residues differ between the N-domain and C-domain?" named the C-domain, and so
    did a row of its binding constants ("C-domain | 60 826 +− 9 175 | 10 395 +− 593"), which was
    quoted first; the sentence naming the residues answers."""
    evidence = [
        chunk(
            1,
            "Table 4 Binding constants\nConstruct | Ki (nM) | Fold\nN-domain | 21.03 | 2896\nC-domain | 60 826 +− 9 175 | n.d.∗",
            "Results",
            kind="table",
        ),
        chunk(
            2,
            "Thr358 is located in the S2 subsite and differs from the corresponding C-domain residue Val380.",
            "Methods",
        ),
    ]
    points = points_for("Which residues differ between the N-domain and C-domain in the S2 subsite?", evidence)
    assert points and points[0].index == 2


def test_a_point_goes_on_with_the_sentence_leaning_on_it_when_that_scores_as_a_point():
    """ "How do the risks the review calculated compare with earlier reports?": the bleeding and
    HIT rates and the sentence after them ("These values are slightly higher than the previously published
    rates of 3.1% and 0.4%") are quoted together, not the first alone."""
    evidence = [
        chunk(
            1,
            "In this review we calculated the risk of bleeding and HIT to be 3.9% and 0.7% respectively. "
            "These values are slightly higher than the previously published rates of 3.1% and 0.4%.",
            "Conclusion",
        ),
        chunk(2, "Mechanical devices carry a calculated bleeding risk of 2.6% in trauma patients.", "Conclusion"),
    ]
    points = points_for(
        "How do the bleeding and HIT risks the review calculated compare with earlier reports?", evidence
    )
    assert points[0].text.endswith("previously published rates of 3.1% and 0.4%.")
    assert points[0].text.startswith("In this review we calculated")


def test_points_come_from_across_the_evidence_at_most_two_per_chunk_without_repeats():
    first = chunk(
        1,
        "Heparin caused bleeding complications in trauma patients. Heparin bleeding complications "
        "were frequent after trauma. Bleeding complications of heparin were fatal in trauma.",
    )
    second = chunk(
        2,
        "Heparin caused bleeding complications in trauma patients. Filters caused "
        "thrombosis complications in trauma patients.",
    )
    points = points_for("What complications did heparin and filters cause in trauma?", [first, second])
    assert 1 <= [p.index for p in points].count(1) <= 2
    assert [p.text for p in points].count("Heparin caused bleeding complications in trauma patients.") == 1
    assert "Filters caused thrombosis complications in trauma patients." in [p.text for p in points]


def test_a_follow_up_starts_the_passages_the_previous_answer_cited_ahead():
    # "How many were taken?" after the answer that named the detector: the count beside it,
    # not the count of another passage that the carried words happen to match as well.
    detector = chunk(
        1,
        "Diffraction images of the complex were recorded on a CCD detector. "
        "A total of 720 images were collected with an oscillation of 0.5 degrees.",
    )
    elsewhere = chunk(2, "A total of 96 diffraction images of the apo crystals were recorded at home.")
    question, context = "How many were taken?", "detector recorded diffraction images complex"
    evidence = scored(f"{question} {context}", [elsewhere, detector])
    alone = choose_points(question, evidence, earlier=Earlier(context=context))
    followed = choose_points(question, evidence, earlier=Earlier(context=context, cited_before=frozenset({"c1"})))
    assert "96 diffraction images" in alone[0].text
    assert "720 images" in followed[0].text and followed[0].index == 2


def test_a_word_found_everywhere_counts_less_than_a_rare_one():
    common = " ".join(f"Trauma patients were enrolled in cohort {n}." for n in range(5))
    evidence = [
        chunk(1, common + " Trauma patients stayed in hospital for a while longer."),
        chunk(2, "Bleeding complications were seen in trauma cases of the registry."),
    ]
    points = points_for("What complications do trauma patients have?", evidence)
    assert points[0].text == "Bleeding complications were seen in trauma cases of the registry."


def test_a_long_list_of_terms_does_not_win_by_length():
    listing = (
        "Keywords covered bleeding, trauma, heparin, filters, complications, embolism, stockings, "
        "compression, registries, cohorts, outcomes, mortality, costs, guidelines and reviews."
    )
    finding = "Heparin raised bleeding complications after trauma."
    points = points_for(
        "Does heparin cause bleeding complications after trauma?", [chunk(1, listing), chunk(2, finding)]
    )
    assert points[0].text == finding


def test_results_are_preferred_over_methods_for_an_equal_match():
    methods = chunk(1, "Bleeding complications of heparin were recorded for every patient.", section="Methods")
    results = chunk(2, "Bleeding complications of heparin occurred in four percent of patients.", section="Results")
    points = points_for("What bleeding complications did heparin have?", [methods, results])
    assert [p.index for p in points] == [2, 1]


def test_a_sentence_sharing_one_word_is_not_an_answer():
    evidence = [chunk(1, "The boiling point of the solvent was reached after ten minutes.")]
    assert points_for("What is the melting point of tungsten?", evidence) == []
    assert points_for("Tungsten?", [chunk(1, "Tungsten is a heavy metal used in filaments.")])


def test_back_matter_is_quoted_only_when_the_question_asks_for_it():
    evidence = [
        chunk(
            1, "This work on ACE inhibitor design was supported by the National Research Foundation.", section="Funding"
        ),
        chunk(2, "The ACE inhibitor design used fragment-based screening of scaffolds.", section="Methods"),
    ]
    assert [p.index for p in points_for("How was the ACE inhibitor design done?", evidence)] == [2]
    funded = points_for("Who funded the ACE inhibitor design?", evidence)
    assert funded and funded[0].index == 1


def test_a_funding_question_naming_a_paper_is_answered_from_that_papers_back_matter():
    """Back matter never names its own paper ("This work was supported by ..."), but the paper's
    title does: "who funded the Kamuzu study?" is answered from Kamuzu's acknowledgements, in
    whatever words they name the money, and another paper's plain "supported by" answers for
    nothing."""
    ace = chunk(2, "This work was supported by the University of Cape Town (U.C.T.).", "Funding", role="back_matter")
    kamuzu = chunk(
        1,
        "Katholischer Akademischer Ausländer-Dienst (KAAD), a Catholic scholarship body in Germany which provided "
        "the financial assistance for the corresponding author's Master Studies and Thesis.",
        "Acknowledgments",
        role="back_matter",
    )
    evidence = [
        ace.model_copy(update={"title": "Fragment-based design of N-domain-selective ACE inhibitors"}),
        kamuzu.model_copy(update={"title": "A situational analysis at Kamuzu Central Hospital in Lilongwe, Malawi"}),
    ]
    points = points_for("Who funded the Kamuzu study?", evidence)
    assert [p.index for p in points] == [2]
    assert [p.index for p in points_for("Who funded the ACE inhibitor design?", evidence)][:1] == [1]


def test_a_funding_question_is_not_answered_by_thanks_that_name_no_money():
    """Paper Plain's acknowledgements thank colleagues and say nothing of who paid: "who funded
    the Paper Plain work?" is refused, not answered with "This work would not have been possible
    without the contributions of others"."""

    def acknowledgements(text: str) -> EvidenceChunk:
        thanks = chunk(1, text, "ACKNOWLEDGMENTS", role="back_matter")
        return thanks.model_copy(update={"title": "Paper Plain: Making Medical Research Papers Approachable"})

    thanks = (
        "This work would not have been possible without the contributions of others. "
        "Bailey Kuehl assisted us with recruiting study participants on Upwork."
    )
    assert points_for("Who funded the Paper Plain work?", [acknowledgements(thanks)]) == []
    funded = acknowledgements(f"{thanks} This work was supported by NSF Grant 1234.")
    assert [p.text for p in points_for("Who funded the Paper Plain work?", [funded])][:1] == [
        "This work was supported by NSF Grant 1234."
    ]


def test_who_paid_for_a_study_asks_who_funded_it():
    assert asks_about_back_matter("Which organisation paid for the first author's degree?")
    assert not asks_about_back_matter("How much were the participants paid?")


@pytest.mark.parametrize(
    "question, topics",
    [
        ("Who funded the Kamuzu study?", ["funding"]),
        ("Who paid for the author’s Master's?", ["funding"]),
        ("How much were participants paid?", []),
        ("Do the authors declare competing interests?", ["competing_interests"]),
        ("What conflicts arose between the staff?", []),
        ("What financial constraints did the hospital face?", []),
        ("What did each author contribute?", ["contributions"]),
        ("What did the authors find?", []),
        ("Was ethics approval obtained, and who funded it?", ["funding", "ethics"]),
        ("Is there a data availability statement?", ["data_availability"]),
        ("Whom did the Kamuzu authors acknowledge?", ["acknowledgements"]),
        ("What limitations did the Paper Plain authors acknowledge?", []),  # admit, not thank
    ],
)
def test_what_a_question_asks_of_the_back_matter_is_read_by_topic(question, topics):
    assert back_matter_topics(question) == topics
    assert asks_about_back_matter(question) is bool(topics)


def test_a_sample_size_is_the_number_sampled():
    """ "What sample size ...?" asks how many were sampled: the answer says "100 sampled
    outpatients", never "size", and must not be turned down for it; nor for not saying "Malawi",
    which names the paper ("the Malawi study") in its title."""
    malawi = "A situational analysis at the Medical Department of Kamuzu Central Hospital in Lilongwe, Malawi"
    evidence = [
        chunk(1, "Out of the 100 sampled outpatients, 98 responded and only two declined.", "Results"),
        chunk(2, "The hospital serves a population of about five million in the Central Region.", "Methods"),
    ]
    evidence = [c.model_copy(update={"title": malawi}) for c in evidence]
    points = points_for("What sample size did the Malawi study use?", evidence)
    assert [p.index for p in points] == [1]


KAMUZU_TITLE = "A situational analysis at the Medical Department of Kamuzu Central Hospital in Malawi"


KAMUZU_AIM = "The Medical Department of Kamuzu Central Hospital in Malawi set out to improve the quality of care"


@pytest.mark.parametrize(
    "question, answer, section, other",
    [
        (
            "What did outpatients at Kamuzu Central Hospital cite as the major bottleneck?",
            "Out of the 82 respondents answering this question, 41% of them cited staff performance as the "
            "major problem or bottleneck, and 27% suggested patient focus.",
            "Results",
            f"{KAMUZU_AIM} provided to its patients and establish itself as a recognized centre in teaching.",
        ),
        (  # nor do its words count only where a unit repeats them
            "Which patients were excluded from the exit interviews at Kamuzu Central Hospital?",
            "Patients who were too ill to answer the interview questions properly were excluded. The exit "
            "interview sought to address research objective 1.",
            "Methods",
            f"{KAMUZU_AIM} provided to its patients.",
        ),
    ],
)
def test_a_name_in_the_papers_title_tells_none_of_its_units_apart(question, answer, section, other):
    """Asked about outpatients "at Kamuzu Central Hospital" in a paper whose title names the
    hospital, a sentence repeating the name is no better an answer for it: the sentence that
    answers, which does not repeat it, comes first."""
    evidence = [chunk(1, answer, section), chunk(2, other, "Abstract")]
    evidence = [c.model_copy(update={"title": KAMUZU_TITLE, "item_key": "KAMUZU"}) for c in evidence]
    points = points_for(question, evidence)
    assert points and points[0].index == 1


def paper(n: int, text: str, section: str | None, title: str, role: str | None = None, key: str = "") -> EvidenceChunk:
    return evidence_chunk(n, text, section, role=role, item_key=key or title[:8]).model_copy(update={"title": title})


DVT = "Complications related to deep venous thrombosis prophylaxis in trauma: a systematic review"
ACE = "Fragment-based design of N-domain-selective ACE inhibitors"


@pytest.mark.parametrize(
    "question",
    [
        "What are the main findings of the review on DVT prophylaxis?",
        "Summarize the review on thrombosis prophylaxis",
        "What did Datta et al. conclude?",
    ],
)
def test_a_question_about_a_paper_as_a_whole_is_answered_from_its_abstract_and_conclusions(question):
    evidence = [
        paper(1, "All scientific publications discussing prophylaxis were searched in MEDLINE.", "Methods", DVT),
        paper(2, "The ACE inhibitors bind both domains of the enzyme.", "Introduction", ACE),
        paper(
            3,
            "Deep venous thrombosis prophylaxis is essential in trauma. "
            "In this review we calculated the risk of bleeding and HIT to be 3.9% and 0.7% respectively.",
            "Abstract",
            DVT,
            role="abstract",
        ),
        paper(4, "Level one evidence supports low molecular weight heparins in trauma patients.", "Conclusion", DVT),
    ]
    evidence = [
        c.model_copy(update={"creators": [Creator(last_name="Datta")]}) if "trauma" in c.title else c for c in evidence
    ]
    points = points_for(question, evidence)
    assert points and {p.index for p in points} <= {3, 4}
    assert any("3.9%" in p.text for p in points) and any("Level one evidence" in p.text for p in points)


def test_a_question_about_a_paper_on_something_it_never_says_is_refused_not_summarised():
    """ "What did the DVT review conclude about aspirin?": the review never names aspirin, and
    its conclusions do not answer that. Was: its abstract and conclusions, as for "what did it
    conclude?"."""
    evidence = [
        paper(1, "All scientific publications discussing DVT prophylaxis were searched in MEDLINE.", "Methods", DVT),
        paper(
            2,
            "In this review we calculated the risk of bleeding and HIT to be 3.9% and 0.7% respectively.",
            "Abstract",
            DVT,
            role="abstract",
        ),
        paper(3, "Level one evidence supports low molecular weight heparins in trauma patients.", "Conclusion", DVT),
    ]
    assert points_for("What did the DVT review conclude?", evidence)
    assert points_for("What did the DVT review conclude about aspirin?", evidence) == []
    # what it concluded about heparins is what it says of them
    assert [p.index for p in points_for("What did the DVT review conclude about heparins?", evidence)][:1] == [3]


def test_a_question_about_a_paper_the_passages_are_not_of_is_refused():
    """ "Summarize the Douglas et al. paper", when no passage is by Douglas, is not answered with
    another paper's abstract; nor is "summarize the review on ROUGE scores" by a paper that
    never speaks of them."""
    evidence = [
        paper(
            1,
            "In this review we calculated the risk of bleeding and HIT to be 3.9% and 0.7%.",
            "Abstract",
            DVT,
            "abstract",
        ),
        paper(2, "Level one evidence supports low molecular weight heparins in trauma patients.", "Conclusion", DVT),
    ]
    assert points_for("Summarize the Douglas et al. paper", evidence) == []
    assert points_for("Summarize the review on ROUGE scores of generated gists", evidence) == []


@pytest.mark.parametrize(
    "question, summary, words",
    [
        ("What is the paper on N-domain-selective ACE inhibitors about?", True, {"ace", "inhibitor"}),
        ("What does Moon et al.'s review of hexagonal boron nitride cover?", True, {"boron", "nitrid"}),
        ("What did August et al. conclude from their usability study?", True, {"usabl"}),
        ("What did the Datta (2010) review find?", True, set()),
        ("What is ACE about?", False, {"ace"}),
        ("What does the review say about bleeding?", False, {"bleed"}),
        ("What did Moon et al. study?", True, set()),
        ("What did the Kamuzu study investigate?", True, set()),
        ("What does the Innocenzi and Stagi account report?", True, set()),
        ("Tell me about the Paper Plain paper.", True, set()),
        ("Can you describe Kaur et al.'s work?", True, set()),
        ("Tell me about heparin-induced thrombocytopenia.", False, {"thrombocytopenia"}),
        # a count the study found is no summary of it
        ("How many patients did the study find?", False, {"patient"}),
        ("What are the take-home messages of the Agyeman-Duah paper?", True, set()),
        ("What are the conclusions of the DVT prophylaxis review?", True, set()),
        # of a paper, not of a part of one
        ("What were the findings of the interviews?", False, {"interview"}),
        # what it concluded about one thing is a question about that thing
        ("What did the DVT review conclude about IVC filters?", False, {"ivc", "filter"}),
    ],
)
def test_a_paper_asked_about_as_a_whole_in_other_words(question, summary, words):
    """ "What is the paper on X about?", "what does X's review cover?": the paper as a whole, and
    what it is on still counts as what is asked about."""
    ask = read_question(question)
    assert ask.summary is summary and words <= ask.words


def test_a_paper_named_by_an_acronym_of_its_title():
    """ "Who funded the DVT review?": the review's title spells out deep venous thrombosis; another
    paper's funding statement answers nothing of it, and with none of its own it is refused."""
    evidence = [
        paper(1, "Level one evidence supports low molecular weight heparins in trauma patients.", "Abstract", DVT),
        paper(2, "This work was supported by the University of Cape Town.", "Funding", ACE, role="back_matter"),
    ]
    assert names_paper({"dvt"}, evidence[0]) and not names_paper({"dvt"}, evidence[1])
    assert points_for("Who funded the DVT review?", evidence) == []


def test_a_paper_named_by_its_author_after_the_noun():
    assert read_question("In the paper by Douglas, which residue does 33RE bind?").papers == {"douglas"}
    assert read_question("What did the review of Datta and colleagues find?").papers == {"datta"}
    assert read_question("In Esmann et al., what are PQDs?").describes == "pqds"


def test_a_minus_sign_is_a_hyphen_and_per_is_no_word_to_cover():
    """ "Per Kaur and colleagues, what does the band at 1521 cm-1 indicate?": the PDF writes
    "cm−1" with a minus sign."""
    assert content_words("a broad band at 1521 cm−1") >= content_words("the broad band at 1521 cm-1")
    assert "per" not in read_question("Per Kaur and colleagues, what does the band indicate?").words


def test_a_year_dating_a_paper_names_it_and_is_no_word_to_cover():
    ask = read_question("At what energy is the sharp peak of the BCN of Kaur et al. 2021?")
    assert ask.papers == {"kaur"} and "2021" not in ask.words
    ask = read_question("What did the Datta 2010 review report about bleeding?")
    assert ask.papers == {"datta"} and "2010" not in ask.words
    assert "2010" in read_question("How many patients were admitted in June 2010?").words
    assert read_question("At what energy is the sharp peak of the BCN of Kaur et al. 2021?").year == 2021
    # a family name of two letters names a paper before "et al." too
    assert read_question("What did Lo et al. find?").papers == {"lo"}
    ask = read_question("Which checklist did Datta and colleagues follow?")
    assert ask.papers == {"datta"} and ask.words == {"checklist", "follow"}


def test_a_summary_of_an_item_known_by_its_abstract_alone_may_quote_it_throughout():
    """An item with no file is one abstract: its findings are not held to two points a passage."""
    abstract = (
        "Single photon emitters in hexagonal boron nitride are vital for quantum technologies. "
        "Here, ion implantation with gallium is used to create luminescent defects with emission at 820 nm. "
        "Thermal annealing shifts the emission wavelength from 820 to 625 nm. "
        "Focused ion beam implantation sets the position of the defects."
    )
    only = paper(1, abstract, "Abstract", "Selective generation of luminescent defects", "abstract")
    only = only.model_copy(update={"creators": [Creator(last_name="Venturi")], "attachment_key": None})
    points = points_for("What are the main findings of Venturi et al. on luminescent defects?", [only])
    assert len(points) >= 3 and any("625 nm" in p.text for p in points)


def test_a_summary_leads_with_what_the_paper_did_not_the_background_it_opens_with():
    """The abstract's opening sentence most often says what the field knew; a discussion of the
    paper's ethical implications is not its conclusion."""
    title = "Hexagonal boron nitride for next-generation photonics"
    abstract = paper(
        1,
        "Hexagonal boron nitride is an insulating layered material that attracts tremendous interest for photonics. "
        "Resistive switching memory for next-generation electronics adopts the material as its active medium.",
        "Abstract",
        title,
        "abstract",
    ).model_copy(update={"position": 0, "creators": [Creator(last_name="Moon")]})
    ethics = paper(
        2,
        "One issue is that hexagonal boron nitride photonics may be misread by readers of a single paper.",
        "Discussion > Ethical implications",
        title,
    ).model_copy(update={"position": 9, "creators": [Creator(last_name="Moon")]})
    points = points_for("Summarize the Moon et al. paper", [abstract, ethics])
    assert points and points[0].text.startswith("Resistive switching memory")
    assert not any(p.text.startswith("One issue") for p in points)


def test_an_abbreviation_in_lower_case_first_covers_its_long_form():
    """ "hexagonal boron nitride (hBN)": a unit saying hBN is about hexagonal boron nitride."""
    evidence = [
        chunk(
            1,
            "Single photon emitters from defects in crystals like hexagonal boron nitride (hBN) are vital for "
            "quantum technologies. Ion implantation with carbon, neon and gallium creates emitters in hBN.",
        )
    ]
    points = points_for("What was implanted into hexagonal boron nitride?", evidence)
    assert points and points[0].text.startswith("Ion implantation")


def test_a_quantity_asked_for_is_named_by_the_unit_of_its_value():
    question = "At what energy is the sharp photoluminescence peak of BCN?"
    text = (
        "The photoluminescence of BCN shows a sharp peak at 3.64 eV. "
        "The sharp photoluminescence peak of BCN was stable for 2 days."
    )
    assert on_type_units(question, text) == ["The photoluminescence of BCN shows a sharp peak at 3.64 eV."]


def test_the_number_of_a_label_is_no_count_or_value_of_a_table_row():
    """A table of words has no number but its label's: "Table 2 ... (Appendix 1, Section 4.5)"."""
    table = evidence_chunk(
        1,
        "Table 2 Overview of themes on quality by stakeholders of the hospital\n"
        "Theme | Statement\nPlanning | No strategic plan for the hospital (Appendix 1, Section 4.5.5)\n"
        "Data | Disintegrated data management system in the hospital",
        kind="table",
    )
    prose = chunk(2, "The hospital serves a population of around 5 million in the Central Region.")
    points = points_for("How many people does the hospital serve?", [table, prose])
    assert points and points[0].index == 2 and all(p.index == 2 for p in points)


def test_being_and_getting_are_no_words_a_unit_must_say():
    """ "How did patients rate being treated with respect?", "What R2 did HC-6004 get?": "being"
    (stem "be") and "get" say nothing a passage would repeat; as question words they only thinned
    the share a unit covers."""
    assert content_words("being treated") == content_words("treated")
    assert content_words("what did HC-6004 get or got") == content_words("HC-6004")


def test_outpatients_are_patients():
    """A prefix names a kind of the thing ("outpatients", "subgroups"): the count of outpatients
    answers "how many patients", ahead of a count of something else."""
    assert {"patient", "group"} <= content_words("outpatients subgroups")
    evidence = [
        chunk(1, "For the in-depth interviews, 20 stakeholders were purposively sampled.", "Methods"),
        chunk(2, "Structured interviews were held with 100 outpatients as they left the clinic.", "Methods"),
    ]
    points = points_for("How many patients were interviewed?", evidence)
    assert points and points[0].index == 2


def test_which_of_my_papers_are_on_a_topic_gives_one_passage_from_each():
    """ "Which papers in my library are about hexagonal boron nitride?": a point from each paper on
    it, not two from the first."""
    evidence = [
        paper(1, "Hexagonal boron nitride is an insulating 2D material of great interest.", "Abstract", "Moon review"),
        paper(2, "Defects in hexagonal boron nitride emit single photons.", "Abstract", "Moon review"),
        paper(3, "Ion implantation creates luminescent defects in hexagonal boron nitride.", "Abstract", "Venturi"),
        paper(4, "Low molecular weight heparin prevents clots in trauma patients.", "Abstract", "Datta review"),
    ]
    question = "Which papers in my library are about hexagonal boron nitride?"
    assert read_question(question).listing
    points = points_for(question, evidence)
    assert sorted(p.index for p in points) == [1, 3]


def test_a_pointer_elsewhere_is_not_an_answer():
    evidence = [
        chunk(1, "More details on the GPT-3 prompt are in Appendix C.", "5 IMPLEMENTATION"),
        chunk(
            2,
            "We use the leading sentence of each paragraph rather than the full section text because GPT-3 "
            "accepts a limited prompt length.",
            "5 IMPLEMENTATION",
        ),
    ]
    points = points_for("Why did the authors use GPT-3 with the leading sentences?", evidence)
    assert [p.index for p in points] == [2]
    # "we discuss X in §8.5" says where X is discussed, not what was found: it opened the answer
    # to "did Paper Plain improve comprehension?"
    discussed = [
        chunk(1, "We discuss future interventions focused on improving paper comprehension in §8.5.", "7 RESULTS"),
        chunk(
            2,
            "The scores suggest that Paper Plain's primary objective of improving reading experience was achieved "
            "while not hindering comprehension.",
            "7 RESULTS",
        ),
    ]
    assert [p.index for p in points_for("Did Paper Plain improve comprehension?", discussed)] == [2]


def test_a_papers_own_question_is_not_an_answer():
    evidence = [
        chunk(
            1,
            "How did participants use the reading features of Paper Plain? Participants used "
            "the reading features of Paper Plain throughout each paper.",
        )
    ]
    points = points_for("How did participants use Paper Plain's reading features?", evidence)
    assert [p.text for p in points] == ["Participants used the reading features of Paper Plain throughout each paper."]


def test_tables_and_fragments_cut_at_a_chunk_boundary_are_not_quoted():
    evidence = [
        chunk(1, "Table 2 Bleeding complications of heparin | 4% | 12 | trauma patients.", kind="table"),
        chunk(
            2,
            "bleeding complications of heparin were common in trauma patients. Heparin bleeding "
            "complications in trauma patients were seen in all",
        ),
    ]
    assert points_for("What bleeding complications did heparin have in trauma patients?", evidence) == []


# --- the sources' own reference markers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "Trauma patients at the highest risk have been identified [2,3,7-9].",
            "Trauma patients at the highest risk have been identified.",
        ),
        (
            "Rates exceed 50% [1-3], while filters [4, 5] and heparin [10–12] differ [6].",
            "Rates exceed 50%, while filters and heparin differ.",
        ),
        ("As shown before ([3]), and in [4], [5] or [6]-[8], it holds.", "As shown before, and in or, it holds."),
        (
            "Scores were scaled to [0, 1] and [2.5, 3] intervals.",
            "Scores were scaled to [0, 1] and [2.5, 3] intervals.",
        ),
        ("No markers here.", "No markers here."),
        ("Line one [1].\nLine two [2].", "Line one.\nLine two."),
    ],
)
def test_the_sources_own_reference_markers_are_removed(text, expected):
    assert strip_reference_markers(text) == expected


def test_the_llm_prompt_carries_no_reference_numbers_of_the_sources():
    source = chunk(1, "Heparin raised bleeding [2,3,7-9] in trauma [12].")
    prompt = system_prompt([source])
    assert "Heparin raised bleeding in trauma." in prompt and "[12]" not in prompt and "7-9" not in prompt
    assert '<chunk index="1"' in prompt
    assert source.text == "Heparin raised bleeding [2,3,7-9] in trauma [12]."


async def test_a_configured_llm_is_sent_the_evidence_without_the_sources_reference_numbers(tmp_path):
    """The prompt as it really leaves the gateway, caught by an OpenAI-style endpoint on loopback."""
    received = []
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def completions(request: Request):
        received.append(await request.json())
        delta = {"choices": [{"delta": {"content": "Heparin raised bleeding [1]."}}]}
        return PlainTextResponse(f"data: {json.dumps(delta)}\n\ndata: [DONE]\n\n", media_type="text/event-stream")

    async with serving(app) as url:
        settings = GatewaySettings(llm_url=f"{url}/v1", data_dir=tmp_path)
        source = chunk(1, "Heparin raised bleeding [2,3,7-9] in trauma [12].")
        answer = "".join([piece async for piece in synthesize(settings, "Does heparin raise bleeding?", [source])])
    assert answer == "Heparin raised bleeding [1]."
    prompt = received[0]["messages"][0]["content"]
    assert "Heparin raised bleeding in trauma." in prompt and "[12]" not in prompt and "7-9" not in prompt


def on_type_units(question: str, text: str) -> list[str]:
    """The units of one chunk of `text` that state the kind of answer `question` asks for."""

    return [s.text for s in candidate_sentences(question, [chunk(1, text)]) if s.on_type]


def test_a_count_is_a_number_of_something_not_a_list_number_or_a_section():

    question = "How many stakeholders were interviewed in the hospital?"
    ask = read_question(question)
    assert ask.answer_type == "count" and ask.focus == {"stakehold"}
    on_type = on_type_units(
        question,
        "As described in section (§3), some interviews of the hospital were held. "
        "Respondents were grouped as follows: 4. Management respondents of the hospital. "
        "Table 1 further describes the stakeholders of the hospital. "
        "For the interviews, 20 stakeholders of the hospital were sampled.",
    )
    assert on_type == ["For the interviews, 20 stakeholders of the hospital were sampled."]


def test_a_question_asking_for_a_value_is_refused_when_no_unit_states_one_about_it():
    question = "What was the mean age of the trauma patients given enoxaparin within 36 hours?"
    evidence = [chunk(1, "The mean dose of enoxaparin given to trauma patients within 36 hours was 40 mg.")]
    assert points_for(question, evidence) == []
    aged = evidence + [chunk(2, "The mean age of the trauma patients given enoxaparin was 41 years.")]
    assert points_for(question, aged)[0].index == 2


def test_a_code_or_acronym_the_passages_never_mention_is_not_answered_by_other_values():
    evidence = [
        chunk(
            1,
            "Compound 33RE showed a Ki of 11.21 nM against the N-domain of ACE and did not "
            "inhibit neprilysin at 10 µM.",
        )
    ]
    assert points_for("What IC50 did compound 33RE show against neprilysin?", evidence) == []
    assert points_for("What Ki did compound 33RE show against the N-domain of ACE?", evidence)
    # an acronym the passage spells out is mentioned
    spelled = [chunk(1, "Deep vein thrombosis occurred in 12 of the 300 trauma patients (4%).")]
    assert points_for("What percentage of trauma patients developed DVT?", spelled)


def test_a_dash_the_pdf_prints_is_the_hyphen_the_question_types():
    """A PDF prints "ACE–33RE" (an en dash) and "cm−1" (a minus sign) where a researcher types a
    hyphen. Was: the code "ace-33re" counted as never mentioned and the question was refused. (And
    a resolution is a length: "solved at 2.2 Å" states one without the word.)"""
    evidence = [chunk(1, "The co-crystal structure of the N-domain ACE–33RE complex was solved at 2.2 Å.")]
    for question in (
        "What resolution was the N-domain ACE-33RE structure solved at?",
        "What resolution was the N-domain ACE\u201333RE structure solved at?",
    ):
        points = points_for(question, evidence)
        assert points and "2.2 Å" in points[0].text, question
    assert content_words("ACE\u201333RE at 1650 cm\u22121") == content_words("ACE-33RE at 1650 cm-1")


def test_the_main_things_a_papers_title_is_about_are_answered_from_what_it_found():
    """ "What were the main barriers to quality improvement at KCH?" asks what the paper titled
    "Understanding the barriers to ..." found, in words its abstract does not share ("major
    constraints"). Was: refused, the restatements of its aim scoring highest."""
    title = "Understanding the barriers to setting up a healthcare quality improvement process"
    paper = [
        chunk(
            1,
            "Against this background, a situational analysis was performed to aid the Medical Department to "
            "define and prioritize its quality improvement activities.",
            "Background",
        ),
        chunk(
            2,
            "Results: Human resource shortages, staff attitudes and shortage of equipment were identified as major "
            "constraints to patient care, and the running of the Medical Department.",
            None,
            role="abstract",
        ),
    ]
    paper = [c.model_copy(update={"title": title, "item_key": "KCH"}) for c in paper]
    question = "What were the main barriers to quality improvement in the Medical Department?"
    texts = [p.text for p in points_for(question, paper)]
    assert any(t.startswith("Results: Human resource shortages") for t in texts), texts


def test_where_a_study_was_done_is_answered_by_a_place():
    """ "Where was the study carried out?" was answered by a sentence restating it ("this study
    was carried out to ..."), which names no place."""
    evidence = [
        chunk(1, "This study was carried out to identify the barriers to quality care.", "Background"),
        chunk(
            2,
            "Prior to this study, the management and staff of the Medical Department, Kamuzu Central Hospital in "
            "Malawi, where this study was carried out, expressed the concern that their department was not "
            "performing up to expectations.",
            "Background",
        ),
    ]
    assert read_question("Where was the study carried out?").answer_type == "place"
    assert points_for("Where was the study carried out?", evidence)[0].index == 2
    recruited = [
        chunk(1, "Participants were recruited over two weeks and paid for one hour.", "Method"),
        chunk(2, "We recruited participants from Upwork using the same materials.", "Method"),
    ]
    assert points_for("Where were the participants recruited?", recruited)[0].index == 2
    # a month, a language or a label is no place; an address or a venue is asked for otherwise
    assert points_for("Where was the survey done?", [chunk(1, "The survey was done in June 2010.")]) == []
    assert read_question("Where do the authors of the Kamuzu study work?").answer_type is None
    assert read_question("Where was the Paper Plain study published?").answer_type is None
    # where from is a source, a place or not: "from our institution, our professional networks, and Upwork"
    assert read_question("Where were they recruited from?").answer_type is None
    assert read_question("Where did they take the key questions from?").answer_type is None
    from_networks = [
        chunk(1, "A total of eight participants used two early prototypes of Paper Plain.", "Method"),
        chunk(2, "Participants were recruited from our institution, our professional networks, and Upwork.", "Method"),
    ]
    assert points_for("Where were the prototype participants recruited from?", from_networks)[0].index == 2


def test_a_percentage_in_a_table_is_a_number_of_a_row_whose_headers_say_percent():
    table = evidence_chunk(
        1,
        "Table 1 Patient-provider relationship during consultation\n"
        "Variable | Yes (%) | No (%)\nTreated with respect | 97.9 | 2.1\n"
        "Told how to take your medication | 95.7 | 4.3",
        kind="table",
    )
    prose = chunk(2, "Overall, 59% of outpatients rated the consultation as very good.")
    points = points_for("What percentage of outpatients were told how to take their medication?", [table, prose])
    assert points and "95.7" in points[0].text


def test_two_rows_of_one_table_are_told_apart_by_their_cells_not_their_shared_caption():
    """A question naming two compounds may tie their rows; both are quoted, since the caption and
    headers the rows share do not make one a repeat of the other."""
    table = evidence_chunk(
        1,
        "Table 3 Summary of results obtained from SHOP screening of the ligand backbone\n"
        "Compound | R2 relative to the ligand backbone\nRXP407 | 1\n33RE | 0.85\nCA-4124 | 0.62",
        kind="table",
    )
    texts = [
        p.text
        for p in points_for("What R2 value relative to the RXP407 backbone did the SHOP screen give 33RE?", [table])
    ]
    assert [t.split("): ")[1] for t in texts] == [
        "33RE — R2 relative to the ligand backbone: 0.85",
        "RXP407 — R2 relative to the ligand backbone: 1",
    ]


def test_two_rows_of_one_label_under_different_column_headers_are_both_quoted():
    """A table that compares pairs repeats its row labels under new column headers: the rows
    differ only in their values, and neither is a repeat of the other."""
    table = evidence_chunk(
        1,
        "Table 2. Post-hoc tests of the ratings between interfaces.\nPP − QA | p | PP − PDF | p\n"
        "Relevance (1–5) | -0.193 | 0.9133 | 1.167 | 0.0030\nQA − SD | p | QA − PDF | p\n"
        "Relevance (1–5) | 0.946 | 0.0183 | 1.361 | 0.0006",
        kind="table",
    )
    texts = [p.text for p in points_for("How was relevance rated against the PDF baseline?", [table])]
    assert sorted(t.split(" — ")[1].split(";")[0] for t in texts) == ["PP − QA: -0.193", "QA − SD: 0.946"]


def test_mathematical_letters_read_as_the_letters_they_show():
    assert content_words("rated against the 𝑃𝐷𝐹 baseline (𝑝-values)") == content_words(
        "rated against the PDF baseline (p-values)"
    )


def test_british_and_american_spellings_match():
    assert content_words("the favourite colour of the randomised organisation") == content_words(
        "the favorite color of the randomized organization"
    )


def test_here_opens_a_papers_own_work_and_leans_on_nothing():
    """An abstract's "Here, ion implantation ... is used to ..." says what the paper did; it
    was quoted only with the sentence before it, about what others had not achieved."""
    evidence = [
        chunk(
            1,
            "Although various techniques are devised to obtain defect emission in hBN, control over defect type "
            "has not been achieved yet. Here, ion implantation with 69Ga is used to create defects in hBN "
            "emitting at 820 nm.",
            "Abstract",
            kind="abstract",
        )
    ]
    points = points_for("Which ions were implanted to create defects in hBN?", evidence)
    assert points and points[0].text.startswith("Here, ion implantation")


def test_a_sentence_quoted_with_the_one_before_it_is_not_repeated_alone():
    evidence = [
        chunk(
            1,
            "In this review we calculated the risk of bleeding to be 3.9% with heparin. These values "
            "are slightly higher than the previously published bleeding risk of 3.1% with heparin.",
        )
    ]
    texts = [p.text for p in points_for("What bleeding risk did the review calculate for heparin?", evidence)]
    assert texts and not any(a != b and a in b for a in texts for b in texts)


def test_a_pointer_is_no_focus_of_a_question():

    assert read_question("How many of those came from abroad?").focus == frozenset()
    assert read_question("How many stakeholders were interviewed?").focus == {"stakehold"}


def test_a_measure_is_of_the_thing_before_it():
    """ "What was the mortality rate ...?" asks for a rate of mortality: a sentence giving
    migration and occlusion rates of the same filters answers nothing of it."""
    assert read_question("What was the mortality rate of trauma patients with IVC filters?").focus == {"mortal"}
    assert read_question("What was the staff turnover rate at the hospital?").focus == {"turnov"}
    # and "the rate of X" is a rate of X, said by X's acronym or in full (`_acronym_words`)
    assert read_question("What rate of HIT did the review calculate?").focus == {"hit"}
    evidence = [
        chunk(
            1,
            "In studies of trauma patients with IVC filters, filter migration occurred between 3% and 8%, "
            "and IVC occlusion rates were reported between 4% and 15%.",
        )
    ]
    assert points_for("What was the mortality rate of trauma patients with IVC filters?", evidence) == []


def test_who_funded_it_is_answered_by_a_statement_of_who_paid_or_not_at_all():
    """A review with no funding statement: its method sentence named the review and was quoted."""
    evidence = [
        chunk(1, "A systematic review was completed using PRISMA guidelines to evaluate DVT prophylaxis.", "Abstract"),
        chunk(
            2, "The authors declare that they have no competing interests.", "Competing interests", role="back_matter"
        ),
    ]
    assert points_for("Who funded the DVT prophylaxis review?", evidence) == []
    funded = [
        *evidence,
        chunk(3, "This review was funded by the Calgary Trauma Foundation.", "Funding", role="back_matter"),
    ]
    assert [p.index for p in points_for("Who funded the DVT prophylaxis review?", funded)][:1] == [3]


def test_the_verb_after_what_is_counted_is_no_focus():
    """ "How many medical doctors worked in ...?" counts doctors, not work."""
    assert read_question("How many medical doctors worked in the Medical Department in 2010?").focus == {"doctor"}
    assert read_question("How many patients died in the ward?").focus == {"patient"}


def test_what_is_counted_ends_where_its_verb_begins():
    """ "How many children received filters?" counts children: with no auxiliary after them the
    question named no focus, and a count of four studies answered it."""
    assert read_question("How many children received IVC filters in the studies of the review?").focus == {"children"}
    assert read_question("How many participants completed the formative study?").focus == {"particip"}
    assert read_question("How many trials could the authors include?").focus == {"trial"}
    evidence = [
        chunk(1, "Of the four studies analyzing retrievable IVC filters in injured patients, none reported migration."),
        chunk(2, "One patient did have a symptomatic IVC penetration for a calculated rate of 0.4%."),
    ]
    assert points_for("How many children received IVC filters in the studies of the review?", evidence) == []


def test_what_a_follow_up_asks_of_its_referent_is_its_focus():
    """ "What was its Ki?" after "Which compound was most N-selective?" asks for a Ki: with no
    focus read, the sentences repeating the carried words (compound, N-selective) came first."""
    assert read_question("What was its Ki?").focus == {"ki"}
    assert read_question("What was its Ki in the N-domain?").focus == {"ki"}
    assert read_question("What were their ages?").focus == content_words("ages")
    assert read_question("What is their size?").focus == frozenset()  # a generic head, as before
    question, context = "What was its Ki?", "compound Douglas N-selective"
    evidence = scored(
        f"{question} {context}",
        [
            chunk(
                1,
                "Since both compounds had similar predicted interaction energies, it was anticipated that the "
                "N-selectivity of compound 33RE would be comparable to that of RXP407 in Douglas et al.",
            ),
            chunk(2, "Compound 33RE displayed low nanomolar inhibition of the N-domain (Ki = 11.21 nM)."),
        ],
    )
    points = choose_points(question, evidence, earlier=Earlier(context=context))
    assert points and "11.21" in points[0].text


def test_a_share_of_those_with_something_asks_about_that_thing():
    """ "What share of patients had tuberculosis?" asks for the share with tuberculosis: a share of
    self-referrals among the same patients does not answer it."""
    assert read_question("What share of patients at the KCH medical department had tuberculosis?").focus == {
        "tuberculosi"
    }
    assert read_question("What percentage of outpatients were told how to take their medication?").focus == {
        "told",
        "take",
        "medic",
    }
    assert read_question("What share of the admissions came during the night shift?").focus >= {"night", "shift"}
    evidence = [
        chunk(
            1,
            "In this survey, 64% of the 95 patients indicated that they are self-referrals to the KCH Medical Department.",
        ),
        chunk(2, "The patients of the KCH Medical Department come from Lilongwe and the whole Central Region."),
    ]
    assert points_for("What share of patients at the KCH medical department had tuberculosis?", evidence) == []
    asked = "What share of patients at the KCH medical department were self-referrals?"
    assert [p.index for p in points_for(asked, evidence)][:1] == [1]


def test_what_a_concept_is_is_answered_where_the_paper_names_it():
    """ "What are section gists in Paper Plain?" asks what a concept in lower case is: the answer
    is the sentence naming it ("... summaries of any section (“section gists”)"), ahead of those
    that only use the word; "were a clear favorite" says nothing of what it is."""
    assert read_question("What are section gists in Paper Plain?").describes == "section gist"
    assert read_question("What is scaffold hopping?").describes == "scaffold hopping"
    assert read_question("What is the PDB code?").describes is None
    assert read_question("What is meta-analysis?").describes == "meta-analysis"
    evidence = [
        chunk(1, "11 out of 12 participants with the Section Gists and Term Definitions clicked on a Section Gist."),
        chunk(2, "The Section Gists were a clear favorite of the participants in the usability study of Paper Plain."),
        chunk(
            3,
            "Paper Plain helps a reader understand jargon-dense passages by allowing them to access in-situ plain "
            "language summaries of any section (“section gists”).",
            "1 INTRODUCTION",
        ),
    ]
    points = points_for("What are section gists in Paper Plain?", evidence)
    assert [p.index for p in points][:1] == [3]
    assert defines_concept("a technique called scaffold hopping", "scaffold hopping")
    assert not defines_concept(evidence[1].text, "section gist")


def test_which_feature_is_answered_by_naming_one():
    """ "Which Paper Plain feature was the participants' favourite?": the answer names the
    feature ("The Key Question Index ... clear favorite") without the word "feature", which
    sentences that only say it hold; it lost the focus penalty's 0.2 and fell out of the answer."""
    evidence = [
        chunk(1, "Each feature of Paper Plain was used by most participants in the study."),
        chunk(
            2,
            "The Key Question Index and Answer Gists were the participants’ clear favorite in the usability study "
            "of Paper Plain.",
        ),
    ]
    points = points_for("Which Paper Plain feature was the participants' favourite?", evidence)
    assert 2 in [p.index for p in points]


def test_what_cited_authors_found_is_not_a_summary_of_the_paper_citing_them():
    """ "What did Nunn and Pinfield find about lay summaries?" names the authors of a work that a
    passage cites: the answer is that passage, not the findings of the paper citing it."""
    evidence = [
        chunk(1, "All but one participant said they would use Paper Plain to read medical papers.", "Abstract"),
        chunk(2, "Readers used the Section Gists to make sense of dense passages of medical papers.", "Abstract"),
        chunk(
            3,
            "Nunn and Pinfield interviewed healthcare consumers on their response to lay summaries written for "
            "medical papers. They found that readers appreciated the lay summaries.",
            "2 RELATED WORK",
        ),
    ]
    points = points_for("What did Nunn and Pinfield find about lay summaries?", evidence)
    assert points and points[0].index == 3


def test_which_committee_approved_the_study_asks_for_the_ethics_statement():
    """ "Which ethics committees approved the KCH study?" named no back matter (the pattern knew
    only "ethics committee"), and the approval, stated in the methods, carried their penalty."""
    for question in (
        "Which ethics committees approved the KCH study?",
        "Which committee approved the study?",
        "Was the study approved by the local ethics board?",
    ):
        assert back_matter_topics(question) == ["ethics"], question
    assert back_matter_topics("Which drugs were approved by the FDA?") == []
    evidence = [
        chunk(1, "This study identified profound deficiencies in the management of the Medical Department of KCH."),
        chunk(
            2,
            "The study proposal was reviewed and approved by the research committee of the Institute of Public "
            "Health, University of Heidelberg, Germany and by the National Health Science Research Committee of Malawi.",
            "Methods > Ethical considerations",
        ),
    ]
    points = points_for("Which committee approved the KCH study?", evidence)
    assert points and points[0].index == 2


def test_a_consequence_is_no_thing_asked_about():
    """ "What is the consequence of a failed filter retrieval?": a consequence is what follows,
    which the answer states without the word; a sentence saying "consequently" was the only one
    that escaped the focus penalty."""
    assert read_question("What is the consequence of a failed filter retrieval?").focus == frozenset()
    evidence = [
        chunk(1, "The failed retrieval rate is calculated to be 2.8% across the four studies of retrievable filters."),
        chunk(
            2,
            "Failed filter retrieval does not carry an immediate complication to the patient, but it does expose the "
            "patient to the long-term complications of a permanent filter.",
        ),
        chunk(3, "Retrievable filters are consequently removed to prevent the complications of permanent filtration."),
    ]
    points = points_for("What is the consequence of a failed filter retrieval?", evidence)
    assert 2 in [p.index for p in points]


def test_how_old_asks_for_an_age():
    """ "How old were the participants?" is answered by their age, which never says "old"."""
    assert read_question("How old were the participants?").words == {"particip", "age"}
    evidence = [
        chunk(1, "A total of 24 participants took part in the usability study of the reading tool."),
        chunk(2, "Participants' age ranged from 19 to 67 years, with a mean of 35."),
    ]
    assert [p.index for p in points_for("How old were the participants in the usability study?", evidence)][:1] == [2]


def test_a_duration_in_words_is_a_value():
    on_type = on_type_units(
        "How long did the principal researcher observe the department?",
        "The principal researcher served as a participatory observer of the department. "
        "By working in the field for a period of one month, she observed the usual practices of the department.",
    )
    assert on_type == [
        "By working in the field for a period of one month, she observed the usual practices of the department."
    ]


def test_orders_of_magnitude_are_a_value():
    """ "How selective was RXP407 for the N-domain?" asks for a value; "three orders of magnitude
    N-selectivity" states one, though no digit does."""
    on_type = on_type_units(
        "How selective was RXP407 for the N-domain?",
        "The N-selectivity of RXP407 was studied in detail. "
        # a compound's name is no value, asked about or not: 33RE is not 33 of a unit "RE"
        "The co-crystal structure of N-domain ACE with 33RE confirmed the interactions common to RXP407. "
        "RXP407 is a phosphinic inhibitor that displays approximately three orders of magnitude N-selectivity.",
    )
    assert on_type == [
        "RXP407 is a phosphinic inhibitor that displays approximately three orders of magnitude N-selectivity."
    ]


def test_how_long_is_answered_by_a_duration_of_what_was_asked():
    """ "How long did the researcher work in the field at KCH?" was refused: its answer says "for a
    period of one month", never "long", and scored below the bar; a duration of something else
    (an hour-long study) answers nothing."""
    question = "How long did the researcher work in the field at KCH?"
    assert read_question(question).focus == {"durat"}
    evidence = [
        chunk(1, "All participants were paid US$15 for the hour-long reading study.", "Methods"),
        chunk(
            2,
            "The principal researcher served as a participatory observer. By working in the field for a period "
            "of one month, she was able to observe firsthand the usual practices within the Medical Department.",
            "Methods > Document review and observation",
        ),
        chunk(3, "The Medical Department of Kamuzu Central Hospital (KCH) is a tertiary referral hospital.", "Methods"),
    ]
    assert [p.index for p in points_for(question, evidence)] == [2]


def test_a_time_asked_for_is_a_duration_not_a_complaint_about_time():
    """ "What was the average waiting time at OPD II?": the paper gives none. A share of
    respondents complaining of "long waiting times" and an average attendance were quoted."""
    question = "What was the average waiting time at OPD II at Kamuzu Central Hospital?"
    assert read_question(question).answer_type == "value"
    evidence = [
        chunk(
            1,
            "Out of the 82 respondents answering this question, 32% thought problems were due to other areas "
            "including long waiting times and poor amenities in the OPD II department.",
        ),
        chunk(
            2,
            "The Medical Department OPD II recorded a total of 1015 patients in June 2010, which translates to an "
            "average daily attendance of 42 patients.",
        ),
        chunk(3, "By working in the field for a period of one month, she observed the usual practices.", "Methods"),
    ]
    assert points_for(question, evidence) == []
    timed = [*evidence, chunk(4, "At OPD II, patients waited an average of 3 hours before they were seen.")]
    assert [p.index for p in points_for(question, timed)][:1] == [4]


def test_why_is_answered_by_a_cause():
    """A why-question is answered by the sentence giving the cause ("due to ...", "because ..."),
    which shares fewer of its words than one restating what it asks about; it was left unquoted."""
    question = "Why would N-selective ACE inhibitors be useful in the clinic?"
    assert read_question(question).reason and not read_question("How are N-selective inhibitors made?").reason
    cause = (
        "N-selective inhibitors could be useful in treating tissue fibrosis due to the build-up of the N-domain "
        "substrate Ac-SDKP."
    )
    evidence = [
        chunk(1, "ACE inhibitors are widely used in the clinic to treat hypertension.", "Introduction"),
        chunk(2, cause, "Introduction"),
    ]
    assert cause in [p.text for p in points_for(question, evidence)]


def test_differences_name_no_thing_asked_about():
    """ "Which residue differences between the domains matter most for 33RE?" was refused: no unit
    says "differences", and each lost the focus penalty; the residues answer it (Tyr369, Arg381)."""
    question = "Which residue differences between the domains matter most for 33RE?"
    assert read_question(question).focus == frozenset()
    evidence = [
        chunk(
            1,
            "A 36-fold decrease in binding affinity was observed for Y369F, confirming the loss of direct "
            "hydrogen bonds to the P2 tetrazole of 33RE. Thus, Tyr369 appears to be the major residue.",
            "Discussion",
        ),
        chunk(2, "The co-crystal structure of N-domain ACE was solved at 2.2 Å in complex with compound 33RE."),
    ]
    assert [p.index for p in points_for(question, evidence)][:1] == [1]


def test_what_happened_asks_about_what_follows_it():
    """ "What happened to the revenue ...?" was refused: "happened" was read as the thing asked
    about, and the sentence saying where the revenue went never says it."""
    question = "What happened to revenue generated by the paying services at KCH?"
    assert read_question(question).focus == frozenset()
    assert read_question("What speed was used?").focus == {"speed"}
    evidence = [
        chunk(
            1,
            "Even though KCH generates some of its revenue through the paying services, it had no mandate to use "
            "the revenue and was required to send such revenues to the Central Treasury of the Ministry of Health.",
            "Methods > Setting",
        ),
        chunk(2, "The Medical Department of KCH has a bed capacity of 117.", "Methods > Setting"),
    ]
    assert [p.index for p in points_for(question, evidence)][:1] == [1]


def test_a_cost_asked_for_is_a_sum_of_money():
    """ "How much did an outpatient visit cost at OPD I?": the paper gives no price. Its average
    daily attendance ("42 patients", a value) was quoted; a sum answers, in any currency."""
    question = "How much did an outpatient visit cost at OPD I?"
    assert read_question(question).focus == {"cost"}
    evidence = [
        chunk(
            1,
            "The Medical Department OPD II recorded a total of 1015 patients in June 2010, an average daily "
            "attendance of 42 patients; OPD I is a fee for service paying clinic.",
        ),
        chunk(2, "Outpatient services are provided through two clinics, OPD I and OPD II.", "Methods"),
    ]
    assert points_for(question, evidence) == []
    priced = [*evidence, chunk(3, "A visit to OPD I cost MWK 500 (about US$3) in 2010.")]
    assert [p.index for p in points_for(question, priced)][:1] == [3]
    paid = "All participants were paid US$15 for the hour-long study."
    assert [p.text for p in points_for("How much were the participants paid?", [chunk(1, paid)])] == [paid]


def test_a_greek_plural_is_its_singular():
    """ "Which two diagnoses ...?" is answered by a sentence saying "diagnosis": Snowball stems
    them apart (diagnos, diagnosi), as it does analyses and analysis."""
    for singular, plural in [("diagnosis", "diagnoses"), ("analysis", "analyses"), ("hypothesis", "hypotheses")]:
        assert content_words(singular) & content_words(plural), (singular, plural)
    question = "Which two diagnoses were used in the study scenarios?"
    evidence = [
        chunk(1, "There is a slight warm-up period for each feature, usually in the first two minutes."),
        chunk(
            2,
            "The study consisted of two parts, each corresponding to a scenario involving a patient with a "
            "particular diagnosis: systemic lupus erythematosus or a herniated disc.",
        ),
    ]
    assert [p.index for p in points_for(question, evidence)][:1] == [2]


def test_a_name_answers_a_question_about_a_kind_of_thing_it_never_names():
    """ "What software ...?" is answered by "Microsoft Excel and Epi-Info", which never says
    "software": a unit naming something the question does not is not held to the word (and one
    naming a tool as methods do, "with Microsoft Excel", has the answer type)."""
    question = "What software was used to analyze the quantitative interview data?"
    evidence = [
        chunk(1, "Quantitative data from the interviews were analyzed with Microsoft Excel and Epi-Info.", "Methods"),
        chunk(
            2, "The quantitative aspect of the analysis consisted of structured interviews with outpatients.", "Methods"
        ),
    ]
    named, unnamed = candidate_sentences(question, evidence)
    assert named.bonus - unnamed.bonus == pytest.approx(FOCUS_PENALTY + ANSWER_TYPE_BONUS)
    assert [p.index for p in points_for(question, evidence)][:1] == [1]


@pytest.mark.parametrize(
    ("question", "answer_type"),
    [
        ("What ages did the participants span?", "value"),
        ("What age did the youngest participant have?", "value"),
        ("Which doses were given?", "value"),
        ("What efficiencies did the detectors reach?", "value"),
        ("What sample sizes did the trials have?", "count"),
        ("What numbers of patients were enrolled?", "count"),
        ("How selective for the N-domain is the inhibitor 33RE?", "value"),  # a degree
        ("How potent was the compound?", "value"),
        ("At what wavelength was fluorescence excited?", "value"),
        ("What pH was the assay buffer?", "value"),
        ("How satisfied were patients with their care?", "value"),  # a degree a survey puts in numbers
        ("How likely were readers to return to the tool?", "value"),
    ],
)
def test_a_value_is_asked_for_in_the_singular_and_in_the_plural(question, answer_type):

    assert read_question(question).answer_type == answer_type


def test_a_value_is_not_the_digits_of_a_name_a_figure_label_or_the_code_asked_about():
    on_type = on_type_units(
        "How selective for the N-domain is the inhibitor 33RE?",
        "The structure of 33RE confirmed the interactions common to RXP407 and Tyr501 of the P2 subsite. "
        "Its backbone binds like RXP407 does (Figure 6B and Table 5) at the zinc ion. "
        "Compound 33RE was 927-fold more selective for the N-domain than the C-domain.",
    )
    assert on_type == ["Compound 33RE was 927-fold more selective for the N-domain than the C-domain."]


@pytest.mark.parametrize(
    "question, procedure",
    [
        ("What fluorogenic substrate was used in the ACE inhibition assays?", True),
        ("How were the participants recruited?", True),
        ("Who approved the Kamuzu study ethically?", True),
        ("What did the review conclude about heparin?", False),
        ("Which residue forms a hydrogen bond with 33RE?", False),
    ],
)
def test_a_question_about_how_the_work_was_done_is_not_held_against_the_methods(question, procedure):
    from zocrates_gateway.domain.synthesis import SECTION_PRIOR

    assert read_question(question).procedure is procedure
    methods = chunk(1, "Fluorogenic substrate Abz-FRK(Dnp)P-OH was added to the enzyme solutions.", "Methods")
    [unit] = candidate_sentences(question, [methods])
    assert (unit.prior == pytest.approx(RANK_PRIOR)) is procedure and SECTION_PRIOR["methods"] < 0


def test_a_count_or_value_asked_for_is_not_held_against_the_methods():
    """Methods describe how, findings state answers; but a count or a value ("how many images
    were taken?") is as likely stated in the methods, which then start level."""
    from zocrates_gateway.domain.synthesis import SECTION_PRIOR

    methods = chunk(1, "A total of 720 images were collected using a CCD detector.", section="Materials and methods")
    [counted] = candidate_sentences("How many images were taken?", [methods])
    [described] = candidate_sentences("Which detector recorded the images?", [methods])
    assert SECTION_PRIOR["methods"] < 0
    assert counted.prior == pytest.approx(described.prior - SECTION_PRIOR["methods"])


@pytest.mark.parametrize(
    "question, asks",
    [
        ("Who provided financial support for the situational analysis?", True),
        ("Which body financed the trial?", True),
        ("Who gave the first author a scholarship?", True),
        ("Which evidence supports LMWH in trauma patients?", False),
    ],
)
def test_money_given_for_a_study_is_asked_of_its_back_matter(question, asks):
    from zocrates_gateway.domain.synthesis import asks_about_back_matter

    assert asks_about_back_matter(question) is asks


def test_asked_who_funded_a_study_the_funding_section_answers_not_the_studys_topic():
    """Asked "who funded the ACE inhibitor study?", which names the study by its topic, the
    answer is in the section headed Funding (which retrieval ranks first for such a question),
    whose sentence need not say "fund"."""
    topic = [
        chunk(2, "ACE inhibitors remain an effective therapeutic strategy in cardiovascular disease.", "Discussion"),
        chunk(3, "Several ACE inhibitors have been approved for clinical use in hypertension.", "Introduction"),
        chunk(4, "The new ACE inhibitor bound the N-domain of the enzyme with high affinity.", "Results"),
    ]
    funding = chunk(1, "This work was supported by the University of Cape Town.", "Funding", role="back_matter")
    points = points_for("Who funded the ACE inhibitor study?", [funding, *topic])
    assert points[0].text == "This work was supported by the University of Cape Town."


def test_a_duration_spelled_out_is_a_value():
    on_type = on_type_units(
        "How long did each participant read the consumer health page?",
        "Each participant read the consumer health page before the paper. "
        "Participants had 2 minutes to read the consumer health page. "
        "The study followed patients for 18 months after the reading.",
    )
    assert on_type == [
        "Participants had 2 minutes to read the consumer health page.",
        "The study followed patients for 18 months after the reading.",
    ]


def test_what_an_abbreviation_stands_for_is_answered_where_the_paper_defines_it():
    """ "What does KCH stand for?" covers only "KCH", which many sentences hold: the answer is the
    one giving its long form. An abbreviation the paper never spells out is refused."""
    evidence = [
        chunk(1, "This study identified profound deficiencies in the management of the Medical Department of KCH."),
        chunk(
            2,
            "The Medical Department of the Kamuzu Central Hospital (KCH), is a tertiary referral hospital located "
            "in the Central Region of Malawi.",
            "Methods",
        ),
    ]
    points = points_for("What does KCH stand for?", evidence)
    assert points and points[0].text.startswith("The Medical Department of the Kamuzu Central Hospital (KCH)")
    assert points_for("What is the full form of KCH?", evidence)[0].index == 2
    assert points_for("What does KCH stand for?", evidence[:1]) == []
    assert read_question("What did the authors mean by gist?").expands is None


def test_what_a_named_thing_is_is_answered_by_a_sentence_saying_what_it_is():
    """Asked "what is RXP407?", every sentence naming RXP407 covers the whole question; the one
    saying what it is answers, ahead of the table row and the sentences that only mention it."""
    evidence = [
        chunk(1, "Table 3 SHOP results\nName | R2\nRXP407 | 1\n33RE | 0.85", "Results", kind="table"),
        chunk(2, "The data for RXP407 presented here compare well with previously published reports.", "Discussion"),
        chunk(
            3,
            "RXP407 is a phosphinic peptidomimetic ACE inhibitor that displays approximately three orders of "
            "magnitude N-selectivity. Compound 33RE inhibited the N-domain similarly to RXP407 (Ki = 21.03 nM).",
            "Introduction",
        ),
    ]
    assert read_question("What is RXP407?").describes == "rxp407"
    assert read_question("What is the PDB code?").describes is None  # a value, not what a thing is
    for question in ("What is RXP407?", "What kind of inhibitor is RXP407?", "What type of ACE inhibitor is RXP407?"):
        points = points_for(question, evidence)
        assert points and points[0].text.startswith("RXP407 is a phosphinic peptidomimetic ACE inhibitor"), question
        assert not any(p.kind == "table_row" for p in points)
    assert read_question("What kind of inhibitor is RXP407?").describes == "rxp407"
    assert read_question("What kind of filters were placed?").describes is None
    # an acronym is said by its long form
    kch = "The Medical Department of the Kamuzu Central Hospital (KCH), is a tertiary referral hospital."
    assert describes(kch, "kch") or defines(kch, "kch")
    assert not defines("Compound 33RE inhibited the N-domain similarly to RXP407 (Ki = 21.03 nM).", "rxp407")


def test_what_a_paper_introduces_is_said_by_the_sentence_introducing_it():
    """ "What is 33RE?" is answered by "A molecule incorporating a tetrazole moiety ... (compound
    33RE)", and "what is Paper Plain?", a thing its paper's title names, from that paper's
    abstract: "we introduce a novel interactive interface—Paper Plain—with four features".
    Was: a sentence that only mentioned it ("... resulted in the production of compound 33RE")."""
    introduced = (
        "A molecule incorporating a tetrazole moiety in the P2 position (compound 33RE) displayed potent inhibition."
    )
    assert describes(introduced, "33re")
    assert not describes("A 36-fold decrease in binding affinity was observed (Y369F) for 33RE.", "33re")
    assert describes(
        "To help them, we introduce a novel interactive interface—Paper Plain1—with four features.", "paper plain"
    )
    assert not describes("We evaluate Paper Plain, finding that participants read more easily.", "paper plain")
    compound = [
        chunk(1, "A classical 6-step synthetic approach resulted in the production of compound 33RE in modest yields."),
        chunk(2, introduced + " It was 927-fold more selective for the N-domain than the C-domain."),
    ]
    assert points_for("What is 33RE?", compound)[0].index == 2
    title = "Paper Plain: Making Medical Research Papers Approachable to Healthcare Consumers"
    paper = [
        chunk(1, "All participants with Paper Plain made it to the end of a paper.", "7 Results"),
        chunk(
            2,
            "Reading medical papers, however, can be a challenging experience. To improve access to medical papers, "
            "we introduce a novel interactive interface—Paper Plain—with four features powered by natural language "
            "processing. We evaluate Paper Plain, finding that participants have an easier time reading papers.",
            None,
            role="abstract",
        ),
    ]
    paper = [c.model_copy(update={"title": title, "item_key": "PLAIN"}) for c in paper]
    points = points_for("What is Paper Plain?", paper)
    assert points and points[0].text.startswith("To improve access to medical papers, we introduce"), points
    # what it is made of, which what introduces it says: "Participants used its features" was quoted
    assert read_question("What features does Paper Plain offer?").describes == "paper plain"
    points = points_for("What features does Paper Plain offer?", paper)
    assert points and points[0].text.startswith("To improve access to medical papers, we introduce"), points


@pytest.mark.parametrize(
    "question",
    [
        "How were the participants of the usability study split by gender?",
        "What was the gender distribution of the participants in the usability study?",
        "How many women took part in the usability study?",
        "Were the usability study's participants mostly men or women?",
    ],
)
def test_a_question_about_sex_or_gender_is_answered_by_who_were_women_and_who_men(question):
    """ "Gender" is never written where it is answered ("9 male, 1 non-binary, and 14 female"),
    and "women" are "female": the sentence of ages, sharing the question's other words, came first."""
    evidence = [
        chunk(1, "Participants of the usability study had a mean age of 35 and ranged from 19 to 67 years."),
        chunk(2, "A total of 24 workers (9 male, 1 non-binary, and 14 female) took part in the usability study."),
    ]
    assert [p.index for p in points_for(question, evidence)][:1] == [2]


def test_a_degree_sign_set_as_a_white_bullet_is_a_temperature():
    """The ACE paper sets "16 ◦C" with U+25E6: "at what temperature were the crystals grown?"
    was answered by the pre-incubation "at room temperature (20 ◦C)", which says "temperature"."""
    assert on_type_units(
        "At what temperature were the crystals grown?",
        "The crystals of the complex were grown at 16 ◦C by the hanging drop method. "
        "The protein was purified from ovary cells.",
    ) == ["The crystals of the complex were grown at 16 ◦C by the hanging drop method."]


def test_a_count_joined_to_its_noun_by_a_hyphen_counts_it():
    assert on_type_units(
        "How many steps did the synthesis of the compound take?",
        "A classical 6-step synthetic approach resulted in the compound. The synthesis gave modest yields.",
    ) == ["A classical 6-step synthetic approach resulted in the compound."]


def test_whether_participants_were_paid_is_no_question_about_funding():
    assert back_matter_topics("Were respondents in the study paid for taking part?") == []
    assert back_matter_topics("Who paid for the study?") == ["funding"]


def test_where_the_authors_work_is_answered_by_their_affiliations():
    """ "Where did the authors of the DVT review work?" was refused: it asked for no back matter,
    and then the authors' contributions ("All authors read and approved ...") came first."""
    question = "Where did the authors of the review work?"
    assert back_matter_topics(question) == ["affiliations"]
    evidence = [
        chunk(1, "All authors read and approved the final manuscript.", "Authors' contributions", role="back_matter"),
        chunk(
            2, "1Department of Surgery, University of Calgary, Calgary, Canada.", "Author details", role="back_matter"
        ),
    ]
    points = points_for(question, evidence)
    assert points and points[0].index == 2


def test_affiliate_respondents_ask_for_no_affiliations():
    """ "How many affiliate respondents were interviewed?" asked for the authors' addresses, and
    no unit but an address line or footnote could answer it."""
    assert back_matter_topics("How many affiliate respondents were interviewed at KCH?") == []
    assert back_matter_topics("Which hospitals are affiliated with the university?") == []
    assert back_matter_topics("Which institution are the authors affiliated with?") == ["affiliations"]
    assert back_matter_topics("What are the authors' affiliations?") == ["affiliations"]


def test_a_verb_after_what_is_asked_about_is_no_focus():
    assert read_question("What risks come with mechanical compression devices?").focus == {"risk"}
    assert read_question("What complications arise from IVC filters?").focus == {"complic"}
    # a plural noun, then a word that is not: a verb ("act"), whatever it is
    assert read_question("Which inhibitors act on both ACE domains?").focus == {"inhibitor"}
    assert read_question("Which residues interact with 33RE?").focus == {"residu"}
    assert read_question("What drug class is the first choice?").focus == frozenset()  # "class" names no thing
    assert read_question("What statistical analysis was run on the ratings?").focus == {"analysi"}
    # a verb and its object: "the jargon" is what the software spotted, not what is asked about
    assert read_question("What software spotted the jargon in the papers?").focus == {"softwar"}


def test_a_row_giving_numbers_for_symbols_is_numbers_only():
    """ "Which cells were used to express N-domain ACE?": the crystal's unit cell row ("Cell |
    a = 73.1, b = 77.3, c = 82.9") names "cell" and was quoted before the expression cells."""
    evidence = [
        chunk(
            1,
            "Table 2 Crystallographic statistics\nParameter | Value\nCell | a = 73.1, b = 77.3, c = 82.9",
            kind="table",
        ),
        chunk(2, "N-domain ACE was expressed and purified to homogeneity from CHO (Chinese-hamster ovary) cells."),
    ]
    points = points_for("Which cells were used to express N-domain ACE?", evidence)
    assert points and points[0].index == 2


@pytest.mark.parametrize(
    "question",
    ["Which search terms did the trauma review use?", "What was the search strategy of the trauma review?"],
)
def test_a_list_of_terms_is_quoted_when_asked_for(question):
    """A search strategy's quoted terms are a `term_list` unit: never quoted for a question about
    trauma or DVT, whose words it is full of, and the answer when the search terms are asked for."""
    evidence = [
        chunk(
            1,
            "All publications were identified using PubMed, EMBASE, and Medline. Search terms included: “DVT”, "
            "“deep venous thrombosis”, “complications”, “trauma”, “injury” and/or “heparin-induced thrombocytopenia.”",
            "Methods",
        ),
        chunk(2, "There is poor long-term follow-up data for trauma patients with retrievable filters."),
    ]
    assert [u.kind for u in evidence[0].units] == ["sentence", "term_list"]
    points = points_for(question, evidence)
    assert points and points[0].text.startswith("Search terms included:")
    assert not any(
        p.text.startswith("Search") for p in points_for("What complications follow DVT in trauma?", evidence)
    )


def test_a_verb_and_the_named_thing_it_acts_on_follow_the_thing_asked_about():
    """ "What distance separates His365 from 33RE?" asked about "separates" (a word after a
    plural-looking one reads as a verb after its subject), and the row giving the distance was
    refused; a verb in -s with a named thing after it ends what is asked about."""
    assert read_question("What distance separates His365 from 33RE?").focus == {"distanc"}
    assert read_question("What enzyme cleaves Ac-SDKP in the kidney?").focus == {"enzym"}
    assert read_question("Which inhibitors target the C-domain of ACE?").focus == {"inhibitor"}
    evidence = [
        chunk(
            1,
            "Table 5 Potential hydrogen bonds of 33RE binding to N-ACE\nResidue | Atom | 33RE | Distance (Å)\n"
            "Phosphate, His365 | NE2 | OAI | 3.1\nP1′, His331 | NE2 | OAF | 2.9",
            kind="table",
        ),
        chunk(2, "Kinetic characterization revealed an 8-fold decrease in binding affinity for 33RE."),
    ]
    points = points_for("What distance separates His365 from 33RE?", evidence)
    assert points and "His365" in points[0].text and "3.1" in points[0].text


def test_a_value_asked_for_between_two_things_is_named_by_its_column_header():
    """ "What is the hydrogen-bond distance between Tyr369 and 33RE?": "between" ends what is asked
    about (the distance), and a row names it in the header over its value ("Distance (Å): 2.7"),
    not in its own cells; the resolution "solved at 2.2 Å" is a length but not a distance asked for."""
    question = "What is the hydrogen-bond distance between Tyr369 and 33RE in the crystal structure?"
    assert read_question(question).focus == {"distanc"}
    evidence = [
        chunk(1, "The co-crystal structure of N-domain ACE was solved at 2.2 Å in complex with compound 33RE."),
        chunk(
            2,
            "Table 5 Potential hydrogen bonds of 33RE binding to N-ACE\nResidue | Atom | 33RE | Distance (Å)\n"
            "P2, Tyr369 | OH | NAS | 2.7\nP2′, Tyr498 | OH | O | 2.5",
            kind="table",
        ),
    ]
    points = points_for(question, evidence)
    assert points and points[0].index == 2 and "2.7" in points[0].text


def test_a_value_named_by_its_tables_caption_answers_for_the_row_labelled_with_what_is_asked_about():
    """ "What R2 did compound HC-6004 get in the SHOP screen?" was refused: the row "HC-6004 | 0.98"
    names no R2 in its cells, and its table's header lost its columns; the caption says what every
    row gives ("R2 is given relative to ..."), and this row's label is the compound asked about."""
    question = "What R2 did compound HC-6004 get in the SHOP screen?"
    assert read_question(question).focus == {"r2"}
    evidence = [
        chunk(
            1,
            "Table 3 Summary of results obtained from SHOP methodology R2 is given relative to the crystal "
            "structure RXP407 ligand backbone.\nName | Structure | R2 (Å) | Residue interaction energies\n"
            "RXP407 | 1\n33RE | 0.85\nHC-6004 | 0.98\nCA-4124 | 0.95",
            kind="table",
        ),
        chunk(2, "The virtual compounds built in this way were screened with SHOP against the N-domain."),
    ]
    points = points_for(question, evidence)
    assert points and points[0].text.endswith("HC-6004 | 0.98")
    # a caption naming the measure does not make another compound's row an answer
    assert all("HC-6004" in p.text for p in points if p.kind == "table_row")


def test_a_system_a_title_names_before_its_colon_names_that_paper():
    """ "Which languages other than English does Paper Plain translate papers into?" was answered
    from another paper's translated questionnaire: "Paper Plain" is no "Paper Plain paper", but
    the title "Paper Plain: Making Medical Research Papers Approachable ..." names it, so only that
    paper's passages may answer (and here none does)."""
    question = "Which languages other than English does Paper Plain translate papers into?"
    plain = chunk(1, "Paper Plain generates plain language summaries of medical research papers.", "4 PAPER PLAIN")
    malawi = chunk(
        2,
        "The structured outpatient questionnaire was subsequently translated into Chichewa (local Malawian "
        "language) for interviewees who could not speak or read English.",
        "Methods",
    )
    plain = plain.model_copy(update={"title": "Paper Plain: Making Medical Research Papers Approachable to Readers"})
    malawi = malawi.model_copy(
        update={"title": "Understanding the barriers to setting up a healthcare quality process"}
    )
    assert {u.index for u in candidate_sentences(question, [plain, malawi])} == {1}
    assert points_for(question, [plain, malawi]) == []
    # a title giving no name before a colon: the question names no paper, and both may answer
    untitled = plain.model_copy(update={"title": "Making medical research papers plain"})
    assert {u.index for u in candidate_sentences(question, [untitled, malawi])} == {1, 2}
    # a name two titles share is a topic ("COVID-19: ..." and "... during COVID-19"), not one paper's
    shared = malawi.model_copy(update={"title": "Reading medical papers with Paper Plain in Malawi"})
    assert {u.index for u in candidate_sentences(question, [plain, shared])} == {1, 2}


def test_the_databases_a_review_searched_are_named_by_the_sentence_naming_them():
    """ "Which databases did the DVT review search?" was refused: the sentence naming PubMed, EMBASE
    and Medline is about DVT prophylaxis in every other word, and its similarity to the question low."""
    question = "Which databases did the DVT review search?"
    searched = (
        "All scientific publications discussing the use of biochemical, mechanical, and IVC filter prophylaxis for "
        "the prevention of DVT after trauma were identified using PubMed, EMBASE, and Medline."
    )
    evidence = [
        chunk(1, f"{searched} Only English language publications were included.", "Methods"),
        chunk(2, "A systematic review was completed using PRISMA guidelines to evaluate DVT prophylaxis.", "Abstract"),
    ]
    assert [p.text for p in points_for(question, evidence)][:1] == [searched]


def test_a_row_whose_label_gives_the_unit_states_that_quantity():
    """ "What was the Rmsd bond length ...?" was refused: the row "Rmsd bond (Å) — 0.008" says no
    "length", and its value carries no unit; the unit in its label says it is a length."""
    question = "What was the Rmsd bond length in the N-ACE–33RE refinement?"
    assert read_question(question).focus == {"length"}
    evidence = [
        chunk(
            1,
            "Table 2 Crystallographic statistics of N-ACE–33RE complex\nParameter | Value\nResolution (Å) | 2.2\n"
            "Redundancy | 3.9\nRmsd bond (Å) | 0.008\nRmsd angle (°) | 1.18",
            kind="table",
        ),
        chunk(2, "The co-crystal structure of N-ACE was refined in complex with compound 33RE (Figure 5)."),
    ]
    points = points_for(question, evidence)
    assert points and "0.008" in points[0].text


def test_a_hyphenated_word_weighs_as_one_word():
    """ "How many participants completed the think-aloud study?": "think-aloud" has four stems
    (its own, joined, "think", "aloud"), and a sentence saying it covered four of the question's
    words, so "One author conducted a thematic analysis of the think-aloud ... data" beat "A total
    of 12 participants completed the study"."""
    evidence = [
        chunk(1, "One author conducted a thematic analysis of the think-aloud and questionnaire data."),
        chunk(2, "A total of 12 participants completed the study (T1–12)."),
    ]
    points = points_for("How many participants completed the think-aloud study?", evidence)
    assert points and points[0].index == 2


def test_a_hyphenated_word_is_said_in_part_by_one_of_its_parts():
    """ "C-domain" shares "domain" with "N-domain": a unit naming the N-domain says half of what a
    question about the C-domain names, and the one naming the C-domain all of it."""
    from zocrates_gateway.domain.synthesis import relevance

    wanted = set(read_question("What Ki did the inhibitor have against the C-domain?").words)
    units = candidate_sentences(
        "What Ki did the inhibitor have against the C-domain?",
        [
            chunk(1, "The inhibitor bound the N-domain with a Ki of 11 nM."),
            chunk(2, "The inhibitor bound the C-domain with a Ki of 10 395 nM."),
        ],
    )
    n_domain, c_domain = relevance(units, wanted)
    assert c_domain > n_domain > 0


def test_the_databases_a_review_searched_are_named_not_called_databases():
    """ "Which databases were searched in the DVT review?" was refused: the answer, "identified
    using PubMed, EMBASE, and Medline", says neither "database" nor "searched", and a sentence
    naming PRISMA passed for one naming a database."""
    evidence = [
        chunk(1, "A systematic review was completed using PRISMA guidelines to evaluate the potential complications."),
        chunk(2, "Publications were identified using PubMed, EMBASE, and Medline.", section="Methods"),
        chunk(3, "Only English language publications were included.", section="Methods"),
    ]
    points = points_for("Which databases were searched?", evidence)
    assert points and "PubMed" in points[0].text
    assert all("PRISMA" not in p.text for p in points)


def test_the_words_naming_a_paper_are_not_asked_about():
    """ "the DVT review", "the Paper Plain authors": which paper, not what a unit must say; the
    paper itself says "we", not "the authors"."""
    assert read_question("Which databases were searched in the DVT review?").words == content_words(
        "databases searched"
    )
    assert read_question("What did the review by Datta find about HIT?").words == {"hit"}
    asked = read_question("Which statistical models did the Paper Plain authors fit to the subjective ratings?")
    assert "author" not in asked.words and "model" in asked.words
    # a survey that is no paper's name is asked about; authors asked about are
    assert "survey" in read_question("How many patients answered the survey in the Malawi study?").words
    assert "author" in read_question("Where did the authors of the review work?").words
    assert read_question("Who are the authors of the Paper Plain paper?").title_block
    assert read_question("List the authors of the Kamuzu study.").title_block
    assert not read_question("Which databases did the authors of the DVT review search?").title_block


def test_the_measure_of_a_thing_asks_about_the_thing():
    """ "The incidence of X", "the risk of X": a value of X, like "the X rate"; any rate is no answer."""
    assert read_question("What is the incidence of heparin-induced thrombocytopenia?").focus >= {"thrombocytopenia"}
    assert read_question("What is the prevalence of diabetes among patients?").focus == {"diabet"}
    assert read_question("What is the risk of HIT with heparin?").focus == {"hit"}
    assert read_question("What bleeding risk did the review calculate?").focus == {"bleed"}


def test_a_unit_says_by_its_acronym_what_the_question_spells_out():
    """ "What is the incidence of heparin-induced thrombocytopenia?" was refused: the paper's
    answer says "HIT", defined in a passage not retrieved, and a failed retrieval rate came near."""
    evidence = [
        chunk(1, "The failed retrieval rate is calculated to be 2.8%."),
        chunk(2, "In this review we calculated the risk of bleeding and HIT to be 3.9% and 0.7% respectively."),
    ]
    points = points_for("What is the incidence of heparin-induced thrombocytopenia?", evidence)
    assert points and points[0].index == 2 and len(points) == 1
    # and the other way: a question's acronym spelled out in the unit
    evidence = [
        chunk(1, "Filter migration occurred in 3% of patients."),
        chunk(2, "Deep vein thrombosis occurred in 12% of patients without prophylaxis."),
    ]
    points = points_for("What share of patients developed DVT without prophylaxis?", evidence)
    assert points and points[0].index == 2


def test_what_the_risks_are_asks_which_not_how_large():
    """ "What are the risks of heparin?" asks which risks (bleeding, HIT); a rate of something the
    question does not name is no answer to it, and "what is the risk of X?" still asks how large."""
    assert read_question("What are the risks of heparin?").answer_type is None
    assert read_question("What are the risks of mechanical compression devices?").focus == content_words(
        "mechanical compression devices"
    )
    assert read_question("What is the risk of HIT with heparin?").answer_type == "value"
    evidence = [
        chunk(1, "In this review we calculated the risk of bleeding and HIT to be 3.9% and 0.7% respectively."),
        chunk(2, "Mechanical compression devices can result in local soft tissue injury, bleeding and non-compliance."),
    ]
    points = points_for("What are the risks of mechanical compression devices?", evidence)
    assert points and points[0].index == 2


@pytest.mark.parametrize(
    ("question", "tool"),
    [
        ("What software indexed and scaled the diffraction images of the ACE crystals?", "XDS"),
        ("What software did the Paper Plain authors fit the mixed-effects models in?", "lme4"),
        ("Which software analysed the Kamuzu questionnaire data?", "Epi-Info"),
    ],
)
def test_a_question_for_software_is_answered_by_the_sentence_naming_the_tool(library, question, tool):
    """Methods name their tools ("with XDS and the CCP4 program SCALA", "the lme4 package in R",
    "with Microsoft Excel and Epi-Info Statistical Programme") in sentences that share few words
    with the question and never say "software"; all three were refused, the first for a sentence
    about the crystal structure, the last for want of the tool's word in lower case."""
    points = choose_points(question, scored(question, lexical_top(library, question)))
    assert points and tool in points[0].text


@pytest.mark.parametrize(
    "question",
    [
        # "Level one evidence ..." counts nothing: a label, like "Table 1" or "phase 3"
        "How many patients in the DVT prophylaxis review died from pulmonary embolism?",
        # a sum is asked for: shares of respondents' complaints do not answer it
        "How much did the Medical Department spend on drugs in 2010?",
        # a measure is asked for: "reduce the burden on bed occupancy in the main wards" gives none
        "What was the bed occupancy of the Kamuzu Medical Department?",
        # a duration of waiting: "for a period of one month" in the field is none
        "What was the average waiting time at the Kamuzu outpatient department?",
    ],
)
def test_a_question_the_library_cannot_answer_is_refused_not_answered_by_a_label_or_a_share(library, question):
    assert choose_points(question, scored(question, lexical_top(library, question))) == []


def test_how_much_participants_were_paid_for_a_study_asks_for_a_sum_not_who_funded_it(library):
    """ "paid for the Paper Plain study" read as "who paid for the study?" (funding), so the
    sentence giving the sum was no answer, and the question was refused."""
    assert back_matter_topics("How much were participants paid for the Paper Plain study?") == []
    assert back_matter_topics("Who paid for the Paper Plain study?") == ["funding"]
    assert back_matter_topics("How much did the sponsor pay for the trial?") == ["funding"]
    question = "How much were participants paid for the Paper Plain study?"
    points = choose_points(question, scored(question, lexical_top(library, question)))
    assert points and "US$15" in points[0].text


def test_what_did_the_thing_asked_about_is_its_focus_and_bench_steps_are_methods(library):
    """ "Which detector collected the images?" asks about a detector: no focus was read (the
    pattern wanted "of", "did", ... after the thing), so sentences never naming one competed
    alike; "what buffer were the inhibitors diluted in?" asks how the work was done, which the
    methods say, and was refused under the methods' prior."""
    assert read_question("Which detector collected the diffraction images for the ACE complex?").focus == {"detector"}
    assert read_question("Which statistical test showed a difference?").focus == {"test"}
    assert read_question("What happened to the revenue?").focus == frozenset()  # a verb, no thing
    question = "What buffer were the inhibitors diluted in for the inhibition assays?"
    assert read_question(question).procedure
    assert read_question("How were they chosen?").procedure  # "20 stakeholders were purposively sampled"
    points = choose_points(question, scored(question, lexical_top(library, question)))
    assert points and "Hepes" in points[0].text


@pytest.mark.parametrize(
    ("narrower", "broader", "expected"),
    [
        (
            "Which committee in Zambia approved the Kamuzu study?",
            "Which committee in Malawi approved the Kamuzu study?",
            "National Health Science Research Committee",
        ),
        (
            "Which guideline on antibiotic prophylaxis did the DVT review follow?",
            "Which guideline did the DVT review follow?",
            "PRISMA",
        ),
        (
            "What are the risks of heparin in elderly trauma patients?",
            "What are the risks of heparin in trauma patients?",
            "bleeding",
        ),
        (
            "What rate of heparin induced thrombocytopenia did the trauma review calculate for obese patients?",
            "What rate of heparin induced thrombocytopenia did the trauma review calculate?",
            "0.7%",
        ),
        (
            "What conditions could N-selective ACE inhibitors treat in dogs?",
            "What conditions could N-selective ACE inhibitors treat?",
            "fibrosis",
        ),
    ],
)
def test_a_question_narrowed_to_what_no_passage_says_is_refused_not_answered_by_the_broader_fact(
    library, narrower, broader, expected
):
    """ "in Zambia", "on antibiotic prophylaxis", "elderly": the library says Malawi's committee,
    the DVT review's guideline, heparin's risks in trauma patients, and quoting those answered a
    question it cannot. The broader question is still answered."""
    points = choose_points(broader, scored(broader, lexical_top(library, broader)))
    assert any(expected in p.text.replace("ﬁ", "fi") for p in points)
    assert choose_points(narrower, scored(narrower, lexical_top(library, narrower))) == []


def test_what_narrows_a_question_is_a_modifier_or_a_narrowing_prepositions_object_not_a_verb_or_the_thing_asked():
    passage = [
        chunk(
            1,
            "The Medical Department has a bed capacity of 117. Patients came at night. All participants were "
            "paid US$15. Inhibitors were tested in the clinic.",
        )
    ]
    assert unmentioned_qualifiers("How many beds does the surgical department have?", passage) == ["surgical"]
    assert unmentioned_qualifiers("How many beds were there in Zambia?", passage) == ["zambia"]
    assert unmentioned_qualifiers("How many patients came during Ramadan?", passage) == ["ramadan"]
    assert unmentioned_qualifiers("How many patients came in pregnant women?", passage) == ["pregnant"]
    assert unmentioned_qualifiers("And the whole hospital?", passage) == []  # "the entire KCH"
    # a verb, however it ends; the thing a which-question asks for; where the user keeps the papers
    assert unmentioned_qualifiers("Which organisation paid the participants?", passage) == []
    assert unmentioned_qualifiers("How many patients arrive at night?", passage) == []
    assert unmentioned_qualifiers("Why would blocking both inhibitors be useful in the clinic?", passage) == []
    assert unmentioned_qualifiers("How many beds does the department have in my Zotero library?", passage) == []
    assert unmentioned_qualifiers("Which materials have beds?", passage) == []  # what is asked for
    assert unmentioned_qualifiers("Which surgical departments have beds?", passage) == ["surgical"]
    assert unmentioned_qualifiers("Which insect patients came at night?", passage) == ["insect"]  # modifies "patients"
    assert unmentioned_qualifiers("The surgical department has 117 beds.", passage) == []  # a claim, not a question


def test_a_narrowing_is_the_topic_asked_about_a_compound_modifier_or_modifiers_before_a_word_said():
    passage = [
        chunk(
            1,
            "Below we report the results of the usability study. Readers used the features for fast-tracking to "
            "the key findings of the N-domain study. Interviews were recorded.",
        )
    ]
    assert unmentioned_qualifiers("What did the study conclude about aspirin?", passage) == ["aspirin"]
    assert unmentioned_qualifiers("What did the study find regarding the features?", passage) == []
    # and "regarding", like "about", is no word of what is asked
    assert content_words("What did they find regarding comprehension?") == content_words("comprehension")
    # "fast-tracking" does not say "eye-tracking"; a compound ending in -ing is no verb
    assert unmentioned_qualifiers("What eye-tracking results did the study report?", passage) == ["eye-tracking"]
    assert unmentioned_qualifiers("What fast-tracking results did the N-domain study report?", passage) == []
    # two modifiers no passage says before a word it does: the phrase is named once
    assert unmentioned_qualifiers("What did readers think of the audio narration features?", passage) == ["audio"]
    # importance narrows nothing; an acronym is the codes' check ("DVT" by "deep venous thrombosis")
    assert unmentioned_qualifiers("What were the main results of the usability study?", passage) == []
    assert unmentioned_qualifiers("What are the results of the review on DVT features?", passage) == []
    # nor does a superlative or a judgement: which is the biggest, or what is bad, the passages
    # say in their own words ("the major problem", "laziness, complacency and absenteeism")
    assert unmentioned_qualifiers("What was the biggest problem the readers reported?", passage) == []
    assert unmentioned_qualifiers("Which features gave the brightest results?", passage) == []
    assert unmentioned_qualifiers("What negative features did the readers report?", passage) == []
    assert unmentioned_qualifiers("What were the biggest audio features?", passage) == ["audio"]
    assert unmentioned_qualifiers("What were the main audio features?", passage) == ["audio"]


@pytest.mark.parametrize(
    ("question", "asks_for_a_summary"),
    [
        ("Summarize Paper Plain.", True),
        ("Give me a summary of the Esmann review on single-photon sources.", True),
        ("What is the summary of Datta et al.?", True),
        ("Paper Plain summary", True),
        # summaries the paper makes, asked about: not a request to summarise it
        ("What language model generated Paper Plain's plain language summaries?", False),
        ("How are the plain language summaries made in Paper Plain?", False),
        ("How many times were the summaries regenerated?", False),
        ("Give me short summaries of the DVT review and the Kamuzu study.", True),
    ],
)
def test_a_summary_asked_for_is_not_a_summary_asked_about(question, asks_for_a_summary):
    """ "What language model generated Paper Plain's plain language summaries?" was answered with
    the paper's abstract, as "summarize Paper Plain" is."""
    assert read_question(question).summary is asks_for_a_summary


def test_a_value_noun_naming_a_kind_of_thing_asks_for_no_value():
    """ "What high risk features make trauma patients candidates for IVC filters?" asks for features
    (spinal cord injury, ...), not for a risk: read as a value, every unit without a number lost."""
    assert read_question("What high risk features make trauma patients candidates for IVC filters?").answer_type is None
    assert read_question("Which age groups were studied?").answer_type is None
    assert read_question("What risk of bleeding did the review calculate?").answer_type == "value"
    assert read_question("What age were the patients?").answer_type == "value"


def test_which_tool_asks_for_a_tool_by_name():
    """ "Which tool detected terms in the Paper Plain papers?" was refused: the sentence naming
    scispaCy shares one word with it and scored under the relevance bar; as a question for a
    tool, a unit naming one (a name shaped like software's) gains the answer-type bonus."""
    question = "Which tool detected terms in the Paper Plain papers?"
    evidence = scored(
        question, [chunk(1, "Paper Plain identifies medical terms using scispaCy Named Entity Recognition.")]
    )
    (unit,) = candidate_sentences(question, evidence, read_question(question), frozenset())
    assert unit.bonus > 0
    question = "Which part of the tool did participants like best?"  # the tool itself: no name asked for
    evidence = scored(
        question, [chunk(1, "Paper Plain identifies medical terms using scispaCy Named Entity Recognition.")]
    )
    (unit,) = candidate_sentences(question, evidence, read_question(question), frozenset())
    assert unit.bonus <= 0


def test_how_many_times_asks_for_a_count_not_a_duration(library):
    """ "How many times were summaries regenerated at most?" was refused: "time" made it ask for
    a duration, and "up to five times" states none."""
    question = "How many times were the Paper Plain summaries regenerated at most?"
    points = choose_points(question, scored(question, lexical_top(library, question)))
    assert points and "five times" in points[0].text


def test_what_they_were_paid_asks_for_a_sum_as_how_much_does():
    """ "What were they paid?" after the usability study's size was answered with a sentence on
    how participants used the Key Questions: no sum was asked for."""
    for question in ("What were they paid?", "What were participants paid in the Paper Plain study?"):
        ask = read_question(question)
        assert (ask.answer_type, ask.focus) == ("value", frozenset(content_words("cost"))), question
    assert read_question("What was paid attention to?").answer_type is None
    evidence = [
        chunk(1, "Participants used the Key Questions to jump to sections informative to them.", "Results"),
        chunk(2, "All participants were paid US$15 for the hour-long study.", "Methods"),
    ]
    points = points_for("What were participants paid in the Paper Plain study?", evidence)
    assert points and "US$15" in points[0].text


def test_which_hospital_is_answered_by_a_hospital_named_not_by_the_hospital(library):
    """ "Which hospital did the Agyeman-Duah paper study?" was answered with rows of the interview
    themes' table ("No strategic plan for the hospital"): they say "hospital" as often as the
    sentences naming Kamuzu Central Hospital, and scored higher."""
    question = "Which hospital did the Agyeman-Duah paper study?"
    points = choose_points(question, scored(question, lexical_top(library, question)))
    assert points and "Kamuzu Central Hospital" in points[0].text


def test_a_words_forms_share_one_stem():
    """Snowball keeps a doubled last consonant in some forms of a word and not in others:
    "referred" and "self-referrals", "occurred" and "occurrence" did not match."""
    assert content_words("referred") <= content_words("self-referrals")
    assert content_words("occurred") == content_words("occurrence")
    assert content_words("staff") == content_words("staffing")


def test_a_list_item_that_asks_answers_nothing():
    """ "What errors did the generated summaries contain?" was answered with the last of a list of
    research questions, printed without its question mark ("• What is participant behavior in the
    presence of ... factual errors in generated gists"): it shares the question's words and
    answers nothing."""
    questions = (
        "We ask the following research questions:\n"
        "• How do readers use the interface compared to a standard PDF reader?\n"
        "• What is participant behavior in the presence of factual errors in generated summaries"
    )
    evidence = [
        chunk(1, questions, "6 Usability Study"),
        chunk(2, "The generated summaries contained errors such as hallucinated information and repeated words."),
    ]
    assert [p.index for p in points_for("What errors did the generated summaries contain?", evidence)] == [2]
