// A provider failure in the transcript: a card that says which agent failed and how, in its own words (its
// error and its last output), and what to do next; the codes stay in a details line for whoever looks them up.
import { el, clock } from "./dom.js";
import { withCode } from "./markdown.js";
import { failureTitle, nextStep } from "./words.js";

// The marker's summary is "route N (provider): code: message"; the message is what the daemon said.
const SUMMARY = /^route \d+ \(([^)]*)\): ([a-z_]+): ([\s\S]*)$/;

export function failureCard(event, marker) {
  const evidence = marker.evidence || {};
  const [, provider, summaryCode, said] = (marker.summary || "").match(SUMMARY) || [];
  const code = evidence.code || summaryCode || "provider_unavailable";
  const agent = event.agent_name || provider || "The agent";
  const reason = agentReason(evidence.agent_error) || withoutStderr(said || marker.summary || "");
  const stderr = evidence.stderr_tail || [];
  return el("section", { class: "failure-card", role: "group", "aria-label": "Agent failure", "data-code": code },
    el("header", {}, el("strong", {}, failureTitle(code, agent)), " ", clock(marker.occurred_at || event.timestamp)),
    reason && el("p", {}, el("span", { class: "muted" }, evidence.agent_error ? "The agent said: " : "Why: "),
      el("span", { class: "reason" }, reason)),
    stderr.length ? el("details", { open: true }, el("summary", {}, "Its last output"),
      el("pre", { class: "stderr" }, stderr.join("\n"))) : null,
    el("p", { class: "next-step" }, el("strong", {}, "What to do: "),
      withCode(evidence.next_step ? sentence(evidence.next_step) : nextStep(code, agent))),
    el("p", { class: "muted codes" }, [...new Set([code, evidence.failure_kind])].filter(Boolean)
      .concat(provider ? [`provider ${provider}`] : []).join(" · ")));
}

// The agent's own reason: its error's details when it gave some, else its message.
function agentReason(error) {
  if (!error) return null;
  const data = error.data;
  const detail = typeof data === "string" ? data : data && (data.details || data.message || data.reason);
  return typeof detail === "string" && detail ? detail : error.message;
}

const withoutStderr = (text) => text.split(" | stderr: ")[0];
const sentence = (text) => text.charAt(0).toUpperCase() + text.slice(1) + (/[.!?]$/.test(text) ? "" : ".");
