/*-------------------------------------------------------------------------
 *
 * refdata_inspect.c
 *	  SQL functions that look inside a refdata table: its row locks (what
 *	  pgrowlocks shows for heap) and a structural check (a focused subset
 *	  of amcheck's verify_heapam).  Both tools refuse non-heap tables, so
 *	  refdata brings its own.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * contrib/refdata/refdata_inspect.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/multixact.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_authid_d.h"
#include "catalog/pg_type_d.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "refdata.h"

PG_FUNCTION_INFO_V1(refdata_rowlocks);
PG_FUNCTION_INFO_V1(refdata_verify);

static void refdata_put_problem(ReturnSetInfo *rsinfo, BlockNumber blkno,
								OffsetNumber off, const char *fmt,...)
			pg_attribute_printf(4, 5);

/* Read block blkno of rel and share-lock it; the caller unlocks *buffer */
static Page
refdata_share_lock_page(Relation rel, BlockNumber blkno,
						BufferAccessStrategy bstrategy, Buffer *buffer)
{
	CHECK_FOR_INTERRUPTS();
	*buffer = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL,
								 bstrategy);
	LockBuffer(*buffer, BUFFER_LOCK_SHARE);
	return BufferGetPage(*buffer);
}

/* Open relid for inspection; it must be a refdata table we may read. */
static Relation
refdata_open_for_inspection(Oid relid, LOCKMODE lockmode)
{
	Relation	rel = relation_open(relid, lockmode);
	AclResult	aclresult;

	if (rel->rd_rel->relkind != RELKIND_RELATION ||
		!refdata_is_refdata_rel(rel))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a refdata table",
						RelationGetRelationName(rel)),
				 errhint("For heap tables, use pgrowlocks and amcheck's verify_heapam().")));

	aclresult = pg_class_aclcheck(relid, GetUserId(), ACL_SELECT);
	if (aclresult != ACLCHECK_OK &&
		!has_privs_of_role(GetUserId(), ROLE_PG_STAT_SCAN_TABLES))
		aclcheck_error(aclresult, get_relkind_objtype(rel->rd_rel->relkind),
					   RelationGetRelationName(rel));
	return rel;
}

/* The name of a MultiXact member's lock mode, as SQL spells it. */
static const char *
refdata_member_mode(MultiXactStatus status)
{
	switch (status)
	{
		case MultiXactStatusForKeyShare:
			return "For Key Share";
		case MultiXactStatusForShare:
			return "For Share";
		case MultiXactStatusForNoKeyUpdate:
			return "For No Key Update";
		case MultiXactStatusForUpdate:
			return "For Update";
		case MultiXactStatusNoKeyUpdate:
			return "No Key Update";
		case MultiXactStatusUpdate:
			return "Update";
	}
	return "unknown";
}

/* The lock mode of a plain (not MultiXact) xmax, from the infomask. */
static const char *
refdata_xmax_mode(uint16 infomask, uint16 infomask2)
{
	if (HEAP_XMAX_IS_LOCKED_ONLY(infomask))
	{
		if (HEAP_XMAX_IS_KEYSHR_LOCKED(infomask))
			return "For Key Share";
		if (HEAP_XMAX_IS_SHR_LOCKED(infomask))
			return "For Share";
		if (infomask2 & HEAP_KEYS_UPDATED)
			return "For Update";
		return "For No Key Update";
	}
	return (infomask2 & HEAP_KEYS_UPDATED) ? "Update" : "No Key Update";
}

/* Emit one row of refdata_rowlocks(). */
static void
refdata_put_lock(ReturnSetInfo *rsinfo, ItemPointer tid, TransactionId xmax,
				 bool multi, TransactionId locker, const char *mode)
{
	Datum		values[5];
	bool		nulls[5] = {false};

	values[0] = ItemPointerGetDatum(tid);
	values[1] = TransactionIdGetDatum(xmax);
	values[2] = BoolGetDatum(multi);
	values[3] = TransactionIdGetDatum(locker);
	values[4] = CStringGetTextDatum(mode);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * refdata_rowlocks(regclass): the row locks and modifications in progress
 * on a refdata table, one row per tuple and locker, as pgrowlocks reports
 * them for heap.  With refdata, foreign-key checks normally leave none.
 */
Datum
refdata_rowlocks(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel;
	BlockNumber nblocks;
	BufferAccessStrategy bstrategy = GetAccessStrategy(BAS_BULKREAD);

	InitMaterializedSRF(fcinfo, 0);
	rel = refdata_open_for_inspection(relid, AccessShareLock);
	nblocks = RelationGetNumberOfBlocks(rel);

	for (BlockNumber blkno = 0; blkno < nblocks; blkno++)
	{
		Buffer		buffer;
		Page		page = refdata_share_lock_page(rel, blkno, bstrategy,
												   &buffer);
		OffsetNumber maxoff;

		maxoff = PageGetMaxOffsetNumber(page);

		for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
		{
			ItemId		lp = PageGetItemId(page, off);
			HeapTupleData tuple;
			TransactionId xmax;

			if (!ItemIdIsNormal(lp))
				continue;
			tuple.t_data = (HeapTupleHeader) PageGetItem(page, lp);
			tuple.t_len = ItemIdGetLength(lp);
			tuple.t_tableOid = relid;
			ItemPointerSet(&tuple.t_self, blkno, off);

			/* Only live lockers and writers in progress, like pgrowlocks. */
			if (HeapTupleSatisfiesUpdate(&tuple, GetCurrentCommandId(false),
										 buffer) != TM_BeingModified)
				continue;

			xmax = HeapTupleHeaderGetRawXmax(tuple.t_data);
			if (tuple.t_data->t_infomask & HEAP_XMAX_IS_MULTI)
			{
				MultiXactMember *members;
				int			n;

				n = GetMultiXactIdMembers(xmax, &members, false,
										  HEAP_XMAX_IS_LOCKED_ONLY(tuple.t_data->t_infomask));
				for (int i = 0; i < n; i++)
					refdata_put_lock(rsinfo, &tuple.t_self, xmax, true,
									 members[i].xid,
									 refdata_member_mode(members[i].status));
				if (n > 0)
					pfree(members);
			}
			else
				refdata_put_lock(rsinfo, &tuple.t_self, xmax, false, xmax,
								 refdata_xmax_mode(tuple.t_data->t_infomask,
												   tuple.t_data->t_infomask2));
		}
		UnlockReleaseBuffer(buffer);
	}

	relation_close(rel, AccessShareLock);
	return (Datum) 0;
}

/* Emit one row of refdata_verify(). */
static void
refdata_put_problem(ReturnSetInfo *rsinfo, BlockNumber blkno,
					OffsetNumber off, const char *fmt,...)
{
	Datum		values[3];
	bool		nulls[3] = {false};
	StringInfoData buf;
	va_list		args;

	initStringInfo(&buf);
	for (;;)
	{
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&buf, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&buf, needed);
	}

	values[0] = Int64GetDatum((int64) blkno);
	values[1] = Int32GetDatum((int32) off);
	values[2] = CStringGetTextDatum(buf.data);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	pfree(buf.data);
}

/* Check one transaction id found in a tuple header against the table's horizon. */
static void
refdata_check_xid(ReturnSetInfo *rsinfo, BlockNumber blkno, OffsetNumber off,
				  const char *what, TransactionId xid,
				  TransactionId relfrozenxid, TransactionId nextxid)
{
	if (!TransactionIdIsNormal(xid))
		return;
	if (TransactionIdIsNormal(relfrozenxid) &&
		TransactionIdPrecedes(xid, relfrozenxid))
		refdata_put_problem(rsinfo, blkno, off,
							"%s %u precedes relation freeze threshold %u",
							what, xid, relfrozenxid);
	else if (TransactionIdFollowsOrEquals(xid, nextxid))
		refdata_put_problem(rsinfo, blkno, off,
							"%s %u equals or exceeds next valid transaction ID %u",
							what, xid, nextxid);
}

/* Check the tuple at (blkno, off); report what is wrong with it. */
static void
refdata_check_tuple(ReturnSetInfo *rsinfo, Relation rel, Page page,
					BlockNumber blkno, OffsetNumber off, ItemId lp,
					TransactionId nextxid)
{
	HeapTupleHeader tup;
	unsigned	len = ItemIdGetLength(lp);
	unsigned	lpoff = ItemIdGetOffset(lp);
	int			natts;
	unsigned	expected_hoff;
	uint16		infomask;

	if (lpoff != MAXALIGN(lpoff))
	{
		refdata_put_problem(rsinfo, blkno, off,
							"line pointer to page offset %u is not maximally aligned",
							lpoff);
		return;
	}
	if (len < MAXALIGN(SizeofHeapTupleHeader))
	{
		refdata_put_problem(rsinfo, blkno, off,
							"line pointer length %u is less than the minimum tuple header size %u",
							len, (unsigned) MAXALIGN(SizeofHeapTupleHeader));
		return;
	}
	if (lpoff + len > BLCKSZ ||
		lpoff < ((PageHeader) page)->pd_upper)
	{
		refdata_put_problem(rsinfo, blkno, off,
							"line pointer to page offset %u with length %u is outside the tuple space of the page",
							lpoff, len);
		return;
	}

	tup = (HeapTupleHeader) PageGetItem(page, lp);
	infomask = tup->t_infomask;
	natts = HeapTupleHeaderGetNatts(tup);

	if (natts > RelationGetNumberOfAttributes(rel))
		refdata_put_problem(rsinfo, blkno, off,
							"number of attributes %d exceeds maximum expected for table %d",
							natts, RelationGetNumberOfAttributes(rel));

	expected_hoff = (infomask & HEAP_HASNULL) ?
		MAXALIGN(SizeofHeapTupleHeader + BITMAPLEN(natts)) :
		MAXALIGN(SizeofHeapTupleHeader);
	if (tup->t_hoff != expected_hoff)
		refdata_put_problem(rsinfo, blkno, off,
							"tuple data offset %u differs from expected %u",
							tup->t_hoff, expected_hoff);
	else if (tup->t_hoff > len)
		refdata_put_problem(rsinfo, blkno, off,
							"tuple data offset %u exceeds tuple length %u",
							tup->t_hoff, len);

	if ((infomask & HEAP_XMAX_COMMITTED) && (infomask & HEAP_XMAX_IS_MULTI))
		refdata_put_problem(rsinfo, blkno, off,
							"multixact should not be marked committed");
	if ((infomask & HEAP_XMAX_LOCK_ONLY) &&
		(tup->t_infomask2 & HEAP_KEYS_UPDATED))
		refdata_put_problem(rsinfo, blkno, off,
							"tuple is marked as only locked, but also claims key columns were updated");

	if (!HeapTupleHeaderXminFrozen(tup))
		refdata_check_xid(rsinfo, blkno, off, "xmin",
						  HeapTupleHeaderGetRawXmin(tup),
						  rel->rd_rel->relfrozenxid, nextxid);

	if (!(infomask & HEAP_XMAX_INVALID))
	{
		TransactionId xmax = HeapTupleHeaderGetRawXmax(tup);

		if (infomask & HEAP_XMAX_IS_MULTI)
		{
			if (MultiXactIdIsValid(rel->rd_rel->relminmxid) &&
				MultiXactIdPrecedes(xmax, rel->rd_rel->relminmxid))
				refdata_put_problem(rsinfo, blkno, off,
									"multitransaction ID %u precedes relation minimum multitransaction ID threshold %u",
									xmax, rel->rd_rel->relminmxid);
			else if (MultiXactIdPrecedesOrEquals(ReadNextMultiXactId(), xmax))
				refdata_put_problem(rsinfo, blkno, off,
									"multitransaction ID %u equals or exceeds next valid multitransaction ID",
									xmax);
		}
		else
			refdata_check_xid(rsinfo, blkno, off, "xmax", xmax,
							  rel->rd_rel->relfrozenxid, nextxid);
	}
}

/*
 * refdata_verify(regclass): check the structure of every page of a refdata
 * table: line pointers, tuple headers, transaction and MultiXact ids
 * against the table's horizons.  One row per problem; none means the
 * checks passed.  A page whose header is damaged fails with the buffer
 * manager's own error.  TOAST data and index agreement are not checked
 * (use amcheck's bt_index_check for the indexes).
 */
Datum
refdata_verify(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel;
	BlockNumber nblocks;
	TransactionId nextxid;
	LOCKMODE	lockmode;
	BufferAccessStrategy bstrategy = GetAccessStrategy(BAS_BULKREAD);

	InitMaterializedSRF(fcinfo, 0);

	/*
	 * ShareUpdateExclusiveLock keeps VACUUM from freezing tuples and moving
	 * relfrozenxid while we compare the two; readers and writers go on.  A
	 * standby cannot take it; there, replay may freeze a tuple after we read
	 * relfrozenxid, which only makes the horizon check more lenient.
	 */
	lockmode = RecoveryInProgress() ? AccessShareLock : ShareUpdateExclusiveLock;
	rel = refdata_open_for_inspection(relid, lockmode);
	nblocks = RelationGetNumberOfBlocks(rel);
	nextxid = ReadNextTransactionId();

	for (BlockNumber blkno = 0; blkno < nblocks; blkno++)
	{
		Buffer		buffer;
		Page		page = refdata_share_lock_page(rel, blkno, bstrategy,
												   &buffer);
		OffsetNumber maxoff;


		if (PageIsNew(page))
		{
			UnlockReleaseBuffer(buffer);
			continue;
		}
		maxoff = PageGetMaxOffsetNumber(page);

		for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
		{
			ItemId		lp = PageGetItemId(page, off);

			if (ItemIdIsRedirected(lp))
			{
				OffsetNumber target = ItemIdGetRedirect(lp);

				if (target < FirstOffsetNumber || target > maxoff)
					refdata_put_problem(rsinfo, blkno, off,
										"line pointer redirection to item at offset %u exceeds maximum offset %u",
										target, maxoff);
				else if (!ItemIdIsNormal(PageGetItemId(page, target)))
					refdata_put_problem(rsinfo, blkno, off,
										"redirected line pointer points to a non-normal item at offset %u",
										target);
			}
			else if (ItemIdIsNormal(lp))
				refdata_check_tuple(rsinfo, rel, page, blkno, off, lp, nextxid);
		}
		UnlockReleaseBuffer(buffer);
	}

	relation_close(rel, lockmode);
	return (Datum) 0;
}
