// What a view says instead of an empty table: which grant is missing, or why nothing is
// there yet.

import { grantsFor } from "./api.js";
import { el } from "./dom.js";

// Which resource a refusal is about, from the grant the server says is missing.
function resourceOf(error, fallback) {
  if (/AgentMemory/.test(error.message)) return "memory";
  if (/\.Session\b/.test(error.message)) return "session";
  if (/\.Agent\b/.test(error.message)) return "agent";
  return fallback;
}

// A refused part of a view: the server's reason and the grants that would allow it.
export function refused(error, fallback, ns) {
  const resource = resourceOf(error, fallback);
  const grants = grantsFor(resource, ns || "<namespace>") || [];
  const what = { agent: "the agents", session: "the sessions", memory: "the memory" }[resource] || "this";
  if (error.code !== "FORBIDDEN") return problem(error);
  return el("div", { class: "refused", role: "note", "data-refused": resource },
    el("strong", { text: `Not allowed to read ${what} here.` }),
    el("p", { text: `The server says: ${error.message}` }),
    el("p", { text: `Reading ${what} of namespace ${ns || "<namespace>"} needs:` }),
    el("ul", {}, grants.map((g) => el("li", {}, el("code", { text: g })))),
    el("p", { class: "muted" }, "An operator grants them to this token's policy, e.g. ",
      el("code", { text: `agent-memory policy grant ${ns || "<namespace>"} <policy> ${grants[0] || "SELECT ..."}` }),
      " (docs/security.md)."));
}

export function problem(error) {
  return el("div", { class: "problem", role: "alert" },
    el("strong", { text: error.code || "Error" }), " ", el("span", { text: error.message }));
}

export function loading(what) {
  return el("p", { class: "loading", text: `Loading ${what}…` });
}
