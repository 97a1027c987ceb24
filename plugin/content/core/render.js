// Turn records to HTML strings: markdown (markdown-it, raw HTML disabled) with KaTeX math,
// citation tokens as author-year pills, and the two source tiers rendered from the record's
// structured `references` (never from HTML in the text, so nothing the model wrote can run
// and no item key reaches visible text). The libraries are injected so Node tests and the
// browser use the very same code: `createRenderer({ markdownit, katex })`.

import { findTokens, mask, splitSources, turnParts } from "./citations.js";
import { escapeAttr, escapeHtml, pillLabel, pillTooltip } from "./format.js";
import { entryParts } from "./citations.js";
import { passageLocators } from "./evidence.js";
import { DEFAULT_UNSUPPORTED, insertAt, unsupportedClaims, unsupportedTooltip, withoutClaims } from "./unsupported.js";

const OPEN = "\ue001";
const CLOSE = "\ue002";
const PLACEHOLDER_RE = /\ue001(\d+)\ue002/g;
const MARK_OPEN = "\ue003";
const MARK_CLOSE = "\ue004";
const MARK_RE = /\ue003(\d+)\ue004/g;
const PRIVATE_RE = /[\ue001-\ue004]/g;
const MAX_INDEX = 99;

/** A markdown-it plugin: `$…$`, `\(…\)` inline and `$$…$$`, `\[…\]` display math via KaTeX. */
export function mathPlugin(md, katex) {
  const render = (tex, displayMode) => {
    try {
      return katex.renderToString(tex, { displayMode, throwOnError: false, output: "htmlAndMathml", strict: "ignore" });
    } catch (exc) {
      return `<code class="math-error" title="${escapeAttr(exc.message)}">${escapeHtml(tex)}</code>`;
    }
  };

  md.inline.ruler.before("escape", "math_inline", (state, silent) => {
    const src = state.src;
    const pos = state.pos;
    let open;
    let close;
    let display = false;
    if (src.startsWith("$$", pos)) [open, close, display] = ["$$", "$$", true];
    else if (src[pos] === "$") [open, close] = ["$", "$"];
    else if (src.startsWith("\\(", pos)) [open, close] = ["\\(", "\\)"];
    else if (src.startsWith("\\[", pos)) [open, close, display] = ["\\[", "\\]", true];
    else return false;
    const start = pos + open.length;
    if (open === "$") {
      // Pandoc's rule: no space after the opening $, none before the closing $, no digit after it.
      if (start >= src.length || /\s/.test(src[start])) return false;
      let end = start;
      for (;;) {
        end = src.indexOf("$", end);
        if (end < 0) return false;
        if (src[end - 1] === "\\") {
          end += 1;
          continue;
        }
        if (/\s/.test(src[end - 1]) || /[0-9]/.test(src[end + 1] || "")) return false;
        break;
      }
      if (end === start) return false;
      if (!silent) {
        const token = state.push("math_inline", "math", 0);
        token.content = src.slice(start, end);
        token.meta = { display: false };
      }
      state.pos = end + 1;
      return true;
    }
    const end = src.indexOf(close, start);
    if (end < 0 || end === start) return false;
    if (!silent) {
      const token = state.push("math_inline", "math", 0);
      token.content = src.slice(start, end);
      token.meta = { display };
    }
    state.pos = end + close.length;
    return true;
  });

  md.block.ruler.before("fence", "math_block", (state, startLine, endLine, silent) => {
    const lineText = (n) => state.src.slice(state.bMarks[n] + state.tShift[n], state.eMarks[n]);
    const first = lineText(startLine);
    let close;
    if (first.startsWith("$$")) close = "$$";
    else if (first.startsWith("\\[")) close = "\\]";
    else return false;
    const rest = first.slice(2);
    let body = [];
    let line = startLine;
    const inline = rest.indexOf(close);
    if (inline >= 0) {
      if (rest.slice(inline + 2).trim()) return false;
      body = [rest.slice(0, inline)];
    } else {
      body.push(rest);
      let found = false;
      for (line = startLine + 1; line < endLine; line += 1) {
        const text = lineText(line);
        const at = text.indexOf(close);
        if (at >= 0) {
          body.push(text.slice(0, at));
          found = true;
          break;
        }
        body.push(text);
      }
      if (!found) return false;
    }
    if (silent) return true;
    const token = state.push("math_block", "math", 0);
    token.block = true;
    token.content = body.join("\n").trim();
    token.map = [startLine, line + 1];
    state.line = line + 1;
    return true;
  });

  md.renderer.rules.math_inline = (tokens, idx) => {
    const { content, meta } = tokens[idx];
    return meta.display ? `<span class="math-display">${render(content, true)}</span>` : render(content, false);
  };
  md.renderer.rules.math_block = (tokens, idx) => `<div class="math-block">${render(tokens[idx].content, true)}</div>\n`;
}

export function createRenderer({ markdownit, katex }) {
  const md = markdownit({ html: false, linkify: false, typographer: false, breaks: false });
  mathPlugin(md, katex);
  // Links open outside the sidebar and never carry the opener.
  const defaultLink = md.renderer.rules.link_open || ((tokens, idx, options, env, self) => self.renderToken(tokens, idx, options));
  md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
    tokens[idx].attrSet("target", "_blank");
    tokens[idx].attrSet("rel", "noopener noreferrer");
    return defaultLink(tokens, idx, options, env, self);
  };

  /** Markdown (with math) to HTML; private-use placeholder characters are removed first. */
  function markdown(text) {
    return md.render(String(text || "").replace(PRIVATE_RE, ""));
  }

  function inlineMarkdown(text) {
    return md.renderInline(String(text || "").replace(PRIVATE_RE, ""));
  }

  /**
   * Prose with citation tokens as pills. `pillFor(token, ordinal)` returns the pill HTML
   * for a token, or null to drop it.
   */
  function proseWithPills(prose, pillFor) {
    const clean = String(prose || "").replace(/[\ue001\ue002]/g, ""); // \ue003/\ue004: renderTurn's markers
    const tokens = findTokens(mask(clean).masked, MAX_INDEX);
    const pills = [];
    let out = "";
    let cursor = 0;
    tokens.forEach((token, ordinal) => {
      const html = pillFor(token, ordinal);
      out += clean.slice(cursor, token.start);
      if (html !== null) {
        out += OPEN + pills.length + CLOSE;
        pills.push(html);
      }
      cursor = token.end;
    });
    out += clean.slice(cursor);
    return md.render(out).replace(PLACEHOLDER_RE, (_, n) => pills[Number(n)] ?? "");
  }

  return { md, markdown, inlineMarkdown, proseWithPills, renderTurn, renderStreaming, sourcesHtml, pillHtml, unsupportedMarkerHtml };

  /**
   * The body of a finished turn (the `done` payload or a rehydrated turn): one HTML string.
   * `unsupported`: how claims whose every citation failed are shown ("mark", "remove", "leave").
   */
  function renderTurn(record, { unsupported = DEFAULT_UNSUPPORTED } = {}) {
    let [prose] = turnParts(record);
    const claims = unsupportedClaims(record, prose);
    let markers = [];
    if (claims.length && unsupported === "remove") prose = withoutClaims(prose, claims);
    else if (claims.length && unsupported === "mark") {
      prose = insertAt(prose, claims.map((c) => c.at), (i) => MARK_OPEN + i + MARK_CLOSE, (s) => s.replace(PRIVATE_RE, ""));
      markers = claims.map(unsupportedMarkerHtml);
    }
    const byIndex = new Map((record.citations || []).map((c) => [c.index, c]));
    const candidates = record.candidates || [];
    const seen = new Map(); // index -> appearances so far
    const locators = passageLocators(record.citations);
    const body = proseWithPills(prose, (token) => {
      if (!byIndex.size && candidates.length) return candidatePills(token, candidates);
      const present = token.indices.filter((i) => byIndex.has(i));
      if (!present.length) return null;
      const pills = present.map((index) => {
        const citation = byIndex.get(index);
        const n = seen.get(index) || 0;
        seen.set(index, n + 1);
        const shown = (citation.occurrences || []).filter((o) => o.verdict !== "DEMOTED");
        const occurrence = shown[n] || shown[shown.length - 1] || null;
        return pillHtml(citation, occurrence, locators.get(index));
      });
      return pills.length > 1
        ? `<span class="citation-pill-group">${pills.join('<span class="pill-sep">; </span>')}</span>`
        : pills[0];
    });
    return body.replace(MARK_RE, (_, n) => markers[Number(n)] ?? "") + sourcesHtml(record.references);
  }

  /** The marker of an unsupported claim: its tooltip gives the best probability; it opens its inspector row. */
  function unsupportedMarkerHtml(claim) {
    const first = (claim.occurrences || [])[0] || {};
    return `<span class="unsupported-marker" role="button" tabindex="0" data-citation-idx="${Number(first.index) || 0}" ` +
      `data-citation-occ="${Number(first.occurrence) || 0}" title="${escapeAttr(unsupportedTooltip(claim))}">unsupported</span>`;
  }

  /** A citation pill; `locator` tells apart passages of one item cited in one answer (`passageLocators`). */
  function pillHtml(citation, occurrence, locator = "") {
    const occ = occurrence ? occurrence.occurrence : 1;
    return `<span class="citation-pill" role="button" tabindex="0" data-citation-idx="${citation.index}" ` +
      `data-citation-occ="${occ}" title="${escapeAttr(pillTooltip(citation, occurrence))}">` +
      `${escapeHtml(pillLabel(citation))}${locator ? `<span class="pill-locator"> · ${escapeHtml(locator)}</span>` : ""}</span>`;
  }

  function candidatePills(token, candidates) {
    const pills = token.indices
      .filter((i) => i <= candidates.length)
      .map((i) => {
        const c = candidates[i - 1];
        const who = (c.authors || [])[0] ? `${lastName(c.authors[0])}${c.authors.length > 1 ? " et al." : ""}` : c.title;
        return `<span class="candidate-pill" role="button" tabindex="0" data-candidate-idx="${i}" ` +
          `title="${escapeAttr(c.title)}">${escapeHtml(`${who} (${c.year ?? "n.d."})`)}</span>`;
      });
    if (!pills.length) return null;
    return pills.length > 1 ? `<span class="citation-pill-group">${pills.join('<span class="pill-sep">; </span>')}</span>` : pills[0];
  }

  /** Text still streaming: no verdicts yet, so tokens show as neutral numbered pills. */
  function renderStreaming(text) {
    const [prose] = splitSources(text || "");
    return proseWithPills(prose, (token) =>
      token.valid ? `<span class="citation-pill pending" title="Being verified">${token.indices.join(", ")}</span>` : null);
  }

  function sourcesHtml(references) {
    const cited = references?.cited || [];
    const considered = references?.considered || [];
    if (!cited.length && !considered.length) return "";
    const entry = (ref) => {
      const [heading, title, publication] = entryParts(ref);
      const parts = [`<strong>${escapeHtml(heading)}</strong>.`];
      if (title) parts.push(`<em>${inlineMarkdown(title)}</em>${/[.?!]$/.test(title) ? "" : "."}`);
      if (publication) parts.push(`${escapeHtml(publication)}${/[.?!]$/.test(publication) ? "" : "."}`);
      if (ref.abstract_only) parts.push('<span class="abstract-only" title="Only the abstract of this item was read: no passage of its file">(abstract only)</span>');
      return `<li><span class="zotero-source-link" role="link" tabindex="0" data-item-key="${escapeAttr(ref.item_key)}" ` +
        `data-library-id="${escapeAttr(ref.library_id || "user")}">${parts.join(" ")}</span></li>`;
    };
    let html = '<section class="zocrates-sources-section">';
    if (cited.length) {
      html += `<h3 class="sources-heading">Cited Sources</h3><ul class="sources-list cited">${cited.map(entry).join("")}</ul>`;
    }
    if (considered.length) {
      const noun = considered.length === 1 ? "source" : "sources";
      html += '<h4 class="sources-heading considered">Other Considered Sources</h4>' +
        `<details class="considered-sources"><summary>${escapeHtml(references.considered_summary ||
          `${considered.length} additional ${noun} analyzed by search agent`)}</summary>` +
        `<ul class="sources-list considered">${considered.map(entry).join("")}</ul></details>`;
    }
    return html + "</section>";
  }
}

function lastName(name) {
  const parts = String(name).trim().split(/\s+/);
  return parts[parts.length - 1] || name;
}
