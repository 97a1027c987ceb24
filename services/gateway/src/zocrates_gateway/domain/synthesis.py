"""Writing the answer: the LLM prompt, and the offline extractive synthesizer.

The extractive synthesizer needs no model of its own. It chooses among the answer units of the
top-ranked passages — sentences, list items and table rows, which retrieval found and
classified at ingest (captions, footnotes, title and affiliation blocks and fragments are
never quoted unless the question asks about them) — by how well each answers the question:
its dense similarity to the question (retrieval's embedding model, scored at search time),
its IDF-weighted coverage of the question's words, whether it holds the kind of answer asked
for (a number for "how many", a percentage, a value with its unit, an identifier), the
question's named terms, and small priors for rank and section. The best unit comes first. A
unit that opens with an unresolved referent ("This may reflect ...") is quoted with the
sentence before it, or not at all. When no unit clears the relevance bar, the answer says so
and cites nothing; so does it when the question asks for a value (how many, what percentage,
which code, what rate) and no unit states one about the thing asked for ("20 stakeholders" for
"how many stakeholders"; a table row in its own cells), when it names a code or acronym
(IC50, ROUGE) that no passage mentions or spells out, or when it narrows what it asks about by
a word no passage says ("the paediatric department", "in children").

It never writes a claim that is not a unit of the cited passage, so offline answers are
verifiable by construction; only the source's own bracketed reference numbers are removed,
because a reader would take "[2,3]" for Zocrates' citations 2 and 3.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field, replace

import snowballstemmer
from breame.spelling import get_american_spelling

from zocrates_citations import format_evidence_xml
from zocrates_contracts import AnswerUnit, BackMatterTopic, Candidate, EvidenceChunk

SYSTEM_PROMPT = """You are Zocrates, a research assistant answering from the researcher's own Zotero library.
Answer the question using only the evidence chunks below. Rules:
- After each claim, cite the chunk(s) that support it with bracketed indices: [1], or [1, 2] for several.
- Cite only indices that appear in <retrieved_evidence>; never invent sources, URLs or identifiers.
- Mention authors naturally where helpful, e.g. "Smith et al. (2020) showed ... [1]".
- If the evidence does not answer the question, say so plainly.
- Never output database keys or internal identifiers.

{evidence}"""

ONLINE_PROMPT = """You are Zocrates. The researcher asked for new literature. Below are candidate papers found
online (numbered). Discuss the most relevant ones by their number, e.g. "Candidate 2 (Smith, 2021) ...",
in a few short paragraphs. Do not use bracketed citations. Do not invent papers.

{candidates}"""

NOT_FOUND = "I could not find a passage in your library that addresses this question."
EMPTY_SCOPE = (
    "No items in this scope: the collection, tag, selection or file it names holds no item whose "
    "text is indexed. Choose another scope, or ask across the whole library."
)
ANSWER_INTRO = (
    "Here is what your library says (quoted from the most relevant passages, their own reference numbers removed):\n\n"
)

MAX_CHUNKS = 12  # the chunks whose units compete: all a turn retrieves by default
MAX_POINTS = 4
MAX_LISTED = 6  # papers listed for "which of my papers discuss X?"
MAX_POINTS_PER_CHUNK = 2
MIN_UNIT_CHARS = 25
MAX_UNIT_CHARS = 600
NEAR_DUPLICATE = 0.6  # Jaccard of content words above which a second unit says nothing new
BM25_K1, BM25_B = 1.2, 0.75
RANK_PRIOR = 0.1  # the top chunk's head start over the last one, in units of question coverage
SECTION_PRIOR = {"findings": 0.1, "methods": -0.1}
#: A follow-up's head start for the units of the passages the previous answer cited: what a
#: conversation asks next sits mostly beside what it was just told ("how many were taken?" after
#: the sentence naming the detector). 0.2: the middle of the range that answered the most design
#: follow-ups (0.15 to 0.3 alike); 0.5 answered one more, but all but confines the answer there.
CITED_BEFORE_PRIOR = 0.2
DENSE_WEIGHT = 0.5  # of the unit's similarity to the question, against its word coverage
ANSWER_TYPE_BONUS, ANSWER_TYPE_PENALTY = 0.15, 0.25
#: for a unit saying what the named thing a "what is X?" question asks about is: every unit
#: naming X covers all the question's words, so word coverage cannot tell the answer apart
DESCRIBES_BONUS = 0.4
COUNT_FOCUS_BONUS = 0.15  # a count of the very thing a "how many" question asks about
STATED_VALUE_BONUS = 0.15  # a duration for "how long?" ("for a period of one month"), a sum for "how much did it cost?"
NAMED_TERM_WEIGHT = 0.15  # times the share of the question's named terms the unit holds
FOCUS_PENALTY = 0.2  # for a unit that never names the thing the question asks about
ROW_WEIGHT = 0.3  # times the share of a table row's own words (its label, its cells) the question holds
RELEVANCE_BAR = 0.57  # the best unit's score below which the answer says it found nothing (calibrated on the design questions of bench answers)
FOLLOWER_SHARE = 0.6  # a further point must score at least this share of the best one
#: A question about a paper as a whole (`summary_points`): the share of its words the paper's
#: title and abstract must hold, the head start of a concluding sentence and of one stating a
#: result over its similarity to the question, and the handicap of the abstract's opening
#: sentence (the field's background, most often).
SUMMARY_COVERAGE = 0.5
SUMMARY_CONCLUSION_PRIOR, SUMMARY_RESULT_PRIOR, SUMMARY_OPENING_PENALTY = 0.2, 0.1, 0.1

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9-]+|\d+(?:\.\d+)?")
#: Hyphens, dashes between words and the minus sign read as one hyphen: a PDF prints "ACE–33RE"
#: and "cm−1" where a question types "ACE-33RE" and "cm-1". (An em dash breaks a sentence.)
_DASHES = str.maketrans(dict.fromkeys("\u2010\u2011\u2012\u2013\u2212", "-"))
_STOP = frozenset(
    "a an and are as at be been but by can could did do does for from had has have how i if in "
    "into is it its may might of on or our so than that the their them then there these they this "
    "those to was we were what when where which while who why will with would you your about regarding "
    "concerning between does do tell me my library paper papers study studies found find show shows shown "
    "describe explain list say says conclude concludes concluded any all some also not no more most other such "
    "each only both "
    "et al many much done use used using per according being get got gets getting".split()
)

# --- the source's own reference markers ------------------------------------------------------

# "[12]", "[2,3,7-9]", "[4, 5]", "[10–12]", and runs such as "[4], [5]". Numbers start at 1 and
# have no decimals, so intervals like "[0, 1]" or "[2.5, 3]" stay.
_REF = r"[1-9]\d{0,3}"
_MARKER = rf"\[\s*{_REF}(?:\s*[-–—,;]\s*{_REF})*\s*\]"
_MARKERS_RE = re.compile(rf"\s*{_MARKER}(?:\s*[-–—,;]?\s*{_MARKER})*")
_EMPTY_PARENS_RE = re.compile(r"\s*\(\s*[,;]?\s*\)")
_SPACE_BEFORE_PUNCT_RE = re.compile(r"[ \t]+(?=[.,;:!?])")


def strip_reference_markers(text: str) -> str:
    """`text` without the bracketed numeric citations a paper carries of its own."""
    stripped = _MARKERS_RE.sub("", text)
    stripped = _EMPTY_PARENS_RE.sub("", stripped)
    return _SPACE_BEFORE_PUNCT_RE.sub("", stripped)


def system_prompt(chunks: list[EvidenceChunk]) -> str:
    """The LLM's system prompt; its evidence carries no reference numbers of the sources' own,
    which the model would copy and which would then read as our citation indices."""
    cleaned = [c.model_copy(update={"text": strip_reference_markers(c.text)}) for c in chunks]
    return SYSTEM_PROMPT.format(evidence=format_evidence_xml(cleaned))


# --- what the question asks ------------------------------------------------------------------

#: What a question asks of a paper's back matter, by topic; sent with the search, whose
#: answering headings retrieval knows. Not "authors" or "contributions" alone: "what did the
#: authors find", "the paper's contributions" ask about its findings; nor "conflict" or
#: "financial" alone ("the conflicts between staff", "financial constraints").
_BACK_MATTER_TOPICS: dict[BackMatterTopic, re.Pattern] = {
    topic: re.compile(rf"\b(?:{asked})\b", re.IGNORECASE)
    for topic, asked in [
        (
            "funding",
            r"fund\w*|grants?|sponsor\w*|financ(?:ed|ing|ially\s+supported)|financial\s+(?:support|assistance|aid)"
            # "who paid for the study?", not "were respondents paid for taking part?"
            r"|scholarships?|(?:paid|pays?|paying)\s+for(?!\s+(?:taking|participat\w*|their|being)\b)",
        ),
        # the section, or whom the authors thank; not "what limitations did they acknowledge?"
        ("acknowledgements", r"acknowledge?ments?|thank\w*|whom?\s+(?:\w+\s+){0,5}acknowledg\w*"),
        ("competing_interests", r"competing(?:\s+interests?)?|conflicts?\s+of\s+interests?"),
        (
            "contributions",
            r"authors?'?s?\W+contribut\w*|who\s+contributed|contributions?\s+of\s+(?:the|each)\s+authors?|authorship",
        ),
        (
            "affiliations",
            # not "affiliate respondents" or "hospitals affiliated with the university"
            r"affiliations?|(?:authors?|they|he|she|researchers?)\s+(?:\w+\s+){0,3}affiliated"
            r"|correspondence|e-?mail|where\s+(?:\w+\s+){0,2}authors?\s+(?:\w+\s+){0,4}(?:work\w*|based)"
            r"|(?:which|what)\s+(?:universit\w+|institutions?)\s+(?:\w+\s+){0,3}authors?",
        ),
        (
            "ethics",
            r"ethics?\s+(?:approval|committees?|boards?|review|statements?)|ethical(?:ly)?\s+(?:approv\w*|clearance|review)"
            # "which committee approved the study?"
            r"|(?:committees?|boards?)\s+(?:\w+\s+){0,2}approv\w*|approv\w*\s+by\s+(?:\w+\s+){0,3}(?:committees?|boards?)"
            r"|institutional\s+review\s+board|consent\w*",
        ),
        (
            "data_availability",
            r"data\s+availab\w*|availab\w+\s+of\s+(?:the\s+)?data|data\s+(?:is|are)\s+available|data\s+sharing",
        ),
        ("abbreviations", r"abbreviations?"),
        ("supplementary", r"supplementary\s+(?:material|information|file)s?|additional\s+files?"),
        ("licence", r"licen[cs](?:e|es|ed|ing)|copyright"),
    ]
}
#: A statement of who paid, under whatever heading ("Acknowledgments"), answers "who funded it?".
_FUNDING_RE = re.compile(
    r"\b(?:fund(?:s|ed|ing|er|ers)?|financ\w*|grants?|scholarships?|sponsor\w*|supported\s+by)\b", re.IGNORECASE
)
_CAPTION_QUESTION = re.compile(r"\b(?:figures?|fig\.|captions?|tables?|schemes?)\b", re.IGNORECASE)
# who the authors are; not "which databases did the authors of the review search?"
_AUTHOR_QUESTION = re.compile(
    r"\b(?:who\s+(?:wrote|are\s+the\s+authors)|(?:who|what)\s+(?:are|were)\s+the\s+authors?"
    r"|(?:list|name)\s+(?:all\s+)?the\s+authors|authors?\s+list|written\s+by)\b",
    re.IGNORECASE,
)


def back_matter_topics(question: str) -> list[BackMatterTopic]:
    """What the question asks of a paper's back matter: who funded it ("who paid for ...?", not
    "how much were participants paid?"), competing interests, ethics approval, ..."""
    question = question.replace("\u2019", "'")
    topics = [topic for topic, asked in _BACK_MATTER_TOPICS.items() if asked.search(question)]
    if "funding" in topics and _HOW_MUCH_COST_RE.search(question):
        # "how much were participants paid for the study?" asks for a sum, not who paid for it
        cues = {m.group().split()[0].lower() for m in _BACK_MATTER_TOPICS["funding"].finditer(question)}
        if cues <= {"paid", "pay", "pays", "paying"}:
            topics.remove("funding")
    return topics


def asks_about_back_matter(question: str) -> bool:
    """Whether the question is about funding, authors, acknowledgements and the like."""
    return bool(back_matter_topics(question))


def _back_matter_words(question: str) -> set[str]:
    """The words of `question` that ask about back matter ("funded", "competing interests"),
    lowercased; "funded" for any question about funding, which a funding statement says."""
    question = question.replace("\u2019", "'")
    topics = back_matter_topics(question)
    words = {
        w.lower() for topic in topics for m in _BACK_MATTER_TOPICS[topic].finditer(question) for w in m.group().split()
    }
    return words | {"funded"} if "funding" in topics else words


@dataclass(frozen=True)
class Ask:
    """What a question asks for, as far as choosing units goes."""

    words: frozenset[str]  # its content words
    named: frozenset[str]  # its named terms (acronyms, codes, capitalised names), lowercased
    codes: frozenset[str]  # those of them that are codes or acronyms (IC50, 33RE, ROUGE), lowercased
    answer_type: str | None  # "count", "percent", "value", "identifier", "year" or None
    focus: frozenset[str]  # the stems of the thing asked about ("bleeding risk"), if the question names it
    back_matter: frozenset[BackMatterTopic]  # what it asks of back matter: funding, ethics, ... (none: nothing)
    captions: bool  # asks about a figure or table (its caption may answer)
    title_block: bool  # asks who wrote the paper
    #: the named terms that name a paper ("the Malawi study", "Datta et al."), not a thing in it
    papers: frozenset[str] = frozenset()
    summary: bool = False  # asks what a paper found or is about, as a whole
    year: int | None = None  # the year that dates the paper it names ("Kaur et al. 2021")
    #: the abbreviation whose long form it asks for ("what does KCH stand for?"), lowercased
    expands: str | None = None
    #: the named thing it asks to be told what it is ("what is RXP407?"), lowercased
    describes: str | None = None
    #: asks how something was done ("what substrate was used?"), which the methods state
    procedure: bool = False
    #: asks which papers of the library are on a topic ("which of my papers discuss X?")
    listing: bool = False
    #: asks for a list of terms: a paper's keywords, a review's search terms
    terms: bool = False
    #: asks why: answered by a cause ("due to the presence of substitutional oxygen")
    reason: bool = False
    #: the words that say which of the thing asked about ("the average waiting time": wait)
    kind_of_focus: frozenset[str] = frozenset()


#: A sum asked for without "how much": "what were they paid?", "what did it cost?"
_WHAT_SUM = (
    r"\bwhat\s+(?:were|was|are|is|did|do|does)\s+(?:[\w-]+\s+){0,2}?(?:paid|pay|earn(?:ed)?|charged?|costs?)"
    r"(?=\s*(?:[?.!]|$|for\b|in\b|at\b|per\b|by\b|each\b|during\b))"
)
_ANSWER_TYPES = [
    (
        "percent",
        re.compile(
            r"\b(?:what|which)\s+(?:percentage|proportion|fraction|share|percent)\b|\bhow\s+many\s+percent"
            r"|\bwhat\s+(?:%|per\s*cent)|\bpercentage\s+of\b",
            re.IGNORECASE,
        ),
    ),
    (
        "count",
        re.compile(
            r"\bhow\s+many\b|\bnumbers?\s+of\b|\bsample\s+sizes?\b|\bhow\s+large\s+(?:was|were|is)\s+the\s+sample",
            re.IGNORECASE,
        ),
    ),
    (
        "identifier",
        re.compile(
            r"\b(?:which|what)\s+(?:\w+\s+){0,3}(?:codes?|identifiers?|ids?|accessions?|accession\s+numbers?"
            r"|entry|entries|pdb|doi)\b|\bpdb\b|\baccession\b",
            re.IGNORECASE,
        ),
    ),
    ("year", re.compile(r"\b(?:what|which)\s+year\b|\bwhen\s+(?:was|were|did)\b", re.IGNORECASE)),
    # "where was the study carried out?", "where had the questionnaire been used before?"
    ("place", re.compile(r"\bwhere\s+(?:was|were|did|do|does|is|are|had|has|have)\b", re.IGNORECASE)),
    (
        "value",
        re.compile(
            rf"{_WHAT_SUM}|"
            r"\bhow\s+(?:much|long|high|low|fast|large|big|old|often|far|selective|potent|effective|accurate"
            r"|sensitive|specific|precise|common|frequent|prevalent|strong|severe|safe|toxic|stable|satisfied|pleased"
            r"|happy|likely|confident)\b"
            r"|\b(?:what|which)\s+(?:[\w-]+\s+){0,4}"
            r"(?:values?|concentrations?|doses?|dosages?|resolutions?|temperatures?|rates?|ratios?|sizes?|lengths?"
            r"|durations?|times?|ages?|scores?|constants?|affinit(?:y|ies)|ki|ic50|ec50|kd|mass(?:es)?|weights?|volumes?"
            r"|densit(?:y|ies)|speeds?|energ(?:y|ies)|risks?|capacit(?:y|ies)|completeness|efficienc(?:y|ies)"
            r"|yields?|mortality|incidences?|prevalences?|budgets?|costs?|levels?|distances?|intercepts?"
            r"|coefficients?|r-?free|r2|p-?values?|odds|hazards?|wavelengths?|frequenc(?:y|ies)|pressures?"
            r"|voltages?|ph|occupanc(?:y|ies)|utili[sz]ations?|attendances?|turnovers?|uptakes?|survival"
            r"|accurac(?:y|ies)|sensitivit(?:y|ies)|specificit(?:y|ies))\b"
            # a value's noun naming a kind of thing: "what high risk features ...?", "which age groups ...?"
            r"(?!\s+(?:features?|factors?|groups?|categor(?:y|ies)|patients?|populations?|profiles?|points?"
            r"|assessments?|stratification|models?|tools?|analys[ie]s)\b)",
            re.IGNORECASE,
        ),
    ),
    # "how were they split by gender?": answered by who were women and who men, never named "gender"
    (
        "sex",
        re.compile(
            r"\b(?:genders?|sex|sexes)\b|\b(?:(?:wo)?men|(?:fe)?males?)\s+or\s+(?:(?:wo)?men|(?:fe)?males?)\b",
            re.IGNORECASE,
        ),
    ),
]
_WHERE_FROM_RE = re.compile(r"\bfrom\s*[?.!]*\s*$", re.IGNORECASE)
_PUBLISHED_RE = re.compile(r"\bpublished\b|\bappeared?\b", re.IGNORECASE)
_KINDS_OF_RISK = re.compile(r"\bwhat\s+(?:are|were)\s+(?:the\s+)?(?:[\w-]+\s+)?(?:risks|hazards)\b", re.IGNORECASE)
# The thing asked about: "what (was the) <bleeding risk> (did|of|in ...)", "how many <stakeholders>";
# after "its"/"their", of something named before ("what was its Ki in the N-domain?").
_FOCUS_RE = re.compile(
    r"\b(?:what|which)\s+(?:(?:was|is|were|are)\s+)?(?:the\s+|an?\s+|its\s+|their\s+)?((?:[\w-]+\s+){0,3}?[\w-]+)\s+"
    r"(?:of|did|do|does|was|were|is|are|in|for|at|to|that|has|have|had|on|from|with|between|among|relative"
    r"|compared|according)\b"
    r"|\bhow\s+many\s+((?:[\w-]+\s+){0,2}?[\w-]+)\s+(?:were|was|are|is|did|do|does|had|have|took|in|of|from|with"
    # or the verb the things asked about did: "how many children received filters?"
    r"|can|could|will|would|should|may|might|must|received|underwent|died|developed|got|gave|needed|required"
    r"|reported|experienced|suffered|survived|remained|showed|used|completed)\b"
    r"|\bhow\s+(?:much|long|high|low|large|big|old)\s+(?:is|was|are|were)\s+(?:the\s+|an?\s+|its\s+|their\s+)?"
    r"((?:[\w-]+\s+){0,3}?[\w-]+)"
    r"\s+(?:of|in|for|at|to|on|from|with)\b"
    # or, of something named before, the question's last words: "what was its Ki?"
    r"|\b(?:what|which)\s+(?:was|is|were|are)\s+(?:its|their)\s+((?:[\w-]+\s+){0,2}?[\w-]+)\s*[?.!]*$"
    # or the thing that did what the question asks: "which detector collected the images?"
    r"|\b(?:what|which)\s+((?:[\w-]+\s+)??[\w-]+)\s+(?!(?:was|were|need|used|based|red|bed)\b)[a-z]{2,}ed\b",
    re.IGNORECASE,
)
#: "what share of <them> <did> <what>": what tells the share asked for from the others
_SUBSET_RE = re.compile(
    r"\b(?:percentage|proportion|fraction|share|percent)\s+of\s+.+?\s(?:had|has|have|were|was|are|is|did|got"
    r"|received|reported|said|developed|underwent|came|used|took)\s+(.+?)\s*[?.!]*$",
    re.IGNORECASE,
)
_NUMBER_WORDS = (
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|thousand"
)
# A number, not a list's enumerator ("4. Management respondents").
_NUMBER_RE = re.compile(rf"(?<![\w.])\d+(?:[.,]\d+)?(?![\w])(?!\.\s)|\b(?:{_NUMBER_WORDS})\b", re.IGNORECASE)
# A count in prose is a number of something: "20 stakeholders", "one participant", "a 6-step
# synthesis"; not "(§3), some", nor a label ("Table 1 further describes ...", "Level one
# evidence", "phase 3 trials", "type 2 diabetes").
_COUNT_RE = re.compile(
    r"(?<![\w.§])(?<!Table )(?<!Figure )(?<!Fig\. )(?<!Appendix )(?<!Section )(?<!Chapter )"
    r"(?<!Level )(?<!Grade )(?<!Phase )(?<!Type )(?<!Stage )(?<!Class )(?<!Tier )"
    rf"(?:\d+(?:,\d{{3}})*|{_NUMBER_WORDS})(?:\s+|-(?=[a-z]))(?:[a-z][\w-]*\s+){{0,2}}?([a-z][\w-]*)",
    re.IGNORECASE,
)
_PERCENT_RE = re.compile(r"\d\s?%|\bper\s?cent\b|\bpercent(?:age)?\b", re.IGNORECASE)
#: A sum whose currency comes first: "US$15", "€ 2,000", "MWK 500".
_CURRENCY_FIRST = r"(?:\$|€|£|¥|\b(?:USD|EUR|GBP|MWK|ZAR)\s?)\s?\d"
# A number with its unit; not the digits of a name (RXP407, Tyr501, CD4, 33RE) or a figure's label (Figure 6B).
_VALUE_RE = re.compile(
    r"(?<![A-Za-z\d])(?<!Figure )(?<!Fig\. )(?<!Table )\d+(?:[.,]\d+)?\s?"
    # (capitals set against the digits are a name's: compound 33RE, not 33 of a unit "RE")
    r"(?:%|(?<=\s)[a-zA-Zµμ°Å˚◦º]{1,5}\b|(?<=\d)(?-i:(?![A-Z]{2,}\b))[a-zA-Zµμ°Å˚◦º]{1,5}\b"
    r"|[a-zA-Zµμ]{1,3}/[a-zA-Z]{1,3}|-fold)|\d\s?±|\d\s?[x×]"
    rf"|(?:\d|\b(?:{_NUMBER_WORDS}))[\s-]?(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?)\b"
    rf"|(?:\d|\b(?:{_NUMBER_WORDS}))\s+orders?\s+of\s+magnitude\b"  # "three orders of magnitude N-selectivity"
    r"|(?<![\w.])\d+\.\d+(?![\w.])"
    rf"|{_CURRENCY_FIRST}",
    re.IGNORECASE,
)  # or a bare decimal: a table cell; or a sum, its currency first (US$15, MWK 500)
# Codes: PDB entries (1O8A, 3NXQ), accessions (GSE12345, NM_000789), compound ids (RXP407, 33RE).
_IDENTIFIER_RE = re.compile(r"\b(?=[A-Z0-9_]*\d)(?=[A-Z0-9_]*[A-Z])[A-Z0-9_]{3,12}\b")
_YEAR_RE = re.compile(r"\b(?:1[89]|20)\d{2}\b")
#: A place: a name after "in", "at", "near" or "from" ("in Malawi", "at Diamond Light Source", "a hospital
#: in Pakistan"), not a month, a language or a label ("in June", "in English", "in Table 2").
_PLACE_RE = re.compile(
    r"\b(?:in|at|near|from)\s+(?:the\s+)?(?!(?:January|February|March|April|May|June|July|August|September|October"
    r"|November|December|English|Table|Figure|Fig|Section|Appendix|Chapter|Supplementary)\b)[A-Z][a-z]+"
)
_SEX_RE = re.compile(r"\b(?:fe)?males?\b|\b(?:wo)?m[ae]n\b|\bboys?\b|\bgirls?\b|\bnon-binary\b", re.IGNORECASE)
_ANSWER_PATTERNS = {
    "percent": _PERCENT_RE,
    "count": _COUNT_RE,
    "value": _VALUE_RE,
    "identifier": _IDENTIFIER_RE,
    "year": _YEAR_RE,
    "place": _PLACE_RE,
    "sex": _SEX_RE,
}
# A code or an acronym: a named term with a digit, or in capitals (a capitalised name may be paraphrased).
_CODE_RE = re.compile(r"(?=\S*\d)[A-Za-z0-9-]{2,}|[A-Z][A-Z-]{2,}s?")
_NAMED_RE = re.compile(
    r"\b(?:[A-Z]{2,}[A-Za-z0-9-]*|[A-Za-z]*\d[A-Za-z0-9-]*[A-Za-z][A-Za-z0-9-]*"
    r"|[A-Za-z]+-[A-Z][A-Za-z0-9]*)\b|(?<=[a-z,;] )[A-Z][a-z]{2,}(?:\s[A-Z][a-z]{2,})*"
)


def read_question(question: str) -> Ask:
    """What `question` asks for."""
    question = question.translate(_DASHES)
    answer_type = next((name for name, pattern in _ANSWER_TYPES if pattern.search(question)), None)
    if answer_type == "value" and _KINDS_OF_RISK.search(question):
        answer_type = None  # "what are the risks of heparin?": which risks (bleeding, HIT), not how large
    if answer_type == "place" and (
        _back_matter_words(question) or _PUBLISHED_RE.search(question) or _WHERE_FROM_RE.search(question)
    ):
        # "where do the authors work?" is answered by an address, "where was it published?" by a
        # venue, "where were they recruited from?" by a source ("from Upwork"), not only a place
        answer_type = None
    found = [m for m in _NAMED_RE.findall(question) if m.lower() not in _STOP]
    authors = {m.lower() for m in _ET_AL_RE.findall(question)}  # "Lo et al.": a name of two letters too
    named = frozenset(m.lower() for m in found) | authors
    codes = frozenset(m.lower() for m in found if _CODE_RE.fullmatch(m))
    m = _FOCUS_RE.search(question)
    phrase = next(g for g in m.groups() if g).lower().split() if m else []
    if (cut := next((i for i, w in enumerate(phrase) if i and w in _DETERMINERS), None)) is not None:
        phrase = phrase[:cut]  # "what software spotted the jargon in ...": a verb and its object follow
    if len(phrase) > 2 and any(phrase[-1].startswith(t) for t in named) and phrase[-2].endswith("s"):
        phrase = phrase[:-2]  # "what distance separates His365 from ...": a verb and what it acts on follow
    if len(phrase) == 1 and _PAST_VERB.fullmatch(phrase[0]):
        phrase = []  # "what happened to the revenue ...?", "what caused ...?": a verb, no thing asked about
    if len(phrase) > 1 and (
        phrase[-1].endswith("ed") or phrase[-1] in _FOCUS_VERBS or (_plural(phrase[-2]) and not _plural(phrase[-1]))
    ):
        # "how many medical doctors worked in ...", "what risks come with ...", "which inhibitors
        # act on ...": a verb, after the thing asked about
        phrase = phrase[:-1]
    # "how many of those came ...": a pointer names no thing of its own (a follow-up's referent)
    named_thing = phrase and phrase[-1] not in _GENERIC_FOCUS and not _POINTERS & set(phrase)
    focus = frozenset(content_words(phrase[-1])) if named_thing else frozenset()
    kind_of_focus = frozenset(content_words(" ".join(phrase[:-1])) - _UNQUALIFYING) if named_thing else frozenset()
    if named_thing and len(phrase) > 1 and phrase[-1] in _MEASURES and (measured := content_words(phrase[-2])):
        focus = frozenset(measured)  # "the staff turnover rate": a rate of turnover, not any rate
    elif named_thing and phrase[-1] in _MEASURES and (measured := content_words(_measured_of(phrase[-1], question))):
        focus = frozenset(measured)  # "the incidence of heparin-induced thrombocytopenia": of that
    if not focus and answer_type == "percent" and (subset := _SUBSET_RE.search(question)):
        # "what share of patients had tuberculosis?": a share of those with it, not any share
        focus = frozenset(content_words(subset.group(1)) - content_words(" ".join(named)))
    if not focus and _HOW_LONG_RE.search(question):
        focus = frozenset(content_words("duration"))  # "how long did she work there?": for how long
    elif _HOW_MUCH_COST_RE.search(question):
        focus = frozenset(content_words("cost"))  # "how much were the participants paid?": a sum
    back_matter = _back_matter_words(question)
    title_block = bool(_AUTHOR_QUESTION.search(question))  # who the authors are
    if back_matter and not focus:  # "who funded the ACE inhibitor study?" asks about funding, not ACE
        focus = frozenset(content_words(" ".join(back_matter)))
    papers = frozenset(t for t in named if _names_a_paper(t, question)) | authors
    summary = _SUMMARY_QUESTION.search(question)
    listing = _LISTING_QUESTION.match(question)
    dated = {year for m in _PAPER_YEAR_RE.finditer(question) for year in m.groups() if year}
    expansion = _EXPANSION_QUESTION.search(question)
    expands = next(g for g in expansion.groups() if g) if expansion else None
    if expands and sum(c.isupper() for c in expands) < 2:
        expands = None  # "what did the authors mean by ...?" asks for no abbreviation's long form
    if expands:  # what it asks about is the abbreviation, not "standing"
        focus = frozenset()
    return Ask(
        # "paid for" asks who funded; "the Malawi study" says which paper, and "the main findings
        # of" what kind of answer, not what is asked about
        words=frozenset(_quantity_words(question) | content_words(" ".join(back_matter)))
        - content_words(" ".join([*papers, *dated]))
        - _paper_nouns(papers, question)
        - (_COLLEAGUES if authors else set())
        # "which models did the authors fit?" asks about the paper's work, which it says "we" did
        - (_AUTHORS if not back_matter and not title_block else set())
        - (content_words(summary.group()) & _SUMMARY_CUES if summary else set())
        - (_EXPANSION_CUES if expands else set())
        - (_LISTING_CUES if listing else set()),
        named=named,
        codes=codes,
        answer_type=answer_type,
        focus=focus,
        back_matter=frozenset(back_matter_topics(question)),
        captions=bool(_CAPTION_QUESTION.search(question)),
        title_block=title_block,
        papers=papers,
        summary=bool(summary),
        year=int(min(dated)) if dated else None,
        expands=expands.lower() if expands else None,
        describes=_described(question, found),
        procedure=bool(_PROCEDURE_QUESTION.search(question)),
        terms=bool(_TERMS_QUESTION.search(question)),
        listing=bool(listing),
        reason=bool(_WHY_RE.match(question)),
        kind_of_focus=kind_of_focus,
    )


_WHY_RE = re.compile(r"\s*(?:and\s+)?why\b", re.IGNORECASE)
#: The words that give a cause or reason, for a why-question.
_CAUSE_RE = re.compile(
    r"\b(?:because|due\s+to|owing\s+to|caused\s+by|as\s+a\s+(?:result|consequence)\s+of|results?\s+from"
    r"|resulting\s+from|attributed\s+to|attributable\s+to|explained\s+by|responsible\s+for|leads?\s+to"
    r"|in\s+order\s+to|so\s+that|since|given\s+that|thanks\s+to)\b",
    re.IGNORECASE,
)


#: "Which papers in my library are about X?", "which of my papers discuss X?", "what papers do I
#: have on X?": the papers, each with the passage that shows it is on the topic.
_LISTING_QUESTION = re.compile(
    r"^\s*(?:which|what)\s+(?:of\s+(?:my|our)\s+)?(?:papers|articles|items|works|studies|publications|references)\b",
    re.IGNORECASE,
)


#: Asks for a list of terms: "what are the paper's keywords?", "which search terms did they use?"
_TERMS_QUESTION = re.compile(
    r"\b(?:key\s?words?|index\s+terms|search\s+(?:terms?|strateg(?:y|ies)|strings?|quer(?:y|ies))|mesh\s+terms?"
    r"|abbreviations?)\b",
    re.IGNORECASE,
)

#: "What substrate was used?", "how were participants recruited?", "who approved the study?":
#: how the work was done, which its methods state.
_PROCEDURE_QUESTION = re.compile(
    r"\b(?:was|were|is|are|did|do|does|who)\b[^?]{0,80}?\b(?:used?|using|measured?|performed|conducted|recruited"
    r"|collected|analy[sz]ed?|approved?|assessed|obtained|carried\s+out|excluded|included|selected|sampled"
    r"|synthesi[sz]ed?|purified|recorded|tested|prepared|grown|translated|validated|calculated|searched|chosen|enrolled"
    # the bench's own steps: "what buffer were the inhibitors diluted in?"
    r"|dilut(?:ed|e)|dissolved?|(?:pre-?)?incubated|stained|centrifuged|washed|cultured|extracted|crystalli[sz]ed"
    r"|expressed|transfected|stored|sequenced|imaged|fitted|refined|solved|scaled|indexed|coded|isolated"
    r"|quantified|normali[sz]ed|annotated|interviewed|surveyed|randomi[sz]ed|administered|injected|implanted)\b",
    re.IGNORECASE,
)


#: "What is RXP407?", "what are LMWHs?": a named thing, which a sentence saying what it is answers.
_DESCRIPTION_QUESTION = re.compile(
    r"(?:^|[,:;]\s*)what\s+(?:is|are|was|were)\s+([^?,;:]{2,60}?)\s*\??\s*$", re.IGNORECASE
)


#: "What features does Paper Plain offer?": what it is made of, which what introduces it says.
_PARTS_QUESTION = re.compile(
    r"\bwhat\s+(?:features?|components?|parts?|functions?|functionalit(?:y|ies)|capabilit(?:y|ies)|modules?)"
    r"\s+(?:does|do|did)\s+([^?,;:]{2,60}?)\s+(?:have|offer|include|provide|support|contain|comprise)\b",
    re.IGNORECASE,
)

#: "What kind of inhibitor is RXP407?": what it is, as "what is RXP407?" asks.
_KIND_QUESTION = re.compile(
    r"\bwhat\s+(?:kind|type|sort|class)\s+of\s+[\w-]+(?:\s+[\w-]+)?\s+(?:is|are|was|were)\s+([^?,;:]{2,60}?)\s*\??\s*$",
    re.IGNORECASE,
)


#: A concept a "what are X (in Y)?" question asks about: a few words in lower case, with no
#: article or pointer before them ("section gists in Paper Plain", "a key question index").
_CONCEPT_RE = re.compile(
    r"(?:an?\s+)?((?!(?:the|this|that|these|those|its|their|our|your|my)\b)[a-z][a-z-]*(?:\s+[a-z][a-z-]*){0,3}?)(?:\s+(?:in|of|for|from|by)\s+.+)?"
)


def _described(question: str, named: list[str]) -> str | None:
    """The term a "what is X?" question asks about, lowercased: a named term, or a concept in
    lower case ("what are section gists?", said in the singular); None for another question
    ("what is the PDB code?" asks for a value, not what a PDB code is)."""
    m = next(filter(None, (q.search(question) for q in (_DESCRIPTION_QUESTION, _PARTS_QUESTION, _KIND_QUESTION))), None)
    if not m:
        return None
    if m.group(1) in named:
        return m.group(1).lower()
    concept = _CONCEPT_RE.fullmatch(m.group(1)) if m.re is _DESCRIPTION_QUESTION else None
    if not concept or concept.group(1) in _STOP:
        return None
    term = concept.group(1)
    return term[:-1] if re.search(r"[^isu]s$", term) else term  # "gists" is said "gist(s)", "analysis" stays


def describes(text: str, term: str) -> bool:
    """Whether `text` says what `term` is: "RXP407 is a phosphinic peptidomimetic ACE inhibitor",
    "Paper Plain, an interactive reading interface", "a molecule incorporating a tetrazole moiety
    (compound 33RE)", or introduces it as a paper's own: "we introduce a novel interactive
    interface—Paper Plain—with four features"."""
    name = rf"(?<![\w-]){re.escape(term)}s?(?:\s*\([^)]{{1,40}}\))?"
    return bool(
        re.search(
            rf"{name},?\s+(?:is|are|was|were)\s+(?:a|an|the|one)\b|{name},\s+(?:a|an)\s"
            rf"|\bwe\s+(?:introduce|present|propose|develop|describe|design|build)[ds]?\s+(?:a|an|the)\b[^.;]{{0,80}}?{name}"
            # "A molecule incorporating a tetrazole moiety in the P2 position (compound 33RE)"
            rf"|\b(?:a|an)\s+[^.;()]{{3,100}}\((?:compound|drug|inhibitor|called|termed|named)?\s*{re.escape(term)}\)",
            text,
            re.IGNORECASE,
        )
    )


#: "What does KCH stand for?", "what is SHOP short for?", "what is the full form of OPD?": the
#: long form a paper gives an abbreviation it defines ("Kamuzu Central Hospital (KCH)").
_EXPANSION_QUESTION = re.compile(
    r"\bwhat\s+(?:does|do|did|is)\s+(?:the\s+)?(?:abbreviation\s+|acronym\s+)?[\"'“‘]?([A-Za-z][\w-]{1,11}?)s?[\"'”’]?\s+"
    r"(?:stand\s+for|mean|short\s+for|an?\s+abbreviation\s+(?:of|for))\b"
    r"|\bwhat\s+is\s+the\s+(?:full|long)\s+(?:form|name)\s+of\s+(?:the\s+)?[\"'“‘]?([A-Za-z][\w-]{1,11}?)s?\b",
    re.IGNORECASE,
)


def defines_concept(text: str, term: str) -> bool:
    """Whether `text` says what the concept `term` (lower case, singular) is: "... summaries of
    any section (“section gists”)", "scaffold hopping is a ...", "a technique called scaffold
    hopping". Stricter than `describes`, which a named thing needs: "the Key Question Index and
    Answer Gists were a clear favorite" says nothing of what answer gists are."""
    name = rf"{re.escape(term)}s?"
    return bool(
        re.search(
            rf"\(\s*[\"“‘']{name}[\"”’']\s*\)|\(\s*{name}\s*\)"
            rf"|(?:^|\b(?:a|an|the)\s+){name},?\s+(?:is|are|refers?\s+to|means?)\b"
            rf"|\b(?:called|termed|named|known\s+as|referred\s+to\s+as)\s+[\"“‘']?{name}\b",
            text,
            re.IGNORECASE,
        )
    )


def defines(text: str, abbreviation: str) -> bool:
    """Whether `text` gives the long form of `abbreviation`: "Kamuzu Central Hospital (KCH)",
    "receptor-based SHOP (scaffold hopping)"."""
    short = re.escape(abbreviation)
    return bool(
        re.search(rf"[A-Za-z][\w-]*\s+\(\s*[\"“‘']?{short}s?[\"”’']?\s*\)", text, re.IGNORECASE)
        # not a value in brackets: "RXP407 (Ki = 21.03 nM)"
        or re.search(rf"\b{short}s?\s+\((?!\s*(?:Fig|Table|\d))(?![^)]*[=<>±])[^)]{{4,}}\)", text, re.IGNORECASE)
    )


_PAPER_WORDS = r"study|studies|paper|trial|review|article|account|survey|report"
_PAPER_NOUN = (
    rf"(?:'s\s+)?(?:{_PAPER_WORDS}|et\s+al\b"
    r"|and\s+(?:colleagues|co-?workers|co-?authors)\b)"
)
#: "Lo et al.", "Datta and colleagues": a name of any length before them names a paper's author
#: (and the colleagues are no word to cover).
_ET_AL_RE = re.compile(r"\b([A-Z][\w'’-]*)\s+(?:et\s+al|and\s+(?:colleagues|co-?workers|co-?authors))\b")
#: A year that dates a paper the question names: "Kaur et al. 2021", "the Datta 2010 review".
_PAPER_YEAR_RE = re.compile(
    rf"\bet\s+al\.?,?\s*\(?((?:1[89]|20)\d{{2}})\b|\b[A-Z][\w'-]+\s+\(?((?:1[89]|20)\d{{2}})\)?\s*{_PAPER_NOUN}"
)
#: "Summarize ...", "what are the main findings of ...", "what did Datta et al. conclude?", "what
#: did Moon et al. study?", "what is the paper on X about?": the paper as a whole, which its
#: abstract and conclusions state.
_SUMMARY_QUESTION = re.compile(
    # "summarise ...", "a summary of ...", not a paper's own "plain language summaries" asked about
    # ("how many times were the summaries regenerated?")
    r"\b(?:summar(?:ise|ize|ised|ized|ising|izing)|(?:a|an|the|its|their|your|short|brief|quick)\s+summary\b"
    r"|summar(?:y|ies)\s+(?:of|for)\b|^(?!\s*(?:what|which|who|how|when|where|why)\b)[^?]*\bsummary\W*$"
    r"|overview\s+of|tl;?dr"
    r"|(?:main|key|principal|major)\s+(?:findings?|results?|conclusions?|points?|messages?|takeaways?|contributions?)"
    r"|\btake-?(?:home|away)\s+(?:messages?|points?|lessons?)"
    # "what are the conclusions of the DVT prophylaxis review?": of a paper, not of its interviews
    rf"|\b(?:conclusions?|findings)\s+(?:of|from|in)\s+[^?]{{0,60}}?{_PAPER_NOUN}"
    r"|\bwhat\s+(?:did|does|do)\s+(?:[\w.'’()-]+\s+){0,6}?(?:find|conclude|show|study|investigate|examine|explore|report)"
    r"(?=\s*\??$)"
    # ("what did the review conclude about IVC filters?" asks about the filters, from the review)
    r"|(?:did|does|do)\s+(?:[\w.'’()-]+\s+){0,4}?conclude\b(?!\s+(?:about|regarding|concerning|on)\b)"
    rf"|\bwhat(?:'s|\s+is|\s+was)\s+[^?]{{0,80}}?{_PAPER_NOUN}[^?]{{0,80}}?\babout(?=\s*\??$)"
    rf"|\b(?:does|do|did)\s+[^?]{{0,80}}?{_PAPER_NOUN}[^?]{{0,80}}?\b(?:cover|describe|discuss)(?=\s*\??$)"
    # "tell me about the Paper Plain paper", "describe Kaur et al.'s work": a paper, not a topic
    rf"|^\s*(?:(?:can|could)\s+you\s+)?(?:tell\s+me\s+about|describe)\s+[^?]{{0,80}}?{_PAPER_NOUN})",
    re.IGNORECASE,
)


#: A year after a paper's name: "Datta 2010 review", "Datta (2010)".
_NAME_YEAR = r"\s*(?:\(?(?:1[89]|20)\d{2}\)?\s*)?"


def _as_name(term: str) -> str:
    """`term` as a whole word of a question."""
    return rf"(?<![\w-]){re.escape(term)}(?![\w-])"


def _names_a_paper(term: str, question: str) -> bool:
    """Whether the question names a paper by `term`: "the Malawi study", "Datta et al.", "the
    paper by Douglas"."""
    name = _as_name(term)
    return bool(re.search(rf"{name}{_NAME_YEAR}{_PAPER_NOUN}|\b{_PAPER_BY}\s+{name}", question, re.IGNORECASE))


def _paper_nouns(papers: Collection[str], question: str) -> set[str]:
    """The nouns that name a paper with its name ("review" in "the DVT review", "the review by
    Datta"): they say which paper, not what is asked of it."""
    nouns = rf"({_PAPER_WORDS}|work)"
    found = set()
    for term in papers:
        name = _as_name(term)
        pattern = rf"{name}{_NAME_YEAR}(?:'s\s+)?{nouns}\b|\b{nouns}\s+(?:by|of|from)\s+{name}"
        for m in re.finditer(pattern, question, re.IGNORECASE):
            found |= content_words(" ".join(g for g in m.groups() if g))
    return found


#: "the paper by Douglas", "the review of Datta and colleagues"
_PAPER_BY = rf"(?:{_PAPER_WORDS}|work)\s+(?:by|of|from)"


_POINTERS = frozenset("this that these those they them it its their".split())
_PAST_VERB = re.compile(r"[a-z]{4,}(?<!e)ed")  # not "speed", "need", "seed"
#: Heads that name no particular thing: "what percentage of ...", "which part of ...".
_GENERIC_FOCUS = frozenset(
    "percentage proportion fraction share part kind type number amount value values way ways "
    "extent degree aspect aspects role class classes kind kinds category categories group groups sort size "
    "people persons individuals difference differences consequence consequences implication implications".split()
)


#: Verbs that may follow the thing a question asks about: "what risks come with ...?".
_FOCUS_VERBS = frozenset(
    "come comes arise arises occur occurs exist exists remain remains appear appears emerge emerges happen happens"
    " apply applies".split()
)


_DETERMINERS = frozenset("the a an its their this these those our his her".split())


def _measured_of(measure: str, question: str) -> str:
    """What "the <measure> of ..." measures: up to three words after "of", to the next verb or
    preposition ("the rate of heparin-induced thrombocytopenia did ..."); "" when none."""
    m = re.search(
        rf"\b{re.escape(measure)}\s+of\s+((?:[\w-]+\s+){{0,2}}?[\w-]+)"
        r"(?=\s+(?:did|do|does|was|were|is|are|has|have|had|in|for|at|among|with|on|after|from|by|between|to"
        r"|reported|calculated|found|observed|measured)\b|\s*[?,.;:]|\s*$)",
        question,
        re.IGNORECASE,
    )
    return m.group(1) if m else ""


def _plural(word: str) -> bool:
    """Whether `word` reads as a plural noun ("inhibitors"; not "class", "status", "analysis")."""
    return len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is"))


#: Heads naming a measure of something: in "what mortality rate ...", the thing measured (the
#: word before the head: mortality) is what a unit must name; a migration rate answers nothing
#: about mortality.
_MEASURES = frozenset(
    "rate rates risk risks level levels score scores ratio ratios incidence prevalence frequency"
    " distribution split breakdown balance composition".split()
)


def quotable_kinds(ask: Ask) -> frozenset[str]:
    """The unit kinds an answer to this question may quote."""
    kinds = {"sentence", "list_item"} if ask.describes else {"sentence", "list_item", "table_row"}
    if ask.captions:
        kinds.add("caption")
    if ask.back_matter:
        kinds |= {"footnote", "affiliation"}
    if ask.title_block:
        kinds.add("title_block")
    if ask.terms:
        kinds.add("term_list")
    return frozenset(kinds)


# --- scoring ---------------------------------------------------------------------------------


_STEMMER = snowballstemmer.stemmer("english")


@functools.lru_cache(maxsize=65_536)
def _stems(word: str) -> tuple[str, ...]:
    """A word's stem in American spelling ("favourite" is "favorite", "randomised" "randomized"),
    and a hyphenated word's parts' stems too ("heparin-induced"); a doubled last consonant as one."""
    if _GREEK_PLURAL.fullmatch(word):  # (before "analyses" reads "analyzes")
        word = word[:-2] + "is"
    word = get_american_spelling(word)
    stems = [_STEMMER.stemWord(_SEX_WORDS.get(word, word))]
    if (m := _PREFIXED.match(word)) is not None:  # "outpatients" are patients, "subgroups" groups
        stems.append(_STEMMER.stemWord(m.group(1)))
    if "-" in word:  # "R-free" is "Rfree", "wild-type" "wildtype"; and "heparin-induced" is "induced"
        stems.append(_STEMMER.stemWord(word.replace("-", "")))
        stems += [_STEMMER.stemWord(part) for part in word.split("-") if len(part) > 1 and part not in _STOP]
    return tuple(_DOUBLED_END.sub(r"\1", stem) for stem in stems)


#: A stem ending in a doubled consonant, which Snowball leaves in some forms of a word and not
#: others ("referral" referr, "referred" refer; "occurrence" occurr, "occurred" occur): one letter.
_DOUBLED_END = re.compile(r"([bdfgmnprtz])\1$")
# "How many women took part?" is answered by "14 female" participants: one word for each sex.
_SEX_WORDS = {"women": "female", "woman": "female", "men": "male"}
_PREFIXED = re.compile(r"(?:out|sub|non|multi|over|under)([a-z]{5,})$")
#: A Greek noun's plural, which Snowball stems apart from its singular ("diagnoses" diagnos,
#: "diagnosis" diagnosi; "analyses" analyz, "analysis" analysi): it is stemmed as its singular.
_GREEK_PLURAL = re.compile(r"[a-z]{3,}[oye]ses")


def content_words(text: str) -> set[str]:
    """The stems of the words of `text` that carry meaning (Snowball's English stemmer, so
    "calculated" matches "calculate" and "complications" "complication"); a PDF's mathematical
    letters read as letters ("𝑃𝐷𝐹" is "PDF", as retrieval reads it)."""
    if not text.isascii():  # and a dash or minus sign is a hyphen: "cm−1" is "cm-1"
        text = unicodedata.normalize("NFKC", text).translate(_DASHES)
    return {stem for w in (t.lower() for t in _WORD_RE.findall(text)) if w not in _STOP for stem in _stems(w)}


_FUNDING = frozenset(content_words("funded"))
_COLLEAGUES = frozenset(content_words("colleagues coworkers co-workers coauthors co-authors"))
_AUTHORS = frozenset(content_words("authors researchers investigators"))
_DURATION = frozenset(content_words("duration time"))
#: Words before the thing asked about that say how it is given, not which it is: "the average
#: waiting time" is a waiting time, given as an average.
_UNQUALIFYING = frozenset(
    content_words("average mean median total overall typical usual estimated approximate reported actual exact")
)
_DIGIT, _SPELLED_NUMBER = r"\d", rf"(?:\d|\b(?:{_NUMBER_WORDS})\s)"
#: A quantity a value names by its unit alone: "3.64 eV" is an energy, "37 °C" a temperature
#: (PDFs set the degree sign as a ring, a white bullet or an ordinal: "16 ◦C").
_UNITS_OF = {
    "energy": r"[kKmM]?eV|[kK]?J|kcal|cal",
    "temperature": r"[°˚◦º]\s?[CF]|K",
    "mass weight": r"[kmµμn]?g|[kK]?Da",
    "length distance wavelength resolution": r"[nµμmck]?m|Å|˚A",
    "duration time": r"(?:milli|micro|nano)?seconds?|m?s|min(?:utes?)?|h(?:ours?)?|days?|weeks?|months?|years?",
    "concentration": r"[mµμnp]?M|[mµμn]?g/[mµμ]?[lL]|mol/[lL]|mmol",
    "frequency": r"[kMG]?Hz",
    "pressure": r"[kM]?Pa|mmHg|bar|atm",
    "volume": r"[mµμ]?[lL]",
}
_QUANTITY_VALUE_RE = {
    # a duration is also written in words: "for a period of one month"
    word: re.compile(rf"{_SPELLED_NUMBER if word in _DURATION else _DIGIT}\s?(?:{units})(?![A-Za-z])")
    for names, units in _UNITS_OF.items()
    for word in content_words(names)
}
#: A sum of money, its currency before or after it: "US$15", "€ 2,000", "150 dollars".
_MONEY_RE = re.compile(rf"{_CURRENCY_FIRST}|\d[\d,.]*\s?(?:USD|EUR|GBP|dollars?|euros?|pounds?)\b")
_MONEY = frozenset(content_words("cost costs price prices fee fees charge charges"))
_QUANTITY_VALUE_RE |= dict.fromkeys(_MONEY, _MONEY_RE)
#: Quantities asked for whose word a sentence says without a value ("long waiting times", "the
#: costs of care"): a sentence answers only by stating one.
_STATED_ONLY = _DURATION | _MONEY
_QUANTITY_HEADER_RE = {
    word: re.compile(rf"\(\s*(?:{units})\s*\)") for names, units in _UNITS_OF.items() for word in content_words(names)
}
#: The literature databases a review searches: "which databases did Datta et al. search?" is
#: answered by "identified using PubMed, EMBASE, and Medline", which says neither word.
_DATABASE_RE = re.compile(
    r"\b(?:PubMed|MEDLINE|Medline|EMBASE|Embase|Scopus|Web\s+of\s+Science|CINAHL|PsycINFO|PsycInfo"
    r"|Cochrane\s+(?:Library|Central|Database)|CENTRAL|Google\s+Scholar|IEEE\s+Xplore|ACM\s+Digital\s+Library"
    r"|LILACS|ClinicalTrials\.gov|ProQuest|Europe\s+PMC)\b"
)
_SEARCHED = frozenset(content_words("database databases searched search literature"))
#: The words a tool is called by, in a question or where methods name one.
_TOOL_NOUNS = r"software|packages?|programs?|programmes?|toolkits?|toolbox(?:es)?|librar(?:y|ies)"
#: "What software indexed the images?", "which R package fitted the models?": asks for a tool by name.
_SOFTWARE_QUESTION = re.compile(
    rf"\b(?:what|which)\s+(?:[\w-]+\s+){{0,2}}?(?:{_TOOL_NOUNS}|scripts?|pipelines?|tools?)\b", re.IGNORECASE
)
#: How methods name their tools: "the CCP4 program SCALA", "the lme4 package in R", "using
#: scispaCy", "with PyMOL", "with Microsoft Excel and Epi-Info Statistical Programme": a tool's
#: word (capitalised in a name), a language after "in"/"using", or a name shaped like software's
#: (a capital inside a word, or letters then digits).
_SOFTWARE_RE = re.compile(
    rf"\b(?i:{_TOOL_NOUNS}|suite)\b"
    r"|\b(?:in|using|with)\s+(?:Microsoft\s+|IBM\s+)?(?:R|Python|MATLAB|Matlab|Stata|SPSS|SAS|Excel|Julia)\b"
    r"|\b(?:[a-z]+[A-Z]|[A-Z][a-z]+[A-Z])[A-Za-z]*\b|\b[a-z]{2,}\d+[a-z\d]*\b"
)
#: A sex or gender is named by who were women and who men ("9 male, 14 female"), never by the word.
_SEXES = frozenset(content_words("gender genders sex sexes"))
#: Kinds of thing a name answers: "what software ...?" is answered by "Microsoft Excel and
#: Epi-Info", which never says "software". (A database is named by `_DATABASE_RE`: "PRISMA" is
#: a name, but no database.)
_NAMED_KINDS = frozenset(
    content_words(
        "software program programme package tool toolkit language organisation organization "
        "institution agency company funder sponsor foundation university country city journal dataset corpus "
        "instrument questionnaire guideline checklist synchrotron beamline facility platform feature component module"
    )
)
# A name in running text: a word with a capital past its first letter (EMBASE, scispaCy, GPT-3,
# Epi-Info) or a capitalised word that does not open the sentence.
_NAME_RE = re.compile(r"\b[A-Za-z]+[A-Z][\w-]*|(?<=[^.!?:\s] )[A-Z][a-z][\w-]*")
_NOT_NAMES = frozenset(("Table", "Figure", "Fig", "Section", "Appendix"))


#: Kinds of thing whose answer is a proper name that holds the kind's word: "which hospital?" is
#: answered by "Kamuzu Central Hospital", "which committee?" by "the National Health Science
#: Research Committee", "which ministry?" by "the Ministry of Health".
_INSTITUTIONS = (
    "hospital|clinic|centre|center|committee|board|ministry|university|institute|school|college|council|"
    "society|association|trust|department|agency|foundation"
)
_WHICH_INSTITUTION_RE = re.compile(rf"\b(?:which|what)\s+({_INSTITUTIONS})s?\b", re.IGNORECASE)


def _institution_name(question: str) -> re.Pattern | None:
    """For "which <institution> ...?", a pattern finding one named: capitalised words ending in
    the kind's word, or the kind's word followed by "of" and a capitalised name."""
    m = _WHICH_INSTITUTION_RE.search(question)
    if m is None:
        return None
    kind = m.group(1).capitalize()
    return re.compile(rf"(?:[A-Z][\w'’-]*\s+){{1,5}}{kind}s?\b|\b{kind}\s+of\s+(?:the\s+)?[A-Z]")


def _names_software(text: str, ask: Ask) -> bool:
    """Whether `text` names a tool the question does not name: an answer to "what software ...?"."""
    return any(not content_words(m.group(0)) & (ask.words - _NAMED_KINDS) for m in _SOFTWARE_RE.finditer(text))


def _names_one(text: str, ask: Ask) -> bool:
    """Whether `text` names a thing the question does not: an answer to "which software?"."""
    return any(
        m.group(0) not in _NOT_NAMES and not content_words(m.group(0)) & ask.words for m in _NAME_RE.finditer(text)
    )


#: The words of a summary question that say what kind of answer it wants, not what it is about.
_SUMMARY_CUES = frozenset(
    content_words(
        "summary summarise summarize overview tldr main key principal major findings results conclusions points "
        "messages takeaways contributions find conclude show study investigate examine explore report about cover "
        "describe discuss"
    )
)

#: The quantity a "how <adjective>" question asks for, in the words that state it: "how old
#: were the participants?" is answered by "participants' age ranged from 19 to 67".
_HOW_QUANTITY = {
    "old": "age aged",
    "tall": "height",
    "heavy": "weight",
    "far": "distance",
    "often": "frequency",
    "long": "duration",  # "for a period of one month", "lasted one hour": rarely "long"
}
_HOW_LONG_RE = re.compile(r"\bhow\s+long\b", re.IGNORECASE)
_HOW_MUCH_COST_RE = re.compile(
    r"\bhow\s+much\b[^?]*\b(?:costs?|costed|pay|paid|charged?|spen[dt]|spending|earn(?:ed)?|invest(?:ed)?|money)\b"
    rf"|{_WHAT_SUM}",
    re.IGNORECASE,
)
_HOW_QUANTITY_RE = re.compile(rf"\bhow\s+({'|'.join(_HOW_QUANTITY)})\b", re.IGNORECASE)


def _quantity_words(question: str) -> set[str]:
    """The words of a "how old / tall / far ..." question with the adjective replaced by the
    words stating its quantity (which the answer says; "old" it rarely does)."""
    asked = [a.lower() for a in _HOW_QUANTITY_RE.findall(question)]
    return content_words(question) - content_words(" ".join(asked)) | content_words(
        " ".join(_HOW_QUANTITY[a] for a in asked)
    )


#: The words of "which of my papers discuss X?" that ask for papers and name no topic.
_LISTING_CUES = frozenset(content_words("discuss discusses cover covers mention mentions address deal concern have"))
#: The words of "what does KCH stand for?" that ask for a long form and name nothing.
_EXPANSION_CUES = frozenset(content_words("stand mean short abbreviation acronym full long form name"))

# "heparin induced thrombocytopenia (HIT)", "low molecular weight heparins (LMWHs)", "hexagonal boron nitride (hBN)"
_DEFINITION_RE = re.compile(r"((?:[A-Za-z][\w'-]*[\s-]+){1,8}?)\(((?:[a-z]-?)?[A-Z][A-Za-z0-9-]{1,9}?)s?\)")


def abbreviations(chunks: list[EvidenceChunk]) -> dict[str, frozenset[str]]:
    """The abbreviations the evidence defines, each with the content words of its long form:
    a unit saying "HIT" then covers a question about heparin-induced thrombocytopenia."""
    found: dict[str, frozenset[str]] = {}
    for chunk in chunks:
        for m in _DEFINITION_RE.finditer(chunk.text):
            long_form = _long_form(m.group(1), m.group(2))
            if long_form:
                found.setdefault(m.group(2), frozenset(content_words(long_form)))
    return found


def _long_form(before: str, abbreviation: str) -> str | None:
    """The words before "(ABBR)" whose initials spell its capitals (and a lower-case first letter:
    "hBN"), or None."""
    letters = [c.lower() for i, c in enumerate(abbreviation) if c.isupper() or (i == 0 and c.isalpha())]
    words = re.findall(r"[A-Za-z][A-Za-z']*", before)
    start = len(words)
    for letter in reversed(letters):
        for back in range(3):  # skip at most two words ("of", "the", a lower-case middle)
            i = start - 1 - back
            if i >= 0 and words[i][0].lower() == letter:
                start = i
                break
        else:
            return None
    return " ".join(words[start:]) if start < len(words) else None


def _with_abbreviations(words: set[str], text: str, defined: dict[str, frozenset[str]]) -> set[str]:
    for token in _ABBREVIATION_TOKEN_RE.findall(text):
        key = token if token in defined else token[:-1] if token.endswith("s") and token[:-1] in defined else None
        if key is not None:
            words |= defined[key]
    return words


_ABBREVIATION_TOKEN_RE = re.compile(r"\b(?:[a-z]-?)?[A-Z][A-Za-z0-9-]*[A-Z][A-Za-z0-9-]*\b")


_FINDINGS_RE = re.compile(r"\b(?:abstract|summary|results?|findings|discussion|conclusions?)\b", re.IGNORECASE)
_METHODS_RE = re.compile(r"\b(?:methods?|methodology|materials|experimental|procedures?)\b", re.IGNORECASE)


def section_prior(chunk: EvidenceChunk, back_matter_asked: bool = False, value_asked: bool = False) -> float:
    """Findings sections are where answers are stated; methods sections describe how. Asked
    about funding or authors, the back matter is where the answer is stated. Asked for a count
    or a value ("how many images were taken?"), or how something was done ("which substrate
    was used?"), the methods are as likely to state it: no penalty there."""
    section = chunk.section or ""
    if chunk.role == "abstract" or chunk.kind == "abstract" or _FINDINGS_RE.search(section):
        return SECTION_PRIOR["findings"]
    if back_matter_asked and chunk.role == "back_matter":
        return SECTION_PRIOR["findings"]
    if _METHODS_RE.search(section) and not (value_asked or back_matter_asked):
        return SECTION_PRIOR["methods"]  # an ethics statement may sit in the methods
    return 0.0


@dataclass(frozen=True)
class Sentence:
    """One quotable unit of the evidence (a sentence, list item or table row)."""

    index: int  # 1-based position of its chunk in the evidence list: the citation
    text: str  # as shown: whitespace normalised, the source's reference markers removed
    words: frozenset[str]
    prior: float
    kind: str = "sentence"
    similarity: float | None = None  # to the question, from retrieval
    bonus: float = 0.0  # answer type and named terms
    on_type: bool = True  # states the kind of answer asked for, about the thing asked about
    relevance: float = field(default=0.0, compare=False)  # the score that chose it
    #: The words that tell it apart from other units: a table row's own cells, its values among
    #: them (its rows share their caption and headers, and two rows of one label under different
    #: column headers differ only in their values); None for a sentence or list item, whose
    #: `words` do.
    own_words: frozenset[str] | None = None

    @property
    def distinct_words(self) -> frozenset[str]:
        return self.words if self.own_words is None else self.own_words


# A unit that leans on the one before it: "This may reflect ...", "These results ...".
# "This study ..." names the paper itself and needs no sentence before it.
_REFERENT_RE = re.compile(
    r"^(?:(?:This|These|That|Those)(?!\s+(?:study|studies|work|paper|review|article|analysis"
    r"|trial|survey|report|research|project|thesis)\b)|It|Its|They|Their|Them|Such|Both|He|She"
    r"|The\s+latter|The\s+former|Thus|Therefore|However|In\s+contrast|Moreover|Furthermore)\b"
)


def _unit_texts(chunk: EvidenceChunk, kinds: frozenset[str]) -> Iterator[tuple[AnswerUnit, str, float | None]]:
    """The chunk's quotable units as (unit, text, similarity); a unit opening with a referent
    comes with the sentence before it, or not at all."""
    units = chunk.units
    for i, unit in enumerate(units):
        if unit.kind not in kinds:
            continue
        text = unit.shown(chunk.text)
        if unit.kind == "sentence" and _REFERENT_RE.match(text):
            before = units[i - 1] if i else None
            if (
                before is None
                or before.kind != "sentence"
                or chunk.text[before.end : unit.start].strip()
                or _REFERENT_RE.match(before.shown(chunk.text))
            ):
                continue
            scored = [s for s in (unit.similarity, before.similarity) if s is not None]
            yield unit, chunk.text[before.start : unit.end], max(scored, default=None)
            continue
        yield unit, text, unit.similarity


def _quotable(kind: str, text: str) -> bool:
    """Of sensible length, not a question (a paper's research question echoes the researcher's
    and answers nothing) and not a pointer elsewhere ("More details on the GPT-3 prompt are in
    Appendix C.", which the question's words match and which says nothing)."""
    if kind == "table_row":
        return len(text) <= MAX_UNIT_CHARS * 2
    return (
        MIN_UNIT_CHARS <= len(text) <= MAX_UNIT_CHARS
        and not text.rstrip("\"'”’)").endswith("?")
        and not (kind == "list_item" and _ASKING_ITEM_RE.match(text))
        and not (len(text) <= MAX_POINTER_CHARS and _POINTER_RE.match(text))
    )


#: A list item that asks, its question mark lost or never printed: "• What is participant
#: behavior in the presence of incorrect system predictions (e.g., ... errors in generated gists)".
_ASKING_ITEM_RE = re.compile(
    r"(?:What|How|Why|When|Where|Which|Who)\s+(?:is|are|was|were|do|does|did|can|could|would|should|will|might)\b"
    r"(?!\s+more\b)|(?:Is|Are|Do|Does|Did|Can|Could|Would|Should|Will)\s+(?:the|a|an|it|they|there|this|these|readers?|participants?|people)\b"
)

#: "More details on X are in Appendix C.", "See Table 4 for the questions.", "We discuss future
#: interventions focused on improving paper comprehension in §8.5.": where to read, not what.
_POINTER_RE = re.compile(
    r"^(?:see\b|(?:more|further|additional|full|complete)\s+(?:details?|information|descriptions?|results)\b)"
    r".*\b(?:appendix|appendices|supplement\w*|additional\s+file|table|figure|fig\.|section|§)"
    r"|^we\s+(?:discuss|describe|detail|present|explore|address|outline|return\s+to|elaborate\s+on)\b"
    r".*\b(?:in|see)\s+(?:§|sections?\s+\d|appendi(?:x|ces)\b|chapters?\s+\d)",
    re.IGNORECASE,
)
MAX_POINTER_CHARS = 160


def candidate_sentences(
    question: str, chunks: list[EvidenceChunk], ask: Ask | None = None, cited_before: Collection[str] = ()
) -> list[Sentence]:
    """Every unit of the top chunks that could be quoted; those of the chunks `cited_before`
    (by the answer a follow-up follows) with `CITED_BEFORE_PRIOR`."""
    ask = ask or read_question(question)
    kinds = quotable_kinds(ask)
    pattern = _ANSWER_PATTERNS.get(ask.answer_type or "")
    top = chunks[:MAX_CHUNKS]
    defined = abbreviations(top)
    # the papers the question names by their title or authors ("the Malawi study"; for back
    # matter, which never names its own paper, any named term: "who funded the Kamuzu study?")
    named_papers = {c.item_key for c in top if ask.papers and names_paper(ask.papers, c)} | {
        c.item_key for c in top if (name := _title_name(c.title)) in ask.named and _one_paper_titled(name, top)
    }
    named_by_back_matter = {c.item_key for c in top if ask.named and names_paper(ask.named, c)}
    # "who funded it?" is answered by a statement of who paid, not by thanks to colleagues
    funding_asked = "funding" in ask.back_matter
    entity_asked = pattern is None and bool(_ENTITY_QUESTION.match(question))
    databases_asked = bool(_SEARCHED & ask.focus)
    software_asked = bool(_SOFTWARE_QUESTION.search(question))
    institution_asked = _institution_name(question)
    found = []
    for rank, chunk in enumerate(top):
        if chunk.role == "back_matter" and not ask.back_matter:
            continue
        prior = RANK_PRIOR * (1 - rank / len(top)) + section_prior(
            chunk, bool(ask.back_matter), pattern is not None or ask.procedure or ask.terms
        )
        if chunk.chunk_id in cited_before:
            prior += CITED_BEFORE_PRIOR
        # Where the question names a paper, another paper's units answer for nothing. Back
        # matter says what it is in its heading ("Funding") and speaks of its paper without
        # naming it ("This work was supported by ..."): its paper's title and authors name it.
        # Elsewhere a term naming the paper says which paper answers, not how well a unit does.
        back_matter = chunk.role == "back_matter"
        if (papers := named_by_back_matter if back_matter else named_papers) and chunk.item_key not in papers:
            continue
        heading = content_words((chunk.section or "").rsplit(" > ", 1)[-1])
        # a section named for what is asked ("8.4 Limitations" for "what limitations ...?") states
        # it in every sentence, which rarely repeat its heading's word
        headed = bool(ask.focus & heading)
        if headed:
            prior += SECTION_PRIOR["findings"]
        paper = _paper_names(chunk) if back_matter else ""
        about = heading | content_words(paper) if back_matter else set()
        named = ask.named if back_matter else ask.named - ask.papers
        # a term in the paper's title is what all of it is about: it tells no unit apart (as
        # written there: a unit saying "DVT" still says what "deep venous thrombosis" does not)
        in_title = set() if back_matter else {t for t in named if names_paper([t], chunk, spelled=False)}
        titled = content_words(" ".join(in_title))  # covered by each of its units
        named = named - in_title
        for unit, raw, similarity in _unit_texts(chunk, kinds):
            kind = unit.kind
            text = strip_reference_markers(" ".join(raw.split()))
            if not _quotable(kind, text):
                continue
            bonus = 0.0
            words = _with_abbreviations(content_words(text), text, defined) | titled | (ask.focus if headed else set())
            if _SEX_RE.search(text):  # "437 males and 578 females" says how the sexes split
                words |= _SEXES
            words |= _acronym_words(text, question, ask.codes)
            if databases_asked and _DATABASE_RE.search(text):  # "identified using PubMed, EMBASE, and Medline"
                words |= _SEARCHED
                bonus += ANSWER_TYPE_BONUS  # names them: the answer, however little else it shares
            if software_asked and _names_software(text, ask):
                bonus += ANSWER_TYPE_BONUS  # "indexed and scaled with XDS and the CCP4 program SCALA"
            if kind == "term_list":  # the list asked for: "what was the search strategy?", "the keywords?"
                words |= ask.focus
                bonus += ANSWER_TYPE_BONUS
            # only where it matters: in back matter, or asked who funded it
            states_money = (back_matter or funding_asked) and bool(_FUNDING_RE.search(f"{text} {chunk.section or ''}"))
            states_funding = back_matter and states_money
            if back_matter:  # asked about
                words |= about | (_FUNDING if states_funding else frozenset())
            if "affiliations" in ask.back_matter:  # "where did the authors work?": an address answers
                bonus += ANSWER_TYPE_BONUS if kind in ("affiliation", "footnote") else -ANSWER_TYPE_PENALTY
            # a table row names the thing asked about in its own cells, not in the caption all rows share
            row = chunk.text[unit.start : unit.end] if kind == "table_row" else ""
            own = content_words(row) | (words & _SEXES) if kind == "table_row" else words
            typed = pattern is not None and _states(ask.answer_type, kind, text, pattern, ask.named)
            if ask.expands:  # the long form is the answer, given where the paper defines it
                typed = defines(text, ask.expands)
            # back matter is only a candidate when asked about, and then it is what was asked about;
            # a quantity ("at what energy") is named by the unit of the value that states it (3.64 eV)
            quantities = [_QUANTITY_VALUE_RE[w] for w in ask.focus if w in _QUANTITY_VALUE_RE]
            states_quantity = any(q.search(text) for q in quantities) or (
                # a row whose label gives the unit: "Rmsd bond (Å) — 0.008" is a length
                kind == "table_row"
                and any(_QUANTITY_HEADER_RE[w].search(text) for w in ask.focus if w in _QUANTITY_HEADER_RE)
            )
            names_focus = (
                not ask.focus
                or headed
                or bool(ask.focus & own)
                # or in the column header over one of its values ("Distance (Å): 2.7")
                or (kind == "table_row" and bool(ask.focus & content_words(text.split("): ", 1)[-1])))
                # or in a caption naming what every row gives, where the row's label is the thing
                # asked about ("What R2 did HC-6004 get?": "Table 3 (... R2 is given ...): HC-6004 | 0.98")
                or (kind == "table_row" and bool(ask.focus & words) and _row_labelled(row, named))
                or (back_matter and (states_funding or not funding_asked))
                or (typed and states_quantity)
                or (bool(ask.focus & _NAMED_KINDS) and _names_one(text, ask))
            )
            # "what was the average waiting time?" is answered by a duration, not by a share of
            # complaints about "long waiting times" (a table row gives its unit in the header);
            # "how many times ...?" by a count ("up to five times")
            stated_only = (
                pattern is not None
                and ask.answer_type != "count"
                and bool(_STATED_ONLY & ask.focus)
                and kind != "table_row"
            )
            if stated_only:
                # of the kind asked about: "the average waiting time" is no "period of one month" in the field
                names_focus = states_quantity and (not ask.kind_of_focus or bool(ask.kind_of_focus & words))
            if institution_asked:  # "which hospital ...?": named, not "the hospital"
                names_focus = bool(institution_asked.search(text))
                if names_focus:
                    bonus += ANSWER_TYPE_BONUS
            if ask.describes and (
                (describes(text, ask.describes) or defines(text, ask.describes))
                if ask.describes in ask.named
                else defines_concept(text, ask.describes)
            ):
                bonus += DESCRIBES_BONUS  # says what the thing asked about is
            if ask.reason and _CAUSE_RE.search(text):
                bonus += ANSWER_TYPE_BONUS  # gives a cause; no gate: a reason is not always so worded
            if pattern is not None or ask.expands:
                bonus += ANSWER_TYPE_BONUS if typed else -ANSWER_TYPE_PENALTY
                if ask.answer_type == "count" and ask.focus and _counts_focus(text, ask.focus):
                    bonus += COUNT_FOCUS_BONUS  # "20 stakeholders" for "how many stakeholders"
                if stated_only and names_focus and (words - titled) & (ask.words - ask.focus):
                    bonus += STATED_VALUE_BONUS  # a duration or sum of the thing asked about, not of anything else
            if named:
                lowered = f"{text} {paper}".lower().translate(_DASHES)
                bonus += NAMED_TERM_WEIGHT * sum(term in lowered for term in named) / len(named)
            if not names_focus:
                bonus -= FOCUS_PENALTY  # it does not mention what was asked about
            if kind == "table_row":  # rows share their caption: what tells them apart is the row itself
                labels = {w for w in own if not _NUMBER_RE.fullmatch(w)}
                bonus += ROW_WEIGHT * len(labels & ask.words) / max(len(labels), 1)
            found.append(
                Sentence(
                    rank + 1,
                    text,
                    frozenset(words),
                    prior,
                    kind,
                    similarity,
                    bonus,
                    # "who funded it?" is answered by a statement of who paid, or not at all; one
                    # asking which thing ("which residues differ ...?") by no row of numbers alone
                    on_type=((pattern is None and not ask.expands) or (typed and names_focus))
                    and (states_money or not funding_asked)
                    and not (entity_asked and kind == "table_row" and _numbers_only(row)),
                    own_words=frozenset(own) if kind == "table_row" else None,
                )
            )
    return found


#: A question asking which thing or who: answered by a name, not by values.
_ENTITY_QUESTION = re.compile(r"^\s*(?:which|who|whom)\b", re.IGNORECASE)


def _row_labelled(row: str, named: Collection[str]) -> bool:
    """Whether a table row's label (its first cell) is one of the `named` terms."""
    label = row.split(" | ", 1)[0].lower().translate(_DASHES)
    return any(term in label for term in named)


def _numbers_only(row: str) -> bool:
    """Whether a table row's cells past its label are all numbers ("C-domain | 60 826 +− 9 175",
    "Y369F | n.d.∗ | 404.4 +− 17.3"): a value, not words."""
    cells = [_ASSIGNED.sub("", _NOT_DETERMINED.sub("", c)).strip() for c in row.split(" | ")[1:]]
    return any(cells) and all(_NUMERIC_CELL.fullmatch(c) for c in cells if c)


_NUMERIC_CELL = re.compile(r"(?=.*\d)[\d\s.,+\-−–±×%()/<>=≤≥~*∗†‡§¶#]+")
# The symbol a number is given for: "a = 73.1, b = 77.3" (a unit cell's edges) are numbers.
_ASSIGNED = re.compile(r"(?<!\w)[^\W\d_]{1,2}\s*=\s*")
_NOT_DETERMINED = re.compile(r"\b(?:n\.?d\.?|n\.?a\.?|NA|NR)(?=\W|$)[∗*†‡]?", re.IGNORECASE)


def _title_name(title: str) -> str | None:
    """The name a title gives its subject before a colon ("Paper Plain: Making Medical Research
    Papers Approachable ..." is Paper Plain's paper), lowercased; None where it gives none."""
    name, colon, _ = title.partition(":")
    return name.strip().lower() if colon and 0 < len(name.split()) <= 4 else None


def _one_paper_titled(name: str, chunks: list[EvidenceChunk]) -> bool:
    """Whether only one paper of `chunks` has `name` in its title or authors: a system's name
    ("Paper Plain"), not a topic several titles share ("COVID-19: ..." and "... of COVID-19")."""
    return len({c.item_key for c in chunks if names_paper([name], c, spelled=False)}) == 1


def names_paper(named: Collection[str], chunk: EvidenceChunk, spelled: bool = True) -> bool:
    """Whether a term the question names (lowercased) is in the title or authors of the chunk's
    paper, or (`spelled`), an acronym of three letters or more, is spelled out in its title ("the
    DVT review": "Complications related to deep venous thrombosis prophylaxis ...")."""
    names = _paper_names(chunk)
    return any(
        re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", names, re.IGNORECASE)
        or (
            spelled
            and len(term) >= 3
            and (spelled_out := _spelled_out(term)) is not None
            and bool(spelled_out.search(chunk.title.lower()))
        )
        for term in named
    )


def _paper_names(chunk: EvidenceChunk) -> str:
    """What names a chunk's paper: its title and its creators' family names."""
    return " ".join([chunk.title, *(c.last_name or c.name for c in chunk.creators)]).translate(_DASHES)


def _states(answer_type: str, kind: str, text: str, pattern: re.Pattern, named: frozenset[str] = frozenset()) -> bool:
    """Whether a unit states the kind of answer asked for. A table row's cells are bare numbers
    whose unit is in the column headers: any number of a row counts, and a percentage is a
    number of a row whose headers say "%". A match inside a word the question names does not
    count: of "how selective is 33RE?", "33RE" is the subject, not the answer."""
    if kind == "table_row":
        if answer_type in ("count", "value") or (answer_type == "percent" and "%" in text):
            return bool(_NUMBER_RE.search(_LABEL_RE.sub(" ", text)))
    return any(_word_at(text, m.start(), m.end()) not in named for m in pattern.finditer(text))


# The number of a label is no value: "Table 2 (...)", "(Additional file 1, Appendix 1, Section 4.5.5)".
_LABEL_RE = re.compile(
    r"\b(?:Table|Figure|Fig\.|Appendix|Section|Chapter|Supplementary|Additional\s+file|file)\s+[A-Z]?\d+(?:\.\d+)*[A-Za-z]?\b"
)


def _word_at(text: str, start: int, end: int) -> str:
    """The whitespace-delimited word around `text[start:end]`, its edge punctuation stripped, lowercased."""
    start = text.rfind(" ", 0, start) + 1
    stop = text.find(" ", end)
    return text[start : len(text) if stop < 0 else stop].strip("()[]{},.;:!?\"'").lower()


def _counts_focus(text: str, focus: frozenset[str]) -> bool:
    """Whether a count in `text` counts the thing asked about: "20 stakeholders were sampled"."""
    return any(focus & content_words(m.group(0)) for m in _COUNT_RE.finditer(text))


def relevance(sentences: list[Sentence], wanted: set[str]) -> list[float]:
    """BM25 of each unit for the question's words, over the IDF of all those words found in
    the evidence: about the share of the question a unit covers, comparable to the priors.

    IDF is computed over the candidate units, and the share is of all the question's words,
    so a question whose rare words the evidence lacks is covered by nothing; BM25's length
    normalisation keeps a long list of terms from winning by length alone."""
    n = len(sentences)
    terms = _terms(wanted)
    covered = [{term: term.covered_by(s.words) for term in terms} for s in sentences]
    df = Counter(term for cover in covered for term, share in cover.items() if share == 1)
    # a question word found nowhere in the evidence weighs most: nothing here covers it
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
    question_weight = sum(idf.values()) or 1.0
    average_length = sum(len(s.words) for s in sentences) / max(n, 1)
    scores = []
    for s, cover in zip(sentences, covered):
        length_norm = 1 - BM25_B + BM25_B * len(s.words) / max(average_length, 1)
        term = (BM25_K1 + 1) / (1 + BM25_K1 * length_norm)
        scores.append(sum(idf[t] * term * share for t, share in cover.items()) / question_weight)
    return scores


@dataclass(frozen=True)
class _Term:
    """One word of the question as the stems a unit may say it by: a hyphenated word by its own
    stem or its joined one ("think-aloud", "thinkaloud"), or in part by its parts' ("aloud"),
    so that it weighs as one word, not four, and "C-domain" says half of "N-domain"."""

    whole: frozenset[str]
    parts: tuple[str, ...] = ()  # a part of one letter ("n" of "n-domain") is never said

    def covered_by(self, words: frozenset[str]) -> float:
        if self.whole & words:
            return 1.0
        return sum(p in words for p in self.parts) / len(self.parts) if self.parts else 0.0


def _terms(wanted: set[str]) -> list[_Term]:
    terms = []
    for word in sorted(w for w in wanted if "-" in w):
        parts = tuple(_STEMMER.stemWord(p) if len(p) > 1 else "" for p in word.split("-"))
        terms.append(_Term(frozenset({word, word.replace("-", "")}), parts))
    grouped = {w for t in terms for w in (*t.whole, *t.parts)}
    return terms + [_Term(frozenset({w})) for w in sorted(wanted - grouped)]


def score(lexical: float, unit: Sentence) -> float:
    """How well a unit answers: its word coverage and, where retrieval scored it, its dense
    similarity to the question; plus answer type, named terms and the priors."""
    topical = lexical if unit.similarity is None else (1 - DENSE_WEIGHT) * lexical + DENSE_WEIGHT * unit.similarity
    return topical + unit.bonus + unit.prior


@dataclass(frozen=True, kw_only=True)
class Earlier:
    """What the answer to a follow-up reads of the turn before it.

    `context`: what a follow-up leaves unsaid, the previous question's key terms. They count
    as words and named terms of the question (weighing them at half made no follow-up of the
    design questions right and one wrong); what is asked (the answer type, the thing asked
    about) is read from the question alone: "how many were taken?" asks for a count.
    `cited_before`: the chunks the answer a follow-up follows cited, whose units start ahead.
    `asked`: the question an ellipsis follows ("and for mechanical devices?"), whose kind of
    answer it wants; `said`: the answer to it (whitespace collapsed, no citation tokens), whose
    quotes answered the other thing and are not said again, unless they name what is asked now
    (the first answer may have quoted the mechanical devices' rate beside heparin's)."""

    context: str = ""  # the carried terms alone
    cited_before: frozenset[str] = frozenset()  # chunk ids
    asked: str = ""
    said: str = ""


def choose_points(
    question: str, chunks: list[EvidenceChunk], max_points: int = MAX_POINTS, earlier: Earlier | None = None
) -> list[Sentence]:
    """The units that best answer the question, best first: the best must clear the relevance
    bar, the others come close to it; at most two from one chunk, and none repeats another.
    `earlier`: for a follow-up, what it reads of the turn before it."""
    earlier = earlier or Earlier()
    context, cited_before, asked, said = earlier.context, earlier.cited_before, earlier.asked, earlier.said
    ask = read_question(question)
    # a quote said before may answer the follow-up too: one naming what it asks about ("mechanical
    # devices"), not what the question before it named (LMWH; a paper's name says which paper)
    own = ask.words
    before = read_question(asked) if asked else None
    swapped = before.named - before.papers - ask.named if before else frozenset()
    if context or asked:
        ask = with_context(ask, context, before)
    evidence = chunks[:MAX_CHUNKS]
    if unmentioned_qualifiers(question, evidence):
        return []  # a summary of the paper does not answer about what it never says either
    if not context:
        # "what is Paper Plain?", "the main barriers to ...": what the paper about it says; a
        # summary question with no such paper is refused, unless it names a cited work's authors
        of_paper = summary_points(question, chunks, max_points)
        if of_paper or (ask.summary and not cites_work(ask, evidence)):
            return of_paper
    wanted = set(ask.words)
    if not wanted or unmentioned_codes(ask, evidence):
        return []
    sentences = candidate_sentences(question, chunks, ask, cited_before)
    scored = sorted(
        ((score(lex, s), s) for lex, s in zip(relevance(sentences, wanted), sentences)), key=lambda x: -x[0]
    )
    if ask.listing:  # the papers on a topic: one point from each, more of them
        max_points = max(max_points, MAX_LISTED)
    item_of = {rank: chunk.item_key for rank, chunk in enumerate(chunks[:MAX_CHUNKS], start=1)} if ask.listing else {}
    points: list[Sentence] = []
    for value, sentence in scored:
        if said and sentence.text in said:
            lowered = sentence.text.lower()
            if not sentence.words & own or any(term in lowered for term in swapped):
                continue  # it answered what was asked before
        if value < RELEVANCE_BAR or (points and value < FOLLOWER_SHARE * points[0].relevance):
            break
        if ask.listing and any(item_of.get(p.index) == item_of.get(sentence.index) for p in points):
            continue
        if not points and not sentence.on_type:
            continue  # asked for a value of something, the answer must open with one
        if not sentence.words & wanted and not ask.named:
            continue
        held = next((i for i, p in enumerate(points) if p.index == sentence.index and p.text in sentence.text), None)
        if held is not None:
            # a chosen point with the sentence after it, which leans on it ("These values are
            # slightly higher than ..."): the pair scored high enough to be a point, so it is quoted whole
            points[held] = replace(sentence, relevance=points[held].relevance)
            continue
        if not _adds_to(points, sentence):
            continue
        points.append(replace(sentence, relevance=round(value, 4)))
        if len(points) == max_points:
            break
    return points


def _adds_to(points: list[Sentence], sentence: Sentence, per_chunk: int = MAX_POINTS_PER_CHUNK) -> bool:
    """Whether `sentence` may join `points`: its chunk has not given `per_chunk` already, and
    it says something new (a sentence quoted with the one before it holds that
    one; two rows of one table are told apart by their own cells, not the caption they share)."""
    return sum(p.index == sentence.index for p in points) < per_chunk and not any(
        _jaccard(sentence.distinct_words, p.distinct_words) >= NEAR_DUPLICATE
        or p.text in sentence.text
        or sentence.text in p.text
        for p in points
    )


def summary_paper(question: str, chunks: list[EvidenceChunk]) -> EvidenceChunk | None:
    """For a question about a paper as a whole ("summarize the Kamuzu study"), a passage of that
    paper: of the paper the question names by its title or authors, else of the best-ranked
    one, provided its title and abstract hold most of the question's words ("the main findings
    of the review on DVT prophylaxis"). Asked what a thing is that a paper's title names ("what
    is Paper Plain?"), that paper; asked for the main things of what a paper's title is about
    ("the main barriers to ..."), that paper. None for another question, or when no paper fits."""
    ask = read_question(question)
    if (term := described_term(question)) is not None:  # "what is Paper Plain?", of the paper that introduces it
        return next((c for c in chunks[:MAX_CHUNKS] if names_paper([term], c, spelled=False)), None)
    if ask.focus and not ask.summary and _MAIN_RE.search(question):
        # "what were the main barriers to quality improvement at KCH?": what the paper whose
        # title is about them ("Understanding the barriers to ...") found
        return next((c for c in chunks[:MAX_CHUNKS] if ask.focus <= content_words(c.title)), None)
    return paper_asked_about(ask, chunks) if ask.summary else None


def paper_asked_about(ask: Ask, chunks: list[EvidenceChunk], cues: Collection[str] = ()) -> EvidenceChunk | None:
    """A passage of the paper a question asks about as such: the paper it names by its title or
    authors, else the best-ranked one, provided its title and text hold most of the question's
    words but its `cues` (the words saying what is asked of the paper: "authors", "published")."""
    chunks = chunks[:MAX_CHUNKS]
    if not chunks:
        return None
    named = [c for c in chunks if ask.named and names_paper(ask.named, c)]
    if named:
        return named[0]
    wanted = ask.words - _PAPER_NOUNS - set(cues)
    if ask.papers or not wanted or cites_work(ask, chunks):
        return None  # "summarize the Douglas et al. paper": none of the passages is of it
    paper = [c for c in chunks if c.item_key == chunks[0].item_key]
    defined = abbreviations(paper)
    about = content_words(_paper_names(paper[0])) | {
        w for c in paper for w in _with_abbreviations(content_words(c.text), c.text, defined)
    }
    return chunks[0] if len(wanted & about) >= SUMMARY_COVERAGE * len(wanted) else None


def cites_work(ask: Ask, chunks: list[EvidenceChunk]) -> bool:
    """Whether the names a question gives ("what did Nunn and Pinfield find?") are those of a
    work a passage cites, not of a paper in the library: no retrieved paper is theirs, and a
    passage names them all."""
    names = ask.named - ask.codes
    return (
        bool(names)
        and not any(names_paper(names, c) for c in chunks)
        and any(names <= content_words(c.text) for c in chunks)
    )


_PAPER_NOUNS = frozenset(content_words("paper study article work research publication"))
_MAIN_RE = re.compile(r"\b(?:main|key|principal|major|primary|most\s+important)\s+[\w-]+", re.IGNORECASE)


def summary_points(question: str, chunks: list[EvidenceChunk], max_points: int = MAX_POINTS) -> list[Sentence]:
    """What a paper found (`summary_paper`): the sentences of its abstract and conclusions
    closest to the question, a concluding one or one stating a result ahead. Asked what a thing
    is, the passages introducing it are read too, the sentence saying what it is ahead."""
    if (of := summary_paper(question, chunks)) is None:
        return []
    term = described_term(question)
    found: list[tuple[float, Sentence]] = []
    own = [(rank, c) for rank, c in enumerate(chunks[:MAX_CHUNKS], start=1) if c.item_key == of.item_key]
    # a paper whose abstract and conclusions were not told apart (no heading found) is read whole
    stating = [(rank, c) for rank, c in own if states_findings(c) or (term and introduces(c, term))] or own
    # an item with no file is all abstract: its findings may all be in one of its passages
    per_chunk = max_points if all(c.attachment_key is None for _, c in stating) else MAX_POINTS_PER_CHUNK
    # the abstract's opening sentence most often says what the field knew, not what the paper found
    abstract_starts = [c.position for _, c in stating if c.position is not None and c.role == "abstract"]
    opening = min(abstract_starts, default=None)
    for rank, chunk in stating:
        concluding = bool(_CONCLUSION_RE.search(chunk.section or ""))
        for unit, raw, similarity in _unit_texts(chunk, frozenset({"sentence", "list_item"})):
            text = strip_reference_markers(" ".join(raw.split()))
            if not _quotable(unit.kind, text):
                continue
            concludes = concluding or bool(_CONCLUSION_RE.match(text))
            states = bool(_NUMBER_RE.search(text) or _FINDING_RE.search(text))
            opens = opening is not None and chunk.position == opening and unit.start == 0 and not concludes
            value = (
                (similarity or 0.0)
                + SUMMARY_CONCLUSION_PRIOR * concludes
                + SUMMARY_RESULT_PRIOR * states
                - SUMMARY_OPENING_PENALTY * opens
                + DESCRIBES_BONUS * bool(term and describes(text, term))
            )
            found.append((value, Sentence(rank, text, frozenset(content_words(text)), 0.0, unit.kind, similarity)))
    points: list[Sentence] = []
    for value, sentence in sorted(found, key=lambda x: -x[0]):
        if not _adds_to(points, sentence, per_chunk):
            continue
        points.append(replace(sentence, relevance=round(value, 4)))
        if len(points) == max_points:
            break
    return points


def described_term(question: str) -> str | None:
    """The thing a "what is X?" question asks about (lowercased), None for another question."""
    ask = read_question(question)
    return None if ask.summary else ask.describes


def introduces(chunk: EvidenceChunk, term: str) -> bool:
    """Whether a passage holds a unit saying what `term` is (`describes`): a paper introduces
    its own system in its abstract or introduction ("we introduce ... Paper Plain")."""
    return any(describes(" ".join(chunk.text[u.start : u.end].split()), term) for u in chunk.units)


def states_findings(chunk: EvidenceChunk) -> bool:
    """Whether a passage is where a paper states what it found: its abstract or conclusions."""
    return chunk.role == "abstract" or chunk.kind == "abstract" or bool(_CONCLUSION_RE.search(chunk.section or ""))


_CONCLUSION_RE = re.compile(r"\b(?:conclusions?|concluding|summary)\b", re.IGNORECASE)
_FINDING_RE = re.compile(
    r"\b(?:we\s+(?:found|show(?:ed)?|demonstrate[ds]?|report(?:ed)?)|(?:was|were)\s+associated|significantly"
    r"|(?:increased|decreased|reduced|improved|revealed|identified|indicated)\b)",
    re.IGNORECASE,
)


def with_context(ask: Ask, context: str, before: Ask | None = None) -> Ask:
    """`ask` with a follow-up's carried terms among its words and named terms; for an ellipsis
    ("and for mechanical devices?"), the kind of answer the previous question (`before`, as read)
    wanted, where it says none of its own. Not the thing it asked about: what the ellipsis swaps
    in ("insertion complications" after "the failed retrieval rate") is that."""
    carried = read_question(context)
    return replace(
        ask,
        words=ask.words | carried.words,
        named=ask.named | carried.named,
        codes=ask.codes | carried.codes,
        papers=ask.papers | carried.papers,
        answer_type=ask.answer_type or (before.answer_type if before else None),
    )


def unmentioned_codes(ask: Ask, chunks: list[EvidenceChunk]) -> set[str]:
    """The codes and acronyms the question names that no passage mentions: a question about
    "the IC50" of a paper that reports none is not answered by its other values. Back matter
    mentions what its paper's title and authors name (`candidate_sentences`)."""
    texts = [
        f"{c.text} {_paper_names(c) if c.role == 'back_matter' else ''}".lower().translate(_DASHES) for c in chunks
    ]
    missing = set()
    for code in ask.codes:
        spelled = _spelled_out(code)
        if not any(code in text or (spelled is not None and spelled.search(text)) for text in texts):
            missing.add(code)
    return missing


_QUESTION_TOKEN_RE = re.compile(r"[A-Za-z][A-Za-z0-9'’-]*")
#: A question, as against a claim pasted to be checked ("Murine ... are auto-reactive"), whose
#: paraphrased words are no narrowing.
_QUESTION_RE = re.compile(
    r"\?\s*$|^\s*(?:what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|could|has|have|"
    r"had|should|would|will)\b",
    re.IGNORECASE,
)
#: Prepositions whose object narrows what is asked: "in children", "in Zambia", "on a tablet",
#: "(what did they conclude) about aspirin".
_NARROWING = frozenset("in for among amongst on within with during about regarding concerning".split())
_ARTICLES = frozenset("a an the".split())
_ASKING = frozenset("which what whose".split())
#: What opens a noun phrase, so that the word after it is a noun's modifier, not a verb.
_PHRASE_OPENERS = _ARTICLES | _NARROWING | _ASKING | frozenset("its their his her our my your of at to".split())
#: A modifier by its shape ("surgical", "genetic", "Spanish", "private"): "which surgical clinics" narrows.
_ADJECTIVE_RE = re.compile(r"(?:al|ic|ive|ous|ish|ary|ful|less|ian|ese|ate)$")
#: Common verbs that end in neither -ed nor -ing ("which organisation paid for ...").
_PLAIN_VERBS = frozenset(
    "paid made took gave came went found led ran run got had did said told kept held saw grew began chose drew "
    "fell felt left lost meant met put read sent set spent stood taught thought understood won wrote written given "
    "taken known seen done gone become brought bought built caught fought hit rose sold shown showed include includes "
    "use uses cause causes affect affects reach reaches give gives make makes take takes".split()
)
_LY_NOT_ADVERBS = frozenset("elderly early daily weekly monthly yearly quarterly hourly nightly family italy".split())
#: Words that narrow nothing about the papers: where the user keeps them, a change of topic, degree,
#: the whole of a thing ("and the whole hospital?" is "the entire KCH"), a time relative to now
#: ("compare with earlier reports" is "previously published rates"), importance ("the main barriers"
#: are what the paper found, "major constraints").
_UNNARROWING = frozenset(
    "zotero library collection collections folder different other same new very most more less least "
    "highly rather quite whole entire overall total general particular exact actual typical usual "
    "earlier later previous prior former recent current main key major primary principal important "
    # a superlative or a judgement: a passage says which problem was "major" or "cited by 41 %",
    # and that laziness and absenteeism are bad, without the word
    "best worst biggest largest greatest highest lowest smallest strongest weakest commonest brightest "
    "fastest slowest longest shortest earliest latest newest oldest simplest safest cheapest closest "
    "good bad positive negative".split()
)


def _verb(word: str) -> bool:
    """A verb by its form; a compound ("eye-tracking results", "heparin-induced") is a modifier."""
    return (word.endswith(("ed", "ing")) and "-" not in word) or word in _PLAIN_VERBS


def _narrows_nothing(word: str) -> bool:
    """A verb, an adverb, or a word that says nothing about the papers."""
    return _verb(word) or (word.endswith("ly") and word not in _LY_NOT_ADVERBS) or word in _UNNARROWING


def unmentioned_qualifiers(question: str, chunks: list[EvidenceChunk]) -> list[str]:
    """The words that narrow what the question asks about and that no passage says: a modifier
    of a word the passages do say ("the paediatric department", "pharmacy staff", "on antibiotic
    prophylaxis", "the audio narration feature", "eye-tracking results") or a word after a
    narrowing preposition ("in children?", "in Zambia approved", "in pregnant women", "conclude
    about aspirin"). The library answers about the department, the staff, the
    prophylaxis it has, not about the narrower thing asked, so the answer is a refusal, not the
    broader fact. A verb ("blocking", "came"), the thing a which-question asks for ("which
    organisation paid ...") and a word the question merely uses ("how pleased were ...") narrow
    nothing here."""
    if not _QUESTION_RE.search(question):
        return []
    said: set[str] = set()
    for chunk in chunks:
        said |= content_words(f"{chunk.text} {_paper_names(chunk)} {chunk.section or ''}")
    written = _QUESTION_TOKEN_RE.findall(question.translate(_DASHES))
    tokens = [t.lower().rstrip("'’") for t in written]
    missing = []
    for i, word in enumerate(tokens):
        if not _unsaid_modifier(word, said) or written[i].isupper():
            # (an acronym is the codes' check: "DVT" is said by "deep venous thrombosis")
            continue
        previous = tokens[i - 1] if i else ""
        if previous and missing and missing[-1] == previous:
            continue  # one narrowing phrase, named by its first word
        head = i + 1  # past the modifiers no passage says either: "the audio narration feature"
        while head < len(tokens) - 1 and _unsaid_modifier(tokens[head], said):
            head += 1
        after = tokens[head] if head < len(tokens) else ""
        said_after = not _verb(after) and bool(content_words(after) & said)  # a stop word has no content
        if previous in _ASKING and not _ADJECTIVE_RE.search(word) and not (said_after and after.endswith("s")):
            continue  # "which materials conduct heat?": the thing asked for; not "which insect cells"
        before = tokens[i - 2] if i > 1 and previous in _ARTICLES else previous
        start = i  # and a phrase opens past a word that narrows nothing: "the biggest paediatric unit"
        while start and tokens[start - 1] in _UNNARROWING:
            start -= 1
        opener = tokens[start - 1] if start else ""
        opens = any(w in _PHRASE_OPENERS or w.endswith(("'s", "’s")) for w in (previous, before, opener))
        if (opens and said_after) or before in _NARROWING:
            missing.append(word)
    return missing


def _is_said(word: str, said: set[str]) -> bool:
    """Whether the passages say `word` (a stop word says nothing, so counts as said): a
    compound by itself or by all its parts ("eye-tracking" is not said by "fast-tracking")."""
    stems = content_words(word)
    if "-" in word and stems:
        parts = [content_words(p) for p in word.split("-") if len(p) > 1]
        whole = {stem for stem in stems if "-" in stem} | content_words(word.replace("-", ""))
        return bool(whole & said) or all(p & said for p in parts)
    return not stems or bool(stems & said)


def _unsaid_modifier(word: str, said: set[str]) -> bool:
    """A word of three letters or more that the passages do not say and that may narrow."""
    return len(word) >= 3 and not _is_said(word, said) and not _narrows_nothing(word)


_ACRONYM_RE = re.compile(r"\b[A-Z]{3,6}(?=s?\b)")


def _acronym_words(text: str, question: str, codes: Collection[str]) -> set[str]:
    """The question's words a unit says by their acronym, defined or not where it is quoted:
    "HIT" says "heparin-induced thrombocytopenia", and "deep vein thrombosis" says "DVT"."""
    words: set[str] = set()
    asked = question.lower()
    for acronym in set(_ACRONYM_RE.findall(text)):
        spelled = _spelled_out(acronym.lower())
        m = spelled.search(asked) if spelled is not None else None
        if m is not None and not any(w in _STOP for w in re.split(r"[\s-]+", m.group(0))):
            words |= content_words(m.group(0))
    lowered = text.lower()
    for code in codes:
        spelled = _spelled_out(code)
        if spelled is not None and code not in lowered and spelled.search(lowered):
            words |= content_words(code)
    return words


@functools.lru_cache(maxsize=1024)
def _spelled_out(acronym: str) -> re.Pattern | None:
    """Words whose initials spell `acronym` ("deep vein thrombosis" for "dvt"); None for a code
    with digits, which is never spelled out."""
    letters = acronym.rstrip("s") if acronym.isalpha() else ""
    if len(letters) < 2:
        return None
    return re.compile(r"\b" + r"[\w'-]*[\s-]+".join(letters) + r"[\w'-]*")


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / max(len(a | b), 1)


@dataclass(frozen=True)
class ExtractiveAnswer:
    """The offline answer: the chosen points, or a refusal when there are none."""

    points: list[Sentence]

    @property
    def refused(self) -> bool:
        return not self.points

    def quotes(self) -> dict[int, list[float]]:
        """Per cited chunk index, the relevance of each of its quotes in answer order: every
        point is a verbatim unit of the passage it cites, one citation each."""
        found: dict[int, list[float]] = {}
        for point in self.points:
            found.setdefault(point.index, []).append(point.relevance)
        return found

    def pieces(self) -> Iterator[str]:
        """The answer piece by piece (the pieces are streamed as `delta` events)."""
        if self.refused:
            yield NOT_FOUND
            return
        yield ANSWER_INTRO
        for point in self.points:
            text = point.text
            end = text[-1] if text[-1] in ".!?" else "."
            body = text[:-1] if text[-1] in ".!?" else text
            yield f"- {body} [{point.index}]{end}\n"


def extractive_answer(
    question: str, chunks: list[EvidenceChunk], max_points: int = MAX_POINTS, earlier: Earlier | None = None
) -> ExtractiveAnswer:
    return ExtractiveAnswer(choose_points(question, chunks, max_points, earlier))


def format_candidates(candidates: list[Candidate]) -> str:
    lines = []
    for number, c in enumerate(candidates, start=1):
        authors = ", ".join(c.authors[:3]) + (" et al." if len(c.authors) > 3 else "")
        meta = ", ".join(x for x in (authors, str(c.year or ""), c.venue or "") if x)
        abstract = (c.abstract or "").strip()
        lines.append(f"{number}. {c.title} ({meta})" + (f"\n   {abstract[:600]}" if abstract else ""))
    return "\n".join(lines)


def candidates_answer(candidates: list[Candidate], dropped: int) -> Iterator[str]:
    if not candidates:
        yield "I found no new papers for this request"
        yield f" ({dropped} matches are already in your library)." if dropped else "."
        return
    yield f"I found {len(candidates)} candidate papers not yet in your library"
    yield f" ({dropped} already owned were left out):\n\n" if dropped else ":\n\n"
    for number, c in enumerate(candidates, start=1):
        authors = ", ".join(c.authors[:2]) + (" et al." if len(c.authors) > 2 else "")
        meta = "; ".join(x for x in (authors, str(c.year) if c.year else "", c.venue or "") if x)
        access = " — open access PDF available" if c.pdf_url else ""
        yield f"{number}. **{c.title}** ({meta}){access}\n"
    yield "\nTick the papers you want and import them into Zotero."
