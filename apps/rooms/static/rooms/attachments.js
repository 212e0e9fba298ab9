// Images for the next message: pasted, dropped on the composer or chosen with its button.
// Each is uploaded at once (POST data-upload-url, multipart "file"); the message then carries
// their ids as `send.attachments` (docs/protocol.md). The server reads the type from the bytes:
// the checks here only save a round trip, the server's answer is what counts.

const ACCEPTED = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/**
 * Wire the composer `form` (data-upload-url, data-max-images, data-max-image-bytes, a csrf
 * input, ul#composer-attachments, input#composer-file). `say(text)` shows a refusal. Returns
 * `{ list(), busy(), clear() }`: the uploaded images (`{ id, url }`, in order), whether an
 * upload is still running, and forget them all (after sending).
 */
export function setupAttachments(form, say) {
  const chips = form.querySelector("#composer-attachments");
  const input = form.querySelector("#composer-file");
  const area = form.querySelector("textarea");
  const csrf = form.querySelector('input[name="csrfmiddlewaretoken"]');
  const most = Number(form.dataset.maxImages) || 8;
  const maxBytes = Number(form.dataset.maxImageBytes) || Infinity;
  let items = []; // { id, url, chip } once uploaded; { chip } while uploading
  if (!chips || !form.dataset.uploadUrl) return { list: () => [], busy: () => false, clear() {} };

  function chipFor(file) {
    const chip = document.createElement("li");
    chip.className = "attachment uploading";
    const img = document.createElement("img"); // shown from the server once uploaded (the CSP
    img.alt = file.name || gettext("pasted image"); // allows no blob: images)
    const remove = document.createElement("button");
    remove.type = "button";
    remove.className = "attachment-remove";
    remove.textContent = "×";
    remove.title = gettext("Remove this image");
    chip.append(img, remove);
    chips.append(chip);
    return chip;
  }

  function refuse(file, reason) {
    say(interpolate(gettext("%(name)s not attached: %(reason)s"),
                    { name: file.name || gettext("The image"), reason }, true));
  }

  async function upload(file) {
    if (!ACCEPTED.includes(file.type)) {
      refuse(file, gettext("only PNG, JPEG, GIF and WebP images can be attached."));
      return;
    }
    if (file.size > maxBytes) {
      refuse(file, interpolate(gettext("an image is at most %(mib)s MiB."),
                               { mib: Math.floor(maxBytes / 1048576) }, true));
      return;
    }
    if (items.length >= most) {
      refuse(file, interpolate(gettext("a message carries at most %(most)s images."),
                               { most }, true));
      return;
    }
    const item = { chip: chipFor(file) };
    items.push(item);
    const body = new FormData();
    body.append("file", file, file.name || "pasted-image");
    try {
      const response = await fetch(form.dataset.uploadUrl, {
        method: "POST", body, credentials: "same-origin",
        headers: { "X-CSRFToken": csrf ? csrf.value : "", Accept: "application/json" },
      });
      const answer = await response.json();
      if (!response.ok) throw new Error(answer.message || String(response.status));
      Object.assign(item, { id: answer.id, url: answer.url });
      item.chip.classList.remove("uploading");
      item.chip.dataset.imageId = answer.id;
      item.chip.querySelector("img").src = answer.url;
    } catch (error) {
      drop(item);
      refuse(file, error.message);
    }
  }

  function drop(item) {
    items = items.filter((other) => other !== item);
    item.chip.remove();
  }

  function add(files) {
    [...files].forEach(upload);
  }

  area.addEventListener("paste", (event) => {
    const files = [...(event.clipboardData ? event.clipboardData.files : [])];
    if (files.length) {
      event.preventDefault(); // the file, not its name as text
      add(files);
    }
  });
  form.addEventListener("dragover", (event) => {
    const types = event.dataTransfer ? [...event.dataTransfer.types] : [];
    if (types.includes("Files")) { // i18n: not prose
      event.preventDefault();
      form.classList.add("dropping");
    }
  });
  form.addEventListener("dragleave", () => form.classList.remove("dropping"));
  form.addEventListener("drop", (event) => {
    form.classList.remove("dropping");
    if (event.dataTransfer && event.dataTransfer.files.length) {
      event.preventDefault();
      add(event.dataTransfer.files);
    }
  });
  input.addEventListener("change", () => {
    add(input.files);
    input.value = "";
  });
  chips.addEventListener("click", (event) => {
    const button = event.target.closest(".attachment-remove");
    const item = button && items.find((other) => other.chip === button.parentElement);
    if (item) drop(item);
  });

  return {
    list: () => items.filter((item) => item.id).map(({ id, url }) => ({ id, url })),
    busy: () => items.some((item) => !item.id),
    clear() {
      items.forEach((item) => item.chip.remove());
      items = [];
    },
  };
}
