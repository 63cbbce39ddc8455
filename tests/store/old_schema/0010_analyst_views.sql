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
