"""The same schema on Citus: distributed by agent (docs/scaling.md, "Distributing by agent").

- :mod:`server.citus.layout`: the rule, pure. Which table is distributed by ``agent_id``,
  which is a reference table, and how keys, unique constraints and foreign keys take
  ``agent_id`` so that Citus can enforce them on colocated shards.
- :mod:`server.citus.distribute`: applies the rule to a migrated database on a Citus
  coordinator (``agent-memory migrate --citus``), reading the tables from the catalog.
- :mod:`server.citus.local`: a coordinator and workers on this machine, for the tests and
  benchmarks, from the Citus that ``make citus`` builds (:mod:`server.citus.build`).
"""
