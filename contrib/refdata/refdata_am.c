/*-------------------------------------------------------------------------
 *
 * refdata_am.c
 *	  The refdata table access method: heap storage with table-level write
 *	  locking, so that foreign-key checks need no row locks.
 *
 * The routine is a copy of heap's with a few callbacks wrapped:
 *
 * - every tuple modification first takes ExclusiveLock on the relation
 *   (refdata_lock.c explains why that makes skipping row locks safe);
 * - tuple_lock decides whether a KEY SHARE lock can be skipped;
 * - the index-build scans run heap's code with heap's routine in place,
 *   because heap_getnext() refuses any routine pointer but heap's own;
 * - the TOAST table of a refdata table is a plain heap table.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * contrib/refdata/refdata_am.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "catalog/pg_am_d.h"
#include "nodes/execnodes.h"
#include "commands/defrem.h"
#include "fmgr.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"

#include "refdata.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(refdata_handler);

const TableAmRoutine *refdata_heap = NULL;
static TableAmRoutine refdata_routine;
static bool refdata_routine_ready = false;

static void refdata_relcache_callback(Datum arg, Oid relid);

/* Module load: install the hooks and the relcache callback. */
void
_PG_init(void)
{
	refdata_install_hooks();
	CacheRegisterRelcacheCallback(refdata_relcache_callback, (Datum) 0);
}

/* Is relid a relation (of any kind) whose access method is refdata? */
bool
refdata_is_refdata_relid(Oid relid)
{
	Oid			relam = get_rel_relam(relid);

	if (!OidIsValid(relam) || relam == HEAP_TABLE_AM_OID)
		return false;
	return relam == get_am_oid("refdata", true);
}

/* Is rel an open refdata table? */
bool
refdata_is_refdata_rel(Relation rel)
{
	return rel->rd_tableam == &refdata_routine;
}

/* tuple_insert: heap's, under the table's ExclusiveLock. */
static void
refdata_tuple_insert(Relation rel, TupleTableSlot *slot, CommandId cid,
					 int options, BulkInsertState bistate)
{
	refdata_lock_for_write(rel);
	refdata_heap->tuple_insert(rel, slot, cid, options, bistate);
}

/* tuple_insert_speculative (INSERT ... ON CONFLICT): heap's, locked. */
static void
refdata_tuple_insert_speculative(Relation rel, TupleTableSlot *slot,
								 CommandId cid, int options,
								 BulkInsertState bistate, uint32 specToken)
{
	refdata_lock_for_write(rel);
	refdata_heap->tuple_insert_speculative(rel, slot, cid, options, bistate,
										   specToken);
}

/* multi_insert (COPY FROM): heap's, locked. */
static void
refdata_multi_insert(Relation rel, TupleTableSlot **slots, int ntuples,
					 CommandId cid, int options, BulkInsertState bistate)
{
	refdata_lock_for_write(rel);
	refdata_heap->multi_insert(rel, slots, ntuples, cid, options, bistate);
}

/* tuple_delete: heap's, locked. */
static TM_Result
refdata_tuple_delete(Relation rel, ItemPointer tid, CommandId cid,
					 Snapshot snapshot, Snapshot crosscheck, bool wait,
					 TM_FailureData *tmfd, bool changingPart)
{
	refdata_lock_for_write(rel);
	return refdata_heap->tuple_delete(rel, tid, cid, snapshot, crosscheck,
									  wait, tmfd, changingPart);
}

/* tuple_update: heap's, locked. */
static TM_Result
refdata_tuple_update(Relation rel, ItemPointer otid, TupleTableSlot *slot,
					 CommandId cid, Snapshot snapshot, Snapshot crosscheck,
					 bool wait, TM_FailureData *tmfd,
					 LockTupleMode *lockmode, TU_UpdateIndexes *update_indexes)
{
	refdata_lock_for_write(rel);
	return refdata_heap->tuple_update(rel, otid, slot, cid, snapshot,
									  crosscheck, wait, tmfd, lockmode,
									  update_indexes);
}

/*
 * relation_toast_am: TOAST data goes to a plain heap table.  Heap's callback
 * answers "the parent's AM", which would make the TOAST table refdata too;
 * TOAST tables are never referenced by foreign keys, and heap's TOAST code
 * expects heap there.
 */
static Oid
refdata_relation_toast_am(Relation rel)
{
	return HEAP_TABLE_AM_OID;
}

/*
 * The relation whose relcache entry carries heap's routine while one of
 * heap's index-build scans runs on it (see below), or NULL.
 */
static Relation refdata_swapped_rel = NULL;

/*
 * Relcache invalidation callback.  Any invalidation may change which
 * partitioned trees hold refdata tables, so forget them.  And if the swapped
 * entry was rebuilt (a GRANT on the table during CREATE INDEX is enough),
 * its rd_tableam is refdata's again; put heap's back, or heap_getnext()
 * would fail mid-scan.  Rebuilds keep the entry at the same address, so the
 * pointer stays valid.
 */
static void
refdata_relcache_callback(Datum arg, Oid relid)
{
	refdata_forget_trees();
	if (refdata_swapped_rel != NULL &&
		(!OidIsValid(relid) || relid == RelationGetRelid(refdata_swapped_rel)))
		refdata_swapped_rel->rd_tableam = refdata_heap;
}

/*
 * index_build_range_scan: heap's scan, run with heap's routine installed in
 * the relcache entry.  heap_getnext() (used by heap's index build code)
 * rejects scans of relations whose rd_tableam is not heap's own routine
 * pointer; since the on-disk format is heap's, running heap's code on the
 * relation is exactly right.  The entry is put back whatever happens.
 */
static double
refdata_index_build_range_scan(Relation table_rel, Relation index_rel,
							   IndexInfo *index_info, bool allow_sync,
							   bool anyvisible, bool progress,
							   BlockNumber start_blockno,
							   BlockNumber numblocks,
							   IndexBuildCallback callback,
							   void *callback_state, TableScanDesc scan)
{
	const TableAmRoutine *saved = table_rel->rd_tableam;
	Relation	saved_swapped = refdata_swapped_rel;
	double		result;

	table_rel->rd_tableam = refdata_heap;
	refdata_swapped_rel = table_rel;
	PG_TRY();
	{
		result = refdata_heap->index_build_range_scan(table_rel, index_rel,
													  index_info, allow_sync,
													  anyvisible, progress,
													  start_blockno, numblocks,
													  callback, callback_state,
													  scan);
	}
	PG_FINALLY();
	{
		refdata_swapped_rel = saved_swapped;
		table_rel->rd_tableam = saved;
	}
	PG_END_TRY();

	return result;
}

/* index_validate_scan (CREATE INDEX CONCURRENTLY): as above. */
static void
refdata_index_validate_scan(Relation table_rel, Relation index_rel,
							IndexInfo *index_info, Snapshot snapshot,
							ValidateIndexState *state)
{
	const TableAmRoutine *saved = table_rel->rd_tableam;
	Relation	saved_swapped = refdata_swapped_rel;

	table_rel->rd_tableam = refdata_heap;
	refdata_swapped_rel = table_rel;
	PG_TRY();
	{
		refdata_heap->index_validate_scan(table_rel, index_rel, index_info,
										  snapshot, state);
	}
	PG_FINALLY();
	{
		refdata_swapped_rel = saved_swapped;
		table_rel->rd_tableam = saved;
	}
	PG_END_TRY();
}

/* Build the routine once: heap's, with refdata's callbacks in place. */
static void
refdata_init_routine(void)
{
	refdata_heap = GetHeapamTableAmRoutine();
	memcpy(&refdata_routine, refdata_heap, sizeof(TableAmRoutine));

	refdata_routine.tuple_insert = refdata_tuple_insert;
	refdata_routine.tuple_insert_speculative = refdata_tuple_insert_speculative;
	refdata_routine.multi_insert = refdata_multi_insert;
	refdata_routine.tuple_delete = refdata_tuple_delete;
	refdata_routine.tuple_update = refdata_tuple_update;
	refdata_routine.tuple_lock = refdata_tuple_lock;
	refdata_routine.relation_toast_am = refdata_relation_toast_am;
	refdata_routine.index_build_range_scan = refdata_index_build_range_scan;
	refdata_routine.index_validate_scan = refdata_index_validate_scan;

	refdata_routine_ready = true;
}

/* The access method handler named by CREATE ACCESS METHOD refdata. */
Datum
refdata_handler(PG_FUNCTION_ARGS)
{
	if (!refdata_routine_ready)
		refdata_init_routine();
	PG_RETURN_POINTER(&refdata_routine);
}
