"""A local HTTP server speaking nine platforms' API shapes over a seeded, time-evolving world.

Seven API modules under ``simulator/platforms/``: YouTube, X, Meta's Graph API (Instagram,
Facebook Pages, Threads), LinkedIn, TikTok, Bluesky and Pinterest.
"""
