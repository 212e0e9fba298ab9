// Code blocks coloured by highlight.js (vendored unchanged, see ../vendor/README.md). Only a
// block whose fence names a language highlight.js knows is coloured (no guessing: a guess costs
// a parse per language and often colours prose). highlight.js escapes the code it marks up;
// its HTML still goes through DOMPurify, allowed nothing but <span class="hljs-...">.

import hljs from "../vendor/highlight/highlight.min.js";
import DOMPurify from "../vendor/dompurify/purify.es.mjs";

const TOKENS = { ALLOWED_TAGS: ["span"], ALLOWED_ATTR: ["class"], RETURN_DOM_FRAGMENT: true };

/** The language of each fenced or indented code block of `tokens` (marked's lexer output), in
 * document order; "" for a block that names none. */
export function codeLanguages(marked, tokens) {
  const languages = [];
  marked.walkTokens(tokens, (token) => {
    if (token.type === "code") languages.push((token.lang || "").trim().split(/\s/)[0]);
  });
  return languages;
}

/** Colour the `pre > code` blocks of `fragment` (sanitized Markdown), the n-th block in the n-th
 * of `languages`. A language highlight.js does not know leaves its block as plain text. */
export function highlightCode(fragment, languages) {
  fragment.querySelectorAll("pre > code").forEach((code, i) => {
    const language = languages[i];
    if (!language || !hljs.getLanguage(language)) return;
    const { value } = hljs.highlight(code.textContent, { language, ignoreIllegals: true });
    code.replaceChildren(DOMPurify.sanitize(value, TOKENS));
    code.classList.add("hljs");
    code.dataset.language = language;
  });
}
