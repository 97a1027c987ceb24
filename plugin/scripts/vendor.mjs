// Copies the browser builds of markdown-it and KaTeX (both MIT) from node_modules into
// content/vendor/, which the sidebar, the .xpi and the gateway's /ui/ serve: no CDN, no
// internet at run time. Run by `npm install` (postinstall) and by the build.
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const modules = join(root, "node_modules");
const out = join(root, "content", "vendor");

const files = [
  ["markdown-it/dist/browser/markdown-it.esm.min.mjs", "markdown-it.mjs"],
  ["markdown-it/LICENSE", "LICENSE.markdown-it"],
  ["katex/dist/katex.mjs", "katex.mjs"],
  ["katex/dist/katex.min.css", "katex.min.css"],
  ["katex/LICENSE", "LICENSE.katex"],
];

export function vendor() {
  for (const [from] of files) {
    if (!existsSync(join(modules, from))) {
      throw new Error(`${from} is missing from plugin/node_modules; run \`npm ci\` in plugin/ first.`);
    }
  }
  rmSync(out, { recursive: true, force: true });
  mkdirSync(join(out, "fonts"), { recursive: true });
  for (const [from, to] of files) cpSync(join(modules, from), join(out, to));
  // woff2 only: every engine we run in (Gecko 115+, Chromium) reads it.
  const css = readFileSync(join(out, "katex.min.css"), "utf8");
  const fonts = [...css.matchAll(/url\(fonts\/([^)]+\.woff2)\)/g)].map((m) => m[1]);
  for (const font of new Set(fonts)) cpSync(join(modules, "katex/dist/fonts", font), join(out, "fonts", font));
  writeFileSync(join(out, "katex.min.css"),
    css.replace(/,url\(fonts\/[^)]+\.woff\) format\("woff"\)|,url\(fonts\/[^)]+\.ttf\) format\("truetype"\)/g, ""));
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(`vendored into ${vendor()}`);
}
