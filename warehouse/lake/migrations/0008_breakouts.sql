-- Breakouts (issue 52): own posts growing above the band their own history predicts, one row
-- per breakout (pipelines/analytics/breakouts.py; docs/api/analytics.md, Breakouts). `id` is
-- stable: the post and its first window above the band, so a re-run writes the same row.
CREATE TABLE mart_breakouts (
    id                  VARCHAR NOT NULL,
    workspace_id        VARCHAR NOT NULL,
    platform            VARCHAR NOT NULL,
    account_external_id VARCHAR NOT NULL,
    external_id         VARCHAR NOT NULL,
    post_id             VARCHAR,
    published_at        TIMESTAMP NOT NULL,
    started_at          TIMESTAMP NOT NULL,
    last_breakout_at    TIMESTAMP NOT NULL,
    ongoing             BOOLEAN NOT NULL,
    window_start        TIMESTAMP NOT NULL,
    observed            DOUBLE NOT NULL,
    expected            DOUBLE NOT NULL,
    band_low            DOUBLE NOT NULL,
    band_high           DOUBLE NOT NULL,
    peak_observed       DOUBLE NOT NULL,
    peak_expected       DOUBLE NOT NULL,
    evidence            JSON NOT NULL,
    computed_at         TIMESTAMP NOT NULL
);
