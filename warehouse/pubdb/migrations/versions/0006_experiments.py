"""Posting-time experiments: each experiment's arms and plan, and the posts assigned an arm.

``experiments``: the accounts, arms (posting slots, one the control), metric and plan (an end
or a post count) as created, and whether it was stopped. ``experiment_posts``: one row per
post an experiment scheduled, with its arm and slot, written in the transaction that creates
the post (docs/api/experiments.md). New tables beside the DuckDB store's
(``warehouse.pubdb.schema.added``): ``murmur migrate`` has nothing to copy into them.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02 19:30:00

"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# A JSON document, JSONB on PostgreSQL (as 0001's lists).
JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table(
        "experiments",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("workspace_id", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("account_ids", JSON, nullable=False),
        sa.Column("timezone", sa.String(), nullable=False),
        sa.Column("arms", JSON, nullable=False),
        sa.Column("metric", sa.String(), nullable=False),
        sa.Column("ends_at", sa.DateTime(), nullable=True),
        sa.Column("target_posts", sa.Integer(), nullable=True),
        sa.Column("min_detectable_effect", sa.Double(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("queue_id", sa.String(), nullable=True),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("stopped_at", sa.DateTime(), nullable=True),
        sa.Column("stop_reason", sa.String(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("deleted_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("experiments_ws_id", "experiments", ["workspace_id", "id"])
    op.create_index("experiments_queue", "experiments", ["queue_id"])
    op.create_table(
        "experiment_posts",
        sa.Column("post_id", sa.String(), nullable=False),
        sa.Column("experiment_id", sa.String(), nullable=False),
        sa.Column("workspace_id", sa.String(), nullable=False),
        sa.Column("arm", sa.String(), nullable=False),
        sa.Column("slot_at", sa.DateTime(), nullable=False),
        sa.Column("assigned_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("post_id"),
    )
    op.create_index("experiment_posts_experiment", "experiment_posts", ["experiment_id", "slot_at"])


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_index("experiment_posts_experiment", table_name="experiment_posts")
    op.drop_table("experiment_posts")
    op.drop_index("experiments_queue", table_name="experiments")
    op.drop_index("experiments_ws_id", table_name="experiments")
    op.drop_table("experiments")
