-- Posts & media: the alternative text a client may send with an upload.
ALTER TABLE media ADD COLUMN alt_text VARCHAR;
