// Rewind, fork and continue from the session view. Each reads the session's fences through the
// read-only preview first; a dialog keeps one idempotency key per distinct request, so sending the
// same request again gets the same new session back, and once a new session exists the dialog keeps
// offering to open it.
import { $, el, replace, sessionHref } from "./dom.js";
import { call } from "./api.js";
import { agentSelect } from "./agents.js";

const newKey = () => `web-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 12)}`;

const fenced = (fences) => ({ expected_epoch: fences.epoch, expected_generation: fences.generation,
  expected_max_sequence: fences.max_sequence });

export function contextText(carried) {
  const omitted = carried.omitted_count ? `${carried.omitted_count} omitted`
    : carried.truncated ? "bodies cut" : "nothing omitted";
  return `${carried.message_count} messages · ${(carried.replay_bytes / 1024).toFixed(1)} KiB · ${omitted}`;
}

// "continue · from sess_… · agent · through turn …", as `compozy session status` prints it.
export function originText(d) {
  const through = d.through_turn_id ? `turn ${d.through_turn_id}` : "no settled turn";
  if (d.kind === "continue") return `continue · from ${d.source_session_id} · ${d.source_agent_name} · through ${through}`;
  return d.origin_message_id ? `fork · from ${d.source_session_id} · through ${d.origin_message_id} (${through})`
    : `fork · from ${d.source_session_id} · through ${through}`;
}

function ask(dialog) {
  return new Promise((resolve) => {
    const answer = (e) => {
      if (!e.target.value) return;
      dialog.removeEventListener("click", answer);
      dialog.close();
      resolve(e.target.value);
    };
    dialog.addEventListener("click", answer);
    dialog.showModal();
  });
}

export class Derive {
  constructor(view) {
    this.view = view; // the SessionView: session, path, alert, navigate, reloadTranscript
    $("derive-dialog").addEventListener("close", (e) => replace(e.target)); // each dialog starts afresh
  }

  get scope() {
    return this.view.scope;
  }

  derivable() {
    const s = this.view.session;
    return s && s.type === "user" && !s.archived;
  }

  // The buttons in a durable user message's header.
  messageActions(event) {
    const id = event.content.message_id;
    if (!id || !this.derivable()) return [];
    const button = (label, name, onclick) => el("button", { type: "button", class: "link", "aria-label": name, onclick }, label);
    return [
      !event.content.steer && button("Rewind", "Rewind to before this message", () => this.rewind(id)),
      button("Fork", "Fork from this message", () => this.dialog("fork", id)),
    ];
  }

  async rewind(messageId) {
    const box = $("message");
    if (box.value.trim()) {
      return this.view.alert(new Error("Empty the composer first: rewind puts the message's text back in it."));
    }
    if (await ask($("confirm-rewind")) !== "rewind") return;
    try {
      const { preview } = await call("session.derive.preview", this.scope);
      const { rewind } = await call("session.rewind", this.scope,
        { message_id: messageId, idempotency_key: newKey(), ...fenced(preview.fences) });
      this.view.reloadTranscript();
      box.value = rewind.draft_text;
      box.focus();
    } catch (error) {
      this.view.alert(error);
    }
  }

  // The fork (through a message, or whole) and continue dialog: the preview first, then the request.
  async dialog(kind, messageId = null) {
    let preview, agentField;
    try {
      preview = (await call("session.derive.preview", { ...this.scope, message_id: messageId })).preview;
      agentField = kind === "continue" ? await agentSelect("agent_name", "Agent") : null;
    } catch (error) {
      return this.view.alert(error);
    }
    const dialog = $("derive-dialog");
    const keys = new Map();
    const status = el("p", { class: "derive-status", role: "status" });
    const opener = el("p", { class: "derive-open" });
    const fields = kind === "continue" ? [
      el("label", {}, "Agent ", agentField),
      el("label", {}, "Message ", el("textarea", { name: "message", rows: 3, placeholder: "optional: the first prompt" })),
    ] : [];
    const form = el("form", { class: "derive-form" },
      el("h2", { id: "derive-title" }, kind === "continue" ? "Continue with another agent" : "Fork this session"),
      this.previewLines(preview), ...fields,
      el("label", {}, "Name ", el("input", { name: "name", placeholder: "optional" })), status, opener,
      el("span", {}, el("button", { type: "button", value: "cancel", onclick: () => dialog.close() }, "Cancel"), " ",
        el("button", { type: "submit", disabled: preview.cut && !preview.cut.turn_settled },
          kind === "continue" ? "Continue" : "Fork")));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const request = Object.fromEntries([...new FormData(form)].filter(([, value]) => value.trim()));
      if (messageId) request.message_id = messageId;
      const signature = JSON.stringify(request);
      if (!keys.has(signature)) keys.set(signature, newKey()); // the same request again: the same key
      replace(status, "Working…");
      try {
        const answer = await call(kind === "continue" ? "session.continue" : "session.fork", this.scope,
          { ...request, idempotency_key: keys.get(signature), ...fenced(preview.fences) });
        dialog.close();
        this.view.navigate(`/sessions/${encodeURIComponent(answer.session.id)}`);
      } catch (error) {
        replace(status, error.message);
        const child = error.body?.child_session_id;
        if (child) {
          replace(opener, el("a", { href: sessionHref(child), "data-route": true,
            onclick: () => dialog.close() }, "Open new session"));
        }
      }
    });
    replace(dialog, form);
    dialog.showModal();
  }

  previewLines(preview) {
    const cut = preview.cut;
    return el("ul", { class: "derive-preview" },
      el("li", {}, `Carries ${contextText(preview)} (the source has ${preview.source_message_count})`),
      cut && el("li", {}, `Through ${cut.message_id} (turn ${cut.turn_id})`),
      cut && !cut.turn_settled && el("li", { class: "bad" }, "That turn is still running: wait, or fork from an earlier message."),
      !cut && preview.source_turn_in_progress && el("li", {}, "A running turn is left out; its tools may have partially executed."),
      preview.native_fork_possible && el("li", {}, "A whole fork is cloned by the agent itself."),
      el("li", { class: "muted" }, "The source session is not changed."));
  }
}
