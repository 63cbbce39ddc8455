"""Alembic's environment for the publishing tables: run on the connection PubDB hands it."""

from __future__ import annotations

from alembic import context

from warehouse.pubdb.schema import every_table

connection = context.config.attributes["connection"]
# Batch mode: SQLite rebuilds a table for the ALTERs it lacks; PostgreSQL alters in place.
context.configure(connection=connection, target_metadata=every_table, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
