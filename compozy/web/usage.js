// The usage view (/usage): what the agents reported over the last 30 days, from the usage ledger
// (usage.summary): a chart of each day's tokens by agent, drawn here as SVG from the API's numbers (nothing is
// fetched from elsewhere), and the totals by agent. The session view's side panel shows one session's totals.
import { $, el, replace } from "./dom.js";
import { call } from "./api.js";

const DAYS = 30;
const SVG = "http://www.w3.org/2000/svg";
const count = (n) => Number(n).toLocaleString();

export function costText(costs) {
  return costs.length ? costs.map(({ amount, currency }) => {
    try {
      return new Intl.NumberFormat(undefined, { style: "currency", currency, maximumFractionDigits: 4 }).format(amount);
    } catch {
      return `${amount} ${currency}`;
    }
  }).join(" + ") : "no cost reported";
}

export function totalsText(sums) {
  const archived = sums.archived_turns ? ` (${sums.archived_turns} archived)` : "";
  return `${count(sums.tokens.total)} tokens in ${sums.turns} turn${sums.turns === 1 ? "" : "s"}${archived} · ${costText(sums.cost)}`;
}

function svg(tag, attributes, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  for (const child of children) node.append(child);
  return node;
}

function lastDays() {
  const days = [];
  const today = new Date();
  for (let back = DAYS - 1; back >= 0; back--) {
    days.push(new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - back))
      .toISOString().slice(0, 10));
  }
  return days;
}

export class UsageView {
  constructor({ alert }) {
    this.alert = alert;
  }

  async show() {
    document.title = "Usage · compozy";
    const days = lastDays();
    try {
      const since = days[0];
      const { usage } = await call("usage.summary", { group_by: "agent", since });
      const agents = usage.groups.map((group) => group.key);
      const series = await Promise.all(agents.map((agent) =>
        call("usage.summary", { group_by: "day", since, agent })));
      const byAgent = new Map(agents.map((agent, i) => [agent,
        new Map(series[i].usage.groups.map((group) => [group.key, group.tokens.total]))]));
      replace($("usage-total"), `Last ${DAYS} days: ${totalsText(usage.total)}`);
      replace($("usage-chart"), chart(days, agents, byAgent));
      // Built here, not in the document: a page with one table is what every view of the list expects.
      replace($("usage-agents"), el("table", { class: "usage-agents" },
        el("thead", {}, el("tr", {}, ["Agent", "Turns", "Input", "Output", "Tokens", "Cost"].map((h) => el("th", {}, h)))),
        el("tbody", {}, usage.groups.map((group, i) => el("tr", {},
          el("td", {}, el("span", { class: `swatch series-${i % 6}` }), " ", group.key),
          el("td", {}, String(group.turns)), el("td", {}, count(group.tokens.input)),
          el("td", {}, count(group.tokens.output)), el("td", {}, count(group.tokens.total)),
          el("td", {}, costText(group.cost)))))));
    } catch (error) {
      this.alert(error);
    }
  }
}

// Stacked bars: one per day, one band per agent, scaled to the busiest day.
function chart(days, agents, byAgent) {
  const width = 600, height = 160, gap = 2, bar = width / days.length - gap;
  const totals = days.map((day) => agents.reduce((sum, agent) => sum + (byAgent.get(agent).get(day) || 0), 0));
  const most = Math.max(1, ...totals);
  const bars = [];
  days.forEach((day, d) => {
    let top = height;
    agents.forEach((agent, a) => {
      const tokens = byAgent.get(agent).get(day) || 0;
      if (!tokens) return;
      const h = Math.max(1, (tokens / most) * (height - 10));
      top -= h;
      bars.push(svg("rect", { x: d * (bar + gap), y: top, width: bar, height: h, class: `series-${a % 6}`,
        "data-day": day, "data-agent": agent }, svg("title", {}, `${day} · ${agent}: ${count(tokens)} tokens`)));
    });
  });
  const label = `Tokens per day over the last ${days.length} days, by agent; the busiest day: ${count(most)}`;
  return svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label, class: "chart" },
    svg("title", {}, label), ...bars);
}
