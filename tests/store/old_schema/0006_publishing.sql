-- Publishing worker: when a destination was first attempted (the lower bound for asking the
-- platform whether an earlier attempt went through), a log of every attempt, and the workers.
ALTER TABLE post_destinations ADD COLUMN first_attempt_at TIMESTAMP;

CREATE TABLE publish_attempts (
    id                VARCHAR PRIMARY KEY,
    destination_id    VARCHAR NOT NULL,
    post_id           VARCHAR NOT NULL,
    workspace_id      VARCHAR NOT NULL,
    worker_id         VARCHAR NOT NULL,
    attempt           INTEGER NOT NULL,         -- post_destinations.attempts of this claim
    outcome           VARCHAR NOT NULL,         -- published | recovered | retry | failed | released | lost_lease
    platform_post_id  VARCHAR,
    error_code        VARCHAR,
    error_message     VARCHAR,
    started_at        TIMESTAMP NOT NULL,
    finished_at       TIMESTAMP NOT NULL
);
CREATE INDEX publish_attempts_destination ON publish_attempts (destination_id);

CREATE TABLE publishing_workers (
    id            VARCHAR PRIMARY KEY,
    hostname      VARCHAR NOT NULL,
    pid           INTEGER NOT NULL,
    concurrency   INTEGER NOT NULL,
    started_at    TIMESTAMP NOT NULL,
    heartbeat_at  TIMESTAMP NOT NULL,
    stopped_at    TIMESTAMP
);
