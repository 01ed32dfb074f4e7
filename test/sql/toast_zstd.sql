--
-- zstd as a TOAST compression method: the method wherever pglz and
-- lz4 can be named, round trips of many kinds and sizes of values, slices,
-- tables mixing methods, recompression as stock does it, the level GUC and
-- the errors.  Sizes are compared, never printed, so that the output does
-- not depend on the libzstd release.
--

-- Deterministic data.  zt_text: LEN characters of an md5 chain (hex, about
-- 4 bits of entropy a character); zt_words: N words of a small vocabulary
-- (very compressible, like prose); zt_random: LEN bytes of md5 output
-- (incompressible).
CREATE FUNCTION zt_text(len int, seed int) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT left(coalesce(string_agg(md5((seed::bigint * 1000003 + i)::text), ''
									ORDER BY i), ''), len)
	FROM generate_series(0, len / 32) AS i
$$;
CREATE FUNCTION zt_words(n int, seed int) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT coalesce(string_agg((ARRAY['the', 'toast', 'table', 'stores',
		'large', 'values', 'compressed', 'with', 'zstd', 'pglz', 'lz4',
		'PostgreSQL', 'row', 'page', 'chunk', E'\n'])
		[1 + get_byte(decode(md5((seed::bigint * 1000003 + i)::text), 'hex'), 0) % 16],
		' ' ORDER BY i), '')
	FROM generate_series(1, n) AS i
$$;
CREATE FUNCTION zt_random(len int, seed int) RETURNS bytea
LANGUAGE sql IMMUTABLE AS $$
	SELECT substr(decode(coalesce(string_agg(md5((seed::bigint * 1000003 + i)::text), ''
											 ORDER BY i), ''), 'hex'), 1, len)
	FROM generate_series(0, len / 16) AS i
$$;

-- The method is known to the settings, and the level has a default.
SELECT 'zstd' = ANY (enumvals) AS zstd_is_a_default_toast_compression
FROM pg_settings WHERE name = 'default_toast_compression';
SELECT name, setting, min_val, max_val, context
FROM pg_settings WHERE name = 'toast_zstd_level';

-- COMPRESSION zstd in CREATE TABLE, and \d+ shows it.
\set HIDE_TOAST_COMPRESSION false
CREATE TABLE zt_cols (
	p text COMPRESSION pglz,
	l text COMPRESSION lz4,
	z text COMPRESSION zstd,
	b bytea COMPRESSION zstd,
	j jsonb COMPRESSION zstd,
	d text);
\d+ zt_cols
SELECT attname, attcompression FROM pg_attribute
WHERE attrelid = 'zt_cols'::regclass AND attnum > 0 ORDER BY attnum;

-- ALTER TABLE ... SET COMPRESSION zstd, and back.
ALTER TABLE zt_cols ALTER COLUMN d SET COMPRESSION zstd;
SELECT attcompression FROM pg_attribute
WHERE attrelid = 'zt_cols'::regclass AND attname = 'd';
ALTER TABLE zt_cols ALTER COLUMN d SET COMPRESSION default;
SELECT attcompression = '' AS back_to_default FROM pg_attribute
WHERE attrelid = 'zt_cols'::regclass AND attname = 'd';

-- default_toast_compression = zstd applies to columns without COMPRESSION.
SET default_toast_compression = 'zstd';
SHOW default_toast_compression;
INSERT INTO zt_cols (d) VALUES (zt_words(2000, 1));
SELECT pg_column_compression(d) FROM zt_cols;
RESET default_toast_compression;
TRUNCATE zt_cols;

-- Bad names and bad levels.
CREATE TABLE zt_bad (a text COMPRESSION zstdx);
CREATE TABLE zt_bad (a text COMPRESSION "ZSTD");
SET default_toast_compression = 'zst';
SET toast_zstd_level = 0;
SET toast_zstd_level = 20;
SET toast_zstd_level = -1;
SET toast_zstd_level = 'fast';

-- Round trips: every kind and size comes back byte for byte.  The threshold
-- for trying compression is about 2 kB a row (TOAST_TUPLE_THRESHOLD): 1900
-- characters stay as they are, 2100 get compressed in line, large values go
-- to the TOAST table, compressed.
CREATE TABLE zt_rt (id serial, kind text, len int, seed int,
					body text COMPRESSION zstd, bin bytea COMPRESSION zstd);
INSERT INTO zt_rt (kind, len, seed, body)
	SELECT 'md5 text', len, len, zt_text(len, len)
	FROM unnest(ARRAY[0, 1, 31, 100, 1000, 1900, 2100, 4000, 10000, 100000,
					  1000000, 4000000]) AS len;
INSERT INTO zt_rt (kind, len, seed, body)
	SELECT 'words', n, n, zt_words(n, n)
	FROM unnest(ARRAY[1, 300, 350, 5000, 2000000]) AS n;
INSERT INTO zt_rt (kind, len, seed, bin)
	SELECT 'random bytea', len, len, zt_random(len, len)
	FROM unnest(ARRAY[0, 100, 2100, 10000, 1000000]) AS len;
INSERT INTO zt_rt (kind, len, seed, bin)
	SELECT 'text as bytea', n, n, convert_to(zt_words(n, n), 'UTF8')
	FROM unnest(ARRAY[400, 100000]) AS n;
SELECT id, kind, len,
	   coalesce(pg_column_compression(body), pg_column_compression(bin), '-') AS method,
	   coalesce(pg_column_toast_chunk_id(body), pg_column_toast_chunk_id(bin)) IS NOT NULL AS external,
	   CASE kind
		   WHEN 'md5 text' THEN body = zt_text(len, seed)
		   WHEN 'words' THEN body = zt_words(len, seed)
		   WHEN 'random bytea' THEN bin = zt_random(len, seed)
		   ELSE bin = convert_to(zt_words(len, seed), 'UTF8')
	   END AS same
FROM zt_rt ORDER BY id;
-- what is compressed is stored smaller than it is
SELECT kind, len FROM zt_rt
WHERE coalesce(pg_column_compression(body), pg_column_compression(bin)) IS NOT NULL
  AND coalesce(pg_column_size(body), pg_column_size(bin)) >=
	  coalesce(octet_length(body), octet_length(bin))
ORDER BY id;
-- and text of a small vocabulary compresses well
SELECT octet_length(body) / pg_column_size(body) >= 4 AS words_ratio_at_least_4
FROM zt_rt WHERE kind = 'words' AND len = 2000000;

-- jsonb
CREATE TABLE zt_json (j jsonb COMPRESSION zstd);
INSERT INTO zt_json
	SELECT jsonb_agg(jsonb_build_object('id', i, 'name', md5(i::text),
										'tags', jsonb_build_array('a', 'b', i % 7)))
	FROM unnest(ARRAY[10, 50, 5000]) AS n, generate_series(1, n) AS i GROUP BY n;
SELECT jsonb_array_length(j) AS n, pg_column_compression(j),
	   pg_column_size(j) < octet_length(j::text) AS smaller,
	   j -> 7 ->> 'name' = md5('8') AS field_ok,
	   (SELECT sum((e ->> 'id')::int) FROM jsonb_array_elements(j) AS e) AS sum_ids
FROM zt_json ORDER BY 1;

-- Slices decode only the front of the value: substr(), left(), and the
-- jsonb and bytea equivalents give what the whole value gives.
SELECT len, substr(body, 1, 10) = substr(zt_text(len, seed), 1, 10) AS head,
	   substr(body, 3000, 40) = substr(zt_text(len, seed), 3000, 40) AS middle,
	   substr(body, len - 5) = substr(zt_text(len, seed), len - 5) AS tail,
	   left(body, 2050) = left(zt_text(len, seed), 2050) AS left_2050,
	   substr(body, len + 10, 5) = '' AS past_end
FROM zt_rt WHERE kind = 'md5 text' AND len IN (4000, 100000, 4000000)
ORDER BY len;
SELECT substr(bin, 50000, 16) = substr(convert_to(zt_words(len, seed), 'UTF8'), 50000, 16)
	AS bytea_slice
FROM zt_rt WHERE kind = 'text as bytea' AND len = 100000;
SELECT position('zstd' IN body) = position('zstd' IN zt_words(len, seed)) AS position_ok
FROM zt_rt WHERE kind = 'words' AND len = 5000;

-- pglz, lz4 and zstd values side by side in one column, all readable.
CREATE TABLE zt_mix (id int, body text);
SET default_toast_compression = 'pglz';
INSERT INTO zt_mix VALUES (1, zt_words(1000, 1)), (2, zt_words(100000, 2));
SET default_toast_compression = 'lz4';
INSERT INTO zt_mix VALUES (3, zt_words(1000, 3)), (4, zt_words(100000, 4));
SET default_toast_compression = 'zstd';
INSERT INTO zt_mix VALUES (5, zt_words(1000, 5)), (6, zt_words(100000, 6));
RESET default_toast_compression;
SELECT id, pg_column_compression(body),
	   pg_column_toast_chunk_id(body) IS NOT NULL AS external,
	   body = zt_words(CASE WHEN id % 2 = 1 THEN 1000 ELSE 100000 END, id) AS same,
	   substr(body, 500, 20) = substr(zt_words(CASE WHEN id % 2 = 1 THEN 1000 ELSE 100000 END, id), 500, 20) AS slice
FROM zt_mix ORDER BY id;

-- INSERT ... SELECT and CREATE TABLE AS copy compressed values as they are,
-- whatever the target column says, as stock does for pglz and lz4.
CREATE TABLE zt_copy (id int, body text COMPRESSION pglz);
INSERT INTO zt_copy SELECT id, body FROM zt_mix;
CREATE TABLE zt_ctas AS SELECT id, body FROM zt_mix;
SELECT c.id, pg_column_compression(c.body) AS insert_select,
	   pg_column_compression(a.body) AS ctas, c.body = a.body AS same
FROM zt_copy c JOIN zt_ctas a USING (id) ORDER BY id;

-- SET COMPRESSION changes only what is compressed afterwards; VACUUM FULL
-- and CLUSTER keep existing values as they are, for zstd as for lz4.
CREATE TABLE zt_alter (id int PRIMARY KEY, z text COMPRESSION pglz,
					   l text COMPRESSION pglz);
INSERT INTO zt_alter VALUES (1, zt_words(1000, 1), zt_words(1000, 1)),
	(2, zt_words(100000, 2), zt_words(100000, 2));
ALTER TABLE zt_alter ALTER COLUMN z SET COMPRESSION zstd,
	ALTER COLUMN l SET COMPRESSION lz4;
INSERT INTO zt_alter VALUES (3, zt_words(1000, 3), zt_words(1000, 3)),
	(4, zt_words(100000, 4), zt_words(100000, 4));
VACUUM FULL zt_alter;
SELECT id, pg_column_compression(z) AS z, pg_column_compression(l) AS l
FROM zt_alter ORDER BY id;
CLUSTER zt_alter USING zt_alter_pkey;
SELECT id, pg_column_compression(z) AS z, pg_column_compression(l) AS l,
	   z = l AS same
FROM zt_alter ORDER BY id;
-- an update that changes the value compresses it with the column's method
UPDATE zt_alter SET z = z || '.', l = l || '.' WHERE id <= 2;
SELECT id, pg_column_compression(z) AS z, pg_column_compression(l) AS l
FROM zt_alter ORDER BY id;

-- The level: every level gives back the same value; higher levels are not
-- larger on text that compresses well.
CREATE TABLE zt_level (level int, body text COMPRESSION zstd);
SET toast_zstd_level = 1;
INSERT INTO zt_level VALUES (1, zt_words(100000, 7));
SET toast_zstd_level = 19;
INSERT INTO zt_level VALUES (19, zt_words(100000, 7));
RESET toast_zstd_level;
SHOW toast_zstd_level;
INSERT INTO zt_level VALUES (3, zt_words(100000, 7));
SELECT level, pg_column_compression(body), body = zt_words(100000, 7) AS same
FROM zt_level ORDER BY level;
SELECT (SELECT pg_column_size(body) FROM zt_level WHERE level = 19) <=
	   (SELECT pg_column_size(body) FROM zt_level WHERE level = 1)
	AS level_19_not_larger_than_1;

-- Incompressible data is stored as it is, in line or in the TOAST table.
CREATE TABLE zt_incompressible (b bytea COMPRESSION zstd);
INSERT INTO zt_incompressible
	SELECT zt_random(len, 9) FROM unnest(ARRAY[3000, 100000]) AS len;
SELECT octet_length(b), pg_column_compression(b) IS NULL AS not_compressed,
	   pg_column_size(b) >= octet_length(b) AS not_smaller,
	   b = zt_random(octet_length(b), 9) AS same
FROM zt_incompressible ORDER BY 1;

-- Indexes compress large keys with the column's method too.
CREATE TABLE zt_index (t text COMPRESSION zstd);
CREATE INDEX zt_index_t ON zt_index (t);
INSERT INTO zt_index VALUES (zt_words(600, 11));
SET enable_seqscan = off;
SELECT count(*) FROM zt_index WHERE t = zt_words(600, 11);
RESET enable_seqscan;

-- The encoding.  New values carry the extended header (bit pattern 3 in
-- va_tcinfo, then a method byte); earlier builds wrote bit pattern 2 and no
-- method byte.  toast_zstd_debug_legacy_encoding writes the old encoding, so
-- that one table holds both, in line and external; both read back whole and
-- in slices, and pgstrata_toast_legacy_values() counts the old ones.
CREATE EXTENSION IF NOT EXISTS pgstrata;
CREATE TABLE zt_enc (id int PRIMARY KEY, enc text, len int, seed int,
					 body text COMPRESSION zstd);
SET toast_zstd_debug_legacy_encoding = on;
INSERT INTO zt_enc VALUES (1, 'legacy', 1000, 1, zt_words(1000, 1)),
	(2, 'legacy', 100000, 2, zt_words(100000, 2));
RESET toast_zstd_debug_legacy_encoding;
INSERT INTO zt_enc VALUES (3, 'extended', 1000, 1, zt_words(1000, 1)),
	(4, 'extended', 100000, 2, zt_words(100000, 2));
SELECT id, enc, pg_column_compression(body),
	   pg_column_toast_chunk_id(body) IS NOT NULL AS external,
	   body = zt_words(len, seed) AS same,
	   substr(body, 500, 20) = substr(zt_words(len, seed), 500, 20) AS slice,
	   left(body, 3000) = left(zt_words(len, seed), 3000) AS left_3000
FROM zt_enc ORDER BY id;
-- the same value takes one byte more, the method byte
SELECT l.len, pg_column_size(e.body) - pg_column_size(l.body) AS extra_bytes
FROM zt_enc l JOIN zt_enc e ON e.seed = l.seed AND e.enc = 'extended'
WHERE l.enc = 'legacy' ORDER BY l.len;
SELECT pgstrata_toast_legacy_values('zt_enc');
-- a value copied as it is keeps its encoding
CREATE TABLE zt_enc_copy AS SELECT * FROM zt_enc WHERE id = 1;
SELECT pgstrata_toast_legacy_values('zt_enc_copy');
-- the function wants a table, and the right to read it
SELECT pgstrata_toast_legacy_values('zt_enc_pkey');
CREATE ROLE zt_nobody;
SET ROLE zt_nobody;
SELECT pgstrata_toast_legacy_values('zt_enc');
RESET ROLE;
DROP ROLE zt_nobody;

-- Whatever compresses a value anew writes the extended header: an UPDATE
-- that changes it, VACUUM FULL, CLUSTER, and ALTER TABLE with a rewrite,
-- in line and external, in rows short and long; the values stay the same.
SELECT md5(string_agg(body, ',' ORDER BY id)) AS enc_digest FROM zt_enc \gset
UPDATE zt_enc SET body = body WHERE id = 2;		-- unchanged: kept as it is
SELECT pgstrata_toast_legacy_values('zt_enc');
UPDATE zt_enc SET body = body || '' WHERE id = 2;
SELECT pgstrata_toast_legacy_values('zt_enc');
VACUUM FULL zt_enc;
SELECT pgstrata_toast_legacy_values('zt_enc');
SELECT md5(string_agg(body, ',' ORDER BY id)) = :'enc_digest' AS same FROM zt_enc;
-- make all four legacy again, then CLUSTER
SET toast_zstd_debug_legacy_encoding = on;
UPDATE zt_enc SET body = body || '';
RESET toast_zstd_debug_legacy_encoding;
SELECT pgstrata_toast_legacy_values('zt_enc');
CLUSTER zt_enc USING zt_enc_pkey;
SELECT pgstrata_toast_legacy_values('zt_enc');
SELECT md5(string_agg(body, ',' ORDER BY id)) = :'enc_digest' AS same FROM zt_enc;
-- and ALTER TABLE ... SET COMPRESSION with a rewrite
SET toast_zstd_debug_legacy_encoding = on;
UPDATE zt_enc SET body = body || '';
RESET toast_zstd_debug_legacy_encoding;
SELECT pgstrata_toast_legacy_values('zt_enc');
ALTER TABLE zt_enc ALTER COLUMN body SET COMPRESSION zstd,
	ALTER COLUMN seed TYPE bigint;
SELECT pgstrata_toast_legacy_values('zt_enc');
SELECT id, pg_column_compression(body), body = zt_words(len, seed::int) AS same
FROM zt_enc ORDER BY id;

DROP TABLE zt_cols, zt_rt, zt_json, zt_mix, zt_copy, zt_ctas, zt_alter,
	zt_level, zt_incompressible, zt_index, zt_enc, zt_enc_copy;
DROP FUNCTION zt_text, zt_words, zt_random;
