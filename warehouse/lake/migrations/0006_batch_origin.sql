-- Provenance (issue 51): where a batch's readings came from, named on every analytics answer
-- (data.provenance.sources). A capture's batch names the platform API it read (its base URL),
-- an import's the file's name; older batches leave it NULL (their source still names them).
ALTER TABLE ingest_batches ADD COLUMN origin VARCHAR;
