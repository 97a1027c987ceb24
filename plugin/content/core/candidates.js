// Discovery candidates: selection state (keyed, all unselected by default, survives
// re-renders), the confirmation summary, Zotero item data for a candidate, and the import
// report. No DOM and no Zotero here.

export class CandidateSelection {
  constructor(candidates = []) {
    this.candidates = [];
    this.selected = new Set();
    this.update(candidates);
  }

  /** New candidates (a re-render, a reload): ticks of candidates still present are kept. */
  update(candidates) {
    this.candidates = [...candidates];
    const ids = new Set(this.candidates.map((c) => c.candidate_id));
    for (const id of [...this.selected]) if (!ids.has(id)) this.selected.delete(id);
  }

  isSelected(id) {
    return this.selected.has(id);
  }

  toggle(id, on = !this.selected.has(id)) {
    if (!this.candidates.some((c) => c.candidate_id === id)) return;
    if (on) this.selected.add(id);
    else this.selected.delete(id);
  }

  selectAll() {
    for (const c of this.candidates) this.selected.add(c.candidate_id);
  }

  selectNone() {
    this.selected.clear();
  }

  get allSelected() {
    return this.candidates.length > 0 && this.selected.size === this.candidates.length;
  }

  /** Selected candidates in list order. */
  chosen() {
    return this.candidates.filter((c) => this.selected.has(c.candidate_id));
  }

  summary() {
    const n = this.selected.size;
    return n === 0 ? "No papers selected" : `${n} of ${this.candidates.length} selected`;
  }
}

export function oaLabel(candidate) {
  const status = (candidate.oa_status || "").toLowerCase();
  if (!status || status === "closed") return candidate.pdf_url ? "PDF link" : "No open PDF";
  return `Open access (${status})`;
}

/** What the confirmation dialog lists; `where` names the target ("Lab Papers › Reading"), empty is My Library. */
export function confirmationSummary(candidates, where) {
  const withPdf = candidates.filter((c) => c.pdf_url).length;
  return {
    count: candidates.length,
    lines: candidates.map((c) => ({ title: c.title, oa: oaLabel(c), year: c.year ?? null })),
    target: where || "My Library (no collection)",
    headline: `Import ${candidates.length} paper${candidates.length === 1 ? "" : "s"} into ${where || "My Library"}?`,
    pdfNote: `${withPdf} with an open-access PDF to download; the others are imported as metadata only.`,
  };
}

/**
 * The import dialog's "Add to" choices, from host.listImportTargets(): one group per library,
 * "<Library> (no collection)" first, then its collections. A choice carries the select's
 * `value`, what the import takes (`libraryID`, `collectionId`, "" for none), `where` for the
 * headline and report ("Lab Papers › Reading"), and its library's `libraryName` and
 * `filesEditable`. `selected` is the default choice: the selected collection of the selected
 * library, else that library, else the first choice (null when there is none).
 */
export function importChoices(targets) {
  const groups = targets.map((library) => {
    const base = { libraryID: library.libraryID, libraryName: library.name, filesEditable: library.filesEditable !== false };
    const choices = [
      { ...base, value: `${library.libraryID}:`, collectionId: "", label: `${library.name} (no collection)`, where: library.name },
      ...library.collections.map((c) => ({ ...base, value: `${library.libraryID}:${c.id}`, collectionId: String(c.id), label: c.name,
        where: `${library.name} › ${c.name}`, isDefault: library.selected && c.selected })),
    ];
    if (library.selected && !choices.some((c) => c.isDefault)) choices[0].isDefault = true;
    return { label: library.name, choices };
  });
  const all = groups.flatMap((g) => g.choices);
  const selected = all.find((c) => c.isDefault) || all[0] || null;
  for (const choice of all) delete choice.isDefault;
  return { groups, selected };
}

/** "Ada Lovelace" -> {firstName: "Ada", lastName: "Lovelace"}; "Lovelace, Ada" too; one word -> single field. */
export function parseCreator(name) {
  const clean = String(name || "").replace(/\s+/g, " ").trim();
  if (!clean) return null;
  if (clean.includes(",")) {
    const [last, ...rest] = clean.split(",");
    return { firstName: rest.join(",").trim(), lastName: last.trim(), creatorType: "author" };
  }
  const parts = clean.split(" ");
  if (parts.length === 1) return { name: clean, creatorType: "author", fieldMode: 1 };
  // Surname particles stay with the surname: "Ludwig van Beethoven" -> "van Beethoven".
  const particles = new Set(["van", "von", "de", "der", "den", "del", "da", "di", "du", "la", "le", "dos", "das"]);
  let cut = parts.length - 1;
  while (cut > 1 && particles.has(parts[cut - 1].toLowerCase())) cut -= 1;
  return { firstName: parts.slice(0, cut).join(" "), lastName: parts.slice(cut).join(" "), creatorType: "author" };
}

/** Zotero field values for a candidate: an item type, fields, creators and tags. */
export function zoteroItemData(candidate) {
  const isPreprint = Boolean(candidate.arxiv_id) && !candidate.venue;
  const fields = { title: candidate.title };
  if (candidate.doi) fields.DOI = candidate.doi.replace(/^https?:\/\/(dx\.)?doi\.org\//i, "");
  if (candidate.year) fields.date = String(candidate.year);
  if (candidate.abstract) fields.abstractNote = candidate.abstract;
  if (candidate.venue) fields.publicationTitle = candidate.venue;
  if (candidate.license) fields.rights = candidate.license;
  const url = candidate.doi ? `https://doi.org/${fields.DOI}` : candidate.arxiv_id ? `https://arxiv.org/abs/${candidate.arxiv_id}` : null;
  if (url) fields.url = url;
  const extra = [];
  if (candidate.arxiv_id) extra.push(`arXiv: ${candidate.arxiv_id}`);
  if (candidate.openalex_id) extra.push(`OpenAlex: ${candidate.openalex_id}`);
  if (extra.length) fields.extra = extra.join("\n");
  if (isPreprint) {
    fields.repository = "arXiv";
    if (candidate.arxiv_id) fields.archiveID = `arXiv:${candidate.arxiv_id}`;
    delete fields.publicationTitle;
  }
  return {
    itemType: isPreprint ? "preprint" : "journalArticle",
    fields,
    creators: (candidate.authors || []).map(parseCreator).filter(Boolean),
    tags: [...new Set((candidate.keywords || []).map((k) => String(k).trim()).filter(Boolean))],
  };
}

/**
 * Pair the chosen candidates with the staged files of a prepare_batch answer:
 * [{candidate, file, action}] where action is "pdf" (staged), "metadata" (no_pdf or failed)
 * or "skip" (duplicate: already in the library).
 */
export function importPlan(candidates, batch) {
  const files = new Map((batch?.files || []).map((f) => [f.candidate_id, f]));
  return candidates.map((candidate) => {
    const file = files.get(candidate.candidate_id) || null;
    let action = "metadata";
    if (file?.status === "staged" && file.object_name) action = "pdf";
    else if (file?.status === "duplicate") action = "skip";
    return { candidate, file, action };
  });
}

/** The report shown after an import: counts and one line per paper. */
export function importReport(results) {
  const count = (status) => results.filter((r) => r.status === status).length;
  const imported = count("imported");
  const metadata = count("metadata");
  const skipped = count("skipped");
  const failed = count("failed");
  const ready = count("ready");
  const parts = [];
  if (imported) parts.push(`${imported} imported with PDF`);
  if (ready) parts.push(`${ready} PDF${ready === 1 ? "" : "s"} ready to download`);
  if (metadata) parts.push(`${metadata} imported as metadata only`);
  if (skipped) parts.push(`${skipped} skipped (already in your library)`);
  if (failed) parts.push(`${failed} failed`);
  return {
    headline: parts.length ? parts.join(", ") + "." : "Nothing was imported.",
    lines: results.map((r) => ({ title: r.title, status: r.status, note: r.note || "", href: r.href || null, filename: r.filename || null })),
  };
}
