// Bulk actions on the sessions selected in the list: Stop, Archive (Stop and archive when some run: running
// ones are stopped first, stopped ones archived as they are) and Remove. Each session gets its own request,
// through its own workspace (and the page's profile), and its own result line; one refusal stops nothing else.
import { $, el, replace } from "./dom.js";
import { call, sessionOf } from "./api.js";
import { counted } from "./words.js";

const running = (s) => s.state !== "stopped";

const ACTIONS = {
  stop: { request: (s) => ["session.stop", {}, { wait: false }], done: (s, answer) =>
    answer.session?.state === "stopped" ? "already stopped" : "stopping", applies: running },
  archive: { request: (s) => ["session.archive", running(s) ? { stop: true } : {}],
    done: (s) => running(s) ? "stopped and archived" : "archived", applies: (s) => !s.archived },
  remove: { request: () => ["session.remove.scoped", {}], done: () => "removed", applies: () => true },
};

export class Bulk {
  constructor({ alert, reload }) {
    Object.assign(this, { alert, reload });
    this.selected = new Map(); // session id -> the session as last listed
    this.selectable = [];
    $("select-all").addEventListener("change", (e) => this.selectAll(e.target.checked));
    $("bulk-stop").addEventListener("click", () => this.run("stop"));
    $("bulk-archive").addEventListener("click", () => this.run("archive"));
    $("bulk-remove").addEventListener("click", () => this.confirmRemove());
    $("bulk-clear").addEventListener("click", () => this.selectAll(false));
    $("confirm-bulk-remove").addEventListener("click", (e) => {
      if (!e.target.value) return;
      $("confirm-bulk-remove").close();
      if (e.target.value === "remove") this.run("remove");
    });
  }

  // Only a person's own sessions take lifecycle actions; daemon-managed ones have no checkbox.
  checkbox(s, name) {
    if (s.type !== "user") return null;
    return el("input", { type: "checkbox", class: "pick", "aria-label": `Select ${name}`,
      checked: this.selected.has(s.id), onchange: (e) => this.toggle(s, e.target.checked) });
  }

  listed(sessions) {
    this.selectable = sessions.filter((s) => s.type === "user");
    const fresh = new Map(this.selectable.map((s) => [s.id, s]));
    for (const id of [...this.selected.keys()]) {
      if (fresh.has(id)) this.selected.set(id, fresh.get(id));
      else this.selected.delete(id);
    }
    this.render();
  }

  toggle(s, on) {
    if (on) this.selected.set(s.id, s);
    else this.selected.delete(s.id);
    this.render();
  }

  selectAll(on) {
    this.selected = new Map(on ? this.selectable.map((s) => [s.id, s]) : []);
    for (const box of document.querySelectorAll("#session-rows input.pick")) box.checked = on;
    this.render();
  }

  render() {
    const chosen = [...this.selected.values()];
    const all = $("select-all");
    all.checked = chosen.length > 0 && chosen.length === this.selectable.length;
    all.indeterminate = chosen.length > 0 && !all.checked;
    all.disabled = !this.selectable.length;
    replace($("bulk-count"), chosen.length ? `${chosen.length} selected` : "Select all");
    $("bulk-actions").hidden = !chosen.length;
    $("bulk-stop").hidden = !chosen.some(running);
    $("bulk-archive").hidden = !chosen.some(ACTIONS.archive.applies);
    replace($("bulk-archive"), chosen.some((s) => running(s) && !s.archived) ? "Stop and archive" : "Archive");
  }

  confirmRemove() {
    const count = this.selected.size;
    replace($("confirm-bulk-remove-text"), `Remove ${counted(count, "session")}? Running ones are `
      + "stopped first; each record and its whole history are deleted.");
    $("confirm-bulk-remove").showModal();
  }

  async run(name) {
    const action = ACTIONS[name];
    const targets = [...this.selected.values()].filter(action.applies);
    const results = await Promise.all(targets.map(async (s) => {
      const [operation, query, body] = action.request(s);
      try {
        const answer = await call(operation, { ...sessionOf(s), ...query }, body);
        this.selected.delete(s.id); // done: a failed one stays selected, to try again
        return { s, ok: true, text: action.done(s, answer) };
      } catch (error) {
        return { s, ok: false, text: error.message };
      }
    }));
    this.report(name, results);
    this.reload();
  }

  report(name, results) {
    const failed = results.filter((r) => !r.ok).length;
    const box = $("bulk-results");
    replace(box, el("p", {}, el("strong", {}, `${name[0].toUpperCase()}${name.slice(1)}: `),
      failed ? `${results.length - failed} of ${results.length} done, ${failed} refused` : `${results.length} done`,
      " ", el("button", { type: "button", class: "link", onclick: () => { box.hidden = true; } }, "Dismiss")),
    el("ul", {}, results.map((r) => el("li", { class: r.ok ? "ok" : "bad", "data-session-id": r.s.id },
      el("span", { class: "name" }, r.s.name || r.s.id), ": ", r.text))));
    box.hidden = false;
  }
}
