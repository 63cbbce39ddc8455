"""Murmur: social publishing with an analytics pipeline.

Its store (docs/adr/0002-store.md) has two halves and no owner: publishing state in SQLite
(PostgreSQL at scale), analytics in DuckLake; every process opens both itself.
"""
