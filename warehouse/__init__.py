"""The store: schema, migrations and repositories; all of Murmur's SQL lives here."""
