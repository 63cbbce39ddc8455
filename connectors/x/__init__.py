"""X: ``reader`` (accounts, posts, engagement) and ``publisher`` (posts, replies)."""
