-- The lake's Parquet files compressed with zstd instead of DuckDB's default, snappy: the marts'
-- many repeated ids and strings take less room on disk and object storage, for the same reads.
-- Files written before keep their codec until the upkeep merges or rewrites them.
CALL set_option('parquet_compression', 'zstd');
