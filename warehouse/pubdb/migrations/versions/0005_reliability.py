"""Publishing reliability: each account's token expiry, and the alerts sent once each.

``token_expiries``: when a connected account's token expires, as recorded when it was
connected (one row per account; none: no known expiry). ``webhook_alerts``: one row per
webhook event of a stuck destination (per destination and claim) or an expiring token (per
account and expiry), written in the transaction that enqueues the event, so that a later
check finding the same one sends nothing (docs/api/analytics.md, GET /analytics/publishing).
New tables beside the DuckDB store's (``warehouse.pubdb.schema.added``): ``murmur migrate``
has nothing to copy into them.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02 09:00:00

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        "token_expiries",
        sa.Column("account_id", sa.String(), nullable=False),
        sa.Column("workspace_id", sa.String(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("recorded_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("account_id"),
    )
    op.create_index("token_expiries_expiry", "token_expiries", ["expires_at"])
    op.create_table(
        "webhook_alerts",
        sa.Column("alert_key", sa.String(), nullable=False),
        sa.Column("workspace_id", sa.String(), nullable=False),
        sa.Column("event_type", sa.String(), nullable=False),
        sa.Column("subject_id", sa.String(), nullable=False),
        sa.Column("event_id", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("alert_key"),
    )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table("webhook_alerts")
    op.drop_index("token_expiries_expiry", table_name="token_expiries")
    op.drop_table("token_expiries")
