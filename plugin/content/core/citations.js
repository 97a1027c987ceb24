// Citation tokens, masking and the two copy views of an answer.
//
// A line-by-line mirror of libs/citations/src/zocrates_citations/parsing.py (TOKEN_RE,
// masked_regions, mask, parse_indices, find_tokens, splice_tokens) and views.py
// (split_sources, to_author_year, strip_citations). Python's regex semantics are spelled out
// where JavaScript's differ: `\d` is any Unicode decimal digit (\p{Nd}), `\s` and
// str.isspace() use Python's whitespace set, `^`/`$` under re.MULTILINE only see "\n", and
// the conditional fence group is split in two patterns. tests/ui/test_citation_parity.py
// runs both implementations on the same texts and requires identical output.

/** Python's str.isspace() / `\s` set (Unicode). */
const PY_WS = "\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const WS = `[${PY_WS}]`;
const NOT_WS = `[^${PY_WS}]`;
// re.MULTILINE anchors: start of text or after "\n"; end of text or before "\n".
const BOL = "(?:(?<![\\s\\S])|(?<=\\n))";
const EOL = "(?=\\n|(?![\\s\\S]))";

const INDEX = `(?:(?:[Ee]|[Cc][Hh][Uu][Nn][Kk\\u212a])${WS}?)?\\p{Nd}{1,2}`;
const INDEX_LIST = `${INDEX}(?:${WS}*[,;]${WS}*${INDEX})*`;
const ASCII_TOKEN = `\\[(${INDEX_LIST})\\](?!\\()`;
const FULLWIDTH_TOKEN = `【(${INDEX_LIST})】`;

/** A citation token; group 1 (ASCII) or group 2 (fullwidth) holds the index list. */
export const TOKEN_RE = new RegExp(`${ASCII_TOKEN}|${FULLWIDTH_TOKEN}`, "gu");
const ASCII_TOKEN_RE = new RegExp(ASCII_TOKEN, "gu");
const FULLWIDTH_TOKEN_RE = new RegExp(FULLWIDTH_TOKEN, "gu");
const NUMBER_RE = /\p{Nd}+/gu;
const DECIMAL_RE = /^\p{Nd}+$/u;

/** Private-use filler: never whitespace, punctuation, a digit or a bracket. */
export const FILLER = "\ue000";

const FENCE_BT_RE = new RegExp(
  "[ \\t]{0,3}(`{3,})[^`\\n]*" + EOL +
  "(?:\\n[\\s\\S]*?" + BOL + "[ \\t]{0,3}\\1`*[ \\t]*" + EOL + "|[\\s\\S]*)",
  "y",
);
const FENCE_TL_RE = new RegExp(
  "[ \\t]{0,3}(~{3,})[^\\n]*" +
  "(?:\\n[\\s\\S]*?" + BOL + "[ \\t]{0,3}\\1~*[ \\t]*" + EOL + "|[\\s\\S]*)",
  "y",
);
const CODE_RE = /(?<!`)(`+)(?!`)(?:(?!\n[ \t]*\n)[\s\S])+?(?<!`)\1(?!`)/y;
const IMAGE_RE = /!\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\](?:\([^)\n]*\)|\[[^\]\n]*\])/y;
const REFDEF_RE = new RegExp(
  BOL + "[ \\t]{0,3}\\[[^\\]\\n]+\\]:[ \\t]*(?:<[^>\\n]*>|" + NOT_WS + "+)" +
  "(?:[ \\t]+(?:\"[^\"\\n]*\"|'[^'\\n]*'|\\([^)\\n]*\\)))?[ \\t]*" + EOL,
  "yu",
);
const CANDIDATE_RE = /[`~!]/g;

function matchAt(re, text, position) {
  re.lastIndex = position;
  return re.exec(text);
}

function fenceAt(text, start) {
  return matchAt(FENCE_BT_RE, text, start) || matchAt(FENCE_TL_RE, text, start);
}

function isBlankTabs(s) {
  return /^[ \t]*$/.test(s);
}

/** Fenced code, inline code, images and link reference definitions: [start, end, kind][]. */
export function maskedRegions(text) {
  let events = [];
  for (const m of text.matchAll(CANDIDATE_RE)) events.push([m.index, false]);
  const definitionLines = [];
  let colon = text.indexOf("]:");
  while (colon >= 0) {
    definitionLines.push([text.lastIndexOf("\n", colon - 1) + 1, true]);
    colon = text.indexOf("]:", colon + 2);
  }
  if (definitionLines.length) {
    events = events.concat(definitionLines).sort((a, b) => a[0] - b[0] || (a[1] ? 1 : 0) - (b[1] ? 1 : 0));
  }
  const regions = [];
  let cursor = 0;
  for (const [position, lineStart] of events) {
    if (position < cursor) continue;
    let m = null;
    let kind;
    let start;
    if (lineStart) {
      [m, kind, start] = [matchAt(REFDEF_RE, text, position), "refdef", position];
    } else if (text[position] === "!") {
      [m, kind, start] = [matchAt(IMAGE_RE, text, position), "image", position];
    } else {
      kind = "fence";
      start = text.lastIndexOf("\n", position - 1) + 1;
      if (start >= cursor && position - start <= 3 && isBlankTabs(text.slice(start, position))) {
        m = fenceAt(text, start);
      }
      if (m === null && text[position] === "`") {
        [m, kind, start] = [matchAt(CODE_RE, text, position), "code", position];
      }
    }
    if (m !== null) {
      const end = start + m[0].length;
      regions.push([start, end, kind]);
      cursor = end;
    }
  }
  return regions;
}

/** `{text, masked, readable}`: same-length views with masked regions replaced by filler. */
export function mask(text) {
  const regions = maskedRegions(text);
  if (!regions.length) return { text, masked: text, readable: text };
  const masked = [];
  const readable = [];
  let cursor = 0;
  for (const [start, end, kind] of regions) {
    masked.push(text.slice(cursor, start));
    readable.push(text.slice(cursor, start));
    const length = end - start;
    if (kind === "fence") {
      const cover = length >= 2 ? "\n" + FILLER.repeat(length - 2) + "\n" : FILLER.repeat(length);
      masked.push(cover);
      readable.push(cover);
    } else if (kind === "code") {
      masked.push(FILLER.repeat(length));
      const body = text.slice(start, end);
      const run = body.length - body.replace(/^`+/, "").length;
      readable.push(FILLER.repeat(run) + text.slice(start + run, end - run) + FILLER.repeat(run));
    } else {
      masked.push(FILLER.repeat(length));
      readable.push(FILLER.repeat(length));
    }
    cursor = end;
  }
  masked.push(text.slice(cursor));
  readable.push(text.slice(cursor));
  return { text, masked: masked.join(""), readable: readable.join("") };
}

/** The numeric value of a run of Unicode decimal digits (Python's int()). */
function digitsValue(digits) {
  let value = 0;
  for (const ch of digits) {
    const cp = ch.codePointAt(0);
    let zero = cp;
    // Nd digits come in runs of ten starting at zero; walk back to the run's start.
    while (zero > 0 && DECIMAL_RE.test(String.fromCodePoint(zero - 1))) zero -= 1;
    value = value * 10 + ((cp - zero) % 10);
  }
  return value;
}

/** The distinct in-range indices of a token's index list, in written order. */
export function parseIndices(indexList, nChunks) {
  if (DECIMAL_RE.test(indexList)) {
    const n = digitsValue(indexList);
    return n >= 1 && n <= nChunks ? [n] : [];
  }
  const seen = [];
  for (const m of indexList.matchAll(NUMBER_RE)) {
    const n = digitsValue(m[0]);
    if (n >= 1 && n <= nChunks && !seen.includes(n)) seen.push(n);
  }
  return seen;
}

/** Every citation token in masked text, in document order: {start, end, indices, valid}. */
export function findTokens(masked, nChunks, isValidIndex = null) {
  let matches = [...masked.matchAll(ASCII_TOKEN_RE)];
  if (masked.includes("【")) {
    matches = matches.concat([...masked.matchAll(FULLWIDTH_TOKEN_RE)]).sort((a, b) => a.index - b.index);
  }
  return matches.map((m) => {
    let indices = parseIndices(m[1], nChunks);
    if (isValidIndex) indices = indices.filter(isValidIndex);
    return { start: m.index, end: m.index + m[0].length, indices, valid: indices.length > 0 };
  });
}

/** The canonical form of a token: `[1]` or `[1, 2]`. */
export function formatToken(indices) {
  return "[" + indices.join(", ") + "]";
}

const CLOSERS = new Set([".", ",", ";", ":", "!", "?", ")"]);
const IS_SPACE_RE = new RegExp(`^${WS}+$`);

export function pyIsSpace(s) {
  return s.length > 0 && IS_SPACE_RE.test(s);
}

function pyRstrip(s) {
  return s.replace(new RegExp(`${WS}+$`), "");
}

export function pyStrip(s) {
  return pyRstrip(s).replace(new RegExp(`^${WS}+`), "");
}

/**
 * Rewrite tokens in the original text; `replace(token)` returns new text or null to remove.
 * A removed token takes the horizontal whitespace before it when punctuation, a line end or
 * whitespace follows, and the whitespace after it when it opened a line.
 */
export function spliceTokens(text, tokens, replace) {
  const out = [];
  let cursor = 0;
  for (const token of tokens) {
    const replacement = replace(token);
    let before = text.slice(cursor, token.start);
    if (replacement === null || replacement === undefined) {
      const following = text.slice(token.end, token.end + 1);
      if (!following || pyIsSpace(following) || CLOSERS.has(following)) {
        before = before.replace(/[ \t]+$/, "");
      }
      out.push(before);
      cursor = token.end;
      const atLineStart = token.start === 0 || text[token.start - 1] === "\n";
      if (atLineStart) {
        while (cursor < text.length && (text[cursor] === " " || text[cursor] === "\t")) cursor += 1;
      }
    } else {
      out.push(before, replacement);
      cursor = token.end;
    }
  }
  out.push(text.slice(cursor));
  return out.join("");
}

const SOURCES_RE = new RegExp(
  BOL + "(?:#{1,2}[ \\t]+(?:Cited Sources|Other Considered Sources)[ \\t]*" + EOL +
  '|<details class="considered-sources">)',
);
const CONSIDERED_RE = new RegExp(
  BOL + '(?:#{1,2}[ \\t]+Other Considered Sources[ \\t]*' + EOL + '|<details class="considered-sources">)',
);
// A source entry's hook: the tag holding data-item-key (and data-library-id, "user" when absent).
const SOURCE_TAG_RE = /<[^<>]*\bdata-item-key="([^"]*)"[^<>]*>/g;
const LIBRARY_ATTR_RE = /\bdata-library-id="([^"]*)"/;
const MAX_INDEX = 99;

/** `[prose, sources]`: the answer and its source sections (found outside code only). */
export function splitSources(text) {
  const m = SOURCES_RE.exec(mask(text).masked);
  if (!m) return [text, ""];
  return [text.slice(0, m.index), text.slice(m.index)];
}

/**
 * `[prose, sources]` of a turn record: its own `prose` and `sources` (TurnRecord version 2).
 * Only a record from a gateway older than that lacks them; its `text` is split as it was.
 */
export function turnParts(record) {
  if (typeof record?.prose === "string") return [record.prose, record.sources || ""];
  return splitSources(record?.text || "");
}

const ENTITIES = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

/** html.unescape for the entities Python's html.escape produces (and numeric ones). */
export function unescapeHtml(s) {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-zA-Z]+);/g, (whole, body) => {
    if (body[0] === "#") {
      const cp = body[1] === "x" || body[1] === "X" ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
      return cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : whole;
    }
    return ENTITIES[body] ?? whole;
  });
}

/**
 * Which source a citation or reference names: its library and key (keys are unique only
 * within one library; turns stored before group libraries carry no library_id: "user").
 */
export function sourceId(ref) {
  return `${ref.library_id || "user"}/${ref.item_key}`;
}

/** `Smith et al., 2020`: the in-text label of a citation (authors_year in authors.py). */
export function authorYear(source) {
  const head = source.authors || pyStrip(source.title || "") || "Untitled source";
  return `${head}, ${source.year ?? "n.d."}`;
}

/** `(heading, title, publication)` of a bibliography entry (entry_parts in resolve.py). */
export function entryParts(ref) {
  const title = pyStrip(ref.title || "");
  const year = ref.year ?? "n.d.";
  const publication = pyStrip(ref.publication || "");
  if (ref.authors) return [`${ref.authors} (${year})`, title, publication];
  return [`${title || "Untitled source"} (${year})`, "", publication];
}

function emphasised(text, open, close) {
  const stop = /[.?!]$/.test(text) ? "" : ".";
  return `${open}${text}${close}${stop}`;
}

function bibliography(cited, considered) {
  const entry = (ref) => {
    const [heading, title, publication] = entryParts(ref);
    const parts = [`**${heading}**.`];
    if (title) parts.push(emphasised(title, "*", "*"));
    if (publication) parts.push(emphasised(publication, "", ""));
    return "- " + parts.join(" ");
  };
  const sections = [];
  if (cited.length) sections.push(["# Cited Sources", ...cited.map(entry)].join("\n"));
  if (considered.length) sections.push(["## Other Considered Sources", ...considered.map(entry)].join("\n"));
  return sections.join("\n\n");
}

function join(prose, bib, hadSources) {
  if (hadSources || bib) prose = pyRstrip(prose);
  if (!bib) return prose;
  return prose ? `${prose}\n\n${bib}` : bib;
}

function citationsByIndex(citations) {
  const map = new Map();
  for (const c of citations || []) map.set(c.index, c);
  return map;
}

function authorYearProse(prose, byIndex) {
  const view = mask(prose);
  const tokens = findTokens(view.masked, MAX_INDEX, (i) => byIndex.has(i));
  if (!tokens.length) return prose;
  return spliceTokens(prose, tokens, (token) => {
    if (!token.valid) return null;
    const byKey = new Map();
    for (const i of token.indices) {
      const c = byIndex.get(i);
      // By item key alone, as views.py does (keys of two libraries colliding is left to it).
      if (!byKey.has(c.item_key)) byKey.set(c.item_key, c);
    }
    const label = "(" + [...byKey.values()].map(authorYear).join("; ") + ")";
    const before = prose.slice(token.start - 1, token.start);
    return !before || pyIsSpace(before) || "([".includes(before) ? label : " " + label;
  });
}

/**
 * The answer copied with citations visible: tokens become `(Author, Year)` and the source
 * sections, read from their `data-item-key` hooks, a clean two-tier markdown bibliography.
 * `citations` and `references` come from the turn record (TurnRecord.json).
 */
export function toAuthorYear(text, citations, references) {
  const [prose, sources] = splitSources(text);
  return authorYearCopy(prose, sources, citations, references);
}

/** A turn record copied with citations visible (`toAuthorYear` of its text, from its parts). */
export function recordWithAuthorYear(record) {
  const [prose, sources] = turnParts(record);
  return authorYearCopy(prose, sources, record.citations, record.references);
}

function authorYearCopy(prose, sources, citations, references) {
  const byIndex = citationsByIndex(citations);
  const refsByKey = new Map();
  for (const ref of [...(references?.cited || []), ...(references?.considered || [])]) {
    if (!refsByKey.has(sourceId(ref))) refsByKey.set(sourceId(ref), ref);
  }
  const keys = (from, to) => [...sources.slice(from, to).matchAll(SOURCE_TAG_RE)].map((m) =>
    sourceId({ item_key: unescapeHtml(m[1]), library_id: unescapeHtml(LIBRARY_ATTR_RE.exec(m[0])?.[1] || "") }));
  let citedKeys = [];
  let consideredKeys = [];
  if (sources) {
    const m = CONSIDERED_RE.exec(sources);
    const split = m ? m.index : sources.length;
    citedKeys = keys(0, split);
    consideredKeys = keys(split, sources.length);
  }
  const refs = (ks) => ks.filter((k) => refsByKey.has(k)).map((k) => refsByKey.get(k));
  return join(authorYearProse(prose, byIndex), bibliography(refs(citedKeys), refs(consideredKeys)), Boolean(sources));
}

/** The answer copied with citations hidden: no tokens, no source sections, code untouched. */
export function stripCitations(text) {
  return strippedCopy(...splitSources(text));
}

/** A turn record copied with citations hidden (`stripCitations` of its text, from its parts). */
export function recordWithoutCitations(record) {
  return strippedCopy(...turnParts(record));
}

function strippedCopy(prose, sources) {
  const tokens = findTokens(mask(prose).masked, MAX_INDEX);
  if (tokens.length) prose = spliceTokens(prose, tokens, () => null);
  return join(prose, "", Boolean(sources));
}

/** Whether a turn has anything the citations toggle would act on (hasMessageCitations). */
export function hasCitations(record) {
  if (!record) return false;
  if ((record.citations || []).length) return true;
  const refs = record.references || {};
  if ((refs.cited || []).length || (refs.considered || []).length) return true;
  const [prose, sources] = turnParts(record);
  if (sources) return true;
  return findTokens(mask(prose).masked, MAX_INDEX).some((t) => t.valid);
}
