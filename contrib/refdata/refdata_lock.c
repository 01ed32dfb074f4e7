/*-------------------------------------------------------------------------
 *
 * refdata_lock.c
 *	  Locking of the refdata access method: table-level write locks, and
 *	  KEY SHARE row locks that are skipped whenever that is safe.
 *
 * Why skipping is safe.  Every modification of a refdata table (and every
 * SELECT ... FOR UPDATE / FOR NO KEY UPDATE) first takes ExclusiveLock on
 * the table.  A foreign-key check, like any SELECT ... FOR KEY SHARE, holds
 * RowShareLock on the table until its transaction ends, and ExclusiveLock
 * conflicts with RowShareLock.  So once a key-share locker sees a tuple that
 * is the current version, nobody can delete it or change its key before the
 * locker commits, which is all a KEY SHARE row lock would have guaranteed.
 * Skipping it saves the xmax write, the dirtied page, the WAL record and,
 * with several lockers, the MultiXact.
 *
 * Why skipping is not always safe.  Table locks only order the transactions
 * that overlap.  In REPEATABLE READ and SERIALIZABLE the check runs with the
 * transaction's snapshot, which may predate a writer that deleted the row or
 * changed it and has committed since; heap then reports a serialization
 * failure.  A tuple that is not current, or that carries marks the locker
 * cannot ignore, is therefore handed to heap's own tuple_lock, which gives
 * exactly heap's answer (and may write a row lock).
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * contrib/refdata/refdata_lock.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/multixact.h"
#include "access/parallel.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
#include "parser/parsetree.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/rel.h"

#include "refdata.h"

static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/* Take the table-level write lock of a refdata table, if not yet held. */
void
refdata_lock_for_write(Relation rel)
{
	/*
	 * Held already (by this statement, an earlier one, LOCK TABLE, or a
	 * stronger lock such as the rewrite of ALTER TABLE): nothing to do.
	 */
	if (CheckRelationLockedByMe(rel, ExclusiveLock, true))
		return;
	LockRelationOid(RelationGetRelid(rel), ExclusiveLock);
}

/*
 * Take the write lock for SELECT ... FOR UPDATE / FOR NO KEY UPDATE,
 * honouring NOWAIT and SKIP LOCKED: what they promise for the row must hold
 * for the table lock that stands in for it.  Returns false if the row is to
 * be skipped.
 */
static bool
refdata_lock_for_row_mark(Relation rel, LockWaitPolicy wait_policy)
{
	if (wait_policy == LockWaitBlock ||
		CheckRelationLockedByMe(rel, ExclusiveLock, true))
	{
		refdata_lock_for_write(rel);
		return true;
	}
	if (ConditionalLockRelationOid(RelationGetRelid(rel), ExclusiveLock))
		return true;
	if (wait_policy == LockWaitSkip)
		return false;
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("could not obtain lock on row in relation \"%s\"",
					RelationGetRelationName(rel)),
			 errdetail("Locking a row of refdata table \"%s\" FOR UPDATE or FOR NO KEY UPDATE needs an ExclusiveLock on the table, which another transaction's lock conflicts with.",
					   RelationGetRelationName(rel))));
	return false;				/* keep the compiler quiet */
}

/*
 * Can a lock-only xmax be ignored by a KEY SHARE locker?  Only if it belongs
 * to other transactions and does not conflict with KEY SHARE.  Our own marks
 * go to heap, which knows how to combine them (subtransactions included).
 */
static bool
refdata_lock_marks_ignorable(HeapTupleHeader tup)
{
	uint16		infomask = tup->t_infomask;
	TransactionId xmax = HeapTupleHeaderGetRawXmax(tup);

	if (!HEAP_XMAX_IS_LOCKED_ONLY(infomask))
		return false;

	if (infomask & HEAP_XMAX_IS_MULTI)
	{
		MultiXactMember *members;
		int			nmembers;
		bool		ok = true;

		nmembers = GetMultiXactIdMembers(xmax, &members, false, true);
		for (int i = 0; i < nmembers; i++)
		{
			if (TransactionIdIsCurrentTransactionId(members[i].xid) ||
				(members[i].status != MultiXactStatusForKeyShare &&
				 members[i].status != MultiXactStatusForShare))
			{
				ok = false;
				break;
			}
		}
		if (nmembers > 0)
			pfree(members);
		return ok;
	}

	if (TransactionIdIsCurrentTransactionId(xmax))
		return false;
	return HEAP_XMAX_IS_KEYSHR_LOCKED(infomask) ||
		HEAP_XMAX_IS_SHR_LOCKED(infomask);
}

/*
 * Try to satisfy a KEY SHARE lock without writing anything.  Returns true
 * and fills the slot (keeping the buffer pin) when the tuple at tid is
 * current, or is current but for lock-only marks we may ignore; returns
 * false when heap must decide.
 */
static bool
refdata_try_skip_key_share(Relation rel, ItemPointer tid,
						   TupleTableSlot *slot, CommandId cid)
{
	BufferHeapTupleTableSlot *bslot = (BufferHeapTupleTableSlot *) slot;
	HeapTuple	tuple = &bslot->base.tupdata;
	Buffer		buffer;
	Page		page;
	OffsetNumber offnum = ItemPointerGetOffsetNumber(tid);
	ItemId		lp;
	TM_Result	res;
	bool		skip;

	Assert(TTS_IS_BUFFERTUPLE(slot));

	buffer = ReadBuffer(rel, ItemPointerGetBlockNumber(tid));
	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buffer);

	/* Anything unusual (a dead or redirected item): let heap say what. */
	if (offnum < FirstOffsetNumber || offnum > PageGetMaxOffsetNumber(page))
	{
		UnlockReleaseBuffer(buffer);
		return false;
	}
	lp = PageGetItemId(page, offnum);
	if (!ItemIdIsNormal(lp))
	{
		UnlockReleaseBuffer(buffer);
		return false;
	}

	tuple->t_data = (HeapTupleHeader) PageGetItem(page, lp);
	tuple->t_len = ItemIdGetLength(lp);
	tuple->t_tableOid = RelationGetRelid(rel);
	tuple->t_self = *tid;

	/*
	 * The same test heap_lock_tuple() starts with.  TM_Ok: no updater or
	 * deleter and no live locker, the tuple can be locked as it is.
	 */
	res = HeapTupleSatisfiesUpdate(tuple, cid, buffer);
	if (res == TM_Ok)
		skip = true;
	else if (res == TM_BeingModified)
		skip = refdata_lock_marks_ignorable(tuple->t_data);
	else
		skip = false;

	LockBuffer(buffer, BUFFER_LOCK_UNLOCK);

	if (!skip)
	{
		ReleaseBuffer(buffer);
		return false;
	}

	/*
	 * The pin keeps the tuple where it is after the content lock is gone, as
	 * in heap's own tuple_lock; the slot takes over the pin.
	 */
	ExecStorePinnedBufferHeapTuple(tuple, slot, buffer);
	return true;
}

/*
 * tuple_lock: KEY SHARE is skipped when safe (see the file header);
 * FOR UPDATE and FOR NO KEY UPDATE are modifications and take the table's
 * ExclusiveLock first; everything else is heap's.
 */
TM_Result
refdata_tuple_lock(Relation rel, ItemPointer tid, Snapshot snapshot,
				   TupleTableSlot *slot, CommandId cid, LockTupleMode mode,
				   LockWaitPolicy wait_policy, uint8 flags,
				   TM_FailureData *tmfd)
{
	if (mode == LockTupleKeyShare)
	{
		tmfd->traversed = false;
		if (refdata_try_skip_key_share(rel, tid, slot, cid))
			return TM_Ok;
	}
	else if (mode == LockTupleNoKeyExclusive || mode == LockTupleExclusive)
	{
		if (!refdata_lock_for_row_mark(rel, wait_policy))
			return TM_WouldBlock;	/* SKIP LOCKED: skip the row */
	}

	return refdata_heap->tuple_lock(rel, tid, snapshot, slot, cid, mode,
									wait_policy, flags, tmfd);
}

/*
 * Take ExclusiveLock on relid ahead of the first row, if it is a refdata
 * table the current user may write.  Without the privilege the statement
 * fails its permission check later; taking a lock that blocks every
 * foreign-key checker first would let any user stall the table.  (Column
 * privileges alone also skip this; the lock then comes with the first row.)
 */
static void
refdata_lock_early(Oid relid)
{
	if (!refdata_is_refdata_relid(relid))
		return;
	if (pg_class_aclmask(relid, GetUserId(),
						 ACL_INSERT | ACL_UPDATE | ACL_DELETE,
						 ACLMASK_ANY) == 0)
		return;
	LockRelationOid(relid, ExclusiveLock);
}

/* Take ExclusiveLock on the range table entry rti if it is refdata. */
static void
refdata_lock_rte(PlannedStmt *stmt, Index rti)
{
	RangeTblEntry *rte = rt_fetch(rti, stmt->rtable);

	if (rte->rtekind == RTE_RELATION && rte->relkind == RELKIND_RELATION)
		refdata_lock_early(rte->relid);
}

/*
 * Take the write lock of every refdata table a statement modifies or locks
 * FOR (NO KEY) UPDATE, before the first row is touched.  The parser has
 * taken RowExclusiveLock (or RowShareLock) already, so this is a lock
 * upgrade; doing it here rather than at the first row narrows the window in
 * which two writers can each hold the weak lock and wait for the other.
 */
static void
refdata_lock_plan_targets(PlannedStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->resultRelations)
		refdata_lock_rte(stmt, lfirst_int(lc));

	foreach(lc, stmt->rowMarks)
	{
		PlanRowMark *rc = lfirst_node(PlanRowMark, lc);

		/*
		 * NOWAIT and SKIP LOCKED must not wait here; tuple_lock takes the
		 * lock conditionally when it gets to a row.
		 */
		if ((rc->markType == ROW_MARK_EXCLUSIVE ||
			 rc->markType == ROW_MARK_NOKEYEXCLUSIVE) &&
			rc->waitPolicy == LockWaitBlock)
			refdata_lock_rte(stmt, rc->rti);
	}
}

/* ExecutorStart hook: lock refdata write targets, then start as usual. */
static void
refdata_executor_start(QueryDesc *queryDesc, int eflags)
{
	/*
	 * A read-only transaction (a standby's included) fails later anyway if
	 * the statement writes; taking ExclusiveLock first would only make it
	 * wait, or fail with the wrong error.  Parallel workers run plans that do
	 * not write.
	 */
	if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0 && !XactReadOnly &&
		!IsParallelWorker())
		refdata_lock_plan_targets(queryDesc->plannedstmt);

	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

/*
 * ProcessUtility hook: COPY FROM into a refdata table takes ExclusiveLock
 * before COPY opens the table with RowExclusiveLock, so that COPY, unlike
 * DML, never upgrades a lock and cannot deadlock that way.
 */
static void
refdata_process_utility(PlannedStmt *pstmt, const char *queryString,
						bool readOnlyTree, ProcessUtilityContext context,
						ParamListInfo params, QueryEnvironment *queryEnv,
						DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;

	if (IsA(parsetree, CopyStmt) && !XactReadOnly)
	{
		CopyStmt   *copy = (CopyStmt *) parsetree;

		if (copy->is_from && copy->relation != NULL)
		{
			/*
			 * Look up without a lock: if the name changes meaning before COPY
			 * looks it up again, we merely hold a lock we did not need.
			 */
			Oid			relid = RangeVarGetRelid(copy->relation, NoLock, true);

			if (OidIsValid(relid))
				refdata_lock_early(relid);
		}
	}

	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context,
							params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
}

/* Install the hooks (called once per backend, from _PG_init). */
void
refdata_install_hooks(void)
{
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = refdata_executor_start;
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = refdata_process_utility;
}
