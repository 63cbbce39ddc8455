-- Pipeline dimensions: the latest known description of each post and account, upserted by
-- the daily staging partition from the raw rows captured that day, so that a mart can label
-- a post seen today without scanning the whole raw history for its last description.
-- An upsert keeps the newest capture (a re-run of an older day never regresses a row).

CREATE TABLE dim_posts (
    workspace_id         VARCHAR NOT NULL,
    platform             VARCHAR NOT NULL,
    external_id          VARCHAR NOT NULL,
    account_external_id  VARCHAR NOT NULL,
    post_id              VARCHAR,               -- our post_… when published through Murmur
    kind                 VARCHAR NOT NULL,      -- own | competitor | creator
    text                 VARCHAR,
    hashtags             VARCHAR[] NOT NULL,
    media_type           VARCHAR,
    url                  VARCHAR,
    category             VARCHAR,
    published_at         TIMESTAMP NOT NULL,
    deleted_at           TIMESTAMP,
    captured_at          TIMESTAMP NOT NULL,    -- the raw capture this row was taken from
    PRIMARY KEY (workspace_id, platform, external_id)
);

CREATE TABLE dim_accounts (
    workspace_id         VARCHAR NOT NULL,
    platform             VARCHAR NOT NULL,
    external_id          VARCHAR NOT NULL,
    account_id           VARCHAR,
    kind                 VARCHAR NOT NULL,
    handle               VARCHAR NOT NULL,
    display_name         VARCHAR,
    category             VARCHAR,
    followers            BIGINT,
    captured_at          TIMESTAMP NOT NULL,
    PRIMARY KEY (workspace_id, platform, external_id)
);
