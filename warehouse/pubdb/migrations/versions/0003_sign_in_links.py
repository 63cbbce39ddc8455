"""One-time sign-in links of the dashboard: a token's hash, its workspace, its use.

A new table beside the DuckDB store's (``warehouse.pubdb.schema.added``), so ``murmur
migrate`` has nothing to copy into it.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-27 09:00:00

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        "sign_in_links",
        sa.Column("token_hash", sa.String(), nullable=False),
        sa.Column("workspace_id", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("used_at", sa.DateTime(), nullable=True),
        sa.Column("key_id", sa.String(), nullable=True),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_index("sign_in_links_key", "sign_in_links", ["key_id"])
    op.create_index("sign_in_links_expiry", "sign_in_links", ["expires_at"])


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_index("sign_in_links_expiry", table_name="sign_in_links")
    op.drop_index("sign_in_links_key", table_name="sign_in_links")
    op.drop_table("sign_in_links")
