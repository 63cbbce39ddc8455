"""Platform connectors: one httpx client per platform behind one small interface."""
