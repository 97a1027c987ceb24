// An answer as it lives on in Zotero: a note (HTML in the subset Zotero's note editor keeps:
// p, h1-h3, ul/ol/li, a, strong, em, blockquote) with author-year citations linked to their
// items and the bibliography of the cited sources; the same answer as Markdown for the web
// page, which has no Zotero to write into; and the provenance note an item imported from
// discovery carries. Everything taken from the record is escaped. No DOM and no Zotero here.

import { authorYear, entryParts, findTokens, mask, sourceId, spliceTokens, turnParts } from "./citations.js";
import { escapeHtml, pagesText } from "./format.js";
import { proseAsChosen } from "./unsupported.js";

const MAX_INDEX = 99;
const OPEN = "\ue001";
const CLOSE = "\ue002";
const PLACEHOLDER_RE = /\ue001(\d+)\ue002/g;


/**
 * The link that selects an item in Zotero: `zotero://select/library/items/KEY` in My Library,
 * `zotero://select/groups/<groupID>/items/KEY` in a group library (`library_id` `group-<groupID>`;
 * missing is My Library, as in turns stored before group libraries).
 */
export function zoteroSelectUri(ref) {
  const key = encodeURIComponent(ref.item_key);
  const group = /^group-(\d+)$/.exec(ref.library_id || "");
  return group ? `zotero://select/groups/${group[1]}/items/${key}` : `zotero://select/library/items/${key}`;
}

/**
 * The sources the answer cites, in the order of its bibliography: `references.cited`, or for a
 * record without it the distinct items of its citations.
 */
export function citedSources(record) {
  const cited = record?.references?.cited || [];
  if (cited.length) return cited;
  const byId = new Map();
  for (const c of record?.citations || []) if (!byId.has(sourceId(c))) byId.set(sourceId(c), c);
  return [...byId.values()];
}

/**
 * `(Smith et al., 2020, p. 4; Jones, 2019)` parts of one citation token: [{label, uri}], one per
 * item, with the page of its first passage cited there when the passage has one.
 */
function tokenSources(token, byIndex) {
  const bySource = new Map();
  for (const i of token.indices) {
    const c = byIndex.get(i);
    if (c && !bySource.has(sourceId(c))) {
      bySource.set(sourceId(c), { label: [authorYear(c), pagesText(c.pages)].filter(Boolean).join(", "), uri: zoteroSelectUri(c) });
    }
  }
  return [...bySource.values()];
}

/**
 * The prose with each citation token replaced by `render(sources)` (null drops it), a space
 * before it unless one, or an opening bracket, is there already; tokens in code are left alone.
 */
function replaceTokens(prose, citations, render) {
  const byIndex = new Map((citations || []).map((c) => [c.index, c]));
  const tokens = findTokens(mask(prose).masked, MAX_INDEX, (i) => byIndex.has(i));
  return spliceTokens(prose, tokens, (token) => {
    const sources = tokenSources(token, byIndex);
    if (!sources.length) return null;
    const before = prose.slice(token.start - 1, token.start);
    return (!before || /\s/.test(before) || "([".includes(before) ? "" : " ") + render(sources);
  });
}

// A source read only by its abstract, as the sidebar marks it.
const ABSTRACT_ONLY = "(abstract only)";

const stop = (text) => (/[.?!]$/.test(text) ? "" : ".");

/**
 * The answer as a Zotero note: the question as its heading (Zotero titles a note by its first
 * line), the prose with each citation an author-year link to its item (with the passage's page
 * when it has one), unsupported claims as `mode` says (core/unsupported.js `proseAsChosen`: "mark",
 * "remove" or "leave", the default), and "References" listing the
 * cited sources, each linked (a source read only by its abstract says so). `md` is a markdown-it instance, only parsed with: its tokens are
 * written out in the note editor's subset (deeper headings as h3, code and math as their text,
 * a table row as a paragraph), and everything from the record is escaped.
 */
export function answerNoteHtml(record, { md, mode = "leave" } = {}) {
  const links = [];
  const own = proseAsChosen(record, turnParts(record)[0], mode).replace(/[\ue001\ue002]/g, "");
  const prose = replaceTokens(own, record.citations, (sources) => {
    links.push(sources);
    return `${OPEN}${links.length - 1}${CLOSE}`;
  });
  const linked = (text) => escapeHtml(text).replace(PLACEHOLDER_RE, (_, n) =>
    "(" + links[Number(n)].map((s) => `<a href="${escapeHtml(s.uri)}">${escapeHtml(s.label)}</a>`).join("; ") + ")");
  let html = record.question ? `<h1>${escapeHtml(oneLine(record.question))}</h1>\n` : "";
  html += subsetHtml(md.parse(prose, {}), linked);
  const sources = citedSources(record);
  if (sources.length) {
    html += "<h2>References</h2>\n<ul>\n" + sources.map((ref) => {
      const [heading, title, publication] = entryParts(ref);
      return `<li><a href="${escapeHtml(zoteroSelectUri(ref))}">${escapeHtml(heading)}</a>.` +
        (title ? ` <em>${escapeHtml(title)}</em>${stop(title)}` : "") +
        (publication ? ` ${escapeHtml(publication)}${stop(publication)}` : "") + (ref.abstract_only ? ` ${ABSTRACT_ONLY}` : "") + "</li>\n";
    }).join("") + "</ul>\n";
  }
  return html;
}

/**
 * The same answer as Markdown (the web page's download): the question as a heading, citations
 * as `([Smith et al., 2020](zotero://select/...))` links, unsupported claims as `mode` says,
 * and "References" with each cited source linked.
 */
export function answerNoteMarkdown(record, { mode = "leave" } = {}) {
  const prose = replaceTokens(proseAsChosen(record, turnParts(record)[0], mode), record.citations, (sources) =>
    "(" + sources.map((s) => `[${linkText(s.label)}](${s.uri})`).join("; ") + ")");
  const parts = [];
  if (record.question) parts.push(`# ${oneLine(record.question)}`);
  parts.push(prose.trim());
  const sources = citedSources(record);
  if (sources.length) {
    parts.push("## References\n\n" + sources.map((ref) => {
      const [heading, title, publication] = entryParts(ref);
      return `- [${linkText(heading)}](${zoteroSelectUri(ref)}).` + (title ? ` *${title}*${stop(title)}` : "") +
        (publication ? ` ${publication}${stop(publication)}` : "") + (ref.abstract_only ? ` ${ABSTRACT_ONLY}` : "");
    }).join("\n"));
  }
  return parts.filter(Boolean).join("\n\n") + "\n";
}

function oneLine(text) {
  return String(text).replace(/\s+/g, " ").trim();
}

/** Text inside a Markdown link's brackets: its brackets and backslashes escaped. */
function linkText(text) {
  return String(text).replace(/[\\[\]]/g, "\\$&");
}

// markdown-it block tokens -> the note subset; `text(s)` writes inline text (escaped, links in).
const BLOCK_TAGS = { paragraph: "p", bullet_list: "ul", ordered_list: "ol", list_item: "li", blockquote: "blockquote" };

function subsetHtml(tokens, text) {
  let out = "";
  let cells = 0;
  for (const t of tokens) {
    const kind = t.type.replace(/_(open|close)$/, "");
    if (kind === "heading") {
      const level = Math.min(3, Number(t.tag.slice(1)) || 3);
      out += t.nesting === 1 ? `<h${level}>` : `</h${level}>\n`;
    } else if (BLOCK_TAGS[kind]) {
      if (kind === "paragraph" && t.hidden) continue; // a tight list's items hold their text directly
      out += t.nesting === 1 ? `<${BLOCK_TAGS[kind]}>` : `</${BLOCK_TAGS[kind]}>\n`;
    } else if (kind === "tr") {
      cells = 0;
      out += t.nesting === 1 ? "<p>" : "</p>\n";
    } else if ((kind === "th" || kind === "td") && t.nesting === 1) {
      if (cells++) out += " | ";
    } else if (t.type === "inline") {
      out += inlineHtml(t.children || [], text);
    } else if (t.type === "fence" || t.type === "code_block" || t.type === "math_block") {
      out += `<p>${text(t.content.trim())}</p>\n`;
    }
  }
  return out;
}

function inlineHtml(children, text) {
  let out = "";
  for (const t of children) {
    if (t.type === "text") out += text(t.content);
    else if (t.type === "softbreak" || t.type === "hardbreak") out += " ";
    else if (t.type === "code_inline") out += text(t.content);
    else if (t.type === "math_inline") out += text(`$${t.content}$`);
    else if (t.type === "strong_open" || t.type === "strong_close") out += t.nesting === 1 ? "<strong>" : "</strong>";
    else if (t.type === "em_open" || t.type === "em_close") out += t.nesting === 1 ? "<em>" : "</em>";
    else if (t.type === "link_open") {
      const href = t.attrGet("href") || "";
      out += /^(https?:|mailto:|zotero:)/i.test(href) ? `<a href="${escapeHtml(href)}">` : "<a>";
    } else if (t.type === "link_close") out += "</a>";
    else if (t.type === "image") out += text(t.content || "");
  }
  return out.replace(/<a>([\s\S]*?)<\/a>/g, "$1");
}

// ---- Provenance: what an item imported from discovery keeps of how it was found.

const CANDIDATE_RE = /\b[Cc]andidates?\s+(\d{1,2}(?:\s*(?:,|and|&)\s*\d{1,2})*)/g;
const LIST_ITEM_RE = /^\s*(\d{1,2})[.)]\s+(.+)$/;
// A sentence ends at . ! or ? before a space and a capital, a quote or a digit ("et al. (2021)" does not).
const SENTENCE_END_RE = /(?<=[.!?])\s+(?=[A-Z0-9“"])/;

/**
 * What a discovery overview says about each of its `count` candidates: an array of `count`
 * lists of sentences. A sentence mentions candidate n when it names it ("Candidate 2",
 * "candidates 2 and 3") or cites it (`[2]`); an overview that does neither, as the offline
 * one, lists the candidates numbered ("2. **Title** (…)"), and that line is what it says.
 * Notes after the overview (`_Note: …_`) are not about a candidate.
 */
export function candidateMentions(prose, count) {
  const said = Array.from({ length: count }, () => []);
  const add = (n, sentence) => {
    const clean = plainSentence(sentence, count);
    if (n >= 1 && n <= count && clean && !said[n - 1].includes(clean)) said[n - 1].push(clean);
  };
  const lines = String(prose || "").split("\n").filter((line) => !/^\s*_Note: /.test(line));
  for (const line of lines) {
    for (const sentence of line.split(SENTENCE_END_RE)) {
      for (const m of sentence.matchAll(CANDIDATE_RE)) for (const n of m[1].match(/\d+/g)) add(Number(n), sentence);
      for (const token of findTokens(mask(sentence).masked, count)) for (const n of token.indices) add(n, sentence);
    }
  }
  if (said.some((s) => s.length)) return said;
  for (const line of lines) {
    const m = LIST_ITEM_RE.exec(line);
    if (m) add(Number(m[1]), m[2]);
  }
  return said;
}

/** A sentence as the note quotes it: no citation tokens, no bold or list markers, one line. */
function plainSentence(sentence, count) {
  const tokens = findTokens(mask(sentence).masked, count);
  const text = spliceTokens(sentence, tokens, () => null);
  return oneLine(text.replace(/\*\*|__/g, "").replace(/^\s*(?:[-*+]|\d{1,2}[.)])\s+/, ""));
}

/**
 * The provenance note of a candidate imported from the discovery turn `record`: the question
 * that found it, the date it was found (ISO, from the turn; `now` for a turn without one), and
 * what the overview said about it.
 */
export function provenanceNoteHtml(record, candidate, now = new Date()) {
  const index = (record.candidates || []).findIndex((c) => c.candidate_id === candidate.candidate_id);
  const said = index >= 0 ? candidateMentions(turnParts(record)[0], record.candidates.length)[index] : [];
  const when = new Date(record.completed_at || record.created_at || now);
  const date = (Number.isNaN(when.getTime()) ? now : when).toISOString().slice(0, 10);
  return "<h2>Found with Zocrates</h2>\n" +
    `<p><strong>Question:</strong> ${escapeHtml(oneLine(record.question || ""))}</p>\n` +
    `<p><strong>Found:</strong> ${date}</p>\n` +
    (said.length
      ? `<p><strong>What the overview said:</strong></p>\n<blockquote>${said.map((s) => `<p>${escapeHtml(s)}</p>`).join("")}</blockquote>\n`
      : "<p>The overview did not discuss it beyond finding it.</p>\n");
}
