// The configured agents (GET /api/agents), read once per page load and after a failed read, for the agent
// choices of the create form and the continue dialog: a list, never a free-text box.
import { el } from "./dom.js";
import { call } from "./api.js";

let known = null;

export async function agents() {
  if (!known) {
    known = call("agent.list").catch((error) => {
      known = null;
      throw error;
    });
  }
  return known;
}

// A <select name=...> of the agents, the default one chosen, each described by its provider and model.
export async function agentSelect(name, label) {
  const { agents: list, default_agent: preferred } = await agents();
  return el("select", { name, "aria-label": label, required: true },
    list.map((a) => el("option", { value: a.name, selected: a.name === preferred,
      title: [a.provider, a.runtime?.model].filter(Boolean).join(" / ") }, a.name)));
}

// What a list row shows for an agent's defaults when nothing else is known of the session's runtime.
export async function agentDefaults(name) {
  try {
    return (await agents()).agents.find((a) => a.name === name)?.runtime || null;
  } catch {
    return null;
  }
}
