// The agents of a namespace, an agent's overview, and its sessions.

import { gql } from "./api.js";
import { clear, el, empty, field, plural, section, shortId, timeEl } from "./dom.js";
import { AGENT, AGENTS, RECENT_MEMORY, RECENT_SESSIONS, SESSIONS } from "./queries.js";
import { problem, refused } from "./panels.js";
import { href } from "./route.js";

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
  clear(main, head, el("div", { class: "columns" }, sessions, memory), config);
  await Promise.all([recentSessions(sessions, state, a.namespace), recentMemory(memory, state, a.namespace)]);
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
      el("li", {}, el("a", { href: href({ ...state, view: "record", record: r.id }), text: r.current.summary }),
        " ", el("span", { class: "muted", text: `${r.current.kind} · ${r.status.toLowerCase()} · ${r.scope.toLowerCase()}` })))),
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

export async function sessions(main, state) {
  const table = el("table", { class: "grid", id: "sessions" },
    el("thead", {}, el("tr", {}, ["Session", "Started", "Turns", "Last turn"].map((t) => el("th", { text: t })))),
    el("tbody"));
  const count = el("span", { class: "muted" });
  clear(main, el("h1", {}, "Sessions ", count), table);
  let after = null;
  const page = async () => {
    const { data, errors } = await gql(SESSIONS, { id: state.agent, after });
    const found = data.agent && data.agent.sessions;
    if (!found) {
      table.replaceWith(refusedOrProblem(errors[0], "session", state.ns));
      return false;
    }
    count.textContent = plural(found.totalCount, "session");
    for (const { node: s } of found.edges) {
      const last = s.turns.edges[0] && s.turns.edges[0].node;
      const link = href({ ...state, view: "session", session: s.id });
      table.tBodies[0].append(el("tr", { "data-session": s.id },
        el("td", {}, el("a", { href: link }, s.externalId || "session", " ", shortId(s.id))),
        el("td", {}, timeEl(s.createdAt)),
        el("td", { text: s.turns.totalCount }),
        el("td", {}, last ? [`turn ${last.number} · ${last.status.toLowerCase().replace("_", " ")} · `, timeEl(last.createdAt)] : "none")));
    }
    if (!found.edges.length && !after) table.replaceWith(empty("No sessions yet: they appear when the agent's runtime calls createSession."));
    after = found.pageInfo.endCursor;
    return found.pageInfo.hasNextPage;
  };
  if (await page()) main.append(more(table, page));
}

