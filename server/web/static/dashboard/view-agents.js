// The agents of a namespace, an agent's overview, and its sessions.

import { gql } from "./api.js";
import { chart } from "./chart.js";
import { badge, clear, cost, count, el, empty, field, millis, plural, section, shortId, timeEl } from "./dom.js";
import { AGENT, AGENTS, AGENT_MEMORY_DAYS, AGENT_USAGE, HISTORY_SEARCH, RECENT_MEMORY, RECENT_SESSIONS, SESSION_BY_EXTERNAL_ID, SESSIONS } from "./queries.js";
import { problem, refused } from "./panels.js";
import { recordState, usageFacts } from "./render.js";
import { go, href } from "./route.js";

// More: a button that fetches the next page and appends it to ``list``.
export function more(list, load) {
  const button = el("button", { type: "button", class: "more", text: "More" });
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      const next = await load();
      if (next) button.disabled = false;
      else button.remove();
    } catch (err) {
      button.replaceWith(problem(err));
    }
  });
  return button;
}

export async function agents(main, state) {
  const grid = el("div", { class: "cards", id: "agents" });
  clear(main, el("h1", { text: `Agents of ${state.ns}` }), grid);
  let after = null;
  const page = async () => {
    let answer;
    try {
      answer = await gql(AGENTS, { ns: state.ns, after });
    } catch (err) {
      grid.append(err.code === "FORBIDDEN" ? refused(err, "agent", state.ns) : problem(err));
      return false;
    }
    const found = answer.data.agents;
    for (const { node: a } of found.edges) {
      grid.append(el("a", { class: "agent-card", href: href({ ns: a.namespace, agent: a.id, view: "agent" }), "data-agent": a.id },
        el("h3", { text: a.name }),
        el("p", { class: "muted" }, a.latestVersion ? `version ${a.latestVersion.number}${a.latestVersion.label ? ` (${a.latestVersion.label})` : ""}` : "no version published",
          a.sessionless ? " · without sessions" : ""),
        el("p", { class: "muted" }, "created ", timeEl(a.createdAt), " · ", shortId(a.id))));
    }
    if (!grid.children.length) grid.append(empty(`No agent in ${state.ns} yet: an operator creates one with createAgent.`));
    after = found.pageInfo.endCursor;
    return found.pageInfo.hasNextPage;
  };
  if (await page()) main.append(more(grid, page));
}

export async function overview(main, state) {
  const { data, errors } = await gql(AGENT, { id: state.agent });
  const a = data.agent;
  if (!a) {
    clear(main, refusedOrProblem(errors[0], "agent", state.ns));
    return;
  }
  const version = a.latestVersion;
  const head = el("header", { class: "page-head" },
    el("h1", { text: a.name }),
    el("dl", { class: "facts" },
      field("namespace", a.namespace), field("id", shortId(a.id)),
      field("created", timeEl(a.createdAt)),
      field("sessions", a.sessionless ? "none: memory is agent scope only" : "yes"),
      field("configuration", version ? el("a", { href: href({ ...state, view: "config", a: String(version.number) }) },
        `version ${version.number}`) : "no version published")));
  const sessions = section("Recent sessions");
  sessions.id = "recent-sessions";
  const memory = section("Recent memory");
  memory.id = "recent-memory";
  const config = section("Effective memory configuration");
  if (version) config.append(memoryConfig(version.effectiveMemoryConfig));
  else config.append(empty("No version published: publishAgentVersion gives the agent its configuration."));
  const activity = section("The last 30 days");
  activity.id = "activity";
  const used = section("Model usage");
  used.id = "usage";
  clear(main, head, el("div", { class: "columns" }, activity, used), el("div", { class: "columns" }, sessions, memory), config);
  await Promise.all([recentSessions(sessions, state, a.namespace), recentMemory(memory, state, a.namespace),
    usage(activity, used, state, a.namespace)]);
}

// The agent's model usage, and its turns, tokens and records per day as a chart.
async function usage(activity, used, state, ns) {
  const [work, memory] = await Promise.all([gql(AGENT_USAGE, { id: state.agent }), gql(AGENT_MEMORY_DAYS, { id: state.agent })]);
  const a = work.data.agent;
  if (!a || !a.usage) {
    activity.append(refusedOrProblem(work.errors[0], "session", ns));
    used.remove();  // the same refusal: said once
    return;
  }
  const u = a.usage;
  used.append(el("dl", { class: "facts" }, usageFacts(u)),
    u.byModel.length ? el("table", { class: "grid", id: "by-model" },
      el("thead", {}, el("tr", {}, ["Model", "Calls", "Tokens in", "Tokens out", "Model time", "Cost"].map((t) => el("th", { text: t })))),
      el("tbody", {}, u.byModel.map((m) => el("tr", { "data-model": m.model }, el("td", {}, el("code", { text: m.model })),
        el("td", { text: m.calls }), el("td", { text: count(m.inputTokens) }), el("td", { text: count(m.outputTokens) }),
        el("td", { text: millis(m.latencyMs) }), el("td", { text: cost(m.cost) })))))
      : empty("No model call recorded yet: recordInvocation records each."));
  const records = memory.data.agent && memory.data.agent.memoryActivity;
  const days = a.activity;
  const series = [
    { label: "turns", values: days.map((d) => d.turns), scale: "count" },
    ...(records ? [{ label: "records", values: records.map((d) => d.records), scale: "count" }] : []),
    { label: "tokens", values: days.map((d) => d.inputTokens + d.outputTokens), scale: "tokens" },
  ];
  const box = el("div", { class: "chart", id: "activity-chart", role: "img",
    "aria-label": `per day over 30 days: ${days.reduce((n, d) => n + d.turns, 0)} turns, ${count(days.reduce((n, d) => n + d.inputTokens + d.outputTokens, 0))} tokens` });
  activity.append(box);
  if (!records) activity.append(el("p", { class: "muted", text: `Records per day are memory: ${memory.errors[0] ? memory.errors[0].message : "not readable"}` }));
  chart(box, days.map((d) => d.day), series);
}

async function recentSessions(box, state, ns) {
  const { data, errors } = await gql(RECENT_SESSIONS, { id: state.agent });
  const found = data.agent && data.agent.sessions;
  if (!found) box.append(refusedOrProblem(errors[0], "session", ns));
  else if (!found.edges.length) box.append(empty("No sessions yet: they appear when the agent's runtime calls createSession."));
  else {
    box.append(el("ul", { class: "plain" }, found.edges.map(({ node: s }) =>
      el("li", {}, el("a", { href: href({ ...state, view: "session", session: s.id }), "data-session": s.id },
        s.externalId || "session", " ", shortId(s.id)), " · ", timeEl(s.createdAt)))),
      el("a", { href: href({ ...state, view: "sessions" }), text: `All ${plural(found.totalCount, "session")} →` }));
  }
}

async function recentMemory(box, state, ns) {
  const { data, errors } = await gql(RECENT_MEMORY, { id: state.agent });
  const found = data.agent && data.agent.memoryRecords;
  if (!found) box.append(refusedOrProblem(errors[0], "memory", ns));
  else if (!found.edges.length) box.append(empty("No memory yet: records appear when a turn that wrote them commits."));
  else {
    box.append(el("ul", { class: "plain" }, found.edges.map(({ node: r }) =>
      el("li", {}, recordState(r), el("a", { href: href({ ...state, view: "record", record: r.id }), text: r.current.summary }),
        " ", el("span", { class: "muted", text: `${r.current.kind} · ${r.scope.toLowerCase()}` })))),
      el("a", { href: href({ ...state, view: "memory" }), text: `All ${plural(found.totalCount, "record")} →` }));
  }
}

export function refusedOrProblem(error, resource, ns) {
  return error && error.code === "FORBIDDEN" ? refused(error, resource, ns) : problem(error || { code: "NOT_FOUND", message: "nothing here" });
}

// harness.memory with its defaults, as a table a person reads.
export function memoryConfig(c) {
  if (!c || !c.enabled) return el("p", { text: "Memory is off for this version (harness.memory.enabled is false)." });
  const rows = [
    ["reads", (c.scope && c.scope.read || []).join(", ")],
    ["writes", (c.scope && c.scope.write || []).join(", ")],
    ["kinds", (c.kinds || []).join(", ")],
    ["tools", ["search_memory", ...(c.tools || []).filter((t) => t !== "search_memory")].join(", ")],
    ["search", c.search ? `${c.search.mode}, at most ${c.search.max_results} results, min score ${c.search.min_score}` : ""],
    ["pinned", c.pinned ? `up to ${c.pinned.max_tokens} tokens` : "off"],
    ["review", c.extraction ? (typeof c.extraction.every === "object" && c.extraction.every ? `every ${c.extraction.every.messages} messages` : `every ${c.extraction.every || "turn"}`) + (c.extraction.prompt ? ", own instructions" : "") : ""],
  ];
  const labels = Object.entries(c.labels || {});
  return el("div", { class: "config" },
    el("dl", { class: "facts" }, rows.map(([k, v]) => field(k, v || "—"))),
    labels.length ? el("table", { class: "grid" },
      el("thead", {}, el("tr", {}, el("th", { text: "label" }), el("th", { text: "number" }), el("th", { text: "description" }))),
      el("tbody", {}, labels.map(([name, l]) => el("tr", {}, el("td", {}, el("code", { text: name })),
        el("td", { text: l.number }), el("td", { text: l.description || "" }))))) : null,
    c.extraction && c.extraction.prompt ? el("details", {}, el("summary", { text: "review instructions" }), el("p", { class: "text", text: c.extraction.prompt })) : null);
}

const ANY = [["", "any"], ["yes", "with"], ["no", "without"]];

function choice(name, value, options) {
  return el("select", { name }, options.map(([v, text]) => el("option", { value: v, text, selected: v === (value || "") })));
}

function day(iso) {
  return iso ? iso.slice(0, 10) : "";
}

// The sessions a form's fields name (#from, #to: days; failed, pv: yes or no).
export function sessionFilter(state) {
  const f = {};
  if (state.from) f.startedAfter = new Date(`${state.from}T00:00:00`).toISOString();
  if (state.to) f.startedBefore = new Date(new Date(`${state.to}T00:00:00`).getTime() + 86400000).toISOString();
  if (state.failed) f.hasFailedTurns = state.failed === "yes";
  if (state.pv) f.preview = state.pv === "yes";
  return f;
}

// An agent's sessions: found by the runtime's own id for one, filtered by when they ran
// and how they went, or searched by what was said in them.
export async function sessions(main, state) {
  const find = el("form", { class: "filters", id: "find-session" },
    el("label", {}, "Session id ", el("input", { name: "x", value: state.x || "", size: "20", placeholder: "the runtime's own id", required: true })),
    el("button", { type: "submit", text: "Open" }));
  find.addEventListener("submit", (event) => {
    event.preventDefault();
    go({ ...state, view: "sessions", x: new FormData(find).get("x").trim() });
  });
  const form = el("form", { class: "filters", id: "session-filters" },
    el("label", {}, "Said ", el("input", { name: "hq", type: "search", value: state.hq || "", size: "24", placeholder: "search what was said" })),
    el("label", {}, "In ", choice("all", state.all, [["", "this agent's sessions"], ["1", `every agent of ${state.ns}`]])),
    el("label", {}, "From ", el("input", { name: "from", type: "date", value: state.from || "" })),
    el("label", {}, "To ", el("input", { name: "to", type: "date", value: state.to || "" })),
    el("label", {}, "Failed turns ", choice("failed", state.failed, ANY)),
    el("label", {}, "Preview turns ", choice("pv", state.pv, ANY)),
    el("button", { type: "submit", text: "Apply" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const v = Object.fromEntries(new FormData(form).entries());
    go({ ns: state.ns, agent: state.agent, view: "sessions", hq: v.hq.trim(), all: v.all, from: day(v.from), to: day(v.to), failed: v.failed, pv: v.pv });
  });
  const total = el("span", { class: "muted" });
  const results = el("div", { id: "history-search" });
  const table = el("table", { class: "grid", id: "sessions" },
    el("thead", {}, el("tr", {}, ["Session", "Started", "Turns", "Last turn", "Tokens", "Cost"].map((t) => el("th", { text: t })))),
    el("tbody"));
  clear(main, el("h1", {}, "Sessions ", total), find, form, results, table);
  if (state.x) {
    const { data, errors } = await gql(SESSION_BY_EXTERNAL_ID, { id: state.agent, x: state.x });
    const found = data.agent && data.agent.session;
    if (found) {
      go({ ns: state.ns, agent: state.agent, view: "session", session: found.id });
      return;
    }
    find.after(errors[0] ? refusedOrProblem(errors[0], "session", state.ns)
      : el("p", { class: "problem", id: "no-such-session", text: `No session of this agent has the id "${state.x}".` }));
  }
  const filter = sessionFilter(state);
  if (state.hq) await historySearch(results, state, filter);
  let after = null;
  const page = async () => {
    const { data, errors } = await gql(SESSIONS, { id: state.agent, after, filter });
    const found = data.agent && data.agent.sessions;
    if (!found) {
      table.replaceWith(refusedOrProblem(errors[0], "session", state.ns));
      return false;
    }
    total.textContent = plural(found.totalCount, "session");
    for (const { node: s } of found.edges) {
      const last = s.turns.edges[0] && s.turns.edges[0].node;
      const link = href({ ns: state.ns, agent: state.agent, view: "session", session: s.id });
      table.tBodies[0].append(el("tr", { "data-session": s.id },
        el("td", {}, el("a", { href: link }, s.externalId || "session", " ", shortId(s.id))),
        el("td", {}, timeEl(s.createdAt)),
        el("td", { text: s.turns.totalCount }),
        el("td", {}, last ? [`turn ${last.number} · ${last.status.toLowerCase().replace("_", " ")} · `, timeEl(last.createdAt)] : "none"),
        el("td", { text: count(s.usage.inputTokens + s.usage.outputTokens), title: `${s.usage.calls} model calls: ${s.usage.inputTokens} tokens in, ${s.usage.outputTokens} out` }),
        el("td", { text: cost(s.usage.cost) })));
    }
    if (!found.edges.length && !after) {
      table.replaceWith(empty(Object.keys(filter).length ? "No session matches these filters."
        : "No sessions yet: they appear when the agent's runtime calls createSession."));
    }
    after = found.pageInfo.endCursor;
    return found.pageInfo.hasNextPage;
  };
  if (await page()) main.append(more(table, page));
}

// What was said, searched across sessions: each hit with its session and a link to its turn.
async function historySearch(box, state, filter) {
  const { data, errors } = await gql(HISTORY_SEARCH, { ns: state.ns, q: state.hq, agent: state.all ? null : state.agent, filter });
  const found = data.searchSessionHistory;
  if (!found) {
    box.append(refusedOrProblem(errors[0], "session", state.ns));
    return;
  }
  const where = `${plural(found.sessionsSearched, "session")} searched${found.moreSessions ? " (the newest; narrow the dates to reach older ones)" : ""}`;
  box.append(section(`Said in sessions: "${state.hq}"`, el("p", { class: "muted", text: where }),
    found.hits.length ? el("ol", { class: "results", id: "history-hits" }, found.hits.map((h) => {
      const agent = h.session.agent;
      const base = { ns: state.ns, agent: agent.id, view: "session", session: h.session.id };
      return el("li", { class: "hit", "data-session": h.session.id, "data-turn": h.turn.id },
        el("div", { class: "hit-head" },
          el("a", { href: href(base) }, h.session.externalId || "session", " ", shortId(h.session.id)), " · ",
          el("a", { href: href({ ...base, turn: h.turn.id }), class: "hit-turn", text: h.header }),
          state.all ? el("span", { class: "muted", text: ` · ${agent.name}` }) : null,
          h.preview ? badge("preview") : null,
          el("span", { class: "score", text: `score ${h.score.toFixed(2)}` })),
        el("p", { class: "text", text: h.text }),
        h.parts > 1 ? el("p", { class: "muted", text: `part ${h.part} of ${h.parts}` }) : null);
    })) : empty("Nothing said in these sessions matched.")));
}
