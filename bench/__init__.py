"""Benchmarks and retrieval evaluation: ``python -m bench NAME [--quick]``."""
