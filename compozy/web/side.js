// The session view's side panel: the failure (with the agent's own error and what to do), health and runtime in
// words, the runtime selection form, the agent's commands and modes, and lineage.
import { $, el, replace, ago, sessionHref } from "./dom.js";
import { contextText, originText } from "./derive.js";
import { withCode } from "./markdown.js";
import { activityText, runtimeText, nextStep, stoppedText, words } from "./words.js";

export const RUNTIME_FIELDS = ["provider", "model", "reasoning_effort", "speed"];

const optionText = (o) => `${o.id}=${o.value_id ?? o.bool_value}`;
export const runtimeSummary = (runtime) => runtime
  ? [...RUNTIME_FIELDS.map((f) => runtime[f]), ...(runtime.acp_options || []).map(optionText)].filter(Boolean)
    .join(" / ") || "default"
  : "none";

export function rows(list, pairs) {
  replace(list, pairs.filter(([, value]) => value != null && value !== "")
    .map(([name, value]) => [el("dt", {}, name), el("dd", {}, value)]));
}

function sessionLink(id) {
  return id ? el("a", { href: sessionHref(id), "data-route": true, class: "name" }, id) : null;
}

export function renderSide(s, { workspaceName, useCommand }) {
  renderFailure(s);
  renderAgent(s.runtime, useCommand);
  rows($("health"), [["State", s.state === "stopped" ? stoppedText(s.stop_reason, s.stop_detail) : s.state],
    ["Activity", activityText(s.health?.state)], ["Health", s.health?.health && words(s.health.health)],
    ["Agent", runtimeText(s.runtime.status, s.runtime.transition)],
    ["Last activity", ago(s.activity?.last_activity_at)], ["Attention", s.attention && words(s.attention)]]);
  const effective = s.runtime.effective || s.runtime.last_known;
  rows($("runtime"), [["Selected", `${runtimeSummary(s.runtime.selected)} (revision ${s.runtime.selection_revision})`],
    ["Effective", runtimeSummary(effective)]]);
  const form = $("runtime-form");
  for (const field of RUNTIME_FIELDS) form.elements[field].placeholder = effective?.[field] || "";
  const lineage = s.lineage || {};
  rows($("lineage"), [["Workspace", workspaceName(s.workspace_id)], ["Directory", s.cwd],
    ["Agent", s.agent_name], ["Type", s.type], ["Kind", lineage.kind || "root"],
    ["Parent", sessionLink(lineage.parent_session_id)],
    ["Root", lineage.root_session_id !== s.id ? sessionLink(lineage.root_session_id) : null],
    ["Spawn depth", String(lineage.spawn_depth ?? 0)],
    ...derivationRows(s.derivation)]);
}

function renderFailure(s) {
  const failure = s.failure;
  $("failure-section").hidden = !failure;
  if (!failure) return;
  const error = failure.agent_error;
  rows($("failure"), [["Kind", words(failure.kind)],
    ["What to do", withCode(failure.next_step || nextStep(failure.code || failure.kind, s.agent_name))],
    ["Crash bundle", failure.crash_bundle_path && el("code", {}, failure.crash_bundle_path)]]);
  rows($("failure-details"), [["Summary", failure.summary],
    ["Agent error", error && el("code", {}, `${error.message} (${error.code})${"data" in error ? ": " + JSON.stringify(error.data) : ""}`)],
    ["Agent stderr", failure.stderr_tail?.length && el("pre", { class: "stderr" }, failure.stderr_tail.join("\n"))]]);
}

// The agent's own commands (a click puts one in the composer) and its session modes (a runtime option).
function renderAgent(runtime, useCommand) {
  const commands = runtime.available_commands || [];
  $("commands-section").hidden = !commands.length;
  replace($("commands"), commands.map((c) => el("li", {},
    el("button", { type: "button", class: "link", onclick: () => useCommand(c.name) }, `/${c.name}`), " ",
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

function derivationRows(d) {
  if (!d) return [];
  return [["Origin", originText(d)], ["Context", contextText(d)],
    ["Seed", d.seed + (d.native_state ? ` (${d.native_state})` : "")], ["Clone error", d.native_fork_error],
    ["First prompt", d.first_prompt]];
}
