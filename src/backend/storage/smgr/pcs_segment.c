/*-------------------------------------------------------------------------
 *
 * pcs_segment.c
 *	  One segment of a compressed fork: opening its file,
 *	  growing it, the map and its chunks, the block count, and the
 *	  allocation of units, fresh or freed.
 *
 * A segment file holds a header, a map with one entry per block, and a
 * data area of units into which the images of the blocks are written
 * (storage/pcs_format.h).  This file knows nothing of pages: it hands out
 * units, keeps the entries and the block count sound, and grows the file
 * so that a write into units it handed out cannot fail for want of space.
 * Block I/O (pcs.c) and the dictionaries (pcs_dict.c) build on it.
 *
 * The crash-safety argument for allocation and reuse is in README.pcs
 * ("Allocation", "Reusing freed units").
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/backend/storage/smgr/pcs_segment.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/hashfn.h"
#include "common/int.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "pgstrata_compat.h"
#include "storage/bufmgr.h"
#include "storage/pcs.h"
#include "storage/pcs_segment.h"
#include "utils/injection_point.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

/* Smallest and largest step by which a segment's data area grows, in bytes */
#define PCS_MIN_GROWTH		(4 * 1024)
#define PCS_MAX_GROWTH		(8 * 1024 * 1024)

/* Tries at reading a map entry that a concurrent writer may be replacing */
#define PCS_ENTRY_READ_TRIES	3

MemoryContext PcsCxt = NULL;
static MemoryContext PcsSegmentSlab = NULL;
static uint32 pcs_generation = 0;

/* Path of segment segno of a fork, palloc'd */
static char *
pcs_segpath(SMgrRelation reln, ForkNumber forknum, BlockNumber segno)
{
	char	   *path = PGSTRATA_RELPATH(reln->smgr_rlocator, forknum);

	if (segno > 0)
	{
		char	   *full = psprintf("%s.%u", path, segno);

		pfree(path);
		path = full;
	}
	return path;
}

/* The key under which the free units of a segment are kept */
void
pcs_free_key(SMgrRelation reln, ForkNumber forknum, BlockNumber segno,
			 PcsFreeKey *key)
{
	memset(key, 0, sizeof(PcsFreeKey));
	key->rlocator = reln->smgr_rlocator.locator;
	key->backend = reln->smgr_rlocator.backend;
	key->forknum = forknum;
	key->segno = segno;
}

/*
 * The generation of this server: the first allocation of a generation in a
 * segment starts above the end of the file, and reads the map for free
 * units (README.pcs).  Each life of shared memory is a generation of its
 * own: after a backend crash the postmaster resets shared memory, and with
 * it the free units kept there (pcs_free_pool.c), which the new generation
 * finds again from the maps.
 */
uint32
pcs_current_generation(void)
{
	if (pcs_generation == 0)
	{
		uint64		key[3] = {(uint64) PostmasterPid, (uint64) PgStartTime,
		pcs_shmem_life()};

		pcs_generation = hash_bytes((const unsigned char *) key, sizeof(key));
		if (pcs_generation == 0)
			pcs_generation = 1;
	}
	return pcs_generation;
}

/* The sync request tag of a segment: md's, which names the same file */
static void
pcs_sync_tag(SMgrRelation reln, ForkNumber forknum, BlockNumber segno,
			 FileTag *tag)
{
	memset(tag, 0, sizeof(FileTag));
	tag->handler = SYNC_HANDLER_MD;
	tag->rlocator = reln->smgr_rlocator.locator;
	tag->forknum = forknum;
	tag->segno = segno;
}

/*
 * fsync a segment here and now; as every fsync of a segment, it makes the
 * units freed before it began reusable (pcs_sync_begin())
 */
void
pcs_sync_now(SMgrRelation reln, ForkNumber forknum, PcsSegment *seg,
			 uint32 wait_event)
{
	FileTag		tag;
	uint64		clock;

	instr_time	io_start;

	pcs_sync_tag(reln, forknum, seg->segno, &tag);
	clock = pcs_sync_begin(&tag);
	io_start = pgstat_prepare_io_time(track_io_timing);
	if (FileSync(seg->vfd, wait_event) < 0)
		ereport(data_sync_elevel(ERROR),
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m",
						FilePathName(seg->vfd))));
	/* counted in pg_stat_io as md counts the fsyncs it does itself */
	PGSTRATA_COUNT_IO_OP_TIME(IOOBJECT_RELATION, IOCONTEXT_NORMAL, IOOP_FSYNC,
							  io_start);
	pcs_sync_done(&tag, clock, seg->vfd);
}

/*
 * Tell the checkpointer that a segment has been written, or fsync it here if
 * the request queue is full, as md.c does for its segments.  The tag is md's:
 * the sync handler opens the segment by name, which is the same for both.
 */
void
pcs_register_dirty(SMgrRelation reln, ForkNumber forknum, BlockNumber segno,
				   PcsSegment *seg)
{
	FileTag		tag;

	if (SmgrIsTemp(reln))
		return;

	pcs_sync_tag(reln, forknum, segno, &tag);
	if (!RegisterSyncRequest(&tag, SYNC_REQUEST, false))
		pcs_sync_now(reln, forknum, seg, WAIT_EVENT_DATA_FILE_SYNC);
}

/* Write the header block of new segment segno */
void
pcs_init_segment_file(File vfd, BlockNumber segno, PcsAlgorithm algorithm,
					  int level, bool sync)
{
	PGIOAlignedBlock block;

	memset(block.data, 0, BLCKSZ);
	pcs_header_init((PcsHeader *) block.data, algorithm, level, segno);

	if (FileWrite(vfd, block.data, PCS_HEADER_SIZE, 0,
				  WAIT_EVENT_DATA_FILE_EXTEND) != PCS_HEADER_SIZE)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", FilePathName(vfd))));
	/* readers may find segment 0 this way: see pcs_fork_format() */
	if (segno == 0)
		PGSTRATA_INJECTION_POINT("pcs-create-after-header");

	/*
	 * Nothing follows the header yet: the directory gets storage with the
	 * first map page, the data area with the first image (version 5).
	 */

	/*
	 * The header must be durable before any page written into the file can
	 * be: a file without it would be taken for an md file after a crash.
	 */
	if (sync && FileSync(vfd, WAIT_EVENT_DATA_FILE_SYNC) < 0)
		ereport(data_sync_elevel(ERROR),
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", FilePathName(vfd))));
}

/*
 * Is segment file segno > 0 of this size one whose creation never completed?
 *
 * A segment past the first is created by opening it with O_CREAT, writing
 * its header and fsyncing it, before anything else is written into it
 * (pcs_init_segment_file(); builds of versions 2 to 4 also sized it to
 * their data area).  A crash, of the server or of the operating system, can
 * stop that at any point, and leave a file that is empty, shorter than the
 * header, or as long as the header (or version 4's data area) with a header
 * that never reached disk; a base backup taken meanwhile copies the same.
 * A version 4 file shorter than its data area never had its size made
 * durable.  Such a file holds no block: it reads as a segment with no
 * blocks, as an empty md segment does, and its next extension writes the
 * header again.  A longer file had its header made durable first, so a
 * blank header there is damage, reported as such.
 */
static bool
pcs_segment_is_unfinished(File vfd, BlockNumber segno, off_t size)
{
	char		head[PCS_SECTOR_SIZE];
	uint32		version;
	bool		blank = true;

	Assert(segno > 0);
	if (size < PCS_HEADER_SIZE)
		return true;
	if (FileRead(vfd, head, sizeof(head), 0, WAIT_EVENT_DATA_FILE_READ) != sizeof(head))
		return false;			/* let the header check report it */
	for (int i = 0; i < sizeof(head) && blank; i++)
		blank = head[i] == 0;
	if (blank)
		return size == PCS_HEADER_SIZE || size == PCS_V4_DATA_OFFSET;
	memcpy(&version, head + offsetof(PcsHeader, version), sizeof(version));
	return version >= PCS_FORMAT_VERSION_2 &&
		version <= PCS_FORMAT_VERSION_4 && size < PCS_V4_DATA_OFFSET;
}

/*
 * Write len bytes of the process's copy of a segment's header at offset
 * back to the file: the identity or its copy, restored or made at opening.
 * A failure is only a WARNING, since the process reads with its copy either
 * way, and the next opening restores them again.
 */
static void
pcs_write_identity(PcsSegment *seg, off_t offset, int len)
{
	if (FileWrite(seg->vfd, (char *) seg->header_copy + offset, len, offset,
				  WAIT_EVENT_DATA_FILE_WRITE) != len)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m",
						FilePathName(seg->vfd))));
}

/*
 * Read the header of an open segment into the process's copy of it
 * (seg->header_copy) and check it; on failure an error is raised, and the
 * caller closes the file.  The copy ends before the map entries that
 * version 4 keeps in the header block, which are read from the file, so
 * that an open segment takes about 3 kB of a process's memory, in a slab
 * of its own (pcs_getseg()), rather than 4 kB for the copy alone.
 */
static void
pcs_read_header(PcsSegment *seg)
{
	PcsHeader  *header = (PcsHeader *) seg->header_copy;
	PcsProblem	problem;

	Assert(seg->header == NULL);
	pcs_meta_read(seg, header, PCS_HEADER_COPY_SIZE, 0);

	problem = pcs_header_check(header);

	/*
	 * A damaged identity is restored from its copy (README.pcs, "The
	 * identity's copy"), in any process, redo included: its bytes are written
	 * back, to reach disk with the kernel's write-back or the segment's next
	 * fsync, and restored again at the next opening if a crash loses them
	 * first.  A sound one gets its copy if the segment was made before copies
	 * existed.  Several processes may write the same bytes at once; they all
	 * write the same.  A failed write is only a WARNING: this process reads
	 * with its restored copy either way.
	 */
	if (problem != PCS_SOUND && pcs_identity_restore(header))
	{
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("restored the damaged header of compressed segment file \"%s\" from its copy",
						FilePathName(seg->vfd)),
				 errdetail("%s", _(pcs_problem_message(problem)))));
		problem = PCS_SOUND;
		pcs_write_identity(seg, 0, PCS_IDENTITY_SIZE);
	}
	else if (problem == PCS_SOUND &&
			 header->version != PCS_FORMAT_VERSION_2 &&
			 !pcs_identity_copy_sound(header))
	{
		pcs_identity_copy_set(header);
		pcs_write_identity(seg, offsetof(PcsHeader, dictionaries.identity),
						   sizeof(PcsIdentityCopy));
	}
	if (problem != PCS_SOUND)
	{
		uint32		version = pcs_header_other_version(header);

		if (version != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("compressed segment file \"%s\" has format version %u, but this server reads only versions %u to %u",
							FilePathName(seg->vfd), version,
							PCS_FORMAT_VERSION_2, PCS_FORMAT_VERSION),
					 errhint("Files of compressed tablespaces made by another development build of pgstrata cannot be read.  Dump the data with the build that made them and restore it here.")));
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid compressed segment header in file \"%s\"",
						FilePathName(seg->vfd)),
				 errdetail("%s", _(pcs_problem_message(problem)))));
	}

	seg->header = header;
	seg->shift = header->unit_shift;
	Assert(seg->shift == PCS_UNIT_SHIFT || seg->shift == PCS_V2_UNIT_SHIFT);
}

/*
 * Raise the ERROR of a segment file of size bytes, open as vfd, that is
 * shorter than min; with close, closing the file first (pcs_getseg())
 */
static void
pcs_segment_too_short(File vfd, off_t size, off_t min, bool close)
{
	char	   *name = pstrdup(FilePathName(vfd));

	if (close)
		FileClose(vfd);
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("compressed segment file \"%s\" is too short", name),
			 errdetail("The file has %lld bytes; a compressed segment of its format has at least %lld.",
					   (long long) size, (long long) min)));
}

/*
 * The units of a segment's data area that a file of size bytes holds
 * whole; none while it ends before its data area (version 5: a file is its
 * header until the first image is written)
 */
uint32
pcs_seg_units_below(PcsSegment *seg, off_t size)
{
	off_t		data = pcs_data_offset(seg->header);

	return size <= data ? 0 : (uint32) ((size - data) >> seg->shift);
}

/* Remember segment seg as number segno of a fork of reln */
static void
pcs_remember_segment(SMgrRelation reln, ForkNumber forknum,
					 BlockNumber segno, PcsSegment *seg)
{
	Assert(PcsCxt != NULL);
	if (segno >= (BlockNumber) reln->pcs_num_segs[forknum])
	{
		int			n = Max(segno + 1, 4);

		if (reln->pcs_segs[forknum] == NULL)
			reln->pcs_segs[forknum] = MemoryContextAllocZero(PcsCxt, n * sizeof(PcsSegment *));
		else
		{
			reln->pcs_segs[forknum] = repalloc(reln->pcs_segs[forknum], n * sizeof(PcsSegment *));
			memset(reln->pcs_segs[forknum] + reln->pcs_num_segs[forknum], 0,
				   (n - reln->pcs_num_segs[forknum]) * sizeof(PcsSegment *));
		}
		reln->pcs_num_segs[forknum] = n;
	}
	Assert(reln->pcs_segs[forknum][segno] == NULL);
	reln->pcs_segs[forknum][segno] = seg;
}

/*
 * Open segment segno of a compressed fork (creating it if create is true and
 * it does not exist, or its creation never completed), map its header and
 * map, and return it; NULL if it does not exist (or holds no block because
 * its creation never completed) and create is false.
 */
PcsSegment *
pcs_getseg(SMgrRelation reln, ForkNumber forknum, BlockNumber segno,
		   bool create)
{
	PcsSegment *seg;
	char	   *path;
	File		vfd;
	off_t		size;

	if (segno < (BlockNumber) reln->pcs_num_segs[forknum] &&
		reln->pcs_segs[forknum][segno] != NULL)
	{
		seg = reln->pcs_segs[forknum][segno];
		Assert(seg->header != NULL);
		return seg;
	}

	path = pcs_segpath(reln, forknum, segno);
	vfd = PathNameOpenFile(path, O_RDWR | PG_BINARY | (create ? O_CREAT : 0));
	if (vfd < 0)
	{
		if (errno == ENOENT && !create)
		{
			pfree(path);
			return NULL;
		}
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
	}
	pfree(path);

	/*
	 * From here on, every error closes the file first: the VFD belongs to no
	 * resource owner, and a session that retries would leak one per try.
	 */
	size = FileSize(vfd);
	if (size < 0)
	{
		int			save_errno = errno;

		FileClose(vfd);
		errno = save_errno;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not seek to end of file \"%s\": %m",
						PGSTRATA_RELPATH(reln->smgr_rlocator, forknum))));
	}
	if (segno > 0 && pcs_segment_is_unfinished(vfd, segno, size))
	{
		if (!create)
		{
			FileClose(vfd);
			return NULL;
		}
		PG_TRY();
		{
			/* a new segment past the first: same settings as segment 0 */
			PcsSegment *first = pcs_getseg(reln, forknum, 0, false);

			Assert(first != NULL);
			pcs_init_segment_file(vfd, segno, first->header->algorithm,
								  first->header->level, !SmgrIsTemp(reln));
		}
		PG_CATCH();
		{
			FileClose(vfd);
			PG_RE_THROW();
		}
		PG_END_TRY();
		size = PCS_HEADER_SIZE;
	}
	else if (size < PCS_HEADER_SIZE)
		pcs_segment_too_short(vfd, size, PCS_HEADER_SIZE, true);

	if (PcsCxt == NULL)
	{
		PcsCxt = AllocSetContextCreate(TopMemoryContext, "PcsSegments",
									   ALLOCSET_SMALL_SIZES);
		/* fixed-size chunks: an AllocSet would round each up to 4 kB */
		PcsSegmentSlab = SlabContextCreate(PcsCxt, "pcs open segments",
										   64 * 1024, sizeof(PcsSegment));
	}
	seg = MemoryContextAllocZero(PcsSegmentSlab, sizeof(PcsSegment));
	seg->vfd = vfd;
	seg->segno = segno;
	seg->forknum = forknum;
	{
		PcsFreeKey	key;

		pcs_free_key(reln, forknum, segno, &key);
		seg->word_lock = pcs_meta_word_lock(&key);
	}
	PG_TRY();
	{
		pcs_read_header(seg);
		/* versions 2 to 4 size the file to their data area at creation */
		if (!pcs_header_has_directory(seg->header) &&
			size < pcs_data_offset(seg->header))
			pcs_segment_too_short(vfd, size, pcs_data_offset(seg->header),
								  false);
		seg->alloc_seen = pcs_word_read(seg, pcs_header_alloc(seg->header));
	}
	PG_CATCH();
	{
		FileClose(vfd);
		pfree(seg);
		PG_RE_THROW();
	}
	PG_END_TRY();
	seg->capacity = pcs_seg_units_below(seg, size);
	pcs_remember_segment(reln, forknum, segno, seg);
	return seg;
}

/* Close every open segment of a fork */
void
pcs_close_segments(SMgrRelation reln, ForkNumber forknum)
{
	for (int i = 0; i < reln->pcs_num_segs[forknum]; i++)
	{
		PcsSegment *seg = reln->pcs_segs[forknum][i];

		if (seg == NULL)
			continue;
		FileClose(seg->vfd);
		/* pcs.c gave up its prepared dictionaries first */
		Assert(!seg->dict_user && seg->encoder == NULL);
		for (int n = 1; n <= PCS_MAX_DICTIONARIES; n++)
			Assert(seg->dicts[n] == NULL);
		if (seg->sample != NULL)
			pfree(seg->sample);
		if (seg->map_pages != NULL)
			pfree(seg->map_pages);
		pfree(seg);
	}
	if (reln->pcs_segs[forknum] != NULL)
		pfree(reln->pcs_segs[forknum]);
	reln->pcs_segs[forknum] = NULL;
	reln->pcs_num_segs[forknum] = 0;
}

/* The size of a segment's file, or an error */
static off_t
pcs_file_end(PcsSegment *seg)
{
	off_t		size = FileSize(seg->vfd);

	if (size < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not seek to end of file \"%s\": %m",
						FilePathName(seg->vfd))));
	return size;
}

/*
 * fallocate() on the kernel file of a segment: 0, or the error number.  It
 * gives storage to the parts of the range that have none and leaves every
 * byte that exists as it is, so calls over the same range from several
 * processes, and writes into the range meanwhile, are harmless.
 * (posix_fallocate() is not used on Linux: glibc emulates it where the file
 * system has no fallocate(), by writing zeros, which is not harmless.)
 */
static int
pcs_fallocate(int fd, off_t offset, off_t len)
{
	int			ret;

	pgstat_report_wait_start(WAIT_EVENT_DATA_FILE_EXTEND);
	do
	{
#if defined(__linux__)
		ret = fallocate(fd, 0, offset, len) == 0 ? 0 : errno;
#elif defined(HAVE_POSIX_FALLOCATE)
		ret = posix_fallocate(fd, offset, len);
#else
		ret = EOPNOTSUPP;
#endif
	} while (ret == EINTR);
	pgstat_report_wait_end();
	return ret;
}

/*
 * Grow a segment's file to at least end bytes where the file system has no
 * fallocate(): by writing zeros, but only past the file's current end, read
 * under an exclusive flock() of the file that every process growing it this
 * way takes.  Units are handed out only below the end of the file, and the
 * end only moves up, so nothing anybody wrote lies past it; a size read
 * before the lock may be stale, and zeros written from there could destroy
 * a page that another process has written into the space it added.
 * Returns 0 or an error number.
 */
static int
pcs_grow_by_writing(PcsSegment *seg, int fd, off_t end)
{
	off_t		size;
	int			ret = 0;

	while (flock(fd, LOCK_EX) != 0)
	{
		if (errno != EINTR)
			return errno;
	}
	size = pcs_file_end(seg);
	if (size < end &&
		FileZero(seg->vfd, size, end - size, WAIT_EVENT_DATA_FILE_EXTEND) != 0)
		ret = errno ? errno : ENOSPC;
	(void) flock(fd, LOCK_UN);
	return ret;
}

/* Raise the ERROR of a segment that could not be given storage */
static void
pcs_storage_failed(PcsSegment *seg, int error)
{
	errno = error;
	ereport(ERROR,
			(errcode_for_file_access(),
			 errmsg("could not extend file \"%s\": %m",
					FilePathName(seg->vfd)),
			 errhint("Check free disk space.")));
}

/*
 * Make sure the file holds units below limit.  The data area grows by a
 * step of a sixteenth of its size (8 kB to 8 MB), with fallocate(), which
 * reserves the space (so a later write cannot fail for want of it), never
 * shrinks a file that a concurrent process grew further, and never touches
 * bytes that one has already written there (pcs_fallocate()).  Where the
 * file system has no fallocate(), zeros are written past the end instead,
 * under a lock (pcs_grow_by_writing()).  Any other failure (a full file
 * system, a file-size limit, an I/O error) is an ERROR for the caller and
 * changes nothing that exists; except that a write-back (writeback) that
 * finds the file system full takes space from the tablespace's reserve and
 * grows the file by what it needs (pcs_reserve.c).
 */
static void
pcs_ensure_capacity(SMgrRelation reln, PcsSegment *seg, uint32 limit,
					bool writeback, uint32 found)
{
	off_t		size;
	uint32		have;
	uint32		grow;

	if (limit <= seg->capacity)
		return;

	size = pcs_file_end(seg);
	have = pcs_seg_units_below(seg, size);
	if (limit > have)
	{
		int			fd;
		int			ret;

		PcsFreeKey	key;
		uint32		waiting;

		/*
		 * Grow by a sixteenth of the data area, less what is about to become
		 * reusable: space that comes back at the segment's next fsync is
		 * where the next writes go, and a chunk grown ahead of it would only
		 * add to what the file holds unused.  That space is largest at the
		 * start of a server generation, which begins above the file's end
		 * while everything below that the map does not use (found) waits for
		 * the segment's first fsync (pcs_publish_free_runs()): a server that
		 * crashed again and again before its checkpoints grew each segment by
		 * a chunk, a sixteenth more, at every start.
		 */
		grow = Min(Max(have / 16, PCS_MIN_GROWTH >> seg->shift),
				   PCS_MAX_GROWTH >> seg->shift);
		pcs_free_key(reln, seg->forknum, seg->segno, &key);
		waiting = Max(found, pcs_free_waiting_units(&key));
		grow = grow > waiting ? grow - waiting : 0;
		grow = Max(grow, limit - have);
		/* the size read above may be stale by the time the file grows */
		PGSTRATA_INJECTION_POINT("pcs-grow-before-allocate");
		(void) pcs_file_end(seg);	/* reopens the kernel file if need be */
		fd = FileGetRawDesc(seg->vfd);
		for (;;)
		{
			ret = pcs_fallocate(fd, pcs_unit_offset(seg->header, have),
								(off_t) grow << seg->shift);
			if (ret == EOPNOTSUPP || ret == EINVAL)
				ret = pcs_grow_by_writing(seg, fd,
										  pcs_unit_offset(seg->header, have + grow));
			if ((ret != ENOSPC && ret != EDQUOT) || !writeback)
				break;
			/* a full disk: only what this write needs, from the reserve */
			grow = limit - have;
			if (!pcs_reserve_release(reln->smgr_rlocator.locator.spcOid,
									 (off_t) grow << seg->shift))
				break;
		}
		if (ret != 0)
			pcs_storage_failed(seg, ret);

		/*
		 * No fsync: the new size reaches disk with the checkpoint's fsync of
		 * the segment, and until then a crash is survived because a new
		 * generation starts above every unit the map on disk points to
		 * (pcs_map_high_water()), not merely above the file's end.
		 */
		have += grow;
	}
	seg->capacity = have;
	Assert(seg->capacity >= limit);
}

/*
 * fallocate() len bytes at offset of a segment's file; a write-back
 * (writeback) that finds the file system full takes the space from the
 * tablespace's reserve and tries again (pcs_reserve.c).  Returns 0 or the
 * error number, 0 where the file system has no fallocate().
 */
static int
pcs_seg_fallocate(SMgrRelation reln, PcsSegment *seg, off_t offset,
				  off_t len, bool writeback)
{
	int			ret;

	(void) pcs_file_end(seg);	/* reopens the kernel file if need be */
	do
	{
		ret = pcs_fallocate(FileGetRawDesc(seg->vfd), offset, len);
	} while ((ret == ENOSPC || ret == EDQUOT) && writeback &&
			 pcs_reserve_release(reln->smgr_rlocator.locator.spcOid, len));
	if (ret == EOPNOTSUPP || ret == EINVAL)
		ret = 0;
	return ret;
}

/*
 * Give storage to units [first, first + count) of a segment before an image
 * is written into them.  Units reused from the free pool lie in holes that
 * were punched when they became reusable (pcs_free_pool.c), and a write
 * into a hole needs new space as growth does: on a full file system it
 * would fail with ENOSPC without ever touching the tablespace's reserve.
 * So, as growth does (pcs_ensure_capacity()), this allocates the range
 * first, and a write-back (writeback) that finds the file system full takes
 * what it needs from the reserve.  Bytes already there are left as they
 * are.  Returns 0 or the error number; where the file system has no
 * fallocate(), 0, since nothing could have been punched there either.
 */
int
pcs_seg_back_units(SMgrRelation reln, PcsSegment *seg, uint32 first,
				   uint32 count, bool writeback)
{
	Assert(count > 0 && (uint64) first + count <= pcs_unit_limit(seg));
	return pcs_seg_fallocate(reln, seg, pcs_unit_offset(seg->header, first),
							 (off_t) count << seg->shift, writeback);
}

/*
 * Read len bytes at offset of a segment, as md.c reads blocks: a read that
 * returns fewer bytes is continued where it stopped, so that an I/O error
 * part way (a failed page of the file, which the kernel reports by cutting
 * the read short and failing the next one) is an error with its errno, not
 * an image cut short.  Returns the bytes read, fewer than len only at the
 * end of the file, or -1 with errno set.
 */
int
pcs_read_fully(PcsSegment *seg, char *buf, int len, off_t offset)
{
	int			done = 0;

	while (done < len)
	{
		int			nread = FileRead(seg->vfd, buf + done, len - done,
									 offset + done, WAIT_EVENT_DATA_FILE_READ);

		if (nread < 0)
			return -1;
		if (nread == 0)
			break;
		done += nread;
	}
	return done;
}

/*
 * Give storage to units [first, first + count) of a segment before metadata
 * is first stored into them by this process: version 5's directory and map
 * pages.  They were made with units from pcs_allocate(), which have
 * storage; but after an operating system crash a directory word or slot may
 * have reached disk while the file's growth did not, and a store past the
 * end of the file would then leave a hole behind it, and fail on a full
 * file system after the write put its image elsewhere.  As for chunks of
 * the map of earlier versions, a write-back may take the space from the
 * tablespace's reserve; a file system without fallocate() leaves it to the
 * store.  The space between the old end and the units is then free space
 * that no map names, found at the next generation's start.
 */
static void
pcs_seg_give_storage(SMgrRelation reln, PcsSegment *seg, uint32 first,
					 uint32 count, bool writeback)
{
	int			ret = pcs_seg_fallocate(reln, seg,
										pcs_unit_offset(seg->header, first),
										(off_t) count << seg->shift,
										writeback);

	if (ret != 0)
		pcs_storage_failed(seg, ret);
}

/*
 * Fill units [first, first + count) of a segment, fresh units that are to
 * become version 5's directory or a map page, with bytes of value fill:
 * zeros (no page, empty entries), or PCS_LOST_BYTE in place of a directory
 * or page that could not be located (pcs_map_page_make())
 */
static void
pcs_seg_fill_units(PcsSegment *seg, uint32 first, uint32 count, int fill)
{
	PGIOAlignedBlock bytes;
	off_t		offset = pcs_unit_offset(seg->header, first);
	off_t		end = pcs_unit_offset(seg->header, first + count);

	memset(bytes.data, fill, BLCKSZ);
	for (; offset < end; offset += BLCKSZ)
		pcs_meta_write(seg, bytes.data, (int) Min(end - offset, BLCKSZ),
					   offset);
}

/*
 * Take count fresh units of a segment for version 5's metadata and fill
 * them with fill, zeros for a new page (README.pcs, "The map directory").  They come from
 * pcs_allocate(), never from freed runs: in this server generation nothing
 * else was ever written into them, and what the file held before the
 * generation began lies below them.  So a directory word or slot that
 * reaches disk before these zeros do (an operating system crash before the
 * segment's next fsync) names units that read as zeros, or lie past the end
 * of the file: empty slots and entries, never stale ones.
 */
static uint32
pcs_seg_fresh_metadata(SMgrRelation reln, PcsSegment *seg, uint32 count,
					   bool writeback, int fill)
{
	uint32		first = pcs_allocate(reln, seg, count, writeback);

	pcs_seg_fill_units(seg, first, count, fill);
	return first;
}

/* Give back units of fresh metadata that lost the race to be named */
static void
pcs_seg_unnamed_metadata(SMgrRelation reln, PcsSegment *seg, uint32 first,
						 uint32 count)
{
	PcsFreeKey	key;

	/* nothing ever named them: reusable at once */
	pcs_free_key(reln, seg->forknum, seg->segno, &key);
	(void) pcs_free_units(&key, seg->header, first, count, true, false, -1);
}

/*
 * Make the directory of a version 5 segment, and return its first unit:
 * fresh units, named by the header's first directory word (by
 * compare-and-swap, against a process doing the same), then by its second.
 * If another process named one first, ours goes back and theirs is
 * returned.  With lost, the header's words could not locate a directory
 * (both copies damaged): the new one takes their place, and its slots are
 * PCS_LOST_SLOT, since where the map pages were is unknown.
 */
static uint32
pcs_directory_make(SMgrRelation reln, PcsSegment *seg, bool writeback,
				   bool lost)
{
	PcsHeader  *header = seg->header;
	int			units = pcs_directory_units(seg->shift);
	uint64		expected = 0;
	uint32		first;
	uint32		unit;

	if (lost)
	{
		/* what to replace; unless another process has replaced it already */
		expected = pcs_word_read(seg, pcs_header_directory(header, 0));
		if (pcs_directory_lookup(seg, true, &unit) > 0)
			return unit;
	}
	first = pcs_seg_fresh_metadata(reln, seg, units, writeback,
								   lost ? PCS_LOST_BYTE : 0);
	if (pcs_word_compare_exchange(seg, pcs_header_directory(header, 0),
								  &expected,
								  pcs_directory_location_word(header,
															  seg->segno, 0,
															  first)))
	{
		pcs_word_write(seg, pcs_header_directory(header, 1),
					   pcs_directory_location_word(header, seg->segno,
												   1, first));
		seg->directory_unit = first + 1;
		seg->directory_backed = true;
		if (lost)
			ereport(WARNING,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("made the map directory of compressed segment file \"%s\" again",
							FilePathName(seg->vfd)),
					 errdetail("%s  The entries of the segment's blocks from %u on were lost; each reads as damaged until it is written again.",
							   _(pcs_problem_message(PCS_DIRECTORY_BAD_LOCATION)),
							   pcs_header_entries(header))));
		return first;
	}
	pcs_seg_unnamed_metadata(reln, seg, first, units);
	(void) pcs_directory_lookup(seg, false, &unit); /* or the ERROR */
	return unit;
}

/*
 * Make map page page of a version 5 segment (README.pcs, "The map
 * directory"), and the directory first if the segment has none: fresh units
 * (pcs_seg_fresh_metadata()), named by the page's directory slot by
 * compare-and-swap under the lock of the segment's words.  Two processes
 * may make the same page at once; the one whose swap fails gives its units
 * back to the free pool at once and uses the winner's.  The entries stored
 * into the page reach disk with the segment's fsync, as every entry does.
 *
 * A page whose slot fails its check, or whose directory cannot be located,
 * is made again in its place, its entries PCS_LOST_BYTE: their blocks read
 * as damaged until each is written again, as a damaged page of md.c does,
 * and writes of the others, checkpoints and redo go on, as md.c's do,
 * where an ERROR here would stop every checkpoint and, in redo, the
 * server's start.
 */
static void
pcs_map_page_make(SMgrRelation reln, PcsSegment *seg, int page,
				  bool writeback)
{
	int			units = pcs_map_page_units(seg->shift);
	uint64		expected = 0;
	uint32		directory;
	uint32		first;
	uint32		unit;
	bool		present;
	bool		lost;

	Assert(pcs_header_has_directory(seg->header));
	switch (pcs_directory_lookup(seg, true, &directory))
	{
		case 0:
			directory = pcs_directory_make(reln, seg, writeback, false);
			break;
		case -1:
			directory = pcs_directory_make(reln, seg, writeback, true);
			break;
		default:
			if (!seg->directory_backed)
			{
				pcs_seg_give_storage(reln, seg, directory,
									 pcs_directory_units(seg->shift),
									 writeback);
				seg->directory_backed = true;
			}
			break;
	}
	/* what the slot holds now: zeros, or another process's page, or damage */
	expected = pcs_directory_slot_word(seg, directory, page);
	if (pcs_directory_decode(seg->header, seg->segno, page, expected,
							 &present, &unit) == PCS_SOUND && present)
	{
		pcs_map_page_remember(seg, page, unit);
		return;
	}
	lost = expected != 0;
	first = pcs_seg_fresh_metadata(reln, seg, units, writeback,
								   lost ? PCS_LOST_BYTE : 0);
	PGSTRATA_INJECTION_POINT("pcs-map-page-before-slot");
	if (pcs_directory_slot_set(seg, directory, page, &expected,
							   pcs_directory_word(seg->header, seg->segno,
												  page, first)))
	{
		pcs_map_page_remember(seg, page, first);
		if (lost)
			ereport(WARNING,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("made map page %d of compressed segment file \"%s\" again",
							page, FilePathName(seg->vfd)),
					 errdetail("Its directory slot was damaged.  The entries of blocks %u to %u of the segment were lost; each reads as damaged until it is written again.",
							   (BlockNumber) page * PCS_MAP_PAGE_ENTRIES,
							   (BlockNumber) (page + 1) * PCS_MAP_PAGE_ENTRIES - 1)));
		return;
	}

	/* another process made it first: ours was never named anywhere */
	pcs_seg_unnamed_metadata(reln, seg, first, units);
	if (pcs_directory_decode(seg->header, seg->segno, page, expected,
							 &present, &unit) != PCS_SOUND || !present)
		(void) pcs_map_page_lookup(seg, page, false, &unit);	/* reports it */
	else
		pcs_map_page_remember(seg, page, unit);
}

/*
 * Make sure the chunk of the map holding the entry of segblock has storage
 * before an entry is stored into it.  The map is sparse; the first store
 * into a part that is a hole makes the file system allocate it, and on a
 * full file system that store fails, after the image was written into
 * units this write allocated.  Allocated here first, before the write
 * allocates units or writes anything, a full file system is an ERROR for
 * the write that changes nothing, and a write-back (writeback) of a block
 * that was zero-extended into a chunk that is still a hole may take the
 * chunk's space from the tablespace's reserve (pcs_reserve.c).  Each
 * process remembers the chunks it has seen allocated; nothing ever takes
 * storage away from a map chunk.  Where the file system has no
 * fallocate(), nothing is done, and the store itself meets a full disk.
 */
void
pcs_map_chunk_ready(SMgrRelation reln, PcsSegment *seg, BlockNumber segblock,
					bool writeback)
{
	int			chunk = PCS_MAP_CHUNK_OF(segblock);
	uint64		bit = UINT64CONST(1) << (chunk % 64);
	int			ret;

	Assert(segblock < RELSEG_SIZE && chunk < PCS_MAP_CHUNKS);
	if (likely(seg->map_ready[chunk / 64] & bit))
		return;
	/* the header block has storage from the segment's creation on */
	if (segblock < pcs_header_entries(seg->header))
		return;
	if (pcs_header_has_directory(seg->header))
	{
		uint32		unit;

		/* a page that cannot be located is made again (its entries lost) */
		if (pcs_map_page_lookup(seg, chunk, true, &unit) <= 0)
		{
			PGSTRATA_INJECTION_POINT("pcs-map-chunk-allocate");
			pcs_map_page_make(reln, seg, chunk, writeback);
		}
		else
			pcs_seg_give_storage(reln, seg, unit,
								 pcs_map_page_units(seg->shift), writeback);
		seg->map_ready[chunk / 64] |= bit;
		return;
	}
	PGSTRATA_INJECTION_POINT("pcs-map-chunk-allocate");
	ret = pcs_seg_fallocate(reln, seg,
							PCS_V4_MAP_OFFSET + (off_t) chunk * PCS_MAP_CHUNK,
							PCS_MAP_CHUNK, writeback);
	if (ret != 0)
		pcs_storage_failed(seg, ret);
	seg->map_ready[chunk / 64] |= bit;
}

/*
 * May a chunk of the map hold entries that are not empty?  Not if it is a
 * hole: loops over ranges of entries skip holes with this rather than read
 * zeros (pcs_map_read_run()), since most of the map of a small segment, and
 * the map of zero-extended blocks (pcs_seg_clear()), is one.  A chunk not
 * yet known to have storage is looked at with SEEK_DATA, once per process
 * if it has some.  An entry is stored only after its chunk has storage
 * (pcs_map_chunk_ready()), so a chunk that is a hole holds only empty
 * entries; a reader that races with the first store into a chunk sees an
 * entry that was empty a moment ago, as it could by reading it.
 */
bool
pcs_map_chunk_readable(PcsSegment *seg, int chunk)
{
	uint64		bit = UINT64CONST(1) << (chunk % 64);

	Assert(chunk >= 0 && chunk < PCS_MAP_CHUNKS);
	if (likely(seg->map_ready[chunk / 64] & bit))
		return true;
	if (pcs_header_has_directory(seg->header))
	{
		uint32		unit;

		/* a damaged slot: its entries are unknown, skipped as a hole */
		return pcs_map_page_lookup(seg, chunk, true, &unit) > 0;
	}
#if defined(SEEK_DATA)
	{
		off_t		start = PCS_V4_MAP_OFFSET + (off_t) chunk * PCS_MAP_CHUNK;
		off_t		data;

		(void) pcs_file_end(seg);	/* reopens the kernel file if need be */
		data = lseek(FileGetRawDesc(seg->vfd), start, SEEK_DATA);
		if ((data < 0 && errno == ENXIO) ||
			(data >= 0 && data >= start + PCS_MAP_CHUNK))
			return false;
	}
#endif
	/* data there (or SEEK_DATA not supported here): it has storage */
	seg->map_ready[chunk / 64] |= bit;
	return true;
}

/*
 * Read the entries of the next run of blocks from b on, below to, that lie
 * in one piece of the map with storage (the header's entries, or one chunk
 * of the map) into entries, which holds PCS_MAP_CHUNK_ENTRIES; chunks that
 * are holes are skipped, one lseek() per chunk rather than a read.  Returns
 * the run's first block and sets *n to its length (to and 0 when no run is
 * left).  Loops over ranges of entries are
 *
 *	for (b = from; b < to; b += n)
 *		b = pcs_map_read_run(seg, b, to, entries, &n); ...
 */
static BlockNumber
pcs_map_read_run(PcsSegment *seg, BlockNumber b, BlockNumber to,
				 PcsMapEntry *entries, int *n)
{
	BlockNumber in_header = pcs_header_entries(seg->header);
	BlockNumber end;

	StaticAssertStmt(PCS_HEADER_ENTRIES <= PCS_MAP_CHUNK_ENTRIES,
					 "the header's entries must fit the buffer of a run");
	Assert(to <= RELSEG_SIZE);
	if (b < in_header)
		end = Min(to, in_header);
	else
	{
		while (b < to && !pcs_map_chunk_readable(seg, PCS_MAP_CHUNK_OF(b)))
			b = (b / PCS_MAP_CHUNK_ENTRIES + 1) * PCS_MAP_CHUNK_ENTRIES;
		end = Min(to, (b / PCS_MAP_CHUNK_ENTRIES + 1) * PCS_MAP_CHUNK_ENTRIES);
	}
	if (b >= to)
	{
		*n = 0;
		return to;
	}
	*n = (int) (end - b);
	Assert(*n > 0 && *n <= PCS_MAP_CHUNK_ENTRIES);
	pcs_map_entries(seg, b, *n, entries);
	return b;
}

/*
 * Account for the entry of block b in pcs_map_high_water(): raise *high to
 * the end of its units if it is sound, and with used not NULL, add its
 * units there if b is below nblocks.
 */
static void
pcs_high_water_entry(PcsSegment *seg, BlockNumber b, PcsMapEntry entry,
					 BlockNumber nblocks, uint32 *high, PcsUnitRun *used,
					 int *nused, bool *all_sound)
{
	PcsProblem	problem = PCS_SOUND;

	if (pcs_entry_is_empty(&entry))
		return;
	/* an in-place write may be replacing the entry: read it again */
	for (int tries = 0; tries < PCS_ENTRY_READ_TRIES; tries++)
	{
		problem = pcs_entry_check(&entry, b, PG_UINT32_MAX, seg->shift);
		if (problem == PCS_SOUND || used == NULL)
			break;
		entry = pcs_map_entry(seg, b);
	}
	if (problem == PCS_SOUND)
		*high = Max(*high, entry.first_unit + entry.units);
	if (used == NULL || b >= nblocks || pcs_entry_is_empty(&entry))
		return;
	if (problem != PCS_SOUND)
		*all_sound = false;
	else
	{
		Assert(*nused < nblocks + PCS_MAX_DICTIONARIES + PCS_MAP_PAGES + 1);
		used[*nused].first = entry.first_unit;
		used[(*nused)++].count = entry.units;
	}
}

/*
 * Account for the directory and map pages of a version 5 segment in
 * pcs_map_high_water(): each is used units, the directory named by the
 * header's directory words, a map page by its slot.  A slot that fails its
 * check even when read again under the lock leaves the units of its page
 * and of the entries there unknown, so nothing can be called free (and its
 * entries are skipped as a hole, pcs_map_chunk_readable()); a directory
 * that cannot be located leaves all of them unknown.
 */
static void
pcs_high_water_map_pages(PcsSegment *seg, uint32 *high, PcsUnitRun *used,
						 int *nused, bool *all_sound)
{
	PcsDirectory *directory;
	uint32		directory_unit;
	int			units = pcs_map_page_units(seg->shift);

	switch (pcs_directory_lookup(seg, true, &directory_unit))
	{
		case 0:
			return;
		case -1:
			if (used != NULL)
				*all_sound = false;
			return;
	}
	*high = Max(*high, directory_unit + pcs_directory_units(seg->shift));
	if (used != NULL)
	{
		used[*nused].first = directory_unit;
		used[(*nused)++].count = pcs_directory_units(seg->shift);
	}

	directory = palloc(sizeof(PcsDirectory));
	pcs_directory_read(seg, directory_unit, directory);
	for (int page = 0; page < PCS_MAP_PAGES; page++)
	{
		bool		present;
		uint32		unit;
		int			found;

		if (directory->slots[page] == 0)
			continue;
		if (pcs_directory_decode(seg->header, seg->segno, page,
								 directory->slots[page], &present,
								 &unit) == PCS_SOUND)
		{
			pcs_map_page_remember(seg, page, unit);
			found = 1;
		}
		else
			found = pcs_map_page_lookup(seg, page, true, &unit);
		if (found < 0)
		{
			if (used != NULL)
				*all_sound = false;
			continue;
		}
		if (found == 0)
			continue;
		*high = Max(*high, unit + units);
		if (used != NULL)
		{
			used[*nused].first = unit;
			used[(*nused)++].count = units;
		}
	}
	pfree(directory);
}

/*
 * The end of the highest units that a sound entry of the map points to, as
 * the map is now (after a crash: as it reached disk).  A new generation
 * starts allocating above it, so that no unit an entry on disk may point to
 * is handed out again, however old the file's size on disk is.  Only the
 * parts of the map that hold data are read (pcs_map_read_run()), so that
 * the holes of a small segment's map do not fill the page cache with zeros.
 *
 * With used not NULL, the units of the sound entries of blocks below the
 * block count are also returned there (palloc'd, *nused of them), for the
 * search of free units at the start of a generation (pcs_find_free_runs());
 * *all_sound is false if an entry below the count failed its check even
 * when read again, since its units are then unknown.
 */
static uint32
pcs_map_high_water(PcsSegment *seg, PcsUnitRun **used, int *nused,
				   bool *all_sound)
{
	PcsMapEntry entries[PCS_MAP_CHUNK_ENTRIES];
	int			n;
	uint32		high = 0;
	BlockNumber nblocks = 0;

	if (used != NULL)
	{
		nblocks = pcs_seg_nblocks(seg);
		*used = palloc((nblocks + PCS_MAX_DICTIONARIES + PCS_MAP_PAGES + 1) *
					   sizeof(PcsUnitRun));
		*nused = 0;
		*all_sound = true;
	}

	/* a dictionary's units are used for the life of the segment */
	if ((seg->header->flags & PCS_HEADER_DICTIONARIES) != 0)
		pcs_meta_read_dictionaries(seg);
	for (int d = 1; (seg->header->flags & PCS_HEADER_DICTIONARIES) != 0 &&
		 d <= PCS_MAX_DICTIONARIES; d++)
	{
		PcsDictRecord record = seg->header->dictionaries.records[d - 1];
		uint32		units;

		if (pcs_dict_record_is_unused(&record))
			continue;
		if (pcs_dict_record_check(seg->header, seg->segno, d, &record,
								  seg->shift) != PCS_SOUND)
		{
			/* its units are unknown, so nothing can be called free */
			if (used != NULL)
				*all_sound = false;
			continue;
		}
		units = pcs_units_for(record.bytes, seg->shift);
		high = Max(high, record.first_unit + units);
		if (used != NULL)
		{
			(*used)[*nused].first = record.first_unit;
			(*used)[(*nused)++].count = units;
		}
	}

	/* version 5: the map's own pages are used units */
	if (pcs_header_has_directory(seg->header))
		pcs_high_water_map_pages(seg, &high, used ? *used : NULL, nused,
								 all_sound);

	/* the entries kept in the header, then those of the map */
	for (BlockNumber b = 0; b < RELSEG_SIZE; b += n)
	{
		b = pcs_map_read_run(seg, b, RELSEG_SIZE, entries, &n);
		for (int i = 0; i < n; i++)
			pcs_high_water_entry(seg, b + i, entries[i], nblocks, &high,
								 used ? *used : NULL, nused, all_sound);
	}
	return high;
}

/* Order runs of units by their first unit */
static int
pcs_unit_run_cmp(const void *a, const void *b)
{
	const PcsUnitRun *ra = (const PcsUnitRun *) a;
	const PcsUnitRun *rb = (const PcsUnitRun *) b;

	return pg_cmp_u32(ra->first, rb->first);
}

/*
 * The runs of units below limit that no run of used covers, into out
 * (palloc'd, *nout of them); false if two used runs overlap (two entries claim the same
 * units: the map is damaged, and nothing can be called free).
 */
static bool
pcs_find_free_runs(PcsUnitRun *used, int nused, uint32 limit,
				   PcsUnitRun **out, int *nout)
{
	uint32		next = 0;

	qsort(used, nused, sizeof(PcsUnitRun), pcs_unit_run_cmp);
	*out = palloc((nused + 1) * sizeof(PcsUnitRun));
	*nout = 0;
	for (int i = 0; i < nused; i++)
	{
		if (used[i].first < next)
			return false;
		if (used[i].first > next && next < limit)
		{
			(*out)[*nout].first = next;
			(*out)[(*nout)++].count = Min(used[i].first, limit) - next;
		}
		next = used[i].first + used[i].count;
	}
	if (next < limit)
	{
		(*out)[*nout].first = next;
		(*out)[(*nout)++].count = limit - next;
	}
	return true;
}

/*
 * After the compare-and-swap that began a generation in a segment: keep the
 * runs of units below its start that no sound entry uses (runs, found in
 * the map read before the swap; NULL when it could not be trusted) as free.
 * No unit of this generation was handed out or freed before the swap:
 * every allocation needs the word, and truncations keep units only once it
 * is sound.  They wait for the segment's first fsync in this generation,
 * which is asked for now (pcs_free_want_sync()) rather than left to the
 * next checkpoint: until it, every page that moves takes fresh units from
 * the file's end.  Then record that this generation read the map.  The word
 * is recorded even when the map could not be trusted (an entry failed its
 * check, two overlapped), so that it is read once per generation; its free
 * units are then garbage until a rewrite.
 */
static void
pcs_publish_free_runs(SMgrRelation reln, PcsSegment *seg, PcsUnitRun *runs,
					  int nruns)
{
	Assert(seg->header->version != PCS_FORMAT_VERSION_2);
	if (runs != NULL)
	{
		PcsFreeKey	key;

		pcs_free_key(reln, seg->forknum, seg->segno, &key);
		if (pcs_free_publish(&key, seg->header, runs, nruns))
			pcs_free_want_sync(&key);
	}
	pcs_word_write(seg, &seg->header->alloc.second,
				   pcs_generation_word(seg->header, seg->segno,
									   pcs_current_generation()));
}

/*
 * Hand out fresh units in a segment; writeback says that they are for a
 * block written back, not extended, which may use the tablespace's reserve
 * (pcs_ensure_capacity()).
 *
 * The allocation word holds the next free unit, checked against this server
 * generation (pcs_alloc_decode()).  A word that fails the check was written
 * by an earlier generation, or is damaged: on disk, in the page cache, or in
 * memory while the server runs.  There is no telling them apart, and there
 * is no need to: in both cases the next free unit is recomputed as the
 * larger of the file's end and the high water of the map, and that is above
 * every unit anybody may be using.
 *
 * - Units of earlier generations: README.pcs ("Allocation"); the map on
 *   disk covers those whose growth of the file a crash lost.
 * - Units of this generation: each is handed out only after the file has
 *   been grown past it (pcs_ensure_capacity() runs before the
 *   compare-and-swap below, not after it), and a running server never
 *   shortens a segment file, so the file's end is above all of them.
 *
 * So a damaged word costs at most one preallocation step of space, never a
 * unit handed out twice, and it mends itself at the next allocation: no
 * error is raised for it.  What must not happen is using a damaged word, in
 * particular one whose next free unit was lowered; every reader therefore
 * checks it (here and in pcs_unit_limit()).
 */
uint32
pcs_allocate(SMgrRelation reln, PcsSegment *seg, int units, bool writeback)
{
	uint32		gen = pcs_current_generation();
	pg_atomic_uint64 *word = pcs_header_alloc(seg->header);
	uint64		old = pcs_word_read(seg, word);
	uint32		first;
	PcsUnitRun *free_runs = NULL;
	int			nfree = 0;
	uint32		found = 0;
	bool		find_free = false;

	for (;;)
	{
		bool		recomputed = false;

		if (!pcs_alloc_decode(seg->header, seg->segno, gen, old, &first))
		{
			off_t		size = pcs_file_end(seg);
			uint32		seen_gen;
			PcsUnitRun *used = NULL;
			int			nused = 0;
			bool		all_sound = false;

			/*
			 * At a new generation's first allocation the map is read for free
			 * units as well (format 3 knows which generation read it last); a
			 * word damaged in a running server is only recomputed.
			 */
			if (free_runs != NULL)
				pfree(free_runs);
			free_runs = NULL;
			found = 0;
			find_free = seg->header->version != PCS_FORMAT_VERSION_2 &&
				!(pcs_generation_decode(seg->header, seg->segno,
										pcs_word_read(seg, &seg->header->alloc.second),
										&seen_gen) && seen_gen == gen);
			/* a unit the file's end cuts is not handed out either */
			first = pcs_seg_units_below(seg, size + (1 << seg->shift) - 1);
			first = Max(first, pcs_map_high_water(seg,
												  find_free ? &used : NULL,
												  &nused, &all_sound));
			if (find_free && all_sound &&
				!pcs_find_free_runs(used, nused, first, &free_runs, &nfree))
			{
				pfree(free_runs);
				free_runs = NULL;
			}
			for (int i = 0; free_runs != NULL && i < nfree; i++)
				found += free_runs[i].count;
			if (used != NULL)
				pfree(used);
			recomputed = true;
		}
		if ((uint64) first + units > PG_UINT32_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("compressed segment file \"%s\" is full",
							FilePathName(seg->vfd)),
					 errhint("Rewrite the relation with VACUUM FULL to reclaim its unused space.")));
		/* the file holds the units before anybody can be given them */
		pcs_ensure_capacity(reln, seg, first + units, writeback,
							recomputed ? found : 0);
		if (pcs_word_compare_exchange(seg, word, &old,
									  pcs_alloc_word(seg->header, seg->segno,
													 gen, first + units)))
		{
			if (recomputed && find_free)
				pcs_publish_free_runs(reln, seg, free_runs, nfree);
			break;
		}
	}
	if (free_runs != NULL)
		pfree(free_runs);
	/* the file holds every unit handed out (README.pcs, "Allocation") */
	Assert((uint64) first + units <= seg->capacity);
	return first;
}

/* pcs_unit_limit() for the allocation word word, read under the lock */
static uint32
pcs_unit_limit_from(PcsSegment *seg, uint64 word)
{
	uint32		next;

	if (pcs_alloc_decode(seg->header, seg->segno, pcs_current_generation(),
						 word, &next))
		return next;
	if (word != seg->alloc_seen)
	{
		off_t		size = pcs_file_end(seg);

		seg->capacity = Max(seg->capacity, pcs_seg_units_below(seg, size));
		seg->alloc_seen = word;
	}
	return seg->capacity;
}

/*
 * pcs_unit_limit() for an allocation word that failed its check when read
 * without the lock: the one this process judged last (before this
 * generation's first allocation in the segment, every read), or else read
 * again under the lock, since it may only be torn
 */
static uint32
pcs_unit_limit_unchecked(PcsSegment *seg, uint64 word)
{
	if (word == seg->alloc_seen)
		return seg->capacity;
	return pcs_unit_limit_from(seg,
							   pcs_word_read(seg, pcs_header_alloc(seg->header)));
}

/*
 * The first unit not yet handed out in a segment, for entry checks.  Before
 * this generation's first allocation in the segment, or with a damaged
 * allocation word, the file's end bounds every unit handed out
 * (pcs_allocate()); it is read again whenever the word has changed since it
 * was last read, so that a word damaged while the server runs does not make
 * this process judge sound entries by an old, smaller file.  The word is
 * read without the lock first (pcs_words_read()), and again under it if it
 * fails its check.
 */
uint32
pcs_unit_limit(PcsSegment *seg)
{
	pg_atomic_uint64 *alloc = pcs_header_alloc(seg->header);
	uint32		next;

	pcs_words_read(seg, alloc, alloc);
	if (pcs_alloc_decode(seg->header, seg->segno, pcs_current_generation(),
						 pg_atomic_read_u64(alloc), &next))
		return next;
	return pcs_unit_limit_unchecked(seg, pg_atomic_read_u64(alloc));
}

/*
 * A segment's block count and first unit not yet handed out, as
 * pcs_seg_nblocks() and pcs_unit_limit() give them, from one read of the
 * header's words (they lie within 1 kB): a block read needs both, after
 * its entry.  Either that fails its check is read again as those do.
 */
void
pcs_seg_words(PcsSegment *seg, BlockNumber *nblocks, uint32 *limit)
{
	PcsHeader  *header = seg->header;
	pg_atomic_uint64 *alloc = pcs_header_alloc(header);
	pg_atomic_uint64 *count0 = pcs_header_nblocks(header, 0);
	pg_atomic_uint64 *count1 = pcs_header_nblocks(header,
												  pcs_header_nblocks_copies(header) - 1);
	int			sound;

	pcs_words_read(seg, Min(alloc, count0), Max(alloc, count1));
	if (pcs_nblocks_read(header, seg->segno, nblocks, &sound) != PCS_SOUND ||
		sound != pcs_header_nblocks_copies(header))
		*nblocks = pcs_seg_nblocks(seg);
	if (!pcs_alloc_decode(header, seg->segno, pcs_current_generation(),
						  pg_atomic_read_u64(alloc), limit))
		*limit = pcs_unit_limit_unchecked(seg, pg_atomic_read_u64(alloc));
}

/*
 * The block count of a segment that has no sound copy of its count left:
 * one past the highest block whose entry is sound and not empty.  Blocks
 * after it that were only zero-extended read as zeros either way.  Entries
 * past a lowered count are cleared right after it is lowered, and a
 * truncation that a crash interrupted is repeated by redo.
 */
static BlockNumber
pcs_nblocks_from_map(PcsSegment *seg)
{
	PcsMapEntry entries[PCS_MAP_CHUNK_ENTRIES];
	int			n;
	uint32		limit = pcs_unit_limit(seg);
	BlockNumber count = 0;

	for (BlockNumber b = 0; b < RELSEG_SIZE; b += n)
	{
		b = pcs_map_read_run(seg, b, RELSEG_SIZE, entries, &n);
		for (int i = 0; i < n; i++)
		{
			if (!pcs_entry_is_empty(&entries[i]) &&
				pcs_entry_check(&entries[i], b + i, limit,
								seg->shift) == PCS_SOUND)
				count = b + i + 1;
		}
	}
	return count;
}

/*
 * Set every copy of a segment's block count to n: a truncation, which holds
 * the relation's AccessExclusiveLock, so no extension runs meanwhile
 */
void
pcs_seg_store_nblocks(PcsSegment *seg, BlockNumber n)
{
	for (int copy = 0; copy < pcs_header_nblocks_copies(seg->header); copy++)
		pcs_word_write(seg, pcs_header_nblocks(seg->header, copy),
					   pcs_nblocks_word(seg->header, seg->segno, copy, n));
}

/*
 * Replace the damaged copies of a segment's block count by n.  Each is
 * replaced only if it still holds the damaged word (a compare-and-swap), so
 * that a concurrent raise of the count is never undone.
 */
static void
pcs_seg_repair_nblocks(PcsSegment *seg, BlockNumber n)
{
	for (int copy = 0; copy < pcs_header_nblocks_copies(seg->header); copy++)
	{
		pg_atomic_uint64 *word = pcs_header_nblocks(seg->header, copy);
		uint64		old = pcs_word_read(seg, word);
		BlockNumber cur;

		if (pcs_nblocks_decode(seg->header, seg->segno, copy, old,
							   &cur) != PCS_SOUND)
			(void) pcs_word_compare_exchange(seg, word, &old,
											 pcs_nblocks_word(seg->header,
															  seg->segno,
															  copy, n));
	}
}

/*
 * Blocks of a segment.  Version 3 keeps the count twice, in two sectors
 * (pcs_nblocks_read() takes the larger sound copy), so one damaged copy is
 * rewritten from the other with a WARNING, and the segment goes on working:
 * a damaged count used to stop every checkpoint, shutdown and restart.
 * When no copy is sound (or the one copy of a version 2 segment is not),
 * the count is recovered from the map (pcs_nblocks_from_map()), also with a
 * WARNING; that never makes a block that holds data disappear.
 */
BlockNumber
pcs_seg_nblocks(PcsSegment *seg)
{
	BlockNumber n = 0;
	int			sound;
	PcsProblem	problem;

	/*
	 * The process's copy of the header holds the words as they are now: one
	 * read without the lock, and if a copy fails its check, each read again
	 * under it (pcs_words_read())
	 */
	pcs_words_read(seg, pcs_header_nblocks(seg->header, 0),
				   pcs_header_nblocks(seg->header,
									  pcs_header_nblocks_copies(seg->header) - 1));
	problem = pcs_nblocks_read(seg->header, seg->segno, &n, &sound);
	if (likely(sound == pcs_header_nblocks_copies(seg->header)))
		return n;
	for (int copy = 0; copy < pcs_header_nblocks_copies(seg->header); copy++)
		(void) pcs_word_read(seg, pcs_header_nblocks(seg->header, copy));
	problem = pcs_nblocks_read(seg->header, seg->segno, &n, &sound);
	if (sound == pcs_header_nblocks_copies(seg->header))
		return n;

	if (problem != PCS_SOUND)
		n = pcs_nblocks_from_map(seg);
	ereport(WARNING,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("invalid block count in compressed segment file \"%s\", replaced by %u",
					FilePathName(seg->vfd), n),
			 problem == PCS_SOUND ?
			 errdetail("One of the two copies of the block count was damaged; the other one was sound.") :
			 errdetail("%s  The count was recovered from the blocks that have storage.",
					   _(pcs_problem_message(problem)))));
	pcs_seg_repair_nblocks(seg, n);
	return n;
}

/*
 * Raise a segment's block count to at least n: copy 0 first, then copy 1,
 * each with a compare-and-swap so that of two concurrent raises the larger
 * stays in both.
 */
void
pcs_seg_raise_nblocks(PcsSegment *seg, BlockNumber n)
{
	Assert(n <= RELSEG_SIZE);

	(void) pcs_seg_nblocks(seg);	/* every copy is sound from here on */
	for (int copy = 0; copy < pcs_header_nblocks_copies(seg->header); copy++)
	{
		pg_atomic_uint64 *word = pcs_header_nblocks(seg->header, copy);
		uint64		old = pcs_word_read(seg, word);

		for (;;)
		{
			BlockNumber cur;

			if (pcs_nblocks_decode(seg->header, seg->segno, copy, old,
								   &cur) == PCS_SOUND && cur >= n)
				break;
			if (pcs_word_compare_exchange(seg, word, &old,
										  pcs_nblocks_word(seg->header,
														   seg->segno,
														   copy, n)))
				break;
		}
	}
}

/*
 * Clear the entries of blocks [from, to) of a segment: they read as zeros.
 *
 * Only entries that are not empty already are written.  The map is sparse:
 * storing zeros into a map page that is a hole would make the file system
 * allocate it for nothing (and fail on a full file system), and
 * zero-extension clears every entry it covers.  Nor are holes read
 * (pcs_map_read_run()).
 */
void
pcs_seg_clear(PcsSegment *seg, BlockNumber from, BlockNumber to)
{
	PcsMapEntry entries[PCS_MAP_CHUNK_ENTRIES];
	PcsMapEntry empty;
	int			n;

	Assert(from <= to && to <= RELSEG_SIZE);
	memset(&empty, 0, sizeof(empty));
	for (BlockNumber b = from; b < to; b += n)
	{
		b = pcs_map_read_run(seg, b, to, entries, &n);
		for (int i = 0; i < n; i++)
		{
			if (!pcs_entry_is_empty(&entries[i]))
				pcs_map_store(seg, b + i, &empty);
		}
	}
}

/*
 * Clear the entries of blocks [from, to) of a segment that a truncation cut
 * off, give the whole pages of the units of the sound ones back to the file
 * system and keep the units for reuse (pcs_free_pool.c), in runs of
 * adjacent units, each once every entry pointing into it is cleared.  Runs
 * in a critical section (RelationTruncate()): nothing here allocates
 * memory, and a failure to read or write the map (an I/O error) is a PANIC,
 * as md.c's failure to truncate a file is there.
 *
 * Units are kept only while the allocation word is sound for this server
 * generation: before the first allocation of a generation, the map has not
 * been read for free units yet, and that reading will find these
 * (pcs_allocate()); keeping them as well would keep them twice.
 */
void
pcs_seg_truncate_entries(SMgrRelation reln, ForkNumber forknum,
						 PcsSegment *seg, BlockNumber from, BlockNumber to)
{
	PcsFreeKey	key;
	uint32		limit;
	bool		keep_free;
	uint32		run_first = 0;
	uint32		run_count = 0;
	PcsMapEntry entries[PCS_MAP_CHUNK_ENTRIES];
	PcsMapEntry empty;
	int			n;

	Assert(from <= to && to <= RELSEG_SIZE);
	pcs_free_key(reln, forknum, seg->segno, &key);
	keep_free = pcs_alloc_decode(seg->header, seg->segno,
								 pcs_current_generation(),
								 pcs_word_read(seg, pcs_header_alloc(seg->header)),
								 &limit);
	memset(&empty, 0, sizeof(empty));
	for (BlockNumber b = from; b < to; b += n)
	{
		b = pcs_map_read_run(seg, b, to, entries, &n);
		for (int i = 0; i < n; i++)
		{
			PcsMapEntry *entry = &entries[i];

			if (pcs_entry_is_empty(entry))
				continue;
			pcs_map_store(seg, b + i, &empty);
			if (!keep_free ||
				pcs_entry_check(entry, b + i, limit, seg->shift) != PCS_SOUND)
				continue;
			if (run_count > 0 && run_first + run_count == entry->first_unit)
			{
				run_count += entry->units;
				continue;
			}
			if (run_count > 0)
				pcs_free_units(&key, seg->header, run_first, run_count,
							   SmgrIsTemp(reln), true, seg->vfd);
			run_first = entry->first_unit;
			run_count = entry->units;
		}
	}
	if (run_count > 0)
		pcs_free_units(&key, seg->header, run_first, run_count,
					   SmgrIsTemp(reln), true, seg->vfd);
}

/*
 * Make every segment before segno full, before a block of segment segno is
 * added.  An extension may skip over the rest of a segment: hash indexes
 * allocate the blocks of a new split point by writing its last one, which
 * can lie in a later segment.  A fork's size is the sum of its segments up to
 * the first that is not full, so a short segment before the new block would
 * hide it, and every block after it; md.c pads such segments to
 * RELSEG_SIZE in _mdfd_getseg(EXTENSION_CREATE), and so does this, with
 * blocks that have no storage and read as zeros.
 */
void
pcs_fill_segments_before(SMgrRelation reln, ForkNumber forknum,
						 BlockNumber segno, bool skipFsync)
{
	PcsSegment *prev;

	if (segno == 0)
		return;
	/* the usual case: each segment was filled before the next one began */
	prev = pcs_getseg(reln, forknum, segno - 1, false);
	if (prev != NULL && pcs_seg_nblocks(prev) == RELSEG_SIZE)
		return;

	for (BlockNumber s = 0; s < segno; s++)
	{
		PcsSegment *seg = pcs_getseg(reln, forknum, s, true);
		BlockNumber cur = pcs_seg_nblocks(seg);

		Assert(cur <= RELSEG_SIZE);
		if (cur == RELSEG_SIZE)
			continue;
		/* entries past the old end mean nothing: clear them first */
		pcs_seg_clear(seg, cur, RELSEG_SIZE);
		pcs_seg_raise_nblocks(seg, RELSEG_SIZE);
		if (!skipFsync)
			pcs_register_dirty(reln, forknum, s, seg);
	}
}

/*
 * pcs_sync_fork: make every segment of a compressed fork durable, now
 * (immediate) or at the next checkpoint
 */
void
pcs_sync_fork(SMgrRelation reln, ForkNumber forknum, bool immediate)
{
	PGSTRATA_INJECTION_POINT("pcs-rewrite-sync");
	for (BlockNumber segno = 0;; segno++)
	{
		PcsSegment *seg = pcs_getseg(reln, forknum, segno, false);

		if (seg == NULL)
			break;
		if (!immediate)
			pcs_register_dirty(reln, forknum, segno, seg);
		else
			pcs_sync_now(reln, forknum, seg,
						 WAIT_EVENT_DATA_FILE_IMMEDIATE_SYNC);
	}
}
