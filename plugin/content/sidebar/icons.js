// Inline SVG icons (16 px, drawn in currentColor so light and dark themes colour them). They
// replace emoji, which headless Chromium without a colour-emoji font draws as empty boxes and
// which Zotero's themes cannot recolour.
const svg = (body) =>
  `<svg class="icon" viewBox="0 0 16 16" width="1em" height="1em" fill="none" stroke="currentColor" stroke-width="1.5" ` +
  `stroke-linecap="round" stroke-linejoin="round" aria-hidden="true" focusable="false">${body}</svg>`;

export const ICONS = {
  eye: svg('<path d="M1.5 8S4 3.5 8 3.5 14.5 8 14.5 8 12 12.5 8 12.5 1.5 8 1.5 8z"/><circle cx="8" cy="8" r="2"/>'),
  eyeOff: svg('<path d="M1.5 8S4 3.5 8 3.5 14.5 8 14.5 8 12 12.5 8 12.5 1.5 8 1.5 8z"/><path d="M2.5 13.5l11-11"/>'),
  shield: svg('<path d="M8 1.5l5.5 2v4c0 3.5-2.4 6-5.5 7-3.1-1-5.5-3.5-5.5-7v-4z"/><path d="M5.5 8l1.8 1.8L10.8 6.3"/>'),
  book: svg('<path d="M8 4c-1.5-1-3.5-1.5-6-1.5v10c2.5 0 4.5.5 6 1.5 1.5-1 3.5-1.5 6-1.5v-10c-2.5 0-4.5.5-6 1.5z"/><path d="M8 4v10"/>'),
  folder: svg('<path d="M1.5 4.5v8h13v-6.5H8L6.5 4.5z"/>'),
};
