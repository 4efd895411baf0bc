// The session list: filters, one row per session (its runtime included), the create form with the configured
// agents to choose from, and the selection the bulk actions (bulk.js) work on.
import { $, el, replace, ago, sessionHref } from "./dom.js";
import { call } from "./api.js";
import { agentDefaults, agentSelect } from "./agents.js";
import { Bulk } from "./bulk.js";
import { badges } from "./session.js";
import { counted } from "./words.js";

const RUNTIME_FIELDS = ["provider", "model", "reasoning_effort", "speed"];

export class SessionList {
  constructor({ alert, navigate, workspaces, loadWorkspaces }) {
    Object.assign(this, { alert, navigate, workspaces, loadWorkspaces });
    this.bulk = new Bulk({ alert, reload: () => this.load() });
    $("new-session").addEventListener("submit", (e) => { e.preventDefault(); this.create(e.target); });
    for (const id of ["filter-state", "filter-workspace", "filter-archive", "filter-scope"]) {
      $(id).addEventListener("change", () => this.load());
    }
  }

  async show() {
    document.title = "Sessions · compozy";
    await Promise.all([this.fleetChoice().then(() => this.load()), this.agentChoice()]);
  }

  // In a fleet (docs/fleet.md) the list can show every node's sessions, each with its node; otherwise the choice
  // stays hidden (GET /api/nodes answers fleet_not_configured).
  async fleetChoice() {
    if (this.inFleet !== undefined) return;
    try {
      await call("fleet.nodes");
      this.inFleet = true;
    } catch (error) {
      this.inFleet = false;
    }
    $("filter-scope-label").hidden = !this.inFleet;
  }

  async agentChoice() {
    const slot = $("new-session-agent");
    if (slot.querySelector("select")) return;
    try {
      replace(slot, await agentSelect("agent_name", "Agent"));
    } catch (error) {
      this.alert(error);
    }
  }

  async load() {
    const query = { archive: $("filter-archive").value };
    for (const [name, id] of [["state", "filter-state"], ["workspace", "filter-workspace"]]) {
      if ($(id).value) query[name] = $(id).value;
    }
    const fleet = Boolean(this.inFleet) && $("filter-scope").value === "fleet";
    if (fleet) {
      query.scope = "fleet";
      if (query.workspace) query.workspace = this.workspaces.get(query.workspace)?.name || query.workspace; // by name on every node
    }
    $("node-column").hidden = !fleet;
    try {
      const { sessions, page } = await call("session.list", query);
      if (!fleet && sessions.some((s) => !this.workspaces.has(s.workspace_id))) await this.loadWorkspaces();
      const rows = await Promise.all(sessions.map((s) => this.row(s, fleet)));
      replace($("session-rows"), rows.length ? rows
        : el("tr", {}, el("td", { colspan: fleet ? 8 : 7, class: "muted" }, "No sessions match.")));
      replace($("list-count"), page.has_more ? `${sessions.length} of ${page.total}` : counted(sessions.length, "session"));
      this.bulk.listed(sessions);
    } catch (error) {
      this.alert(error);
    }
  }

  async row(s, fleet = false) {
    const workspace = this.workspaces.get(s.workspace_id);
    const name = s.name || s.id;
    const unreachable = s.node?.status === "node_unreachable";
    return el("tr", { "data-session-id": s.id },
      el("td", { class: "pick" }, this.bulk.checkbox(s, name)),
      el("td", { class: "name-cell" }, el("a", { href: sessionHref(s.id), "data-route": true, class: "name" }, name)),
      el("td", { class: "workspace", title: workspace?.path }, el("span", { class: "name" }, workspace?.name || s.workspace_id)),
      ...(fleet ? [el("td", { class: `node${unreachable ? " unreachable" : ""}`,
        title: unreachable ? "this node does not answer (no heartbeat)" : "" },
      el("span", { class: "name" }, s.node?.name || "-"), unreachable ? " (unreachable)" : "")] : []),
      el("td", { class: "agent" }, el("span", { class: "name" }, s.agent_name)),
      el("td", { class: "runtime" }, await runtimeCell(s)),
      el("td", { class: "state" }, el("span", { class: "badges" }, badges(s))),
      el("td", { class: "when" }, ago(s.activity?.last_activity_at || s.updated_at)));
  }

  async create(form) {
    const body = Object.fromEntries([...new FormData(form)].filter(([, value]) => value.trim()));
    try {
      const { session } = await call("session.create", {}, body);
      form.reset(); // the next session starts from an empty form (and the default agent)
      await this.loadWorkspaces();
      this.navigate(`/sessions/${encodeURIComponent(session.id)}`);
    } catch (error) {
      this.alert(error);
    }
  }
}

// The runtime a row shows (the product page): effective, else last known, else the selection over the agent's
// defaults. runtime.display says it when the daemon gives it; otherwise it is worked out here the same way.
async function runtimeCell(s) {
  const runtime = s.runtime || {};
  let shown = runtime.display;
  if (!shown) {
    const named = (r) => Object.fromEntries(RUNTIME_FIELDS.filter((f) => r?.[f]).map((f) => [f, r[f]]));
    const known = [["effective", runtime.effective], ["last_known", runtime.last_known]]
      .find(([, r]) => r?.provider || r?.model);
    shown = known ? { ...named(known[1]), source: known[0] }
      : { ...named(await agentDefaults(s.agent_name)), ...named(runtime.selected),
        source: Object.keys(named(runtime.selected)).length ? "selected" : "agent_defaults" };
  }
  const text = RUNTIME_FIELDS.map((f) => shown[f]).filter(Boolean).join(" / ") || "default";
  const note = { effective: "running now", last_known: "last used", selected: "selected for the next prompt",
    agent_defaults: "the agent's defaults" }[shown.source] || "";
  return el("span", { class: `runtime-text source-${shown.source || "unknown"}`, title: note }, text);
}
