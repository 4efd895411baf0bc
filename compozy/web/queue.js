// The session's daemon-owned input queue in the side panel: each entry with Edit and Cancel.
import { $, el, replace } from "./dom.js";
import { call } from "./api.js";

export async function loadQueue(view) {
  if (!view.session) return;
  const { entries } = await call("session.input.list", view.scope);
  replace($("queue"), entries.length ? entries.map((entry) => queueEntry(view, entry))
    : el("li", { class: "muted" }, "Nothing queued."));
}

function queueEntry(view, entry) {
  const n = entry.position;
  const item = el("li", { "data-entry-id": entry.id }, el("div", { class: "plain" }, entry.message));
  const edit = () => {
    const box = el("textarea", { "aria-label": `Queued message ${n}`, rows: 2, value: entry.message });
    const save = el("button", { type: "button", onclick: async () => {
      if (await view.act("session.input.edit", { entry: entry.id }, { message: box.value })) loadQueue(view);
    } }, "Save");
    replace(item, box, el("span", {}, save, " ", el("button", { type: "button", onclick: () => loadQueue(view) }, "Discard")));
    box.focus();
  };
  item.append(el("span", { class: "row-actions" },
    el("button", { type: "button", "aria-label": `Edit queued message ${n}`, onclick: edit }, "Edit"), " ",
    el("button", { type: "button", "aria-label": `Cancel queued message ${n}`, onclick: async () => {
      if (await view.act("session.input.cancel", { entry: entry.id })) loadQueue(view);
    } }, "Cancel")));
  return item;
}
