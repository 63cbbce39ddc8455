"""python -m murmur."""

from murmur.cli import app

app()
