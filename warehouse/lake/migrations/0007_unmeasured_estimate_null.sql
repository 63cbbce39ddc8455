-- An unmeasured rate has no estimate (issue 51): mart_creator_rankings.engagement_rate_shrunk
-- is NULL where engagement_rate is, instead of the group's prior alone (which said nothing
-- of the account, and an analyst reading the mart saw it as the account's estimate).
ALTER TABLE mart_creator_rankings ALTER COLUMN engagement_rate_shrunk DROP NOT NULL;
UPDATE mart_creator_rankings SET engagement_rate_shrunk = NULL WHERE engagement_rate IS NULL;
