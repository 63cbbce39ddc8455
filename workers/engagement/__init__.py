"""Engagement: the inbox in motion, inbox and content automations, outbound webhooks."""
