"""Memory search (R40-R44): ``search_memory``, recall, and the ranking they share.

Read it top to bottom:

- :mod:`server.memory_search.tool`: the ``search_memory`` tool: its arguments checked,
  the query's embedding started on arrival, ranked (with what the call records, in one
  statement) or listed newest first;
- :mod:`server.memory_search.recall`: recall before a model call, its repeat check and
  the block the model reads;
- :mod:`server.memory_search.recorded`: a search and what it records as one statement,
  its rows read as plain rows;
- :mod:`server.memory_search.ranking`: the ranking run on its own (the API's search, the
  benchmarks), and which way its candidates by meaning are found for an agent;
- :mod:`server.memory_search.statement`: the one ranking statement, built once per shape,
  and the generic plan it runs on.
"""
