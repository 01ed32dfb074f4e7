/*-------------------------------------------------------------------------
 *
 * pcs.c
 *	  Page-compressed storage: the storage manager of compressed tablespaces.
 *
 * Every relation goes through this storage manager.  A fork whose segment 0
 * starts with the pcs magic is compressed and handled here; every other fork
 * is passed to md.c unchanged.  The format is decided when the fork is
 * created, from the marker file that CREATE TABLESPACE ... WITH (compression)
 * leaves in the tablespace directory, and recognised afterwards from the
 * segment's own header, never from the catalog.
 *
 * Segments are named as md.c names them, so md.c unlinks them and its sync
 * handler fsyncs them (one fsync covers a segment's header, map and data).
 *
 * This file holds the smgr callbacks, the per-fork format (is a fork
 * compressed, and when does an empty one become so) and block I/O: reading
 * and writing the image of one block through its map entry.  Below it lie
 * one segment (pcs_segment.c) and its dictionaries (pcs_dict.c); above it,
 * PostgreSQL 18's asynchronous reads (pcs_aio.c).  What the files share is
 * in storage/pcs_internal.h.
 *
 * The design, the layout and the crash-safety argument are in README.pcs.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/backend/storage/smgr/pcs.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/xlogutils.h"
#include "pgstat.h"
#include "pgstrata_compat.h"
#include "storage/md.h"
#include "storage/pcs_internal.h"
#include "utils/injection_point.h"

/* Tries at reading a block whose write a reader may meet half done */
#define PCS_READ_TRIES			9

/* Room for one coalesced read: every image raw, with gaps between them */
#define PCS_STAGING_SIZE		(MAX_IO_COMBINE_LIMIT * (BLCKSZ + PCS_COALESCE_GAP))

/* One block of a vectored read, with the place of its image on disk */
typedef struct PcsReadItem
{
	off_t		start;			/* file offset of the image */
	int			len;			/* its stored length */
	int			index;			/* its place in the caller's buffers[] */
	PcsMapEntry entry;
} PcsReadItem;

static char *pcs_staging = NULL;

/*
 * The SQLSTATE of an image that cannot be read back: ERRCODE_DATA_CORRUPTED,
 * unless the build lacks what the image needs or memory ran out
 */
int
pcs_problem_errcode(PcsProblem problem)
{
	if (problem == PCS_IMAGE_NO_ZSTD || problem == PCS_IMAGE_NO_LZ4)
		return ERRCODE_FEATURE_NOT_SUPPORTED;
	if (problem == PCS_IMAGE_NO_MEMORY)
		return ERRCODE_OUT_OF_MEMORY;
	return ERRCODE_DATA_CORRUPTED;
}

/* Raise the ERROR of a block whose image cannot be read */
static void
pcs_block_corrupt(SMgrRelation reln, ForkNumber forknum, BlockNumber blkno,
				  PcsProblem problem)
{
	ereport(ERROR,
			(errcode(pcs_problem_errcode(problem)),
			 errmsg("invalid compressed page in block %u of relation %s",
					blkno, PGSTRATA_RELPATH(reln->smgr_rlocator, forknum)),
			 errdetail("%s", _(pcs_problem_message(problem)))));
}

/*
 * Before the first extension of a fork found empty, make an all-zero
 * segment 0 (pcs_segment0_is_blank()) empty again, so that md.c
 * extends it from its first byte: written at md offsets over a file of
 * a header's (or version 4's data area's) length, its blocks would come
 * after zero pages that nobody wrote.  The caller holds the relation's extension lock, or is the
 * startup process; a reader that looks at the file meanwhile sees an empty
 * fork either way.
 */
static void
pcs_forget_blank_file(SMgrRelation reln, ForkNumber forknum)
{
	char	   *path;
	int			fd;
	struct stat st;

	/* cached: md or compressed; an empty fork's format is never cached */
	if (reln->pcs_format[forknum] != PCS_FORMAT_UNKNOWN)
		return;
	path = PGSTRATA_RELPATH(reln->smgr_rlocator, forknum);
	fd = OpenTransientFile(path, O_RDWR | PG_BINARY);
	if (fd < 0)
	{
		pfree(path);
		return;					/* md.c reports what is wrong */
	}
	if (fstat(fd, &st) == 0 && pcs_segment0_is_blank(fd, st.st_size) &&
		ftruncate(fd, 0) < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not truncate file \"%s\": %m", path)));
	CloseTransientFile(fd);
	pfree(path);
}

/*
 * Find out whether a fork is compressed, from the first bytes of its
 * segment 0, and remember the answer.  A fork whose file does not exist yet
 * stays unknown, and md.c decides what that means; one whose file is empty
 * is PCS_FORMAT_EMPTY, which is not remembered (below).
 */
int
pcs_fork_format(SMgrRelation reln, ForkNumber forknum)
{
	char	   *path = PGSTRATA_RELPATH(reln->smgr_rlocator, forknum);
	char		head[offsetof(PcsHeader, version) + sizeof(uint32)];
	uint64		magic = 0;
	uint32		version = 0;
	int			fd;
	int			nread;
	struct stat st;
	bool		blank;

	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno != ENOENT)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not open file \"%s\": %m", path)));
		pfree(path);
		return PCS_FORMAT_UNKNOWN;
	}
	nread = pg_pread(fd, head, sizeof(head), 0);
	if (nread < 0 || fstat(fd, &st) < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", path)));
	if (nread >= (int) sizeof(magic))
		memcpy(&magic, head, sizeof(magic));
	if (nread >= (int) sizeof(head))
		memcpy(&version, head + offsetof(PcsHeader, version), sizeof(version));
	blank = nread >= (int) sizeof(magic) && magic == 0 &&
		pcs_segment0_is_blank(fd, st.st_size);
	CloseTransientFile(fd);
	pfree(path);

	/*
	 * A file too short for the magic is an md fork without data, or a
	 * compressed fork whose creator has made the file and not yet written its
	 * header: pcs_create() does one after the other, and readers of the free
	 * space map and the visibility map look at a fork without the lock its
	 * creator holds.  Remembering "md" would make this backend read, and
	 * write, the compressed file as an md file once the header is there, so
	 * the answer is not kept: the fork counts as empty until it has bytes.
	 */
	if (nread < (int) sizeof(magic))
		return PCS_FORMAT_EMPTY;

	/*
	 * The same held a moment later in builds of versions 2 to 4, whose
	 * pcs_init_segment_file() wrote the header, then sized the file to its
	 * data area: a file of theirs of exactly the header's size has no block
	 * yet (a crash may also leave one), and counts as empty, not as a damaged
	 * compressed file.  Any other file of theirs shorter than the data area
	 * is reported as damaged when it is opened.  In version 5 the header is
	 * all a new segment holds.
	 */
	if (magic == PCS_MAGIC && st.st_size == PCS_HEADER_SIZE &&
		version >= PCS_FORMAT_VERSION_2 && version <= PCS_FORMAT_VERSION_4)
		return PCS_FORMAT_EMPTY;

	/*
	 * And after an operating system crash that kept the file's size and lost
	 * its header: a file of exactly the header's size (version 4's data
	 * area's), all zeros (pcs_segment0_is_blank()).
	 */
	if (blank)
		return PCS_FORMAT_EMPTY;

	reln->pcs_format[forknum] =
		(nread >= (int) sizeof(magic) && magic == PCS_MAGIC) ?
		PCS_FORMAT_COMPRESSED : PCS_FORMAT_MD;
	return reln->pcs_format[forknum];
}

/*
 * The settings of the compression of a new fork of reln: those of its
 * tablespace, or those pcs_debug_force_compression imposes; false if its
 * forks are made as md files.
 */
static bool
pcs_new_fork_settings(SMgrRelation reln, PcsAlgorithm *algorithm, int *level)
{
	return pcs_tablespace_settings(reln->smgr_rlocator.locator.spcOid,
								   algorithm, level) ||
		pcs_forced_settings(algorithm, level);
}

/* Close the open segments of a fork, giving up their prepared dictionaries */
static void
pcs_close_fork_segments(SMgrRelation reln, ForkNumber forknum)
{
	for (int i = 0; i < reln->pcs_num_segs[forknum]; i++)
	{
		if (reln->pcs_segs[forknum][i] != NULL)
			pcs_seg_free_dictionaries(reln->pcs_segs[forknum][i]);
	}
	pcs_close_segments(reln, forknum);
}

/*
 * Write the header of segment 0 of a fork found empty, at its first
 * extension: from then on the fork is compressed.  The caller holds the
 * relation's extension lock, or is the startup process, so no other process
 * extends the fork meanwhile; readers see an empty fork until the file has
 * its size (pcs_fork_format()).
 */
static void
pcs_make_fork(SMgrRelation reln, ForkNumber forknum, PcsAlgorithm algorithm,
			  int level)
{
	char	   *path;
	File		vfd;
	off_t		size;

	Assert(reln->pcs_format[forknum] == PCS_FORMAT_UNKNOWN);

	/* durable before the fork is (pcs_tablespace.c) */
	pcs_note_compressed_storage();
	/* the file exists, empty, and others can see it (pcs_fork_format) */
	PGSTRATA_INJECTION_POINT("pcs-create-before-header");

	path = PGSTRATA_RELPATH(reln->smgr_rlocator, forknum);
	vfd = PathNameOpenFile(path, O_RDWR | PG_BINARY);
	if (vfd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
	size = FileSize(vfd);
	if (size > 0 && pcs_segment0_is_blank(FileGetRawDesc(vfd), size))
	{
		/*
		 * An operating system crash left the fork sized but without its
		 * header: empty it, then make it as if new, so that a reader
		 * meanwhile sees an empty fork, never a blank header in a file of
		 * full size.
		 */
		if (FileTruncate(vfd, 0, WAIT_EVENT_DATA_FILE_TRUNCATE) < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not truncate file \"%s\": %m", path)));
		size = 0;
	}
	/* a header without its size yet (a crash between the two): again */
	if (size == 0 || size == PCS_HEADER_SIZE)
		pcs_init_segment_file(vfd, 0, algorithm, level, !SmgrIsTemp(reln));
	FileClose(vfd);
	pfree(path);

	pcs_close_fork_segments(reln, forknum);
	reln->pcs_format[forknum] = PCS_FORMAT_UNKNOWN;
}

/*
 * Is this fork compressed, for an extension?  A fork whose file is empty is
 * made compressed here if its tablespace compresses (pcs_make_fork()): the
 * header of a compressed fork is written at its first extension, not at its
 * creation, so that an empty fork takes no storage, as an empty md fork
 * does.  Otherwise the fork is extended by md.c.
 */
static bool
pcs_extends_compressed(SMgrRelation reln, ForkNumber forknum)
{
	int			format = reln->pcs_format[forknum];
	PcsAlgorithm algorithm;
	int			level;

	if (likely(format != PCS_FORMAT_UNKNOWN))
		return format == PCS_FORMAT_COMPRESSED;
	format = pcs_fork_format(reln, forknum);
	if (format == PCS_FORMAT_COMPRESSED)
		return true;
	if (format != PCS_FORMAT_EMPTY ||
		!pcs_new_fork_settings(reln, &algorithm, &level))
	{
		/* md, or no file at all, which md.c reports */
		pcs_forget_blank_file(reln, forknum);
		return false;
	}
	pcs_make_fork(reln, forknum, algorithm, level);
	if (!pcs_is_compressed(reln, forknum))
		elog(ERROR, "could not make file \"%s\" a compressed fork",
			 PGSTRATA_RELPATH(reln->smgr_rlocator, forknum));
	return true;
}

/*
 * Fill buffer with a page that PageIsVerifiedExtended() rejects whether data
 * checksums are on or not: not new (pd_upper is not 0), and with flag bits
 * no page has.
 */
void
pcs_invalid_page(char *buffer)
{
	PageHeader	page PG_USED_FOR_ASSERTS_ONLY = (PageHeader) buffer;

	memset(buffer, 0xFF, BLCKSZ);
	Assert(!PageIsNew((Page) buffer));
	Assert((page->pd_flags & ~PD_VALID_FLAG_BITS) != 0);
}

/*
 * Read the page of one entry of a segment (entry, a copy of the map's entry
 * of block segblock, checked against limit, the first unit not handed out
 * when it was read after the entry) into buffer, through image (a staging
 * block): PCS_SOUND, or what is wrong.  An empty entry reads as a zero page.
 */
static PcsProblem
pcs_read_image(PcsSegment *seg, const PcsMapEntry *entry, uint32 limit,
			   BlockNumber segblock, char *image, char *buffer)
{
	PcsProblem	problem;
	const PcsDict *dict = NULL;
	int			nread;

	problem = pcs_entry_check(entry, segblock, limit, seg->shift);
	if (problem != PCS_SOUND)
		return problem;
	if (pcs_entry_is_empty(entry))
	{
		memset(buffer, 0, BLCKSZ);
		return PCS_SOUND;
	}

	/* a sound entry's image fits the staging block */
	Assert(entry->stored > 0 && entry->stored <= BLCKSZ);
	nread = pcs_read_fully(seg, image, entry->stored,
						   pcs_unit_offset(seg->header, entry->first_unit));
	if (nread < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read block %u in file \"%s\": %m",
						seg->segno * RELSEG_SIZE + segblock,
						FilePathName(seg->vfd))));
	pcs_count_io_bytes(nread);
	if (nread != entry->stored)
		return PCS_IMAGE_CUT_SHORT;
	if (pcs_data_crc(image, entry->stored) != entry->data_crc)
		return PCS_IMAGE_BAD_CRC;
	if (pcs_entry_dictionary(entry->flags) != 0)
	{
		problem = pcs_seg_dictionary(seg, pcs_entry_dictionary(entry->flags),
									 &dict);
		if (problem != PCS_SOUND)
			return problem;
	}
	return pcs_decode_image(seg->header->algorithm, entry->flags, image,
							entry->stored, buffer, dict);
}

/* Read one block of a compressed fork into buffer */
static void
pcs_read_block(SMgrRelation reln, ForkNumber forknum, BlockNumber blkno,
			   char *buffer)
{
	BlockNumber segno = blkno / RELSEG_SIZE;
	BlockNumber segblock = blkno % RELSEG_SIZE;
	PcsSegment *seg = pcs_getseg(reln, forknum, segno, false);
	PcsMapEntry entry;
	PcsProblem	problem = PCS_SOUND;
	PGIOAlignedBlock image;
	BlockNumber nblocks = 0;
	uint32		limit = 0;

	/*
	 * The entry, then the block count and the allocation word in one read:
	 * the limit read after the entry bounds every unit it names.
	 */
	if (seg != NULL)
	{
		entry = pcs_map_entry(seg, segblock);
		pcs_seg_words(seg, &nblocks, &limit);
	}
	if (seg == NULL || segblock >= nblocks)
	{
		/* as md.c: past the end is an error, but not where zeros are expected */
		if (zero_damaged_pages || InRecovery)
		{
			memset(buffer, 0, BLCKSZ);
			return;
		}
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("could not read block %u in file \"%s\": block is past the end of the compressed segment",
						blkno, PGSTRATA_RELPATH(reln->smgr_rlocator, forknum))));
	}

	/*
	 * The buffer manager lets nobody read a block from disk while it is being
	 * written, but a reader that bypasses the buffer pool (pg_prewarm in
	 * 'read' mode) can meet a write half done: an entry being stored (it
	 * fails its check), or an image overwritten in place while the entry
	 * still describes the one before (its CRC fails).  The writer finishes
	 * within the time of a write, so a block that fails is read again, entry
	 * and image, at once if its entry changed meanwhile, else after a wait
	 * that doubles from 1 ms (PCS_READ_TRIES tries, a quarter of a second in
	 * all), before it is called damaged.
	 */
	for (int tries = 1;; tries++)
	{
		PcsMapEntry again;

		if (tries > 1)
		{
			entry = pcs_map_entry(seg, segblock);
			limit = pcs_unit_limit(seg);
		}
		problem = pcs_read_image(seg, &entry, limit, segblock, image.data,
								 buffer);
		if (problem == PCS_SOUND || tries >= PCS_READ_TRIES)
			break;
		again = pcs_map_entry(seg, segblock);
		if (memcmp(&entry, &again, sizeof(PcsMapEntry)) == 0)
			pg_usleep(1000L << (tries - 1));
	}
	if (problem == PCS_SOUND)
		return;

	/*
	 * The free space map and the visibility map are hints, read with
	 * RBM_ZERO_ON_ERROR: the buffer manager zeroes a page of theirs that
	 * fails verification, and redo depends on that, because their pages are
	 * changed without full-page images (an FSM page torn by an OS crash is
	 * normal).  So a damaged image of theirs is handed up as a page that
	 * fails verification, and the buffer manager zeroes it with its own
	 * WARNING, as it would on md; this one says what was wrong.
	 */
	if (forknum == FSM_FORKNUM || forknum == VISIBILITYMAP_FORKNUM)
	{
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid compressed page in block %u of relation %s",
						blkno, PGSTRATA_RELPATH(reln->smgr_rlocator, forknum)),
				 errdetail("%s", _(pcs_problem_message(problem)))));
		pcs_invalid_page(buffer);
		return;
	}

	if (zero_damaged_pages)
	{
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid compressed page in block %u of relation %s; zeroing out page",
						blkno, PGSTRATA_RELPATH(reln->smgr_rlocator, forknum)),
				 errdetail("%s", _(pcs_problem_message(problem)))));
		memset(buffer, 0, BLCKSZ);
		return;
	}
	pcs_block_corrupt(reln, forknum, blkno, problem);
}

/* Order read items by their place on disk */
static int
pcs_read_item_cmp(const void *a, const void *b)
{
	off_t		sa = ((const PcsReadItem *) a)->start;
	off_t		sb = ((const PcsReadItem *) b)->start;

	return (sa > sb) - (sa < sb);
}

/*
 * Read consecutive blocks of one segment, fetching images that lie close
 * together on disk with one read each (PCS_COALESCE_GAP).  Logically
 * adjacent blocks are usually physically adjacent too, since a load writes
 * them in order, but a page that grew was moved, so the images are sorted
 * by offset first.  A block this fast path cannot settle (no image, an
 * entry that fails its check, an image that fails its CRC or does not
 * decompress, a short read) is read again alone by pcs_read_block(), which
 * retries, zeroes or reports it; so errors are raised in one place only.
 */
static void
pcs_read_segment_blocks(SMgrRelation reln, ForkNumber forknum,
						BlockNumber blocknum, void **buffers, int nblocks)
{
	BlockNumber segblock = blocknum % RELSEG_SIZE;
	PcsSegment *seg = pcs_getseg(reln, forknum, blocknum / RELSEG_SIZE, false);
	PcsReadItem items[MAX_IO_COMBINE_LIMIT];
	bool		done[MAX_IO_COMBINE_LIMIT];
	PcsMapEntry entries[MAX_IO_COMBINE_LIMIT];
	BlockNumber count = 0;
	uint32		limit = 0;
	int			nitems = 0;
	int			i;

	Assert(nblocks <= MAX_IO_COMBINE_LIMIT);
	memset(done, 0, sizeof(done));

	if (seg != NULL)
	{
		pcs_map_entries(seg, segblock, nblocks, entries);
		/* the limit read after the entries bounds every unit they name */
		pcs_seg_words(seg, &count, &limit);
	}
	if (seg != NULL && segblock + nblocks <= count)
	{
		for (i = 0; i < nblocks; i++)
		{
			PcsReadItem *item = &items[nitems];

			item->entry = entries[i];
			if (pcs_entry_is_empty(&item->entry) ||
				pcs_entry_check(&item->entry, segblock + i,
								limit, seg->shift) != PCS_SOUND)
				continue;
			item->start = pcs_unit_offset(seg->header, item->entry.first_unit);
			item->len = item->entry.stored;
			item->index = i;
			nitems++;
		}
	}
	if (nitems > 1)
		qsort(items, nitems, sizeof(PcsReadItem), pcs_read_item_cmp);

	if (pcs_staging == NULL && nitems > 1)
		pcs_staging = MemoryContextAllocAligned(PcsCxt, PCS_STAGING_SIZE,
												PG_IO_ALIGN_SIZE, 0);

	for (int first = 0; first < nitems;)
	{
		int			last = first;
		off_t		end = items[first].start + items[first].len;
		int			nread;

		/* extend the run while the next image is near and fits */
		while (last + 1 < nitems &&
			   items[last + 1].start - end <= PCS_COALESCE_GAP &&
			   items[last + 1].start + items[last + 1].len - items[first].start <= PCS_STAGING_SIZE)
		{
			last++;
			end = Max(end, items[last].start + items[last].len);
		}

		if (first == last)
		{
			/* a lone image: pcs_read_block() reads it straight away */
			first++;
			continue;
		}

		nread = FileRead(seg->vfd, pcs_staging, end - items[first].start,
						 items[first].start, WAIT_EVENT_DATA_FILE_READ);
		if (nread < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read blocks %u..%u in file \"%s\": %m",
							blocknum, blocknum + nblocks - 1,
							FilePathName(seg->vfd))));
		pcs_count_io_bytes(nread);

		for (i = first; i <= last; i++)
		{
			PcsReadItem *item = &items[i];
			char	   *image = pcs_staging + (item->start - items[first].start);
			char	   *page = buffers[item->index];

			int			number = pcs_entry_dictionary(item->entry.flags);
			const PcsDict *dict = NULL;

			if (item->start + item->len - items[first].start > nread ||
				pcs_data_crc(image, item->len) != item->entry.data_crc)
				continue;
			if (number != 0 &&
				pcs_seg_dictionary(seg, number, &dict) != PCS_SOUND)
				continue;
			if (pcs_decode_image(seg->header->algorithm, item->entry.flags,
								 image, item->len, page, dict) != PCS_SOUND)
				continue;
			done[item->index] = true;
		}
		first = last + 1;
	}

	for (i = 0; i < nblocks; i++)
		if (!done[i])
			pcs_read_block(reln, forknum, blocknum + i, buffers[i]);
}

/*
 * Write one block of a compressed fork: in place if its allocation holds the
 * new image, else into fresh units, then switch the entry.  extend says the
 * block may lie past the segment's end, which then moves.
 *
 * Why every crash point is safe (README.pcs has the whole argument; a copy
 * of a running cluster is pcs_copy_recovery.c's):
 * - fresh units come from pcs_allocate(), which never hands out a unit
 *   twice in a server's life, nor one that an entry left on disk by an
 *   earlier life points to, so an entry on disk can only point to this
 *   block's data;
 * - the image is written before the entry points to it: a crash between the
 *   two leaves the old entry, and the old image intact when it moved;
 * - an image overwritten in place, or an entry that reached disk without its
 *   image, fails its CRC, but this write follows a change covered by a
 *   full-page image since the last checkpoint (full_page_writes and WAL-
 *   logged hint bits are required), and redo restores the page from it
 *   without reading it;
 * - the block count moves after the entry: a count that did not reach disk
 *   only hides a block that redo extends and restores again.
 */
static void
pcs_write_block(SMgrRelation reln, ForkNumber forknum, BlockNumber blkno,
				const char *buffer, bool skipFsync, bool extend)
{
	BlockNumber segno = blkno / RELSEG_SIZE;
	BlockNumber segblock = blkno % RELSEG_SIZE;
	PcsSegment *seg;
	PGIOAlignedBlock page;
	PGIOAlignedBlock image;
	PcsMapEntry old;
	PcsMapEntry entry;
	uint32		limit;
	const char *src;
	int			len;
	int			units;
	uint32		first;
	uint8		image_flags;
	BlockNumber nblocks;
	bool		old_sound;
	bool		in_place;
	bool		relocated = false;
	bool		reused = false;
	int			backing_error = 0;
	PcsFreeKey	key;
	const PcsDict *dict;
	int			dict_number = 0;
	bool		sync_early = false;

	if (extend)
		pcs_fill_segments_before(reln, forknum, segno, skipFsync);
	seg = pcs_getseg(reln, forknum, segno, extend);
	if (seg == NULL)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write block %u in file \"%s\": segment does not exist",
						blkno, PGSTRATA_RELPATH(reln->smgr_rlocator, forknum))));

	/* an extension is refused where md's would fail, for want of a block */
	if (extend && segblock >= pcs_seg_nblocks(seg))
		pcs_reserve_check_extension(reln->smgr_rlocator.locator.spcOid,
									FilePathName(seg->vfd), 1);

	/* before anything is written, as the map is stored to last */
	pcs_map_chunk_ready(reln, seg, segblock, !extend);

	/*
	 * Work on a copy: hint bits may change in a shared buffer while it is
	 * written, and the image, its CRC and what reaches disk must agree.
	 */
	memcpy(page.data, buffer, BLCKSZ);
	if (extend)
		pcs_seg_sample(reln, forknum, seg, segblock, page.data);
	dict = pcs_seg_current_dictionary(seg, &dict_number);
	len = pcs_compress_page(seg->header->algorithm, seg->header->level,
							page.data, image.data, BLCKSZ, &image_flags,
							&seg->codec, dict, dict_number);
	if (len < 0)
	{
		src = page.data;
		len = BLCKSZ;
	}
	else
		src = image.data;

	/* the old entry, then the block count and the limit in one read */
	old = pcs_map_entry(seg, segblock);
	pcs_seg_words(seg, &nblocks, &limit);
	old_sound = segblock < nblocks && !pcs_entry_is_empty(&old) &&
		pcs_entry_check(&old, segblock, limit, seg->shift) == PCS_SOUND;

	/*
	 * While the server recovers from a copy of a running cluster, the old
	 * units may be named by another block's entry too: write elsewhere
	 * (pcs_copy_recovery.c).  Temporary relations are never in a copy.
	 */
	in_place = old_sound && old.units >= pcs_units_for(len, seg->shift) &&
		(SmgrIsTemp(reln) || !pcs_copy_recovery_active());
	if (in_place)
	{
		first = old.first_unit;
		units = old.units;
	}
	else
	{
		/* a block that had a sound allocation too small for it has grown */
		units = pcs_units_to_allocate(len, old_sound, seg->shift);
		pcs_free_key(reln, forknum, segno, &key);
		reused = pcs_claim_units(&key, units, &first);
		if (reused)
		{
			/* a punched hole: its space is taken as growth takes it */
			PGSTRATA_INJECTION_POINT("pcs-write-reuse");
			backing_error = pcs_seg_back_units(reln, seg, first, units,
											   !extend);
		}
		else
			first = pcs_allocate(reln, seg, units, !extend);
		relocated = true;
	}

	/* the image fits its units, which lie inside the file */
	Assert(len > 0 && len <= BLCKSZ && pcs_units_for(len, seg->shift) <= units);
	Assert((uint64) first + units <= pcs_unit_limit(seg) || !relocated);
	if (backing_error != 0 ||
		FileWrite(seg->vfd, src, len, pcs_unit_offset(seg->header, first),
				  extend ? WAIT_EVENT_DATA_FILE_EXTEND : WAIT_EVENT_DATA_FILE_WRITE) != len)
	{
		int			save_errno = backing_error != 0 ? backing_error : errno;

		/* units claimed from the pool go back: no entry points to them */
		if (reused)
			pcs_free_units(&key, seg->header, first, units, true, false, -1);
		errno = save_errno;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write block %u in file \"%s\": %m",
						blkno, FilePathName(seg->vfd)),
				 errhint("Check free disk space.")));
	}
	pcs_count_io_bytes(len);
	PGSTRATA_INJECTION_POINT("pcs-write-after-image");
	if (first != old.first_unit && !pcs_entry_is_empty(&old))
		PGSTRATA_INJECTION_POINT("pcs-write-relocate");

	pcs_entry_set(&entry, segblock, first, len, units, image_flags,
				  pcs_data_crc(src, len), seg->shift);
	pcs_map_store(seg, segblock, &entry);

	/*
	 * The old units are free now, reusable once a map without them is durable
	 * (pcs_free_pool.c).  Entries of blocks past the end were never this
	 * process's to free: a crash left them, and the first allocation of this
	 * generation counted their units as free already.
	 */
	if (relocated && old_sound)
	{
		/* key was filled in when fresh units were sought */
		sync_early = pcs_free_units(&key, seg->header, old.first_unit,
									old.units, SmgrIsTemp(reln), false,
									seg->vfd);
	}

	if (extend && segblock >= nblocks)
	{
		/* blocks skipped over read as zeros, as in an md file with a hole */
		pcs_seg_clear(seg, nblocks, segblock);
		pcs_seg_raise_nblocks(seg, segblock + 1);
	}

	if (!skipFsync)
	{
		pcs_register_dirty(reln, forknum, segno, seg);

		/*
		 * Units freed here wait for the segment's next fsync; once a megabyte
		 * waits, the background writer fsyncs it soon rather than leave a
		 * checkpoint interval of rewrites as garbage.  Not here: this process
		 * holds the buffer's content lock and its I/O.  (A caller that skips
		 * the fsync syncs the fork itself, soon.)
		 */
		if (sync_early)
			pcs_free_want_sync(&key);
	}
}

/*
 * The size of a file as size functions report it: for a compressed segment
 * the bytes the file system allocated to it (the map of versions 2 to 4 is
 * mostly a hole, and its data area is the point), for any other file its
 * length.
 */
off_t
pcs_file_size(const char *path, const struct stat *st)
{
	uint64		magic = 0;
	int			fd;

	if (!S_ISREG(st->st_mode) || st->st_size < PCS_HEADER_SIZE)
		return st->st_size;

	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
		return st->st_size;		/* gone meanwhile: as stat saw it */
	if (pg_pread(fd, &magic, sizeof(magic), 0) != sizeof(magic))
		magic = 0;
	CloseTransientFile(fd);

	return magic == PCS_MAGIC ? (off_t) st->st_blocks * 512 : st->st_size;
}

/* The map entry of block segblock of a segment seen through pcs_segment_view() */
PcsMapEntry
pcs_view_entry(const PcsSegmentView *view, BlockNumber segblock)
{
	Assert(view->seg != NULL && view->seg->header == view->header);
	return pcs_map_entry(view->seg, segblock);
}

/*
 * fsync the segments whose early fsync writers asked for: called by the
 * background writer before each of its rounds (patch 0036).  A writer that
 * has freed a megabyte of units in a segment since its last fsync holds a
 * buffer's content lock, so it asks instead of fsyncing itself
 * (pcs_free_want_sync()); so does the first allocation of a server
 * generation in a segment, which found the units its map does not use
 * (pcs_publish_free_runs()).  The fsync makes those units reusable
 * (pcs_sync_done()), as the checkpoint's would.  A segment gone since, or
 * no longer compressed, is skipped.
 */
void
pcs_sync_wanted_segments(void)
{
	PcsFreeKey	keys[16];
	int			n;

	while ((n = pcs_take_wanted_syncs(keys, lengthof(keys))) > 0)
	{
		PGSTRATA_INJECTION_POINT("pcs-early-sync");
		for (int i = 0; i < n; i++)
		{
			SMgrRelation reln = smgropen(keys[i].rlocator, keys[i].backend);
			PcsSegment *seg;

			Assert(keys[i].backend == INVALID_PROC_NUMBER);
			if (!pcs_fork_is_compressed(reln, keys[i].forknum))
				continue;
			seg = pcs_getseg(reln, keys[i].forknum, keys[i].segno, false);
			if (seg != NULL)
				pcs_sync_now(reln, keys[i].forknum, seg,
							 WAIT_EVENT_DATA_FILE_SYNC);
		}
	}
}

/* Is this fork of reln stored compressed?  For callers outside pcs.c. */
bool
pcs_fork_is_compressed(SMgrRelation reln, ForkNumber forknum)
{
	return pcs_exists(reln, forknum) && pcs_is_compressed(reln, forknum);
}

/*
 * A read-only view of segment segno of a compressed fork, for code that
 * reports on the format (the pgstrata extension's statistics): false if the
 * fork is not compressed or has no such segment.  The header and map are
 * those in memory (pages still dirty in shared buffers count as they were
 * last written), and stay valid until the next call into this file.
 */
bool
pcs_segment_view(SMgrRelation reln, ForkNumber forknum, BlockNumber segno,
				 PcsSegmentView *view)
{
	PcsSegment *seg;
	struct stat st;

	if (!pcs_fork_is_compressed(reln, forknum))
		return false;
	seg = pcs_getseg(reln, forknum, segno, false);
	if (seg == NULL)
		return false;
	/* dictionaries installed since the segment was opened count too */
	if ((seg->header->flags & PCS_HEADER_DICTIONARIES) != 0)
		pcs_meta_read_dictionaries(seg);
	view->header = seg->header;
	view->seg = seg;
	view->segno = segno;
	view->nblocks = pcs_seg_nblocks(seg);
	view->unit_limit = pcs_unit_limit(seg);
	view->shift = seg->shift;
	view->physical_bytes = fstat(FileGetRawDesc(seg->vfd), &st) == 0 ?
		(uint64) st.st_blocks * 512 : 0;
	view->map_units = 0;
	if (pcs_header_has_directory(seg->header))
	{
		uint32		unit;

		/* one read of the directory, not one of each slot */
		if (pcs_directory_lookup(seg, true, &unit) > 0)
		{
			PcsDirectory *directory = palloc(sizeof(PcsDirectory));

			view->map_units += pcs_directory_units(seg->shift);
			pcs_directory_read(seg, unit, directory);
			for (int page = 0; page < PCS_MAP_PAGES; page++)
			{
				bool		present;
				uint32		page_unit;

				if (pcs_directory_decode(seg->header, seg->segno, page,
										 directory->slots[page], &present,
										 &page_unit) == PCS_SOUND && present)
					view->map_units += pcs_map_page_units(seg->shift);
			}
			pfree(directory);
		}
	}
	return true;
}

/*
 * smgr callbacks.  Each passes md forks to md.c and handles compressed ones.
 */

/* pcs_open: prepare the per-fork state of a new SMgrRelation */
void
pcs_open(SMgrRelation reln)
{
	for (int fork = 0; fork <= MAX_FORKNUM; fork++)
	{
		reln->pcs_format[fork] = PCS_FORMAT_UNKNOWN;
		reln->pcs_num_segs[fork] = 0;
		reln->pcs_segs[fork] = NULL;
	}
	pcs_free_attach();
	pcs_meta_attach();
	mdopen(reln);
}

/* pcs_close: close a fork; its format is looked up again on next use */
void
pcs_close(SMgrRelation reln, ForkNumber forknum)
{
	pcs_close_fork_segments(reln, forknum);
	reln->pcs_format[forknum] = PCS_FORMAT_UNKNOWN;
	mdclose(reln, forknum);
}

/*
 * pcs_create: create a fork.  Its file is made empty, as md.c makes it;
 * if its tablespace compresses (or pcs_debug_force_compression says so), its
 * first extension writes the header that makes it compressed
 * (pcs_extends_compressed()).
 */
void
pcs_create(SMgrRelation reln, ForkNumber forknum, bool isRedo)
{
	PcsAlgorithm algorithm;
	int			level;

	if (!pcs_new_fork_settings(reln, &algorithm, &level))
	{
		mdcreate(reln, forknum, isRedo);
		return;
	}

	if (isRedo && pcs_is_compressed(reln, forknum))
		return;

	/* durable before the fork is (pcs_tablespace.c) */
	pcs_note_compressed_storage();
	/* a file made later under the same name must not inherit free units */
	pcs_forget_fork(reln->smgr_rlocator.locator, forknum);
	mdcreate(reln, forknum, isRedo);
	pcs_close_fork_segments(reln, forknum);
	reln->pcs_format[forknum] = PCS_FORMAT_UNKNOWN;
}

/* pcs_exists: does the fork exist? The same question for both formats. */
bool
pcs_exists(SMgrRelation reln, ForkNumber forknum)
{
	return mdexists(reln, forknum);
}

/* pcs_unlink: md.c removes the segments, which are named alike */
void
pcs_unlink(RelFileLocatorBackend rlocator, ForkNumber forknum, bool isRedo)
{
	PGSTRATA_INJECTION_POINT("pcs-unlink");
	/* a file made later under the same name must not inherit free units */
	pcs_forget_fork(rlocator.locator, forknum);
	mdunlink(rlocator, forknum, isRedo);
}

/* pcs_extend: add a block at the end of a fork */
void
pcs_extend(SMgrRelation reln, ForkNumber forknum, BlockNumber blocknum,
		   const void *buffer, bool skipFsync)
{
	if (!pcs_extends_compressed(reln, forknum))
	{
		mdextend(reln, forknum, blocknum, buffer, skipFsync);
		return;
	}
	pcs_write_block(reln, forknum, blocknum, buffer, skipFsync, true);
}

/*
 * pcs_zeroextend: add zero blocks at the end of a fork.  For a compressed
 * fork that only moves the end: a block without storage reads as zeros.
 */
void
pcs_zeroextend(SMgrRelation reln, ForkNumber forknum, BlockNumber blocknum,
			   int nblocks, bool skipFsync)
{
	BlockNumber end = blocknum + nblocks;

	if (!pcs_extends_compressed(reln, forknum))
	{
		mdzeroextend(reln, forknum, blocknum, nblocks, skipFsync);
		return;
	}
	/* nothing is written */
	pcs_count_io_bytes(0);

	while (blocknum < end)
	{
		BlockNumber segno = blocknum / RELSEG_SIZE;
		BlockNumber from = blocknum % RELSEG_SIZE;
		BlockNumber to = Min(RELSEG_SIZE, from + (end - blocknum));
		PcsSegment *seg;
		BlockNumber cur;

		Assert(from < to);

		pcs_fill_segments_before(reln, forknum, segno, skipFsync);
		seg = pcs_getseg(reln, forknum, segno, true);
		cur = pcs_seg_nblocks(seg);

		/* refused where md's would fail: no space for a block each */
		if (to > Max(cur, from))
			pcs_reserve_check_extension(reln->smgr_rlocator.locator.spcOid,
										FilePathName(seg->vfd),
										to - Max(cur, from));

		/* entries past the old end mean nothing: clear them first */
		pcs_seg_clear(seg, Min(cur, from), to);
		pcs_seg_raise_nblocks(seg, to);
		if (!skipFsync)
			pcs_register_dirty(reln, forknum, segno, seg);
		blocknum += to - from;
	}
}

/* pcs_prefetch: start reading the images of blocks */
bool
pcs_prefetch(SMgrRelation reln, ForkNumber forknum, BlockNumber blocknum,
			 int nblocks)
{
#ifdef USE_PREFETCH
	PcsSegment *runseg = NULL;
	off_t		runstart = 0;
	off_t		runend = 0;
	bool		found = true;

	if (!pcs_is_compressed(reln, forknum))
		return mdprefetch(reln, forknum, blocknum, nblocks);

	/*
	 * One hint per run of images that lie close together on disk, as reads
	 * coalesce them, rather than one per 8 kB block.
	 */
	for (int i = 0; i < nblocks; i++)
	{
		BlockNumber blkno = blocknum + i;
		PcsSegment *seg = pcs_getseg(reln, forknum, blkno / RELSEG_SIZE, false);
		PcsMapEntry entry;
		off_t		start;

		if (seg == NULL)
		{
			found = false;
			break;
		}
		/* a hint: a block whose entry cannot be located is not hinted */
		if (pcs_map_entries_known(seg, blkno % RELSEG_SIZE, 1, &entry) == 0 ||
			pcs_entry_is_empty(&entry))
			continue;
		start = pcs_unit_offset(seg->header, entry.first_unit);
		if (seg == runseg && start >= runstart &&
			start <= runend + PCS_COALESCE_GAP)
		{
			runend = Max(runend, start + entry.stored);
			continue;
		}
		if (runseg != NULL)
			(void) FilePrefetch(runseg->vfd, runstart, runend - runstart,
								WAIT_EVENT_DATA_FILE_PREFETCH);
		runseg = seg;
		runstart = start;
		runend = start + entry.stored;
	}
	if (runseg != NULL)
		(void) FilePrefetch(runseg->vfd, runstart, runend - runstart,
							WAIT_EVENT_DATA_FILE_PREFETCH);
	return found;
#else
	if (!pcs_is_compressed(reln, forknum))
		return mdprefetch(reln, forknum, blocknum, nblocks);
	return true;
#endif
}

/* pcs_readv: read consecutive blocks */
void
pcs_readv(SMgrRelation reln, ForkNumber forknum, BlockNumber blocknum,
		  void **buffers, BlockNumber nblocks)
{
	if (!pcs_is_compressed(reln, forknum))
	{
		mdreadv(reln, forknum, blocknum, buffers, nblocks);
		return;
	}

	/* blocks without an image read nothing */
	pcs_count_io_bytes(0);
	while (nblocks > 0)
	{
		BlockNumber n = Min(nblocks, MAX_IO_COMBINE_LIMIT);

		/* one segment at a time */
		n = Min(n, RELSEG_SIZE - blocknum % RELSEG_SIZE);
		if (n == 1)
			pcs_read_block(reln, forknum, blocknum, buffers[0]);
		else
			pcs_read_segment_blocks(reln, forknum, blocknum, buffers, n);
		blocknum += n;
		buffers += n;
		nblocks -= n;
	}
}

/* pcs_writev: write consecutive existing blocks */
void
pcs_writev(SMgrRelation reln, ForkNumber forknum, BlockNumber blocknum,
		   const void **buffers, BlockNumber nblocks, bool skipFsync)
{
	if (!pcs_is_compressed(reln, forknum))
	{
		mdwritev(reln, forknum, blocknum, buffers, nblocks, skipFsync);
		return;
	}
	for (BlockNumber i = 0; i < nblocks; i++)
		pcs_write_block(reln, forknum, blocknum + i, buffers[i], skipFsync,
						false);
}

/*
 * pcs_writeback: a hint to start writing back dirty data.  For compressed
 * forks it is left to the checkpointer's fsync: the images of logically
 * adjacent blocks need not be adjacent on disk.
 */
void
pcs_writeback(SMgrRelation reln, ForkNumber forknum, BlockNumber blocknum,
			  BlockNumber nblocks)
{
	if (!pcs_is_compressed(reln, forknum))
		mdwriteback(reln, forknum, blocknum, nblocks);
}

/* pcs_nblocks: the logical size of a fork, from its segment headers */
BlockNumber
pcs_nblocks(SMgrRelation reln, ForkNumber forknum)
{
	BlockNumber total = 0;
	int			format = reln->pcs_format[forknum];

	if (format == PCS_FORMAT_UNKNOWN)
		format = pcs_fork_format(reln, forknum);
	/* an empty file has no blocks, whatever its creator makes of it next */
	if (format == PCS_FORMAT_EMPTY)
		return 0;
	if (format != PCS_FORMAT_COMPRESSED)
		return mdnblocks(reln, forknum);

	for (BlockNumber segno = 0;; segno++)
	{
		PcsSegment *seg = pcs_getseg(reln, forknum, segno, false);
		BlockNumber n;

		if (seg == NULL)
		{
			if (segno == 0)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not open file \"%s\": %m",
								PGSTRATA_RELPATH(reln->smgr_rlocator, forknum))));
			break;
		}
		n = pcs_seg_nblocks(seg);
		total += n;
		if (n < RELSEG_SIZE)
			break;
	}
	return total;
}

/*
 * pcs_truncate: cut a fork to nblocks.  The block counts go down and the
 * entries past them are cleared; the units they used stay allocated until
 * the relation is rewritten, because a map that no longer references them
 * may not be durable yet (README.pcs).
 */
void
pcs_truncate(SMgrRelation reln, ForkNumber forknum, BlockNumber old_blocks,
			 BlockNumber nblocks)
{
	/*
	 * Nothing to do, as in mdtruncate().  Checked first because the callers
	 * run in a critical section, where the format lookup of a fork that never
	 * had bytes (its answer is not cached, see pcs_fork_format()) would
	 * allocate memory.
	 */
	if (old_blocks == nblocks)
		return;

	if (!pcs_is_compressed(reln, forknum))
	{
		mdtruncate(reln, forknum, old_blocks, nblocks);
		return;
	}

	for (BlockNumber segno = nblocks / RELSEG_SIZE;
		 (uint64) segno * RELSEG_SIZE < old_blocks; segno++)
	{
		PcsSegment *seg = pcs_getseg(reln, forknum, segno, false);
		BlockNumber keep;
		BlockNumber cur;

		if (seg == NULL)
			break;
		keep = (nblocks > segno * RELSEG_SIZE) ?
			Min(nblocks - segno * RELSEG_SIZE, RELSEG_SIZE) : 0;

		/*
		 * This runs in a critical section (RelationTruncate), where an ERROR
		 * would be a PANIC; pcs_seg_nblocks() never raises one for the count,
		 * and repairs a damaged copy with a WARNING.
		 */
		cur = pcs_seg_nblocks(seg);
		if (cur > keep)
		{
			pcs_seg_store_nblocks(seg, keep);
			PGSTRATA_INJECTION_POINT("pcs-truncate");
			pcs_seg_truncate_entries(reln, forknum, seg, keep, cur);
			pcs_register_dirty(reln, forknum, segno, seg);
		}
	}
}

/* pcs_immedsync: fsync every segment of a fork now */
void
pcs_immedsync(SMgrRelation reln, ForkNumber forknum)
{
	if (pcs_is_compressed(reln, forknum))
		pcs_sync_fork(reln, forknum, true);
	else
		mdimmedsync(reln, forknum);
}

/* pcs_registersync: ask the checkpointer to fsync every segment of a fork */
void
pcs_registersync(SMgrRelation reln, ForkNumber forknum)
{
	if (pcs_is_compressed(reln, forknum))
		pcs_sync_fork(reln, forknum, false);
	else
		mdregistersync(reln, forknum);
}
