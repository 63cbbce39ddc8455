"""Murmur over MCP (docs/mcp.md): the agents' tools on the domain services, and their server."""
