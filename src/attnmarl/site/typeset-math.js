/* Typesets the book's formulas at build time (run by attnmarl.site.mathsvg under Node.js, never in a page).
 *
 * Reads JSON from stdin: {"mathjax": <MathJax 3 distribution>, "pages": [[[tex, display], ...], ...]}.
 * Writes JSON to stdout: {"style": <CSS for every page>, "pages": [{"math": [<mjx-container>...], "defs": <svg>}]}:
 * each formula as MathJax 3's SVG output with its hidden MathML copy for screen readers, and per page one
 * <svg> of glyph paths that the formulas reference (fontCache "global": a glyph is drawn once per page).
 * A formula MathJax cannot typeset (an unknown macro, a TeX package the book does not load) ends the run
 * with its TeX on stderr and exit status 1.
 */
"use strict";

const PACKAGES = ["base", "ams"];

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    process.stdin.on("data", (c) => chunks.push(c));
    process.stdin.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    process.stdin.on("error", reject);
  });
}

async function main() {
  const request = JSON.parse(await readStdin());
  const MathJax = await require(request.mathjax + "/node-main.js").init({
    loader: {load: ["input/tex-base", "[tex]/ams", "output/svg", "a11y/assistive-mml"]},
    tex: {packages: PACKAGES},
    svg: {fontCache: "global"},
    startup: {typeset: false},
  });
  const adaptor = MathJax.startup.adaptor;
  const fontCache = MathJax.startup.document.outputJax.fontCache;
  const pages = request.pages.map((formulas) => {
    fontCache.clearCache();
    const math = formulas.map(([tex, display]) => {
      const html = adaptor.outerHTML(MathJax.tex2svg(tex, {display}));
      if (html.includes("data-mjx-error")) {
        throw new Error(`MathJax cannot typeset ${JSON.stringify(tex)}: ${html.match(/data-mjx-error="([^"]*)"/)[1]}`);
      }
      return html;
    });
    const defs = adaptor.outerHTML(fontCache.getCache());
    return {math, defs: `<svg id="MJX-SVG-global-cache" style="display: none" aria-hidden="true">${defs}</svg>`};
  });
  const style = adaptor.textContent(MathJax.svgStylesheet());
  process.stdout.write(JSON.stringify({style, pages}));
}

main().catch((error) => {
  process.stderr.write(String(error && error.message ? error.message : error) + "\n");
  process.exit(1);
});
