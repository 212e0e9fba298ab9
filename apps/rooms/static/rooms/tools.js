// Tool cards: one per tool call. The arguments fill in as fields while they stream, then
// the card shows the status, the duration, the approval buttons or who decided, an AskUser
// question's form or its answer, and the result (a long one folded, with "Show all"). Cards are
// updated in place, so a half-typed answer or a focused button survives every redraw.

import { setMarkdown } from "./markdown.js";
import { renderFields } from "./tool_fields.js";

const STATUS_TEXT = {
  streaming: gettext("running"),
  ready: gettext("running"),
  running: gettext("running"),
  waiting: gettext("waiting for approval"),
  done: gettext("done"),
  error: gettext("error"),
  denied: gettext("denied"),
};
const FOLD_LINES = 20; // a longer result is folded to its first lines, with "Show all"
const FOLD_CHARS = 2000;
const FULL_CHARS = 20000; // "Show all" shows this much at most
const shownQuestion = new WeakMap(); // .ask-question element -> the text it shows
const resultText = new WeakMap(); // .tool-result element -> the result's whole text

function child(parent, selector, make) {
  let el = parent.querySelector(`:scope > ${selector}`);
  if (!el && make) {
    el = make();
    parent.append(el);
  }
  return el;
}

function element(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

function show(el, visible) {
  if (el.hidden === visible) el.hidden = !visible;
}

function duration(ms) {
  if (ms === null || ms === undefined) return "";
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function decisionText(decision) {
  if (!decision) return "";
  if (!decision.by) {
    return decision.approved ? gettext("Approved") : gettext("Denied: nobody decided in time");
  }
  let text = gettext("Denied by %(name)s");
  if (decision.approved) {
    text = decision.edited ? gettext("Approved by %(name)s with changes") : gettext("Approved by %(name)s");
  }
  return interpolate(text, { name: decision.by }, true);
}

function editForm(call) {
  // Edit mode: the arguments as JSON, to change before approving. Hidden until "Edit".
  const form = element("form", "tool-edit");
  form.hidden = true;
  const label = element("label", "visually-hidden", gettext("Edited arguments (JSON)"));
  const area = element("textarea");
  area.name = "arguments";
  area.rows = 4;
  area.spellcheck = false;
  area.id = `edit-${call.id}`.replace(/[^A-Za-z0-9_-]/g, "_");
  label.htmlFor = area.id;
  area.value = JSON.stringify(call.args || {}, null, 2);
  const submit = element("button", "approve", gettext("Approve with changes"));
  submit.type = "submit";
  submit.dataset.action = "approve-edited";
  const cancel = element("button", null, gettext("Cancel"));
  cancel.type = "button";
  cancel.dataset.action = "cancel-edit";
  form.append(label, area, element("p", "tool-edit-error"), submit, cancel);
  return form;
}

/** A new, empty card element for `call`. */
export function createCard() {
  const card = element("div", "tool-card");
  const head = element("div", "tool-head");
  head.append(element("span", "tool-name"), element("span", "tool-status"),
              element("span", "tool-duration"));
  const args = element("dl", "tool-args");
  args.setAttribute("aria-label", gettext("Arguments"));
  card.append(head, args);
  return card;
}

function renderApproval(card, call, canWrite) {
  const waiting = call.status === "waiting";
  const box = child(card, ".tool-approval", waiting ? () => {
    const div = element("div", "tool-approval");
    div.append(element("p", "tool-reason"));
    if (canWrite) {
      const approve = element("button", "approve", gettext("Approve"));
      approve.type = "button";
      approve.dataset.action = "approve";
      const deny = element("button", "deny", gettext("Deny"));
      deny.type = "button";
      deny.dataset.action = "deny";
      const change = element("button", "edit", gettext("Edit"));
      change.type = "button";
      change.dataset.action = "edit";
      div.append(approve, deny, change, editForm(call));
    }
    return div;
  } : null);
  if (box && !waiting) {
    box.remove();
  } else if (box) {
    setText(box.querySelector(".tool-reason"), call.reason || gettext("This tool call needs approval."));
  }
  const decided = decisionText(call.decision);
  const by = child(card, ".decided-by", decided ? () => element("p", "decided-by") : null);
  if (by) setText(by, decided);
  const edited = call.decision && call.decision.edited;
  const ran = child(card, ".tool-edited", edited ? () => element("pre", "tool-edited") : null);
  if (ran) setText(ran, interpolate(gettext("Ran with:\n%(arguments)s"),
                              { arguments: JSON.stringify(edited, null, 2) }, true));
}

function renderQuestion(card, call, canWrite) {
  const q = call.question;
  if (!q) return;
  const open = q.answer === null || q.answer === undefined;
  const text = child(card, ".ask-question", () => element("div", "ask-question"));
  if (shownQuestion.get(text) !== q.text) {
    shownQuestion.set(text, q.text);
    setMarkdown(text, q.text || "");
  }
  let form = card.querySelector(":scope > form.ask-user");
  if (open && canWrite && !form) {
    form = element("form", "ask-user");
    form.dataset.questionId = q.id;
    const label = element("label", "visually-hidden", gettext("Your answer"));
    const area = element("textarea");
    area.name = "answer";
    area.rows = 2;
    area.required = true;
    area.id = `answer-${q.id}`.replace(/[^A-Za-z0-9_-]/g, "_");
    label.htmlFor = area.id;
    area.placeholder = gettext("Answer the agent — Enter sends");
    const submit = element("button", null, gettext("Answer"));
    submit.type = "submit";
    submit.dataset.action = "answer";
    form.append(label, area, submit);
    card.append(form);
  }
  if (!open) {
    if (form) form.remove();
    const answered = child(card, ".answered-by", () => element("p", "answered-by"));
    setText(answered, q.by
      ? interpolate(gettext("Answered by %(name)s: %(answer)s"), { name: q.by, answer: q.answer },
                    true)
      : gettext("Nobody answered in time."));
  }
}

function folded(text) {
  // The first FOLD_LINES lines, at most FOLD_CHARS characters; null when the text fits.
  const lines = text.split("\n");
  if (lines.length <= FOLD_LINES && text.length <= FOLD_CHARS) return null;
  return `${lines.slice(0, FOLD_LINES).join("\n").slice(0, FOLD_CHARS)}\n…`;
}

function showResult(box) {
  // Folded, or (once "Show all" is pressed) the whole text up to FULL_CHARS.
  const text = resultText.get(box);
  const short = folded(text);
  const open = box.dataset.expanded === "true";
  const full = text.length > FULL_CHARS ? `${text.slice(0, FULL_CHARS)}\n${gettext("… (cut)")}` : text;
  setText(box.querySelector(".tool-result-preview"), short && !open ? short : full);
  const toggle = box.querySelector(".tool-result-toggle");
  show(toggle, !!short);
  toggle.setAttribute("aria-expanded", String(open));
  setText(toggle, open ? gettext("Show less")
    : interpolate(gettext("Show all (%(n)s characters)"), { n: text.length.toLocaleString() }, true));
}

function resultBox() {
  const div = element("div", "tool-result");
  const toggle = element("button", "tool-result-toggle");
  toggle.type = "button";
  toggle.addEventListener("click", () => {
    div.dataset.expanded = String(div.dataset.expanded !== "true");
    showResult(div);
  });
  div.append(element("pre", "tool-result-preview"), toggle);
  return div;
}

function renderResult(card, call) {
  if (!call.result) return;
  const box = child(card, ".tool-result", resultBox);
  box.classList.toggle("is-error", call.result.isError);
  resultText.set(box, call.result.text || gettext("(no output)"));
  showResult(box);
}

/** Bring `card` up to date with `call`; `canWrite`: the person may approve and answer. */
export function renderCard(card, call, canWrite) {
  if ((card.dataset.callId || "") !== (call.id || "")) card.dataset.callId = call.id || "";
  card.dataset.status = call.status;
  setText(card.querySelector(".tool-name"), call.name || "tool");
  setText(card.querySelector(".tool-status"), STATUS_TEXT[call.status] || call.status);
  setText(card.querySelector(".tool-duration"),
          call.status === "denied" ? "" : duration(call.durationMs));
  const args = card.querySelector(".tool-args");
  renderFields(args, call);
  if (call.question) show(args, false);
  renderApproval(card, call, canWrite);
  renderQuestion(card, call, canWrite);
  if (call.note) setText(child(card, ".tool-note", () => element("p", "tool-note")), call.note);
  if (call.sub.length) {
    setText(child(card, ".subagent", () => element("pre", "subagent")), call.sub.join("\n"));
  }
  renderResult(card, call);
}
