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

SELECT * FROM refdata_verify('parent');
SELECT * FROM parent ORDER BY id;
DROP VIEW parent_locks, parent_xmax, parent_rowlocks;
DROP FUNCTION add_parent(int);
DROP TABLE child, parent;
DROP EXTENSION refdata;
DROP EXTENSION pageinspect;
