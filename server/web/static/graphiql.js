// GraphiQL for agent-memory, served with its assets by the server (no CDN).
// Every request needs `Authorization: Bearer <token>` (Headers tab). Opened as
// /graphql#token=<token> (the link `agent-memory serve` prints in dev mode), the page
// fills that header in; the fragment never leaves the browser. GraphiQL keeps the
// headers in this browser's local storage.
(function () {
  "use strict";
  var token = new URLSearchParams(window.location.hash.slice(1)).get("token");
  var props = {
    fetcher: GraphiQL.createFetcher({ url: window.location.pathname }),
    shouldPersistHeaders: true,
    defaultHeaders: JSON.stringify({ Authorization: "Bearer <your token>" }, null, 2),
    defaultQuery: "# Set your token under Headers, then run:\n{\n  namespaces\n}\n",
  };
  if (token) {
    props.headers = JSON.stringify({ Authorization: "Bearer " + token }, null, 2);
    history.replaceState(null, "", window.location.pathname + window.location.search);
  }
  ReactDOM.createRoot(document.getElementById("graphiql")).render(
    React.createElement(GraphiQL, props)
  );
})();
