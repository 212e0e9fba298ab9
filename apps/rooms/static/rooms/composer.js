// The composer: Enter sends, Shift+Enter is a new line; "typing" goes out at most every 3 s.
// It stays usable while the agent runs: a message sent then waits for the run's next step.

const TYPING_EVERY_MS = 3000;

/** True for an Enter that should send (not Shift+Enter, not while an IME composes). */
export function isSendKey(event) {
  return event.key === "Enter" && !event.shiftKey && !event.isComposing && event.keyCode !== 229;
}

export const BLANK_TEXT = "Not sent: the message is only spaces or blank lines — type some text.";

/**
 * Wire `form` (form#composer): `onSend(text)` for each message; `onTyping()` while typing.
 */
export function setupComposer(form, { onSend, onTyping }) {
  const area = form.querySelector('textarea[name="text"]');
  const status = form.querySelector("#composer-status");
  let lastTyping = 0;

  function say(text) {
    if (status) status.textContent = text;
  }

  function submit() {
    const text = area.value;
    if (!text.trim()) {
      say(BLANK_TEXT); // the text stays: the person may have meant to type more
      area.focus();
      return;
    }
    say("");
    onSend(text);
    area.value = "";
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
  return { focus: () => area.focus() };
}
