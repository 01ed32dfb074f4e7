--
-- refdata: errors, and tools that refuse non-heap tables
--
-- without the extension there is no such access method
CREATE TABLE early (id int) USING refdata;
CREATE EXTENSION refdata;
CREATE TABLE ref (id int PRIMARY KEY) USING refdata;
CREATE TABLE plain (id int PRIMARY KEY);
INSERT INTO ref VALUES (1);

-- the inspection function wants a refdata table
SELECT * FROM refdata_rowlocks('plain');
CREATE VIEW v AS SELECT * FROM ref;
SELECT * FROM refdata_rowlocks('v');
CREATE TABLE part (id int) PARTITION BY RANGE (id) USING refdata;
SELECT * FROM refdata_rowlocks('part');
SELECT * FROM refdata_rowlocks(NULL);

-- refdata_rowlocks() needs SELECT on the table (or pg_stat_scan_tables)
CREATE ROLE refdata_reader;
GRANT SELECT ON ref TO refdata_reader;
SET ROLE refdata_reader;
SELECT * FROM refdata_rowlocks('ref');
SELECT * FROM refdata_rowlocks('plain');
RESET ROLE;
REVOKE SELECT ON ref FROM refdata_reader;
SET ROLE refdata_reader;
SELECT * FROM refdata_rowlocks('ref');
RESET ROLE;


-- pgrowlocks refuses refdata tables (use refdata_rowlocks); amcheck's
-- verify_heapam checks them, as they store heap pages, but not a
-- partitioned table
CREATE EXTENSION pgrowlocks;
SELECT * FROM pgrowlocks('ref');
CREATE EXTENSION amcheck;
SELECT * FROM verify_heapam('ref');
SELECT * FROM verify_heapam('part');

-- a non-superuser cannot create the access method by hand
CREATE ROLE refdata_user;
SET ROLE refdata_user;
CREATE ACCESS METHOD refdata2 TYPE TABLE HANDLER refdata_handler;
RESET ROLE;

-- a refdata table cannot be dropped with the extension implicitly
DROP EXTENSION refdata;

DROP EXTENSION pgrowlocks;
DROP EXTENSION amcheck;
DROP VIEW v;
DROP TABLE ref, plain, part;
DROP ROLE refdata_reader, refdata_user;
DROP EXTENSION refdata;
