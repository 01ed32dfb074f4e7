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
#include "catalog/pg_inherits.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "nodes/plannodes.h"
#include "parser/analyze.h"
#include "parser/parsetree.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "refdata.h"

static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;
static post_parse_analyze_hook_type prev_post_parse_analyze = NULL;

/*
 * What the post-parse-analysis hook does with a refdata write target: lock
 * it and record ExclusiveLock in its range table entry (a statement about
 * to run), only record the mode (PREPARE: the lock comes when the prepared
 * statement runs, from the plan cache), or nothing (EXPLAIN without
 * ANALYZE, which runs nothing).
 */
typedef enum RefdataParseAction
{
	REFDATA_PARSE_LOCK,
	REFDATA_PARSE_MARK,
	REFDATA_PARSE_IGNORE,
} RefdataParseAction;

static RefdataParseAction refdata_parse_action = REFDATA_PARSE_LOCK;

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
 * Partitioned trees.  Writers of a partitioned tree that holds refdata
 * tables serialize on one lock: ExclusiveLock on the partitioned table the
 * statement names (the root of what it writes), taken before any partition
 * is locked.  The alternatives deadlock where heap does not:
 *
 * - Locking each leaf when tuple routing opens it (RowExclusiveLock, then
 *   ExclusiveLock at the first row) is a lock upgrade: two writers that
 *   both opened the leaf (a BEFORE ROW trigger is enough of a window) wait
 *   for each other.
 * - Taking ExclusiveLock on the leaves one by one, even at once, still
 *   deadlocks two INSERT ... SELECT routed to the leaves in different
 *   orders, and a writer that holds one leaf against a foreign-key checker
 *   that holds RowShareLock on another and goes on to check a row there.
 *
 * Every foreign-key check against a partitioned table holds RowShareLock
 * on the partitioned table itself (the check names it, not a partition), so
 * ExclusiveLock there waits for open checkers of any partition and keeps new
 * ones out, and the leaves are locked by a writer that already owns the
 * tree.  The leaves still get ExclusiveLock when a row is written to them
 * (refdata_lock_for_write): that, not the tree lock, is what makes skipping
 * row locks safe, since a foreign key may also reference a partition
 * directly.
 *
 * The cost is that writers of different partitions serialize too, and a
 * writer waits for checkers of every partition: the tree behaves as one
 * refdata table.  Writers that name different levels of one tree (the
 * root, a sub-partitioned table, a leaf) serialize on the leaves only.
 *
 * The tree lock is taken by this module's hooks, which are installed when
 * the module is loaded.  Opening a plain refdata table loads it (its
 * relcache entry calls the access method's handler) while the parser opens
 * the target, in time; so does opening a partitioned table declared USING
 * refdata, whose entry calls the handler too in pgstrata (patch 0034).  A
 * partitioned table that names no access method does not, so a session
 * whose first write goes to such a tree loads the module only when tuple
 * routing opens a leaf, and that statement locks as before.  Hence the
 * documentation's advice to declare partitioned refdata tables USING
 * refdata, or to preload the module.
 */

/*
 * Partitioned tables known to hold (or not) refdata tables, so that writes
 * to partitioned heap tables do not walk pg_inherits every time.  Emptied
 * whenever a relcache invalidation arrives (refdata_forget_trees), which is
 * what ATTACH / DETACH PARTITION and SET ACCESS METHOD send.
 */
typedef struct RefdataTreeEntry
{
	Oid			relid;			/* hash key: a partitioned table */
	bool		has_refdata;	/* it, or a partition at any level, is refdata */
} RefdataTreeEntry;

static HTAB *refdata_trees = NULL;

/* Forget what is known about partitioned trees (relcache callback). */
void
refdata_forget_trees(void)
{
	if (refdata_trees != NULL)
	{
		hash_destroy(refdata_trees);
		refdata_trees = NULL;
	}
}

/* Is the partitioned table relid, or any of its partitions, refdata? */
static bool
refdata_tree_has_refdata(Oid relid)
{
	RefdataTreeEntry *entry;

	if (refdata_is_refdata_relid(relid))
		return true;

	if (refdata_trees == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(RefdataTreeEntry);
		refdata_trees = hash_create("refdata partitioned trees", 16, &ctl,
									HASH_ELEM | HASH_BLOBS);
	}

	entry = hash_search(refdata_trees, &relid, HASH_FIND, NULL);
	if (entry == NULL)
	{
		List	   *members;
		ListCell   *lc;
		bool		has_refdata = false;

		/*
		 * No lock: a partition attached or detached meanwhile only makes this
		 * answer stale, and the writer then still takes each leaf's lock when
		 * it writes a row there, as before the tree lock existed.  The walk
		 * may process invalidations that empty the table, so the entry is
		 * made only afterwards.
		 */
		members = find_all_inheritors(relid, NoLock, NULL);
		foreach(lc, members)
		{
			if (refdata_is_refdata_relid(lfirst_oid(lc)))
			{
				has_refdata = true;
				break;
			}
		}
		list_free(members);

		if (refdata_trees == NULL)
			return has_refdata; /* emptied meanwhile: answer uncached */
		entry = hash_search(refdata_trees, &relid, HASH_ENTER, NULL);
		entry->has_refdata = has_refdata;
	}
	return entry->has_refdata;
}

/*
 * Does writing to relid need refdata's write lock up front?  A refdata table
 * does, and a partitioned table that holds one (see above).
 */
static bool
refdata_write_needs_lock(Oid relid, char relkind)
{
	if (relkind == RELKIND_RELATION)
		return refdata_is_refdata_relid(relid);
	if (relkind == RELKIND_PARTITIONED_TABLE)
		return refdata_tree_has_refdata(relid);
	return false;
}

/*
 * May the current user write relid?  Without the privilege the statement
 * fails its permission check later; taking a lock that blocks every
 * foreign-key checker first would let any user stall the table.  (Column
 * privileges alone also answer no; the lock then comes with the first row.)
 */
static bool
refdata_may_write(Oid relid)
{
	return pg_class_aclmask(relid, GetUserId(),
							ACL_INSERT | ACL_UPDATE | ACL_DELETE,
							ACLMASK_ANY) != 0;
}

/*
 * Does relid need ExclusiveLock ahead of the first row?  It does if it is a
 * refdata table or a partitioned tree holding one, and the current user may
 * write it.
 */
static bool
refdata_wants_early_lock(Oid relid, char relkind)
{
	return refdata_write_needs_lock(relid, relkind) && refdata_may_write(relid);
}

/*
 * Take ExclusiveLock on relid ahead of the first row if it wants it (see
 * above).  Returns whether it did.
 */
static bool
refdata_lock_early(Oid relid, char relkind)
{
	if (!refdata_wants_early_lock(relid, relkind))
		return false;
	LockRelationOid(relid, ExclusiveLock);
	return true;
}

/*
 * Take ExclusiveLock on the range table entry rti if it needs it.  An entry
 * that asks for ExclusiveLock or more already has it: the parser, the
 * planner or the plan cache took it.
 */
static void
refdata_lock_rte(PlannedStmt *stmt, Index rti)
{
	RangeTblEntry *rte = rt_fetch(rti, stmt->rtable);

	if (rte->rtekind == RTE_RELATION && rte->rellockmode < ExclusiveLock)
		(void) refdata_lock_early(rte->relid, rte->relkind);
}

/*
 * Take the write lock of every refdata table a statement modifies or locks
 * FOR (NO KEY) UPDATE, before the first row is touched.  Normally the
 * post-parse-analysis hook has taken it already (and the plan cache takes it
 * from the range table); this covers the targets that hook does not see,
 * such as the base table of an updatable view.  Partitioned targets come
 * first: the planner lists a tree's leaves before its root.
 */
static void
refdata_lock_plan_targets(PlannedStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->resultRelations)
	{
		Index		rti = lfirst_int(lc);

		if (rt_fetch(rti, stmt->rtable)->relkind == RELKIND_PARTITIONED_TABLE)
			refdata_lock_rte(stmt, rti);
	}
	foreach(lc, stmt->resultRelations)
	{
		Index		rti = lfirst_int(lc);

		if (rt_fetch(rti, stmt->rtable)->relkind != RELKIND_PARTITIONED_TABLE)
			refdata_lock_rte(stmt, rti);
	}

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

/*
 * Lock the target of a data-modifying Query and its modifying WITH queries
 * in ExclusiveLock mode, and record that mode in the range table entry.
 *
 * The parser has just taken RowExclusiveLock on the target, and nothing
 * else of the tree yet: taking ExclusiveLock now is the earliest an
 * extension can, and it comes before the planner locks any partition (it
 * locks them in the mode of the parent's entry, so with ExclusiveLock
 * they are never upgraded either).  With the mode in the entry, the plan
 * cache takes ExclusiveLock directly when it runs a cached plan again, so
 * prepared statements never upgrade a lock at all.
 */
static void
refdata_lock_query_target(Query *query)
{
	ListCell   *lc;

	foreach(lc, query->cteList)
	{
		CommonTableExpr *cte = lfirst_node(CommonTableExpr, lc);

		if (IsA(cte->ctequery, Query))
			refdata_lock_query_target((Query *) cte->ctequery);
	}

	if (query->resultRelation > 0 &&
		(query->commandType == CMD_INSERT ||
		 query->commandType == CMD_UPDATE ||
		 query->commandType == CMD_DELETE ||
		 query->commandType == CMD_MERGE))
	{
		RangeTblEntry *rte = rt_fetch(query->resultRelation, query->rtable);

		Assert(rte->rtekind == RTE_RELATION);
		if (rte->rellockmode < ExclusiveLock &&
			refdata_wants_early_lock(rte->relid, rte->relkind))
		{
			if (refdata_parse_action == REFDATA_PARSE_LOCK)
				LockRelationOid(rte->relid, ExclusiveLock);
			rte->rellockmode = ExclusiveLock;
		}
	}
}

/* post_parse_analyze hook: lock refdata write targets as parsed. */
static void
refdata_post_parse_analyze(ParseState *pstate, Query *query,
						   JumbleState *jstate)
{
	if (prev_post_parse_analyze)
		prev_post_parse_analyze(pstate, query, jstate);

	/* as in refdata_executor_start */
	if (refdata_parse_action != REFDATA_PARSE_IGNORE &&
		!XactReadOnly && !IsParallelWorker())
		refdata_lock_query_target(query);
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

/* Does an EXPLAIN statement run what it explains (ANALYZE)? */
static bool
refdata_explain_analyzes(ExplainStmt *stmt)
{
	bool		analyze = false;
	ListCell   *lc;

	/* the last ANALYZE option counts, as in ExplainQuery */
	foreach(lc, stmt->options)
	{
		DefElem    *opt = lfirst_node(DefElem, lc);

		if (strcmp(opt->defname, "analyze") == 0)
			analyze = defGetBoolean(opt);
	}
	return analyze;
}

/*
 * ProcessUtility hook: COPY FROM into a refdata table (or a partitioned tree
 * holding one) takes ExclusiveLock before COPY opens the table with
 * RowExclusiveLock, so that COPY never upgrades a lock and cannot deadlock
 * that way; EXPLAIN and PREPARE tell the post-parse-analysis hook not to
 * lock.
 */
static void
refdata_process_utility(PlannedStmt *pstmt, const char *queryString,
						bool readOnlyTree, ProcessUtilityContext context,
						ParamListInfo params, QueryEnvironment *queryEnv,
						DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	RefdataParseAction saved_action;

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
				(void) refdata_lock_early(relid, get_rel_relkind(relid));
		}
	}

	/*
	 * EXPLAIN runs the post-parse-analysis hook on the statement it explains,
	 * and PREPARE analyses the statement it prepares: tell the hook not to
	 * lock for a statement that does not run now.
	 */
	saved_action = refdata_parse_action;
	if (IsA(parsetree, ExplainStmt) &&
		!refdata_explain_analyzes((ExplainStmt *) parsetree))
		refdata_parse_action = REFDATA_PARSE_IGNORE;
	else if (IsA(parsetree, PrepareStmt))
		refdata_parse_action = REFDATA_PARSE_MARK;

	PG_TRY();
	{
		if (prev_ProcessUtility)
			prev_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
									params, queryEnv, dest, qc);
	}
	PG_FINALLY();
	{
		refdata_parse_action = saved_action;
	}
	PG_END_TRY();
}

/* Install the hooks (called once per backend, from _PG_init). */
void
refdata_install_hooks(void)
{
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = refdata_executor_start;
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = refdata_process_utility;
	prev_post_parse_analyze = post_parse_analyze_hook;
	post_parse_analyze_hook = refdata_post_parse_analyze;
}
