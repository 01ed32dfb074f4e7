/*-------------------------------------------------------------------------
 *
 * pcs_freespace.c
 *	  Units freed in compressed segments: kept in shared memory, reused
 *	  once a map that no longer points to them is durable, and given back
 *	  to the file system meanwhile.
 *
 * A block whose image outgrows its units moves to fresh ones, and a
 * truncation drops the images of the blocks it cuts off; either way the
 * old units are referenced by no entry of the map in memory.  They may
 * still be referenced by the map on disk, until the segment is next
 * fsynced: if an OS crash then brought back the old entry while another
 * block's image had been written into its units, redo would restore the
 * old entry's block in place over the other block's image (README.pcs,
 * "Reusing freed units").  So each run of freed units is tagged with the
 * value of a clock that every fsync of a segment advances as it begins,
 * and it is handed out again only after an fsync of its segment that began
 * after the free has completed.  The same fsync is the moment to punch
 * holes in the whole pages of the runs (fallocate(PUNCH_HOLE)): the file
 * system takes the space back, and a later write into a reused run
 * allocates it again.
 *
 * What is kept here is only a hint, and losing it loses no data: a run
 * that is forgotten (the table is full, a crash reset shared memory) is
 * garbage until the segment is rewritten or the next server generation
 * finds it again from the map (pcs.c, pcs_allocate()).  What must never
 * happen is a run kept that a block uses, so a run is only ever added by
 * the process that made its units unreferenced, or by the one process that
 * read the whole map at the start of a generation, and the runs of a fork
 * are forgotten when its files go away (unlink, DROP DATABASE, ALTER
 * DATABASE ... SET TABLESPACE), so that a new file of the same name never
 * inherits them.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/backend/storage/smgr/pcs_freespace.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>

#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/pcs_format.h"
#include "storage/pcs_freespace.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"

/* Segments whose free units are kept at once, and runs kept per segment */
#define PCS_FREE_SEGMENTS	2048
#define PCS_FREE_RUNS		64
#define PCS_FREE_PARTITIONS	16

/* The page size in which holes are punched, and the file system allocates */
#define PCS_PUNCH_PAGE		4096

/* A run of free units of one segment */
typedef struct PcsFreeRun
{
	uint32		first;			/* first unit */
	uint32		count;			/* units */
	uint64		clock;			/* the free clock when freed; 0: reusable */
	bool		punched;		/* its whole pages were given back */
} PcsFreeRun;

/* The free runs of one segment, in the shared hash table */
typedef struct PcsFreeEntry
{
	PcsFreeKey	key;			/* hash key: must be first */
	int			shift;			/* log2 of the segment's unit size */
	int			nruns;
	uint64		synced;			/* the clock when its last fsync began */
	PcsFreeRun	runs[PCS_FREE_RUNS];
} PcsFreeEntry;

/* The shared state besides the hash table */
typedef struct PcsFreeShared
{
	pg_atomic_uint64 clock;		/* advanced by each fsync as it begins */
	pg_atomic_uint32 entries;	/* entries in the table: 0 skips it all */
	uint32		life;			/* lives of shared memory so far */
	int			tranche_id;
	LWLockPadded locks[PCS_FREE_PARTITIONS];
} PcsFreeShared;

static PcsFreeShared *PcsFree = NULL;
static uint32 pcs_lives = 0;	/* in the postmaster: shared memory's lives */
static HTAB *PcsFreeTable = NULL;
static bool pcs_free_tranche_named = false;

/* Size of the shared state */
Size
pcs_free_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(PcsFreeShared)),
					hash_estimate_size(PCS_FREE_SEGMENTS, sizeof(PcsFreeEntry)));
}

/* Set up the shared state (the postmaster, again after a crash) */
void
pcs_free_shmem_init(void)
{
	HASHCTL		info;
	bool		found;

	PcsFree = ShmemInitStruct("pgstrata free units", sizeof(PcsFreeShared),
							  &found);
	if (!found)
	{
		/* 0 is the tag of runs reusable at once; fsyncs begin above it */
		pg_atomic_init_u64(&PcsFree->clock, 1);
		pg_atomic_init_u32(&PcsFree->entries, 0);
		PcsFree->life = ++pcs_lives;
		PcsFree->tranche_id = LWLockNewTrancheId();
		for (int i = 0; i < PCS_FREE_PARTITIONS; i++)
			LWLockInitialize(&PcsFree->locks[i].lock, PcsFree->tranche_id);
	}

	info.keysize = sizeof(PcsFreeKey);
	info.entrysize = sizeof(PcsFreeEntry);
	info.num_partitions = PCS_FREE_PARTITIONS;
	PcsFreeTable = ShmemInitHash("pgstrata free units table",
								 PCS_FREE_SEGMENTS, PCS_FREE_SEGMENTS, &info,
								 HASH_ELEM | HASH_BLOBS | HASH_PARTITION);
}

/*
 * Which life of shared memory this is: 1 after the postmaster's start, one
 * more after each reset that a crash of a process causes
 */
uint32
pcs_shmem_life(void)
{
	Assert(PcsFree != NULL);
	return PcsFree->life;
}

/*
 * Name the locks' tranche in this process, for wait events.  That
 * allocates memory, which the free paths may not (they run in critical
 * sections), so the storage manager does it when it opens a relation
 * (pcs_open()), which no process does in a critical section.
 */
void
pcs_free_attach(void)
{
	if (!pcs_free_tranche_named && PcsFree != NULL)
	{
		LWLockRegisterTranche(PcsFree->tranche_id, "PcsFreeUnits");
		pcs_free_tranche_named = true;
	}
}

/* The lock of the partition that holds a key of this hash code */
static LWLock *
pcs_free_lock(uint32 hashcode)
{
	return &PcsFree->locks[hashcode % PCS_FREE_PARTITIONS].lock;
}

/* Forget run i of an entry */
static void
pcs_free_drop_run(PcsFreeEntry *entry, int i)
{
	Assert(i >= 0 && i < entry->nruns);
	entry->runs[i] = entry->runs[--entry->nruns];
}

/* Remove an entry that holds no run any more; its partition lock is held */
static void
pcs_free_drop_entry(PcsFreeEntry *entry, uint32 hashcode)
{
	Assert(entry->nruns == 0);
	(void) hash_search_with_hash_value(PcsFreeTable, &entry->key, hashcode,
									   HASH_REMOVE, NULL);
	pg_atomic_fetch_sub_u32(&PcsFree->entries, 1);
}

/* May run r of an entry be handed out now? */
static inline bool
pcs_free_run_ready(const PcsFreeEntry *entry, const PcsFreeRun *r)
{
	return r->clock == 0 || r->clock <= entry->synced;
}

/*
 * Merge the runs of an entry that touch each other and may be handed out
 * alike: two ready runs, or two that wait for the same fsync.  A ready run
 * is never merged with one that waits, which would make it wait too: units
 * are freed in the order they were handed out, so the units a truncation
 * frees usually follow those the truncation before freed, and each cycle of
 * a queue table would keep the space of the one before from being reused.
 */
static void
pcs_free_coalesce(PcsFreeEntry *entry)
{
	bool		merged;

	do
	{
		merged = false;
		for (int i = 0; i < entry->nruns && !merged; i++)
		{
			for (int j = 0; j < entry->nruns; j++)
			{
				PcsFreeRun *a = &entry->runs[i];
				PcsFreeRun *b = &entry->runs[j];

				if (a->first + a->count != b->first)
					continue;
				if (!(pcs_free_run_ready(entry, a) && pcs_free_run_ready(entry, b)) &&
					a->clock != b->clock)
					continue;
				a->count += b->count;
				a->clock = Max(a->clock, b->clock);
				/* the page where they meet may still hold space */
				a->punched = false;
				pcs_free_drop_run(entry, j);
				merged = true;
				break;
			}
		}
	} while (merged);
}

/*
 * Give the whole pages of units [first, first + count) back to the file
 * system now, whether they may be reused yet or not (file is the
 * segment's).  A file system that cannot punch holes keeps them.
 */
static void
pcs_free_punch_range(int shift, uint32 first, uint32 count, File file)
{
	off_t		start = TYPEALIGN(PCS_PUNCH_PAGE, pcs_unit_offset(first, shift));
	off_t		end = TYPEALIGN_DOWN(PCS_PUNCH_PAGE,
									 pcs_unit_offset(first + count, shift));

#if defined(FALLOC_FL_PUNCH_HOLE) && defined(FALLOC_FL_KEEP_SIZE)
	if (end > start && file >= 0 && FileSize(file) >= 0)
		(void) fallocate(FileGetRawDesc(file),
						 FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
						 start, end - start);
#endif
}

/*
 * Give the whole pages of run r of an entry back to the file system, if it
 * may be handed out, that is if no map on disk points into it any more.
 * The entry's partition lock is held exclusively, so that nobody claims the
 * run meanwhile.
 */
static void
pcs_free_punch_run(PcsFreeEntry *entry, PcsFreeRun *r, File file)
{
	if (r->punched || file < 0 || !pcs_free_run_ready(entry, r))
		return;
	pcs_free_punch_range(entry->shift, r->first, r->count, file);
	r->punched = true;
}

/* Give back the whole pages of every run of an entry that may be reused */
static void
pcs_free_punch(PcsFreeEntry *entry, File file)
{
	for (int i = 0; i < entry->nruns; i++)
		pcs_free_punch_run(entry, &entry->runs[i], file);
}

/*
 * Add a run of free units to an entry, merged with the runs it touches
 * that may be handed out alike (pcs_free_coalesce()).  A run that overlaps
 * one already kept would be handed out twice; that is a bug, and the new
 * run is dropped (its units become garbage).  When the entry is full, the
 * smallest run goes (garbage too, but its pages are given back first if it
 * is reusable; file is the segment's, or -1).
 */
static void
pcs_free_add_run(PcsFreeEntry *entry, uint32 first, uint32 count,
				 uint64 clock, File file)
{
	PcsFreeRun	run = {first, count, clock, false};

	Assert(count > 0 && (uint64) first + count <= PG_UINT32_MAX);
	for (int i = 0; i < entry->nruns; i++)
	{
		PcsFreeRun *r = &entry->runs[i];

		if (first < r->first + r->count && r->first < first + count)
		{
			Assert(false);
			elog(WARNING, "units %u to %u of a compressed segment were freed twice",
				 first, first + count - 1);
			return;
		}
	}

	if (entry->nruns == PCS_FREE_RUNS)
		pcs_free_coalesce(entry);
	if (entry->nruns == PCS_FREE_RUNS)
	{
		int			smallest = 0;

		for (int i = 1; i < entry->nruns; i++)
		{
			if (entry->runs[i].count < entry->runs[smallest].count)
				smallest = i;
		}
		if (entry->runs[smallest].count >= run.count)
			return;
		/* forgotten, but its space need not be: give it back if it may be */
		pcs_free_punch_run(entry, &entry->runs[smallest], file);
		pcs_free_drop_run(entry, smallest);
	}
	entry->runs[entry->nruns++] = run;
	pcs_free_coalesce(entry);
}

/*
 * Find or make the entry of a segment, with its partition lock held
 * exclusively; NULL if the table is full.
 */
static PcsFreeEntry *
pcs_free_entry(const PcsFreeKey *key, uint32 hashcode, int shift)
{
	PcsFreeEntry *entry;
	bool		found;

	entry = hash_search_with_hash_value(PcsFreeTable, key, hashcode,
										HASH_ENTER_NULL, &found);
	if (entry == NULL)
		return NULL;
	if (!found || entry->shift != shift)
	{
		if (!found)
			pg_atomic_fetch_add_u32(&PcsFree->entries, 1);
		entry->shift = shift;
		entry->nruns = 0;
		entry->synced = 0;
	}
	return entry;
}

/*
 * Keep units [first, first + count) of a segment, which its map in memory
 * no longer references, for reuse.  reuse_now is for forks that no crash
 * can bring back (temporary relations): their units are reusable at once,
 * and their whole pages are given back now (file is the segment's).  So
 * are all units when fsync is off: waiting for an fsync protects only
 * against an operating system crash, which fsync = off gives up surviving
 * (and the checkpointer then calls no fsync to wait for).
 *
 * give_back_now gives the whole pages of the units back to the file system
 * at once, before they may be reused: for a truncation, as md.c's
 * ftruncate() does.  After an OS crash, redo may write blocks that a map
 * on disk still places there, which then needs space, as redo of the
 * records before an md truncation extends the file again.  The units of a
 * page that moved wait for the fsync instead: md would have overwritten
 * that page in place, and its recovery needs no new space there.
 *
 * Called in critical sections (truncation): it neither allocates memory
 * nor raises an ERROR.
 */
void
pcs_free_units(const PcsFreeKey *key, int shift, uint32 first, uint32 count,
			   bool reuse_now, bool give_back_now, File file)
{
	uint32		hashcode;
	LWLock	   *lock;
	PcsFreeEntry *entry;
	uint64		clock = 0;

	if (count == 0)
		return;
	if (!enableFsync)
		reuse_now = true;
	if (!reuse_now)
	{
		/*
		 * The entry was switched before this read of the clock: an fsync that
		 * began before it read a smaller value (pcs_sync_begin()).
		 */
		pg_memory_barrier();
		clock = pg_atomic_read_u64(&PcsFree->clock);
	}

	/* nobody can claim them before they are kept below */
	if (give_back_now)
		pcs_free_punch_range(shift, first, count, file);

	hashcode = get_hash_value(PcsFreeTable, key);
	lock = pcs_free_lock(hashcode);
	LWLockAcquire(lock, LW_EXCLUSIVE);
	entry = pcs_free_entry(key, hashcode, shift);
	if (entry != NULL)
	{
		pcs_free_add_run(entry, first, count, clock, file);
		if (reuse_now)
			pcs_free_punch(entry, file);
		if (entry->nruns == 0)
			pcs_free_drop_entry(entry, hashcode);
	}
	LWLockRelease(lock);
}

/*
 * Take count units of a segment out of its reusable free runs: the first
 * units of the lowest run that holds them, so that images written one
 * after the other fill the same file system pages (a page the file system
 * gave back is allocated whole by the first write into it); false if no
 * run holds them.  The units lie below
 * the end of the file (they were handed out before), and may be holes,
 * which the write into them fills.
 */
bool
pcs_claim_units(const PcsFreeKey *key, uint32 count, uint32 *first)
{
	uint32		hashcode;
	LWLock	   *lock;
	PcsFreeEntry *entry;
	int			best = -1;

	Assert(count > 0);
	if (pg_atomic_read_u32(&PcsFree->entries) == 0)
		return false;

	hashcode = get_hash_value(PcsFreeTable, key);
	lock = pcs_free_lock(hashcode);
	LWLockAcquire(lock, LW_EXCLUSIVE);
	entry = hash_search_with_hash_value(PcsFreeTable, key, hashcode,
										HASH_FIND, NULL);
	if (entry != NULL)
	{
		for (int i = 0; i < entry->nruns; i++)
		{
			PcsFreeRun *r = &entry->runs[i];

			if (r->count < count || !pcs_free_run_ready(entry, r))
				continue;
			if (best < 0 || r->first < entry->runs[best].first)
				best = i;
		}
	}
	if (best >= 0)
	{
		PcsFreeRun *r = &entry->runs[best];

		*first = r->first;
		r->first += count;
		r->count -= count;
		if (r->count == 0)
			pcs_free_drop_run(entry, best);
		if (entry->nruns == 0)
			pcs_free_drop_entry(entry, hashcode);
	}
	LWLockRelease(lock);
	return best >= 0;
}

/*
 * Keep the runs of free units that the first allocation of a server
 * generation found in a segment's map (pcs_allocate()), replacing what was
 * kept for it.  At the start of a generation every map on disk is durable
 * (a clean shutdown, or the fsync of the whole data directory that crash
 * recovery begins with), so the runs are reusable at once.  The largest
 * runs are kept when there are more than an entry holds.
 */
void
pcs_free_publish(const PcsFreeKey *key, int shift, const PcsUnitRun *runs,
				 int nruns)
{
	uint32		hashcode = get_hash_value(PcsFreeTable, key);
	LWLock	   *lock = pcs_free_lock(hashcode);
	PcsFreeEntry *entry;

	LWLockAcquire(lock, LW_EXCLUSIVE);
	entry = pcs_free_entry(key, hashcode, shift);
	if (entry != NULL)
	{
		entry->nruns = 0;
		for (int i = 0; i < nruns; i++)
		{
			if (runs[i].count > 0)
				pcs_free_add_run(entry, runs[i].first, runs[i].count, 0, -1);
		}
		if (entry->nruns == 0)
			pcs_free_drop_entry(entry, hashcode);
	}
	LWLockRelease(lock);
}

/* Forget the runs of every entry that match, with every partition locked */
static void
pcs_forget_matching(const RelFileLocator *rlocator, ForkNumber forknum,
					Oid dbid)
{
	HASH_SEQ_STATUS status;
	PcsFreeEntry *entry;

	if (PcsFree == NULL || pg_atomic_read_u32(&PcsFree->entries) == 0)
		return;

	for (int i = 0; i < PCS_FREE_PARTITIONS; i++)
		LWLockAcquire(pcs_free_lock(i), LW_EXCLUSIVE);
	hash_seq_init(&status, PcsFreeTable);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		const RelFileLocator *l = &entry->key.rlocator;

		if (rlocator != NULL ?
			(RelFileLocatorEquals(*l, *rlocator) &&
			 (forknum == InvalidForkNumber || entry->key.forknum == forknum)) :
			l->dbOid == dbid)
		{
			entry->nruns = 0;
			pcs_free_drop_entry(entry, get_hash_value(PcsFreeTable, &entry->key));
		}
	}
	for (int i = PCS_FREE_PARTITIONS - 1; i >= 0; i--)
		LWLockRelease(pcs_free_lock(i));
}

/*
 * Forget the free units of every segment of a fork (of every fork, for
 * InvalidForkNumber, as smgrunlink means it), whose files are being removed
 * or created anew: a new file of the same name must not inherit them.
 */
void
pcs_forget_fork(RelFileLocator rlocator, ForkNumber forknum)
{
	pcs_forget_matching(&rlocator, forknum, InvalidOid);
}

/*
 * Forget the free units of every segment of a database, whose files are
 * removed without the storage manager (DROP DATABASE, ALTER DATABASE ...
 * SET TABLESPACE, and their redo): called by DropDatabaseBuffers().
 */
void
pcs_forget_database(Oid dbid)
{
	pcs_forget_matching(NULL, InvalidForkNumber, dbid);
}

/* The key of the segment a sync request names */
static void
pcs_free_key_of_tag(const FileTag *ftag, PcsFreeKey *key)
{
	memset(key, 0, sizeof(PcsFreeKey));
	key->rlocator = ftag->rlocator;
	key->backend = INVALID_PROC_NUMBER; /* nothing syncs temporary files */
	key->forknum = ftag->forknum;
	key->segno = ftag->segno;
}

/*
 * An fsync of a relation segment is about to begin (mdsyncfiletag(), and
 * the storage manager's own fsyncs): advance the clock, and return the
 * value that runs freed before now carry at most; 0 when nothing is kept,
 * so that md's fsyncs cost one atomic read.
 */
uint64
pcs_sync_begin(const FileTag *ftag)
{
	if (PcsFree == NULL || ftag->handler != SYNC_HANDLER_MD ||
		pg_atomic_read_u32(&PcsFree->entries) == 0)
		return 0;
	return pg_atomic_fetch_add_u64(&PcsFree->clock, 1);
}

/*
 * The fsync that pcs_sync_begin() returned clock for has completed: the
 * map on disk no longer references the units freed before it began, so
 * they become reusable, and the whole pages among them are given back to
 * the file system now (pcs_free_punch()).
 */
void
pcs_sync_done(const FileTag *ftag, uint64 clock, File file)
{
	PcsFreeKey	key;
	uint32		hashcode;
	LWLock	   *lock;
	PcsFreeEntry *entry;

	if (clock == 0)
		return;
	pcs_free_key_of_tag(ftag, &key);
	hashcode = get_hash_value(PcsFreeTable, &key);
	lock = pcs_free_lock(hashcode);
	LWLockAcquire(lock, LW_EXCLUSIVE);
	entry = hash_search_with_hash_value(PcsFreeTable, &key, hashcode,
										HASH_FIND, NULL);
	if (entry != NULL)
	{
		entry->synced = Max(entry->synced, clock);
		pcs_free_coalesce(entry);
		pcs_free_punch(entry, file);
	}
	LWLockRelease(lock);
}
