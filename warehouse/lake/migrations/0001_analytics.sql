-- The analytics tables in the lake (ADR 0002 step 3): today's DuckDB tables column for column
-- (tests/store/test_lake.py compares them). DuckLake has no PRIMARY KEY or UNIQUE: the keys the
-- DuckDB store enforced (ingest_batches: id; dim_posts, dim_accounts: workspace_id, platform,
-- external_id; mart_snapshots: mart, partition_key) are kept by the writers, which MERGE on them.

CREATE TABLE ingest_batches (
    id             VARCHAR NOT NULL,
    workspace_id   VARCHAR NOT NULL,
    source         VARCHAR NOT NULL,
    partition_key  VARCHAR,
    rows_posts     BIGINT NOT NULL,
    rows_snapshots BIGINT NOT NULL,
    rows_accounts  BIGINT NOT NULL,
    errors         JSON NOT NULL,
    started_at     TIMESTAMP NOT NULL,
    finished_at    TIMESTAMP NOT NULL
);

CREATE TABLE raw_posts (
    workspace_id        VARCHAR NOT NULL,
    platform            VARCHAR NOT NULL,
    external_id         VARCHAR NOT NULL,
    account_external_id VARCHAR NOT NULL,
    post_id             VARCHAR,
    kind                VARCHAR NOT NULL,
    text                VARCHAR,
    hashtags            VARCHAR[] NOT NULL,
    media_type          VARCHAR,
    url                 VARCHAR,
    category            VARCHAR,
    published_at        TIMESTAMP NOT NULL,
    deleted_at          TIMESTAMP,
    captured_at         TIMESTAMP NOT NULL,
    source              VARCHAR NOT NULL,
    ingest_batch        VARCHAR NOT NULL,
    ingested_at         TIMESTAMP NOT NULL
);

CREATE TABLE raw_engagement_snapshots (
    workspace_id VARCHAR NOT NULL,
    platform     VARCHAR NOT NULL,
    external_id  VARCHAR NOT NULL,
    captured_at  TIMESTAMP NOT NULL,
    impressions  BIGINT,
    reach        BIGINT,
    views        BIGINT,
    likes        BIGINT,
    comments     BIGINT,
    shares       BIGINT,
    saves        BIGINT,
    clicks       BIGINT,
    source       VARCHAR NOT NULL,
    ingest_batch VARCHAR NOT NULL,
    ingested_at  TIMESTAMP NOT NULL
);

CREATE TABLE raw_account_snapshots (
    workspace_id VARCHAR NOT NULL,
    platform     VARCHAR NOT NULL,
    external_id  VARCHAR NOT NULL,
    account_id   VARCHAR,
    kind         VARCHAR NOT NULL,
    handle       VARCHAR NOT NULL,
    display_name VARCHAR,
    followers    BIGINT,
    following    BIGINT,
    posts_count  BIGINT,
    category     VARCHAR,
    captured_at  TIMESTAMP NOT NULL,
    source       VARCHAR NOT NULL,
    ingest_batch VARCHAR NOT NULL,
    ingested_at  TIMESTAMP NOT NULL
);

CREATE TABLE stg_engagement_deltas (
    workspace_id     VARCHAR NOT NULL,
    platform         VARCHAR NOT NULL,
    external_id      VARCHAR NOT NULL,
    captured_at      TIMESTAMP NOT NULL,
    day              DATE NOT NULL,
    impressions      BIGINT NOT NULL,
    reach            BIGINT NOT NULL,
    views            BIGINT NOT NULL,
    likes            BIGINT NOT NULL,
    comments         BIGINT NOT NULL,
    shares           BIGINT NOT NULL,
    saves            BIGINT NOT NULL,
    clicks           BIGINT NOT NULL,
    counter_drops    INTEGER NOT NULL,
    first_seen       BOOLEAN,
    peak_impressions BIGINT,
    peak_reach       BIGINT,
    peak_views       BIGINT,
    peak_likes       BIGINT,
    peak_comments    BIGINT,
    peak_shares      BIGINT,
    peak_saves       BIGINT,
    peak_clicks      BIGINT
);

CREATE TABLE dim_posts (
    workspace_id        VARCHAR NOT NULL,
    platform            VARCHAR NOT NULL,
    external_id         VARCHAR NOT NULL,
    account_external_id VARCHAR NOT NULL,
    post_id             VARCHAR,
    kind                VARCHAR NOT NULL,
    text                VARCHAR,
    hashtags            VARCHAR[] NOT NULL,
    media_type          VARCHAR,
    url                 VARCHAR,
    category            VARCHAR,
    published_at        TIMESTAMP NOT NULL,
    deleted_at          TIMESTAMP,
    captured_at         TIMESTAMP NOT NULL
);

CREATE TABLE dim_accounts (
    workspace_id VARCHAR NOT NULL,
    platform     VARCHAR NOT NULL,
    external_id  VARCHAR NOT NULL,
    account_id   VARCHAR,
    kind         VARCHAR NOT NULL,
    handle       VARCHAR NOT NULL,
    display_name VARCHAR,
    category     VARCHAR,
    followers    BIGINT,
    captured_at  TIMESTAMP NOT NULL
);

CREATE TABLE mart_account_daily (
    workspace_id        VARCHAR NOT NULL,
    day                 DATE NOT NULL,
    platform            VARCHAR NOT NULL,
    account_external_id VARCHAR NOT NULL,
    account_id          VARCHAR,
    kind                VARCHAR NOT NULL,
    handle              VARCHAR NOT NULL,
    followers           BIGINT,
    follower_growth     BIGINT,
    posts_published     BIGINT NOT NULL,
    impressions         BIGINT NOT NULL,
    engagements         BIGINT NOT NULL,
    engagement_rate     DOUBLE
);

CREATE TABLE mart_anomalies (
    workspace_id        VARCHAR NOT NULL,
    day                 DATE NOT NULL,
    platform            VARCHAR NOT NULL,
    account_external_id VARCHAR NOT NULL,
    metric              VARCHAR NOT NULL,
    value               DOUBLE NOT NULL,
    baseline_median     DOUBLE NOT NULL,
    baseline_mad        DOUBLE NOT NULL,
    robust_z            DOUBLE NOT NULL,
    direction           VARCHAR NOT NULL,
    computed_at         TIMESTAMP NOT NULL
);

CREATE TABLE mart_best_times (
    workspace_id        VARCHAR NOT NULL,
    platform            VARCHAR NOT NULL,
    account_external_id VARCHAR NOT NULL,
    weekday             INTEGER NOT NULL,
    hour                INTEGER NOT NULL,
    posts               BIGINT NOT NULL,
    raw_index           DOUBLE NOT NULL,
    shrunk_index        DOUBLE NOT NULL,
    ci_low              DOUBLE NOT NULL,
    ci_high             DOUBLE NOT NULL,
    confidence          VARCHAR NOT NULL,
    computed_at         TIMESTAMP NOT NULL
);

CREATE TABLE mart_creator_rankings (
    workspace_id           VARCHAR NOT NULL,
    kind                   VARCHAR NOT NULL,
    platform               VARCHAR NOT NULL,
    account_external_id    VARCHAR NOT NULL,
    handle                 VARCHAR NOT NULL,
    category               VARCHAR,
    followers              BIGINT,
    posts                  BIGINT NOT NULL,
    engagement_rate        DOUBLE,
    engagement_rate_shrunk DOUBLE NOT NULL,
    growth_rate            DOUBLE NOT NULL,
    avg_reach              DOUBLE NOT NULL,
    score                  DOUBLE NOT NULL,
    rank                   INTEGER NOT NULL,
    parts                  JSON NOT NULL,
    computed_at            TIMESTAMP NOT NULL
);

CREATE TABLE mart_insights (
    workspace_id        VARCHAR NOT NULL,
    kind                VARCHAR NOT NULL,
    platform            VARCHAR,
    account_external_id VARCHAR,
    title               VARCHAR NOT NULL,
    body                VARCHAR NOT NULL,
    score               DOUBLE NOT NULL,
    evidence            JSON NOT NULL,
    computed_at         TIMESTAMP NOT NULL
);

CREATE TABLE mart_post_daily (
    workspace_id        VARCHAR NOT NULL,
    day                 DATE NOT NULL,
    platform            VARCHAR NOT NULL,
    account_external_id VARCHAR NOT NULL,
    account_id          VARCHAR,
    external_id         VARCHAR NOT NULL,
    post_id             VARCHAR,
    kind                VARCHAR NOT NULL,
    impressions         BIGINT NOT NULL,
    reach               BIGINT NOT NULL,
    views               BIGINT NOT NULL,
    likes               BIGINT NOT NULL,
    comments            BIGINT NOT NULL,
    shares              BIGINT NOT NULL,
    saves               BIGINT NOT NULL,
    clicks              BIGINT NOT NULL,
    engagements         BIGINT NOT NULL,
    engagement_rate     DOUBLE
);

CREATE TABLE mart_post_first_seen (
    workspace_id        VARCHAR NOT NULL,
    day                 DATE NOT NULL,
    captured_at         TIMESTAMP NOT NULL,
    platform            VARCHAR NOT NULL,
    account_external_id VARCHAR NOT NULL,
    account_id          VARCHAR,
    external_id         VARCHAR NOT NULL,
    post_id             VARCHAR,
    kind                VARCHAR NOT NULL,
    published_at        TIMESTAMP,
    impressions         BIGINT NOT NULL,
    reach               BIGINT NOT NULL,
    views               BIGINT NOT NULL,
    likes               BIGINT NOT NULL,
    comments            BIGINT NOT NULL,
    shares              BIGINT NOT NULL,
    saves               BIGINT NOT NULL,
    clicks              BIGINT NOT NULL,
    engagements         BIGINT NOT NULL
);

CREATE TABLE mart_post_hourly (
    workspace_id        VARCHAR NOT NULL,
    day                 DATE NOT NULL,
    hour                TIMESTAMP NOT NULL,
    platform            VARCHAR NOT NULL,
    account_external_id VARCHAR NOT NULL,
    account_id          VARCHAR,
    external_id         VARCHAR NOT NULL,
    post_id             VARCHAR,
    kind                VARCHAR NOT NULL,
    impressions         BIGINT NOT NULL,
    reach               BIGINT NOT NULL,
    views               BIGINT NOT NULL,
    likes               BIGINT NOT NULL,
    comments            BIGINT NOT NULL,
    shares              BIGINT NOT NULL,
    saves               BIGINT NOT NULL,
    clicks              BIGINT NOT NULL,
    engagements         BIGINT NOT NULL
);

CREATE TABLE mart_snapshots (
    mart          VARCHAR NOT NULL,
    partition_key VARCHAR NOT NULL,
    computed_at   TIMESTAMP NOT NULL,
    rows          BIGINT NOT NULL,
    data_through  TIMESTAMP,
    run_id        VARCHAR
);

CREATE TABLE mart_viral_trends (
    workspace_id VARCHAR NOT NULL,
    entity_type  VARCHAR NOT NULL,
    entity       VARCHAR NOT NULL,
    platform     VARCHAR,
    score        DOUBLE NOT NULL,
    status       VARCHAR NOT NULL,
    velocity     DOUBLE NOT NULL,
    baseline     DOUBLE NOT NULL,
    evidence     JSON NOT NULL,
    window_end   TIMESTAMP NOT NULL,
    computed_at  TIMESTAMP NOT NULL
);

-- Views that carry the API's definitions, for analysts (docs/api/analytics.md): summed over
-- the days of a range they give what GET /analytics/unified gives for it.
-- Own posts only: competitors' and creators' posts share the marts (kind) but are not ours.

-- Growth: per day, platform and account, what its own posts gained (counters above their
-- running peak); summed over days it is /analytics/unified's totals and by_platform.
CREATE VIEW unified_daily AS
SELECT workspace_id, day, platform, account_external_id, any_value(account_id) AS account_id,
       sum(impressions)::BIGINT AS impressions, sum(reach)::BIGINT AS reach,
       sum(views)::BIGINT AS views, sum(likes)::BIGINT AS likes,
       sum(comments)::BIGINT AS comments, sum(shares)::BIGINT AS shares,
       sum(saves)::BIGINT AS saves, sum(clicks)::BIGINT AS clicks,
       sum(engagements)::BIGINT AS engagements,
       count(DISTINCT external_id) AS active_posts  -- that day's; not additive over days
FROM mart_post_daily
WHERE kind = 'own'
GROUP BY workspace_id, day, platform, account_external_id;

-- First-seen totals: each own post first read after its publication day, with the lifetime
-- counters of that first reading (/analytics/unified's first_seen, by captured_at).
CREATE VIEW unified_first_seen AS
SELECT workspace_id, day, captured_at, platform, account_external_id, account_id,
       external_id, post_id, published_at, impressions, reach, views, likes, comments, shares,
       saves, clicks, engagements
FROM mart_post_first_seen
WHERE kind = 'own';
