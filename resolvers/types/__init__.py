"""Strawberry object types, one module per part of the model: ``base`` (fields that
show a row, the ``Node`` interface), ``enums`` and ``pages`` (Relay pages), then
``agents``, ``turns``, ``memory``, ``history`` and ``uses``. A module imports only the
modules before it; a type of a later module is named with ``strawberry.lazy`` and
built through :func:`resolvers.types.base.later`."""
