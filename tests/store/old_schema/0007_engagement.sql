-- Engagement: outbound webhooks (endpoints, an outbox of lifecycle events, deliveries with
-- retries), the delivery lease of inbox replies, inbox sync cursors, and the state content
-- automations keep between runs. No function defaults (they stop Quack clients attaching).

CREATE TABLE webhook_endpoints (
    id            VARCHAR PRIMARY KEY,       -- whk_…
    workspace_id  VARCHAR NOT NULL,
    url           VARCHAR NOT NULL,
    secret        VARCHAR NOT NULL,          -- whsec_…: shown once at creation, signs every body
    description   VARCHAR,
    event_types   VARCHAR[] NOT NULL,
    enabled       BOOLEAN NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL,
    deleted_at    TIMESTAMP
);
CREATE INDEX webhook_endpoints_ws ON webhook_endpoints (workspace_id);

-- The outbox: written in the same transaction as the change it reports (or by the publishing
-- worker as one statement); the engagement runner fans each event out to the endpoints.
CREATE TABLE webhook_events (
    id             VARCHAR PRIMARY KEY,      -- evt_…
    workspace_id   VARCHAR NOT NULL,
    event_type     VARCHAR NOT NULL,         -- post.created | post.scheduled | post.published | …
    payload        VARCHAR NOT NULL,         -- JSON: the event's data object
    created_at     TIMESTAMP NOT NULL,
    dispatched_at  TIMESTAMP                 -- set once its deliveries exist
);

CREATE TABLE webhook_deliveries (
    id                VARCHAR PRIMARY KEY,   -- whd_…
    event_id          VARCHAR NOT NULL,
    endpoint_id       VARCHAR NOT NULL,
    workspace_id      VARCHAR NOT NULL,
    event_type        VARCHAR NOT NULL,
    body              VARCHAR NOT NULL,      -- the exact bytes POSTed (UTF-8), signed as is
    status            VARCHAR NOT NULL,      -- pending | succeeded | failed
    attempts          INTEGER NOT NULL,
    next_attempt_at   TIMESTAMP,
    claimed_by        VARCHAR,
    lease_expires_at  TIMESTAMP,
    response_status   INTEGER,
    response_ms       DOUBLE,
    last_error        VARCHAR,
    delivered_at      TIMESTAMP,
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL,
    UNIQUE (event_id, endpoint_id)
);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id);

-- Outbound inbox replies: a lease so each pending reply is sent by one runner, exactly once.
ALTER TABLE inbox_messages ADD COLUMN claimed_by VARCHAR;
ALTER TABLE inbox_messages ADD COLUMN lease_expires_at TIMESTAMP;
ALTER TABLE inbox_messages ADD COLUMN delivery_attempts INTEGER DEFAULT 0;
ALTER TABLE inbox_messages ADD COLUMN next_attempt_at TIMESTAMP;
ALTER TABLE inbox_messages ADD COLUMN delivery_error VARCHAR;

-- Inbound messages whose automations have been evaluated: the primary key makes the
-- evaluation happen once even with several runners.
CREATE TABLE inbox_automation_marks (
    message_id    VARCHAR PRIMARY KEY,
    workspace_id  VARCHAR NOT NULL,
    created_at    TIMESTAMP NOT NULL
);

-- How far each connected account's conversations have been read.
CREATE TABLE inbox_sync_state (
    account_id    VARCHAR PRIMARY KEY,
    workspace_id  VARCHAR NOT NULL,
    synced_until  TIMESTAMP,                 -- newest received_at seen
    last_error    VARCHAR,
    updated_at    TIMESTAMP NOT NULL
);

-- Content automations: the feed items already turned into posts, and the round-robin position.
CREATE TABLE content_automation_seen (
    automation_id  VARCHAR NOT NULL,
    item_key       VARCHAR NOT NULL,         -- the feed item's guid / id / link
    post_id        VARCHAR,
    created_at     TIMESTAMP NOT NULL,
    PRIMARY KEY (automation_id, item_key)
);

CREATE TABLE content_automation_state (
    automation_id  VARCHAR PRIMARY KEY,
    position       INTEGER NOT NULL,         -- next evergreen post / template row
    updated_at     TIMESTAMP NOT NULL
);
