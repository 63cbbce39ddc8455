"""Webhooks: endpoints and the deliveries made to them."""
