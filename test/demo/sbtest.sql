--
-- sbtest.sql: a sysbench-style table (oltp_read_only's sbtest layout and
-- value pattern, 100,000 rows, the same in every database), for demo.sql.
--
CREATE TABLE sbtest1 (id serial PRIMARY KEY, k int NOT NULL DEFAULT 0,
	c char(120) NOT NULL DEFAULT '', pad char(60) NOT NULL DEFAULT '');
CREATE INDEX k_1 ON sbtest1 (k);
SELECT setseed(0.5);
INSERT INTO sbtest1 (k, c, pad)
SELECT (random() * 100000)::int,
	(SELECT string_agg(lpad((random() * 99999999999)::bigint::text, 11, '0'), '-')
	 FROM generate_series(1, 10) WHERE g > 0),
	(SELECT string_agg(lpad((random() * 99999999999)::bigint::text, 11, '0'), '-')
	 FROM generate_series(1, 5) WHERE g > 0)
FROM generate_series(1, 100000) g;
