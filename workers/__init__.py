"""Long-running workers over the domain services: publishing, and engagement (inbox sync,
replies, inbox and content automations, webhook deliveries). Dagster code stays in
``pipelines/``; these run beside the API (``murmur up``, ``murmur worker``)."""
