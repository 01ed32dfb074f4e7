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
 * offset: 0, or -1 with errno set, or for a read that ends early (the
 * header and map lie below PCS_DATA_OFFSET, which every segment file
 * reaches from its creation) -2 and the bytes read in *done.  Raises
 * nothing, so that the shared words' lock is released before the caller
 * raises the error (pcs_meta_failed()): an ERROR with an LWLock held would
 * keep it until error recovery, and a PG_CATCH block that touched the same
 * segment's words meanwhile would wait for itself.
 */
static int
pcs_meta_io(PcsSegment *seg, void *buf, int len, off_t offset, bool write,
			int *done)
{
	Assert(offset >= 0 && offset + len <= PCS_DATA_OFFSET);
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
 * Set a shared word of a segment to value if it holds *expected, and return
 * true; else set *expected to what it holds and return false.  As
 * pg_atomic_compare_exchange_u64() did on the mapped word.
 */
bool
pcs_word_compare_exchange(PcsSegment *seg, pg_atomic_uint64 *word,
						  uint64 *expected, uint64 value)
{
	off_t		offset = pcs_word_offset(seg, word);
	uint64		current;
	bool		swapped = false;
	bool		write = false;
	int			done;
	int			ret;
	int			save_errno;

	LWLockAcquire(seg->word_lock, LW_EXCLUSIVE);
	ret = pcs_meta_io(seg, &current, sizeof(current), offset, false, &done);
	if (ret == 0 && current == *expected)
	{
		write = true;
		ret = pcs_meta_io(seg, &value, sizeof(value), offset, true, &done);
		if (ret == 0)
		{
			current = value;
			swapped = true;
		}
	}
	save_errno = errno;
	LWLockRelease(seg->word_lock);
	errno = save_errno;
	pcs_meta_failed(seg, ret, sizeof(uint64), offset, write, done);

	pg_atomic_write_u64(word, current);
	if (!swapped)
		*expected = current;
	return swapped;
}

/*
 * The map entry of block segblock of a segment.  A part of the map that is
 * a hole reads as zeros, an empty entry; reading it allocates nothing, on
 * tmpfs either (which a read through the mapping did).
 */
PcsMapEntry
pcs_map_entry(PcsSegment *seg, BlockNumber segblock)
{
	PcsMapEntry entry;

	Assert(segblock < RELSEG_SIZE);
	pcs_meta_read(seg, &entry, sizeof(entry),
				  pcs_entry_offset(seg->header, segblock));
	return entry;
}

/*
 * The map entries of blocks [from, from + n) of a segment, into entries:
 * one read, or two where the range crosses the end of the header's entries
 */
void
pcs_map_entries(PcsSegment *seg, BlockNumber from, int n,
				PcsMapEntry *entries)
{
	BlockNumber in_header = pcs_header_entries(seg->header);

	Assert(n > 0 && from + n <= RELSEG_SIZE);
	if (from < in_header && from + n > in_header)
	{
		int			first = in_header - from;

		pcs_map_entries(seg, from, first, entries);
		pcs_map_entries(seg, in_header, n - first, entries + first);
		return;
	}
	pcs_meta_read(seg, entries, n * sizeof(PcsMapEntry),
				  pcs_entry_offset(seg->header, from));
}

/*
 * Store the map entry of block segblock of a segment.  Its part of the map
 * has storage (pcs_map_chunk_ready()), unless the entry is empty, which
 * only ever replaces one that is not.
 */
void
pcs_map_store(PcsSegment *seg, BlockNumber segblock, const PcsMapEntry *entry)
{
	Assert(segblock < RELSEG_SIZE);
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
