--
-- refdata: errors, and tools that refuse non-heap tables
--
-- without the extension there is no such access method
CREATE TABLE early (id int) USING refdata;
CREATE EXTENSION refdata;
CREATE TABLE ref (id int PRIMARY KEY) USING refdata;
CREATE TABLE plain (id int PRIMARY KEY);
INSERT INTO ref VALUES (1);

-- the inspection functions want a refdata table
SELECT * FROM refdata_rowlocks('plain');
SELECT * FROM refdata_verify('plain');
CREATE VIEW v AS SELECT * FROM ref;
SELECT * FROM refdata_rowlocks('v');
CREATE TABLE part (id int) PARTITION BY RANGE (id) USING refdata;
SELECT * FROM refdata_verify('part');
SELECT * FROM refdata_rowlocks(NULL);

-- refdata_verify() is for superusers and whom they grant it to
CREATE ROLE refdata_reader;
GRANT SELECT ON ref TO refdata_reader;
SET ROLE refdata_reader;
SELECT * FROM refdata_verify('ref');
SELECT * FROM refdata_rowlocks('ref');
SELECT * FROM refdata_rowlocks('plain');
RESET ROLE;
REVOKE SELECT ON ref FROM refdata_reader;
SET ROLE refdata_reader;
SELECT * FROM refdata_rowlocks('ref');
RESET ROLE;


-- heap-only tools say so for refdata tables (use the functions above)
CREATE EXTENSION pgrowlocks;
SELECT * FROM pgrowlocks('ref');
CREATE EXTENSION amcheck;
SELECT * FROM verify_heapam('ref');

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
