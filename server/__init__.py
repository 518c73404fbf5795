"""agent-memory: long-term memory and searchable session history for LLM agents."""
