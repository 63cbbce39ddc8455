"""The unified inbox: synced comments and messages, their triage, replies and drafts."""
