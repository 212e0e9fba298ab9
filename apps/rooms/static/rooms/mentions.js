// "@" completion in the composer: the agent's handles and the team's people (the composer's
// data-mention-names JSON, [{name, kind: "agent" | "person"}]). While the list is open, the arrow
// keys move, Enter or Tab picks, Escape closes it; a click picks too.

import { imeKey } from "./ime.js";

/** The "@word" typed just before `caret` in `text`: {start, query}, or null (an e-mail's
 *  "@" does not count: the server's mention rules say the same). A Chinese or Japanese
 *  keyboard's full-width "＠" counts as "@"; picking a name writes "@". */
export function mentionAt(text, caret) {
  const match = /(^|[^\w.+%@＠-])[@＠]([^\s@＠]*)$/u.exec(text.slice(0, caret));
  return match ? { start: caret - match[2].length - 1, query: match[2] } : null;
}

/** The entries of `names` whose name starts with `query`, case-insensitively, in order. */
export function completions(names, query) {
  const q = query.toLowerCase();
  return names.filter((n) => n.name.toLowerCase().startsWith(q));
}

function option(entry, i, active) {
  const li = document.createElement("li");
  li.setAttribute("role", "option");
  li.id = `mention-${i}`;
  li.dataset.index = String(i);
  li.dataset.kind = entry.kind;
  li.setAttribute("aria-selected", String(i === active));
  li.textContent = entry.kind === "agent"
    ? interpolate(gettext("@%(name)s (the agent)"), { name: entry.name }, true) : `@${entry.name}`;
  return li;
}

/** Wire `area` (the composer's textarea) and `list` (ul#mention-list) to complete `names`.
 *  Call before the composer's own keydown handler: a key the list uses goes no further. */
export function setupMentions(area, list, names) {
  let shown = [];
  let active = 0;

  function close() {
    shown = [];
    list.hidden = true;
    list.replaceChildren();
    area.removeAttribute("aria-activedescendant");
  }

  function update() {
    const at = mentionAt(area.value, area.selectionStart);
    shown = at ? completions(names, at.query) : [];
    if (!shown.length) {
      close();
      return;
    }
    active = Math.min(active, shown.length - 1);
    list.replaceChildren(...shown.map((entry, i) => option(entry, i, active)));
    list.hidden = false;
    area.setAttribute("aria-activedescendant", `mention-${active}`);
  }

  function pick(i) {
    const at = mentionAt(area.value, area.selectionStart);
    if (!at || !shown[i]) return;
    const inserted = `@${shown[i].name} `;
    const after = area.value.slice(area.selectionStart);
    area.value = area.value.slice(0, at.start) + inserted + after;
    const caret = at.start + inserted.length;
    area.setSelectionRange(caret, caret);
    close();
    area.focus();
  }

  area.addEventListener("input", () => {
    active = 0;
    update();
  });
  area.addEventListener("keydown", (event) => {
    if (list.hidden || imeKey(event)) return; // Enter there commits the IME's candidate
    const moves = { ArrowDown: 1, ArrowUp: shown.length - 1 };
    if (event.key in moves) {
      active = (active + moves[event.key]) % shown.length;
      update();
    } else if (event.key === "Enter" || event.key === "Tab") {
      pick(active);
    } else if (event.key === "Escape") {
      close();
    } else {
      return;
    }
    event.preventDefault(); // Escape: the room's "stop" reads defaultPrevented
    event.stopImmediatePropagation(); // Enter picks: it must not send too
  });
  list.addEventListener("mousedown", (event) => {
    const item = event.target.closest("li[data-index]");
    if (!item) return;
    event.preventDefault(); // keep the focus (and the caret) in the textarea
    pick(Number(item.dataset.index));
  });
  area.addEventListener("blur", close);
  return { close };
}
