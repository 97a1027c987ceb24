// The scope of a question (docs/api.md, "The scope of a question"): where in the library the
// server searches. An option is `{label, detail?, group?, name?, scope}`; `scope` is what POST
// /chat sends (null: the whole library), with `scopeLabel(option)`, the line that names it under
// the question and is kept with the turn (`name`: the collection's, tag's or library's own name,
// where the menu's label says it otherwise). The Zotero host offers options from what Zotero shows
// (host/zotero.js); the web page from GET /library/collections and /library/tags (below).

import { MAX_SCOPE_ITEMS, MAX_SCOPE_LABEL_CHARS } from "./limits.js";

export const WHOLE_LIBRARY = Object.freeze({ label: "Whole library", scope: null });

const plural = (n, one, many = `${one}s`) => `${n.toLocaleString("en")} ${n === 1 ? one : many}`;

/** Two options mean the same scope (the menu marks the current one). */
export function sameScope(a, b) {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/**
 * The line that names `option`'s scope under a question (TurnRecord.scope_label): "Collection:
 * Thrombosis (with subcollections)", "Tag: review", "Library: Lab group", else the option's own
 * label ("This PDF", "3 selected items"); "" for the whole library. Cut to what the server keeps.
 */
export function scopeLabel(option) {
  const scope = option?.scope;
  if (!scope) return "";
  const name = option.name ?? option.label;
  const label = {
    library: () => `Library: ${name}`,
    collection: () => `Collection: ${name}${scope.subcollections ? " (with subcollections)" : ""}`,
    tag: () => `Tag: ${name}`,
  }[scope.kind]?.() ?? option.label;
  return label.length > MAX_SCOPE_LABEL_CHARS ? `${label.slice(0, MAX_SCOPE_LABEL_CHARS - 1)}…` : label;
}

/**
 * The items scope of `refs` ({library_id, item_key}, duplicates dropped), as an option: "N
 * selected items", or the first MAX_SCOPE_ITEMS of them (the server takes no more), saying so.
 */
export function itemsOption(refs) {
  const unique = [...new Map(refs.map((r) => [`${r.library_id}/${r.item_key}`, r])).values()];
  if (!unique.length) return null;
  const kept = unique.slice(0, MAX_SCOPE_ITEMS);
  const label = unique.length > kept.length
    ? `First ${plural(kept.length, "selected item")} of ${unique.length.toLocaleString("en")}`
    : plural(kept.length, "selected item");
  return { label, scope: { kind: "items", items: kept } };
}

/** "Parent › Child" of a collection in its library's tree (`byKey`: key -> {name, parent_key}). */
export function collectionPath(collection, byKey) {
  const names = [];
  const seen = new Set();
  for (let c = collection; c && !seen.has(c.key); c = byKey.get(c.parent_key)) {
    seen.add(c.key);
    names.unshift(c.name);
  }
  return names.join(" › ");
}

/**
 * The options the web page offers, from GET /library/collections and GET /library/tags:
 * the whole library; each library when there are several; each collection, and with its
 * subcollections when it has any; each tag. Library names prefix the rest when there are several.
 */
export function webScopeOptions(collections, tags) {
  const libraries = collections?.libraries || tags?.libraries || [];
  const several = libraries.length > 1;
  const libraryName = (id) => libraries.find((l) => l.library_id === id)?.name || id;
  const prefix = (id) => (several ? `${libraryName(id)}: ` : "");
  const options = [WHOLE_LIBRARY];
  if (several) {
    for (const library of libraries) {
      options.push({ group: "Libraries", label: library.name || library.library_id, scope: { kind: "library", library_id: library.library_id } });
    }
  }
  const all = collections?.collections || [];
  for (const library of libraries) {
    const own = all.filter((c) => c.library_id === library.library_id);
    const byKey = new Map(own.map((c) => [c.key, c]));
    const parents = new Set(own.map((c) => c.parent_key).filter(Boolean));
    const rows = own.map((c) => ({ c, path: collectionPath(c, byKey) })).sort((a, b) => a.path.localeCompare(b.path));
    for (const { c, path } of rows) {
      const scope = { kind: "collection", library_id: c.library_id, collection_key: c.key, subcollections: false };
      const label = `${prefix(c.library_id)}${path}`;
      const name = several ? `${libraryName(c.library_id)} › ${path}` : path;
      options.push({ group: "Collections", label, name, detail: plural(c.items, "item"), scope });
      if (parents.has(c.key)) {
        options.push({ group: "Collections", label: `${label}, with subcollections`, name, scope: { ...scope, subcollections: true } });
      }
    }
  }
  for (const t of tags?.tags || []) {
    const name = several ? `${t.tag} (${libraryName(t.library_id)})` : t.tag;
    options.push({ group: "Tags", label: `${prefix(t.library_id)}${t.tag}`, name, detail: plural(t.items, "item"), scope: { kind: "tag", library_id: t.library_id, tag: t.tag } });
  }
  return options;
}

/** Options whose label contains every word of `filter` (any case), in their order. */
export function filterOptions(options, filter) {
  const words = String(filter || "").toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return options;
  return options.filter((o) => words.every((w) => o.label.toLowerCase().includes(w)));
}
