// Which messages are versions of one another, from what the server says (docs/protocol.md,
// "Versions and forks"): the messages `superseded_by_run` R are the earlier version, R's own
// messages the newer one; the messages `superseded_by_message` M (a chat edit, which starts no
// run) the earlier version, message M the newer one. When a replacement replaces exactly the
// previous one's version (regenerate, regenerate again) the versions line up in one slot:
// ‹1/3›. When it replaces part of it (an edit, then a regenerate of its answer) that part gets
// a slot of its own, inside the first one's version. No DOM.

function group(messages, key) {
  const out = new Map();
  for (const msg of messages) {
    const value = msg[key];
    if (value === null || value === undefined) continue;
    if (!out.has(value)) out.set(value, []);
    out.get(value).push(msg);
  }
  return out;
}

function same(a, b) {
  return a.length === b.length && a.every((msg) => b.includes(msg));
}

/** The key a chat edit's earlier version carries as `supersededBy`: "m" and the new message's
 * id (a run's is its id, a number). */
export function editKey(messageId) {
  return `m${messageId}`;
}

/**
 * The version slots of `messages` (the transcript's messages in order, each with `id`, `runId`
 * and `supersededBy`: a run id, `editKey(id)` of the message that replaced it, or null).
 * Returns `[{id, versions}]` in the order they start in the transcript: `id` is the first
 * replacement's key (stable across redraws and reloads), `versions` the lists of messages,
 * oldest first, with no empty one (a run that has not written yet, or never did). Only slots
 * with two versions or more are returned.
 */
export function versionSlots(messages) {
  const byRun = group(messages, "runId");
  const replaced = group(messages, "supersededBy");
  const at = new Map(messages.map((msg, i) => [msg, i]));
  const newerOf = (key) => (typeof key === "string"
    ? messages.filter((msg) => editKey(msg.id) === key) : byRun.get(key) || []);
  // In the order the replacements were made: each one's newer version is written after the
  // versions before it (one that has written nothing yet last, runs by id).
  const starts = (newer) => (newer.length ? at.get(newer[0]) : Infinity);
  const replacements = [...replaced.keys()].map((key) => ({ key, newer: newerOf(key) }))
    .sort((a, b) => (starts(a.newer) - starts(b.newer))
      || String(a.key).localeCompare(String(b.key), undefined, { numeric: true }));
  const slots = [];
  for (const { key, newer } of replacements) {
    const earlier = replaced.get(key);
    const slot = slots.find((s) => same(s.versions.at(-1), earlier));
    if (slot) slot.versions.push(newer);
    else slots.push({ id: key, versions: [earlier, newer] });
  }
  for (const slot of slots) slot.versions = slot.versions.filter((v) => v.length);
  // By where they start: a slot that starts inside a version comes after that version's slot
  // (an answer regenerated, then the message before it edited: the edit's slot comes first).
  return slots.filter((slot) => slot.versions.length > 1)
    .sort((a, b) => at.get(a.versions[0][0]) - at.get(b.versions[0][0]));
}

/**
 * The messages not shown when each slot shows `chosen(slot)` (an index into its versions): the
 * other versions, and every version of a slot inside one of those. Returns a Set of messages.
 */
export function hiddenMessages(slots, chosen) {
  const hidden = new Set();
  for (const slot of slots) { // a slot inside a version comes after that version's slot
    const inside = slot.versions.some((version) => version.some((msg) => hidden.has(msg)));
    const shown = chosen(slot);
    slot.versions.forEach((version, i) => {
      if (inside || i !== shown) version.forEach((msg) => hidden.add(msg));
    });
  }
  return hidden;
}
