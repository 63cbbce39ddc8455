"""The change tokens of a store at scale: two sequences every writer advances after a commit.

``murmur_changes`` moves on every committed write, ``murmur_key_changes`` on every write but
an API request's (warehouse/changes.py, SharedChangeSignal): the API processes on every
machine read both once per request and keep their caches under them. PostgreSQL only; on
SQLite the token file of the data directory does this (every writer is on one machine).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03 08:30:00

"""

from collections.abc import Sequence

from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEQUENCES = ("murmur_changes", "murmur_key_changes")


def upgrade() -> None:
    """Upgrade schema."""
    if op.get_bind().dialect.name != "postgresql":
        return
    for name in SEQUENCES:
        op.execute(f"CREATE SEQUENCE {name}")
        # A first value drawn, so that last_value is one every session reads the same way.
        op.execute(f"SELECT nextval('{name}')")


def downgrade() -> None:
    """Downgrade schema."""
    if op.get_bind().dialect.name != "postgresql":
        return
    for name in SEQUENCES:
        op.execute(f"DROP SEQUENCE {name}")
