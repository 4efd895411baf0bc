// The session view: live transcript, working status line, composer, busy controls, queue,
// runtime selection, session actions and the side panel.
import { $, el, replace, api, follow, ago, duration, secondsSince } from "./dom.js";
import { Derive, contextText, originText } from "./derive.js";
import { Transcript } from "./transcript.js";

const RUNTIME_FIELDS = ["provider", "model", "reasoning_effort", "speed"];

// A runtime stuck in a transitional status says which one and for how long (supervision.stuck).
const attentionText = (session, stuck) =>
  stuck ? `stuck ${stuck.status} for ${duration(stuck.seconds)}` : session.attention.replaceAll("_", " ");

export function badges(session) {
  const busy = session.activity?.turn_in_flight;
  const stuck = session.supervision?.stuck;
  return [
    el("span", { class: `badge state-${session.state}` }, session.state),
    busy && el("span", { class: "badge working" }, "working"),
    session.archived && el("span", { class: "badge" }, "archived"),
    (session.attention || stuck) && el("span", { class: "badge bad" }, attentionText(session, stuck)),
    session.failure && el("span", { class: "badge bad" }, "failed"),
  ];
}

const optionText = (o) => `${o.id}=${o.value_id ?? o.bool_value}`;
const runtimeText = (runtime) => runtime
  ? [...RUNTIME_FIELDS.map((f) => runtime[f]), ...(runtime.acp_options || []).map(optionText)].filter(Boolean)
    .join(" / ") || "default"
  : "none";

function rows(list, pairs) {
  replace(list, pairs.filter(([, value]) => value != null && value !== "")
    .map(([name, value]) => [el("dt", {}, name), el("dd", {}, value)]));
}

function sessionLink(id) {
  return id ? el("a", { href: `/sessions/${encodeURIComponent(id)}`, "data-route": true, class: "name" }, id) : null;
}

export class SessionView {
  constructor({ alert, navigate, workspaceName }) {
    Object.assign(this, { alert, navigate, workspaceName });
    this.session = null;
    this.stream = null;
    this.derive = new Derive(this);
    this.wire();
  }

  get path() {
    const s = this.session;
    return `/api/workspaces/${encodeURIComponent(s.workspace_id)}/sessions/${encodeURIComponent(s.id)}`;
  }

  async open(id) {
    this.close();
    const opening = (this.opening = {}); // a later open() wins over this one
    const parts = ["transcript", "session-badges", "session-actions", "working", "composer-note", "health", "runtime",
      "queue", "lineage"];
    for (const part of parts) {
      replace($(part));
    }
    replace($("session-name"), id);
    $("composer").hidden = $("failure-section").hidden = true;
    let session;
    try {
      session = (await api("GET", `/api/sessions/${encodeURIComponent(id)}`)).session;
    } catch (error) {
      return this.alert(error);
    }
    if (this.opening !== opening) return;
    this.session = session;
    this.reloadTranscript();
    this.render();
  }

  // The daemon-owned transcript, from the start (after a rewind: what stays active).
  reloadTranscript() {
    this.stream?.close();
    replace($("transcript"));
    this.transcript = new Transcript($("transcript"), {
      approve: (request_id, option_id) => this.act("POST", "/approve", { request_id, option_id }),
      messageActions: (event) => this.derive.messageActions(event),
      diff: (turnId) => api("GET", `${this.path}/turns/${encodeURIComponent(turnId)}/diff`) });
    this.stream = follow(`${this.path}/stream`, { resume: true, onEvent: (record) => this.onEvent(record) });
    this.refreshSoon();
  }

  close() {
    this.opening = null;
    this.stream?.close();
    this.stream = null;
    this.session = null;
    clearTimeout(this.pending);
  }

  onEvent(record) {
    this.transcript.add(record);
    const activity = this.session?.activity;
    if (activity?.awaiting_output_since && record.type !== "user_message") delete activity.awaiting_output_since;
    if (record.type === "agent_message" || record.type === "thought") return;
    this.tick();
    this.refreshSoon();
  }

  refreshSoon() {
    clearTimeout(this.pending);
    this.pending = setTimeout(() => this.refresh(), 150);
  }

  async refresh() {
    if (!this.session) return;
    try {
      this.session = (await api("GET", this.path)).session;
      this.render();
      await this.loadQueue();
    } catch (error) {
      this.alert(error);
    }
  }

  async act(method, suffix, body) {
    try {
      const result = await api(method, this.path + suffix, body);
      this.refreshSoon();
      return result;
    } catch (error) {
      this.alert(error);
      return null;
    }
  }

  render() {
    const s = this.session;
    document.title = `${s.name || s.id} · compozy`;
    replace($("session-name"), s.name || s.id);
    replace($("session-badges"), badges(s));
    replace($("session-actions"), this.actions(s));
    $("composer").hidden = s.archived;
    $("busy-controls").hidden = !s.activity?.turn_in_flight;
    this.renderSide(s);
    this.tick();
  }

  actions(s) {
    if (s.type !== "user") return []; // daemon-managed sessions have no user lifecycle actions
    const running = s.state !== "stopped";
    const button = (label, onclick, tone) => el("button", { type: "button", class: tone, onclick }, label);
    return [
      !s.archived && button("Continue…", () => this.derive.dialog("continue")),
      !s.archived && button("Fork…", () => this.derive.dialog("fork")),
      running && button("Stop", () => this.act("POST", "/stop", { wait: false })),
      !s.archived && button(running ? "Stop and archive" : "Archive",
        () => this.act("POST", running ? "/archive?stop=true" : "/archive")),
      s.archived && button("Unarchive", () => this.act("POST", "/unarchive")),
      button("Remove", () => $("confirm-remove").showModal(), "danger"),
    ];
  }

  renderSide(s) {
    const failure = s.failure;
    $("failure-section").hidden = !failure;
    if (failure) {
      const error = failure.agent_error;
      rows($("failure"), [["Kind", failure.kind], ["Summary", failure.summary],
        ["Agent error", error && el("code", {}, `${error.message} (${error.code})${"data" in error ? ": " + JSON.stringify(error.data) : ""}`)],
        ["Agent stderr", failure.stderr_tail?.length && el("pre", { class: "stderr" }, failure.stderr_tail.join("\n"))],
        ["Crash bundle", failure.crash_bundle_path && el("code", {}, failure.crash_bundle_path)]]);
    }
    this.renderAgent(s.runtime);
    rows($("health"), [["State", s.state], ["Activity", s.health?.state], ["Health", s.health?.health],
      ["Runtime", [s.runtime.status, s.runtime.transition].filter(Boolean).join(", ")],
      ["Last activity", ago(s.activity?.last_activity_at)], ["Stop reason", s.stop_reason],
      ["Stop detail", s.stop_detail], ["Attention", s.attention]]);
    const effective = s.runtime.effective || s.runtime.last_known;
    rows($("runtime"), [["Selected", `${runtimeText(s.runtime.selected)} (revision ${s.runtime.selection_revision})`],
      ["Effective", runtimeText(effective)]]);
    const form = $("runtime-form");
    for (const field of RUNTIME_FIELDS) form.elements[field].placeholder = effective?.[field] || "";
    const lineage = s.lineage || {};
    rows($("lineage"), [["Workspace", this.workspaceName(s.workspace_id)], ["Directory", s.cwd],
      ["Agent", s.agent_name], ["Type", s.type], ["Kind", lineage.kind || "root"],
      ["Parent", sessionLink(lineage.parent_session_id)],
      ["Root", lineage.root_session_id !== s.id ? sessionLink(lineage.root_session_id) : null],
      ["Spawn depth", String(lineage.spawn_depth ?? 0)],
      ...this.derivationRows(s.derivation)]);
  }

  // The agent's own commands (a click puts one in the composer) and its session modes (a runtime option).
  renderAgent(runtime) {
    const commands = runtime.available_commands || [];
    $("commands-section").hidden = !commands.length;
    replace($("commands"), commands.map((c) => el("li", {},
      el("button", { type: "button", class: "link", onclick: () => this.useCommand(c.name) }, `/${c.name}`), " ",
      el("span", { class: "muted" }, c.description || ""), c.hint ? el("span", { class: "muted" }, ` (${c.hint})`) : "")));
    const modes = runtime.modes;
    const select = $("runtime-form").elements.mode;
    select.closest("label").hidden = !modes;
    if (!modes) return;
    const chosen = select.value;
    replace(select, el("option", { value: "" }, `current: ${modes.current ?? "?"}`),
      modes.available.map((m) => el("option", { value: m.id, title: m.description || "" }, m.name || m.id)));
    select.value = chosen;
  }

  useCommand(name) {
    const box = $("message");
    box.value = `/${name} ${box.value}`;
    box.focus();
  }

  derivationRows(d) {
    if (!d) return [];
    return [["Origin", originText(d)], ["Context", contextText(d)],
      ["Seed", d.seed + (d.native_state ? ` (${d.native_state})` : "")], ["Clone error", d.native_fork_error],
      ["First prompt", d.first_prompt]];
  }

  // The working status line, e.g. "Working for 42m · quiet for 12m", from activity and supervision; while the
  // agent starts, "Starting claude… 8s"; while a sent prompt has no output yet, for how long.
  tick() {
    const s = this.session;
    const line = $("working");
    const starting = s?.activity?.starting;
    if (starting) {
      const who = starting.provider === starting.agent ? starting.agent : `${starting.agent} (${starting.provider})`;
      return replace(line, `Starting ${who}… ${duration(secondsSince(starting.since))}`);
    }
    if (!s?.activity?.turn_in_flight) return replace(line);
    const started = this.transcript.turnStarts.get(s.activity.current_turn_id);
    const parts = [started ? `Working for ${duration(secondsSince(started))}` : "Working"];
    const waiting = s.activity.awaiting_output_since;
    if (waiting) parts.push(`no output from the agent for ${duration(secondsSince(waiting))}`);
    const quiet = s.supervision?.quiet_warning;
    if (quiet) parts.push(`quiet for ${duration(secondsSince(quiet.since) + (quiet.quiet_after_seconds || 0))}`);
    if (s.supervision?.work_signals?.some((signal) => signal.kind === "pending_permission")) {
      parts.push("waiting for permission");
    }
    replace(line, parts.join(" · "));
  }

  async loadQueue() {
    if (!this.session) return;
    const { entries } = await api("GET", `${this.path}/prompt/queue`);
    replace($("queue"), entries.length ? entries.map((entry) => this.queueEntry(entry))
      : el("li", { class: "muted" }, "Nothing queued."));
  }

  queueEntry(entry) {
    const n = entry.position;
    const text = el("div", { class: "plain" }, entry.message);
    const item = el("li", { "data-entry-id": entry.id }, text);
    const edit = () => {
      const box = el("textarea", { "aria-label": `Queued message ${n}`, rows: 2, value: entry.message });
      const save = el("button", { type: "button", onclick: async () => {
        if (await this.act("PUT", `/prompt/queue/${entry.id}`, { message: box.value })) this.loadQueue();
      } }, "Save");
      replace(item, box, el("span", {}, save, " ", el("button", { type: "button", onclick: () => this.loadQueue() }, "Discard")));
      box.focus();
    };
    item.append(el("span", { class: "row-actions" },
      el("button", { type: "button", "aria-label": `Edit queued message ${n}`, onclick: edit }, "Edit"), " ",
      el("button", { type: "button", "aria-label": `Cancel queued message ${n}`, onclick: async () => {
        if (await this.act("DELETE", `/prompt/queue/${entry.id}`)) this.loadQueue();
      } }, "Cancel")));
    return item;
  }

  async send(mode) {
    const box = $("message");
    const message = box.value;
    if (!message.trim()) return;
    const result = await this.act("POST", "/prompt", mode ? { message, mode } : { message });
    if (result && box.value === message) box.value = ""; // keep what was typed meanwhile
    // What a busy prompt did, in plain words (a steer this agent cannot take interrupts the turn instead).
    replace($("composer-note"), result?.prompt?.note || "");
  }

  wire() {
    const box = $("message");
    $("composer").addEventListener("submit", (e) => { e.preventDefault(); this.send(null); });
    box.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); this.send(null); }
    });
    for (const button of document.querySelectorAll("#busy-controls [data-mode]")) {
      button.addEventListener("click", () => this.send(button.dataset.mode));
    }
    $("stop-generation").addEventListener("click", () => this.act("POST", "/prompt/cancel"));
    $("runtime-form").addEventListener("submit", (e) => { e.preventDefault(); this.selectRuntime(e.target); });
    $("runtime-clear").addEventListener("click", () =>
      this.act("DELETE", `/runtime?expected_revision=${this.session.runtime.selection_revision}`));
    $("confirm-remove").addEventListener("click", async (e) => {
      if (e.target.value === "remove" && await this.act("DELETE", "")) this.navigate("/");
      if (e.target.value) $("confirm-remove").close();
    });
  }

  async selectRuntime(form) {
    const runtime = Object.fromEntries(RUNTIME_FIELDS.map((f) => [f, form.elements[f].value.trim()]).filter(([, v]) => v));
    if (form.elements.mode.value) runtime.acp_options = [{ id: "mode", value_id: form.elements.mode.value }];
    if (await this.act("PUT", "/runtime", { runtime, expected_revision: this.session.runtime.selection_revision })) form.reset();
  }
}
