"""Dagster assets: ingest from the platforms into the store, then staging and marts."""
