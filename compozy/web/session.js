// The session view: live transcript, working status line, composer, busy controls, session actions; the side
// panel (side.js) and the queue (queue.js) are drawn from the same session read.
import { $, el, replace, follow, duration, secondsSince } from "./dom.js";
import { address, call, sessionOf } from "./api.js";
import { Derive } from "./derive.js";
import { Transcript } from "./transcript.js";
import { RUNTIME_FIELDS, renderSide } from "./side.js";
import { loadQueue } from "./queue.js";
import { words } from "./words.js";
import { totalsText } from "./usage.js";
import { requestedSequence } from "./search.js";

// A runtime stuck in a transitional status says which one and for how long (supervision.stuck).
const attentionText = (session, stuck) =>
  stuck ? `stuck ${stuck.status} for ${duration(stuck.seconds)}` : words(session.attention);

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

export class SessionView {
  constructor({ alert, navigate, workspaceName }) {
    Object.assign(this, { alert, navigate, workspaceName });
    this.session = null;
    this.stream = null;
    this.sending = 0; // prompts sent and not answered yet (an agent may be starting for them)
    this.derive = new Derive(this);
    this.wire();
  }

  get scope() {
    return sessionOf(this.session);
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
      session = (await call("session.get", { session_id: id })).session;
    } catch (error) {
      return this.alert(error);
    }
    if (this.opening !== opening) return;
    this.session = session;
    this.target = requestedSequence(); // a search hit: show the block that holds this event
    this.reloadTranscript();
    this.render();
  }

  // The daemon-owned transcript, from the start (after a rewind: what stays active).
  async reloadTranscript() {
    this.stream?.close();
    replace($("transcript"));
    const transcript = this.transcript = new Transcript($("transcript"), {
      approve: (request_id, option_id, content) => this.act("session.approve", {},
        { request_id, option_id, ...(content ? { content } : {}) }),
      messageActions: (event) => this.derive.messageActions(event),
      diff: (turnId) => call("session.turn.diff", { ...this.scope, turn_id: turnId }) });
    const derivation = this.session.derivation;
    if (derivation?.seed === "native_fork" && derivation.carried_context !== "discarded") {
      try {
        const history = await call("session.history", { ...this.scope, limit: 1000 });
        if (this.transcript !== transcript) return;
        transcript.carried(history.messages.filter((m) => m.carried), derivation.source_session_id);
      } catch (error) {
        this.alert(error);
      }
    }
    if (this.transcript !== transcript || !this.session) return;  // another session opened meanwhile
    this.stream = follow(address("session.stream", this.scope).path, { resume: true, onEvent: (record) => this.onEvent(record) });
    this.refreshSoon();
    this.usageSoon();
  }

  // Scroll the block a search hit named into view and mark it (the nearest block at or before its event).
  showTarget() {
    const blocks = [...$("transcript").querySelectorAll("[data-sequence]")];
    const found = blocks.filter((node) => Number(node.dataset.sequence) <= this.target).pop();
    this.target = null;
    if (!found) return;
    found.classList.add("hit");
    found.scrollIntoView({ block: "center" });
    const transcript = this.transcript;
    transcript.pinned = true; // the rest of the catch-up must not scroll the hit away
    const unpin = () => { transcript.pinned = false; };
    for (const kind of ["wheel", "keydown", "touchstart", "mousedown"]) {
      transcript.container.addEventListener(kind, unpin, { once: true });
    }
  }

  close() {
    this.opening = null;
    this.stream?.close();
    this.stream = null;
    this.session = null;
    clearTimeout(this.pending);
    clearTimeout(this.usagePending);
  }

  onEvent(record) {
    this.transcript.add(record);
    if (this.target != null && record.sequence >= this.target) this.showTarget();
    const activity = this.session?.activity;
    if (activity?.awaiting_output_since && record.type !== "user_message") delete activity.awaiting_output_since;
    if (record.type === "agent_message" || record.type === "thought") return;
    if (record.type === "done" || record.type === "error") this.usageSoon();
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
      this.session = (await call("session.get.scoped", this.scope)).session;
      this.render();
      await loadQueue(this);
    } catch (error) {
      this.alert(error);
    }
  }

  // Each turn's recorded usage (tokens and cost) comes from the session's inspect read.
  usageSoon() {
    clearTimeout(this.usagePending);
    this.usagePending = setTimeout(async () => {
      if (!this.session) return;
      const transcript = this.transcript;
      try {
        const { usage } = await call("session.inspect", this.scope);
        transcript.setUsage(usage?.turns || []);
        const { usage: ledger } = await call("session.usage", this.scope);
        if (this.transcript === transcript) replace($("session-usage"), totalsText(ledger.total));
      } catch {
        // usage is a nicety: the next turn's end asks again
      }
    }, 300);
  }

  // One operation on this session: params beyond the session's own (a queue entry, a query), and the body.
  async act(operation, params, body) {
    try {
      const result = await call(operation, { ...this.scope, ...params }, body);
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
    renderSide(s, { workspaceName: this.workspaceName, useCommand: (name) => this.useCommand(name) });
    this.tick();
  }

  actions(s) {
    if (s.type !== "user") return []; // daemon-managed sessions have no user lifecycle actions
    const running = s.state !== "stopped";
    const button = (label, onclick, tone) => el("button", { type: "button", class: tone, onclick }, label);
    return [
      !s.archived && button("Continue…", () => this.derive.dialog("continue")),
      !s.archived && button("Fork…", () => this.derive.dialog("fork")),
      running && button("Stop", () => this.act("session.stop", {}, { wait: false })),
      !s.archived && button(running ? "Stop and archive" : "Archive",
        () => this.act("session.archive", running ? { stop: true } : {})),
      s.archived && button("Unarchive", () => this.act("session.unarchive")),
      button("Remove", () => $("confirm-remove").showModal(), "danger"),
    ];
  }

  useCommand(name) {
    const box = $("message");
    box.value = `/${name} ${box.value}`;
    box.focus();
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
    if (!s?.activity?.turn_in_flight) return replace(line, this.sending ? "Sending…" : "");
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

  async send(mode) {
    const box = $("message");
    const message = box.value;
    if (!message.trim()) return;
    this.sending += 1;
    this.tick();
    try {
      const result = await this.act("session.prompt", {}, mode ? { message, mode } : { message });
      if (result && box.value === message) box.value = ""; // keep what was typed meanwhile
      // What a busy prompt did, in plain words (a steer this agent cannot take interrupts the turn instead).
      replace($("composer-note"), result?.prompt?.note || "");
    } finally {
      this.sending -= 1;
      this.tick();
    }
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
    $("stop-generation").addEventListener("click", () => this.act("session.cancel"));
    $("runtime-form").addEventListener("submit", (e) => { e.preventDefault(); this.selectRuntime(e.target); });
    $("runtime-clear").addEventListener("click", () =>
      this.act("session.runtime.clear", { expected_revision: this.session.runtime.selection_revision }));
    $("confirm-remove").addEventListener("click", async (e) => {
      if (e.target.value === "remove" && await this.act("session.remove.scoped")) this.navigate("/");
      if (e.target.value) $("confirm-remove").close();
    });
  }

  async selectRuntime(form) {
    const runtime = Object.fromEntries(RUNTIME_FIELDS.map((f) => [f, form.elements[f].value.trim()]).filter(([, v]) => v));
    if (form.elements.mode.value) runtime.acp_options = [{ id: "mode", value_id: form.elements.mode.value }];
    if (await this.act("session.runtime.set", {}, { runtime, expected_revision: this.session.runtime.selection_revision })) form.reset();
  }
}
