// A small DOM for mounting a sidebar feature in Node: elements with classes, text, attributes,
// children, click listeners, `innerHTML` of plain markup (no scripts, no entities beyond the five
// escapeHtml writes), and `querySelector` by tag, `.class` (several joined) or `#id`, with
// descendants ("a .b"). What it lacks throws rather than pretending.

const VOID = new Set(["input", "br", "img", "hr", "meta", "link"]);
const ENTITIES = { amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'" };

class Element {
  constructor(tag, document) {
    this.tagName = tag.toUpperCase();
    this.ownerDocument = document;
    this.attributes = new Map();
    this.children = [];
    this.parentNode = null;
    this.listeners = new Map();
    this.dataset = {};
    this.hidden = false;
    this.disabled = false;
    this._text = "";
    const element = this;
    this.classList = {
      add: (...names) => names.forEach((n) => { const s = element._classes(); s.add(n); element._setClasses(s); }),
      remove: (...names) => names.forEach((n) => { const s = element._classes(); s.delete(n); element._setClasses(s); }),
      toggle: (n, on = !element._classes().has(n)) => { const s = element._classes(); if (on) s.add(n); else s.delete(n); element._setClasses(s); return on; },
      contains: (n) => element._classes().has(n),
    };
  }

  _classes() { return new Set((this.attributes.get("class") || "").split(/\s+/).filter(Boolean)); }
  _setClasses(set = this._classes()) { this.attributes.set("class", [...set].join(" ")); }
  get className() { return this.attributes.get("class") || ""; }
  set className(v) { this.attributes.set("class", String(v)); }
  get id() { return this.attributes.get("id") || ""; }
  set id(v) { this.attributes.set("id", String(v)); }
  get title() { return this.attributes.get("title") || ""; }
  set title(v) { this.attributes.set("title", String(v)); }
  setAttribute(name, value) { this.attributes.set(name, String(value)); }
  getAttribute(name) { return this.attributes.has(name) ? this.attributes.get(name) : null; }

  get textContent() { return this._text + this.children.map((c) => c.textContent).join(""); }
  set textContent(v) {
    for (const c of this.children) c.parentNode = null;
    this.children = [];
    this._text = String(v);
  }

  set innerHTML(html) {
    this.textContent = "";
    parseInto(this, String(html));
  }

  appendChild(child) { return this.insertBefore(child, null); }
  insertBefore(child, ref) {
    child.remove();
    const at = ref ? this.children.indexOf(ref) : -1;
    if (ref && at < 0) throw new Error("insertBefore: the reference node is not a child of this node");
    if (at < 0) this.children.push(child);
    else this.children.splice(at, 0, child);
    child.parentNode = this;
    return child;
  }
  remove() {
    if (!this.parentNode) return;
    this.parentNode.children.splice(this.parentNode.children.indexOf(this), 1);
    this.parentNode = null;
  }

  addEventListener(type, fn) {
    if (!this.listeners.has(type)) this.listeners.set(type, []);
    this.listeners.get(type).push(fn);
  }
  removeEventListener(type, fn) {
    const list = this.listeners.get(type) || [];
    if (list.includes(fn)) list.splice(list.indexOf(fn), 1);
  }
  /** Dispatch `type` here and up through the ancestors; resolves once every listener's promise has. */
  async dispatch(type) {
    const event = { type, target: this, preventDefault() {} };
    const pending = [];
    for (let node = this; node; node = node.parentNode) for (const fn of [...(node.listeners.get(type) || [])]) pending.push(fn(event));
    await Promise.all(pending);
  }
  click() { return this.dispatch("click"); }

  matches(selector) {
    const m = /^([a-z0-9]*)((?:\.[\w-]+)*)(?:#([\w-]+))?$/i.exec(selector.trim());
    if (!m) throw new Error(`fake-dom: selector "${selector}" is not supported`);
    const [, tag, classes, id] = m;
    if (tag && this.tagName !== tag.toUpperCase()) return false;
    if (id && this.id !== id) return false;
    return classes.split(".").filter(Boolean).every((c) => this.classList.contains(c));
  }
  closest(selector) {
    for (let node = this; node; node = node.parentNode) if (node.matches(selector)) return node;
    return null;
  }
  *descendants() {
    for (const c of this.children) {
      yield c;
      yield* c.descendants();
    }
  }
  querySelectorAll(selector) {
    const parts = selector.trim().split(/\s+/);
    const last = parts.pop();
    return [...this.descendants()].filter((el) => {
      if (!el.matches(last)) return false;
      let node = el.parentNode;
      for (const part of [...parts].reverse()) {
        while (node && node !== this && !node.matches(part)) node = node.parentNode;
        if (!node || node === this) return false;
        node = node.parentNode;
      }
      return true;
    });
  }
  querySelector(selector) { return this.querySelectorAll(selector)[0] || null; }
}

function decode(text) {
  return text.replace(/&(amp|lt|gt|quot|#39);/g, (_, name) => ENTITIES[name]);
}

function parseInto(root, html) {
  const stack = [root];
  for (const m of html.matchAll(/<(\/?)([a-zA-Z0-9]+)([^>]*)>|([^<]+)/g)) {
    const top = stack[stack.length - 1];
    if (m[4] !== undefined) {
      const text = root.ownerDocument.createElement("#text");
      text._text = decode(m[4]);
      top.appendChild(text);
    } else if (m[1]) {
      if (top.tagName !== m[2].toUpperCase()) throw new Error(`fake-dom: </${m[2]}> closes <${top.tagName.toLowerCase()}>`);
      stack.pop();
    } else {
      const el = root.ownerDocument.createElement(m[2]);
      for (const a of m[3].matchAll(/([\w-]+)(?:="([^"]*)")?/g)) {
        if (a[1] === "hidden") el.hidden = true;
        else el.setAttribute(a[1], decode(a[2] ?? ""));
      }
      top.appendChild(el);
      if (!VOID.has(m[2].toLowerCase())) stack.push(el);
    }
  }
}

/** A document with a body; `getElementById` searches it. */
export function fakeDocument() {
  const document = {
    createElement: (tag) => new Element(tag, document),
    getElementById: (id) => [...document.body.descendants()].find((el) => el.id === id) || null,
  };
  document.body = new Element("body", document);
  return document;
}
