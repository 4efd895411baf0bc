// What the daemon's vocabulary (state names, stop reasons, codes) means, said in words for the page. The codes
// themselves stay in the API; the page shows them only where a person looks them up (the failure details).

const STOPPED_BECAUSE = {
  user_canceled: "by you", timeout: "after its time ran out", error: "after an error",
  agent_crashed: "because the agent crashed", hook_stopped: "by a hook", shutdown: "when the daemon shut down",
  completed: "after it finished", owner_released: "by its owner",
};
// stop_detail is a short phrase; those that only repeat the reason are left out.
const STOP_DETAILS = {
  inactivity: "the agent was silent too long", "daemon shutdown": "", "prompt deadline": "the prompt's time ran out",
  removed: "to remove it", "stopped to archive": "to archive it", "stop requested": "",
  "spawn ttl expired": "its time to live ran out", "parent session stopped": "its parent session stopped",
};

export function stoppedText(reason, detail) {
  const why = STOPPED_BECAUSE[reason] || (reason ? `(${words(reason)})` : "");
  const more = detail in STOP_DETAILS ? STOP_DETAILS[detail] : detail || "";
  return ["Session stopped", why].filter(Boolean).join(" ") + (more ? `: ${more}` : "");
}

const TURN_ENDS = {
  cancelled: "Answer stopped before the end", max_tokens: "The agent hit its output limit",
  max_turn_requests: "The agent hit its request limit", refusal: "The agent refused to continue",
};
export const turnEndText = (reason) => TURN_ENDS[reason] || `The answer ended early (${words(reason)})`;

const RUNTIME = {
  unbound: "not running (the next message starts it)", binding: "starting", ready: "running",
  reconfiguring: "switching its runtime", recovering: "restarting after the agent was lost",
};
const TRANSITIONS = {
  live_configuration: "applying the new runtime", process_replacement: "replacing the agent process",
  automatic_recovery: "recovering",
};
export function runtimeText(status, transition) {
  const now = RUNTIME[status] || words(status);
  return TRANSITIONS[transition] && status !== "ready" ? `${now}: ${TRANSITIONS[transition]}` : now;
}

const ACTIVITY = { idle: "waiting for you", prompting: "working", stopped: "stopped", detached: "not running" };
export const activityText = (state) => ACTIVITY[state] || words(state);

// A provider failure as a person reads it: what happened, and what to do.
const FAILURE_TITLES = {
  provider_auth_failure: (agent) => `${agent} needs you to log in`,
  model_unavailable: (agent) => `${agent} does not offer that model`,
  runtime_option_unsupported: (agent) => `${agent} does not accept that runtime choice`,
  route_not_found: (agent) => `${agent} has no such route`,
};
export const failureTitle = (code, agent) => (FAILURE_TITLES[code] || ((a) => `${a} could not start`))(agent);

const NEXT_STEPS = {
  provider_auth_failure: "Log in with the agent's own command (or set its API key in the provider's env), then "
    + "send your message again.",
  model_unavailable: "Choose a model the agent offers under Runtime, or clear the selection, then send again.",
  runtime_option_unsupported: "Change or clear the runtime selection, then send again.",
  process_exit: "The agent's process ended unexpectedly. Send your message again to start it afresh; if it keeps "
    + "failing, read its output under Details and the crash bundle.",
};
export function nextStep(code, agent) {
  return NEXT_STEPS[code] || `Check that ${agent}'s command runs in a terminal (\`compozy agent list\` shows it) `
    + "and fix what its output below says, then send your message again.";
}

// What an agent's own session updates mean; those the side panel already shows are not repeated.
export function systemText(content) {
  const raw = content.raw || {};
  switch (content.title) {
    case "available_commands_update": return null; // the Agent commands panel lists them
    case "current_mode_update": return `The agent switched to ${raw.currentModeId || "another"} mode`;
    case "session_info_update": return raw.title ? `The agent titled this session “${raw.title}”` : null;
    case "config_option_update": return "The agent changed one of its settings";
    default: return content.title ? words(content.title) : null;
  }
}

export function words(text) {
  return String(text ?? "").replaceAll("_", " ").replaceAll(".", " ");
}

// "1 session", "3 sessions": a count with its noun, plural when it is not one.
export const counted = (count, noun) => `${count} ${noun}${count === 1 ? "" : "s"}`;
