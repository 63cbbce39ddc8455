"""Murmur's domain: each feature's services and their input and output models, below the API."""
