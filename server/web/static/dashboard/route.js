// Where the page is: every view, and what it shows, lives in the address's fragment
// (#view=session&ns=financial&agent=...&session=...&turn=...), so a reload or a shared
// link opens the same view. The token never does: it stays in the tab's session storage.

const KEYS = ["view", "ns", "agent", "session", "turn", "record", "q",
  "kind", "status", "scope", "label", "preview", "asOfTurn", "asOfTime", "a", "b",
  "x", "hq", "all", "from", "to", "failed", "pv"];

export function current() {
  const params = new URLSearchParams(location.hash.replace(/^#/, ""));
  const state = {};
  for (const key of KEYS) {
    const value = params.get(key);
    if (value) state[key] = value;
  }
  return state;
}

export function href(state) {
  const params = new URLSearchParams();
  for (const key of KEYS) {
    if (state[key]) params.set(key, state[key]);
  }
  return `#${params.toString()}`;
}

export function go(state) {
  const target = href(state);
  if (target === location.hash) window.dispatchEvent(new HashChangeEvent("hashchange"));
  else location.hash = target;
}

// A token handed over in the fragment (#token=amk_...: what `make run` prints) is kept
// in session storage and taken out of the address at once.
export function takeToken() {
  const params = new URLSearchParams(location.hash.replace(/^#/, ""));
  const token = params.get("token");
  if (!token) return null;
  params.delete("token");
  const rest = params.toString();
  history.replaceState(null, "", location.pathname + location.search + (rest ? `#${rest}` : ""));
  return token;
}
