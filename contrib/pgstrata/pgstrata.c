/*-------------------------------------------------------------------------
 *
 * pgstrata.c
 *	  SQL functions of the pgstrata storage features.
 *
 * pgstrata_relation_compression(regclass) reports, for each compressed fork
 * of a relation, its logical and physical size and where the physical bytes
 * go (images, slack, garbage), from the fork's own segment headers and maps.
 * pgstrata_bulk_io() and pgstrata_bulk_io_relations() read the counters of
 * the polar_bulk_* settings that core keeps in shared memory, per backend
 * type and per relation file (src/backend/storage/buffer/bulk_io.c).
 * pgstrata_toast_legacy_values(regclass) counts a table's zstd TOAST values
 * still in the encoding of earlier pgstrata builds.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  contrib/pgstrata/pgstrata.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/toast_compression.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/bulk_io.h"
#include "storage/pcs.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(pgstrata_relation_compression);
PG_FUNCTION_INFO_V1(pgstrata_bulk_io);
PG_FUNCTION_INFO_V1(pgstrata_bulk_io_reset);
PG_FUNCTION_INFO_V1(pgstrata_bulk_io_relations);
PG_FUNCTION_INFO_V1(pgstrata_toast_legacy_values);

/* Rows of pgstrata_relation_compression(): one per compressed fork */
Datum
pgstrata_relation_compression(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel;

	InitMaterializedSRF(fcinfo, 0);

	rel = try_relation_open(relid, AccessShareLock);
	if (rel == NULL)
		PG_RETURN_VOID();		/* dropped meanwhile: no rows */

	if (RELKIND_HAS_STORAGE(rel->rd_rel->relkind) &&
		!RELATION_IS_OTHER_TEMP(rel))
	{
		for (ForkNumber fork = 0; fork <= MAX_FORKNUM; fork++)
		{
			PcsForkStats st;
			Datum		values[11];
			bool		nulls[11] = {0};

			if (!pcs_fork_stats(RelationGetSmgr(rel), fork, &st))
				continue;

			values[0] = CStringGetTextDatum(forkNames[fork]);
			values[1] = Int64GetDatum((int64) st.logical_pages * BLCKSZ);
			values[2] = Int64GetDatum((int64) st.physical_bytes);
			if (st.physical_bytes > 0)
				values[3] = Float8GetDatum((double) st.logical_pages * BLCKSZ /
										   st.physical_bytes);
			else
				nulls[3] = true;
			values[4] = Int64GetDatum((int64) st.logical_pages);
			values[5] = Int64GetDatum((int64) st.stored_pages);
			values[6] = Int64GetDatum((int64) st.raw_pages);
			values[7] = Int64GetDatum((int64) st.empty_pages);
			values[8] = Int64GetDatum((int64) st.stored_bytes);
			values[9] = Int64GetDatum((int64) st.slack_bytes);
			values[10] = Int64GetDatum((int64) st.garbage_bytes);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
								 values, nulls);
		}
	}

	relation_close(rel, AccessShareLock);
	PG_RETURN_VOID();
}

/* Rows of pgstrata_bulk_io(): the bulk I/O counters of each backend type */
Datum
pgstrata_bulk_io(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);

	for (int t = 1; t < BACKEND_NUM_TYPES; t++)
	{
		Datum		values[1 + BULK_IO_NUM_COUNTERS];
		bool		nulls[1 + BULK_IO_NUM_COUNTERS] = {0};

		values[0] = CStringGetTextDatum(GetBackendTypeDesc((BackendType) t));
		for (int c = 0; c < BULK_IO_NUM_COUNTERS; c++)
			values[1 + c] =
				Int64GetDatum((int64) bulk_io_counter_value(t, (BulkIoCounter) c));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
							 values, nulls);
	}

	PG_RETURN_VOID();
}

/*
 * Rows of pgstrata_bulk_io_relations(): the bulk I/O counters of each
 * relation file that has any, in every database; the view of the same name
 * maps them to the relations of the current database.
 */
Datum
pgstrata_bulk_io_relations(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	BulkIoRelCounters *rels;
	int			nrels;

	InitMaterializedSRF(fcinfo, 0);

	nrels = bulk_io_relation_counters(&rels);
	for (int i = 0; i < nrels; i++)
	{
		Datum		values[3 + BULK_IO_NUM_COUNTERS];
		bool		nulls[3 + BULK_IO_NUM_COUNTERS] = {0};

		values[0] = ObjectIdGetDatum(rels[i].locator.spcOid);
		values[1] = ObjectIdGetDatum(rels[i].locator.dbOid);
		values[2] = ObjectIdGetDatum(rels[i].locator.relNumber);
		for (int c = 0; c < BULK_IO_NUM_COUNTERS; c++)
			values[3 + c] = Int64GetDatum((int64) rels[i].counters[c]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
							 values, nulls);
	}
	if (rels != NULL)
		pfree(rels);

	PG_RETURN_VOID();
}

/* pgstrata_bulk_io_reset(): set the bulk I/O counters back to zero */
Datum
pgstrata_bulk_io_reset(PG_FUNCTION_ARGS)
{
	bulk_io_reset_counters();
	PG_RETURN_VOID();
}

/*
 * pgstrata_toast_legacy_values(regclass): how many of the values of a
 * table's rows visible to the query's snapshot are zstd values in the
 * legacy encoding (bit pattern 2), in line or in the TOAST table.
 *
 * Values are looked at as stored, without fetching or decompressing them:
 * the encoding is in the in-line header or in the TOAST pointer.
 */
Datum
pgstrata_toast_legacy_values(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Relation	rel;
	TupleDesc	tupdesc;
	TupleTableSlot *slot;
	TableScanDesc scan;
	int64		count = 0;
	AclResult	aclresult;

	rel = table_open(relid, AccessShareLock);
	if (rel->rd_rel->relkind != RELKIND_RELATION &&
		rel->rd_rel->relkind != RELKIND_MATVIEW &&
		rel->rd_rel->relkind != RELKIND_TOASTVALUE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table or materialized view",
						RelationGetRelationName(rel)),
				 rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE ?
				 errhint("Call the function on each partition.") : 0));
	aclresult = pg_class_aclcheck(relid, GetUserId(), ACL_SELECT);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, get_relkind_objtype(rel->rd_rel->relkind),
					   RelationGetRelationName(rel));

	tupdesc = RelationGetDescr(rel);
	slot = table_slot_create(rel, NULL);
	scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		CHECK_FOR_INTERRUPTS();
		slot_getallattrs(slot);
		for (int i = 0; i < tupdesc->natts; i++)
		{
			if (slot->tts_isnull[i] || TupleDescAttr(tupdesc, i)->attlen != -1)
				continue;
			if (toast_zstd_is_legacy((struct varlena *)
									 DatumGetPointer(slot->tts_values[i])))
				count++;
		}
	}
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, AccessShareLock);

	PG_RETURN_INT64(count);
}
