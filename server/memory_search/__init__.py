"""Memory search (R40-R44): ``search_memory``, recall, and the ranking they share.

Read it top to bottom:

- :mod:`server.memory_search.tool`: the ``search_memory`` tool: its arguments checked,
  the query's embedding started on arrival, ranked or listed, recorded as the tool's
  execution;
- :mod:`server.memory_search.recall`: recall before a model call, its repeat check and
  the block the model reads;
- :mod:`server.memory_search.listing`: records newest first, without a query;
- :mod:`server.memory_search.ranking`: the ranking run and its rows read, and which way
  its candidates by meaning are found for an agent;
- :mod:`server.memory_search.statement`: the one ranking statement, built once per shape,
  and the generic plan it runs on.
"""
