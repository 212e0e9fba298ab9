// Copy buttons: one on each code block of a message's body and one on each message. The text
// goes to the system clipboard (navigator.clipboard.writeText, which needs a secure context:
// https, or http on localhost); the button says "Copied" (or "Copy failed") for COPIED_MS.

const COPY_TEXT = gettext("Copy");
const COPIED_TEXT = gettext("Copied");
const FAILED_TEXT = gettext("Copy failed");
const COPIED_MS = 2000;

/** A new copy button; `label` is its accessible name ("Copy code", "Copy message"). */
export function copyButton(label) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "copy";
  button.dataset.action = "copy";
  button.textContent = COPY_TEXT;
  button.setAttribute("aria-label", label);
  return button;
}

/** Put a "Copy code" button on every <pre> of `body` (freshly rendered Markdown). */
export function addCodeCopyButtons(body) {
  for (const pre of body.querySelectorAll("pre")) {
    const block = document.createElement("div");
    block.className = "code-block";
    pre.replaceWith(block);
    block.append(copyButton(gettext("Copy code")), pre);
  }
}

/** What `button` copies: its code block's text, or else its message's text from `messageText`
 * (article -> string, the Markdown as written). */
export function copiedText(button, messageText) {
  const block = button.closest(".code-block");
  // marked ends a code block with a newline that is not part of the code
  if (block) return block.querySelector("pre").textContent.replace(/\n$/, "");
  const article = button.closest("article.message");
  return article ? messageText(article) : "";
}

/** Copy `text` and show the outcome on `button`; resolves once the clipboard has answered. */
export async function copyWith(button, text) {
  let ok = true;
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    ok = false; // no permission, or not a secure context: say so rather than fail silently
  }
  button.textContent = ok ? COPIED_TEXT : FAILED_TEXT;
  button.dataset.copied = ok ? "yes" : "failed";
  clearTimeout(button.copyTimer);
  button.copyTimer = setTimeout(() => {
    button.textContent = COPY_TEXT;
    delete button.dataset.copied;
  }, COPIED_MS);
}
