// The page: client-side routing between the session list (/) and one session (/sessions/<id>),
// the list kept live by the catalog stream. At most two streams are open: the catalog's, always,
// and the open session's.
import { $, el, replace, api, follow, ago, refreshTimes } from "./dom.js";
import { SessionView, badges } from "./session.js";

const workspaces = new Map();
const view = new SessionView({ alert: showAlert, navigate, workspaceName: (id) => workspaces.get(id)?.name || id });
let refreshTimer = null;

function showAlert(error) {
  const box = $("alert");
  replace(box, String(error.message || error), " ",
    el("button", { type: "button", "aria-label": "Dismiss", onclick: () => { box.hidden = true; } }, "×"));
  box.hidden = false;
}

function navigate(path) {
  history.pushState(null, "", path);
  route();
}

function route() {
  const match = location.pathname.match(/^\/sessions\/([^/]+)$/);
  $("alert").hidden = true;
  $("list-view").hidden = Boolean(match);
  $("session-view").hidden = !match;
  if (match) return view.open(decodeURIComponent(match[1]));
  view.close();
  document.title = "Sessions · compozy";
  loadList();
}

async function loadWorkspaces() {
  const { workspaces: list } = await api("GET", "/api/workspaces");
  const select = $("filter-workspace");
  const chosen = select.value;
  workspaces.clear();
  for (const workspace of list) workspaces.set(workspace.id, workspace);
  replace(select, el("option", { value: "" }, "any"),
    list.map((w) => el("option", { value: w.id, title: w.path }, w.name)));
  select.value = chosen;
}

async function loadList() {
  const query = new URLSearchParams({ archive: $("filter-archive").value });
  for (const [name, id] of [["state", "filter-state"], ["workspace", "filter-workspace"]]) {
    if ($(id).value) query.set(name, $(id).value);
  }
  try {
    const { sessions, page } = await api("GET", `/api/sessions?${query}`);
    if (sessions.some((s) => !workspaces.has(s.workspace_id))) await loadWorkspaces();
    replace($("session-rows"), sessions.length ? sessions.map(sessionRow)
      : el("tr", {}, el("td", { colspan: 5, class: "muted" }, "No sessions match.")));
    replace($("list-count"), page.has_more ? `${sessions.length} of ${page.total}` : `${sessions.length} sessions`);
  } catch (error) {
    showAlert(error);
  }
}

function sessionRow(s) {
  const workspace = workspaces.get(s.workspace_id);
  return el("tr", { "data-session-id": s.id },
    el("td", { title: workspace?.path }, el("span", { class: "name" }, workspace?.name || s.workspace_id)),
    el("td", {}, el("a", { href: `/sessions/${encodeURIComponent(s.id)}`, "data-route": true, class: "name" }, s.name || s.id)),
    el("td", {}, el("span", { class: "name" }, s.agent_name)),
    el("td", {}, el("span", { class: "badges" }, badges(s))),
    el("td", {}, ago(s.activity?.last_activity_at || s.updated_at)));
}

function onCatalogChange(data) {
  if (!$("list-view").hidden) {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(loadList, 150);
  } else if (view.session?.id === data.session_id) {
    if (data.change === "deleted") navigate("/");
    else view.refreshSoon();
  }
}

async function createSession(form) {
  const body = Object.fromEntries([...new FormData(form)].filter(([, value]) => value.trim()));
  try {
    const { session } = await api("POST", "/api/sessions", body);
    await loadWorkspaces();
    navigate(`/sessions/${encodeURIComponent(session.id)}`);
  } catch (error) {
    showAlert(error);
  }
}

document.addEventListener("click", (e) => {
  const link = e.target.closest("a[data-route]");
  if (!link || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey) return;
  e.preventDefault();
  navigate(link.getAttribute("href"));
});
window.addEventListener("popstate", route);
$("new-session").addEventListener("submit", (e) => { e.preventDefault(); createSession(e.target); });
for (const id of ["filter-state", "filter-workspace", "filter-archive"]) $(id).addEventListener("change", loadList);
setInterval(() => { refreshTimes(); view.tick(); }, 1000);

follow("/api/sessions/stream", {
  onEvent: onCatalogChange,
  onOpen: () => { replace($("connection"), "live"); if (!$("list-view").hidden) loadList(); },
  onDrop: () => replace($("connection"), "reconnecting…"),
});
loadWorkspaces().catch(showAlert).finally(route);
