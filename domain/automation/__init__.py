"""Automation: content automations, queues, destination presets and scheduled events."""
