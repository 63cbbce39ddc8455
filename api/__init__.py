"""The public REST API under /api/public/v1."""
