// The usage view (/usage): what the agents reported over the last 30 days, from the usage ledger
// (usage.summary): a chart of each day's tokens by agent, drawn here as SVG from the API's numbers (nothing is
// fetched from elsewhere), and the totals by agent. The session view's side panel shows one session's totals.
import { $, el, replace } from "./dom.js";
import { call } from "./api.js";
import { counted } from "./words.js";

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
  return `${count(sums.tokens.total)} tokens in ${counted(sums.turns, "turn")}${archived} · ${costText(sums.cost)}`;
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

// A scale's top: the busiest day rounded up to 1, 2, 2.5 or 5 times a power of ten, so its ticks read evenly.
export function niceTop(most) {
  const power = 10 ** Math.floor(Math.log10(Math.max(1, most)));
  return [1, 2, 2.5, 5, 10].map((step) => step * power).find((top) => top >= most);
}

// Token counts as a scale shows them: 0, 500, 2.5K, 1.2M.
const compact = (n) => new Intl.NumberFormat("en", { notation: "compact", maximumFractionDigits: 1 }).format(n);
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const dayText = (day) => `${MONTHS[Number(day.slice(5, 7)) - 1]} ${Number(day.slice(8, 10))}`;

// Stacked bars: one per day, one band per agent, on a scale from 0 to the busiest day rounded up (its ticks
// and gridlines on the left, in tokens), with a day label under every fifth bar and the last one (UTC days).
function chart(days, agents, byAgent) {
  const left = 44, right = 16, top = 8, bottom = 22, plot = 130, width = 640;
  const height = top + plot + bottom, step = (width - left - right) / days.length, gap = 2, bar = step - gap;
  const totals = days.map((day) => agents.reduce((sum, agent) => sum + (byAgent.get(agent).get(day) || 0), 0));
  const most = Math.max(1, ...totals), scaleTop = niceTop(most);
  const y = (tokens) => top + plot - (tokens / scaleTop) * plot;
  const axis = [];
  for (let tick = 0; tick <= 4; tick++) {
    const value = (scaleTop * tick) / 4;
    axis.push(svg("line", { x1: left, x2: width - right, y1: y(value), y2: y(value), class: tick ? "grid" : "baseline" }));
    axis.push(svg("text", { x: left - 6, y: y(value) + 4, "text-anchor": "end", class: "scale-label" }, compact(value)));
  }
  const bars = [];
  days.forEach((day, d) => {
    const x = left + d * step + gap / 2;
    let base = 0;
    agents.forEach((agent, a) => {
      const tokens = byAgent.get(agent).get(day) || 0;
      if (!tokens) return;
      const h = Math.max(1, (tokens / scaleTop) * plot);
      bars.push(svg("rect", { x, y: y(base) - h, width: bar, height: h, class: `series-${a % 6}`,
        "data-day": day, "data-agent": agent }, svg("title", {}, `${dayText(day)} · ${agent}: ${count(tokens)} tokens`)));
      base += (h / plot) * scaleTop;
    });
    if (d % 5 === 0 || d === days.length - 1) {
      axis.push(svg("text", { x: x + bar / 2, y: top + plot + 15, "text-anchor": "middle", class: "day-label",
        "data-day": day }, dayText(day)));
    }
  });
  const label = `Tokens per day over the last ${days.length} days, by agent; the busiest day: ${count(most)}`;
  return svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label, class: "chart" },
    svg("title", {}, label), ...axis, ...bars);
}
