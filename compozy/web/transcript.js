// The transcript: event records in sequence order become messages, thoughts, tool calls, plans,
// permission requests and markers. Chunks of one agent message are folded into one block.
import { el, replace } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

const QUIET_TYPES = new Set(["runtime_progress", "usage"]);

export class Transcript {
  constructor(container, { approve, messageActions }) {
    this.container = container;
    this.approve = approve;
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

  // What a native fork carries (its history's carried messages), shown before its own events: its
  // agent's clone already knows them, so they are not in its log.
  carried(messages, source) {
    if (!messages.length) return;
    const section = el("section", { class: "carried" },
      el("p", { class: "marker" }, `Carried from ${source}`));
    for (const m of messages) {
      const user = m.role === "user";
      section.append(el("article", { class: `msg ${user ? "user" : "agent"} carried`, "data-turn-id": m.turn_id || "" },
        el("header", {}, user ? "You" : "Agent"),
        user ? el("div", { class: "body plain" }, m.text) : el("div", { class: "body" }, renderMarkdown(m.text))));
    }
    this.block(section);
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

function setStatus(node, status) {
  if (!status) return;
  node.dataset.status = status;
  replace(node.querySelector(".status"), status.replaceAll("_", " "));
}
