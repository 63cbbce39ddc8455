"""A local HTTP server speaking six platforms' API shapes over a seeded, time-evolving world."""
