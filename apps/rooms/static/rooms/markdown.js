// Markdown -> sanitized DOM. `marked` parses, DOMPurify sanitizes (both vendored unchanged, see
// ../vendor/README.md). Whatever a model or a person writes, no script runs:
// - raw HTML in the text is shown as text, as in a chat (`<img onerror=...>` reads as typed),
//   so the only tags are the ones Markdown itself makes;
// - DOMPurify then removes anything dangerous that Markdown can still express (a
//   `javascript:` link) and, as a second line, any <script>, event handler, form control or
//   style; ids and names are prefixed so they cannot clobber the page's own (#composer,
//   #transcript ...), and class attributes are dropped so text cannot dress up as the room's
//   own controls. The page's CSP (no inline script) is the third line.
// Code blocks are coloured afterwards (highlight.js), with classes of its own.

import { Marked } from "../vendor/marked/marked.esm.js";
import DOMPurify from "../vendor/dompurify/purify.es.mjs";
import { codeLanguages, highlightCode } from "./highlight.js";

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escapeHtml = (text) => text.replace(/[&<>"']/g, (c) => ESCAPES[c]);

const marked = new Marked({
  gfm: true,
  breaks: true,
  async: false,
  renderer: {
    html(token) {
      // Raw HTML (block or inline) stays text.
      const text = escapeHtml(token.text);
      return token.block ? `<p>${text.trimEnd().replaceAll("\n", "<br>")}</p>\n` : text;
    },
  },
});

const PURIFY = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "option", "dialog",
                "iframe", "object", "embed", "link", "meta", "base", "svg", "math"],
  FORBID_ATTR: ["style", "class", "srcset", "action", "formaction", "autofocus", "tabindex"],
  ALLOW_DATA_ATTR: false,
  SANITIZE_DOM: true,
  SANITIZE_NAMED_PROPS: true,
  RETURN_DOM_FRAGMENT: true,
};

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow ugc");
  }
  if (node.tagName === "IMG") {
    node.setAttribute("loading", "lazy");
    node.setAttribute("referrerpolicy", "no-referrer");
  }
});

/** A sanitized DocumentFragment of `text` rendered as Markdown. */
export function markdownFragment(text) {
  let html;
  let languages;
  try {
    const tokens = marked.lexer(text || "");
    languages = codeLanguages(marked, tokens);
    html = marked.parser(tokens);
  } catch {
    const fallback = document.createDocumentFragment();
    const pre = document.createElement("pre");
    pre.textContent = text || "";
    fallback.append(pre);
    return fallback;
  }
  const fragment = DOMPurify.sanitize(html, PURIFY);
  highlightCode(fragment, languages);
  return fragment;
}

/** Replace the children of `el` with `text` rendered as sanitized Markdown. */
export function setMarkdown(el, text) {
  el.replaceChildren(markdownFragment(text));
}
