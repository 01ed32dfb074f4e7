/*-------------------------------------------------------------------------
 *
 * refdata_inspect.c
 *	  The SQL function that shows the row locks of a refdata table, as
 *	  pgrowlocks does for heap (pgrowlocks refuses other access methods).
 *	  A structural check needs nothing of refdata's own: amcheck's
 *	  verify_heapam() and pg_amcheck check refdata tables, whose pages are
 *	  heap's.
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
				 errhint("For heap tables, use pgrowlocks.")));

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
