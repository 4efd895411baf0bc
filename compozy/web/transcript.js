// The transcript: event records in sequence order become messages, thoughts, tool calls, plans,
// permission requests and markers. Chunks of one agent message are folded into one block.
import { el, replace } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

const QUIET_TYPES = new Set(["runtime_progress", "usage"]);

export class Transcript {
  constructor(container, { approve, messageActions, diff }) {
    this.container = container;
    this.approve = approve;
    this.diff = diff; // turn ID -> the turn's diff document (GET S/turns/<turn_id>/diff)
    this.messageActions = messageActions; // event -> the buttons of a user message's header
    this.last = null; // {kind, key, body, text} of the block that chunks may extend
    this.tools = new Map();
    this.permissions = new Map();
    this.plans = new Map();
    this.turnStarts = new Map();
  }

  add(event) {
    const follow = this.atBottom();
    const handler = HANDLERS[event.type];
    if (handler) handler.call(this, event, event.content || {});
    else if (!QUIET_TYPES.has(event.type)) this.marker(event, event.type.replaceAll("_", " "));
    if (follow) this.container.scrollTop = this.container.scrollHeight;
  }

  atBottom() {
    const c = this.container;
    return c.scrollHeight - c.scrollTop - c.clientHeight < 40;
  }

  block(node, kind = null, key = null) {
    this.container.append(node);
    this.last = kind ? { kind, key, text: "" } : null;
    return node;
  }

  chunk(event, kind, render) {
    const key = event.content.agent_message_id || event.turn_id;
    if (this.last?.kind !== kind || this.last.key !== key) {
      const body = el("div", { class: "body" });
      const node = kind === "thought"
        ? el("details", { class: "thought" }, el("summary", {}, "Thought"), body)
        : el("article", { class: "msg agent" }, el("header", {}, event.agent_name || "Agent"), body);
      this.block(node, kind, key);
      this.last.body = body;
    }
    this.last.text += event.content.text || "";
    replace(this.last.body, render(this.last.text));
  }

  marker(event, text, tone = "") {
    this.block(el("p", { class: `marker ${tone}`, "data-type": event.type }, text));
  }

  // One button per option the agent offered, in its order and named as it named them; a click
  // answers with that option's ID.
  permissionButtons(event, options) {
    const offered = (Array.isArray(options) ? options : []).filter((o) => o && typeof o.option_id === "string");
    if (!offered.length) return el("span", { class: "options" }, "No options offered");
    return el("span", { class: "options", role: "group", "aria-label": "Permission options" },
      offered.map((option) => el("button", {
        type: "button", class: String(option.kind || "").split("_")[0],
        onclick: () => this.approve(event.content.request_id, option.option_id),
      }, option.name || option.option_id)));
  }
}

// An answered request: the option chosen, as the agent named it, and who or what chose it.
function answered(content) {
  const option = content.option;
  const chosen = option?.option_id ? option.name || option.option_id : content.decision;
  return el("span", { class: "decision" }, chosen, content.reason ? ` (${content.reason})` : "");
}

const HANDLERS = {
  user_message(event, content) {
    this.turnStarts.set(event.turn_id, event.timestamp);
    this.block(el("article", { class: "msg user", "data-message-id": content.message_id, "data-turn-id": event.turn_id },
      el("header", {}, "You", el("span", { class: "msg-actions" }, this.messageActions(event))),
      el("div", { class: "body plain" }, content.text)));
  },
  agent_message(event) { this.chunk(event, "agent", renderMarkdown); },
  thought(event) { this.chunk(event, "thought", (text) => text); },

  tool_call(event, content) {
    const known = this.tools.get(content.tool_call_id);
    if (known) return setStatus(known, content.status);
    const node = el("div", { class: "tool", "data-tool-call-id": content.tool_call_id },
      el("span", { class: "badge status" }), " ", el("strong", {}, content.title || "Tool call"),
      " ", el("span", { class: "muted" }, content.kind || ""));
    this.tools.set(content.tool_call_id, this.block(node));
    setStatus(node, content.status);
  },
  tool_result(event, content) {
    const node = this.tools.get(content.tool_call_id) || this.block(el("div", { class: "tool" }, el("span", { class: "badge status" })));
    setStatus(node, content.status);
    if (content.output) node.append(el("details", {}, el("summary", {}, "Output"), el("pre", {}, content.output)));
  },

  plan(event, content) {
    const list = el("ol", {}, (content.entries || []).map((entry) =>
      el("li", { "data-status": entry.status }, el("span", { class: "badge" }, (entry.status || "pending").replaceAll("_", " ")), " ", entry.content)));
    const known = this.plans.get(event.turn_id);
    if (known) return replace(known, el("h4", {}, "Plan"), list);
    this.plans.set(event.turn_id, this.block(el("div", { class: "plan" }, el("h4", {}, "Plan"), list)));
  },

  permission(event, content) {
    const known = this.permissions.get(content.request_id);
    if (content.decision && known) {
      return known.querySelector(".options")?.replaceWith(answered(content));
    }
    const node = el("div", { class: "permission", "data-request-id": content.request_id },
      el("p", {}, el("strong", {}, "Permission requested: "), content.title || content.action || "",
        content.resource && !String(content.title).includes(content.resource) ? el("code", {}, content.resource) : ""),
      content.decision ? answered(content) : this.permissionButtons(event, content.options));
    this.permissions.set(content.request_id, this.block(node));
  },

  // A turn's end checkpoint: "Files changed (N)", its diff loaded when opened.
  checkpoint(event, content) {
    if (content.status !== "taken") {
      if (content.kind !== "start") this.marker(event, `Files not checkpointed: ${content.message || content.reason}`, "warn");
      return;
    }
    if (content.kind !== "end" || !content.files_changed) return;
    const body = el("div", { class: "diff" });
    const node = el("details", { class: "files-changed", "data-turn-id": event.turn_id },
      el("summary", {}, `Files changed (${content.files_changed})`), body);
    node.addEventListener("toggle", () => node.open && !body.childElementCount && this.showDiff(event.turn_id, body),
      { once: false });
    this.block(node);
  },
  files_restored(event, content) {
    this.marker(event, `Files restored to checkpoint ${content.checkpoint_id} (${content.files_changed} changed; `
      + `undo: ${content.undo_checkpoint_id})`);
  },
  "transcript_marker.created"(event, content) {
    const marker = content.marker || {};
    this.marker(event, marker.summary || (marker.kind || "marker").replaceAll("_", " "));
  },
  done(event, content) {
    if (content.stop_reason !== "end_turn") this.marker(event, `Turn ended: ${content.stop_reason}`, "warn");
    else this.last = null;
  },
  error(event, content) {
    const error = content.error;
    this.marker(event, `Turn failed: ${typeof error === "string" ? error : error?.message || JSON.stringify(error)}`, "bad");
  },
  session_stopped(event, content) {
    this.marker(event, `Session stopped: ${content.stop_reason}${content.stop_detail ? ` (${content.stop_detail})` : ""}`);
  },
  system(event, content) { this.marker(event, (content.title || "system").replaceAll("_", " ")); },
  runtime_warning(event, content) { this.marker(event, content.text || "runtime warning", "warn"); },
  runtime_recovery_started(event, content) {
    this.marker(event, `Recovering: attempt ${content.attempt} of ${content.max_attempts}`, "warn");
  },
  runtime_recovery_succeeded(event) { this.marker(event, "Recovered"); },
  runtime_recovery_exhausted(event, content) { this.marker(event, `Recovery failed: ${content.error || ""}`, "bad"); },
  "session.supervision_warning"(event, content) { this.marker(event, content.text || "quiet", "warn"); },
  "session.supervision_stopped"(event, content) { this.marker(event, `Stopped by supervision: ${content.cause}`, "warn"); },
  "session.fallback.used"(event, content) {
    this.marker(event, `Fallback route ${content.route}: ${content.provider}${content.model ? ` / ${content.model}` : ""}`, "warn");
  },
};

Transcript.prototype.showDiff = async function (turnId, body) {
  replace(body, el("p", { class: "muted" }, "Loading…"));
  try {
    const { diff } = await this.diff(turnId);
    replace(body, el("ul", { class: "diff-files" }, diff.files.map((file) => el("li", {},
      el("span", { class: `badge ${file.status}` }, file.status), " ",
      file.from ? `${file.from} → ${file.path}` : file.path, " ",
      el("span", { class: "muted" }, file.binary ? "binary" : `+${file.added} −${file.deleted}`)))),
    el("pre", { class: "patch" }, (diff.patch || "").split("\n").map((line) => el("span", {
      class: line.startsWith("+") && !line.startsWith("+++") ? "add"
        : line.startsWith("-") && !line.startsWith("---") ? "del" : line.startsWith("@@") ? "hunk" : "",
    }, line + "\n"))), diff.truncated && el("p", { class: "muted" }, "The diff is cut at 1 MiB."));
  } catch (error) {
    replace(body, el("p", { class: "bad" }, error.message));
  }
};

function setStatus(node, status) {
  if (!status) return;
  node.dataset.status = status;
  replace(node.querySelector(".status"), status.replaceAll("_", " "));
}
