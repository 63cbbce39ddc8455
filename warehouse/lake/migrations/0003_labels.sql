-- What a person needs to recognise a post or an account (issue 28): a post's thumbnail, an
-- account's profile URL and picture, as each source gives them (docs/pipeline.md, "Labels").
-- Added at the end of each table: the DuckDB store's columns keep their order, and a copy of
-- an older store (warehouse/lake/copy.py, by name) leaves these NULL.
ALTER TABLE raw_posts ADD COLUMN thumbnail_url VARCHAR;
ALTER TABLE dim_posts ADD COLUMN thumbnail_url VARCHAR;
ALTER TABLE raw_account_snapshots ADD COLUMN url VARCHAR;
ALTER TABLE raw_account_snapshots ADD COLUMN thumbnail_url VARCHAR;
ALTER TABLE dim_accounts ADD COLUMN url VARCHAR;
ALTER TABLE dim_accounts ADD COLUMN thumbnail_url VARCHAR;
