"""Murmur: social publishing with an analytics pipeline over one DuckDB store."""
