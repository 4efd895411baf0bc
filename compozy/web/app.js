// The page: client-side routing between the session list (/), one session (/sessions/<id>), the inbox (/inbox),
// usage (/usage) and the settings (/settings), the list kept live by the catalog stream. At most three streams
// are open: the catalog's and the inbox's, always, and the open session's.
import { $, el, replace, follow, refreshTimes, withProfile, profile } from "./dom.js";
import { address, call } from "./api.js";
import { SessionView } from "./session.js";
import { SessionList } from "./list.js";
import { SettingsView } from "./settings.js";
import { Inbox } from "./inbox.js";
import { UsageView } from "./usage.js";
import { Search } from "./search.js";

const workspaces = new Map();
const views = { list: $("list-view"), session: $("session-view"), settings: $("settings-view"),
  inbox: $("inbox-view"), usage: $("usage-view") };
const session = new SessionView({ alert: showAlert, navigate, workspaceName: (id) => workspaces.get(id)?.name || id });
const list = new SessionList({ alert: showAlert, navigate, workspaces, loadWorkspaces });
const settings = new SettingsView({ alert: showAlert });
const inbox = new Inbox({ alert: showAlert });
const usage = new UsageView({ alert: showAlert });
new Search({ alert: showAlert, navigate });
let refreshTimer = null;

function showAlert(error) {
  const box = $("alert");
  const text = String(error.message || error);
  replace(box, el("span", { class: "alert-text", title: text }, text),
    el("button", { type: "button", "aria-label": "Dismiss", onclick: () => { box.hidden = true; } }, "×"));
  box.hidden = false;
}

// A page address of this page, keeping the profile it was opened for.
function navigate(path) {
  history.pushState(null, "", withProfile(path));
  route();
}

function show(name) {
  for (const [key, node] of Object.entries(views)) node.hidden = key !== name;
  for (const link of document.querySelectorAll(".nav a")) {
    link.toggleAttribute("aria-current", link.dataset.view === name);
  }
}

function route() {
  const match = location.pathname.match(/^\/sessions\/([^/]+)$/);
  $("alert").hidden = true;
  if (match) {
    show("session");
    return session.open(decodeURIComponent(match[1]));
  }
  session.close();
  inbox.hide();
  if (location.pathname === "/inbox") {
    show("inbox");
    return inbox.show();
  }
  if (location.pathname === "/usage") {
    show("usage");
    return usage.show();
  }
  if (location.pathname === "/settings") {
    show("settings");
    return settings.show();
  }
  show("list");
  list.show();
}

async function loadWorkspaces() {
  const { workspaces: listed } = await call("workspace.list");
  const select = $("filter-workspace");
  const chosen = select.value;
  workspaces.clear();
  for (const workspace of listed) workspaces.set(workspace.id, workspace);
  replace(select, el("option", { value: "" }, "any"),
    listed.map((w) => el("option", { value: w.id, title: w.path }, w.name)));
  select.value = chosen;
}

function onCatalogChange(data) {
  if (!views.list.hidden) {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(() => list.load(), 150);
  } else if (session.session?.id === data.session_id) {
    if (data.change === "deleted") navigate("/");
    else session.refreshSoon();
  }
}

document.addEventListener("click", (e) => {
  const link = e.target.closest("a[data-route]");
  if (!link || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey) return;
  e.preventDefault();
  const url = new URL(link.href);
  navigate(url.pathname);
});
window.addEventListener("popstate", route);
for (const link of document.querySelectorAll("a[data-route]")) link.href = withProfile(link.getAttribute("href"));
if (profile) replace($("profile"), `profile ${profile}`);
setInterval(() => { refreshTimes(); session.tick(); }, 1000);

follow(address("session.catalog_stream").path, {
  onEvent: onCatalogChange,
  onOpen: () => { replace($("connection"), "live"); if (!views.list.hidden) list.load(); },
  onDrop: () => replace($("connection"), "reconnecting…"),
});
loadWorkspaces().catch(showAlert).finally(route);
