"""The publishing database (ADR 0002): posts, keys, leases and queues, in a transactional engine."""
