-- Analytics that hold on real data (issue 14).
--   * staging keeps, per snapshot, each counter's running peak (the highest reading so far):
--     deltas are taken against it, so a counter that drops then recovers is counted once,
--     and the next partition starts from it without rescanning history;
--   * a post's first reading, when it carries what the post gathered before we first saw it
--     (published on an earlier day, or at an unknown time), is a first-seen total, not
--     that day's growth: staging flags it and mart_post_first_seen holds it apart.

ALTER TABLE stg_engagement_deltas ADD COLUMN first_seen BOOLEAN;
ALTER TABLE stg_engagement_deltas ADD COLUMN peak_impressions BIGINT;
ALTER TABLE stg_engagement_deltas ADD COLUMN peak_reach BIGINT;
ALTER TABLE stg_engagement_deltas ADD COLUMN peak_views BIGINT;
ALTER TABLE stg_engagement_deltas ADD COLUMN peak_likes BIGINT;
ALTER TABLE stg_engagement_deltas ADD COLUMN peak_comments BIGINT;
ALTER TABLE stg_engagement_deltas ADD COLUMN peak_shares BIGINT;
ALTER TABLE stg_engagement_deltas ADD COLUMN peak_saves BIGINT;
ALTER TABLE stg_engagement_deltas ADD COLUMN peak_clicks BIGINT;
-- rows staged before this migration counted every reading as growth
UPDATE stg_engagement_deltas SET first_seen = false;

-- One row per post: its first reading, when that reading is a lifetime total (per UTC day
-- of the reading, rebuilt with the daily partitions).
CREATE TABLE mart_post_first_seen (
    workspace_id         VARCHAR NOT NULL,
    day                  DATE NOT NULL,         -- UTC day of the first reading
    captured_at          TIMESTAMP NOT NULL,    -- the first reading
    platform             VARCHAR NOT NULL,
    account_external_id  VARCHAR NOT NULL,
    account_id           VARCHAR,
    external_id          VARCHAR NOT NULL,
    post_id              VARCHAR,
    kind                 VARCHAR NOT NULL,
    published_at         TIMESTAMP,
    impressions          BIGINT NOT NULL,
    reach                BIGINT NOT NULL,
    views                BIGINT NOT NULL,
    likes                BIGINT NOT NULL,
    comments             BIGINT NOT NULL,
    shares               BIGINT NOT NULL,
    saves                BIGINT NOT NULL,
    clicks               BIGINT NOT NULL,
    engagements          BIGINT NOT NULL
);
