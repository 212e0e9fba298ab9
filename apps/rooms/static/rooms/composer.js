// The composer: Enter sends, Shift+Enter is a new line; "typing" goes out at most every 3 s.
// It stays usable while the agent runs: a message sent then waits for the run's next step.
// "@" completes the agent's handles and the team's people (mentions.js); images are pasted,
// dropped or attached (attachments.js).

import { setupAttachments } from "./attachments.js";
import { setupMentions } from "./mentions.js";

const TYPING_EVERY_MS = 3000;

/** True for an Enter that should send (not Shift+Enter, not while an IME composes). */
export function isSendKey(event) {
  return event.key === "Enter" && !event.shiftKey && !event.isComposing && event.keyCode !== 229;
}

export const BLANK_TEXT = gettext(
  "Not sent: the message is only spaces or blank lines — type some text.");

/** Why a message of `length` characters cannot be sent when at most `max` fit. */
export function tooLongText(length, max) {
  const n = (v) => v.toLocaleString("en-US");
  const text = gettext(
    "the message is %(length)s characters long; at most %(max)s fit in one message. Shorten it or split it.");
  return interpolate(text, { length: n(length), max: n(max) }, true);
}

/** "Not sent: <reason>", in the page's language. */
function notSent(reason) {
  return interpolate(gettext("Not sent: %(reason)s"), { reason }, true);
}

export const UPLOADING_TEXT = gettext(
  "Not sent yet: an image is still uploading — send again in a moment.");

/**
 * Wire `form` (form#composer, `data-max-chars`: the server's CONFAB_MESSAGE_MAX_CHARS):
 * `onSend(text, images)` for each message (`images`: the attached `{ id, url }`, maybe
 * none); `onTyping()` while typing. Returns `{ focus(),
 * refused(text, reason) }`: `refused` puts a message the server turned down back in the
 * textarea (unless something new is typed there) and says why under it.
 */
export function setupComposer(form, { onSend, onTyping }) {
  const area = form.querySelector('textarea[name="text"]');
  const status = form.querySelector("#composer-status");
  const list = form.querySelector("#mention-list");
  if (list && form.dataset.mentionNames) {
    setupMentions(area, list, JSON.parse(form.dataset.mentionNames));
  }
  let lastTyping = 0;

  function say(text) {
    if (status) status.textContent = text;
  }
  const attachments = setupAttachments(form, say);

  function submit() {
    const text = area.value;
    if (attachments.busy()) {
      say(UPLOADING_TEXT);
      return;
    }
    const images = attachments.list();
    if (!text.trim() && !images.length) {
      say(BLANK_TEXT); // the text stays: the person may have meant to type more
      area.focus();
      return;
    }
    const max = Number(form.dataset.maxChars) || Infinity;
    if (text.length > max) {
      say(notSent(tooLongText(text.length, max)));
      area.focus();
      return;
    }
    say("");
    onSend(images.length ? text.trim() : text, images);
    area.value = "";
    attachments.clear();
    area.focus();
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit();
  });
  area.addEventListener("keydown", (event) => {
    if (isSendKey(event)) {
      event.preventDefault();
      submit();
    }
  });
  area.addEventListener("input", () => {
    if (area.value.trim()) say("");
    const now = Date.now();
    if (area.value && now - lastTyping >= TYPING_EVERY_MS) {
      lastTyping = now;
      onTyping();
    }
  });
  function refused(text, reason) {
    if (!area.value.trim()) area.value = text;
    say(notSent(reason));
  }

  return { focus: () => area.focus(), refused };
}
