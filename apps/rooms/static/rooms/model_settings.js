// The composer's model and reasoning controls (docs/protocol.md, "Model and reasoning"): the
// enabled models, and for the chosen one only the controls its configuration declares
// (`controls`, names of the engine's ReasoningParams fields). A change sends `configure`; what
// the controls show is the server's word (the state frame, then settings_changed), except while
// this page's latest change is on its way: an echo of an earlier change arriving in between
// must not undo a later one (nor have the next change send it undone). A refusal puts the
// server's settings back.

const CHOICES = {
  effort: ["none", "minimal", "low", "medium", "high", "xhigh", "max"],
  thinking_type: ["enabled", "disabled", "adaptive"],
  thinking_level: ["minimal", "low", "medium", "high"],
  text_verbosity: ["low", "medium", "high"],
};
const NUMBERS = new Set(["thinking_budget"]); // tokens

const LABELS = {
  effort: gettext("Reasoning effort"),
  thinking_type: gettext("Thinking"),
  thinking_budget: gettext("Thinking budget (tokens)"),
  thinking_level: gettext("Thinking level"),
  text_verbosity: gettext("Verbosity"),
  enabled_search: gettext("Web search"),
  url_context: gettext("Read linked pages"),
  include_thoughts: gettext("Show thoughts"),
  disable_context_caching: gettext("No prompt caching"),
};

const VALUES = {
  none: gettext("none"),
  minimal: gettext("minimal"),
  low: gettext("low"),
  medium: gettext("medium"),
  high: gettext("high"),
  xhigh: gettext("extra high"),
  max: gettext("maximum"),
  enabled: gettext("on"),
  disabled: gettext("off"),
  adaptive: gettext("adaptive"),
};

function element(tag, props = {}, children = []) {
  const el = Object.assign(document.createElement(tag), props);
  el.append(...children);
  return el;
}

function canonical(reasoning) {
  // Key order is not part of the settings (the database may store them in another).
  return JSON.stringify(Object.keys(reasoning).sort().map((k) => [k, reasoning[k]]));
}

function same(a, b) {
  return a.model === b.model && canonical(a.reasoning) === canonical(b.reasoning);
}

function defaultText(model, name) {
  const value = model.defaults[name];
  if (value === undefined) return gettext("default");
  return interpolate(gettext("default (%(value)s)"), { value: VALUES[value] || String(value) },
                     true);
}

function control(model, name) {
  // One labelled control; `data-control` names its ReasoningParams field (its value is set
  // by render).
  const label = element("label", { className: "model-control" }, [LABELS[name] || name, " "]);
  let input;
  if (CHOICES[name]) {
    input = element("select", {}, [element("option", { value: "", textContent: defaultText(model, name) }),
      ...CHOICES[name].map((v) => element("option", { value: v, textContent: VALUES[v] || v }))]);
  } else if (NUMBERS.has(name)) {
    input = element("input", { type: "number", min: "0", step: "1024", inputMode: "numeric",
                               placeholder: defaultText(model, name) });
  } else {
    input = element("input", { type: "checkbox" });
    label.classList.add("model-switch");
  }
  input.dataset.control = name;
  label.append(input);
  return label;
}

/**
 * Wire `box` (#model-settings, inside the composer) to `store` (its `models` and
 * `conversation.settings`); `send(frame)` sends a `configure` frame (false: not sent). Returns
 * `{ render(), heard(event), reset() }`: render when the store marks `dirty.settings`; heard
 * with each `settings_changed` event as it arrives; reset when the server refused a
 * `configure` or the socket (re)opened, which end what this page was waiting for.
 */
export function setupModelSettings(box, { store, send }) {
  function settings() {
    return (store.conversation && store.conversation.settings) || { model: null, reasoning: {} };
  }

  // This page's latest configure ({model, reasoning}) until the server echoes it: shown instead
  // of the server's settings. The server stores what it accepts as sent (less nulls, which are
  // never sent) and echoes only a change, so the echo equals it. Each event is compared as it
  // arrives: two may land before one render, and the settings can come back to this value
  // (a change undone) before its own echo.
  let pending = null;

  function configure(model, reasoning) {
    const next = { model, reasoning };
    // Not sent (offline): the controls show what is still waited for, or the server's word.
    if (send({ type: "configure", ...next }) && !same(next, pending || settings())) {
      pending = next;
    }
    render();
  }

  function heard(event) {
    if (pending && same(pending, event)) pending = null;
  }

  function reset() {
    pending = null;
    store.dirty.settings = true;
  }

  function chosenReasoning() {
    const reasoning = {};
    for (const input of box.querySelectorAll("[data-control]")) {
      const name = input.dataset.control;
      if (input.type === "checkbox") reasoning[name] = input.checked;
      else if (input.value !== "") reasoning[name] = NUMBERS.has(name) ? Number(input.value) : input.value;
    }
    return reasoning;
  }

  // A control being typed in (a number until its change event) keeps what is typed when
  // someone's change arrives meanwhile; leaving it unchanged shows the settings again.
  let editing = null;
  box.addEventListener("input", (event) => { editing = event.target; });
  box.addEventListener("focusout", () => {
    if (editing) { editing = null; render(); }
  });

  box.addEventListener("change", (event) => {
    editing = null;
    if (!store.canWrite) return;
    if (event.target.id === "model-choice") {
      // Another model's controls differ: its choices start from its defaults.
      configure(Number(event.target.value), {});
    } else if (event.target.dataset.control && shown().model !== null) {
      configure(shown().model, chosenReasoning());
    }
  });

  function show(input, model, reasoning) {
    // The value shown of one control: this page's waiting change, else the server's (null:
    // the model's default).
    const name = input.dataset.control;
    if (input.type === "checkbox") input.checked = Boolean(reasoning[name] ?? model.defaults[name]);
    else if (input !== editing) input.value = reasoning[name] ?? "";
  }

  function shown() {
    return pending || settings();
  }

  let built = null; // what the controls were built for: the models and the chosen one
  function render() {
    const models = store.models || [];
    const current = shown();
    const chosen = models.find((m) => m.id === current.model);
    const key = JSON.stringify([models.map((m) => m.id), current.model]);
    box.hidden = models.length === 0;
    if (key !== built) { // rebuilt only for another model: a control in use keeps its focus
      built = key;
      const select = element("select", { id: "model-choice", name: "model" },
        models.map((m) => element("option", { value: String(m.id), textContent: m.name })));
      const controls = chosen ? chosen.controls.map((name) => control(chosen, name)) : [];
      box.replaceChildren(element("label", { className: "model-control" }, [gettext("Model"), " ", select]),
                          ...controls);
    }
    box.querySelector("#model-choice").value = current.model === null ? "" : String(current.model);
    if (chosen) box.querySelectorAll("[data-control]").forEach((i) => show(i, chosen, current.reasoning));
  }

  return { render, heard, reset };
}
