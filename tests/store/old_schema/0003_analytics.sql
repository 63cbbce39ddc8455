-- Analytics: raw (as the platforms or the files said it) → staging → marts.
--   * raw tables are append-only snapshots keyed by what they describe and when it was seen;
--     re-ingesting a batch replaces its own rows (delete by ingest_batch, then insert);
--   * engagement counters are cumulative as the platforms report them; staging turns them
--     into per-interval deltas, clamping and reporting counters that go down;
--   * marts are rebuilt per day partition (delete the day, insert the day).
-- `source` says where a row came from: 'connector:<platform>' or 'import:<format>'.

-- Accounts we observe: our own connected accounts, tracked competitors, discovered creators.
CREATE TABLE raw_account_snapshots (
    workspace_id     VARCHAR NOT NULL,
    platform         VARCHAR NOT NULL,
    external_id      VARCHAR NOT NULL,          -- the platform's account id (or handle)
    account_id       VARCHAR,                   -- our acc_… when it is a connected account
    kind             VARCHAR NOT NULL,          -- own | competitor | creator
    handle           VARCHAR NOT NULL,
    display_name     VARCHAR,
    followers        BIGINT,
    following        BIGINT,
    posts_count      BIGINT,
    category         VARCHAR,                   -- creators: niche / category
    captured_at      TIMESTAMP NOT NULL,
    source           VARCHAR NOT NULL,
    ingest_batch     VARCHAR NOT NULL,
    ingested_at      TIMESTAMP NOT NULL
);

-- Posts as the platforms describe them (ours, competitors', creators').
CREATE TABLE raw_posts (
    workspace_id         VARCHAR NOT NULL,
    platform             VARCHAR NOT NULL,
    external_id          VARCHAR NOT NULL,      -- the platform's post id
    account_external_id  VARCHAR NOT NULL,
    post_id              VARCHAR,               -- our post_… when published through Murmur
    kind                 VARCHAR NOT NULL,      -- own | competitor | creator
    text                 VARCHAR,
    hashtags             VARCHAR[] NOT NULL,
    media_type           VARCHAR,               -- text | image | video | carousel | link
    url                  VARCHAR,
    category             VARCHAR,
    published_at         TIMESTAMP NOT NULL,
    deleted_at           TIMESTAMP,             -- seen deleted on the platform
    captured_at          TIMESTAMP NOT NULL,
    source               VARCHAR NOT NULL,
    ingest_batch         VARCHAR NOT NULL,
    ingested_at          TIMESTAMP NOT NULL
);

-- Cumulative engagement counters of one post at one moment. NULL: the platform does not
-- report that metric (not zero).
CREATE TABLE raw_engagement_snapshots (
    workspace_id   VARCHAR NOT NULL,
    platform       VARCHAR NOT NULL,
    external_id    VARCHAR NOT NULL,            -- the post's platform id
    captured_at    TIMESTAMP NOT NULL,
    impressions    BIGINT,
    reach          BIGINT,
    views          BIGINT,
    likes          BIGINT,
    comments       BIGINT,
    shares         BIGINT,
    saves          BIGINT,
    clicks         BIGINT,
    source         VARCHAR NOT NULL,
    ingest_batch   VARCHAR NOT NULL,
    ingested_at    TIMESTAMP NOT NULL
);

-- What each ingest did: one row per (source, batch), for freshness and audits.
CREATE TABLE ingest_batches (
    id             VARCHAR PRIMARY KEY,         -- the ingest_batch of the raw rows
    workspace_id   VARCHAR NOT NULL,
    source         VARCHAR NOT NULL,
    partition_key  VARCHAR,                     -- the Dagster partition, when there is one
    rows_posts     BIGINT NOT NULL,
    rows_snapshots BIGINT NOT NULL,
    rows_accounts  BIGINT NOT NULL,
    errors         JSON NOT NULL,               -- per-account/metric failures that did not stop it
    started_at     TIMESTAMP NOT NULL,
    finished_at    TIMESTAMP NOT NULL
);

-- Competitors a workspace tracks (POST /competitors).
CREATE TABLE tracked_competitors (
    id            VARCHAR PRIMARY KEY,          -- cmp_…
    workspace_id  VARCHAR NOT NULL,
    platform      VARCHAR NOT NULL,
    handle        VARCHAR NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    deleted_at    TIMESTAMP
);

-- Staging: per post and snapshot, the delta since the previous snapshot.
CREATE TABLE stg_engagement_deltas (
    workspace_id   VARCHAR NOT NULL,
    platform       VARCHAR NOT NULL,
    external_id    VARCHAR NOT NULL,
    captured_at    TIMESTAMP NOT NULL,
    day            DATE NOT NULL,               -- UTC day of captured_at: the partition
    impressions    BIGINT NOT NULL,
    reach          BIGINT NOT NULL,
    views          BIGINT NOT NULL,
    likes          BIGINT NOT NULL,
    comments       BIGINT NOT NULL,
    shares         BIGINT NOT NULL,
    saves          BIGINT NOT NULL,
    clicks         BIGINT NOT NULL,
    counter_drops  INTEGER NOT NULL             -- how many counters went down (clamped to 0)
);

-- Mart: unified analytics per day, hour, platform, account and post.
CREATE TABLE mart_post_hourly (
    workspace_id         VARCHAR NOT NULL,
    day                  DATE NOT NULL,
    hour                 TIMESTAMP NOT NULL,    -- start of the UTC hour
    platform             VARCHAR NOT NULL,
    account_external_id  VARCHAR NOT NULL,
    account_id           VARCHAR,
    external_id          VARCHAR NOT NULL,
    post_id              VARCHAR,
    kind                 VARCHAR NOT NULL,
    impressions          BIGINT NOT NULL,
    reach                BIGINT NOT NULL,
    views                BIGINT NOT NULL,
    likes                BIGINT NOT NULL,
    comments             BIGINT NOT NULL,
    shares               BIGINT NOT NULL,
    saves                BIGINT NOT NULL,
    clicks               BIGINT NOT NULL,
    engagements          BIGINT NOT NULL        -- likes + comments + shares + saves + clicks
);

CREATE TABLE mart_post_daily (
    workspace_id         VARCHAR NOT NULL,
    day                  DATE NOT NULL,
    platform             VARCHAR NOT NULL,
    account_external_id  VARCHAR NOT NULL,
    account_id           VARCHAR,
    external_id          VARCHAR NOT NULL,
    post_id              VARCHAR,
    kind                 VARCHAR NOT NULL,
    impressions          BIGINT NOT NULL,
    reach                BIGINT NOT NULL,
    views                BIGINT NOT NULL,
    likes                BIGINT NOT NULL,
    comments             BIGINT NOT NULL,
    shares               BIGINT NOT NULL,
    saves                BIGINT NOT NULL,
    clicks               BIGINT NOT NULL,
    engagements          BIGINT NOT NULL,
    engagement_rate      DOUBLE                 -- engagements / impressions (else / views); NULL when both 0
);

CREATE TABLE mart_account_daily (
    workspace_id         VARCHAR NOT NULL,
    day                  DATE NOT NULL,
    platform             VARCHAR NOT NULL,
    account_external_id  VARCHAR NOT NULL,
    account_id           VARCHAR,
    kind                 VARCHAR NOT NULL,
    handle               VARCHAR NOT NULL,
    followers            BIGINT,                -- last snapshot of the day
    follower_growth      BIGINT,                -- vs the last snapshot before the day
    posts_published      BIGINT NOT NULL,
    impressions          BIGINT NOT NULL,
    engagements          BIGINT NOT NULL,
    engagement_rate      DOUBLE
);

-- Insights: best times (weekday × hour per account), top content, anomalies, recommendations.
CREATE TABLE mart_best_times (
    workspace_id         VARCHAR NOT NULL,
    platform             VARCHAR NOT NULL,
    account_external_id  VARCHAR NOT NULL,
    weekday              INTEGER NOT NULL,      -- 0 Monday … 6 Sunday, in UTC
    hour                 INTEGER NOT NULL,
    posts                BIGINT NOT NULL,
    raw_index            DOUBLE NOT NULL,       -- mean of (post rate / account mean rate)
    shrunk_index         DOUBLE NOT NULL,       -- empirical-Bayes shrunk toward 1.0
    ci_low               DOUBLE NOT NULL,
    ci_high              DOUBLE NOT NULL,
    confidence           VARCHAR NOT NULL,      -- low | medium | high
    computed_at          TIMESTAMP NOT NULL
);

CREATE TABLE mart_anomalies (
    workspace_id         VARCHAR NOT NULL,
    day                  DATE NOT NULL,
    platform             VARCHAR NOT NULL,
    account_external_id  VARCHAR NOT NULL,
    metric               VARCHAR NOT NULL,
    value                DOUBLE NOT NULL,
    baseline_median      DOUBLE NOT NULL,
    baseline_mad         DOUBLE NOT NULL,
    robust_z             DOUBLE NOT NULL,
    direction            VARCHAR NOT NULL,      -- spike | drop
    computed_at          TIMESTAMP NOT NULL
);

CREATE TABLE mart_insights (
    workspace_id   VARCHAR NOT NULL,
    kind           VARCHAR NOT NULL,            -- best_time | top_content | anomaly | recommendation
    platform       VARCHAR,
    account_external_id VARCHAR,
    title          VARCHAR NOT NULL,
    body           VARCHAR NOT NULL,
    score          DOUBLE NOT NULL,
    evidence       JSON NOT NULL,
    computed_at    TIMESTAMP NOT NULL
);

-- Viral trends: posts, hashtags and topics whose velocity is abnormal for their own baseline.
CREATE TABLE mart_viral_trends (
    workspace_id   VARCHAR NOT NULL,
    entity_type    VARCHAR NOT NULL,            -- post | hashtag | topic
    entity         VARCHAR NOT NULL,
    platform       VARCHAR,
    score          DOUBLE NOT NULL,
    status         VARCHAR NOT NULL,            -- emerging | peaking | declining
    velocity       DOUBLE NOT NULL,             -- engagements per hour, latest window
    baseline       DOUBLE NOT NULL,             -- its own typical velocity
    evidence       JSON NOT NULL,
    window_end     TIMESTAMP NOT NULL,
    computed_at    TIMESTAMP NOT NULL
);

-- Creator and competitor rankings with the parts of the composite.
CREATE TABLE mart_creator_rankings (
    workspace_id         VARCHAR NOT NULL,
    kind                 VARCHAR NOT NULL,      -- creator | competitor
    platform             VARCHAR NOT NULL,
    account_external_id  VARCHAR NOT NULL,
    handle               VARCHAR NOT NULL,
    category             VARCHAR,
    followers            BIGINT,
    posts                BIGINT NOT NULL,
    engagement_rate      DOUBLE,
    engagement_rate_shrunk DOUBLE NOT NULL,
    growth_rate          DOUBLE NOT NULL,
    avg_reach            DOUBLE NOT NULL,
    score                DOUBLE NOT NULL,
    rank                 INTEGER NOT NULL,
    parts                JSON NOT NULL,
    computed_at          TIMESTAMP NOT NULL
);

-- Which data each mart was computed from: served with every analytics response.
CREATE TABLE mart_snapshots (
    mart               VARCHAR NOT NULL,
    partition_key      VARCHAR NOT NULL,         -- a day, or 'all'
    computed_at        TIMESTAMP NOT NULL,
    rows               BIGINT NOT NULL,
    data_through       TIMESTAMP,                -- newest captured_at it saw
    run_id             VARCHAR,
    PRIMARY KEY (mart, partition_key)
);
