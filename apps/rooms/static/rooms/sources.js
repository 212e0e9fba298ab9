// An answer's numbered sources (docs/protocol.md, `sources`: the server's list of its citations
// and grounding, http(s) links only). Text goes in as text, never as markup; a link that is not
// http(s) is not drawn, whatever the server sent; links open apart from the room, without a
// referrer.

function httpLink(url) {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
  } catch {
    return null;
  }
}

function line(source) {
  const item = document.createElement("li");
  const link = document.createElement("a");
  link.href = source.href;
  link.textContent = source.title || source.site;
  link.target = "_blank";
  link.relList.add("noopener", "noreferrer", "nofollow");
  const site = document.createElement("span");
  site.className = "source-site";
  site.textContent = source.site || "";
  item.append(link, " ", site);
  return item;
}

/** Draw `sources` ([{title, site, url}]) under `after` in `article` (removed when none). */
export function renderSources(article, after, sources) {
  const shown = (sources || []).map((s) => ({ ...s, href: httpLink(s.url) })).filter((s) => s.href);
  let box = article.querySelector(":scope > section.sources");
  if (!shown.length) {
    if (box) box.remove();
    return;
  }
  if (!box) {
    box = document.createElement("section");
    box.className = "sources";
    const title = document.createElement("h3");
    title.textContent = gettext("Sources");
    box.append(title, document.createElement("ol"));
    after.after(box);
  }
  const list = box.querySelector("ol");
  const key = JSON.stringify(shown.map((s) => [s.href, s.title, s.site]));
  if (list.dataset.key !== key) {
    list.dataset.key = key;
    list.replaceChildren(...shown.map(line));
  }
}
