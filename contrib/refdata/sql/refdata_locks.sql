--
-- refdata: which locks each command takes
--
CREATE EXTENSION refdata;
CREATE EXTENSION pageinspect;
CREATE TABLE parent (id int PRIMARY KEY, val text) USING refdata;
CREATE TABLE child (pid int REFERENCES parent);
INSERT INTO parent VALUES (1, 'one'), (2, 'two'), (3, 'three');
VACUUM (FREEZE) parent;

-- the table-level locks this session holds on parent
CREATE VIEW parent_locks AS
  SELECT mode FROM pg_locks
  WHERE pid = pg_backend_pid() AND locktype = 'relation'
    AND relation = 'parent'::regclass ORDER BY mode;
-- the xmax of every parent tuple, and what refdata_rowlocks() reports
CREATE VIEW parent_xmax AS
  SELECT lp, t_xmax, (t_infomask & 4096) <> 0 AS multi
  FROM heap_page_items(get_raw_page('parent', 0)) ORDER BY lp;
CREATE VIEW parent_rowlocks AS
  SELECT locked_row, multi, mode, locker = pg_current_xact_id()::xid AS mine
  FROM refdata_rowlocks('parent') ORDER BY locked_row, mode;

-- a foreign-key check: RowShareLock only, no row lock
BEGIN;
INSERT INTO child VALUES (1), (2);
SELECT * FROM parent_locks;
SELECT * FROM parent_xmax;
SELECT * FROM parent_rowlocks;
COMMIT;
SELECT * FROM parent_xmax;

-- explicit FOR KEY SHARE: the same
BEGIN;
SELECT id FROM parent WHERE id = 1 FOR KEY SHARE;
SELECT * FROM parent_locks;
SELECT * FROM parent_xmax;
COMMIT;

-- FOR SHARE is heap's row lock
BEGIN;
SELECT id FROM parent WHERE id = 1 FOR SHARE;
SELECT * FROM parent_locks;
SELECT * FROM parent_rowlocks;
-- a foreign-key check on a row we hold a lock mark on goes through heap
INSERT INTO child VALUES (1);
SELECT * FROM parent_rowlocks;
COMMIT;

-- FOR UPDATE and FOR NO KEY UPDATE are writes: ExclusiveLock
BEGIN;
SELECT id FROM parent WHERE id = 2 FOR UPDATE;
SELECT * FROM parent_locks;
SELECT * FROM parent_rowlocks;
ROLLBACK;
BEGIN;
SELECT id FROM parent WHERE id = 2 FOR NO KEY UPDATE;
SELECT * FROM parent_locks;
ROLLBACK;

-- every modification takes ExclusiveLock
BEGIN;
INSERT INTO parent VALUES (4, 'four');
SELECT * FROM parent_locks;
ROLLBACK;
BEGIN;
COPY parent FROM stdin;
5	five
\.
SELECT * FROM parent_locks;
ROLLBACK;
BEGIN;
UPDATE parent SET val = 'uno' WHERE id = 1;
SELECT * FROM parent_locks;
ROLLBACK;
BEGIN;
DELETE FROM parent WHERE id = 3;
SELECT * FROM parent_locks;
ROLLBACK;
BEGIN;
INSERT INTO parent VALUES (1, 'x') ON CONFLICT DO NOTHING;
SELECT * FROM parent_locks;
ROLLBACK;
BEGIN;
MERGE INTO parent p USING (VALUES (9)) v(id) ON p.id = v.id WHEN MATCHED THEN DELETE;
SELECT * FROM parent_locks;
ROLLBACK;
-- even when no row qualifies: the lock is taken when the statement starts
BEGIN;
UPDATE parent SET val = 'none' WHERE id = -1;
SELECT * FROM parent_locks;
ROLLBACK;
BEGIN;
WITH d AS (DELETE FROM parent WHERE id = -1 RETURNING id) SELECT count(*) FROM d;
SELECT * FROM parent_locks;
ROLLBACK;
-- from a function
CREATE FUNCTION add_parent(int) RETURNS void LANGUAGE plpgsql
  AS $$ BEGIN INSERT INTO parent VALUES ($1, 'f'); END $$;
BEGIN;
SELECT add_parent(6);
SELECT * FROM parent_locks;
ROLLBACK;

-- EXPLAIN without ANALYZE writes nothing and takes no ExclusiveLock
BEGIN;
EXPLAIN (COSTS OFF) UPDATE parent SET val = 'x';
SELECT * FROM parent_locks;
ROLLBACK;
-- a read-only transaction fails with its own error, not a lock wait
BEGIN READ ONLY;
INSERT INTO parent VALUES (7, 'seven');
ROLLBACK;

-- the documented way to serialize writers
BEGIN;
LOCK TABLE parent IN EXCLUSIVE MODE;
UPDATE parent SET val = 'eins' WHERE id = 1;
SELECT * FROM parent_locks;
COMMIT;

-- PREPARE takes no ExclusiveLock; a prepared statement run from the plan
-- cache takes it directly, never RowExclusiveLock first (no lock upgrade)
BEGIN;
PREPARE upd(int) AS UPDATE parent SET val = val WHERE id = $1;
SELECT * FROM parent_locks;
COMMIT;
SET plan_cache_mode = force_generic_plan;
EXECUTE upd(1);
BEGIN;
EXECUTE upd(2);
SELECT * FROM parent_locks;
COMMIT;
DEALLOCATE upd;
RESET plan_cache_mode;

-- a partitioned tree: writers lock the partitioned table they name in
-- ExclusiveLock before any partition, and the partitions they write too
CREATE TABLE tree (id int PRIMARY KEY, val text) PARTITION BY RANGE (id) USING refdata;
CREATE TABLE tree_1 PARTITION OF tree FOR VALUES FROM (0) TO (10);
CREATE TABLE tree_2 PARTITION OF tree FOR VALUES FROM (10) TO (20);
-- ... a heap tree with one refdata partition too
CREATE TABLE mixed (id int PRIMARY KEY) PARTITION BY RANGE (id);
CREATE TABLE mixed_heap PARTITION OF mixed FOR VALUES FROM (0) TO (10);
CREATE TABLE mixed_sub PARTITION OF mixed FOR VALUES FROM (10) TO (20) PARTITION BY RANGE (id);
CREATE TABLE mixed_ref PARTITION OF mixed_sub FOR VALUES FROM (10) TO (20) USING refdata;
-- ... and a heap tree, which refdata leaves alone
CREATE TABLE plain (id int PRIMARY KEY) PARTITION BY RANGE (id);
CREATE TABLE plain_1 PARTITION OF plain FOR VALUES FROM (0) TO (10);
CREATE VIEW tree_locks AS
  SELECT c.relname, l.mode FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
  WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation'
    AND c.relname ~ '^(tree|mixed|plain)' AND c.relkind IN ('r', 'p')
  ORDER BY c.relname, l.mode;
BEGIN;
INSERT INTO tree VALUES (1, 'one');
SELECT * FROM tree_locks;
COMMIT;
BEGIN;
UPDATE tree SET val = 'eins' WHERE id = 1;
SELECT * FROM tree_locks;
ROLLBACK;
BEGIN;
DELETE FROM tree WHERE id = -1;
SELECT * FROM tree_locks;
ROLLBACK;
BEGIN;
MERGE INTO tree t USING (VALUES (12)) v(id) ON t.id = v.id WHEN NOT MATCHED THEN INSERT VALUES (v.id, 'x');
SELECT * FROM tree_locks;
ROLLBACK;
BEGIN;
COPY tree FROM stdin;
13	thirteen
\.
SELECT * FROM tree_locks;
ROLLBACK;
BEGIN;
INSERT INTO mixed VALUES (11);
SELECT * FROM tree_locks;
ROLLBACK;
BEGIN;
INSERT INTO plain VALUES (1);
SELECT * FROM tree_locks;
ROLLBACK;
-- attaching a refdata partition makes a heap tree a refdata one
CREATE TABLE plain_2 (id int PRIMARY KEY) USING refdata;
ALTER TABLE plain ATTACH PARTITION plain_2 FOR VALUES FROM (10) TO (20);
BEGIN;
INSERT INTO plain VALUES (2);
SELECT * FROM tree_locks;
ROLLBACK;
-- a user who may not write the tree takes no ExclusiveLock on it
CREATE ROLE refdata_reader;
GRANT SELECT ON tree TO refdata_reader;
SET ROLE refdata_reader;
BEGIN;
INSERT INTO tree VALUES (2, 'two');
ROLLBACK;
RESET ROLE;
REVOKE SELECT ON tree FROM refdata_reader;
DROP ROLE refdata_reader;
DROP VIEW tree_locks;
DROP TABLE tree, mixed, plain;

CREATE EXTENSION amcheck;
SELECT * FROM verify_heapam('parent');
DROP EXTENSION amcheck;
SELECT * FROM parent ORDER BY id;
DROP VIEW parent_locks, parent_xmax, parent_rowlocks;
DROP FUNCTION add_parent(int);
DROP TABLE child, parent;
DROP EXTENSION refdata;
DROP EXTENSION pageinspect;
