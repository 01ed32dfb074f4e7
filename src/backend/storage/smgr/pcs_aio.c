/*-------------------------------------------------------------------------
 *
 * pcs_aio.c
 *	  Asynchronous reads of compressed forks (PostgreSQL 18): planning a
 *	  read from the map, and decoding its images in the completion.
 *
 * Built by the PostgreSQL 18 series only: 17 has no asynchronous I/O, and
 * its reads go through pcs_readv().  The design is described below, before
 * the code.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/backend/storage/smgr/pcs_aio.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "pgstat.h"
#include "pgstrata_compat.h"
#include "storage/aio.h"
/* pgaio_io_get_iovec_length(): the completion finds the buffers there */
#include "storage/aio_internal.h"
#include "storage/bufmgr.h"
#include "storage/lwlock.h"
#include "storage/md.h"
#include "storage/pcs_internal.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

/*
 * Asynchronous reads (PostgreSQL 18).
 *
 * 18's buffer manager reads through smgrstartreadv(): the storage manager
 * describes the read as a file descriptor, an offset and a vector of memory,
 * and the I/O method (sync, worker or io_uring) performs it, maybe in
 * another process, before completion callbacks, run in a critical section
 * by whichever process sees the I/O complete, check the pages and mark the
 * buffers valid.  A compressed page is not at an offset of its file, and
 * has to be decoded after it is read, so:
 *
 * - pcs_startreadv() plans the read from the map entries of the blocks
 *   (pcs_aio_plan()): a run of blocks whose images lie in ascending order
 *   with small gaps is read by one I/O, into the tail of the run's own
 *   buffers (the images of n pages take less than n pages); the plan, what
 *   the completion needs to know of each image, goes into the head of the
 *   first buffer.  Nothing is allocated: the buffers are the staging area.
 *
 * - pcs_aio_readv_complete(), the completion callback, decodes the images
 *   in block order, each from a private copy into its own buffer.  The plan
 *   only admits layouts in which decoding block i overwrites no image of a
 *   later block (every image j starts at or after buffer j), so the decoded
 *   pages never clobber images still to be decoded.  It runs in whatever
 *   process completes the I/O (an I/O worker, another backend waiting on
 *   the buffer), which has neither the segment nor its dictionaries open:
 *   the plan carries the algorithm and each image's length, flags and CRC,
 *   and images compressed with a dictionary are decoded with a copy of it
 *   prepared in shared memory (pcs_aio_pin_dictionary()), pinned by the
 *   issuer until the callback is done with it.
 *
 * - A damaged image is reported as md.c's damaged pages are: for the FSM,
 *   the VM, or with zero_damaged_pages on, as a page that fails
 *   verification (the buffer manager zeroes it with its WARNING); otherwise
 *   the read fails and the issuer raises pcs's ERROR naming relation and
 *   block.  A read of fewer bytes than planned, or a damaged image after
 *   the first, ends the I/O early (a partial read), and the buffer manager
 *   reads the rest again with a new I/O.
 *
 * - A run of raw images (incompressible pages) leaves no room for a plan.
 *   Where they lie one after another in the file, as md.c's blocks do, and
 *   data checksums are on, they are read straight into their buffers with
 *   no plan (pcs_aio_raw_run()): the buffer manager's completion verifies
 *   each page's checksum, which covers what the image's CRC covers on the
 *   other paths, and ours refuses an all-zero page, which that check would
 *   take for a new one.  Without data checksums such a run is read
 *   synchronously, so that the CRC is checked.
 *
 * Blocks the plan cannot take (an empty first block, an entry that fails its
 * check, images out of order or too far apart, too little room for the
 * plan, no free dictionary slot) are decoded synchronously before a
 * zero-byte I/O is staged, to be completed at once in this process
 * (PGAIO_HF_SYNCHRONOUS; pcs_aio_readv_complete() with cb_data
 * PCS_AIO_DECODED), as every read was before.  Forks stored by md.c take
 * md.c's asynchronous path unchanged.
 */

/* Values of the cb_data of pcs_aio_readv_complete() */
#define PCS_AIO_DECODED		0	/* decoded before the I/O was staged */
#define PCS_AIO_RAW			1	/* raw images read into their buffers */
#define PCS_AIO_PLAIN		2	/* to decode, no image uses a dictionary */
#define PCS_AIO_SLOT0		3	/* to decode with dictionary slot cb_data - 3 */

/* Prepared dictionaries kept in shared memory for decoding in any process */
#define PCS_AIO_DICT_SLOTS	32

StaticAssertDecl(PCS_AIO_SLOT0 + PCS_AIO_DICT_SLOTS - 1 <= PG_UINT8_MAX,
				 "a dictionary slot must fit the callback's cb_data");

/* What the completion knows of one block's image */
typedef struct PcsAioImage
{
	uint32		start;			/* where the image begins, as an offset into
								 * the run's buffers taken one after another */
	uint32		data_crc;		/* CRC32C of its bytes */
	uint16		stored;			/* its bytes; 0 for an empty entry (zeros) */
	uint8		flags;			/* the entry's flags */
	uint8		unused;
} PcsAioImage;

/* The plan of one asynchronous read, in the head of its first buffer */
typedef struct PcsAioPlan
{
	uint32		magic;			/* PCS_AIO_PLAN_MAGIC */
	uint8		algorithm;		/* the segment's PcsAlgorithm */
	bool		damaged_invalid;	/* hand damaged images up as invalid
									 * pages, not as a failed read */
	uint16		nblocks;		/* blocks planned */
	uint32		span_start;		/* where the bytes read go */
	uint32		span_len;		/* how many bytes are read */
	bool		first_in_file;	/* the file was seen to hold the first image
								 * whole (pcs_aio_in_file()) */
	PcsAioImage images[MAX_IO_COMBINE_LIMIT];
} PcsAioPlan;

#define PCS_AIO_PLAN_MAGIC	0x50435341	/* "PCSA" */
#define PCS_AIO_PLAN_SIZE(n) \
	MAXALIGN(offsetof(PcsAioPlan, images) + (n) * sizeof(PcsAioImage))

/*
 * A damaged image in an asynchronous read, as error_data: this flag, the
 * PcsProblem in the low byte, the block's place in the read in the next
 */
#define PCS_AIO_PROBLEM		(1 << 20)
#define PCS_AIO_DAMAGE(problem, i) \
	(PCS_AIO_PROBLEM | ((uint32) (i) << 8) | (uint32) (problem))
/* a read that stopped short inside the file, before the first image's end */
#define PCS_AIO_SHORT_READ	(1 << 21)

/* A prepared dictionary in shared memory; its bytes follow */
typedef struct PcsAioDictSlot
{
	/* which dictionary: its segment, number and CRCs */
	RelFileLocator rlocator;
	ForkNumber	forknum;
	BlockNumber segno;
	int			number;
	uint32		data_crc;
	uint32		record_crc;
	bool		valid;
	pg_atomic_uint32 pins;		/* I/Os that will decode with it */
	pg_atomic_uint64 last_used; /* the clock when it was last pinned */
	PcsDict    *dict;			/* in the bytes that follow */
} PcsAioDictSlot;

typedef struct PcsAioShared
{
	LWLock		lock;			/* protects the slots' keys and validity */
	int			tranche_id;
	int			nslots;
	Size		slot_size;
	pg_atomic_uint64 clock;
	char		slots[FLEXIBLE_ARRAY_MEMBER];
} PcsAioShared;

static PcsAioShared *PcsAio = NULL;
static bool pcs_aio_tranche_named = false;

/* Bytes of each slot: its header and a dictionary's place */
static Size
pcs_aio_slot_size(void)
{
	return MAXALIGN(sizeof(PcsAioDictSlot)) + MAXALIGN(pcs_dict_place_size());
}

/* Slot i */
static inline PcsAioDictSlot *
pcs_aio_slot(int i)
{
	Assert(i >= 0 && i < PcsAio->nslots);
	return (PcsAioDictSlot *) (PcsAio->slots + (Size) i * PcsAio->slot_size);
}

/* Size of the shared state of asynchronous reads */
Size
pcs_aio_shmem_size(void)
{
	int			nslots = pcs_dict_place_size() > 0 ? PCS_AIO_DICT_SLOTS : 0;

	return add_size(offsetof(PcsAioShared, slots),
					mul_size(nslots, pcs_aio_slot_size()));
}

/* Set up the shared state of asynchronous reads (the postmaster) */
void
pcs_aio_shmem_init(void)
{
	bool		found;

	PcsAio = ShmemInitStruct("pgstrata asynchronous reads",
							 pcs_aio_shmem_size(), &found);
	if (!found)
	{
		PcsAio->tranche_id = LWLockNewTrancheId();
		LWLockInitialize(&PcsAio->lock, PcsAio->tranche_id);
		PcsAio->nslots = pcs_dict_place_size() > 0 ? PCS_AIO_DICT_SLOTS : 0;
		PcsAio->slot_size = pcs_aio_slot_size();
		pg_atomic_init_u64(&PcsAio->clock, 0);
		for (int i = 0; i < PcsAio->nslots; i++)
		{
			PcsAioDictSlot *slot = pcs_aio_slot(i);

			slot->valid = false;
			pg_atomic_init_u32(&slot->pins, 0);
			pg_atomic_init_u64(&slot->last_used, 0);
		}
	}
}

/* Is slot the place of dictionary number of seg, as record describes it? */
static bool
pcs_aio_slot_holds(PcsAioDictSlot *slot, SMgrRelation reln, PcsSegment *seg,
				   int number, const PcsDictRecord *record)
{
	return slot->valid &&
		RelFileLocatorEquals(slot->rlocator, reln->smgr_rlocator.locator) &&
		slot->forknum == seg->forknum && slot->segno == seg->segno &&
		slot->number == number && slot->data_crc == record->data_crc &&
		slot->record_crc == record->record_crc;
}

/*
 * Pin a copy of dictionary number of seg prepared in shared memory, placing
 * it there first if no slot holds it: the slot's index, or -1 when the
 * dictionary cannot be read or every slot is pinned (the caller then reads
 * synchronously, where a damaged dictionary is reported).  The completion
 * of the I/O unpins it.  A slot is known by the segment, the number and
 * both CRCs of the record, so a new file of the same name never finds an
 * old file's dictionary.
 */
static int
pcs_aio_pin_dictionary(SMgrRelation reln, PcsSegment *seg, int number)
{
	PcsDictRecord record;
	char	   *bytes;
	int			victim = -1;
	uint64		oldest = PG_UINT64_MAX;
	PcsAioDictSlot *slot;

	if (PcsAio == NULL || PcsAio->nslots == 0)
		return -1;
	if (!pcs_aio_tranche_named)
	{
		LWLockRegisterTranche(PcsAio->tranche_id, "PcsDictionaries");
		pcs_aio_tranche_named = true;
	}

	/* a dictionary installed since this process read the header's copy */
	if (pcs_dict_record_is_unused(&seg->header->dictionaries.records[number - 1]))
		pcs_meta_read_dictionaries(seg);
	record = seg->header->dictionaries.records[number - 1];
	LWLockAcquire(&PcsAio->lock, LW_SHARED);
	for (int i = 0; i < PcsAio->nslots; i++)
	{
		slot = pcs_aio_slot(i);
		if (pcs_aio_slot_holds(slot, reln, seg, number, &record))
		{
			/* a pin taken under the lock keeps exclusive lockers off it */
			pg_atomic_fetch_add_u32(&slot->pins, 1);
			pg_atomic_write_u64(&slot->last_used,
								pg_atomic_fetch_add_u64(&PcsAio->clock, 1));
			LWLockRelease(&PcsAio->lock);
			return i;
		}
	}
	LWLockRelease(&PcsAio->lock);

	/* not there: read it (checked), then place it in the oldest free slot */
	if (pcs_seg_dictionary_bytes(seg, number, &record, &bytes) != PCS_SOUND)
		return -1;
	LWLockAcquire(&PcsAio->lock, LW_EXCLUSIVE);
	for (int i = 0; i < PcsAio->nslots; i++)
	{
		uint64		used;

		slot = pcs_aio_slot(i);
		if (pcs_aio_slot_holds(slot, reln, seg, number, &record))
		{
			/* another process placed it meanwhile */
			victim = i;
			break;
		}
		if (pg_atomic_read_u32(&slot->pins) != 0)
			continue;
		used = slot->valid ? pg_atomic_read_u64(&slot->last_used) : 0;
		if (used < oldest)
		{
			oldest = used;
			victim = i;
		}
	}
	if (victim >= 0)
	{
		slot = pcs_aio_slot(victim);
		if (!pcs_aio_slot_holds(slot, reln, seg, number, &record))
		{
			/* unpinned, so no I/O decodes with what it held */
			slot->valid = false;
			slot->dict = pcs_dict_place(seg->header->algorithm, bytes,
										record.bytes,
										(char *) slot + MAXALIGN(sizeof(PcsAioDictSlot)),
										PcsAio->slot_size - MAXALIGN(sizeof(PcsAioDictSlot)));
			if (slot->dict != NULL)
			{
				slot->rlocator = reln->smgr_rlocator.locator;
				slot->forknum = seg->forknum;
				slot->segno = seg->segno;
				slot->number = number;
				slot->data_crc = record.data_crc;
				slot->record_crc = record.record_crc;
				slot->valid = true;
			}
		}
		if (slot->valid)
		{
			pg_atomic_fetch_add_u32(&slot->pins, 1);
			pg_atomic_write_u64(&slot->last_used,
								pg_atomic_fetch_add_u64(&PcsAio->clock, 1));
		}
		else
			victim = -1;
	}
	LWLockRelease(&PcsAio->lock);
	pfree(bytes);
	return victim;
}

/* Give back a pin of pcs_aio_pin_dictionary(); safe in a critical section */
static void
pcs_aio_unpin_dictionary(int i)
{
	PcsAioDictSlot *slot = pcs_aio_slot(i);

	Assert(pg_atomic_read_u32(&slot->pins) > 0);
	pg_atomic_fetch_sub_u32(&slot->pins, 1);
}

/* How many blocks from segblock one asynchronous read may take at most */
static inline int
pcs_aio_run_limit(PcsSegment *seg, BlockNumber segblock, int maxblocks)
{
	BlockNumber nblocks = pcs_seg_nblocks(seg);

	maxblocks = Min(maxblocks, MAX_IO_COMBINE_LIMIT);
	return Min(maxblocks, (int) (nblocks - Min(segblock, nblocks)));
}

/*
 * Does the file of seg hold its bytes up to offset end?  The units the
 * process knows the file to hold first (its size never goes down while the
 * server runs), else its size now.  A read that stops short below the end
 * of a file has met an error on the way (the kernel returns the bytes it
 * got, and the error to the next read), which the completion of an
 * asynchronous read, which cannot read again, must not take for a file
 * shorter than its map.
 */
static bool
pcs_aio_in_file(PcsSegment *seg, uint64 end)
{
	off_t		size;

	if (end <= pcs_unit_offset(seg->header, seg->capacity))
		return true;
	size = FileSize(seg->vfd);
	if (size < 0)
		return false;
	seg->capacity = Max(seg->capacity, pcs_seg_units_below(seg, size));
	return end <= (uint64) size;
}

/*
 * Plan an asynchronous read of up to maxblocks blocks of seg from segblock
 * on (see above): the number of blocks the plan takes, 0 if none, with the
 * plan in *plan, the dictionary its images use (0 for none) in *dict and
 * where in the file the read starts in *offset.
 * Each block taken must have a sound entry (the first a non-empty one), its
 * image must follow the previous one in the file with a gap of at most
 * PCS_COALESCE_GAP, all images use one dictionary or none, and the layout
 * must leave room for the plan before the first image and start every
 * image j at or after buffer j.  The longest prefix that satisfies all this
 * is taken.  The entries cannot change until the read completes: nobody
 * writes a block back while its buffer is being read in.
 */
static int
pcs_aio_plan(PcsSegment *seg, BlockNumber segblock, int maxblocks,
			 PcsAioPlan *plan, int *dict, uint64 *offset)
{
	uint64		first_off = 0;
	uint64		end = 0;
	int64		slack = 0;		/* least of (offset of image j in the span - j *
								 * BLCKSZ) so far */
	int			taken = 0;
	int			taken_dict = 0;
	int			cur_dict = 0;
	uint64		taken_span = 0;
	uint64		rel[MAX_IO_COMBINE_LIMIT];
	PcsMapEntry entries[MAX_IO_COMBINE_LIMIT];
	uint32		limit;

	maxblocks = pcs_aio_run_limit(seg, segblock, maxblocks);
	if (maxblocks <= 0)
		return 0;

	/*
	 * One read of the entries; the limit read after them bounds their units.
	 * pcs_maxcombine() plans past the blocks a scan asked for: a block whose
	 * entries cannot be located ends the plan there, and is reported by its
	 * own read.
	 */
	maxblocks = pcs_map_entries_known(seg, segblock, maxblocks, entries);
	if (maxblocks <= 0)
		return 0;
	limit = pcs_unit_limit(seg);
	for (int i = 0; i < maxblocks; i++)
	{
		PcsMapEntry entry = entries[i];
		PcsAioImage *image = &plan->images[i];
		int64		span_start;

		if (pcs_entry_check(&entry, segblock + i, limit,
							seg->shift) != PCS_SOUND)
			break;
		if (pcs_entry_is_empty(&entry))
		{
			if (i == 0)
				break;
			image->stored = 0;
			image->flags = 0;
			image->data_crc = 0;
			rel[i] = 0;
		}
		else
		{
			uint64		off = pcs_unit_offset(seg->header, entry.first_unit);
			int			number = pcs_entry_dictionary(entry.flags);

			if (i == 0)
			{
				/* smgr_aio_reopen() takes the offset as 32 bits */
				if (off > PG_UINT32_MAX)
					break;
				first_off = end = off;
			}
			else if (off < end || off - end > PCS_COALESCE_GAP)
				break;
			if (number != 0 && cur_dict != 0 && number != cur_dict)
				break;
			if (number != 0)
				cur_dict = number;
			image->stored = entry.stored;
			image->flags = entry.flags;
			image->data_crc = entry.data_crc;
			rel[i] = off - first_off;
			slack = Min(slack, (int64) rel[i] - (int64) i * BLCKSZ);
			end = off + entry.stored;
		}

		/* the bytes read end with the last buffer; do they fit? */
		span_start = (int64) (i + 1) * BLCKSZ - (int64) (end - first_off);
		if (span_start >= (int64) PCS_AIO_PLAN_SIZE(i + 1) &&
			span_start + slack >= 0)
		{
			taken = i + 1;
			taken_dict = cur_dict;
			taken_span = end - first_off;
		}
	}
	if (taken == 0)
		return 0;

	plan->first_in_file = pcs_aio_in_file(seg, first_off + plan->images[0].stored);
	plan->magic = PCS_AIO_PLAN_MAGIC;
	plan->algorithm = seg->header->algorithm;
	plan->damaged_invalid = false;
	plan->nblocks = taken;
	plan->span_len = taken_span;
	plan->span_start = taken * BLCKSZ - taken_span;
	for (int i = 0; i < taken; i++)
	{
		if (plan->images[i].stored == 0)
			plan->images[i].start = 0;
		else
		{
			plan->images[i].start = plan->span_start + rel[i];
			/* decoding blocks before i leaves image i alone */
			Assert(plan->images[i].start >= (uint32) i * BLCKSZ);
		}
	}
	Assert(plan->span_start >= PCS_AIO_PLAN_SIZE(taken));
	*dict = taken_dict;
	*offset = first_off;
	return taken;
}

/*
 * How many blocks from segblock of a main fork (at most maxblocks) are
 * stored raw, one image after another in the file as md.c would place the
 * blocks, so that one I/O can read them straight into their buffers; 0 if
 * the first is not, or if data checksums, which then verify the pages
 * instead of the images' CRCs, are off.  Sets *offset to where the first
 * image begins.
 */
static int
pcs_aio_raw_run(PcsSegment *seg, ForkNumber forknum, BlockNumber segblock,
				int maxblocks, uint64 *offset)
{
	uint64		first_off = 0;
	int			n;
	PcsMapEntry entries[MAX_IO_COMBINE_LIMIT];
	uint32		limit;

	if (forknum != MAIN_FORKNUM || !DataChecksumsEnabled() ||
		zero_damaged_pages)
		return 0;
	maxblocks = pcs_aio_run_limit(seg, segblock, maxblocks);
	if (maxblocks <= 0)
		return 0;
	maxblocks = pcs_map_entries_known(seg, segblock, maxblocks, entries);
	if (maxblocks <= 0)
		return 0;
	limit = pcs_unit_limit(seg);
	for (n = 0; n < maxblocks; n++)
	{
		PcsMapEntry entry = entries[n];
		uint64		off;

		if (pcs_entry_check(&entry, segblock + n, limit,
							seg->shift) != PCS_SOUND ||
			pcs_entry_is_empty(&entry) ||
			(entry.flags & PCS_ENTRY_RAW) == 0)
			break;
		Assert(entry.stored == BLCKSZ);
		off = pcs_unit_offset(seg->header, entry.first_unit);
		if (n == 0)
		{
			/* smgr_aio_reopen() takes the offset as 32 bits */
			if (off > PG_UINT32_MAX)
				break;
			first_off = off;
		}
		else if (off != first_off + (uint64) n * BLCKSZ)
			break;
	}
	*offset = first_off;
	return n;
}

/* pcs_maxcombine: how many blocks one read or write from blocknum may cover */
uint32
pcs_maxcombine(SMgrRelation reln, ForkNumber forknum, BlockNumber blocknum)
{
	uint32		left = RELSEG_SIZE - blocknum % ((BlockNumber) RELSEG_SIZE);
	PcsSegment *seg;
	PcsAioPlan	plan;
	int			dict;
	uint64		offset;
	int			n;

	if (!pcs_is_compressed(reln, forknum))
		return mdmaxcombine(reln, forknum, blocknum);

	/*
	 * A read that can be planned stops where the plan does, so that the rest
	 * becomes another I/O started as early, not a partial read done again
	 * while waiting.  A read that cannot is decoded synchronously, any length
	 * (not crossing a segment, as md.c's).
	 */
	seg = pcs_getseg(reln, forknum, blocknum / RELSEG_SIZE, false);
	if (seg == NULL)
		return left;
	n = pcs_aio_plan(seg, blocknum % RELSEG_SIZE,
					 Min(left, MAX_IO_COMBINE_LIMIT), &plan, &dict, &offset);
	if (n == 0)
		n = pcs_aio_raw_run(seg, forknum, blocknum % RELSEG_SIZE,
							Min(left, MAX_IO_COMBINE_LIMIT), &offset);
	return n > 0 ? n : left;
}

/* The segment of a block being read asynchronously, which must exist */
static PcsSegment *
pcs_aio_segment(SMgrRelation reln, ForkNumber forknum, BlockNumber blocknum)
{
	PcsSegment *seg = pcs_getseg(reln, forknum, blocknum / RELSEG_SIZE, false);

	if (seg == NULL)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open segment %u of file \"%s\"",
						blocknum / RELSEG_SIZE,
						PGSTRATA_RELPATH(reln->smgr_rlocator, forknum))));
	return seg;
}

/* Read blocks synchronously, for an I/O handle to complete at once */
static void
pcs_startreadv_decoded(PgAioHandle * ioh, SMgrRelation reln,
					   ForkNumber forknum, BlockNumber blocknum,
					   void **buffers, BlockNumber nblocks)
{
	PcsSegment *seg;

	/*
	 * An error here (a damaged page) leaves the handle unstaged, as an error
	 * of md.c's in opening the segment does; the resource owner releases it
	 * and the buffers' I/O.
	 */
	pcs_readv(reln, forknum, blocknum, buffers, nblocks);

	seg = pcs_aio_segment(reln, forknum, blocknum);

	pgaio_io_set_flag(ioh, PGAIO_HF_SYNCHRONOUS);
	pgaio_io_set_target_smgr(ioh, reln, forknum, blocknum, nblocks, false);
	pgaio_io_register_callbacks(ioh, PGAIO_HCB_PCS_READV, PCS_AIO_DECODED);

	/* no bytes: the pages are in the buffers already */
	if (FileStartReadV(ioh, seg->vfd, 0, 0, WAIT_EVENT_DATA_FILE_READ) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not start reading blocks %u..%u in file \"%s\": %m",
						blocknum, blocknum + nblocks - 1,
						FilePathName(seg->vfd))));
}

/*
 * Start reading n raw images (pcs_aio_raw_run()) from offset straight into
 * the first n of the nblocks buffers, as md.c reads blocks
 */
static void
pcs_startreadv_raw(PgAioHandle * ioh, SMgrRelation reln, ForkNumber forknum,
				   BlockNumber blocknum, void **buffers, BlockNumber nblocks,
				   PcsSegment *seg, int n, uint64 offset)
{
	struct iovec *iov;

	Assert(n >= 1 && n <= (int) nblocks);

	/* past the run, empty entries, as the planned reads have */
	(void) pgaio_io_get_iovec(ioh, &iov);
	for (int i = 0; i < (int) nblocks; i++)
	{
		iov[i].iov_base = (char *) buffers[i] + (i < n ? 0 : BLCKSZ);
		iov[i].iov_len = i < n ? BLCKSZ : 0;
	}
	pcs_count_io_bytes((uint64) n * BLCKSZ);

	pgaio_io_set_target_smgr(ioh, reln, forknum, blocknum, nblocks, false);
	pgaio_io_register_callbacks(ioh, PGAIO_HCB_PCS_READV, PCS_AIO_RAW);
	if (FileStartReadV(ioh, seg->vfd, nblocks, offset,
					   WAIT_EVENT_DATA_FILE_READ) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not start reading blocks %u..%u in file \"%s\": %m",
						blocknum, blocknum + nblocks - 1,
						FilePathName(seg->vfd))));
}

/* pcs_startreadv: read consecutive blocks for an asynchronous I/O handle */
void
pcs_startreadv(PgAioHandle * ioh, SMgrRelation reln, ForkNumber forknum,
			   BlockNumber blocknum, void **buffers, BlockNumber nblocks)
{
	PcsSegment *seg;
	PcsAioPlan	plan;
	struct iovec *iov;
	uint64		offset = 0;
	int			dict = 0;
	int			slot = -1;
	int			n = 0;

	if (!pcs_is_compressed(reln, forknum))
	{
		mdstartreadv(ioh, reln, forknum, blocknum, buffers, nblocks);
		return;
	}

	if (nblocks > RELSEG_SIZE - blocknum % ((BlockNumber) RELSEG_SIZE))
		elog(ERROR, "read crossing segment boundary");
	Assert(nblocks <= MAX_IO_COMBINE_LIMIT);

	seg = pcs_getseg(reln, forknum, blocknum / RELSEG_SIZE, false);
	if (seg != NULL)
		n = pcs_aio_plan(seg, blocknum % RELSEG_SIZE, nblocks, &plan, &dict,
						 &offset);
	if (n > 0 && dict != 0)
	{
		slot = pcs_aio_pin_dictionary(reln, seg, dict);
		if (slot < 0)
			n = 0;
	}
	if (n == 0 && seg != NULL)
	{
		n = pcs_aio_raw_run(seg, forknum, blocknum % RELSEG_SIZE, nblocks,
							&offset);
		if (n > 0)
		{
			pcs_startreadv_raw(ioh, reln, forknum, blocknum, buffers, nblocks,
							   seg, n, offset);
			return;
		}
	}
	if (n == 0)
	{
		pcs_startreadv_decoded(ioh, reln, forknum, blocknum, buffers, nblocks);
		return;
	}

	/*
	 * Damaged pages of the FSM and the VM (hints) are zeroed by the buffer
	 * manager, as on md; so are all damaged pages with zero_damaged_pages.
	 */
	plan.damaged_invalid = forknum == FSM_FORKNUM ||
		forknum == VISIBILITYMAP_FORKNUM || zero_damaged_pages;
	memcpy(buffers[0], &plan, PCS_AIO_PLAN_SIZE(n));

	/*
	 * One iovec entry per buffer of the whole request, each covering the part
	 * of its buffer that the bytes read land in (a suffix of it, since they
	 * end with the last planned buffer; nothing for the buffers before the
	 * span, and for those past the plan), so that the completion finds every
	 * buffer's address as the end of its entry less a block.
	 */
	(void) pgaio_io_get_iovec(ioh, &iov);
	for (int i = 0; i < (int) nblocks; i++)
	{
		uint32		from = (uint32) i * BLCKSZ;
		uint32		skip = 0;

		if (i >= n)
			skip = BLCKSZ;
		else if (plan.span_start > from)
			skip = Min(plan.span_start - from, BLCKSZ);
		iov[i].iov_base = (char *) buffers[i] + skip;
		iov[i].iov_len = BLCKSZ - skip;
		pcs_count_io_bytes(BLCKSZ - skip);
	}

	pgaio_io_set_target_smgr(ioh, reln, forknum, blocknum, nblocks, false);
	pgaio_io_register_callbacks(ioh, PGAIO_HCB_PCS_READV,
								slot >= 0 ? PCS_AIO_SLOT0 + slot : PCS_AIO_PLAIN);
	if (FileStartReadV(ioh, seg->vfd, nblocks, offset,
					   WAIT_EVENT_DATA_FILE_READ) != 0)
	{
		int			save_errno = errno;

		if (slot >= 0)
			pcs_aio_unpin_dictionary(slot);
		errno = save_errno;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not start reading blocks %u..%u in file \"%s\": %m",
						blocknum, blocknum + nblocks - 1,
						FilePathName(seg->vfd))));
	}
}

/*
 * pcs_fd: the file and offset of a block, for an I/O performed in another
 * process (an I/O worker): for a compressed fork, where the block's image
 * begins, which is where pcs_startreadv() started the read
 */
int
pcs_fd(SMgrRelation reln, ForkNumber forknum, BlockNumber blocknum,
	   uint32 *off)
{
	PcsSegment *seg;
	PcsMapEntry entry;

	if (!pcs_is_compressed(reln, forknum))
		return mdfd(reln, forknum, blocknum, off);

	seg = pcs_aio_segment(reln, forknum, blocknum);
	entry = pcs_map_entry(seg, blocknum % RELSEG_SIZE);
	*off = (uint32) pcs_unit_offset(seg->header, entry.first_unit);
	return FileGetRawDesc(seg->vfd);
}

/* The buffer of block i of an asynchronous read, from its iovec entry */
static inline char *
pcs_aio_buffer(const struct iovec *iov, int i)
{
	return (char *) iov[i].iov_base + iov[i].iov_len - BLCKSZ;
}

/* Copy len bytes from offset start of the run's buffers into dest */
static void
pcs_aio_gather(const struct iovec *iov, uint32 start, uint32 len, char *dest)
{
	while (len > 0)
	{
		uint32		within = start % BLCKSZ;
		uint32		n = Min(len, BLCKSZ - within);

		memcpy(dest, pcs_aio_buffer(iov, start / BLCKSZ) + within, n);
		dest += n;
		start += n;
		len -= n;
	}
}

/*
 * The result of an asynchronous read of which the first done blocks came
 * in: all of them, a partial read (the buffer manager reads the rest again,
 * with a new I/O starting there), or, with none, a failed one whose first
 * block has the problem, which the issuer raises as pcs's ERROR
 */
static PgAioResult
pcs_aio_result(PgAioResult result, PgAioTargetData * td, int done,
			   PcsProblem problem)
{
	if (done == 0)
	{
		result.status = PGAIO_RS_ERROR;
		result.id = PGAIO_HCB_PCS_READV;
		result.error_data = PCS_AIO_DAMAGE(problem, 0);
		result.result = 0;
		pgaio_result_report(result, td, LOG_SERVER_ONLY);
		return result;
	}
	result.result = done;
	if (done < td->smgr.nblocks)
	{
		result.status = PGAIO_RS_PARTIAL;
		result.id = PGAIO_HCB_PCS_READV;
	}
	return result;
}

/*
 * Completion callback of pcs_startreadv(): decode what the I/O read into the
 * buffers (see above).  It runs in a critical section in any process, so it
 * allocates nothing of PostgreSQL's and raises nothing; a process's first
 * zstd decoder comes from malloc (zstd's own), and its failure is reported
 * as an image that failed to decode.
 */
static PgAioResult
pcs_aio_readv_complete(PgAioHandle * ioh, PgAioResult prior_result,
					   uint8 cb_data)
{
	PgAioTargetData *td = pgaio_io_get_target_data(ioh);
	PgAioResult result = prior_result;
	PcsAioPlan	plan;
	struct iovec *iov;
	PGIOAlignedBlock image;
	const PcsDict *dict = NULL;
	PcsProblem	problem = PCS_SOUND;
	uint32		avail;
	int			done = 0;

	if (prior_result.result < 0)
	{
		if (cb_data >= PCS_AIO_SLOT0)
			pcs_aio_unpin_dictionary(cb_data - PCS_AIO_SLOT0);
		result.status = PGAIO_RS_ERROR;
		result.id = PGAIO_HCB_PCS_READV;
		result.error_data = -prior_result.result;
		result.result = 0;
		/* as md.c's: logged now, raised by the issuer when it looks */
		pgaio_result_report(result, td, LOG_SERVER_ONLY);
		return result;
	}
	if (cb_data == PCS_AIO_DECODED)
	{
		result.result = td->smgr.nblocks;
		return result;
	}
	if (cb_data == PCS_AIO_RAW)
	{
		int			planned = 0;
		int			nread;

		/* the run is the entries of a whole block; what was read of it */
		(void) pgaio_io_get_iovec_length(ioh, &iov);
		while (planned < td->smgr.nblocks && iov[planned].iov_len == BLCKSZ)
			planned++;
		nread = Min(planned, prior_result.result / BLCKSZ);
		/* none: a file shorter than its map */
		problem = PCS_IMAGE_CUT_SHORT;

		/*
		 * The buffer manager verifies each page's checksum, which covers what
		 * the image's CRC covers on the other paths, but it takes an all-zero
		 * page for a new one.  A raw image is never all zeros (zeros
		 * compress), so such a page is a run that was lost or punched: its
		 * image fails the CRC of its entry, as a synchronous read finds.  The
		 * pages before it are read; the next read starts at it and reports
		 * it.
		 */
		for (done = 0; done < nread; done++)
		{
			if (pg_memory_is_all_zeros(pcs_aio_buffer(iov, done), BLCKSZ))
			{
				problem = PCS_IMAGE_BAD_CRC;
				break;
			}
		}
		return pcs_aio_result(result, td, done, problem);
	}

	(void) pgaio_io_get_iovec_length(ioh, &iov);
	memcpy(&plan, pcs_aio_buffer(iov, 0), offsetof(PcsAioPlan, images));
	Assert(plan.magic == PCS_AIO_PLAN_MAGIC);
	Assert(plan.nblocks >= 1 && plan.nblocks <= td->smgr.nblocks);
	memcpy(plan.images, pcs_aio_buffer(iov, 0) + offsetof(PcsAioPlan, images),
		   plan.nblocks * sizeof(PcsAioImage));
	if (cb_data >= PCS_AIO_SLOT0)
		dict = pcs_aio_slot(cb_data - PCS_AIO_SLOT0)->dict;
	avail = (uint32) prior_result.result;

	for (int i = 0; i < plan.nblocks; i++)
	{
		const PcsAioImage *img = &plan.images[i];
		char	   *page = pcs_aio_buffer(iov, i);

		if (img->stored == 0)
			problem = PCS_SOUND;
		else if (img->start + img->stored > plan.span_start + avail)
			problem = PCS_IMAGE_CUT_SHORT;
		else
		{
			/* a private copy first: the page may cover part of its image */
			pcs_aio_gather(iov, img->start, img->stored, image.data);
			if (pcs_data_crc(image.data, img->stored) != img->data_crc)
				problem = PCS_IMAGE_BAD_CRC;
			else
				problem = pcs_decode_image(plan.algorithm, img->flags,
										   image.data, img->stored, page,
										   pcs_entry_dictionary(img->flags) != 0 ? dict : NULL);
		}
		if (problem != PCS_SOUND)
		{
			PgAioResult damage = {
				.status = PGAIO_RS_WARNING,
				.id = PGAIO_HCB_PCS_READV,
				.error_data = PCS_AIO_DAMAGE(problem, i),
			};

			/*
			 * Bytes missing past the first block may be a short read: the
			 * next I/O starts there.  Bytes missing from the first image, of
			 * a file seen to hold it, are a read that stopped at an error: a
			 * failed read, not damage (the image may be sound).  Otherwise,
			 * for the first block (a file shorter than its map), the image is
			 * damaged.
			 */
			if (problem == PCS_IMAGE_CUT_SHORT && i == 0 && plan.first_in_file)
			{
				if (cb_data >= PCS_AIO_SLOT0)
					pcs_aio_unpin_dictionary(cb_data - PCS_AIO_SLOT0);
				result.status = PGAIO_RS_ERROR;
				result.id = PGAIO_HCB_PCS_READV;
				result.error_data = PCS_AIO_SHORT_READ;
				result.result = 0;
				pgaio_result_report(result, td, LOG_SERVER_ONLY);
				return result;
			}
			if ((problem == PCS_IMAGE_CUT_SHORT && i > 0) ||
				!plan.damaged_invalid)
				break;
			/* the buffer manager zeroes it with its WARNING; the log says why */
			pgaio_result_report(damage, td, LOG_SERVER_ONLY);
			pcs_invalid_page(page);
		}
		else if (img->stored == 0)
			memset(page, 0, BLCKSZ);
		done++;
	}
	if (cb_data >= PCS_AIO_SLOT0)
		pcs_aio_unpin_dictionary(cb_data - PCS_AIO_SLOT0);

	return pcs_aio_result(result, td, done, problem);
}

/* Error reporting callback of pcs_startreadv() */
static void
pcs_aio_readv_report(PgAioResult result, const PgAioTargetData * td,
					 int elevel)
{
	RelPathStr	path;

	/* no palloc: this may run in a critical section */
	path = relpathbackend(td->smgr.rlocator,
						  td->smgr.is_temp ? MyProcNumber : INVALID_PROC_NUMBER,
						  td->smgr.forkNum);

	if (result.status == PGAIO_RS_PARTIAL)
		ereport(elevel,
				errmsg("could not read blocks %u..%u in file \"%s\" at once: read only %d of %u",
					   td->smgr.blockNum,
					   td->smgr.blockNum + td->smgr.nblocks - 1,
					   path.str, result.result, td->smgr.nblocks));
	else if (result.error_data == PCS_AIO_SHORT_READ)
		ereport(elevel,
				(errcode(ERRCODE_IO_ERROR),
				 errmsg("could not read block %u in file \"%s\": the read stopped before the end of the file",
						td->smgr.blockNum, path.str),
				 errdetail("The kernel returned fewer bytes than asked below the end of the file, as it does when a read meets an I/O error part way."),
				 errhint("Check the storage device for errors.")));
	else if (result.error_data & PCS_AIO_PROBLEM)
	{
		PcsProblem	problem = (PcsProblem) (result.error_data & 0xFF);
		uint32		i = (result.error_data >> 8) & 0xFF;

		ereport(elevel,
				(errcode(pcs_problem_errcode(problem)),
				 errmsg("invalid compressed page in block %u of relation %s",
						td->smgr.blockNum + i, path.str),
				 errdetail("%s", _(pcs_problem_message(problem)))));
	}
	else
	{
		errno = result.error_data;
		ereport(elevel,
				errcode_for_file_access(),
				errmsg("could not read blocks %u..%u in file \"%s\": %m",
					   td->smgr.blockNum,
					   td->smgr.blockNum + td->smgr.nblocks - 1,
					   path.str));
	}
}

const		PgAioHandleCallbacks aio_pcs_readv_cb = {
	.complete_shared = pcs_aio_readv_complete,
	.report = pcs_aio_readv_report,
};
