-- Each post's readings of each UTC day, summed up in one row (issue 53, point 2): the day's
-- last reading, each counter's last value known that day and its highest, and the running
-- peak staged at the last reading. Staging reads a post's history before a partition here,
-- one row a day, instead of the look-back's raw readings and staged rows (24 a day for a
-- post read hourly), so a post read again after a gap costs a few rows, not a scan of the
-- look-back. The staging script keeps it (warehouse/marts/scripts.py); this fills it from
-- the history there is.
CREATE TABLE stg_post_days (
    workspace_id      VARCHAR NOT NULL,
    platform          VARCHAR NOT NULL,
    external_id       VARCHAR NOT NULL,
    day               DATE NOT NULL,
    captured_at       TIMESTAMP NOT NULL,
    last_impressions  BIGINT,
    max_impressions   BIGINT,
    peak_impressions  BIGINT,
    last_reach        BIGINT,
    max_reach         BIGINT,
    peak_reach        BIGINT,
    last_views        BIGINT,
    max_views         BIGINT,
    peak_views        BIGINT,
    last_likes        BIGINT,
    max_likes         BIGINT,
    peak_likes        BIGINT,
    last_comments     BIGINT,
    max_comments      BIGINT,
    peak_comments     BIGINT,
    last_shares       BIGINT,
    max_shares        BIGINT,
    peak_shares       BIGINT,
    last_saves        BIGINT,
    max_saves         BIGINT,
    peak_saves        BIGINT,
    last_clicks       BIGINT,
    max_clicks        BIGINT,
    peak_clicks       BIGINT
);

INSERT INTO stg_post_days BY NAME
SELECT r.*, s.peak_impressions, s.peak_reach, s.peak_views, s.peak_likes, s.peak_comments, s.peak_shares, s.peak_saves, s.peak_clicks
FROM (
    SELECT workspace_id, platform, external_id, CAST(captured_at AS DATE) AS day,
           max(captured_at) AS captured_at,
           arg_max(impressions, captured_at) FILTER (WHERE impressions IS NOT NULL) AS last_impressions,
           max(impressions) AS max_impressions,
           arg_max(reach, captured_at) FILTER (WHERE reach IS NOT NULL) AS last_reach,
           max(reach) AS max_reach,
           arg_max(views, captured_at) FILTER (WHERE views IS NOT NULL) AS last_views,
           max(views) AS max_views,
           arg_max(likes, captured_at) FILTER (WHERE likes IS NOT NULL) AS last_likes,
           max(likes) AS max_likes,
           arg_max(comments, captured_at) FILTER (WHERE comments IS NOT NULL) AS last_comments,
           max(comments) AS max_comments,
           arg_max(shares, captured_at) FILTER (WHERE shares IS NOT NULL) AS last_shares,
           max(shares) AS max_shares,
           arg_max(saves, captured_at) FILTER (WHERE saves IS NOT NULL) AS last_saves,
           max(saves) AS max_saves,
           arg_max(clicks, captured_at) FILTER (WHERE clicks IS NOT NULL) AS last_clicks,
           max(clicks) AS max_clicks
    FROM raw_engagement_snapshots
    GROUP BY ALL
) r
LEFT JOIN stg_engagement_deltas s USING (workspace_id, platform, external_id, captured_at)
ORDER BY r.day;
