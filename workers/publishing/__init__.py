"""The publishing worker: publishes due posts to each destination exactly once, on time."""
