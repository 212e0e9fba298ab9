// A tool call's arguments as key → value fields: while they stream in (the partial JSON so far,
// read by partial_json.js) and once they are whole (the `tool_call_ready` arguments), the same
// way. Rows are updated in place, so a growing value does not redraw its neighbours.

import { parsePartialJson } from "./partial_json.js";

function shownValue(value) {
  // A string as written; anything else as the JSON it stands for.
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

/**
 * What `call`'s arguments show: `{fields, problem, raw}`. `fields` is a list of `[key, text]`
 * (key null for arguments that are not an object); `problem` the index of the first character
 * that cannot be JSON when the streamed text cannot be (then `raw` is that text, the only thing
 * left to show), else null.
 */
export function argumentFields(call) {
  let value = call.args;
  if (!value) {
    try {
      value = parsePartialJson(call.argsText || "").value;
    } catch (error) {
      return { fields: [], problem: error.position, raw: call.argsText };
    }
  }
  if (value === undefined) return { fields: [], problem: null, raw: "" };
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { fields: [[null, shownValue(value)]], problem: null, raw: "" };
  }
  return { fields: Object.entries(value).map(([k, v]) => [k, shownValue(v)]), problem: null,
           raw: "" };
}

function fieldRow(key) {
  const row = document.createElement("div");
  row.className = "tool-field";
  if (key !== null) {
    row.dataset.key = key;
    const name = document.createElement("dt");
    name.textContent = key;
    row.append(name);
  }
  row.append(document.createElement("dd"));
  return row;
}

/** Show `call`'s arguments in `box` (the card's `.tool-args`, a <dl>; hidden when empty),
 * and under it what was streamed when that cannot be JSON. */
export function renderFields(box, call) {
  const { fields, problem, raw } = argumentFields(call);
  const rows = [...box.querySelectorAll(":scope > .tool-field")];
  fields.forEach(([key, text], i) => {
    let row = rows[i];
    if (!row || (row.dataset.key ?? null) !== key) {
      row = fieldRow(key);
      box.insertBefore(row, rows[i] || null);
      rows.splice(i, 0, row);
    }
    const value = row.querySelector("dd");
    if (value.textContent !== text) value.textContent = text;
  });
  rows.slice(fields.length).forEach((row) => row.remove());
  let error = box.nextElementSibling?.classList.contains("tool-args-error") ? box.nextElementSibling
    : null;
  const broken = problem !== null;
  if (broken && !error) {
    error = document.createElement("pre");
    error.className = "tool-args-error";
    box.after(error);
  }
  if (error && !broken) error.remove();
  if (broken) {
    error.textContent = interpolate(
      gettext("These arguments are not valid JSON (from character %(at)s on):\n%(raw)s"),
      { at: problem + 1, raw }, true);
  }
  box.hidden = !fields.length;
}
