// An agent's configuration versions side by side: what changed between two, and the
// effective memory configuration of each.

import { gql } from "./api.js";
import { clear, el, empty, section, timeEl } from "./dom.js";
import { CONFIG } from "./queries.js";
import { go } from "./route.js";
import { memoryConfig, refusedOrProblem } from "./view-agents.js";

// Every leaf of a JSON value by its path: {"harness.memory.kinds": "fact, event", ...}
function leaves(value, prefix, out) {
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const keys = Object.keys(value);
    if (!keys.length && prefix) out[prefix] = "{}";
    for (const k of keys) leaves(value[k], prefix ? `${prefix}.${k}` : k, out);
  } else if (Array.isArray(value) && value.some((v) => v !== null && typeof v === "object")) {
    value.forEach((v, i) => leaves(v, `${prefix}[${i}]`, out));
  } else {
    out[prefix] = Array.isArray(value) ? value.join(", ") || "(none)" : value === null ? "null" : String(value);
  }
  return out;
}

export function changes(before, after) {
  const a = leaves(before || {}, "", {});
  const b = leaves(after || {}, "", {});
  const paths = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  return paths.filter((p) => a[p] !== b[p]).map((p) => ({ path: p, before: a[p], after: b[p] }));
}

export async function config(main, state) {
  const { data, errors } = await gql(CONFIG, { id: state.agent });
  const agent = data.agent;
  if (!agent) {
    clear(main, refusedOrProblem(errors[0], "agent", state.ns));
    return;
  }
  const versions = agent.versions;
  if (!versions.length) {
    clear(main, el("h1", { text: "Configuration" }), empty("No version published: publishAgentVersion gives the agent its configuration."));
    return;
  }
  const byNumber = new Map(versions.map((v) => [String(v.number), v]));
  const latest = versions[versions.length - 1];
  const previous = (v) => versions[versions.indexOf(v) - 1] || v;
  // a and b: the two compared; a alone (a link to one version): it, beside the one before
  const right = byNumber.get(state.b || state.a || "") || latest;
  const left = (state.b && byNumber.get(state.a || "")) || previous(right);
  const picker = (name, chosen) => el("select", { name, "aria-label": name === "a" ? "older version" : "newer version" },
    versions.map((v) => el("option", { value: String(v.number), selected: v === chosen, text: `v${v.number}${v.label ? ` ${v.label}` : ""}` })));
  const form = el("form", { class: "filters", id: "compare" }, "Compare ", picker("a", left), " with ", picker("b", right));
  form.addEventListener("change", () => {
    const v = Object.fromEntries(new FormData(form).entries());
    go({ ns: state.ns, agent: state.agent, view: "config", a: v.a, b: v.b });
  });
  const diff = changes(left.config, right.config);
  const effective = changes(left.effectiveMemoryConfig, right.effectiveMemoryConfig);
  const side = (v) => section(`v${v.number}${v.label ? ` · ${v.label}` : ""}`,
    el("p", { class: "muted" }, "published ", timeEl(v.createdAt)), memoryConfig(v.effectiveMemoryConfig));
  const table = (rows) => el("table", { class: "grid diff" },
    el("thead", {}, el("tr", {}, el("th", { text: "setting" }), el("th", { text: `v${left.number}` }), el("th", { text: `v${right.number}` }))),
    el("tbody", {}, rows.map((c) => el("tr", { "data-path": c.path }, el("td", {}, el("code", { text: c.path })),
      el("td", { class: "before", text: c.before === undefined ? "(not set)" : c.before }),
      el("td", { class: "after", text: c.after === undefined ? "(not set)" : c.after })))));
  clear(main,
    el("h1", { text: `Configuration of ${agent.name}` }),
    el("p", { class: "muted", text: `${versions.length} published version${versions.length > 1 ? "s" : ""}, immutable; turns run the newest unless they name another.` }),
    form,
    section("What changed", left === right ? empty("The same version on both sides: choose two.")
      : diff.length ? table(diff) : empty("The two configurations are identical."),
    left !== right && effective.length ? el("details", { open: true }, el("summary", { text: "in the effective memory configuration (defaults filled in)" }), table(effective)) : null),
    el("div", { class: "columns", id: "side-by-side" }, side(left), side(right)));
}
