"""The dashboard: a static single page, served by the API process, that reads the public API."""
