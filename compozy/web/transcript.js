// The transcript: event records in sequence order become messages, thoughts, tool calls, plans, permission
// requests, failure cards and markers, each said in words. Chunks of one agent message are folded into one
// block. Every message shows when it was sent (and an answer how long it took to write); every turn ends with
// a line that says when it ended, how long it took and, when the agent reported them, its tokens and cost.
import { el, replace, clock, took, secondsBetween } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { failureCard } from "./failure.js";
import { contentOf, formControls, formFields } from "./forms.js";
import { stoppedText, systemText, turnEndText, words } from "./words.js";

const QUIET_TYPES = new Set(["runtime_progress", "usage"]);

export class Transcript {
  constructor(container, { approve, messageActions, diff }) {
    this.container = container;
    this.approve = approve;
    this.diff = diff; // turn ID -> the turn's diff document (GET S/turns/<turn_id>/diff)
    this.messageActions = messageActions; // event -> the buttons of a user message's header
    this.last = null; // {kind, key, body, text, first, meta} of the block that chunks may extend
    this.tools = new Map();
    this.permissions = new Map();
    this.plans = new Map();
    this.turnStarts = new Map();
    this.turnEnds = new Map(); // turn_id -> its end line's usage slot
    this.usage = new Map(); // turn_id -> the usage the daemon recorded for it (session inspect)
  }

  add(event) {
    const follow = this.atBottom() && !this.pinned; // pinned: a search hit is shown until the person moves
    const before = this.container.lastElementChild;
    const handler = HANDLERS[event.type];
    if (handler) handler.call(this, event, event.content || {});
    else if (!QUIET_TYPES.has(event.type)) this.marker(event, words(event.type));
    const added = this.container.lastElementChild;
    if (added && added !== before && !added.dataset.sequence) added.dataset.sequence = event.sequence; // its first event
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
      const meta = el("span", { class: "meta" }, clock(event.timestamp));
      const node = kind === "thought"
        ? el("details", { class: "thought" }, el("summary", {}, "Thought"), body)
        : el("article", { class: "msg agent" }, el("header", {}, el("span", { class: "who" }, event.agent_name || "Agent"),
          meta), body);
      this.block(node, kind, key);
      Object.assign(this.last, { body, meta, first: event.timestamp });
    }
    this.last.text += event.content.text || "";
    replace(this.last.body, render(this.last.text));
    const writing = secondsBetween(this.last.first, event.timestamp);
    if (kind === "agent" && writing >= 1) replace(this.last.meta, clock(this.last.first), ` · ${took(writing)}`);
  }

  marker(event, text, tone = "") {
    this.block(el("p", { class: `marker ${tone}`, "data-type": event.type }, text));
  }

  // The turn's end line: when, how long since its message, and the usage the agent reported.
  turnEnd(event, text, tone = "") {
    const started = this.turnStarts.get(event.turn_id);
    const usage = el("span", { class: "usage" });
    this.block(el("p", { class: `turn-end ${tone}`, "data-turn-id": event.turn_id || "" },
      text, " ", clock(event.timestamp), started ? ` · took ${took(secondsBetween(started, event.timestamp))}` : "",
      usage));
    if (!event.turn_id) return;
    this.turnEnds.set(event.turn_id, usage);
    const tokens = event.content?.usage; // what the prompt's answer said, until the recorded usage is read
    const recorded = this.usage.get(event.turn_id) || (tokens && { tokens });
    if (recorded) replace(usage, usageText(recorded));
  }

  // The usage each turn recorded (tokens, turn_cost), on the turns' end lines now or when they come.
  setUsage(turns) {
    for (const turn of turns) {
      this.usage.set(turn.turn_id, turn);
      const slot = this.turnEnds.get(turn.turn_id);
      if (slot) replace(slot, usageText(turn));
    }
  }

  // One button per option the agent offered, in its order and named as it named them; a click
  // answers with that option's ID. A question's free form (its `accept` option) is a field per form
  // field and an Answer button that sends them as the answer's content.
  permissionButtons(event, options) {
    const offered = (Array.isArray(options) ? options : []).filter((o) => o && typeof o.option_id === "string");
    if (!offered.length) return el("span", { class: "options" }, "No options offered");
    const question = event.content.action === "question";
    const fields = formFields(event.content.question?.schema);
    return el("span", { class: "options", role: "group", "aria-label": question ? "Answer options" : "Permission options" },
      offered.map((option) => {
        const form = question && option.option_id === "accept" && option.kind === "accept";
        const button = el("button", {
          type: "button", class: String(option.kind || "").split("_")[0],
          onclick: () => this.approve(event.content.request_id, option.option_id, form ? contentOf(fields) : undefined),
        }, option.name || option.option_id);
        return form ? [...formControls(fields), button] : button;
      }));
  }
}

function usageText({ tokens, turn_cost: cost }) {
  const count = (n) => Number(n).toLocaleString();
  const parts = [];
  if (tokens?.totalTokens != null || tokens?.inputTokens != null) {
    const total = tokens.totalTokens ?? (tokens.inputTokens || 0) + (tokens.outputTokens || 0);
    const split = tokens.inputTokens != null && tokens.outputTokens != null
      ? ` (${count(tokens.inputTokens)} in, ${count(tokens.outputTokens)} out)` : "";
    parts.push(`${count(total)} tokens${split}`);
  }
  if (cost) parts.push(money(cost));
  return parts.map((part) => ` · ${part}`);
}

function money({ amount, currency }) {
  try {
    return new Intl.NumberFormat(undefined, { style: "currency", currency, maximumFractionDigits: 4 }).format(amount);
  } catch {
    return `${amount} ${currency}`;
  }
}

// An answered request: the option chosen, as the agent named it, and who or what chose it.
function answered(content) {
  const option = content.option;
  const given = option?.content ? Object.values(option.content).join(", ") : null;
  const chosen = given ?? (option?.option_id ? option.name || option.option_id : content.decision);
  return el("span", { class: "decision" }, chosen, content.reason ? ` (${content.reason})` : "");
}

const MARKERS = {
  provider_failure(event, marker) { this.block(failureCard(event, marker)); },
  prompt_dropped(event, marker) { // "queued input could not start: CODE: message" says the message only
    const summary = marker.summary || "";
    this.marker(event, summary.replace(/^(queued input could not start: )[a-z_]+: /, "$1"),
      /could not/.test(summary) ? "warn" : "");
  },
  prompt_cancel(event, marker) {
    this.marker(event, /ignored/.test(marker.summary || "") ? "The agent ignored the stop; its process was ended"
      : "You stopped the answer", "warn");
  },
};

const HANDLERS = {
  user_message(event, content) {
    this.turnStarts.set(event.turn_id, event.timestamp);
    this.block(el("article", { class: "msg user", "data-message-id": content.message_id, "data-turn-id": event.turn_id },
      el("header", {}, el("span", { class: "who" }, "You"), el("span", { class: "meta" }, clock(event.timestamp)),
        el("span", { class: "msg-actions" }, this.messageActions(event))),
      el("div", { class: "body plain" }, content.text)));
  },
  agent_message(event) { this.chunk(event, "agent", renderMarkdown); },
  thought(event) { this.chunk(event, "thought", (text) => text); },

  tool_call(event, content) {
    const known = this.tools.get(content.tool_call_id);
    if (known) return setStatus(known, content.status);
    const node = el("div", { class: "tool", "data-tool-call-id": content.tool_call_id },
      el("span", { class: "badge status" }), " ", el("strong", {}, content.title || "Tool call"),
      " ", el("span", { class: "muted" }, content.kind && content.kind !== "other" ? content.kind : ""));
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
      el("li", { "data-status": entry.status }, el("span", { class: "badge" }, words(entry.status || "pending")), " ", entry.content)));
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
      el("p", {}, el("strong", {}, content.action === "question" ? "The agent asks: " : "Permission requested: "),
        content.title || content.action || "",
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
    const special = MARKERS[marker.kind];
    if (special) return special.call(this, event, marker);
    this.marker(event, marker.summary || words(marker.kind || "marker"));
  },
  done(event, content) {
    if (content.stop_reason === "end_turn") this.turnEnd(event, "Finished");
    else this.turnEnd(event, turnEndText(content.stop_reason), "warn");
  },
  error(event, content) {
    const error = content.error;
    this.turnEnd(event, `The turn failed: ${typeof error === "string" ? error : error?.message || JSON.stringify(error)}`,
      "bad");
  },
  session_stopped(event, content) { this.marker(event, stoppedText(content.stop_reason, content.stop_detail)); },
  system(event, content) {
    const text = systemText(content);
    if (text) this.marker(event, text);
  },
  runtime_warning(event, content) { this.marker(event, content.text || "The agent reported a problem", "warn"); },
  runtime_recovery_started(event, content) {
    this.marker(event, `The agent was lost; restarting it (attempt ${content.attempt} of ${content.max_attempts})`, "warn");
  },
  runtime_recovery_succeeded(event) { this.marker(event, "The agent is back; the answer goes on"); },
  runtime_recovery_exhausted(event, content) {
    this.marker(event, `The agent could not be restarted${content.error ? `: ${content.error}` : ""}`, "bad");
  },
  "session.supervision_warning"(event, content) { this.marker(event, content.text || "The agent has been quiet", "warn"); },
  "session.supervision_stopped"(event, content) {
    this.marker(event, content.cause === "inactivity" ? "Stopped: the agent was silent too long"
      : `Stopped by supervision (${words(content.cause)})`, "warn");
  },
  "session.fallback.used"(event, content) {
    this.marker(event, `${content.provider} could not start${content.code ? ` (${words(content.code)})` : ""}; `
      + "trying the agent's next route", "warn");
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
  replace(node.querySelector(".status"), words(status));
}
