// The editor (and the conflict screen): a live preview rendered by the server — the same
// markdown-it + nh3 the page itself uses, so what the preview shows is what the page will —
// debounced while typing; a warning while conflict markers remain; "use this text" buttons on
// the conflict screen; Ctrl/Cmd+S saves; leaving with unsaved text asks first.

const PREVIEW_DELAY_MS = 300;
const MARKERS = /^<{7}( |$)[\s\S]*^>{7}( |$)/m;

/** Wire form#wiki-editor; `onSubmit()` runs just before the form is sent. */
export function setupEditor(form, { onSubmit }) {
  const area = form.querySelector("#wiki-text");
  const pane = form.querySelector("#wiki-preview");
  const state = form.querySelector("#wiki-preview-state");
  const csrf = form.querySelector('input[name="csrfmiddlewaretoken"]').value;
  const limit = Number(area.dataset.limit || 0);
  const initial = area.value;
  let timer = null;
  let sequence = 0;
  let shown = 0;
  let submitting = false;

  const warning = document.createElement("p");
  warning.className = "notice error wiki-markers";
  warning.id = "wiki-markers";
  warning.setAttribute("role", "status");
  warning.hidden = true;
  area.after(warning);

  async function refresh() {
    const mine = ++sequence;
    state.textContent = gettext("(updating…)");
    const body = new FormData();
    body.append("content", area.value);
    body.append("path", form.dataset.path || "");
    try {
      const response = await fetch(form.dataset.previewUrl, {
        method: "POST", body, credentials: "same-origin",
        headers: { "X-CSRFToken": csrf, Accept: "text/html" },
      });
      const html = await response.text();
      if (mine < shown) return; // an older answer arriving late
      shown = mine;
      if (!response.ok && response.status !== 413) throw new Error(String(response.status));
      const template = document.createElement("template");
      template.innerHTML = html; // sanitized by nh3 on the server: the page's own renderer
      pane.replaceChildren(template.content);
      state.textContent = "";
    } catch {
      if (mine >= shown) state.textContent = gettext("(preview unavailable — the text is still yours)");
    }
  }

  function check() {
    const bytes = new TextEncoder().encode(area.value).length;
    const problems = [];
    if (MARKERS.test(area.value)) {
      problems.push(gettext(
        "The text still has conflict markers (<<<<<<< … >>>>>>>): remove them unless you mean to keep them."));
    }
    if (limit && bytes > limit) {
      problems.push(interpolate(gettext("The page is %(bytes)s bytes; the limit is %(limit)s."),
                                { bytes: bytes.toLocaleString(), limit: limit.toLocaleString() },
                                true));
    }
    warning.textContent = problems.join(" ");
    warning.hidden = problems.length === 0;
  }

  function changed() {
    check();
    clearTimeout(timer);
    timer = setTimeout(refresh, PREVIEW_DELAY_MS);
  }

  area.addEventListener("input", changed);

  document.querySelectorAll("button[data-use]").forEach((button) => {
    button.addEventListener("click", () => {
      const source = document.getElementById(button.dataset.use);
      if (!source) return;
      area.value = source.value;
      changed();
      area.focus();
    });
  });

  form.addEventListener("submit", () => {
    submitting = true;
    onSubmit();
  });

  document.addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === "s") {
      event.preventDefault();
      form.requestSubmit();
    }
  });

  window.addEventListener("beforeunload", (event) => {
    if (submitting || area.value === initial) return;
    event.preventDefault();
    event.returnValue = "";
  });

  check();
  return { refresh, area };
}
