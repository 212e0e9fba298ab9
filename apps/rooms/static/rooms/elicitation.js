// MCP servers' questions (elicitations): one card per question, a form built from the
// requested schema — the protocol's restricted JSON Schema, flat properties that are strings
// (with an optional email, uri, date or date-time format), numbers, integers, booleans or enums
// (single select: `enum`, or `oneOf` of {const, title}; multiple select: an array whose items
// are such an enum). Cards are updated in place, so what someone is typing survives redraws.

const INPUT_TYPES = { email: "email", uri: "url", date: "date" };

function element(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

function button(text, action, type = "button") {
  const el = element("button", null, text);
  el.type = type;
  el.dataset.action = action;
  return el;
}

function choices(prop) {
  // [{value, label}] of an enum property (or of an array's items), else null.
  if (Array.isArray(prop.enum)) {
    const names = Array.isArray(prop.enumNames) ? prop.enumNames : [];
    return prop.enum.map((value, i) => ({ value, label: names[i] || String(value) }));
  }
  const options = prop.oneOf || prop.anyOf;
  if (Array.isArray(options)) {
    return options.map((o) => ({ value: o.const, label: o.title || String(o.const) }));
  }
  return null;
}

function field(id, name, prop, required) {
  // One property's control: a `.elicit-field` with data-name and data-kind, read back by
  // `collect`.
  const wrap = element("div", "elicit-field");
  wrap.dataset.name = name;
  const label = element("label", null, (prop.title || name) + (required ? " *" : ""));
  const controlId = `${id}-${name}`.replace(/[^A-Za-z0-9_-]/g, "_");
  label.htmlFor = controlId;
  wrap.append(label);
  if (prop.description) wrap.append(element("small", "elicit-help", prop.description));
  const many = prop.type === "array" ? choices(prop.items || {}) : null;
  const one = prop.type === "array" ? null : choices(prop);
  if (many) {
    wrap.dataset.kind = "many";
    const chosen = new Set(prop.default || []);
    const box = element("div", "elicit-many");
    box.id = controlId;
    for (const c of many) {
      const item = element("label", "elicit-choice");
      const tick = element("input");
      tick.type = "checkbox";
      tick.value = c.value;
      tick.checked = chosen.has(c.value);
      item.append(tick, ` ${c.label}`);
      box.append(item);
    }
    wrap.append(box);
  } else if (one) {
    wrap.dataset.kind = "one";
    const select = element("select");
    select.id = controlId;
    if (!required || prop.default === undefined) select.append(element("option", null, ""));
    for (const c of one) {
      const option = element("option", null, c.label);
      option.value = c.value;
      option.selected = c.value === prop.default;
      select.append(option);
    }
    wrap.append(select);
  } else if (prop.type === "boolean") {
    wrap.dataset.kind = "boolean";
    const tick = element("input");
    tick.type = "checkbox";
    tick.id = controlId;
    tick.checked = prop.default === true;
    wrap.append(tick);
  } else {
    const numeric = prop.type === "number" || prop.type === "integer";
    wrap.dataset.kind = numeric ? prop.type : "string";
    const input = element("input");
    input.id = controlId;
    input.type = numeric ? "number" : INPUT_TYPES[prop.format] || "text";
    if (prop.type === "integer") input.step = "1";
    if (prop.type === "number") input.step = "any";
    if (prop.minimum !== undefined) input.min = prop.minimum;
    if (prop.maximum !== undefined) input.max = prop.maximum;
    if (prop.maxLength !== undefined) input.maxLength = prop.maxLength;
    if (prop.default !== undefined) input.value = prop.default;
    wrap.append(input);
  }
  return wrap;
}

function form(question, canWrite) {
  const el = element("form", "elicitation");
  el.dataset.elicitationId = question.id;
  el.noValidate = true; // the server checks against the schema and says what is wrong
  const schema = question.schema || {};
  const required = new Set(schema.required || []);
  for (const [name, prop] of Object.entries(schema.properties || {})) {
    el.append(field(`elicit-${question.id}`, name, prop || {}, required.has(name)));
  }
  if (canWrite) {
    const actions = element("div", "elicit-actions");
    actions.append(button(gettext("Submit"), "elicit-accept", "submit"),
                   button(gettext("Decline"), "elicit-decline"),
                   button(gettext("Cancel"), "elicit-cancel"));
    el.append(actions);
  } else {
    el.querySelectorAll("input, select").forEach((c) => { c.disabled = true; });
  }
  return el;
}

/** The content of an elicitation form, as the schema's types want it; empty optional fields
 * are left out. */
export function collect(formEl) {
  const content = {};
  for (const wrap of formEl.querySelectorAll(".elicit-field")) {
    const name = wrap.dataset.name;
    const kind = wrap.dataset.kind;
    if (kind === "many") {
      const values = [...wrap.querySelectorAll("input:checked")].map((t) => t.value);
      if (values.length) content[name] = values;
    } else if (kind === "boolean") {
      content[name] = wrap.querySelector("input").checked;
    } else {
      const control = wrap.querySelector("input, select");
      const raw = control.value.trim();
      if (raw === "") continue;
      content[name] = kind === "number" || kind === "integer" ? Number(raw) : raw;
    }
  }
  return content;
}

function answerText(answer) {
  if (!answer.by) return gettext("Declined: nobody answered in time");
  const text = {
    accept: gettext("Answered by %(name)s"),
    decline: gettext("Declined by %(name)s"),
    cancel: gettext("Cancelled by %(name)s"),
  }[answer.action] || `${answer.action}: %(name)s`;
  return interpolate(text, { name: answer.by }, true);
}

/** Show `questions` (the store's elicitations, in order) in `box`. */
export function renderElicitations(box, questions, canWrite) {
  box.hidden = questions.length === 0;
  const wanted = new Set(questions.map((q) => q.id));
  for (const card of [...box.children]) {
    if (!wanted.has(card.dataset.elicitationId)) card.remove();
  }
  for (const q of questions) {
    let card = box.querySelector(`:scope > [data-elicitation-id="${CSS.escape(q.id)}"]`);
    if (!card) {
      card = element("section", "elicitation-card");
      card.dataset.elicitationId = q.id;
      card.append(element("p", "elicit-server", interpolate(gettext("The MCP server “%(server)s” asks:"), { server: q.server }, true)),
                  element("p", "elicit-message", q.message), form(q, canWrite));
      box.append(card);
    }
    if (q.answer) {
      const open = card.querySelector("form.elicitation");
      if (open) open.remove();
      let done = card.querySelector(".answered-by");
      if (!done) {
        done = element("p", "answered-by");
        card.append(done);
      }
      done.textContent = answerText(q.answer);
    }
  }
}
