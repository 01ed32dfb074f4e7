/*-------------------------------------------------------------------------
 *
 * pcs_dict.c
 *	  Compression dictionaries of compressed segments: loading them,
 *	  installing a new one, and the sample of a bulk write that trains one.
 *
 * The format of a dictionary's record and of the word that names the
 * current one is in storage/pcs_format.h; training and preparing them is
 * the codec's (pcs_codec.c).  This file reads and writes them in a
 * segment, through pcs_segment.c.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/backend/storage/smgr/pcs_dict.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "pgstat.h"
#include "pgstrata_compat.h"
#include "storage/bufpage.h"
#include "storage/pcs.h"
#include "storage/pcs_dict.h"
#include "storage/pcs_segment.h"
#include "lib/ilist.h"
#include "utils/injection_point.h"
#include "utils/memutils.h"

/*
 * A segment filled from its first block by extensions (a bulk write: a
 * rewrite, an index build, a copy to another tablespace) trains a
 * dictionary on its first this many pages (pcs_seg_sample())
 */
#define PCS_AUTO_TRAIN_PAGES	1024

/*
 * Dictionaries.
 *
 * A segment made with PCS_HEADER_DICTIONARIES keeps up to 15 compression
 * dictionaries in its data area, each described by a record in the
 * header's dictionary sector, and each image names the one it was
 * compressed with in its entry.  A dictionary is never changed or freed
 * while the segment lives, so an image stays readable whatever dictionaries
 * come after it; a truncation or rewrite that makes a new file drops them
 * with it.  Dictionaries are not WAL-logged: full-page images and redo
 * carry pages, not images, and every server (primary, standby, restored
 * backup) compresses its own files, so each may train its own, as long as
 * its files carry what their images name.  Verbatim copies of the file
 * (base backups, pg_rewind, CREATE DATABASE FILE_COPY) carry them.
 *
 * The sector's current word says which dictionary new images use.  An
 * installation (pcs_install_dictionary()) first swaps it to "generation G
 * installs n", which excludes other installers, then writes the bytes into
 * fresh units and the record into the header, makes both durable with one
 * fsync, and only then swaps the word to "n is ready".  So an image that
 * names n is written only after n is on disk, and a crash at any point
 * leaves either no trace (the units are found free again) or a sound
 * record nobody uses; an installation of an earlier generation is void.
 */

/*
 * Read dictionary number of seg: its record, checked, into *record and its
 * bytes, checked against the record's CRC, into *bytes (palloc'd).
 * PCS_SOUND, or what is wrong (then *bytes is not set).
 */
PcsProblem
pcs_seg_dictionary_bytes(PcsSegment *seg, int number, PcsDictRecord *record,
						 char **bytes)
{
	PcsProblem	problem;
	int			nread;

	if ((seg->header->flags & PCS_HEADER_DICTIONARIES) == 0)
		return PCS_IMAGE_NO_DICTIONARY;
	/* the record as it is now: another process may have installed it */
	pcs_meta_read_dictionaries(seg);
	*record = seg->header->dictionaries.records[number - 1];
	if (pcs_dict_record_is_unused(record))
		return PCS_IMAGE_NO_DICTIONARY;
	problem = pcs_dict_record_check(seg->header, seg->segno, number, record,
									seg->shift);
	if (problem == PCS_SOUND &&
		(uint64) record->first_unit + pcs_units_for(record->bytes, seg->shift) >
		pcs_unit_limit(seg))
		problem = PCS_DICTIONARY_BAD_RECORD;
	if (problem != PCS_SOUND)
		return problem;

	*bytes = palloc(record->bytes);
	nread = pcs_read_fully(seg, *bytes, record->bytes,
						   pcs_unit_offset(seg->header, record->first_unit));
	if (nread < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read compression dictionary %d in file \"%s\": %m",
						number, FilePathName(seg->vfd))));
	if (nread != record->bytes ||
		pcs_data_crc(*bytes, record->bytes) != record->data_crc)
	{
		pfree(*bytes);
		return PCS_DICTIONARY_BAD_CRC;
	}
	return PCS_SOUND;
}

/*
 * Prepared dictionaries, in each process.
 *
 * Preparing a dictionary builds zstd's tables for it: for decoding, tens
 * of kilobytes; for compressing, a hash table sized by the level.  A
 * process keeps what it prepared with the segment (dicts[] for decoding,
 * encoder for the dictionary new images use), so that a page costs no
 * preparation.  A reader prepares only the decoding side; only a writer
 * of new images prepares the compressing side, and only for the current
 * dictionary.  All of it lives in one memory context ("pcs dictionaries"),
 * which pg_backend_memory_contexts shows, and this process
 * keeps at most pcs_dict_cache_limit bytes there: the segments whose
 * dictionaries were used least recently give theirs up first (a list in
 * order of use), to be prepared again when needed.  One segment's may
 * exceed the limit alone; they are never freed while that segment asks.
 */
int			pcs_dict_cache_limit = 32 * 1024 * 1024;

/* The memory context of prepared dictionaries, made on first use */
static MemoryContext PcsDictCxt = NULL;

/* zstd's allocation callbacks, into PcsDictCxt: NULL when memory runs out */
static void *
pcs_dict_alloc(void *opaque, size_t size)
{
	return MemoryContextAllocExtended((MemoryContext) opaque, size,
									  MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
}

static void
pcs_dict_release(void *opaque, void *address)
{
	if (address != NULL)
		pfree(address);
}

/* Where this process's prepared dictionaries take their memory */
static const PcsDictMemory *
pcs_dict_memory_source(void)
{
	static PcsDictMemory mem =
	{
		pcs_dict_alloc, pcs_dict_release, NULL
	};

	if (PcsDictCxt == NULL)
	{
		PcsDictCxt = AllocSetContextCreate(TopMemoryContext,
										   "pcs dictionaries",
										   ALLOCSET_DEFAULT_SIZES);
		mem.opaque = PcsDictCxt;
	}
	return &mem;
}

/* Bytes the prepared dictionaries of this process take */
size_t
pcs_dict_memory(void)
{
	return PcsDictCxt == NULL ? 0 : MemoryContextMemAllocated(PcsDictCxt, false);
}

static dlist_head pcs_dict_users = DLIST_STATIC_INIT(pcs_dict_users);

/* Forget the prepared dictionaries of a segment */
void
pcs_seg_free_dictionaries(PcsSegment *seg)
{
	for (int n = 1; n <= PCS_MAX_DICTIONARIES; n++)
	{
		pcs_dict_free(seg->dicts[n]);
		seg->dicts[n] = NULL;
	}
	pcs_dict_free(seg->encoder);
	seg->encoder = NULL;
	seg->encoder_number = 0;
	if (seg->dict_user)
		dlist_delete(&seg->dict_lru);
	seg->dict_user = false;
}

/* Note that seg's prepared dictionaries were just used */
static inline void
pcs_dict_used(PcsSegment *seg)
{
	if (seg->dict_user)
		dlist_move_head(&pcs_dict_users, &seg->dict_lru);
	else
	{
		dlist_push_head(&pcs_dict_users, &seg->dict_lru);
		seg->dict_user = true;
	}
}

/*
 * Make room for a dictionary seg is about to prepare: free the prepared
 * dictionaries of the segments used least recently, others than seg,
 * while this process's exceed the limit; then note seg as the most
 * recently used.
 */
static void
pcs_dict_make_room(PcsSegment *seg)
{
	dlist_node *node = dlist_is_empty(&pcs_dict_users) ? NULL :
		dlist_tail_node(&pcs_dict_users);

	while (node != NULL && pcs_dict_memory() > (size_t) pcs_dict_cache_limit)
	{
		PcsSegment *other = dlist_container(PcsSegment, dict_lru, node);

		node = dlist_has_prev(&pcs_dict_users, node) ?
			dlist_prev_node(&pcs_dict_users, node) : NULL;
		if (other != seg)
			pcs_seg_free_dictionaries(other);
	}
	pcs_dict_used(seg);
}

/*
 * Prepare dictionary number of seg, for decoding, or for compressing if
 * encode: PCS_SOUND and *dict, or what is wrong with it.
 */
static PcsProblem
pcs_seg_prepare_dictionary(PcsSegment *seg, int number, bool encode,
						   PcsDict **dict)
{
	PcsDictRecord record;
	PcsProblem	problem;
	char	   *bytes;

	problem = pcs_seg_dictionary_bytes(seg, number, &record, &bytes);
	if (problem != PCS_SOUND)
		return problem;
	pcs_dict_make_room(seg);
	*dict = pcs_dict_prepare_for(seg->header->algorithm, seg->header->level,
								 bytes, record.bytes, encode, !encode,
								 pcs_dict_memory_source());
	pfree(bytes);
	if (*dict == NULL)
		return PCS_IMAGE_DICTIONARY_FAILED;
	return PCS_SOUND;
}

/*
 * Dictionary number of a segment, prepared for decoding in this process
 * (kept with the segment, within pcs_dict_cache_limit).  PCS_SOUND and
 * *dict, or what is wrong with it.
 */
PcsProblem
pcs_seg_dictionary(PcsSegment *seg, int number, const PcsDict **dict)
{
	PcsProblem	problem;

	Assert(number >= 1 && number <= PCS_MAX_DICTIONARIES);
	if (seg->dicts[number] == NULL)
	{
		problem = pcs_seg_prepare_dictionary(seg, number, false,
											 &seg->dicts[number]);
		if (problem != PCS_SOUND)
			return problem;
	}
	else
		pcs_dict_used(seg);
	*dict = seg->dicts[number];
	return PCS_SOUND;
}

/*
 * The number of the dictionary new images of a segment are compressed
 * with, or 0: the ready one the current word names; while this generation
 * installs the next, or after an installation an earlier generation did
 * not finish (a crash), the highest sound record below it.  Any sound
 * record of an earlier generation describes bytes that are durable: crash
 * recovery begins by fsyncing the data directory, and its bytes are
 * checked again when loaded.  The answer is kept until the word changes.
 */
static int
pcs_seg_current_number(PcsSegment *seg)
{
	uint64		word = pcs_word_read(seg, &seg->header->dictionaries.current);
	int			limit = PCS_MAX_DICTIONARIES;
	int			n = 0;

	if (word == seg->dict_word_seen && seg->dict_word_known)
		return seg->dict_number_seen;
	/* the records as they are now, each written before the word names it */
	pcs_meta_read_dictionaries(seg);
	word = pg_atomic_read_u64(&seg->header->dictionaries.current);

	switch (pcs_dict_decode(seg->header, seg->segno, word,
							pcs_current_generation(), &n))
	{
		case PCS_DICT_READY:
			break;
		case PCS_DICT_INSTALLING:
			limit = n - 1;
			n = 0;
			break;
		case PCS_DICT_NONE:
			n = 0;
			break;
	}
	for (int r = limit; word != 0 && n == 0 && r >= 1; r--)
	{
		if (pcs_dict_record_check(seg->header, seg->segno, r,
								  &seg->header->dictionaries.records[r - 1],
								  seg->shift) == PCS_SOUND)
			n = r;
	}
	seg->dict_word_seen = word;
	seg->dict_number_seen = n;
	seg->dict_word_known = true;
	return n;
}

/*
 * The dictionary new images of a segment are compressed with, and its
 * number, or NULL (pcs_seg_current_number()).  A dictionary that fails to
 * load is not used again by this process; the images that name it report
 * it when they are read.
 */
const PcsDict *
pcs_seg_current_dictionary(PcsSegment *seg, int *number)
{
	const PcsDict *dict;
	int			n;

	if ((seg->header->flags & PCS_HEADER_DICTIONARIES) == 0)
		return NULL;
	n = pcs_seg_current_number(seg);
	if (n < 1 || (seg->dicts_failed & (1 << n)) != 0)
		return NULL;
	if (seg->encoder_number == n)
		pcs_dict_used(seg);
	else
	{
		pcs_dict_free(seg->encoder);
		seg->encoder = NULL;
		seg->encoder_number = 0;
		if (pcs_seg_prepare_dictionary(seg, n, true, &seg->encoder) != PCS_SOUND)
		{
			seg->dicts_failed |= (1 << n);
			return NULL;
		}
		seg->encoder_number = n;
	}
	dict = seg->encoder;
	*number = n;
	return dict;
}

/*
 * Install bytes (len of them, a dictionary that pcs_dict_train() made from
 * the npages pages sampled) as the next dictionary of segment segno of a
 * compressed fork, for its new images.  Returns its number, or 0 if the
 * segment has all it can take, -1 if another process is installing one, -2
 * if it would not pay: the samples, stored with and without it (in
 * gain->with and gain->without), must save more than the dictionary costs,
 * counted over the segment's blocks.  The caller holds a lock that keeps the
 * relation from being dropped or truncated.
 */
int
pcs_install_dictionary(SMgrRelation reln, ForkNumber forknum,
					   BlockNumber segno, const char *bytes, int len,
					   const char *pages, int npages, PcsDictGain *gain)
{
	PcsSegment *seg = pcs_getseg(reln, forknum, segno, false);
	PcsDictSector *sector;
	uint32		gen = pcs_current_generation();
	uint64		old;
	uint64		installing;
	int			number = 0;
	int			n;

	Assert(len >= PCS_MIN_DICTIONARY_SIZE && len <= PCS_MAX_DICTIONARY_SIZE);
	if (seg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FILE),
				 errmsg("segment %u of relation %s does not exist",
						segno, PGSTRATA_RELPATH(reln->smgr_rlocator, forknum))));
	if ((seg->header->flags & PCS_HEADER_DICTIONARIES) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("compressed segment file \"%s\" cannot hold compression dictionaries",
						FilePathName(seg->vfd)),
				 errdetail("Only zstd segments made by a build with dictionaries can hold them."),
				 errhint("Rewrite the relation with VACUUM FULL to make its files anew.")));
	sector = &seg->header->dictionaries;

	/* what it gains on the samples, before anything is changed */
	{
		PcsDict    *trial = pcs_dict_prepare(seg->header->algorithm,
											 seg->header->level, bytes, len);

		if (trial == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory"),
					 errdetail("A compression dictionary of %d bytes could not be prepared.",
							   len)));
		gain->without = pcs_stored_bytes(seg->header->algorithm,
										 seg->header->level, seg->shift,
										 pages, npages, NULL);
		gain->with = pcs_stored_bytes(seg->header->algorithm,
									  seg->header->level, seg->shift,
									  pages, npages, trial);
		pcs_dict_free(trial);
		if ((double) (gain->without - gain->with) / npages *
			pcs_seg_nblocks(seg) <= 2.0 * len)
			return -2;
	}

	/* the next number: past every record and the current word's */
	pcs_meta_read_dictionaries(seg);
	old = pg_atomic_read_u64(&sector->current);
	for (n = 1; n <= PCS_MAX_DICTIONARIES; n++)
		if (!pcs_dict_record_is_unused(&sector->records[n - 1]))
			number = n;
	switch (pcs_dict_decode(seg->header, segno, old, gen, &n))
	{
		case PCS_DICT_INSTALLING:
			return -1;
		case PCS_DICT_READY:
			number = Max(number, n);
			break;
		case PCS_DICT_NONE:
			break;
	}
	if (++number > PCS_MAX_DICTIONARIES)
		return 0;
	installing = pcs_dict_word(seg->header, segno, PCS_DICT_INSTALLING,
							   number, gen);
	if (!pcs_word_compare_exchange(seg, &sector->current, &old, installing))
		return -1;

	PG_TRY();
	{
		int			units = pcs_units_for(len, seg->shift);
		uint32		first = pcs_allocate(reln, seg, units, false);
		PcsDictRecord record;
		uint64		expected = installing;

		if (FileWrite(seg->vfd, bytes, len, pcs_unit_offset(seg->header, first),
					  WAIT_EVENT_DATA_FILE_WRITE) != len)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write compression dictionary %d in file \"%s\": %m",
							number, FilePathName(seg->vfd)),
					 errhint("Check free disk space.")));
		pcs_dict_record_set(seg->header, segno, number, &record, first, len,
							pcs_data_crc(bytes, len));
		pcs_meta_store_dict_record(seg, number, &record);
		PGSTRATA_INJECTION_POINT("pcs-dictionary-before-sync");

		/* bytes and record are durable before any image can name them */
		pcs_sync_now(reln, forknum, seg, WAIT_EVENT_DATA_FILE_SYNC);
		if (!pcs_word_compare_exchange(seg, &sector->current, &expected,
									   pcs_dict_word(seg->header, segno,
													 PCS_DICT_READY,
													 number, gen)))
			elog(ERROR, "dictionary word of file \"%s\" changed during an installation",
				 FilePathName(seg->vfd));
	}
	PG_CATCH();
	{
		uint64		expected = installing;
		PcsDictRecord unused;

		/*
		 * Take the record back, which may not be durable and which no image
		 * names, so that nothing takes it for a dictionary of an earlier
		 * generation (pcs_seg_current_number()); give the word back.  The
		 * units are found free by a later generation.  (If the failure was an
		 * I/O error in the map, these fail too; then a later installation or
		 * generation finds an installing word of its own that it cannot swap,
		 * or an earlier generation's, which it treats as void.)
		 */
		memset(&unused, 0, sizeof(unused));
		pcs_meta_store_dict_record(seg, number, &unused);
		(void) pcs_word_compare_exchange(seg, &sector->current, &expected,
										 old);
		PG_RE_THROW();
	}
	PG_END_TRY();
	seg->dicts_failed &= ~(1 << number);
	return number;
}

/* Stop collecting pages of a segment for a dictionary, for good */
static void
pcs_seg_stop_sampling(PcsSegment *seg)
{
	seg->sampling_over = true;
	if (seg->sample != NULL)
		pfree(seg->sample);
	seg->sample = NULL;
	seg->nsample = 0;
}

/*
 * A page (a private copy) is about to extend segment seg at block segblock.
 * A segment whose blocks are all written by extensions from its first one
 * on, in order, is being filled by a bulk write (VACUUM FULL, CLUSTER, an
 * index build, SET TABLESPACE): its first PCS_AUTO_TRAIN_PAGES pages train
 * a dictionary, which is installed (where it pays, as
 * pcs_install_dictionary() judges) before the next page is compressed, so
 * that the rest of the bulk write, and every later write, uses it.  Any
 * other order of writes, a dictionary already there, or a temporary
 * relation ends the sampling for the life of the segment in this process.
 * Training costs a fraction of a second once per segment; the pages kept
 * meanwhile (8 MB) are given back as soon as it is done.
 */
void
pcs_seg_sample(SMgrRelation reln, ForkNumber forknum, PcsSegment *seg,
			   BlockNumber segblock, const char *page)
{
	char	   *dict;
	int			len = -1;
	PcsDictGain gain;

	if (seg->sampling_over)
		return;
	if (segblock != seg->sample_next || SmgrIsTemp(reln) ||
		(seg->header->flags & PCS_HEADER_DICTIONARIES) == 0 ||
		pcs_seg_current_number(seg) != 0)
	{
		pcs_seg_stop_sampling(seg);
		return;
	}
	if (seg->sample == NULL)
		seg->sample = MemoryContextAllocExtended(PcsCxt,
												 (Size) PCS_AUTO_TRAIN_PAGES * BLCKSZ,
												 MCXT_ALLOC_NO_OOM);
	if (seg->sample == NULL)
	{
		pcs_seg_stop_sampling(seg);
		return;
	}
	/* all-zero pages teach nothing */
	if (!PageIsNew((Page) page))
		memcpy(seg->sample + (Size) seg->nsample++ * BLCKSZ, page, BLCKSZ);
	if (++seg->sample_next < PCS_AUTO_TRAIN_PAGES)
		return;

	Assert(seg->nsample <= PCS_AUTO_TRAIN_PAGES);
	dict = palloc(PCS_MAX_DICTIONARY_SIZE);
	if (seg->nsample >= PCS_AUTO_TRAIN_PAGES / 2)
		len = pcs_dict_train(seg->sample, seg->nsample, dict,
							 pcs_dict_capacity(seg->nsample));
	if (len > 0)
		(void) pcs_install_dictionary(reln, forknum, seg->segno, dict, len,
									  seg->sample, seg->nsample, &gain);
	pfree(dict);
	pcs_seg_stop_sampling(seg);
}
