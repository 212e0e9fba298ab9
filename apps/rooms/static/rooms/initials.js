// A person's badge next to their messages: their initials on a colour of their own. The colour
// is one of PALETTE_SIZE classes in room.css (the CSP forbids inline styles), chosen by a hash
// of the person's id, so it is the same in every tab, after every reload, for every watcher.

const PALETTE_SIZE = 12;

/** Up to two initials of `name` (first letters of its first and last words), upper-cased;
 * "?" for an empty name. Code points, not UTF-16 units, so "张伟" gives "张". */
export function initials(name) {
  const words = String(name || "").trim().split(/\s+/).filter(Boolean);
  if (!words.length) return "?";
  const first = (word) => Array.from(word)[0].toUpperCase();
  return words.length === 1 ? first(words[0]) : first(words[0]) + first(words.at(-1));
}

/** The palette index (0 .. PALETTE_SIZE - 1) of the person with `id` (FNV-1a of its text). */
export function colourIndex(id) {
  let hash = 0x811c9dc5;
  for (const char of String(id)) {
    hash ^= char.codePointAt(0);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % PALETTE_SIZE;
}

/** Make `badge` show `person` ({id, name}) or, without one, nothing. */
export function renderInitials(badge, person) {
  badge.hidden = !person;
  if (!person) return;
  const text = initials(person.name);
  if (badge.textContent !== text) badge.textContent = text;
  const colour = String(colourIndex(person.id));
  if (badge.dataset.colour !== colour) badge.dataset.colour = colour;
}
