// The composer: Enter sends, Shift+Enter is a new line; "typing" goes out at most every 3 s.
// It stays usable while the agent runs: a message sent then waits for the run's next step.

const TYPING_EVERY_MS = 3000;

/** True for an Enter that should send (not Shift+Enter, not while an IME composes). */
export function isSendKey(event) {
  return event.key === "Enter" && !event.shiftKey && !event.isComposing && event.keyCode !== 229;
}

/**
 * Wire `form` (form#composer): `onSend(text)` for each message; `onTyping()` while typing.
 */
export function setupComposer(form, { onSend, onTyping }) {
  const area = form.querySelector('textarea[name="text"]');
  let lastTyping = 0;

  function submit() {
    const text = area.value;
    if (!text.trim()) return;
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
    const now = Date.now();
    if (area.value && now - lastTyping >= TYPING_EVERY_MS) {
      lastTyping = now;
      onTyping();
    }
  });
  return { focus: () => area.focus() };
}
