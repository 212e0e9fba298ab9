// The room's state, built from the socket's frames (docs/protocol.md): the `state` frame, then
// events in `seq` order. No DOM here: every change marks what it touched, and render.js redraws
// only that, once per animation frame.

// The engine's marker of a summary message (apps/engine/compaction), matched, never shown.
const SUMMARY_PREFIX = "[Summary of the earlier conversation, written when it was compacted]"; // i18n: not prose
const ACTIVE_CALL = new Set(["streaming", "ready", "running", "waiting"]);
const MAX_NOTICES = 8;
const MAX_SUB_LINES = 30;
// A Task sub-agent's events that wait for the room: they get a card of their own, answered
// like the run's (docs/protocol.md, `subagent_event`).
const SUB_WAITS = new Set(["awaiting_approval", "approval_decided", "awaiting_input",
                           "input_received"]);

import { editKey } from "./version_slots.js";
import { retitle, supersede } from "./versions.js";

let uid = 0;
const nextUid = () => `c${++uid}`;

function blocksText(blocks, type, field) {
  return (blocks || []).filter((b) => b.type === type).map((b) => b[field] || "").join("\n\n");
}

function resultText(result) {
  if (!result) return "";
  if (typeof result.content === "string") return result.content;
  return (result.content || []).map((b) => (b.type === "text" ? b.text : "[image]")).join("\n");
}

export function personName(person) {
  return person && person.name ? person.name : gettext("someone");
}

// The engine cannot import Django, so it states its one approval reason in English
// (apps/engine/tools/executor.py, _approve); the room says that sentence in its own language.
function approvalReason(wait) {
  const policy = `${wait.name} needs a member's approval under the team's tool policy.`; // i18n: not prose
  if (wait.reason !== policy) return wait.reason || "";
  return interpolate(gettext("%(tool)s needs a member's approval under the team's tool policy."),
                     { tool: wait.name }, true);
}

export class Store {
  constructor(you, pageEnd = null, clock = {}) {
    this.you = you; // {id, name, role}: from the page, then from the state frame
    this.pageEnd = pageEnd; // how the last run ended, as the page was rendered
    this.clock = clock; // {timeZone, locale}: the person's, for the times the room states
    this.local = new Map(); // client_id -> a message this tab sent, until the server has it
    this.reset();
  }

  reset() {
    this.messages = new Map(); // key (db id or engine id) -> message
    this.byClientId = new Map();
    this.placed = []; // messages in history order (and the one being written)
    this.pending = []; // people's messages waiting to join at the next step
    this.calls = new Map(); // tool call id -> call
    this.run = null; // {id, status, model, started_by, stopped_by, stopping, turn}
    this.lastEnd = null; // how the last run ended: {status, stopped_by, error_kind, message}
    this.approvals = new Map();
    this.questions = new Map();
    this.elicitations = new Map(); // MCP servers' questions: id -> {id, server, message, schema, answer}
    this.usage = null;
    this.todos = [];
    this.notices = [];
    this.present = [];
    this.typing = new Map(); // user id -> {person, until}
    this.ready = false; // a state frame has arrived
    this.before = null; // the cursor of the older page not loaded yet (null: none older)
    this.loadingHistory = false;
    this.dirty = { order: true, messages: new Set(), run: true, presence: true, typing: true,
                   usage: true, notices: true, todos: true, role: true, history: true,
                   prepended: false, elicitations: true, settings: true };
    for (const msg of this.local.values()) this._adopt(msg);
  }

  get agentMode() {
    return (this.conversation && this.conversation.agent_mode) || "always";
  }

  get canWrite() {
    return this.you && this.you.role !== "viewer";
  }

  touch(msg) {
    if (msg) this.dirty.messages.add(msg);
  }

  takeDirty() {
    const dirty = this.dirty;
    this.dirty = { order: false, messages: new Set(), run: false, presence: false,
                   typing: false, usage: false, notices: false, todos: false, role: false,
                   history: false, prepended: false, elicitations: false, settings: false };
    return dirty;
  }

  // -- messages ---------------------------------------------------------------------------
  _newMessage(fields) {
    return { key: "", id: null, engineId: null, role: "assistant", author: null, thinking: "",
             text: "", images: [], calls: [], wiki: [], forks: [], status: "complete",
             clientId: null,
             queued: false,
             sending: false, failed: null, summary: false, wakesAgent: false, ...fields };
  }

  _adopt(msg) {
    // A message of ours the server has not confirmed yet: shown at the bottom.
    this.messages.set(msg.key, msg);
    this.byClientId.set(msg.clientId, msg);
    this.pending.push(msg);
    this.dirty.order = true;
    this.touch(msg);
  }

  _place(msg, { pending }) {
    this.placed = this.placed.filter((m) => m !== msg);
    this.pending = this.pending.filter((m) => m !== msg);
    (pending ? this.pending : this.placed).push(msg);
    this.dirty.order = true;
    this.touch(msg);
  }

  _rekey(msg, key) {
    if (msg.key === key) return;
    this.messages.delete(msg.key);
    msg.key = key;
    this.messages.set(key, msg);
    this.touch(msg);
  }

  addLocal(clientId, text, images = []) {
    const msg = this._newMessage({ key: `local:${clientId}`, role: "user", author: {
      id: this.you.id, name: this.you.name }, text, images, clientId, sending: true,
                                   status: "pending" });
    this.local.set(clientId, msg);
    this._adopt(msg);
    return msg;
  }

  unsent() {
    return [...this.local.values()].filter((m) => m.sending && !m.failed);
  }

  ack(frame) {
    const msg = this.byClientId.get(frame.client_id) || this.local.get(frame.client_id);
    if (!msg) return;
    this.local.delete(frame.client_id);
    msg.sending = false;
    msg.id = frame.message_id;
    const existing = this.messages.get(String(frame.message_id));
    if (existing && existing !== msg) {  // the event came first: keep that one
      this._drop(msg);
      return;
    }
    this._rekey(msg, String(frame.message_id));
    if (frame.run) msg.wakesAgent = frame.run !== "none";
    if (msg.status === "pending") {
      // queued: it waits for the run's next step; otherwise it started a run (in the history)
      msg.queued = frame.queued;
      if (!frame.queued) {
        msg.status = "complete";
        this._place(msg, { pending: false });
      }
    }
    this.touch(msg);
  }

  sendFailed(reason, clientId) {
    // A refused `send`: the one its error frame names, else the oldest unsent (the server
    // answers in order). Returns that message (its `text` is what was typed), or null.
    const msg = clientId === undefined ? this.unsent()[0] : this.local.get(clientId);
    if (!msg) return null;
    msg.failed = reason;
    msg.sending = false;
    this.local.delete(msg.clientId);
    this.touch(msg);
    return msg;
  }

  _drop(msg) {
    this.messages.delete(msg.key);
    this.placed = this.placed.filter((m) => m !== msg);
    this.pending = this.pending.filter((m) => m !== msg);
    this.dirty.order = true;
  }

  _fillFromBlocks(msg, blocks, reasoning) {
    const thinking = blocksText(blocks, "thinking", "thinking");
    const redacted = (blocks || []).some((b) => b.type === "redacted_thinking");
    msg.thinking = [reasoning || "", thinking, redacted ? gettext("(some reasoning is redacted)") : ""]
      .filter(Boolean).join("\n\n");
    msg.text = blocksText(blocks, "text", "text");
    msg.images = (blocks || []).filter((b) => b.type === "image" && b.url)
      .map((b) => ({ id: b.id, url: b.url }));
    const uses = (blocks || []).filter((b) => b.type === "tool_use");
    const streamed = msg.calls.filter((c) => c.index !== -1);
    uses.forEach((block, i) => {
      const known = block.id ? this.calls.get(block.id) : null;
      const call = streamed[i] || (known && known.index === -1 && known.msg !== msg
        ? this._moveCall(known, msg) : this._newCall(msg, null));
      call.name = block.name || call.name;
      if (block.id) {
        this._registerCall(call, block.id);
        call.args = block.input || {};
        if (call.status === "streaming") call.status = "ready";
        if (block.decision) this._decided(call, block);
        if (block.result) this._attachResult(block.result, block.duration_ms);
        if (block.subagent_waits) this._replaySub(block.id, block.subagent_waits);
      } else if (block.partial_arguments !== undefined) {
        call.argsText = block.partial_arguments;
      }
    });
    if (msg.role === "user" && msg.text.startsWith(SUMMARY_PREFIX)) {
      msg.summary = true;
      msg.text = msg.text.slice(SUMMARY_PREFIX.length).trim();
    }
  }

  _addStored(m) {
    const blocks = m.content || [];
    const results = blocks.filter((b) => b.type === "tool_result");
    if (results.length && (m.role === "tool" || results.length === blocks.length)) {
      results.forEach((r) => this._attachResult(r, null));
      return;
    }
    const key = m.engine_id || String(m.id);
    let msg = this.messages.get(key);
    if (!msg && m.client_id) {
      msg = this.byClientId.get(m.client_id) || this.local.get(m.client_id);
      if (msg) {
        this.local.delete(m.client_id);
        this._rekey(msg, key);
      }
    }
    if (!msg) {
      msg = this._newMessage({ key });
      this.messages.set(key, msg);
    }
    Object.assign(msg, { id: m.id, engineId: m.engine_id, role: m.role, author: m.author,
                         status: m.status, clientId: m.client_id, sending: false,
                         queued: m.status === "pending", wakesAgent: !!m.wakes_agent,
                         runId: m.run_id ?? null,
                         supersededBy: m.superseded_by_run
                           || (m.superseded_by_message ? editKey(m.superseded_by_message) : null) });
    if (m.client_id) this.byClientId.set(m.client_id, msg);
    this._fillFromBlocks(msg, blocks, m.reasoning_content);
    msg.sources = m.sources || [];
    this._place(msg, { pending: msg.queued });
    return msg;
  }

  applyState(state) {
    this.reset();
    this.you = state.you;
    this.conversation = state.conversation;
    this.models = state.models || []; // [{id, name, controls, defaults}] (model_settings.js)
    for (const m of state.messages || []) this._addStored(m);
    this.before = state.before || null;
    if (state.run) this.run = { ...state.run, stopping: state.run.stopped_by };
    else this.lastEnd = this.pageEnd;
    for (const wait of (state.waiting && state.waiting.approvals) || []) this._awaitApproval(wait);
    for (const q of (state.waiting && state.waiting.questions) || []) this._awaitInput(q);
    for (const e of (state.waiting && state.waiting.elicitations) || []) this._awaitElicitation(e);
    this.todos = state.todos || [];
    for (const change of state.wiki_changes || []) this._wikiChange(change);
    for (const fork of state.forks || []) this._forkMade(fork);
    const compaction = state.compaction || {};
    if (compaction.paused_until && new Date(compaction.paused_until) > new Date()) {
      const why = interpolate(ngettext("%(n)s compaction failed in a row",
                                       "%(n)s compactions failed in a row",
                                       compaction.failures), { n: compaction.failures }, true);
      this._compactionPaused(why, compaction.paused_until);
    }
    if (state.usage) this.usage = state.usage;
    this._settleCalls(this.run ? "running" : "error");
    this.ready = true;
  }

  requestHistory() {
    // The cursor to ask the server for (and mark it asked), or null when there is nothing
    // older or a page is on its way.
    if (!this.ready || this.before === null || this.loadingHistory) return null;
    this.loadingHistory = true;
    this.dirty.history = true;
    return this.before;
  }

  applyHistory(page) {
    // An older page (oldest first) goes before everything shown. A page asked for before a
    // fresh state frame replaced the store is stale: dropped.
    if (!this.loadingHistory) return;
    const shown = new Set([...this.placed, ...this.pending]);
    for (const m of page.messages || []) this._addStored(m);
    const older = (list) => list.filter((m) => !shown.has(m));
    const known = (list) => list.filter((m) => shown.has(m));
    this.placed = [...older(this.placed), ...known(this.placed)];
    this.pending = [...older(this.pending), ...known(this.pending)];
    for (const change of page.wiki_changes || []) this._wikiChange(change);
    for (const fork of page.forks || []) this._forkMade(fork);
    this.before = page.before || null;
    this.loadingHistory = false;
    Object.assign(this.dirty, { order: true, history: true, prepended: true });
  }

  // -- tool calls ---------------------------------------------------------------------------
  _newCall(msg, index) {
    const call = { key: nextUid(), index, id: null, name: "", argsText: "", args: null,
                   status: "streaming", durationMs: null, result: null, decision: null,
                   reason: "", question: null, note: "", sub: [], msg };
    msg.calls.push(call);
    this.touch(msg);
    return call;
  }

  _callAt(msg, index) {
    // Call ``index`` of the message (the provider's stream index: Anthropic counts text blocks
    // too). Calls from a state frame's checkpoint have no index yet: the first event naming an
    // unknown index adopts the first of them, in order.
    this.touch(msg);
    const known = msg.calls.find((c) => c.index === index);
    if (known) return known;
    const unindexed = msg.calls.find((c) => c.index === null);
    if (unindexed) {
      unindexed.index = index;
      return unindexed;
    }
    return this._newCall(msg, index);
  }

  _registerCall(call, id) {
    call.id = id;
    this.calls.set(id, call);
  }

  _call(id, name, parentId = null) {
    // The call with this id; one the transcript does not show yet goes on the message of the
    // Task call whose sub-agent made it (`parentId`), else on the last message.
    let call = this.calls.get(id);
    if (call) {
      this.touch(call.msg);
      return call;
    }
    const parent = parentId ? this.calls.get(parentId) : null;
    let msg = parent ? parent.msg : [...this.placed].reverse().find((m) => m.role === "assistant");
    if (!msg) {
      msg = this._newMessage({ key: `call:${id}`, role: "tool" });
      this.messages.set(msg.key, msg);
      this._place(msg, { pending: false });
    }
    call = this._newCall(msg, -1);
    const tool = name || call.name;
    call.name = parentId ? interpolate(gettext("%(tool)s (sub-agent)"), { tool }, true) : tool;
    call.status = "ready";
    this._registerCall(call, id);
    return call;
  }

  _moveCall(call, msg) {
    // A call first seen without its message (its result or wait arrived before the page that
    // holds it): it moves to that message, keeping what it knows.
    call.msg.calls = call.msg.calls.filter((c) => c !== call);
    this.touch(call.msg);
    if (!call.msg.calls.length && call.msg.role === "tool") this._drop(call.msg);
    call.msg = msg;
    call.index = null; // a stored call now, like its neighbours
    msg.calls.push(call);
    this.touch(msg);
    return call;
  }

  _decided(call, block) {
    // A state frame's decision on a stored call: who decided survives a reload, and a denied
    // call stays "denied" (its error result is the denial, not a failure).
    const approved = block.decision === "approved";
    call.decision = { approved, by: block.decided_by ? block.decided_by.name : null,
                      edited: block.edited_arguments || null };
    if (!approved) call.status = "denied";
  }

  _attachResult(block, durationMs) {
    const call = this._call(block.tool_use_id, block.name);
    call.result = { text: resultText(block), isError: !!block.is_error };
    if (durationMs !== null) call.durationMs = durationMs;
    if (call.status !== "denied") call.status = block.is_error ? "error" : "done";
    this.touch(call.msg);
  }

  _wikiChange(ev) {
    // A commit the agent made to the team wiki: a line under the message whose tool call made
    // it (a sub-agent's call is not in the transcript: then under the latest answer).
    const call = this.calls.get(ev.call_id);
    const msg = call ? call.msg : [...this.placed].reverse().find((m) => m.role === "assistant");
    if (!msg || msg.wiki.some((w) => w.commit === ev.commit && w.path === ev.path)) return;
    msg.wiki.push({ path: ev.path, commit: ev.commit, author: ev.author, summary: ev.summary || "",
                    created: !!ev.created, merged: !!ev.merged, pageUrl: ev.page_url || "",
                    diffUrl: ev.diff_page_url || ev.diff_url || "" });
    this.touch(msg);
  }

  _forkMade(fork) {
    // A conversation forked at one of these messages (a page's `forks`, or the
    // conversation_forked event): a line under that message. A message streamed live is
    // known here by its engine id.
    const msg = (fork.engine_id && this.messages.get(fork.engine_id))
      || [...this.messages.values()].find((m) => m.id && String(m.id) === String(fork.message_id));
    if (!msg || msg.forks.some((f) => f.id === fork.conversation_id)) return;
    msg.forks.push({ id: fork.conversation_id, title: fork.title, by: fork.by });
    this.touch(msg);
  }

  _awaitApproval(wait) {
    const call = this._call(wait.call_id, wait.name, wait.parent_call_id);
    if (!call.args) call.args = wait.arguments;
    call.status = "waiting";
    call.reason = approvalReason(wait);
    this.approvals.set(wait.call_id, wait);
  }

  _awaitElicitation(ev) {
    this.elicitations.set(ev.elicitation_id, { id: ev.elicitation_id, server: ev.server,
                                               message: ev.message, schema: ev.schema,
                                               answer: null });
    this.dirty.elicitations = true;
  }

  _awaitInput(q) {
    const call = this._call(q.question_id, "AskUser", q.parent_call_id);
    call.question = { id: q.question_id, text: q.question, answer: null, by: null };
    this.questions.set(q.question_id, q);
  }

  _settleCalls(orphanStatus) {
    // Calls with no result: still going while a run is active, otherwise they never finished.
    for (const msg of this.messages.values()) {
      for (const call of msg.calls) {
        if (!ACTIVE_CALL.has(call.status) || orphanStatus === "running") continue;
        call.status = "error";
        call.note = gettext("did not finish");
        this.touch(msg);
      }
    }
  }

  // -- events -----------------------------------------------------------------------------
  applyEvent(ev) {
    const handler = HANDLERS[ev.kind];
    if (handler) handler.call(this, ev);
  }

  _message(id) {
    let msg = this.messages.get(id);
    if (!msg) {
      msg = this._newMessage({ key: id, engineId: id, status: "streaming" });
      this.messages.set(id, msg);
      this._place(msg, { pending: false });
    }
    this.touch(msg);
    return msg;
  }

  notice(kind, level, text, { replace = false, link = null, linkText = null } = {}) {
    if (replace) this.notices = this.notices.filter((n) => n.kind !== kind);
    // Only a path of this site becomes a link (never javascript: or another origin).
    const href = typeof link === "string" && /^\/(?!\/)/.test(link) ? link : null;
    this.notices.push({ id: nextUid(), kind, level, text, href, linkText, at: new Date() });
    if (this.notices.length > MAX_NOTICES) this.notices.splice(0, this.notices.length - MAX_NOTICES);
    this.dirty.notices = true;
  }

  dismiss(id) {
    this.notices = this.notices.filter((n) => n.id !== id);
    this.dirty.notices = true;
  }

  _clearRetrying() {
    // The provider answered (or the run is over): the retry notice has done its job.
    if (!this.notices.some((n) => n.kind === "retrying")) return;
    this.notices = this.notices.filter((n) => n.kind !== "retrying");
    this.dirty.notices = true;
  }

  _compactionPaused(why, until) {
    // The breaker's cooldown (DESIGN 2.6): say so until a compaction works ("compacted"
    // replaces this notice).
    const text = gettext("%(why)s: automatic compaction is paused until %(until)s. “Compact now” tries again at once.");
    const at = fmtClock(until, this.clock);
    this.notice("compaction", "warn", interpolate(text, { why, until: at }, true),
                { replace: true });
  }

  _replaySub(parentId, events) {
    // A Task call's sub-agent waits, from a stored page: their cards again, as the live
    // events made them (the run's status is not theirs to change now).
    this.replaying = true;
    try {
      for (const event of events) {
        HANDLERS.subagent_event.call(this, { parent_call_id: parentId, event });
      }
    } finally {
      this.replaying = false;
    }
  }

  _runStatus(status) {
    if (this.replaying) return;
    if (this.run) this.run.status = status;
    this.dirty.run = true;
  }

  _subEvent(call, ev) {
    let line = null;
    if (ev.kind === "tool_started") line = `▸ ${ev.name}`;
    else if (ev.kind === "tool_result") {
      line = `${ev.result && ev.result.is_error ? "✗" : "✓"} ${ev.name} (${Math.round(ev.duration_ms)} ms)`;
    } else if (ev.kind === "message_ended" && ev.message && ev.message.role === "assistant") {
      const text = blocksText(ev.message.content, "text", "text").trim();
      if (text) line = text.length > 200 ? `${text.slice(0, 200)}…` : text;
    }
    if (line === null) return;
    call.sub.push(line);
    if (call.sub.length > MAX_SUB_LINES) call.sub.shift();
    this.touch(call.msg);
  }

  setPresence(frame) {
    if (frame.present) {
      this.present = frame.present;
      this.dirty.presence = true;
    }
    if (frame.typing && String(frame.typing.id) !== String(this.you.id)) {
      this.typing.set(String(frame.typing.id), { person: frame.typing, until: Date.now() + 4000 });
      this.dirty.typing = true;
    }
  }

  typers(now = Date.now()) {
    for (const [id, entry] of this.typing) if (entry.until <= now) this.typing.delete(id);
    return [...this.typing.values()].map((e) => e.person);
  }
}

/** The hour and minute of `iso` in the person's time zone and language (the page's; the
 *  browser's own would differ from the rest of the site). */
function fmtClock(iso, { timeZone, locale } = {}) {
  return new Date(iso).toLocaleTimeString(locale || [], { hour: "2-digit", minute: "2-digit",
                                                          timeZone: timeZone || undefined });
}

function fmtSeconds(value) {
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

const HANDLERS = {
  user_message(ev) {
    const msg = this._addStored(ev.message);
    if (msg) msg.queued = !!ev.queued && msg.status === "pending";
  },
  messages_injected(ev) {
    for (const m of ev.messages || []) {
      const text = blocksText(m.content, "text", "text");
      const authorId = m.author ? String(m.author.id) : null;
      const waiting = this.pending.filter((p) => !p.sending && !p.failed);
      const msg = waiting.find((p) => p.author && String(p.author.id) === authorId
                               && p.text === text) || waiting[0];
      if (!msg) continue;
      msg.queued = false;
      msg.status = "complete";
      this._place(msg, { pending: false });
    }
  },
  messages_superseded(ev) { supersede(this, ev); },
  conversation_forked(ev) { this._forkMade(ev); },
  title_changed(ev) { retitle(this, ev); },
  agent_mode_changed(ev) {
    if (this.conversation) this.conversation.agent_mode = ev.agent_mode;
    const text = ev.agent_mode === "mention"
      ? gettext("%(name)s set the agent to answer when mentioned or asked.")
      : gettext("%(name)s set the agent to answer every message.");
    this.notice("agent-mode", "info", interpolate(text, { name: personName(ev.by) }, true),
                { replace: true });
    for (const msg of this.messages.values()) this.touch(msg); // the "called the agent" marks
    this.dirty.run = true;
  },
  settings_changed(ev) {
    if (this.conversation) this.conversation.settings = { model: ev.model, reasoning: ev.reasoning };
    const text = gettext("%(name)s changed the model settings: they apply from the next run.");
    this.notice("settings", "info", interpolate(text, { name: personName(ev.by) }, true),
                { replace: true });
    this.dirty.settings = true;
  },
  run_queued(ev) {
    this.run = { id: ev.run_id, status: "queued", model: null, started_by: ev.started_by,
                 stopped_by: null, stopping: null, turn: null };
    this.lastEnd = null;
    this.dirty.run = true;
  },
  run_started(ev) {
    if (!this.run) this.run = { id: ev.run_id, started_by: null, stopped_by: null, stopping: null };
    this.run.model = ev.model;
    this._runStatus("running");
  },
  turn_started(ev) {
    if (this.run) this.run.turn = ev.turn;
    this.dirty.run = true;
  },
  run_stopping(ev) {
    if (this.run) {
      this.run.stopping = ev.by;
      this.run.stopped_by = this.run.stopped_by || ev.by;
    }
    this.dirty.run = true;
  },
  run_ended(ev) {
    const run = this.run || {};
    this.lastEnd = { status: ev.status, error_kind: ev.error_kind || null, message: ev.message || "",
                     stopped_by: ev.stopped_by || run.stopped_by || null,
                     started_by: run.started_by || null };
    this.run = null;
    this._clearRetrying();
    this.approvals.clear();
    this.questions.clear();
    for (const msg of this.messages.values()) {
      if (msg.status === "streaming") {
        msg.status = ev.status === "cancelled" ? "cancelled" : "error";
        this.touch(msg);
      }
    }
    this._settleCalls("error");
    this.dirty.run = true;
    if (ev.status === "failed" || ev.status === "interrupted") {
      const why = ev.message || ev.error_kind || gettext("unknown error");
      const text = ev.status === "failed" ? gettext("The run failed: %(why)s")
        : gettext("The run was interrupted: %(why)s");
      this.notice("run_ended", "error", interpolate(text, { why }, true));
    }
  },
  message_started(ev) {
    this._clearRetrying();
    const msg = this._message(ev.message_id);
    msg.role = "assistant";
    msg.status = "streaming";
    msg.runId = this.run ? this.run.id : null; // its version (version_slots.js)
  },
  text_delta(ev) {
    this._message(ev.message_id).text += ev.text;
  },
  reasoning_delta(ev) {
    this._message(ev.message_id).thinking += ev.text;
  },
  tool_call_started(ev) {
    const msg = this._message(ev.message_id);
    const call = msg.calls.find((c) => c.index === ev.index) || this._newCall(msg, ev.index);
    call.name = ev.name;
  },
  tool_call_delta(ev) {
    const call = this._callAt(this._message(ev.message_id), ev.index);
    call.argsText += ev.arguments_delta;
  },
  tool_call_ready(ev) {
    const call = this._callAt(this._message(ev.message_id), ev.index);
    call.name = ev.call.name;
    call.args = ev.call.arguments || {};
    if (call.status === "streaming") call.status = "ready";
    this._registerCall(call, ev.call.id);
  },
  message_ended(ev) {
    const m = ev.message || {};
    const blocks = m.content || [];
    if (m.role !== "assistant") {
      blocks.filter((b) => b.type === "tool_result").forEach((b) => {
        const call = this.calls.get(b.tool_use_id);
        if (!call || !call.result) this._attachResult(b, null);
      });
      return;
    }
    const msg = this._message(ev.message_id);
    msg.role = "assistant";
    msg.status = ev.status || "complete";
    this._fillFromBlocks(msg, blocks, m.reasoning_content);
    msg.sources = ev.sources || [];
  },
  tool_started(ev) {
    const call = this._call(ev.call_id, ev.name);
    if (call.status !== "denied") call.status = "running";
  },
  tool_result(ev) {
    this._attachResult(ev.result, ev.duration_ms);
  },
  awaiting_approval(ev) {
    this._awaitApproval(ev);
    this._runStatus("awaiting_approval");
  },
  approval_decided(ev) {
    const call = this._call(ev.call_id);
    call.decision = { approved: ev.approved, by: ev.decided_by,
                      edited: ev.edited_arguments || null };
    call.status = ev.approved ? "running" : "denied";
    this.approvals.delete(ev.call_id);
    this._runStatus("running");
  },
  awaiting_input(ev) {
    this._awaitInput(ev);
    this._runStatus("awaiting_input");
  },
  awaiting_elicitation(ev) {
    this._awaitElicitation(ev);
    this._runStatus("awaiting_input");
  },
  elicitation_answered(ev) {
    const question = this.elicitations.get(ev.elicitation_id);
    if (question) {
      question.answer = { action: ev.action, by: ev.answered_by };
      this.dirty.elicitations = true;
    }
    this._runStatus("running");
  },
  input_received(ev) {
    const call = this._call(ev.question_id, "AskUser");
    call.question = { ...(call.question || { id: ev.question_id, text: "" }),
                      answer: ev.answer, by: ev.answered_by };
    this.questions.delete(ev.question_id);
    this._runStatus("running");
  },
  usage(ev) {
    this.usage = ev;
    this.dirty.usage = true;
  },
  wiki_changed(ev) {
    this._wikiChange(ev);
  },
  todos_updated(ev) {
    this.todos = ev.todos || [];
    this.dirty.todos = true;
  },
  retrying(ev) {
    const what = (ev.error_kind || "error").replaceAll("_", " ");
    const text = gettext("provider %(what)s, retrying in %(seconds)s s, attempt %(attempt)s of %(max)s");
    this.notice("retrying", "warn", interpolate(text, {
      what, seconds: fmtSeconds(ev.delay_s), attempt: ev.attempt, max: ev.max_attempts }, true),
    { replace: true });
  },
  compaction_started(ev) {
    const text = gettext("Compacting the conversation (%(reason)s, %(tokens)s tokens)…");
    this.notice("compaction", "info", interpolate(text, {
      reason: ev.reason, tokens: ev.tokens_before.toLocaleString() }, true), { replace: true });
  },
  compacted(ev) {
    const text = gettext("Compacted: %(n)s earlier messages summarized (%(before)s → %(after)s tokens)");
    this.notice("compaction", "info", interpolate(text, {
      n: ev.messages_removed, before: ev.tokens_before.toLocaleString(),
      after: ev.tokens_after.toLocaleString() }, true), { replace: true });
  },
  compaction_failed(ev) {
    if (ev.paused_until) {
      const why = interpolate(gettext("Compaction failed %(n)s times in a row (%(message)s)"),
                              { n: ev.consecutive_failures, message: ev.message }, true);
      this._compactionPaused(why, ev.paused_until);
    } else {
      this.notice("compaction", "warn", interpolate(gettext("Compaction failed: %(message)s"),
                                                    { message: ev.message }, true), { replace: true });
    }
  },
  warning(ev) {
    this.notice("warning", "warn", ev.message, { link: ev.link, linkText: ev.link_text });
  },
  error(ev) {
    this.notice("error", "error", ev.message || ev.error_kind || "error");
  },
  subagent_event(ev) {
    const nested = ev.event;
    if (!nested) return;
    const call = this.calls.get(ev.parent_call_id);
    if (call) this._subEvent(call, nested);
    // A wait gets its own card; later events of a call that has one keep that card current.
    const id = nested.call_id || nested.question_id;
    if (SUB_WAITS.has(nested.kind) || (id && this.calls.has(id))) {
      const handler = HANDLERS[nested.kind];
      if (handler) handler.call(this, { ...nested, parent_call_id: ev.parent_call_id });
    }
  },
};
