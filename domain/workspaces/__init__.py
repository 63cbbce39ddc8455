"""Workspaces: their accounts and members, API keys and dashboard sign-in."""
