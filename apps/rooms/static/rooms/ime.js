// Keys an input method is still working with (issue 25): while it composes (`isComposing`),
// and the committing key that Safari and some IMEs send after compositionend, which only its
// keyCode 229 ("an IME processed this key") tells apart. Such a key picks a candidate: it must
// not send, pick a mention, or close an editor.

/** True when the keydown `event` belongs to an input method's composition. */
export function imeKey(event) {
  return event.isComposing || event.keyCode === 229;
}
