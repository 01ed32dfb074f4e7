/*-------------------------------------------------------------------------
 *
 * pcs_meta.c
 *	  Reading and writing the header and map of a compressed segment with
 *	  ordinary system calls, and the shared words of its header.
 *
 * The header and map of a segment used to be read and written through a
 * shared mapping of the file.  A mapping turns every failure of the kernel
 * to bring a page in (an I/O error, a file system out of space for a page
 * it must allocate) into SIGBUS, which takes down the process and, with it,
 * every session; and each mapping is an entry of the process's memory map,
 * which the kernel bounds.  Here every access is a pread() or pwrite() of
 * the bytes concerned, so that a failure is an ERROR naming the file, as it
 * is for md.c's blocks, and the kernel's page cache stays the one copy of
 * the metadata that every process sees, as it was with the mapping.
 *
 * Map entries are read and stored without a lock, as they were through the
 * mapping: each carries its own check, a reader that meets a store half
 * done sees an entry that fails it and reads again (pcs.c), and two stores
 * to one entry never race (the buffer manager writes a block from one
 * process at a time; truncations hold the relation's AccessExclusiveLock).
 *
 * The shared words of the header (allocation, generation, block count,
 * dictionary word) change by compare-and-swap, which a mapping gave with
 * one atomic instruction.  A pread() and a pwrite() are not atomic against
 * each other, so each segment's words are read under a shared lock and
 * changed under an exclusive one, taken from a small array of locks in
 * shared memory by a hash of the segment (README.pcs, "The shared words").
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/backend/storage/smgr/pcs_meta.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlogutils.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/pcs_internal.h"
#include "storage/shmem.h"
#include "utils/wait_event.h"

/* Locks of the shared words of segments, each taken by a hash of one */
#define PCS_WORD_LOCKS		128

typedef struct PcsMetaShared
{
	int			tranche_id;
	LWLockPadded locks[PCS_WORD_LOCKS];
} PcsMetaShared;

static PcsMetaShared *PcsMeta = NULL;
static bool pcs_meta_tranche_named = false;

/* Size of the shared state */
Size
pcs_meta_shmem_size(void)
{
	return sizeof(PcsMetaShared);
}

/* Set up the shared state (the postmaster, again after a crash) */
void
pcs_meta_shmem_init(void)
{
	bool		found;

	PcsMeta = ShmemInitStruct("pgstrata segment words", sizeof(PcsMetaShared),
							  &found);
	if (!found)
	{
		PcsMeta->tranche_id = LWLockNewTrancheId();
		for (int i = 0; i < PCS_WORD_LOCKS; i++)
			LWLockInitialize(&PcsMeta->locks[i].lock, PcsMeta->tranche_id);
	}
}

/*
 * Name the locks' tranche in this process, for wait events; like
 * pcs_free_attach(), outside any critical section (it allocates memory)
 */
void
pcs_meta_attach(void)
{
	if (!pcs_meta_tranche_named && PcsMeta != NULL)
	{
		LWLockRegisterTranche(PcsMeta->tranche_id, "PcsSegmentWords");
		pcs_meta_tranche_named = true;
	}
}

/* The lock of the shared words of the segment with this free-pool key */
LWLock *
pcs_meta_word_lock(const PcsFreeKey *key)
{
	uint32		hash = hash_bytes((const unsigned char *) key,
								  sizeof(PcsFreeKey));

	Assert(PcsMeta != NULL);
	return &PcsMeta->locks[hash % PCS_WORD_LOCKS].lock;
}

/*
 * Read (or, with write, write) len bytes of a segment's header or map at
 * offset: 0, or -1 with errno set, or for a read that ends early -2 and the
 * bytes read in *done (the header lies in every segment file from its
 * creation on, and so does the map of versions 2 to 4, below their data
 * area; version 5's directory and map pages may lie past the end of the
 * file, pcs_meta_read_or_zeros()).  Raises
 * nothing, so that the shared words' lock is released before the caller
 * raises the error (pcs_meta_failed()): an ERROR with an LWLock held would
 * keep it until error recovery, and a PG_CATCH block that touched the same
 * segment's words meanwhile would wait for itself.
 */
static int
pcs_meta_io(PcsSegment *seg, void *buf, int len, off_t offset, bool write,
			int *done)
{
	Assert(offset >= 0 && len > 0);
	*done = 0;
	if (!write)
	{
		int			nread = pcs_read_fully(seg, buf, len, offset);

		if (nread < 0)
			return -1;
		*done = nread;
		return nread == len ? 0 : -2;
	}
	while (*done < len)
	{
		int			nwritten;

		errno = 0;
		nwritten = FileWrite(seg->vfd, (char *) buf + *done, len - *done,
							 offset + *done, WAIT_EVENT_DATA_FILE_WRITE);
		if (nwritten <= 0)
		{
			/* a write that writes nothing is taken for a full disk, as md.c */
			if (errno == 0)
				errno = ENOSPC;
			return -1;
		}
		*done += nwritten;
	}
	return 0;
}

/* Raise the ERROR of pcs_meta_io()'s result ret, if it is one */
static void
pcs_meta_failed(PcsSegment *seg, int ret, int len, off_t offset, bool write,
				int done)
{
	if (ret == 0)
		return;
	if (ret == -2)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("could not read the map of compressed segment file \"%s\" at offset %lld: read only %d of %d bytes",
						FilePathName(seg->vfd), (long long) offset,
						done, len)));
	if (!write)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read the map of compressed segment file \"%s\" at offset %lld: %m",
						FilePathName(seg->vfd), (long long) offset)));
	ereport(ERROR,
			(errcode_for_file_access(),
			 errmsg("could not write the map of compressed segment file \"%s\" at offset %lld: %m",
					FilePathName(seg->vfd), (long long) (offset + done)),
			 errhint("Check free disk space.")));
}

/* Read len bytes of a segment's header or map at offset into buf, or an ERROR */
void
pcs_meta_read(PcsSegment *seg, void *buf, int len, off_t offset)
{
	int			done;
	int			ret = pcs_meta_io(seg, buf, len, offset, false, &done);

	pcs_meta_failed(seg, ret, len, offset, false, done);
}

/*
 * May version 5's directory or map page bytes that lie past the end of the
 * file read as zeros?  After an operating system crash, a directory word
 * or slot that reached disk may name units past the end of a file whose
 * growth did not: nothing written into them reached disk either, so zeros
 * are what they held, and redo, which rewrites every block whose entry was
 * stored there since the last checkpoint, gives them storage again before
 * it stores into them (pcs_map_chunk_ready()).  So only while the server
 * recovers; once it has, every such page lies within the file, and one
 * that does not is a file cut short, an ERROR as md.c's short reads are.
 */
static inline bool
pcs_meta_past_end_is_zeros(PcsSegment *seg)
{
	return pcs_header_has_directory(seg->header) && InRecovery;
}

/*
 * Read len bytes of version 5's directory or map pages at offset into buf,
 * or an ERROR; what lies past the end of the file reads as zeros while the
 * server recovers (pcs_meta_past_end_is_zeros()).
 */
static void
pcs_meta_read_or_zeros(PcsSegment *seg, void *buf, int len, off_t offset)
{
	int			done;
	int			ret = pcs_meta_io(seg, buf, len, offset, false, &done);

	if (ret == -2 && pcs_meta_past_end_is_zeros(seg))
	{
		memset((char *) buf + done, 0, len - done);
		ret = 0;
	}
	pcs_meta_failed(seg, ret, len, offset, false, done);
}

/* Write len bytes of a segment's header or map at offset, or an ERROR */
void
pcs_meta_write(PcsSegment *seg, const void *buf, int len, off_t offset)
{
	int			done;
	int			ret = pcs_meta_io(seg, (void *) buf, len, offset, true, &done);

	pcs_meta_failed(seg, ret, len, offset, true, done);
}

/*
 * Read or write bytes of a segment's header under the lock of its shared
 * words (exclusive for a write), or an ERROR once the lock is released
 */
static void
pcs_meta_io_locked(PcsSegment *seg, void *buf, int len, off_t offset,
				   bool write)
{
	int			done;
	int			ret;
	int			save_errno;

	LWLockAcquire(seg->word_lock, write ? LW_EXCLUSIVE : LW_SHARED);
	ret = pcs_meta_io(seg, buf, len, offset, write, &done);
	save_errno = errno;
	LWLockRelease(seg->word_lock);
	errno = save_errno;
	pcs_meta_failed(seg, ret, len, offset, write, done);
}

/* The file offset of a shared word, given its place in seg->header */
static inline off_t
pcs_word_offset(PcsSegment *seg, pg_atomic_uint64 *word)
{
	off_t		offset = (char *) word - (char *) seg->header;

	Assert(offset >= 0 && offset + sizeof(uint64) <= PCS_HEADER_COPY_SIZE &&
		   offset % sizeof(uint64) == 0);
	return offset;
}

/*
 * The value of a shared word of a segment, word being its place in the
 * process's copy of the header (pcs_header_alloc() and the like), which is
 * set to it too
 */
uint64
pcs_word_read(PcsSegment *seg, pg_atomic_uint64 *word)
{
	uint64		value;

	pcs_meta_io_locked(seg, &value, sizeof(value),
					   pcs_word_offset(seg, word), false);
	pg_atomic_write_u64(word, value);
	return value;
}

/*
 * Read the shared words of a segment from first to last (places in the
 * process's copy of the header, as for pcs_word_read()) and everything
 * between them into that copy, with one read and without the lock: for
 * the checks of every block read and write, the allocation word and the
 * block count's two copies, which lie within 1 kB.  A word read while
 * another process writes it may be half old, half new; that fails the
 * word's check (a CRC32C of its value in its high half), so callers use
 * only words that pass it, and read one that fails again with
 * pcs_word_read(), under the lock, before they take it for damage.
 */
void
pcs_words_read(PcsSegment *seg, pg_atomic_uint64 *first,
			   pg_atomic_uint64 *last)
{
	off_t		from = pcs_word_offset(seg, first);
	off_t		to = pcs_word_offset(seg, last) + sizeof(uint64);
	char		buf[3 * PCS_SECTOR_SIZE];

	Assert(to > from && to - from <= sizeof(buf));
	pcs_meta_read(seg, buf, to - from, from);
	memcpy((char *) seg->header + from, buf, to - from);
}

/* Set a shared word of a segment to value */
void
pcs_word_write(PcsSegment *seg, pg_atomic_uint64 *word, uint64 value)
{
	pcs_meta_io_locked(seg, &value, sizeof(value),
					   pcs_word_offset(seg, word), true);
	pg_atomic_write_u64(word, value);
}

/*
 * Set the 64-bit word at offset of a segment to value if it holds *expected,
 * and return true; else set *expected to what it holds and return false;
 * *current is set to what the word holds afterwards.  Under the exclusive
 * lock of the segment's words, as every change of them.
 */
static bool
pcs_meta_compare_exchange(PcsSegment *seg, off_t offset, uint64 *expected,
						  uint64 value, uint64 *current)
{
	bool		swapped = false;
	bool		write = false;
	int			done;
	int			ret;
	int			save_errno;

	LWLockAcquire(seg->word_lock, LW_EXCLUSIVE);
	ret = pcs_meta_io(seg, current, sizeof(uint64), offset, false, &done);
	/* a slot past the end of the file (version 5's directory) is zeros */
	if (ret == -2 && done == 0 && pcs_meta_past_end_is_zeros(seg) &&
		offset >= PCS_V5_DATA_OFFSET)
	{
		*current = 0;
		ret = 0;
	}
	if (ret == 0 && *current == *expected)
	{
		write = true;
		ret = pcs_meta_io(seg, &value, sizeof(value), offset, true, &done);
		if (ret == 0)
		{
			*current = value;
			swapped = true;
		}
	}
	save_errno = errno;
	LWLockRelease(seg->word_lock);
	errno = save_errno;
	pcs_meta_failed(seg, ret, sizeof(uint64), offset, write, done);

	if (!swapped)
		*expected = *current;
	return swapped;
}

/*
 * Set a shared word of a segment to value if it holds *expected, and return
 * true; else set *expected to what it holds and return false.  As
 * pg_atomic_compare_exchange_u64() did on the mapped word.
 */
bool
pcs_word_compare_exchange(PcsSegment *seg, pg_atomic_uint64 *word,
						  uint64 *expected, uint64 value)
{
	uint64		current;
	bool		swapped;

	swapped = pcs_meta_compare_exchange(seg, pcs_word_offset(seg, word),
										expected, value, &current);
	pg_atomic_write_u64(word, current);
	return swapped;
}

/*
 * Where the directory of a version 5 segment lies: 1 and its first unit in
 * *unit if it exists, 0 if it does not (no map page does).  The header's
 * two directory words are read together without the lock, then, if neither
 * gives an answer, again under it (a read may have met a store half done).
 * A sound copy that names a place is taken, whatever the other holds: the
 * copies are set one after the other, in one 4 kB page of the file, and
 * change only from zeros.  Both sound and zeros: no directory.  Anything
 * else leaves every map page unknown: an ERROR, or with tolerate -1.
 */
int
pcs_directory_lookup(PcsSegment *seg, bool tolerate, uint32 *unit)
{
	PcsHeader  *header = seg->header;
	bool		damaged = false;

	Assert(pcs_header_has_directory(header));
	if (likely(seg->directory_unit != 0))
	{
		*unit = seg->directory_unit - 1;
		return 1;
	}
	for (int tries = 0; tries < 2; tries++)
	{
		damaged = false;
		if (tries == 0)
			pcs_words_read(seg, pcs_header_directory(header, 0),
						   pcs_header_directory(header, 1));
		else
		{
			(void) pcs_word_read(seg, pcs_header_directory(header, 0));
			(void) pcs_word_read(seg, pcs_header_directory(header, 1));
		}
		for (int copy = 0; copy < 2; copy++)
		{
			bool		present;

			if (pcs_directory_location_decode(header, seg->segno, copy,
											  pg_atomic_read_u64(pcs_header_directory(header, copy)),
											  &present, unit) != PCS_SOUND)
				damaged = true;
			else if (present)
			{
				seg->directory_unit = *unit + 1;
				return 1;
			}
		}
		if (!damaged)
			return 0;
	}
	if (tolerate)
		return -1;
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("invalid map directory location in compressed segment file \"%s\"",
					FilePathName(seg->vfd)),
			 errdetail("%s  The entries of the segment's blocks from %u on are unknown.",
					   _(pcs_problem_message(PCS_DIRECTORY_BAD_LOCATION)),
					   pcs_header_entries(header))));
	return -1;					/* keep the compiler quiet */
}

/*
 * Read the directory of a version 5 segment, at unit, into directory, with
 * one read and without the lock: a slot read while it is set may be torn,
 * which fails its check, and callers read such a slot again under the lock
 * (pcs_map_page_lookup()) before they take it for damage
 */
void
pcs_directory_read(PcsSegment *seg, uint32 unit, PcsDirectory *directory)
{
	Assert(pcs_header_has_directory(seg->header));
	pcs_meta_read_or_zeros(seg, directory, sizeof(PcsDirectory),
						   pcs_unit_offset(seg->header, unit));
}

/*
 * Directory slot page of a version 5 segment whose directory is at unit,
 * read with or without the lock
 */
static uint64
pcs_directory_slot_read(PcsSegment *seg, uint32 unit, int page, bool locked)
{
	off_t		offset = pcs_unit_offset(seg->header, unit) +
		(off_t) page * sizeof(uint64);
	uint64		word = 0;
	int			done;
	int			ret;
	int			save_errno;

	Assert(page >= 0 && page < PCS_MAP_PAGES);
	if (locked)
		LWLockAcquire(seg->word_lock, LW_SHARED);
	ret = pcs_meta_io(seg, &word, sizeof(word), offset, false, &done);
	save_errno = errno;
	if (locked)
		LWLockRelease(seg->word_lock);
	errno = save_errno;
	/* past the end of the file: no page (pcs_meta_read_or_zeros()) */
	if (ret == -2 && pcs_meta_past_end_is_zeros(seg))
	{
		memset((char *) &word + done, 0, sizeof(word) - done);
		ret = 0;
	}
	pcs_meta_failed(seg, ret, sizeof(word), offset, false, done);
	return word;
}

/*
 * Directory slot page of a version 5 segment whose directory is at unit, as
 * it is now (read under the lock): what a new page's compare-and-swap
 * expects to replace
 */
uint64
pcs_directory_slot_word(PcsSegment *seg, uint32 unit, int page)
{
	return pcs_directory_slot_read(seg, unit, page, true);
}

/*
 * Set directory slot page of a version 5 segment whose directory is at
 * unit to value if it holds *expected (zeros: no page yet); else set
 * *expected to what it holds and return false
 */
bool
pcs_directory_slot_set(PcsSegment *seg, uint32 unit, int page,
					   uint64 *expected, uint64 value)
{
	uint64		current;

	Assert(page >= 0 && page < PCS_MAP_PAGES);
	return pcs_meta_compare_exchange(seg,
									 pcs_unit_offset(seg->header, unit) +
									 (off_t) page * sizeof(uint64),
									 expected, value, &current);
}

/*
 * Remember that map page page of a version 5 segment begins at unit.  The
 * array is made at the first page found, except in a critical section
 * (a truncation reads the map in one), where nothing may be allocated:
 * the page is then looked up again next time.
 */
void
pcs_map_page_remember(PcsSegment *seg, int page, uint32 unit)
{
	Assert(page >= 0 && page < PCS_MAP_PAGES);
	if (seg->map_pages == NULL)
	{
		if (CritSectionCount > 0)
			return;
		seg->map_pages = MemoryContextAllocZero(PcsCxt,
												PCS_MAP_PAGES * sizeof(uint32));
	}
	seg->map_pages[page] = unit + 1;
}

/*
 * Where map page page of a version 5 segment lies: 1 and its first unit in
 * *unit if it exists, 0 if it does not (its entries are all empty; so does
 * a segment without a directory).  A slot that fails its check is read
 * again under the lock (a read may have met its store half done); if it
 * still fails, or the directory cannot be located, the page's entries are
 * unknown: an ERROR, or with tolerate -1.  A page found is remembered for the life
 * of the process: in this build a slot changes only from zeros to a page.
 */
int
pcs_map_page_lookup(PcsSegment *seg, int page, bool tolerate, uint32 *unit)
{
	PcsProblem	problem = PCS_SOUND;
	bool		present = false;
	uint32		directory;

	Assert(pcs_header_has_directory(seg->header));
	Assert(page >= 0 && page < PCS_MAP_PAGES);
	if (likely(seg->map_pages != NULL && seg->map_pages[page] != 0))
	{
		*unit = seg->map_pages[page] - 1;
		return 1;
	}
	switch (pcs_directory_lookup(seg, tolerate, &directory))
	{
		case 0:
			return 0;
		case -1:
			return -1;
	}
	for (int tries = 0; tries < 2; tries++)
	{
		uint64		word = pcs_directory_slot_read(seg, directory, page,
												   tries > 0);

		problem = pcs_directory_decode(seg->header, seg->segno, page, word,
									   &present, unit);
		if (problem == PCS_SOUND)
			break;
	}
	if (problem != PCS_SOUND)
	{
		if (tolerate)
			return -1;
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid map directory slot %d in compressed segment file \"%s\"",
						page, FilePathName(seg->vfd)),
				 errdetail("%s  The map page holds the entries of blocks %u to %u of the segment.",
						   _(pcs_problem_message(problem)),
						   (BlockNumber) page * PCS_MAP_PAGE_ENTRIES,
						   (BlockNumber) (page + 1) * PCS_MAP_PAGE_ENTRIES - 1)));
	}
	if (!present)
		return 0;
	pcs_map_page_remember(seg, page, *unit);
	return 1;
}

/*
 * The map entry of block segblock of a segment.  A part of the map that is
 * a hole reads as zeros, an empty entry; reading it allocates nothing, on
 * tmpfs either (which a read through the mapping did).  In version 5, an
 * entry of a map page that does not exist is empty.
 */
PcsMapEntry
pcs_map_entry(PcsSegment *seg, BlockNumber segblock)
{
	PcsMapEntry entry;

	Assert(segblock < RELSEG_SIZE);
	if (segblock >= pcs_header_entries(seg->header) &&
		pcs_header_has_directory(seg->header))
	{
		uint32		unit;

		if (pcs_map_page_lookup(seg, pcs_map_page_of(segblock), false,
								&unit) == 0)
		{
			memset(&entry, 0, sizeof(entry));
			return entry;
		}
		pcs_meta_read_or_zeros(seg, &entry, sizeof(entry),
							   pcs_map_page_entry_offset(seg->header, unit,
														 segblock));
		return entry;
	}
	pcs_meta_read(seg, &entry, sizeof(entry),
				  pcs_entry_offset(seg->header, segblock));
	return entry;
}

/*
 * The map entries of blocks [from, from + n) of a segment, into entries:
 * one read, or one more where the range crosses the end of the header's
 * entries or, in version 5, of a map page.  A damaged directory slot of a
 * version 5 map page in the range is an ERROR (pcs_map_page_lookup()).
 */
void
pcs_map_entries(PcsSegment *seg, BlockNumber from, int n,
				PcsMapEntry *entries)
{
	BlockNumber in_header = pcs_header_entries(seg->header);
	uint32		unit;

	Assert(n > 0 && from + n <= RELSEG_SIZE);
	if (from < in_header && from + n > in_header)
	{
		int			first = in_header - from;

		pcs_map_entries(seg, from, first, entries);
		pcs_map_entries(seg, in_header, n - first, entries + first);
		return;
	}
	if (from < in_header || !pcs_header_has_directory(seg->header))
	{
		pcs_meta_read(seg, entries, n * sizeof(PcsMapEntry),
					  pcs_entry_offset(seg->header, from));
		return;
	}
	/* version 5: one map page at a time */
	while (n > 0)
	{
		int			page = pcs_map_page_of(from);
		int			here = Min(n, (int) ((page + 1) * PCS_MAP_PAGE_ENTRIES - from));

		if (pcs_map_page_lookup(seg, page, false, &unit) == 0)
			memset(entries, 0, here * sizeof(PcsMapEntry));
		else
			pcs_meta_read_or_zeros(seg, entries, here * sizeof(PcsMapEntry),
								   pcs_map_page_entry_offset(seg->header,
															 unit, from));
		from += here;
		entries += here;
		n -= here;
	}
}

/*
 * The map entries of as many of blocks [from, from + n) of a segment as can
 * be known, into entries: how many, stopping before the first block whose
 * version 5 map page cannot be located (a damaged directory slot or
 * directory word), where pcs_map_entries() raises an ERROR.  For reads
 * planned ahead of what was asked (pcs_maxcombine() on 18): damage past
 * the blocks a scan wants must not fail the scan, and the read of a
 * damaged block itself reports it.
 */
int
pcs_map_entries_known(PcsSegment *seg, BlockNumber from, int n,
					  PcsMapEntry *entries)
{
	BlockNumber in_header = pcs_header_entries(seg->header);
	int			known = 0;

	Assert(n > 0 && from + n <= RELSEG_SIZE);
	if (!pcs_header_has_directory(seg->header) || from + n <= in_header)
	{
		pcs_map_entries(seg, from, n, entries);
		return n;
	}
	while (known < n)
	{
		BlockNumber b = from + known;
		int			here;
		uint32		unit;

		if (b < in_header)
			here = Min(n - known, (int) (in_header - b));
		else
		{
			here = Min(n - known,
					   (int) ((pcs_map_page_of(b) + 1) * PCS_MAP_PAGE_ENTRIES - b));
			if (pcs_map_page_lookup(seg, pcs_map_page_of(b), true, &unit) < 0)
				break;
		}
		pcs_map_entries(seg, b, here, entries + known);
		known += here;
	}
	return known;
}

/*
 * Store the map entry of block segblock of a segment.  Its part of the map
 * has storage, and in version 5 its map page exists (pcs_map_chunk_ready()),
 * unless the entry is empty, which only ever replaces one that is not: an
 * empty entry needs no store where there is no page.
 */
void
pcs_map_store(PcsSegment *seg, BlockNumber segblock, const PcsMapEntry *entry)
{
	Assert(segblock < RELSEG_SIZE);
	if (segblock >= pcs_header_entries(seg->header) &&
		pcs_header_has_directory(seg->header))
	{
		uint32		unit;

		if (pcs_map_page_lookup(seg, pcs_map_page_of(segblock), false,
								&unit) == 0)
		{
			if (!pcs_entry_is_empty(entry))
				elog(ERROR, "map page %d of compressed segment file \"%s\" does not exist",
					 pcs_map_page_of(segblock), FilePathName(seg->vfd));
			return;
		}
		pcs_meta_write(seg, entry, sizeof(PcsMapEntry),
					   pcs_map_page_entry_offset(seg->header, unit,
												 segblock));
		return;
	}
	pcs_meta_write(seg, entry, sizeof(PcsMapEntry),
				   pcs_entry_offset(seg->header, segblock));
}

/*
 * Read the dictionary sector of a segment into its copy of the header: the
 * records change when a dictionary is installed, in any process
 */
void
pcs_meta_read_dictionaries(PcsSegment *seg)
{
	PcsDictSector sector;

	pcs_meta_io_locked(seg, &sector, sizeof(sector),
					   offsetof(PcsHeader, dictionaries), false);
	memcpy(&seg->header->dictionaries, &sector, sizeof(sector));
}

/*
 * Store the record of dictionary number of a segment (all zeros to take it
 * back), under the lock of its words, since pcs_meta_read_dictionaries()
 * reads the whole sector
 */
void
pcs_meta_store_dict_record(PcsSegment *seg, int number,
						   const PcsDictRecord *record)
{
	Assert(number >= 1 && number <= PCS_MAX_DICTIONARIES);
	pcs_meta_io_locked(seg, (void *) record, sizeof(PcsDictRecord),
					   offsetof(PcsHeader, dictionaries.records) +
					   (number - 1) * sizeof(PcsDictRecord), true);
	seg->header->dictionaries.records[number - 1] = *record;
}
