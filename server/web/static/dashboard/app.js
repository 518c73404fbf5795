// The agent-memory dashboard: read-only, plain JavaScript modules over the GraphQL API,
// served with the page (nothing from elsewhere). The token stays in this tab's session
// storage; where the page is lives in the address's fragment (route.js).

import { gql, setToken, token } from "./api.js";
import { $, clear, el, empty, shortId } from "./dom.js";
import { problem, refused } from "./panels.js";
import { AGENT_CHOICES, NAMESPACES } from "./queries.js";
import { current, go, href, takeToken } from "./route.js";
import * as agents from "./view-agents.js";
import * as configs from "./view-config.js";
import * as memory from "./view-memory.js";
import * as trace from "./view-trace.js";

const VIEWS = {
  home,
  agents: agents.agents,
  agent: agents.overview,
  sessions: agents.sessions,
  session: trace.session,
  memory: memory.records,
  record: memory.record,
  search: memory.search,
  config: configs.config,
};
const NAV = [
  ["agent", "Overview"],
  ["sessions", "Sessions"],
  ["memory", "Memory"],
  ["search", "Search"],
  ["config", "Configuration"],
];
const cache = { namespaces: null, agents: new Map() };

function status(message, error) {
  const line = $("status");
  line.textContent = message || "";
  line.className = error ? "error" : "";
}

async function namespaces() {
  if (!cache.namespaces) cache.namespaces = gql(NAMESPACES).then((a) => a.data.namespaces);
  return cache.namespaces;
}

async function agentChoices(ns) {
  if (!cache.agents.has(ns)) {
    cache.agents.set(ns, gql(AGENT_CHOICES, { ns }).then(
      (a) => a.data.agents.edges.map((e) => e.node),
      (err) => { cache.agents.delete(ns); throw err; }));
  }
  return cache.agents.get(ns);
}

async function home(main) {
  const names = await namespaces();
  clear(main, el("h1", { text: "Namespaces" }),
    names.length ? el("div", { class: "cards", id: "namespaces" }, names.map((ns) =>
      el("a", { class: "agent-card", href: href({ view: "agents", ns }), "data-ns": ns }, el("h3", { text: ns }),
        el("p", { class: "muted", text: "agents, their sessions and memory" }))))
      : empty("No namespace this token may read. An agent's namespace appears once an operator creates the agent and grants this token SELECT on it."));
}

async function sidebar(state) {
  const nsSelect = $("namespace");
  const agentSelect = $("agent");
  const names = await namespaces();
  clear(nsSelect, el("option", { value: "", text: names.length ? "choose…" : "none readable" }),
    names.map((n) => el("option", { value: n, text: n, selected: n === state.ns })));
  nsSelect.disabled = !names.length;
  clear(agentSelect, el("option", { value: "", text: state.ns ? "choose…" : "—" }));
  agentSelect.disabled = true;
  if (state.ns) {
    try {
      const found = await agentChoices(state.ns);
      agentSelect.append(...found.map((a) => el("option", { value: a.id, text: a.name, selected: a.id === state.agent })));
      agentSelect.disabled = !found.length;
    } catch (err) {
      agentSelect.title = err.message;
    }
  }
  const view = state.view || "agent";
  clear($("views"), NAV.map(([name, text]) => el("li", {},
    state.agent ? el("a", { href: href({ ns: state.ns, agent: state.agent, view: name }), class: view === name || (name === "memory" && view === "record") || (name === "sessions" && view === "session") ? "active" : null, "data-view": name, text })
      : el("span", { class: "disabled", text }))));
  crumbs(state);
}

async function crumbs(state) {
  const trail = [el("a", { href: href({ view: "home" }), text: "namespaces" })];
  if (state.ns) trail.push(el("a", { href: href({ view: "agents", ns: state.ns }), text: state.ns }));
  if (state.agent) {
    const found = (cache.agents.has(state.ns) ? await cache.agents.get(state.ns).catch(() => []) : []).find((a) => a.id === state.agent);
    trail.push(el("a", { href: href({ ns: state.ns, agent: state.agent, view: "agent" }) }, found ? found.name : shortId(state.agent)));
  }
  clear($("crumbs"), trail.flatMap((a, i) => (i ? [el("span", { class: "sep", text: "›" }), a] : [a])));
}

// A link to a view this page does not have (an old or mistyped address).
function unknown(name) {
  return el("div", { class: "problem", role: "alert", id: "unknown-view" },
    el("strong", { text: "No such view" }), " ",
    el("span", { text: `This page has no view named "${name}". ` }),
    el("a", { href: href({}), text: "Start from the namespaces" }));
}

let rendering = 0;

async function render() {
  const handed = takeToken();
  if (handed && handed !== token()) {
    setToken(handed);
    cache.namespaces = null;
    cache.agents.clear();
  }
  const state = current();
  const connected = Boolean(token());
  $("connect").hidden = connected;
  $("connected").hidden = !connected;
  $("token-prefix").textContent = connected ? `${token().slice(0, 12)}…` : "";
  const main = $("main");
  if (!connected) {
    clear(main, el("div", { class: "card welcome" }, el("h1", { text: "agent-memory" }),
      el("p", { text: "See what your agents did and what they remembered: sessions as traces, memory with every version and who wrote it, search that says why a record ranked." }),
      el("p", { text: "Give a token above. In development, `make run` prints a link that fills it in; a dashboard's own client token needs SELECT grants on the namespaces it reads (README, step 8)." }),
      el("p", { class: "muted", text: `This page reads the server it is served from (${location.origin}/graphql), and no other.` })));
    return;
  }
  const mine = ++rendering;
  const name = state.view || (state.agent ? "agent" : state.ns ? "agents" : "home");
  if (name !== "session") trace.leave();
  let box = main.firstElementChild;
  const inPlace = name === "session" && box && box.dataset.session === state.session;
  if (!inPlace) {
    box = el("div", { class: "view", "data-view": name });
    clear(main, box);
  }
  status("Loading…");
  try {
    await sidebar(state);
    const view = VIEWS[name];
    if (!view) {
      clear(box, unknown(name));
      status("");
      return;
    }
    await view(box, state);
    if (mine === rendering) status("");
  } catch (err) {
    if (mine !== rendering) return;
    clear(box, err.code === "FORBIDDEN" ? refused(err, "agent", state.ns) : problem(err));
    status(err.message, true);
  }
}

function connect(event) {
  event.preventDefault();
  setToken($("token").value.trim());
  $("token").value = "";
  cache.namespaces = null;
  cache.agents.clear();
  render();
}

function disconnect() {
  trace.leave();
  setToken("");
  cache.namespaces = null;
  cache.agents.clear();
  go({});
}

function start() {
  $("connect").addEventListener("submit", connect);
  $("disconnect").addEventListener("click", disconnect);
  $("namespace").addEventListener("change", (e) => go(e.target.value ? { view: "agents", ns: e.target.value } : {}));
  $("agent").addEventListener("change", (e) => go({ ns: current().ns, agent: e.target.value, view: "agent" }));
  window.addEventListener("hashchange", render);
  render();
}

start();
