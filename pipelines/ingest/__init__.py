"""Ingest assets: what the platforms and Murmur itself say, into the raw tables."""
