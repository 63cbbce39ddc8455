-- Murmur's publishing schema. Conventions:
--   * ids are opaque, prefixed and time-sortable (warehouse.ids.new_id), so ORDER BY id is
--     creation order and keyset pagination needs no second column;
--   * every TIMESTAMP column holds UTC (the API refuses offset-less input);
--   * no FOREIGN KEY clauses: DuckDB forbids updating a referenced row, and the services own
--     referential checks (and answer NOT_FOUND, not a constraint error).

CREATE TABLE organizations (
    id          VARCHAR PRIMARY KEY,
    name        VARCHAR NOT NULL,
    created_at  TIMESTAMP NOT NULL
);

CREATE TABLE workspaces (
    id                 VARCHAR PRIMARY KEY,
    organization_id    VARCHAR NOT NULL,
    name               VARCHAR NOT NULL,
    timezone           VARCHAR NOT NULL DEFAULT 'UTC',
    approval_required  BOOLEAN NOT NULL DEFAULT false,
    is_test            BOOLEAN NOT NULL DEFAULT false,
    created_at         TIMESTAMP NOT NULL,
    updated_at         TIMESTAMP NOT NULL
);

CREATE TABLE workspace_members (
    id            VARCHAR PRIMARY KEY,
    workspace_id  VARCHAR NOT NULL,
    email         VARCHAR NOT NULL,
    name          VARCHAR,
    role          VARCHAR NOT NULL,          -- owner | admin | editor | reviewer | viewer
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL,
    removed_at    TIMESTAMP              -- kept for the audit trail; live emails are unique per workspace
);
CREATE INDEX workspace_members_ws ON workspace_members (workspace_id);

CREATE TABLE api_keys (
    id                VARCHAR PRIMARY KEY,
    organization_id   VARCHAR NOT NULL,
    name              VARCHAR NOT NULL,
    mode              VARCHAR NOT NULL,      -- test | live
    key_hash          VARCHAR NOT NULL UNIQUE, -- sha256 hex of the whole key; the key is never stored
    key_hint          VARCHAR NOT NULL,      -- sk_test_AbCd…wXyZ, safe to show
    scopes            VARCHAR[] NOT NULL,
    workspace_ids     VARCHAR[] NOT NULL,
    read_rate_limit   INTEGER,               -- NULL: the installation's default
    write_rate_limit  INTEGER,
    created_at        TIMESTAMP NOT NULL,
    expires_at        TIMESTAMP,
    revoked_at        TIMESTAMP
);

CREATE TABLE accounts (
    id             VARCHAR PRIMARY KEY,
    workspace_id   VARCHAR NOT NULL,
    platform       VARCHAR NOT NULL,         -- x | instagram | facebook | linkedin | tiktok | youtube | threads | bluesky | pinterest
    handle         VARCHAR NOT NULL,
    display_name   VARCHAR NOT NULL,
    external_id    VARCHAR NOT NULL,
    status         VARCHAR NOT NULL,         -- active | needs_reconnection | disconnected
    is_test        BOOLEAN NOT NULL DEFAULT false,
    follower_count BIGINT,
    connected_at   TIMESTAMP NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    updated_at     TIMESTAMP NOT NULL
);
CREATE INDEX accounts_ws ON accounts (workspace_id);

CREATE TABLE media (
    id            VARCHAR PRIMARY KEY,
    workspace_id  VARCHAR NOT NULL,
    kind          VARCHAR NOT NULL,          -- image | video | document
    content_type  VARCHAR NOT NULL,          -- judged from the bytes
    size_bytes    BIGINT NOT NULL,
    sha256        VARCHAR NOT NULL,
    filename      VARCHAR,                   -- the client's name, for display only
    storage_key   VARCHAR NOT NULL,          -- path under the media directory, chosen by us
    created_at    TIMESTAMP NOT NULL
);
CREATE INDEX media_ws ON media (workspace_id);

CREATE TABLE posts (
    id                VARCHAR PRIMARY KEY,
    workspace_id      VARCHAR NOT NULL,
    text              VARCHAR NOT NULL,
    status            VARCHAR NOT NULL,      -- draft | pending_approval | scheduled | publishing | published | partially_published | failed | canceled
    scheduled_at      TIMESTAMP,
    published_at      TIMESTAMP,
    approval_required BOOLEAN NOT NULL DEFAULT false,
    tags              VARCHAR[] NOT NULL,
    media_ids         VARCHAR[] NOT NULL,
    platform_options  JSON,
    source            VARCHAR NOT NULL DEFAULT 'api',  -- api | queue | automation
    created_by        VARCHAR,               -- api key id
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL,
    canceled_at       TIMESTAMP
);
CREATE INDEX posts_ws ON posts (workspace_id);

CREATE TABLE post_destinations (
    id                VARCHAR PRIMARY KEY,
    post_id           VARCHAR NOT NULL,
    workspace_id      VARCHAR NOT NULL,
    account_id        VARCHAR NOT NULL,
    platform          VARCHAR NOT NULL,
    status            VARCHAR NOT NULL,      -- pending | publishing | published | failed
    platform_post_id  VARCHAR,
    platform_url      VARCHAR,
    error_code        VARCHAR,
    error_message     VARCHAR,
    attempts          INTEGER NOT NULL DEFAULT 0,
    next_attempt_at   TIMESTAMP,
    claimed_by        VARCHAR,               -- the publishing worker holding the lease
    lease_expires_at  TIMESTAMP,
    published_at      TIMESTAMP,
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL
);
CREATE INDEX post_destinations_post ON post_destinations (post_id);

CREATE TABLE approval_batches (
    id            VARCHAR PRIMARY KEY,
    workspace_id  VARCHAR NOT NULL,
    name          VARCHAR NOT NULL,
    batch_date    DATE NOT NULL,             -- posts submitted on one UTC day share a batch
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL,
    UNIQUE (workspace_id, batch_date)
);

CREATE TABLE approval_items (
    id            VARCHAR PRIMARY KEY,
    batch_id      VARCHAR NOT NULL,
    workspace_id  VARCHAR NOT NULL,
    post_id       VARCHAR NOT NULL,
    status        VARCHAR NOT NULL,          -- pending | approved | rejected | returned
    comment       VARCHAR,
    decided_by    VARCHAR,
    decided_at    TIMESTAMP,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL
);
CREATE INDEX approval_items_batch ON approval_items (batch_id);
CREATE INDEX approval_items_post ON approval_items (post_id);

CREATE TABLE approval_events (
    id            VARCHAR PRIMARY KEY,
    item_id       VARCHAR NOT NULL,
    workspace_id  VARCHAR NOT NULL,
    action        VARCHAR NOT NULL,          -- submit | approve | reject | return
    actor         VARCHAR NOT NULL,
    comment       VARCHAR,
    created_at    TIMESTAMP NOT NULL
);
CREATE INDEX approval_events_item ON approval_events (item_id);

CREATE TABLE inbox_items (
    id               VARCHAR PRIMARY KEY,
    workspace_id     VARCHAR NOT NULL,
    account_id       VARCHAR NOT NULL,
    platform         VARCHAR NOT NULL,
    kind             VARCHAR NOT NULL,       -- comment | mention | dm
    external_id      VARCHAR NOT NULL,       -- the platform's thread / comment id
    post_id          VARCHAR,                -- our post the conversation is about, if any
    author_handle    VARCHAR NOT NULL,
    author_name      VARCHAR,
    status           VARCHAR NOT NULL,       -- open | replied | closed | snoozed
    snoozed_until    TIMESTAMP,
    tags             VARCHAR[] NOT NULL,
    assignee         VARCHAR,
    last_message_at  TIMESTAMP NOT NULL,
    created_at       TIMESTAMP NOT NULL,
    updated_at       TIMESTAMP NOT NULL,
    UNIQUE (workspace_id, platform, external_id)
);

CREATE TABLE inbox_messages (
    id             VARCHAR PRIMARY KEY,
    item_id        VARCHAR NOT NULL,
    workspace_id   VARCHAR NOT NULL,
    direction      VARCHAR NOT NULL,         -- inbound | outbound
    author_handle  VARCHAR NOT NULL,
    text           VARCHAR NOT NULL,
    external_id    VARCHAR,                  -- the platform's id once delivered
    delivery       VARCHAR NOT NULL,         -- received | pending | sent | failed
    sent_by        VARCHAR,                  -- api key id or automation id for outbound
    created_at     TIMESTAMP NOT NULL
);
CREATE INDEX inbox_messages_item ON inbox_messages (item_id);

CREATE TABLE inbox_drafts (
    id            VARCHAR PRIMARY KEY,
    item_id       VARCHAR NOT NULL,
    workspace_id  VARCHAR NOT NULL,
    text          VARCHAR NOT NULL,
    source        VARCHAR NOT NULL,          -- template | past_reply | llm
    confidence    DOUBLE NOT NULL,
    created_at    TIMESTAMP NOT NULL
);
CREATE INDEX inbox_drafts_item ON inbox_drafts (item_id);

CREATE TABLE inbox_automations (
    id             VARCHAR PRIMARY KEY,
    workspace_id   VARCHAR NOT NULL,
    name           VARCHAR NOT NULL,
    enabled        BOOLEAN NOT NULL,
    trigger_type   VARCHAR NOT NULL,         -- phrase | any_phrase | intent
    phrases        VARCHAR[] NOT NULL,
    intent         VARCHAR,
    action         VARCHAR NOT NULL,         -- draft | reply | tag | assign | hold
    action_params  JSON NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    updated_at     TIMESTAMP NOT NULL,
    deleted_at     TIMESTAMP
);

CREATE TABLE inbox_automation_runs (
    id             VARCHAR PRIMARY KEY,
    automation_id  VARCHAR NOT NULL,
    item_id        VARCHAR NOT NULL,
    workspace_id   VARCHAR NOT NULL,
    action         VARCHAR NOT NULL,
    outcome        VARCHAR NOT NULL,
    created_at     TIMESTAMP NOT NULL
);

CREATE TABLE destination_presets (
    id            VARCHAR PRIMARY KEY,
    workspace_id  VARCHAR NOT NULL,
    name          VARCHAR NOT NULL,
    destinations  JSON NOT NULL,             -- [{"account_id": "acc_…", "options": {…}}]
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL,
    deleted_at    TIMESTAMP
);

CREATE TABLE content_automations (
    id            VARCHAR PRIMARY KEY,
    workspace_id  VARCHAR NOT NULL,
    name          VARCHAR NOT NULL,
    enabled       BOOLEAN NOT NULL,
    source        JSON NOT NULL,             -- {"type": "feed" | "evergreen" | "template", …}
    schedule      JSON NOT NULL,             -- {"cron": "0 9 * * 1-5", "timezone": "Europe/Paris"}
    target        JSON NOT NULL,             -- {"queue_id": …} or {"platforms": […]}
    last_run_at   TIMESTAMP,
    next_run_at   TIMESTAMP,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL,
    deleted_at    TIMESTAMP
);

CREATE TABLE queues (
    id            VARCHAR PRIMARY KEY,
    workspace_id  VARCHAR NOT NULL,
    name          VARCHAR NOT NULL,
    timezone      VARCHAR NOT NULL,          -- IANA zone the slots are wall-clock times in
    slots         JSON NOT NULL,             -- [{"weekday": 0-6 (Monday 0), "time": "09:30"}]
    destinations  JSON NOT NULL,             -- default destinations of items added without a post
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL,
    deleted_at    TIMESTAMP
);

CREATE TABLE queue_items (
    id            VARCHAR PRIMARY KEY,
    queue_id      VARCHAR NOT NULL,
    workspace_id  VARCHAR NOT NULL,
    post_id       VARCHAR NOT NULL,
    position      INTEGER NOT NULL,
    status        VARCHAR NOT NULL,          -- queued | scheduled | published | failed | removed
    slot_at       TIMESTAMP,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL
);
CREATE INDEX queue_items_queue ON queue_items (queue_id);

CREATE TABLE scheduled_events (
    id            VARCHAR PRIMARY KEY,
    workspace_id  VARCHAR NOT NULL,
    kind          VARCHAR NOT NULL,          -- publication | automation_run | queue_slot | reminder
    title         VARCHAR NOT NULL,
    starts_at     TIMESTAMP NOT NULL,
    status        VARCHAR NOT NULL,          -- scheduled | canceled | done
    ref_type      VARCHAR,                   -- post | content_automation | queue_item
    ref_id        VARCHAR,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL,
    canceled_at   TIMESTAMP
);
CREATE INDEX scheduled_events_ws ON scheduled_events (workspace_id);

CREATE TABLE idempotency_keys (
    api_key_id       VARCHAR NOT NULL,
    method           VARCHAR NOT NULL,
    path             VARCHAR NOT NULL,
    key              VARCHAR NOT NULL,
    fingerprint      VARCHAR NOT NULL,        -- sha256 of the canonical request
    status           VARCHAR NOT NULL,        -- in_progress | completed
    response_status  INTEGER,
    response_body    VARCHAR,
    locked_until     TIMESTAMP NOT NULL,      -- an in_progress claim older than this was abandoned
    created_at       TIMESTAMP NOT NULL,
    expires_at       TIMESTAMP NOT NULL,
    PRIMARY KEY (api_key_id, method, path, key)
);
