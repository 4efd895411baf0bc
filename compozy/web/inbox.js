// The attention inbox: every item that needs a person across sessions, kept live by its event stream (an
// `inbox` snapshot on every (re)connection, then each item opened or resolved). The header's count shows on
// every screen; the inbox view (/inbox) lists the items with their actions, which run the operation each names
// (attention.answer), so an answer here clears the item everywhere; a question's free form has its fields there.
import { $, el, replace, follow, ago, sessionHref } from "./dom.js";
import { address, call } from "./api.js";
import { counted, words } from "./words.js";
import { contentOf, formControls, formFields } from "./forms.js";

export class Inbox {
  constructor({ alert }) {
    this.alert = alert;
    this.items = new Map(); // id -> open item
    this.visible = false;
    this.stream = follow(address("attention.stream").path, { onEvent: (change) => this.onChange(change) });
  }

  onChange(change) {
    if (change.type === "inbox") {
      this.items = new Map(change.items.map((item) => [item.id, item]));
    } else if (change.type === "item_opened") {
      this.items.set(change.item.id, change.item);
    } else if (change.type === "item_resolved") {
      this.items.delete(change.item.id);
    }
    this.renderCount();
    if (this.visible) this.render();
  }

  renderCount() {
    const count = this.items.size;
    const badge = $("inbox-count");
    replace(badge, count ? String(count) : "");
    badge.hidden = !count;
    badge.setAttribute("aria-label", `${counted(count, "item")} need you`);
  }

  show() {
    document.title = "Inbox · compozy";
    this.visible = true;
    this.render();
  }

  hide() {
    this.visible = false;
  }

  render() {
    const items = [...this.items.values()].sort((a, b) => a.changed - b.changed);
    replace($("inbox-summary"), items.length ? `${items.length} need${items.length === 1 ? "s" : ""} you`
      : "Nothing needs you.");
    replace($("inbox-items"), items.map((item) => this.row(item)));
  }

  row(item) {
    const status = el("span", { class: "item-status", role: "status" });
    const buttons = item.actions.map((action) => {
      const fields = action.content ? formFields(action.content) : null;
      const button = el("button", {
        type: "button", class: action.kind?.startsWith("reject") || action.id === "stop" ? "danger" : null,
        "data-action": action.id, onclick: () => this.answer(item, action, status, fields && contentOf(fields)),
      }, action.label || action.id);
      return fields ? [...formControls(fields), button] : button;
    });
    return el("li", { class: `inbox-item kind-${item.kind}`, "data-item": item.id, "data-kind": item.kind },
      el("div", { class: "item-head" }, el("span", { class: "badge" }, words(item.kind)), " ",
        item.session_id ? el("a", { href: sessionHref(item.session_id), "data-route": true, class: "name" },
          item.session_id) : el("span", { class: "muted" }, item.workspace_id || "the daemon"),
        " ", el("span", { class: "muted" }, ago(item.created_at))),
      el("p", { class: "item-summary" }, item.summary),
      el("div", { class: "item-actions", role: "group", "aria-label": "Actions" }, buttons, status));
  }

  async answer(item, action, status, content) {
    replace(status, "…");
    try {
      await call("attention.answer", { item_id: item.id }, content ? { option_id: action.id, content }
        : { option_id: action.id });
      replace(status, "");
    } catch (error) {
      replace(status, error.body?.error || error.message);
    }
  }
}
