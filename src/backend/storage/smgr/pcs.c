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
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/xlog.h"
#include "access/xlogutils.h"
#include "common/hashfn.h"
#include "common/int.h"
#include "common/relpath.h"
#include "lib/ilist.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "pgstrata_compat.h"
#if PG_VERSION_NUM >= 180000
#include "storage/aio.h"
/* pgaio_io_get_iovec_length(): the completion finds the buffers there */
#include "storage/aio_internal.h"
#endif
#include "storage/bufmgr.h"
#include "storage/fd.h"
#include "storage/lwlock.h"
#include "storage/md.h"
#include "storage/pcs.h"
#include "storage/pcs_format.h"
#include "storage/pcs_freespace.h"
#include "storage/shmem.h"
#include "storage/smgr.h"
#include "storage/sync.h"
#include "utils/injection_point.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

/* Bytes of the map whose storage is made to exist at once (a kernel page) */
#define PCS_MAP_CHUNK		4096
#define PCS_MAP_CHUNKS		((int) (PCS_MAP_SIZE / PCS_MAP_CHUNK))
#define PCS_MAP_CHUNK_ENTRIES	(PCS_MAP_CHUNK / PCS_ENTRY_SIZE)
/* the chunk of the map that holds the entry of segblock */
#define PCS_MAP_CHUNK_OF(segblock) \
	((int) (((off_t) (segblock) * PCS_ENTRY_SIZE) / PCS_MAP_CHUNK))

/* An open compressed segment of one fork, in one process */
typedef struct PcsSegment
{
	File		vfd;			/* the segment file */
	PcsHeader  *header;			/* MAP_SHARED mapping of header and map, or
								 * NULL while unmapped (pcs_limit_mappings) */
	BlockNumber segno;			/* its number within the fork */
	ForkNumber	forknum;		/* its fork */
	int			shift;			/* log2 of its unit size, from its header */
	uint32		capacity;		/* units the file is known to hold */
	uint64		alloc_seen;		/* allocation word when capacity was read */
	dlist_node	lru;			/* place in pcs_mapped, while mapped */
	PcsCodecState codec;		/* what the codec learnt of its pages */
	/* its dictionaries, by number, prepared once used (pcs_seg_dictionary) */
	PcsDict    *dicts[PCS_MAX_DICTIONARIES + 1];
	uint16		dicts_failed;	/* numbers that failed to load, as bits */
	/* the dictionary sector's word last seen, and the number it gave */
	bool		dict_word_known;
	uint64		dict_word_seen;
	int			dict_number_seen;
	/* pages of its first extensions, for a dictionary (pcs_seg_sample()) */
	bool		sampling_over;
	BlockNumber sample_next;	/* the block the next extension must be */
	int			nsample;		/* pages in sample */
	char	   *sample;			/* PCS_AUTO_TRAIN_PAGES pages, or NULL */

	/*
	 * chunks of the map known to have storage (pcs_map_chunk_ready(),
	 * pcs_map_entry())
	 */
	uint64		map_ready[(PCS_MAP_CHUNKS + 63) / 64];
} PcsSegment;

/* Values of SMgrRelationData.pcs_format[] */
#define PCS_FORMAT_UNKNOWN		0
#define PCS_FORMAT_MD			1
#define PCS_FORMAT_COMPRESSED	2
#define PCS_FORMAT_EMPTY		3	/* never stored: see pcs_fork_format() */

/* Smallest and largest step by which a segment's data area grows, in bytes */
#define PCS_MIN_GROWTH		(4 * 1024)
#define PCS_MAX_GROWTH		(8 * 1024 * 1024)

/* Tries at reading a map entry that a concurrent writer may be replacing */
#define PCS_ENTRY_READ_TRIES	3

/*
 * A segment filled from its first block by extensions (a bulk write: a
 * rewrite, an index build, a copy to another tablespace) trains a
 * dictionary on its first this many pages (pcs_seg_sample())
 */
#define PCS_AUTO_TRAIN_PAGES	1024

/* Tries at reading a block whose write a reader may meet half done */
#define PCS_READ_TRIES			9

/*
 * Images of the blocks of one vectored read that lie at most this far apart
 * on disk are fetched with one read: reading a small gap costs less than a
 * second system call, and the gap is usually slack of the image before it.
 */
#define PCS_COALESCE_GAP		(8 * 1024)

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

static MemoryContext PcsCxt = NULL;
static uint32 pcs_generation = 0;

/* Mapped segments of this process, most recently used first */
static dlist_head pcs_mapped = DLIST_STATIC_INIT(pcs_mapped);
static int	pcs_num_mapped = 0;

static int	pcs_fork_format(SMgrRelation reln, ForkNumber forknum);
static PcsSegment *pcs_getseg(SMgrRelation reln, ForkNumber forknum,
							  BlockNumber segno, bool create);
static BlockNumber pcs_seg_nblocks(PcsSegment *seg);

/* Is this fork compressed? md forks answer after one cached lookup. */
static inline bool
pcs_is_compressed(SMgrRelation reln, ForkNumber forknum)
{
	int			format = reln->pcs_format[forknum];

	if (likely(format != PCS_FORMAT_UNKNOWN))
		return format == PCS_FORMAT_COMPRESSED;
	return pcs_fork_format(reln, forknum) == PCS_FORMAT_COMPRESSED;
}

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
static void
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
 * The SQLSTATE of an image that cannot be read back: ERRCODE_DATA_CORRUPTED,
 * unless the build lacks what the image needs or memory ran out
 */
static int
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
 * The generation of this server: the first allocation of a generation in a
 * segment starts above the end of the file, and reads the map for free
 * units (README.pcs).  Each life of shared memory is a generation of its
 * own: after a backend crash the postmaster resets shared memory, and with
 * it the free units kept there (pcs_freespace.c), which the new generation
 * finds again from the maps.
 */
static uint32
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

/*
 * Before the first extension of a fork found empty, make an all-zero
 * segment 0 (pcs_segment0_is_blank()) empty again, so that md.c
 * extends it from its first byte: written at md offsets over a file of
 * PCS_DATA_OFFSET bytes, its blocks would come after 256 zero pages that
 * nobody wrote.  The caller holds the relation's extension lock, or is the
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
static int
pcs_fork_format(SMgrRelation reln, ForkNumber forknum)
{
	char	   *path = PGSTRATA_RELPATH(reln->smgr_rlocator, forknum);
	uint64		magic = 0;
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
	nread = pg_pread(fd, &magic, sizeof(magic), 0);
	if (nread < 0 || fstat(fd, &st) < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", path)));
	blank = nread == sizeof(magic) && magic == 0 &&
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
	 * The same holds a moment later: pcs_init_segment_file() writes the
	 * header, then sizes the file to its data area.  A file of exactly the
	 * header's size has no block yet (a crash may also leave one): it counts
	 * as empty, not as a damaged compressed file.  Any other file shorter
	 * than the data area is reported as damaged when it is opened.
	 */
	if (magic == PCS_MAGIC && st.st_size == PCS_HEADER_SIZE)
		return PCS_FORMAT_EMPTY;

	/*
	 * And after an operating system crash that kept the file's size and lost
	 * its header: a file of exactly the data area's size, all zeros
	 * (pcs_segment0_is_blank()).
	 */
	if (blank)
		return PCS_FORMAT_EMPTY;

	reln->pcs_format[forknum] =
		(nread == sizeof(magic) && magic == PCS_MAGIC) ?
		PCS_FORMAT_COMPRESSED : PCS_FORMAT_MD;
	return reln->pcs_format[forknum];
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
static void
pcs_sync_now(SMgrRelation reln, ForkNumber forknum, PcsSegment *seg,
			 uint32 wait_event)
{
	FileTag		tag;
	uint64		clock;

	pcs_sync_tag(reln, forknum, seg->segno, &tag);
	clock = pcs_sync_begin(&tag);
	if (FileSync(seg->vfd, wait_event) < 0)
		ereport(data_sync_elevel(ERROR),
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m",
						FilePathName(seg->vfd))));
	pcs_sync_done(&tag, clock, seg->vfd);
}

/*
 * Tell the checkpointer that a segment has been written, or fsync it here if
 * the request queue is full, as md.c does for its segments.  The tag is md's:
 * the sync handler opens the segment by name, which is the same for both.
 */
static void
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

/*
 * Write the header block of new segment segno and size the file to its data
 * area
 */
static void
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
	/* the map stays a hole until entries are written */
	if (FileTruncate(vfd, PCS_DATA_OFFSET, WAIT_EVENT_DATA_FILE_TRUNCATE) < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not extend file \"%s\": %m", FilePathName(vfd))));

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
 * its header, sizing it to its data area and fsyncing it, before anything
 * else is written into it (pcs_init_segment_file()).  A crash, of the server
 * or of the operating system, can stop that at any point, and leave a file
 * that is empty, shorter than the data area, or as long as the data area
 * with a header that never reached disk; a base backup taken meanwhile copies
 * the same.  Such a file holds no block: it reads as a segment with no
 * blocks, as an empty md segment does, and its next extension writes the
 * header again.  A file longer than its data area had its header made
 * durable first, so a blank header there is damage, reported as such.
 */
static bool
pcs_segment_is_unfinished(File vfd, BlockNumber segno, off_t size)
{
	char		head[PCS_SECTOR_SIZE];

	Assert(segno > 0);
	if (size < PCS_DATA_OFFSET)
		return true;
	if (size > PCS_DATA_OFFSET)
		return false;
	if (FileRead(vfd, head, sizeof(head), 0, WAIT_EVENT_DATA_FILE_READ) != sizeof(head))
		return false;			/* let the header check report it */
	for (int i = 0; i < sizeof(head); i++)
	{
		if (head[i] != 0)
			return false;
	}
	return true;
}

/*
 * Map the header and map of an open segment and check its header.  On
 * failure the mapping is undone and an error raised; the caller closes the
 * file.
 */
static void
pcs_map_segment(PcsSegment *seg)
{
	void	   *mapping;
	PcsProblem	problem;

	Assert(seg->header == NULL);

	/* FileSize() reopens the kernel file if fd.c closed it meanwhile */
	if (FileSize(seg->vfd) < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not seek to end of file \"%s\": %m",
						FilePathName(seg->vfd))));
	mapping = mmap(NULL, PCS_DATA_OFFSET, PROT_READ | PROT_WRITE, MAP_SHARED,
				   FileGetRawDesc(seg->vfd), 0);
	if (mapping == MAP_FAILED)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not map file \"%s\": %m",
						FilePathName(seg->vfd))));

	problem = pcs_header_check((PcsHeader *) mapping);
	if (problem != PCS_SOUND)
	{
		uint32		version = pcs_header_other_version((PcsHeader *) mapping);

		munmap(mapping, PCS_DATA_OFFSET);
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

	seg->header = (PcsHeader *) mapping;
	seg->shift = seg->header->unit_shift;
	Assert(seg->shift == PCS_UNIT_SHIFT || seg->shift == PCS_V2_UNIT_SHIFT);
	dlist_push_head(&pcs_mapped, &seg->lru);
	pcs_num_mapped++;
}

/* Undo the mapping of a segment; the file stays open */
static void
pcs_unmap_segment(PcsSegment *seg)
{
	Assert(seg->header != NULL && pcs_num_mapped > 0);
	dlist_delete(&seg->lru);
	pcs_num_mapped--;
	if (munmap(seg->header, PCS_DATA_OFFSET) != 0)
		elog(WARNING, "could not unmap file \"%s\": %m",
			 FilePathName(seg->vfd));
	seg->header = NULL;
}

/*
 * Keep the mappings of this process below max_files_per_process, unmapping
 * the segments used least recently.  Each mapping is one entry of the
 * process's memory map, which the kernel bounds (vm.max_map_count, 65530
 * by default); a session that touches tens of thousands of compressed forks
 * (pg_dump of a large schema, many partitions) would otherwise exhaust it,
 * where md.c only recycles file descriptors.  The most recently used
 * segments stay mapped, so a caller that still holds a segment it used just
 * before opening another keeps its mapping.
 */
static void
pcs_limit_mappings(void)
{
	int			limit = Max(max_files_per_process, 16);

	Assert(pcs_num_mapped >= 0);

	while (pcs_num_mapped >= limit)
		pcs_unmap_segment(dlist_tail_element(PcsSegment, lru, &pcs_mapped));
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
static PcsSegment *
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
		if (likely(seg->header != NULL))
			dlist_move_head(&pcs_mapped, &seg->lru);
		else
		{
			pcs_limit_mappings();
			pcs_map_segment(seg);
		}
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
		size = PCS_DATA_OFFSET;
	}
	else if (size < PCS_DATA_OFFSET)
	{
		char	   *name = pstrdup(FilePathName(vfd));

		FileClose(vfd);
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("compressed segment file \"%s\" is too short", name),
				 errdetail("The file has %lld bytes; a compressed segment has at least %lld.",
						   (long long) size, (long long) PCS_DATA_OFFSET)));
	}

	if (PcsCxt == NULL)
		PcsCxt = AllocSetContextCreate(TopMemoryContext, "PcsSegments",
									   ALLOCSET_SMALL_SIZES);
	seg = MemoryContextAllocZero(PcsCxt, sizeof(PcsSegment));
	seg->vfd = vfd;
	seg->segno = segno;
	seg->forknum = forknum;
	pcs_limit_mappings();
	PG_TRY();
	{
		pcs_map_segment(seg);
	}
	PG_CATCH();
	{
		FileClose(vfd);
		pfree(seg);
		PG_RE_THROW();
	}
	PG_END_TRY();
	seg->capacity = (uint32) ((size - PCS_DATA_OFFSET) >> seg->shift);
	seg->alloc_seen = pg_atomic_read_u64(pcs_header_alloc(seg->header));
	pcs_remember_segment(reln, forknum, segno, seg);
	return seg;
}

/* Unmap and close every open segment of a fork */
static void
pcs_close_segments(SMgrRelation reln, ForkNumber forknum)
{
	for (int i = 0; i < reln->pcs_num_segs[forknum]; i++)
	{
		PcsSegment *seg = reln->pcs_segs[forknum][i];

		if (seg == NULL)
			continue;
		if (seg->header != NULL)
			pcs_unmap_segment(seg);
		FileClose(seg->vfd);
		for (int n = 1; n <= PCS_MAX_DICTIONARIES; n++)
			pcs_dict_free(seg->dicts[n]);
		if (seg->sample != NULL)
			pfree(seg->sample);
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
 * processes, and stores through their mappings meanwhile, are harmless.
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
					bool writeback)
{
	off_t		size;
	uint32		have;
	uint32		grow;

	if (limit <= seg->capacity)
		return;

	size = pcs_file_end(seg);
	have = (uint32) ((size - PCS_DATA_OFFSET) >> seg->shift);
	if (limit > have)
	{
		int			fd;
		int			ret;

		grow = Min(Max(have / 16, PCS_MIN_GROWTH >> seg->shift),
				   PCS_MAX_GROWTH >> seg->shift);
		grow = Max(grow, limit - have);
		/* the size read above may be stale by the time the file grows */
		PGSTRATA_INJECTION_POINT("pcs-grow-before-allocate");
		(void) pcs_file_end(seg);	/* reopens the kernel file if need be */
		fd = FileGetRawDesc(seg->vfd);
		for (;;)
		{
			ret = pcs_fallocate(fd, pcs_unit_offset(have, seg->shift),
								(off_t) grow << seg->shift);
			if (ret == EOPNOTSUPP || ret == EINVAL)
				ret = pcs_grow_by_writing(seg, fd,
										  pcs_unit_offset(have + grow, seg->shift));
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
 * Make sure the chunk of the map holding the entry of segblock has storage
 * before an entry is stored into it through the mapping.  The map is
 * sparse; the first store into a part that is a hole makes the file system
 * allocate it, and on a full file system that store cannot fail, so the
 * kernel kills the process with SIGBUS, and the postmaster every session
 * with it.  Allocated here first, before the write allocates units or
 * writes anything, a full file system is an ERROR for the write instead.
 * Each process remembers the chunks it has seen allocated; nothing ever
 * takes storage away from a map chunk.
 *
 * Where the file system has no fallocate(), nothing is done: other
 * processes store into the chunk without a lock, so writing zeros there is
 * not safe, and a full file system remains fatal to such a store.  A
 * write-back (writeback) of a block that was zero-extended into a chunk
 * that is still a hole may take the chunk's space from the tablespace's
 * reserve (pcs_reserve.c).
 */
static void
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
	PGSTRATA_INJECTION_POINT("pcs-map-chunk-allocate");
	(void) pcs_file_end(seg);	/* reopens the kernel file if need be */
	do
	{
		ret = pcs_fallocate(FileGetRawDesc(seg->vfd),
							PCS_MAP_OFFSET + (off_t) chunk * PCS_MAP_CHUNK,
							PCS_MAP_CHUNK);
	} while ((ret == ENOSPC || ret == EDQUOT) && writeback &&
			 pcs_reserve_release(reln->smgr_rlocator.locator.spcOid,
								 PCS_MAP_CHUNK));
	if (ret != 0 && ret != EOPNOTSUPP && ret != EINVAL)
		pcs_storage_failed(seg, ret);
	seg->map_ready[chunk / 64] |= bit;
}

/*
 * May the entries of a chunk of the map be read through the mapping?  Not
 * if the chunk is a hole.  Reading a hole through a shared mapping costs
 * nothing on most file systems, but tmpfs allocates a page for it, so on a
 * full tmpfs the read itself raises SIGBUS; and the map of zero-extended
 * blocks is left a hole (pcs_seg_clear()).  A chunk not yet known to have
 * storage is looked at with SEEK_DATA, once per process if it has some.  An
 * entry is stored only after its chunk has storage (pcs_map_chunk_ready()),
 * so a chunk that is a hole holds only empty entries; a reader that races
 * with the first store into a chunk sees an entry that was empty a moment
 * ago, as it could through the mapping.
 */
static bool
pcs_map_chunk_readable(PcsSegment *seg, int chunk)
{
	uint64		bit = UINT64CONST(1) << (chunk % 64);

	Assert(chunk >= 0 && chunk < PCS_MAP_CHUNKS);
	if (likely(seg->map_ready[chunk / 64] & bit))
		return true;
#if defined(SEEK_DATA)
	{
		off_t		start = PCS_MAP_OFFSET + (off_t) chunk * PCS_MAP_CHUNK;
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
 * Where the map entry of segblock lies in the mapping of a segment: in its
 * header or in its map, by format version (pcs_entry_slot())
 */
static inline PcsMapEntry *
pcs_seg_entry(PcsSegment *seg, BlockNumber segblock)
{
	Assert(seg->header != NULL && segblock < RELSEG_SIZE);
	return pcs_entry_slot(seg->header, segblock);
}

/* May the entry of segblock be read through the mapping (see above)? */
static inline bool
pcs_entry_readable(PcsSegment *seg, BlockNumber segblock)
{
	return segblock < pcs_header_entries(seg->header) ||
		pcs_map_chunk_readable(seg, PCS_MAP_CHUNK_OF(segblock));
}

/* The map entry of segblock, or an empty one where its chunk is a hole */
static inline PcsMapEntry
pcs_map_entry(PcsSegment *seg, BlockNumber segblock)
{
	PcsMapEntry entry;

	Assert(segblock < RELSEG_SIZE);
	if (unlikely(!pcs_entry_readable(seg, segblock)))
	{
		memset(&entry, 0, sizeof(entry));
		Assert(pcs_entry_is_empty(&entry));
		return entry;
	}
	entry = *pcs_seg_entry(seg, segblock);
	return entry;
}

/*
 * The first block at or after b, below to, whose chunk of the map is not a
 * hole (or to): loops over ranges of entries skip holes with it, one
 * lseek() per chunk rather than per entry.
 */
static BlockNumber
pcs_map_skip_holes(PcsSegment *seg, BlockNumber b, BlockNumber to)
{
	while (b < to && !pcs_entry_readable(seg, b))
		b = (b / PCS_MAP_CHUNK_ENTRIES + 1) * PCS_MAP_CHUNK_ENTRIES;
	return Min(b, to);
}

/*
 * Account for the entry of block b in pcs_map_high_water(): raise *high to
 * the end of its units if it is sound, and with used not NULL, add its
 * units there if b is below nblocks.
 */
static void
pcs_high_water_entry(PcsSegment *seg, BlockNumber b, BlockNumber nblocks,
					 uint32 *high, PcsUnitRun *used, int *nused,
					 bool *all_sound)
{
	PcsMapEntry entry = *pcs_seg_entry(seg, b);
	PcsProblem	problem = PCS_SOUND;

	if (pcs_entry_is_empty(&entry))
		return;
	/* an in-place write may be replacing the entry: read it again */
	for (int tries = 0; tries < PCS_ENTRY_READ_TRIES; tries++)
	{
		problem = pcs_entry_check(&entry, b, PG_UINT32_MAX, seg->shift);
		if (problem == PCS_SOUND || used == NULL)
			break;
		entry = *pcs_seg_entry(seg, b);
	}
	if (problem == PCS_SOUND)
		*high = Max(*high, entry.first_unit + entry.units);
	if (used == NULL || b >= nblocks || pcs_entry_is_empty(&entry))
		return;
	if (problem != PCS_SOUND)
		*all_sound = false;
	else
	{
		Assert(*nused < nblocks + PCS_MAX_DICTIONARIES);
		used[*nused].first = entry.first_unit;
		used[(*nused)++].count = entry.units;
	}
}

/*
 * The end of the highest units that a sound entry of the map points to, as
 * the map is now (after a crash: as it reached disk).  A new generation
 * starts allocating above it, so that no unit an entry on disk may point to
 * is handed out again, however old the file's size on disk is.  Only the
 * parts of the map that hold data are read (SEEK_DATA), so that the holes of
 * a small segment's map do not fill the page cache with zeros.
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
	int			fd = FileGetRawDesc(seg->vfd);
	BlockNumber in_header = pcs_header_entries(seg->header);
	off_t		pos = PCS_MAP_OFFSET + (off_t) in_header * sizeof(PcsMapEntry);
	off_t		end = PCS_MAP_OFFSET + (off_t) RELSEG_SIZE * sizeof(PcsMapEntry);
	uint32		high = 0;
	BlockNumber nblocks = 0;

	if (used != NULL)
	{
		nblocks = pcs_seg_nblocks(seg);
		*used = palloc((nblocks + PCS_MAX_DICTIONARIES) * sizeof(PcsUnitRun));
		*nused = 0;
		*all_sound = true;
	}

	/* a dictionary's units are used for the life of the segment */
	for (int n = 1; (seg->header->flags & PCS_HEADER_DICTIONARIES) != 0 &&
		 n <= PCS_MAX_DICTIONARIES; n++)
	{
		PcsDictRecord record = seg->header->dictionaries.records[n - 1];
		uint32		units;

		if (pcs_dict_record_is_unused(&record))
			continue;
		if (pcs_dict_record_check(seg->header, seg->segno, n, &record,
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

	/* the entries kept in the header, then those of the map */
	for (BlockNumber b = 0; b < in_header; b++)
		pcs_high_water_entry(seg, b, nblocks, &high,
							 used ? *used : NULL, nused, all_sound);
	while (pos < end)
	{
		off_t		data;
		off_t		hole;

		if (!pcs_next_data_range(fd, pos, end, &data, &hole))
			break;
		for (off_t b = Max((data - PCS_MAP_OFFSET) / sizeof(PcsMapEntry),
						   in_header);
			 b < (hole - PCS_MAP_OFFSET + sizeof(PcsMapEntry) - 1) / sizeof(PcsMapEntry);
			 b++)
			pcs_high_water_entry(seg, (BlockNumber) b, nblocks, &high,
								 used ? *used : NULL, nused, all_sound);
		pos = hole;
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
 * units below start that no sound entry uses as free (the map was read
 * before the swap, and no unit of this generation was handed out or freed
 * before it: every allocation needs the word, and truncations keep units
 * only once it is sound), then record that this generation read the map.
 * The word is recorded even when the map could not be trusted (an entry
 * failed its check, two overlapped), so that it is read once per
 * generation; its free units are then garbage until a rewrite.
 */
static void
pcs_publish_free_runs(SMgrRelation reln, PcsSegment *seg, PcsUnitRun *used,
					  int nused, bool all_sound, uint32 start)
{
	PcsUnitRun *runs = NULL;
	int			nruns = 0;

	Assert(seg->header->version != PCS_FORMAT_VERSION_2);
	if (all_sound && pcs_find_free_runs(used, nused, start, &runs, &nruns))
	{
		PcsFreeKey	key;

		pcs_free_key(reln, seg->forknum, seg->segno, &key);
		pcs_free_publish(&key, seg->shift, runs, nruns);
	}
	if (runs != NULL)
		pfree(runs);
	pg_atomic_write_u64(&seg->header->alloc.second,
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
static uint32
pcs_allocate(SMgrRelation reln, PcsSegment *seg, int units, bool writeback)
{
	uint32		gen = pcs_current_generation();
	pg_atomic_uint64 *word = pcs_header_alloc(seg->header);
	uint64		old = pg_atomic_read_u64(word);
	uint32		first;
	PcsUnitRun *used = NULL;
	int			nused = 0;
	bool		all_sound = false;
	bool		find_free = false;

	for (;;)
	{
		bool		recomputed = false;

		if (!pcs_alloc_decode(seg->header, seg->segno, gen, old, &first))
		{
			off_t		size = pcs_file_end(seg);
			uint32		seen_gen;

			/*
			 * At a new generation's first allocation the map is read for free
			 * units as well (format 3 knows which generation read it last); a
			 * word damaged in a running server is only recomputed.
			 */
			if (used != NULL)
				pfree(used);
			used = NULL;
			find_free = seg->header->version != PCS_FORMAT_VERSION_2 &&
				!(pcs_generation_decode(seg->header, seg->segno,
										pg_atomic_read_u64(&seg->header->alloc.second),
										&seen_gen) && seen_gen == gen);
			first = (uint32) ((size - PCS_DATA_OFFSET + (1 << seg->shift) - 1) >> seg->shift);
			first = Max(first, pcs_map_high_water(seg,
												  find_free ? &used : NULL,
												  &nused, &all_sound));
			recomputed = true;
		}
		if ((uint64) first + units > PG_UINT32_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("compressed segment file \"%s\" is full",
							FilePathName(seg->vfd)),
					 errhint("Rewrite the relation with VACUUM FULL to reclaim its unused space.")));
		/* the file holds the units before anybody can be given them */
		pcs_ensure_capacity(reln, seg, first + units, writeback);
		if (pg_atomic_compare_exchange_u64(word, &old,
										   pcs_alloc_word(seg->header, seg->segno,
														  gen, first + units)))
		{
			if (recomputed && find_free)
				pcs_publish_free_runs(reln, seg, used, nused, all_sound,
									  first);
			break;
		}
	}
	if (used != NULL)
		pfree(used);
	/* the file holds every unit handed out (README.pcs, "Allocation") */
	Assert((uint64) first + units <= seg->capacity);
	return first;
}

/*
 * The first unit not yet handed out in a segment, for entry checks.  Before
 * this generation's first allocation in the segment, or with a damaged
 * allocation word, the file's end bounds every unit handed out
 * (pcs_allocate()); it is read again whenever the word has changed since it
 * was last read, so that a word damaged while the server runs does not make
 * this process judge sound entries by an old, smaller file.
 */
static inline uint32
pcs_unit_limit(PcsSegment *seg)
{
	uint64		word = pg_atomic_read_u64(pcs_header_alloc(seg->header));
	uint32		next;

	if (pcs_alloc_decode(seg->header, seg->segno, pcs_current_generation(),
						 word, &next))
		return next;
	if (word != seg->alloc_seen)
	{
		off_t		size = pcs_file_end(seg);

		seg->capacity = Max(seg->capacity,
							(uint32) ((size - PCS_DATA_OFFSET) >> seg->shift));
		seg->alloc_seen = word;
	}
	return seg->capacity;
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
	uint32		limit = pcs_unit_limit(seg);

	for (BlockNumber b = RELSEG_SIZE; b > 0; b--)
	{
		PcsMapEntry entry;

		if (!pcs_entry_readable(seg, b - 1))
		{
			/*
			 * the whole chunk is a hole: go on below it, or below the part of
			 * it whose entries the header holds
			 */
			b = Max((b - 1) / PCS_MAP_CHUNK_ENTRIES * PCS_MAP_CHUNK_ENTRIES,
					pcs_header_entries(seg->header)) + 1;
			continue;
		}
		entry = *pcs_seg_entry(seg, b - 1);
		if (!pcs_entry_is_empty(&entry) &&
			pcs_entry_check(&entry, b - 1, limit, seg->shift) == PCS_SOUND)
			return b;
	}
	return 0;
}

/*
 * Set every copy of a segment's block count to n: a truncation, which holds
 * the relation's AccessExclusiveLock, so no extension runs meanwhile
 */
static void
pcs_seg_store_nblocks(PcsSegment *seg, BlockNumber n)
{
	for (int copy = 0; copy < pcs_header_nblocks_copies(seg->header); copy++)
		pg_atomic_write_u64(pcs_header_nblocks(seg->header, copy),
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
		uint64		old = pg_atomic_read_u64(word);
		BlockNumber cur;

		if (pcs_nblocks_decode(seg->header, seg->segno, copy, old,
							   &cur) != PCS_SOUND)
			(void) pg_atomic_compare_exchange_u64(word, &old,
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
static BlockNumber
pcs_seg_nblocks(PcsSegment *seg)
{
	BlockNumber n = 0;
	int			sound;
	PcsProblem	problem;

	problem = pcs_nblocks_read(seg->header, seg->segno, &n, &sound);
	if (likely(sound == pcs_header_nblocks_copies(seg->header)))
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
static void
pcs_seg_raise_nblocks(PcsSegment *seg, BlockNumber n)
{
	Assert(n <= RELSEG_SIZE);

	(void) pcs_seg_nblocks(seg);	/* every copy is sound from here on */
	for (int copy = 0; copy < pcs_header_nblocks_copies(seg->header); copy++)
	{
		pg_atomic_uint64 *word = pcs_header_nblocks(seg->header, copy);
		uint64		old = pg_atomic_read_u64(word);

		for (;;)
		{
			BlockNumber cur;

			if (pcs_nblocks_decode(seg->header, seg->segno, copy, old,
								   &cur) == PCS_SOUND && cur >= n)
				break;
			if (pg_atomic_compare_exchange_u64(word, &old,
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
 * allocate it for nothing (and, on a full file system, raise SIGBUS), and
 * zero-extension clears every entry it covers.  Nor are holes read
 * (pcs_map_skip_holes()).
 */
static void
pcs_seg_clear(PcsSegment *seg, BlockNumber from, BlockNumber to)
{
	Assert(from <= to && to <= RELSEG_SIZE);
	for (BlockNumber b = pcs_map_skip_holes(seg, from, to); b < to;
		 b = pcs_map_skip_holes(seg, b + 1, to))
	{
		PcsMapEntry *slot = pcs_seg_entry(seg, b);

		if (!pcs_entry_is_empty(slot))
			memset(slot, 0, sizeof(PcsMapEntry));
	}
}

/*
 * Clear the entries of blocks [from, to) of a segment that a truncation cut
 * off, give the whole pages of the units of the sound ones back to the file
 * system and keep the units for reuse (pcs_freespace.c), in runs of
 * adjacent units, each once every entry pointing into it is cleared.  Runs in a critical section (RelationTruncate()): nothing here
 * allocates memory or raises an ERROR.
 *
 * Units are kept only while the allocation word is sound for this server
 * generation: before the first allocation of a generation, the map has not
 * been read for free units yet, and that reading will find these
 * (pcs_allocate()); keeping them as well would keep them twice.
 */
static void
pcs_seg_truncate_entries(SMgrRelation reln, ForkNumber forknum,
						 PcsSegment *seg, BlockNumber from, BlockNumber to)
{
	PcsFreeKey	key;
	uint32		limit;
	bool		keep_free;
	uint32		run_first = 0;
	uint32		run_count = 0;

	Assert(from <= to && to <= RELSEG_SIZE);
	pcs_free_key(reln, forknum, seg->segno, &key);
	keep_free = pcs_alloc_decode(seg->header, seg->segno,
								 pcs_current_generation(),
								 pg_atomic_read_u64(pcs_header_alloc(seg->header)),
								 &limit);
	for (BlockNumber b = pcs_map_skip_holes(seg, from, to); b < to;
		 b = pcs_map_skip_holes(seg, b + 1, to))
	{
		PcsMapEntry *slot = pcs_seg_entry(seg, b);
		PcsMapEntry entry = *slot;

		if (pcs_entry_is_empty(&entry))
			continue;
		memset(slot, 0, sizeof(PcsMapEntry));
		if (!keep_free ||
			pcs_entry_check(&entry, b, limit, seg->shift) != PCS_SOUND)
			continue;
		if (run_count > 0 && run_first + run_count == entry.first_unit)
		{
			run_count += entry.units;
			continue;
		}
		if (run_count > 0)
			pcs_free_units(&key, seg->shift, run_first, run_count,
						   SmgrIsTemp(reln), true, seg->vfd);
		run_first = entry.first_unit;
		run_count = entry.units;
	}
	if (run_count > 0)
		pcs_free_units(&key, seg->shift, run_first, run_count,
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
static void
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
static PcsProblem
pcs_seg_dictionary_bytes(PcsSegment *seg, int number, PcsDictRecord *record,
						 char **bytes)
{
	PcsProblem	problem;
	int			nread;

	*record = seg->header->dictionaries.records[number - 1];
	if ((seg->header->flags & PCS_HEADER_DICTIONARIES) == 0 ||
		pcs_dict_record_is_unused(record))
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
	nread = FileRead(seg->vfd, *bytes, record->bytes,
					 pcs_unit_offset(record->first_unit, seg->shift),
					 WAIT_EVENT_DATA_FILE_READ);
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
 * Dictionary number of a segment, prepared for this process (once: the
 * prepared dictionary is kept with the segment).  PCS_SOUND and *dict, or
 * what is wrong with it.
 */
static PcsProblem
pcs_seg_dictionary(PcsSegment *seg, int number, const PcsDict **dict)
{
	PcsDictRecord record;
	PcsProblem	problem;
	char	   *bytes;

	Assert(number >= 1 && number <= PCS_MAX_DICTIONARIES);
	if (seg->dicts[number] != NULL)
	{
		*dict = seg->dicts[number];
		return PCS_SOUND;
	}

	problem = pcs_seg_dictionary_bytes(seg, number, &record, &bytes);
	if (problem != PCS_SOUND)
		return problem;
	seg->dicts[number] = pcs_dict_prepare(seg->header->algorithm,
										  seg->header->level,
										  bytes, record.bytes);
	pfree(bytes);
	if (seg->dicts[number] == NULL)
		return PCS_IMAGE_DICTIONARY_FAILED;
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
	uint64		word = pg_atomic_read_u64(&seg->header->dictionaries.current);
	int			limit = PCS_MAX_DICTIONARIES;
	int			n = 0;

	if (word == seg->dict_word_seen && seg->dict_word_known)
		return seg->dict_number_seen;

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
static const PcsDict *
pcs_seg_current_dictionary(PcsSegment *seg, int *number)
{
	const PcsDict *dict;
	int			n;

	if ((seg->header->flags & PCS_HEADER_DICTIONARIES) == 0)
		return NULL;
	n = pcs_seg_current_number(seg);
	if (n < 1 || (seg->dicts_failed & (1 << n)) != 0)
		return NULL;
	if (pcs_seg_dictionary(seg, n, &dict) != PCS_SOUND)
	{
		seg->dicts_failed |= (1 << n);
		return NULL;
	}
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
	if (!pg_atomic_compare_exchange_u64(&sector->current, &old, installing))
		return -1;

	PG_TRY();
	{
		int			units = pcs_units_for(len, seg->shift);
		uint32		first = pcs_allocate(reln, seg, units, false);
		PcsDictRecord record;
		uint64		expected = installing;

		if (FileWrite(seg->vfd, bytes, len, pcs_unit_offset(first, seg->shift),
					  WAIT_EVENT_DATA_FILE_WRITE) != len)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write compression dictionary %d in file \"%s\": %m",
							number, FilePathName(seg->vfd)),
					 errhint("Check free disk space.")));
		pcs_dict_record_set(seg->header, segno, number, &record, first, len,
							pcs_data_crc(bytes, len));
		sector->records[number - 1] = record;
		PGSTRATA_INJECTION_POINT("pcs-dictionary-before-sync");

		/* bytes and record are durable before any image can name them */
		pcs_sync_now(reln, forknum, seg, WAIT_EVENT_DATA_FILE_SYNC);
		if (!pg_atomic_compare_exchange_u64(&sector->current, &expected,
											pcs_dict_word(seg->header, segno,
														  PCS_DICT_READY,
														  number, gen)))
			elog(ERROR, "dictionary word of file \"%s\" changed during an installation",
				 FilePathName(seg->vfd));
	}
	PG_CATCH();
	{
		uint64		expected = installing;

		/*
		 * Take the record back, which may not be durable and which no image
		 * names, so that nothing takes it for a dictionary of an earlier
		 * generation (pcs_seg_current_number()); give the word back.  The
		 * units are found free by a later generation.
		 */
		memset(&sector->records[number - 1], 0, sizeof(PcsDictRecord));
		(void) pg_atomic_compare_exchange_u64(&sector->current, &expected,
											  old);
		PG_RE_THROW();
	}
	PG_END_TRY();
	seg->dicts_failed &= ~(1 << number);
	return number;
}

/*
 * Fill buffer with a page that PageIsVerifiedExtended() rejects whether data
 * checksums are on or not: not new (pd_upper is not 0), and with flag bits
 * no page has.
 */
static void
pcs_invalid_page(char *buffer)
{
	PageHeader	page PG_USED_FOR_ASSERTS_ONLY = (PageHeader) buffer;

	memset(buffer, 0xFF, BLCKSZ);
	Assert(!PageIsNew((Page) buffer));
	Assert((page->pd_flags & ~PD_VALID_FLAG_BITS) != 0);
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
static void
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

/*
 * Count bytes a compressed fork read or wrote for the operation the buffer
 * manager is counting in pg_stat_io (PostgreSQL 18's byte columns; patch
 * "pg_stat_io: count the bytes compressed forks read, write and extend").
 * 17's pg_stat_io counts blocks only.
 */
static inline void
pcs_count_io_bytes(uint64 nbytes)
{
#if PG_VERSION_NUM >= 180000
	smgr_io_bytes_add(nbytes);
#endif
}

/*
 * Read the page of one entry of a segment (entry, a copy of the map's entry
 * of block segblock) into buffer, through image (a staging block): PCS_SOUND,
 * or what is wrong.  An empty entry reads as a zero page.
 */
static PcsProblem
pcs_read_image(PcsSegment *seg, const PcsMapEntry *entry, BlockNumber segblock,
			   char *image, char *buffer)
{
	PcsProblem	problem;
	const PcsDict *dict = NULL;
	int			nread;

	problem = pcs_entry_check(entry, segblock, pcs_unit_limit(seg), seg->shift);
	if (problem != PCS_SOUND)
		return problem;
	if (pcs_entry_is_empty(entry))
	{
		memset(buffer, 0, BLCKSZ);
		return PCS_SOUND;
	}

	/* a sound entry's image fits the staging block */
	Assert(entry->stored > 0 && entry->stored <= BLCKSZ);
	nread = FileRead(seg->vfd, image, entry->stored,
					 pcs_unit_offset(entry->first_unit, seg->shift),
					 WAIT_EVENT_DATA_FILE_READ);
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

	if (seg == NULL || segblock >= pcs_seg_nblocks(seg))
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
		entry = pcs_map_entry(seg, segblock);
		problem = pcs_read_image(seg, &entry, segblock, image.data, buffer);
		if (problem == PCS_SOUND || tries >= PCS_READ_TRIES)
			break;
		if (memcmp(&entry, pcs_seg_entry(seg, segblock),
				   sizeof(PcsMapEntry)) == 0)
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

/*
 * Write one block of a compressed fork: in place if its allocation holds the
 * new image, else into fresh units, then switch the entry.  extend says the
 * block may lie past the segment's end, which then moves.
 *
 * Why every crash point is safe (README.pcs has the whole argument):
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
	const char *src;
	int			len;
	int			units;
	uint32		first;
	uint8		image_flags;
	BlockNumber nblocks;
	bool		old_sound;
	bool		relocated = false;
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

	nblocks = pcs_seg_nblocks(seg);
	old = *pcs_seg_entry(seg, segblock);
	old_sound = segblock < nblocks && !pcs_entry_is_empty(&old) &&
		pcs_entry_check(&old, segblock, pcs_unit_limit(seg),
						seg->shift) == PCS_SOUND;
	if (old_sound && old.units >= pcs_units_for(len, seg->shift))
	{
		first = old.first_unit;
		units = old.units;
	}
	else
	{
		PcsFreeKey	key;

		/* a block that had a sound allocation too small for it has grown */
		units = pcs_units_to_allocate(len, old_sound, seg->shift);
		pcs_free_key(reln, forknum, segno, &key);
		if (pcs_claim_units(&key, units, &first))
			PGSTRATA_INJECTION_POINT("pcs-write-reuse");
		else
			first = pcs_allocate(reln, seg, units, !extend);
		relocated = true;
	}

	/* the image fits its units, which lie inside the file */
	Assert(len > 0 && len <= BLCKSZ && pcs_units_for(len, seg->shift) <= units);
	Assert((uint64) first + units <= pcs_unit_limit(seg) || !relocated);
	if (FileWrite(seg->vfd, src, len, pcs_unit_offset(first, seg->shift),
				  extend ? WAIT_EVENT_DATA_FILE_EXTEND : WAIT_EVENT_DATA_FILE_WRITE) != len)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write block %u in file \"%s\": %m",
						blkno, FilePathName(seg->vfd)),
				 errhint("Check free disk space.")));
	pcs_count_io_bytes(len);
	PGSTRATA_INJECTION_POINT("pcs-write-after-image");
	if (first != old.first_unit && !pcs_entry_is_empty(&old))
		PGSTRATA_INJECTION_POINT("pcs-write-relocate");

	pcs_entry_set(&entry, segblock, first, len, units, image_flags,
				  pcs_data_crc(src, len), seg->shift);
	*pcs_seg_entry(seg, segblock) = entry;

	/*
	 * The old units are free now, reusable once a map without them is durable
	 * (pcs_freespace.c).  Entries of blocks past the end were never this
	 * process's to free: a crash left them, and the first allocation of this
	 * generation counted their units as free already.
	 */
	if (relocated && old_sound)
	{
		PcsFreeKey	key;

		pcs_free_key(reln, forknum, segno, &key);
		sync_early = pcs_free_units(&key, seg->shift, old.first_unit,
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
		 * waits, this writer fsyncs it now rather than leave a checkpoint
		 * interval of rewrites as garbage.  (A caller that skips the fsync
		 * syncs the fork itself, soon.)
		 */
		if (sync_early)
			pcs_sync_now(reln, forknum, seg, WAIT_EVENT_DATA_FILE_SYNC);
	}
}

/*
 * The size of a file as size functions report it: for a compressed segment
 * the bytes the file system allocated to it (its map is mostly a hole, and
 * its data area is the point), for any other file its length.
 */
off_t
pcs_file_size(const char *path, const struct stat *st)
{
	uint64		magic = 0;
	int			fd;

	if (!S_ISREG(st->st_mode) || st->st_size < PCS_DATA_OFFSET)
		return st->st_size;

	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
		return st->st_size;		/* gone meanwhile: as stat saw it */
	if (pg_pread(fd, &magic, sizeof(magic), 0) != sizeof(magic))
		magic = 0;
	CloseTransientFile(fd);

	return magic == PCS_MAGIC ? (off_t) st->st_blocks * 512 : st->st_size;
}

/*
 * The map entry of block segblock of a segment seen through
 * pcs_segment_view(), empty where its part of the map is a hole: read
 * through the mapping, a hole would take storage on some file systems, and
 * raise SIGBUS on a full one (pcs_map_chunk_readable())
 */
PcsMapEntry
pcs_view_entry(const PcsSegmentView *view, BlockNumber segblock)
{
	Assert(view->seg != NULL && view->seg->header == view->header);
	return pcs_map_entry(view->seg, segblock);
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
	view->header = seg->header;
	view->seg = seg;
	view->segno = segno;
	view->nblocks = pcs_seg_nblocks(seg);
	view->unit_limit = pcs_unit_limit(seg);
	view->shift = seg->shift;
	view->physical_bytes = fstat(FileGetRawDesc(seg->vfd), &st) == 0 ?
		(uint64) st.st_blocks * 512 : 0;
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
	mdopen(reln);
}

/* pcs_close: close a fork; its format is looked up again on next use */
void
pcs_close(SMgrRelation reln, ForkNumber forknum)
{
	pcs_close_segments(reln, forknum);
	reln->pcs_format[forknum] = PCS_FORMAT_UNKNOWN;
	mdclose(reln, forknum);
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

	pcs_close_segments(reln, forknum);
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
	pcs_close_segments(reln, forknum);
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
		entry = pcs_map_entry(seg, blkno % RELSEG_SIZE);
		if (pcs_entry_is_empty(&entry))
			continue;
		start = pcs_unit_offset(entry.first_unit, seg->shift);
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
	int			nitems = 0;
	int			i;

	Assert(nblocks <= MAX_IO_COMBINE_LIMIT);
	memset(done, 0, sizeof(done));

	if (seg != NULL && segblock + nblocks <= pcs_seg_nblocks(seg))
	{
		for (i = 0; i < nblocks; i++)
		{
			PcsReadItem *item = &items[nitems];

			item->entry = pcs_map_entry(seg, segblock + i);
			if (pcs_entry_is_empty(&item->entry) ||
				pcs_entry_check(&item->entry, segblock + i,
								pcs_unit_limit(seg), seg->shift) != PCS_SOUND)
				continue;
			item->start = pcs_unit_offset(item->entry.first_unit, seg->shift);
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

#if PG_VERSION_NUM >= 180000

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
 *   other paths.  Without data checksums such a run is read synchronously,
 *   so that the CRC is checked.
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

	maxblocks = pcs_aio_run_limit(seg, segblock, maxblocks);
	for (int i = 0; i < maxblocks; i++)
	{
		PcsMapEntry entry = pcs_map_entry(seg, segblock + i);
		PcsAioImage *image = &plan->images[i];
		int64		span_start;

		if (pcs_entry_check(&entry, segblock + i, pcs_unit_limit(seg),
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
			uint64		off = pcs_unit_offset(entry.first_unit, seg->shift);
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

	if (forknum != MAIN_FORKNUM || !DataChecksumsEnabled() ||
		zero_damaged_pages)
		return 0;
	maxblocks = pcs_aio_run_limit(seg, segblock, maxblocks);
	for (n = 0; n < maxblocks; n++)
	{
		PcsMapEntry entry = pcs_map_entry(seg, segblock + n);
		uint64		off;

		if (pcs_entry_check(&entry, segblock + n, pcs_unit_limit(seg),
							seg->shift) != PCS_SOUND ||
			pcs_entry_is_empty(&entry) ||
			(entry.flags & PCS_ENTRY_RAW) == 0)
			break;
		Assert(entry.stored == BLCKSZ);
		off = pcs_unit_offset(entry.first_unit, seg->shift);
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
pcs_startreadv_decoded(PgAioHandle *ioh, SMgrRelation reln,
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
pcs_startreadv_raw(PgAioHandle *ioh, SMgrRelation reln, ForkNumber forknum,
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
pcs_startreadv(PgAioHandle *ioh, SMgrRelation reln, ForkNumber forknum,
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
	*off = (uint32) pcs_unit_offset(entry.first_unit, seg->shift);
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
pcs_aio_result(PgAioResult result, PgAioTargetData *td, int done,
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
pcs_aio_readv_complete(PgAioHandle *ioh, PgAioResult prior_result,
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

		/* the run is the entries of a whole block; what was read of it */
		(void) pgaio_io_get_iovec_length(ioh, &iov);
		while (planned < td->smgr.nblocks && iov[planned].iov_len == BLCKSZ)
			planned++;
		done = Min(planned, prior_result.result / BLCKSZ);
		/* none: a file shorter than its map */
		return pcs_aio_result(result, td, done, PCS_IMAGE_CUT_SHORT);
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
			 * next I/O starts there.  Otherwise, and for the first block (a
			 * file shorter than its map), the image is damaged.
			 */
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
pcs_aio_readv_report(PgAioResult result, const PgAioTargetData *td,
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

const PgAioHandleCallbacks aio_pcs_readv_cb = {
	.complete_shared = pcs_aio_readv_complete,
	.report = pcs_aio_readv_report,
};

#endif							/* PG_VERSION_NUM >= 180000 */

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

/*
 * pcs_sync_fork: make every segment of a compressed fork durable, now
 * (immediate) or at the next checkpoint
 */
static void
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
