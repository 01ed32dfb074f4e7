/*-------------------------------------------------------------------------
 *
 * pgstrata.c
 *	  SQL functions of the pgstrata storage features.
 *
 * pgstrata_relation_compression(regclass) reports, for each compressed fork
 * of a relation, its logical and physical size and where the physical bytes
 * go (images, slack, garbage, dictionaries), from the fork's own segment
 * headers and maps, which the storage manager lends it (pcs_segment_view()).
 * pgstrata_bulk_io() and pgstrata_bulk_io_relations() read the counters of
 * the polar_bulk_* settings that core keeps in shared memory, per backend
 * type and per relation file (src/backend/storage/buffer/bulk_io.c).
 * pgstrata_toast_legacy_values(regclass) counts a table's zstd TOAST values
 * still in the encoding of earlier pgstrata builds.
 * pgstrata_train_dictionary(regclass, bool) trains a compression dictionary
 * for each segment of a compressed relation from a sample of its pages.
 * pgstrata_estimate_compression(regclass, ...) says what a relation, stored
 * anywhere, would compress to, from its pages run through the real codec.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  contrib/pgstrata/pgstrata.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/toast_compression.h"
#include "access/xlog.h"
#include "access/xloginsert.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/bulk_io.h"
#include "storage/pcs.h"
#include "storage/pcs_format.h"
#include "storage/pcs_free_pool.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(pgstrata_relation_compression);
PG_FUNCTION_INFO_V1(pgstrata_bulk_io);
PG_FUNCTION_INFO_V1(pgstrata_bulk_io_reset);
PG_FUNCTION_INFO_V1(pgstrata_bulk_io_relations);
PG_FUNCTION_INFO_V1(pgstrata_free_units);
PG_FUNCTION_INFO_V1(pgstrata_toast_legacy_values);
PG_FUNCTION_INFO_V1(pgstrata_train_dictionary);
PG_FUNCTION_INFO_V1(pgstrata_estimate_compression);

/*
 * Dictionary training: a segment of fewer pages than this is left without
 * (its dictionary would cost more of it than it saves); of larger ones one
 * page in PGSTRATA_DICT_SAMPLE_EVERY is sampled, at least
 * PGSTRATA_DICT_MIN_PAGES and at most PGSTRATA_DICT_MAX_PAGES (8 MB), and
 * the dictionary gets the size pcs_dict_capacity() gives a sample.
 */
#define PGSTRATA_DICT_MIN_PAGES		64
#define PGSTRATA_DICT_MAX_PAGES		1024
#define PGSTRATA_DICT_SAMPLE_EVERY	50

/* What pgstrata_relation_compression() reports of a compressed fork */
typedef struct PgstrataForkStats
{
	uint64		segments;		/* segment files */
	uint64		logical_pages;	/* blocks, as smgrnblocks() counts them */
	uint64		stored_pages;	/* blocks with an image on disk */
	uint64		empty_pages;	/* blocks without one: they read as zeros */
	uint64		raw_pages;		/* images stored uncompressed */
	uint64		shuffled_pages; /* images compressed after the page shuffle */
	uint64		split_pages;	/* images compressed after the index split */
	uint64		dictionary_pages;	/* images compressed with a dictionary */
	uint64		dictionaries;	/* dictionaries the segments keep */
	uint64		dictionary_bytes;	/* bytes of those dictionaries */
	uint64		map_bytes;		/* bytes of map pages in the data area */
	uint64		stored_bytes;	/* bytes of all images */
	uint64		slack_bytes;	/* allocated to images beyond their size */
	uint64		garbage_bytes;	/* allocated, referenced by no block */
	uint64		physical_bytes; /* allocated by the file system */
} PgstrataForkStats;

/*
 * Add up the headers and maps of a fork's segments: false if the fork does
 * not exist or is not compressed.
 */
static bool
pgstrata_fork_stats(SMgrRelation reln, ForkNumber forknum,
					PgstrataForkStats *stats)
{
	PcsSegmentView v;

	memset(stats, 0, sizeof(PgstrataForkStats));
	for (BlockNumber segno = 0; pcs_segment_view(reln, forknum, segno, &v);
		 segno++)
	{
		uint64		live_units = 0;

		for (BlockNumber b = 0; b < v.nblocks; b++)
		{
			PcsMapEntry e = pcs_view_entry(&v, b);
			const PcsMapEntry *entry = &e;

			if (pcs_entry_is_empty(entry))
			{
				stats->empty_pages++;
				continue;
			}
			stats->stored_pages++;
			stats->stored_bytes += entry->stored;
			live_units += entry->units;
			if (entry->flags & PCS_ENTRY_RAW)
				stats->raw_pages++;
			if (entry->flags & PCS_ENTRY_SHUFFLED)
				stats->shuffled_pages++;
			if (entry->flags & PCS_ENTRY_SPLIT)
				stats->split_pages++;
			if (pcs_entry_dictionary(entry->flags) != 0)
				stats->dictionary_pages++;
		}
		for (int n = 1; (v.header->flags & PCS_HEADER_DICTIONARIES) != 0 &&
			 n <= PCS_MAX_DICTIONARIES; n++)
		{
			const PcsDictRecord *record = &v.header->dictionaries.records[n - 1];

			if (pcs_dict_record_check(v.header, segno, n, record,
									  v.shift) != PCS_SOUND)
				continue;
			stats->dictionaries++;
			stats->dictionary_bytes += record->bytes;
			/* a dictionary's units are neither an image's nor garbage */
			live_units += pcs_units_for(record->bytes, v.shift);
		}
		/* nor are the map's own pages (version 5) */
		live_units += v.map_units;
		stats->map_bytes += (uint64) v.map_units << v.shift;
		stats->logical_pages += v.nblocks;
		stats->slack_bytes += live_units << v.shift;
		stats->garbage_bytes +=
			((uint64) v.unit_limit - Min(live_units, v.unit_limit)) << v.shift;
		stats->physical_bytes += v.physical_bytes;
		stats->segments++;
		if (v.nblocks < RELSEG_SIZE)
			break;
	}
	if (stats->segments == 0)
		return false;
	stats->slack_bytes -= stats->stored_bytes + stats->dictionary_bytes +
		stats->map_bytes;
	return true;
}

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
			PgstrataForkStats st;
			Datum		values[16];
			bool		nulls[16] = {0};

			if (!pgstrata_fork_stats(RelationGetSmgr(rel), fork, &st))
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
			values[11] = Int64GetDatum((int64) st.shuffled_pages);
			values[12] = Int64GetDatum((int64) st.split_pages);
			values[13] = Int64GetDatum((int64) st.dictionary_pages);
			values[14] = Int64GetDatum((int64) st.dictionaries);
			values[15] = Int64GetDatum((int64) st.dictionary_bytes);
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
 * The pool of free runs that compressed segments share (pcs_free_pool.c):
 * its size, the runs kept now, the runs forgotten because it was full
 */
Datum
pgstrata_free_units(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	int32		runs;
	int32		kept;
	uint64		forgotten;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	pcs_free_usage(&runs, &kept, &forgotten);
	values[0] = Int32GetDatum(runs);
	values[1] = Int32GetDatum(kept);
	values[2] = Int64GetDatum((int64) forgotten);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
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

/*
 * Read up to want pages of blocks [first, first + count) of a relation's
 * main fork, spread evenly and skipping new (all-zero) ones, into pages:
 * how many were read.
 */
static int
pgstrata_sample_pages(Relation rel, BlockNumber first, BlockNumber count,
					  int want, char *pages, BufferAccessStrategy strategy)
{
	int			sampled = 0;

	want = Min((BlockNumber) want, count);
	for (int i = 0; i < want; i++)
	{
		BlockNumber blkno = first + (BlockNumber) ((uint64) i * count / want);
		Buffer		buf;

		CHECK_FOR_INTERRUPTS();
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL,
								 strategy);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		if (!PageIsNew(BufferGetPage(buf)))
			memcpy(pages + (size_t) sampled++ * BLCKSZ,
				   BufferGetPage(buf), BLCKSZ);
		UnlockReleaseBuffer(buf);
	}
	return sampled;
}

/*
 * Dirty every page of blocks [first, end) of a relation's main fork, so that
 * they are written again, with the segment's new dictionary.  Each page is
 * WAL-logged as a full-page image: the compressed storage may rewrite an
 * image in place, and relies on redo to restore a page whose write a crash
 * tore (README.pcs), so a page must not be written without a WAL record
 * since the last checkpoint.
 */
static void
pgstrata_rewrite_pages(Relation rel, BlockNumber first, BlockNumber end,
					   BufferAccessStrategy strategy)
{
	for (BlockNumber blkno = first; blkno < end; blkno++)
	{
		Buffer		buf;

		CHECK_FOR_INTERRUPTS();
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL,
								 strategy);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		if (!PageIsNew(BufferGetPage(buf)))
		{
			START_CRIT_SECTION();
			MarkBufferDirty(buf);
			if (RelationNeedsWAL(rel))
				log_newpage_buffer(buf, true);
			END_CRIT_SECTION();
		}
		UnlockReleaseBuffer(buf);
	}
}

/*
 * pgstrata_train_dictionary(rel regclass, recompress bool): train a zstd
 * dictionary on pages sampled from each segment of a compressed relation's
 * main fork, and install it for the segment's new images; with recompress,
 * also write every page again with it.  One row per segment.
 *
 * Images already stored stay as they are until their page is written again
 * (recompress does that for all of them at the cost of writing, and
 * WAL-logging, the whole relation).  A standby or a restored backup has the
 * dictionaries its files were copied with; each server trains its own for
 * the images it writes (README.pcs, "Dictionaries").
 */
Datum
pgstrata_train_dictionary(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	bool		recompress = PG_GETARG_BOOL(1);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	BufferAccessStrategy strategy;
	Relation	rel;
	BlockNumber nblocks;
	char	   *pages;
	char	   *dict;

	InitMaterializedSRF(fcinfo, 0);

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("compression dictionaries cannot be trained during recovery"),
				 errhint("A standby compresses pages with the dictionaries its files were copied with; train new ones after promotion.")));

	rel = relation_open(relid, AccessShareLock);
	if (!object_ownercheck(RelationRelationId, relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER,
					   get_relkind_objtype(rel->rd_rel->relkind),
					   RelationGetRelationName(rel));
	if (!RELKIND_HAS_STORAGE(rel->rd_rel->relkind) ||
		RELATION_IS_OTHER_TEMP(rel) ||
		!pcs_fork_is_compressed(RelationGetSmgr(rel), MAIN_FORKNUM))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("relation \"%s\" is not stored in a compressed tablespace",
						RelationGetRelationName(rel)),
				 errhint("Compression dictionaries are for relations of tablespaces created WITH (compression = 'zstd').")));

	strategy = GetAccessStrategy(BAS_BULKREAD);
	pages = palloc(PGSTRATA_DICT_MAX_PAGES * BLCKSZ);
	dict = palloc(PCS_MAX_DICTIONARY_SIZE);
	nblocks = RelationGetNumberOfBlocksInFork(rel, MAIN_FORKNUM);
	for (BlockNumber segno = 0; (uint64) segno * RELSEG_SIZE < nblocks; segno++)
	{
		BlockNumber first = segno * RELSEG_SIZE;
		BlockNumber count = Min(RELSEG_SIZE, nblocks - first);
		int			want;
		int			sampled;
		int			len;
		int			number;
		PcsDictGain gain;
		Datum		values[7];
		bool		nulls[7] = {0};

		if (count < PGSTRATA_DICT_MIN_PAGES)
		{
			ereport(NOTICE,
					(errmsg("segment %u of relation \"%s\" has too few pages for a compression dictionary",
							segno, RelationGetRelationName(rel)),
					 errdetail("A segment needs at least %d pages.",
							   PGSTRATA_DICT_MIN_PAGES)));
			continue;
		}

		/* pages spread evenly over the segment; empty ones teach nothing */
		want = Min(PGSTRATA_DICT_MAX_PAGES,
				   Max(PGSTRATA_DICT_MIN_PAGES,
					   count / PGSTRATA_DICT_SAMPLE_EVERY));
		sampled = pgstrata_sample_pages(rel, first, count, want, pages,
										strategy);

		len = -1;
		if (sampled >= PGSTRATA_DICT_MIN_PAGES / 2)
			len = pcs_dict_train(pages, sampled, dict,
								 pcs_dict_capacity(sampled));
		if (len < 0)
		{
			ereport(NOTICE,
					(errmsg("no compression dictionary could be trained for segment %u of relation \"%s\"",
							segno, RelationGetRelationName(rel)),
					 errdetail("Its %d sampled pages are too few or too alike.",
							   sampled)));
			continue;
		}

		number = pcs_install_dictionary(RelationGetSmgr(rel), MAIN_FORKNUM,
										segno, dict, len, pages, sampled,
										&gain);
		if (number <= 0)
		{
			ereport(NOTICE,
					(errmsg("segment %u of relation \"%s\" takes no new compression dictionary",
							segno, RelationGetRelationName(rel)),
					 number == 0 ?
					 errdetail("It holds %d dictionaries, as many as a segment can.",
							   PCS_MAX_DICTIONARIES) :
					 number == -1 ?
					 errdetail("Another session is installing one.") :
					 errdetail("On %d sampled pages the dictionary of %d bytes would save %lld of %lld bytes, not enough over the segment's %u pages to pay for itself twice.",
							   sampled, len,
							   (long long) (gain.without - gain.with),
							   (long long) gain.without, count)));
			continue;
		}
		if (recompress)
			pgstrata_rewrite_pages(rel, first, first + count, strategy);

		values[0] = Int32GetDatum((int32) segno);
		values[1] = Int32GetDatum(number);
		values[2] = Int32GetDatum(len);
		values[3] = Int32GetDatum(sampled);
		values[4] = Int64GetDatum(recompress ? (int64) count : 0);
		values[5] = Float8GetDatum((double) sampled * BLCKSZ / gain.without);
		values[6] = Float8GetDatum((double) sampled * BLCKSZ / gain.with);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
							 values, nulls);
	}

	pfree(pages);
	pfree(dict);
	FreeAccessStrategy(strategy);
	relation_close(rel, AccessShareLock);
	PG_RETURN_VOID();
}

/*
 * pgstrata_estimate_compression(rel regclass, algorithm text, level int):
 * what the main fork of a relation, wherever it is stored, would take in a
 * compressed tablespace of that algorithm and level, from up to
 * PGSTRATA_DICT_MAX_PAGES of its pages spread evenly and run through the
 * storage manager's own codec (transforms, units, the raw rule): the ratio
 * without a dictionary, and with one trained as pgstrata_train_dictionary()
 * trains it (on half of the sample, measured on the other half, its bytes
 * counted once per segment, and only where it would be kept).  Nothing is
 * written.  One row.
 */
Datum
pgstrata_estimate_compression(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	char	   *algoname = text_to_cstring(PG_GETARG_TEXT_PP(1));
	int			level = PG_GETARG_INT32(2);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	BufferAccessStrategy strategy;
	PcsAlgorithm algorithm;
	Relation	rel;
	BlockNumber nblocks;
	char	   *pages;
	int			sampled;
	int64		stored;
	Datum		values[5];
	bool		nulls[5] = {0};

	InitMaterializedSRF(fcinfo, 0);

	if (!pcs_algorithm_from_name(algoname, &algorithm) ||
		algorithm == PCS_ALGO_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid compression algorithm \"%s\"", algoname),
				 errhint("Valid algorithms are \"zstd\" and \"lz4\".")));
	if (algorithm == PCS_ALGO_ZSTD &&
		(level < PCS_ZSTD_MIN_LEVEL || level > PCS_ZSTD_MAX_LEVEL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("zstd level %d is outside the valid range %d..%d",
						level, PCS_ZSTD_MIN_LEVEL, PCS_ZSTD_MAX_LEVEL)));

	rel = relation_open(relid, AccessShareLock);
	if (!object_ownercheck(RelationRelationId, relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER,
					   get_relkind_objtype(rel->rd_rel->relkind),
					   RelationGetRelationName(rel));
	if (!RELKIND_HAS_STORAGE(rel->rd_rel->relkind) ||
		RELATION_IS_OTHER_TEMP(rel))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("relation \"%s\" has no storage to estimate",
						RelationGetRelationName(rel))));

	strategy = GetAccessStrategy(BAS_BULKREAD);
	pages = palloc(PGSTRATA_DICT_MAX_PAGES * BLCKSZ);
	nblocks = RelationGetNumberOfBlocksInFork(rel, MAIN_FORKNUM);
	sampled = pgstrata_sample_pages(rel, 0, nblocks, PGSTRATA_DICT_MAX_PAGES,
									pages, strategy);
	values[0] = Int64GetDatum((int64) nblocks);
	values[1] = Int32GetDatum(sampled);
	if (sampled == 0)
	{
		nulls[2] = nulls[3] = nulls[4] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		pfree(pages);
		FreeAccessStrategy(strategy);
		relation_close(rel, AccessShareLock);
		PG_RETURN_VOID();
	}

	stored = pcs_stored_bytes(algorithm, level, PCS_UNIT_SHIFT, pages, sampled, NULL);
	values[2] = Float8GetDatum((double) sampled * BLCKSZ / stored);
	values[3] = values[2];

	/*
	 * A dictionary trained on the even samples, judged on the odd ones, so
	 * that it is not judged on the pages it learnt from.
	 */
	if (algorithm == PCS_ALGO_ZSTD && nblocks >= PGSTRATA_DICT_MIN_PAGES &&
		sampled >= PGSTRATA_DICT_MIN_PAGES)
	{
		int			half = sampled / 2;
		char	   *train = palloc((size_t) half * BLCKSZ);
		char	   *judge = palloc((size_t) (sampled - half) * BLCKSZ);
		char	   *dict = palloc(PCS_MAX_DICTIONARY_SIZE);
		int			len;

		for (int i = 0; i < sampled; i++)
			memcpy((i % 2 == 0 ? train + (size_t) (i / 2) * BLCKSZ :
					judge + (size_t) (i / 2) * BLCKSZ),
				   pages + (size_t) i * BLCKSZ, BLCKSZ);
		len = pcs_dict_train(train, half, dict,
							 pcs_dict_capacity(half));
		if (len > 0)
		{
			PcsDict    *prepared = pcs_dict_prepare(algorithm, level, dict,
													len);

			if (prepared != NULL)
			{
				int64		without = pcs_stored_bytes(algorithm, level, PCS_UNIT_SHIFT,
													   judge,
													   sampled - half,
													   NULL);
				int64		with = pcs_stored_bytes(algorithm, level, PCS_UNIT_SHIFT,
													judge,
													sampled - half,
													prepared);
				double		per_page = (double) with / (sampled - half);
				double		segments = (nblocks + RELSEG_SIZE - 1) / RELSEG_SIZE;
				BlockNumber seg_pages = Min(nblocks, RELSEG_SIZE);

				/* kept only where it pays for itself twice, as in training */
				if ((double) (without - with) / (sampled - half) * seg_pages >
					2.0 * len)
					values[3] = Float8GetDatum((double) nblocks * BLCKSZ /
											   (per_page * nblocks +
												segments * len));
				pcs_dict_free(prepared);
			}
		}
		values[4] = Int32GetDatum(len > 0 ? len : 0);
		pfree(train);
		pfree(judge);
		pfree(dict);
	}
	else
		nulls[4] = true;

	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	pfree(pages);
	FreeAccessStrategy(strategy);
	relation_close(rel, AccessShareLock);
	PG_RETURN_VOID();
}
