-- Posts published per account and day are counted from dim_posts when read (issue 29): a
-- count kept in the daily mart made every publication day of an import a partition to
-- rebuild (an export of posts published over years, read on one day, cost years of daily
-- partitions), and could disagree with dim_posts until its day was rebuilt.
ALTER TABLE mart_account_daily DROP COLUMN posts_published;
