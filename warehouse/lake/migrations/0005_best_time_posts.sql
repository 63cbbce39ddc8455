-- Best times in any time zone (issue 51): mart_best_times holds each post's publication and
-- index (its rate over its account's mean), one row per post of the window, own, competitors'
-- and creators' alike (the platform's pattern); the cells, blocks and recommendation are
-- computed when read, in the zone asked (warehouse/best_times.py). Its weekday x hour cells in
-- UTC are dropped; a copy of an older store leaves the new columns NULL (the next run
-- replaces the rows).
ALTER TABLE mart_best_times DROP COLUMN weekday;
ALTER TABLE mart_best_times DROP COLUMN hour;
ALTER TABLE mart_best_times DROP COLUMN posts;
ALTER TABLE mart_best_times DROP COLUMN raw_index;
ALTER TABLE mart_best_times DROP COLUMN shrunk_index;
ALTER TABLE mart_best_times DROP COLUMN ci_low;
ALTER TABLE mart_best_times DROP COLUMN ci_high;
ALTER TABLE mart_best_times DROP COLUMN confidence;
ALTER TABLE mart_best_times ADD COLUMN kind VARCHAR;
ALTER TABLE mart_best_times ADD COLUMN external_id VARCHAR;
ALTER TABLE mart_best_times ADD COLUMN published_at TIMESTAMP;
ALTER TABLE mart_best_times ADD COLUMN engagement_rate DOUBLE;
ALTER TABLE mart_best_times ADD COLUMN rate_index DOUBLE;
ALTER TABLE mart_best_times ADD COLUMN dates_only BOOLEAN;
