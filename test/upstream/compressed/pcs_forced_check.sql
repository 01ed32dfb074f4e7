--
-- pcs_forced_check: run by test/upstream/run-upstream-compressed.sh after
-- upstream's regression suite, in the database the suite used.  The suite
-- ran with pcs_debug_force_compression set, so every relation file of
-- this database (which pg_regress created with CREATE DATABASE, fork by
-- fork) and every file of pg_global created after initdb (a catalog
-- rewritten by VACUUM FULL, say) that holds data must start with the pcs
-- magic ("PCS1" 0xff 0xff 0xff 0x7f); a fork never extended is an empty
-- file in either format.  Fails if the suite stored its relations plain.
--
SHOW pcs_debug_force_compression;

-- the files that dropped relations leave behind go at the next checkpoint
CHECKPOINT;

CREATE TEMP TABLE pcs_files AS
SELECT dir || '/' || f AS path,
	   pg_read_binary_file(dir || '/' || f, 0, 8, true) AS head
FROM (SELECT 'base/' || oid AS dir FROM pg_database
	  WHERE datname = current_database()
	  UNION ALL SELECT 'global') AS d,
	 LATERAL pg_ls_dir(dir) AS f
WHERE f ~ '^[0-9]+(_(fsm|vm|init))?$'
  AND (dir <> 'global' OR substring(f from '^[0-9]+')::oid >= 16384);

-- many compressed files: a new database's catalogs alone are about 250
SELECT count(*) > 200 AS many_compressed
FROM pcs_files WHERE head = '\x50435331ffffff7f'::bytea;

-- no plain file holding data (an empty file is a fork with no blocks;
-- its first extension writes the header)
SELECT path, length(head) AS head_bytes
FROM pcs_files WHERE head IS DISTINCT FROM '\x50435331ffffff7f'::bytea
  AND length(head) > 0
ORDER BY path;

-- and the relations read back: a catalog, through the storage manager
SELECT count(*) > 0 AS catalog_readable FROM pg_class;
