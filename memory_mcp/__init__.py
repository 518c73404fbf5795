"""The MCP endpoint: the agent's native tools over the Model Context Protocol, at
``/mcp`` on the same server and port as ``/graphql`` (docs/mcp.md).

An MCP call is the GraphQL mutation of its tool, run in process through the same
schema with the caller already authenticated: the same ownership check, the same
messages, the same recording of the call (R24-R26, R43). Nothing here decides what a
call may do; it maps the protocol to the schema and back.

- :mod:`memory_mcp.tools`: which tools an agent is offered, their JSON Schemas read
  from the GraphQL inputs, and a call's arguments as a GraphQL input.
- :mod:`memory_mcp.results`: what a call answers, memory marked as data (R44).
- :mod:`memory_mcp.turns`: the turn a call runs in, the host's or one of its own (R12).
- :mod:`memory_mcp.endpoint`: the ASGI app: the token, the SDK's session manager,
  the protocol's handlers.
"""
