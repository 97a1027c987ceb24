// Non-destructive DOM update: patch `target`'s children to match an HTML string, keeping
// every node that did not change (so a text selection, focus, an open <details> or a
// checkbox survives a streaming re-render). Small on purpose: elements are matched by
// position and tag; a changed tag or node type is replaced.

export function morphHtml(target, html) {
  const template = target.ownerDocument.createElement("template");
  template.innerHTML = html;
  morphChildren(target, template.content);
}

function morphChildren(into, from) {
  const wanted = [...from.childNodes];
  let i = 0;
  for (; i < wanted.length; i += 1) {
    const next = wanted[i];
    const current = into.childNodes[i];
    if (!current) {
      into.appendChild(next.cloneNode(true));
      continue;
    }
    if (current.nodeType !== next.nodeType || current.nodeName !== next.nodeName || !sameAttributeNames(current, next)) {
      into.replaceChild(next.cloneNode(true), current);
      continue;
    }
    if (current.nodeType === 3 || current.nodeType === 8) {
      if (current.nodeValue !== next.nodeValue) current.nodeValue = next.nodeValue;
      continue;
    }
    morphAttributes(current, next);
    morphChildren(current, next);
  }
  while (into.childNodes.length > wanted.length) into.removeChild(into.lastChild);
}

// A node whose attribute set changes (a pending pill becoming a verified one) is replaced,
// so a streamed turn ends up byte-identical to the same turn rehydrated from the server.
function sameAttributeNames(a, b) {
  if (a.nodeType !== 1) return true;
  const names = (el) => [...el.attributes].map((x) => x.name).filter((n) => !(n === "open" && el.nodeName === "DETAILS")).join(" ");
  return names(a) === names(b);
}

function morphAttributes(el, from) {
  for (const attr of [...el.attributes]) {
    // `open` on <details> belongs to the reader, not to the renderer.
    if (!from.hasAttribute(attr.name) && !(attr.name === "open" && el.nodeName === "DETAILS")) el.removeAttribute(attr.name);
  }
  for (const attr of [...from.attributes]) {
    if (el.getAttribute(attr.name) !== attr.value) el.setAttribute(attr.name, attr.value);
  }
}
