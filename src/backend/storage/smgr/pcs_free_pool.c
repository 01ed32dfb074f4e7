/*-------------------------------------------------------------------------
 *
 * pcs_free_pool.c
 *	  The pool of units freed in compressed segments: kept in shared
 *	  memory, reused once a map that no longer points to them is durable,
 *	  and given back to the file system meanwhile.
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
 * finds it again from the map (pcs_segment.c, pcs_allocate()).  What must never
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
 *	  src/backend/storage/smgr/pcs_free_pool.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>

#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "port/pg_bitutils.h"
#include "storage/bufmgr.h"
#include "storage/lwlock.h"
#include "storage/pcs.h"
#include "storage/pcs_free_pool.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/hsearch.h"

/*
 * Segments whose free units are kept at once, and the runs kept for all of
 * them together: a pool, so that a segment under an update-heavy load can
 * keep as many runs as its pages leave (pages that grow leave one each
 * time they move), while the others keep few.  The pool has two runs per
 * shared buffer, and at least PCS_FREE_MIN_RUNS.
 */
#define PCS_FREE_SEGMENTS	2048
#define PCS_FREE_MIN_RUNS	32768
#define PCS_FREE_PARTITIONS	16

/*
 * Every unlink of a fork, plain ones included, and every creation of a
 * compressed one forgets the runs of its relation (pcs_forget_fork()),
 * which takes every partition lock and walks the whole table.  A filter
 * spares that walk for the relations that keep no runs, nearly all of
 * them: a count of entries per slot, by a hash of the relation's file
 * locator, so that a relation whose slot holds zero has no entry.  With a
 * full table (PCS_FREE_SEGMENTS relations at most), a relation that keeps
 * no runs shares a slot with one that does about once in sixteen.
 */
#define PCS_FREE_FILTER_SLOTS	32768

/*
 * A segment's runs are kept in lists by size: list n holds the runs of n
 * units, the last one (PCS_MAX_UNITS, the most units a block is given) those
 * of PCS_MAX_UNITS or more, so a write finds the smallest run that holds its
 * image by looking at the head of a list or two.
 */
#define PCS_FREE_LISTS		(PCS_MAX_UNITS + 1)

/*
 * A segment's runs are sorted, merged and sorted into their lists again
 * (pcs_free_tidy()) after each fsync of the segment, and after as many runs
 * were added as it holds (at least this many).
 */
#define PCS_FREE_TIDY_MIN	64

/*
 * Units freed in a segment wait for its next fsync, normally the
 * checkpoint's.  Once this much has been freed since its last fsync began,
 * the writer that frees more asks the background writer to fsync the
 * segment early (pcs_free_want_sync()), so that a segment under an
 * update-heavy load does not carry a checkpoint interval's worth of its
 * rewrites as garbage.
 */
#define PCS_EARLY_SYNC_BYTES	(1024 * 1024)

/*
 * Segments whose early fsync writers can ask for at once; more are left to
 * the checkpoint
 */
#define PCS_FREE_WANTED		64

/* The page size in which holes are punched, and the file system allocates */
#define PCS_PUNCH_PAGE		4096

/* The end of a list of runs */
#define PCS_NO_RUN			(-1)

/* A run of free units of one segment, in the pool */
typedef struct PcsFreeRun
{
	uint32		first;			/* first unit */
	uint32		count;			/* units */
	uint64		clock;			/* the free clock when freed; 0: reusable */
	int32		next;			/* the next run of its list, or of the pool's
								 * unused runs */
	bool		punched;		/* its whole pages were given back */
} PcsFreeRun;

/*
 * The free runs of one segment, in the shared hash table.  In each list the
 * runs that may be handed out come first (pcs_free_push()); only the
 * completion of an fsync makes a waiting run reusable, and it tidies the
 * lists, so a list whose first run must wait has no reusable run.
 */
typedef struct PcsFreeEntry
{
	PcsFreeKey	key;			/* hash key: must be first */
	int			shift;			/* log2 of the segment's unit size */
	uint32		data_offset;	/* where its data area begins in the file */
	int			nruns;			/* runs in its lists */
	int			added;			/* runs added since the lists were tidied */
	uint64		synced;			/* the clock when its last fsync began */
	uint32		waiting;		/* units freed to wait since its last fsync */
	bool		sync_asked;		/* a writer was asked to fsync it early */
	uint64		nonempty[2];	/* bit n: list n has runs */
	int32		head[PCS_FREE_LISTS];
	int32		tail[PCS_FREE_LISTS];
} PcsFreeEntry;

StaticAssertDecl(PCS_FREE_LISTS <= 128, "a segment's lists must fit nonempty");

/* The shared state besides the hash table */
typedef struct PcsFreeShared
{
	pg_atomic_uint64 clock;		/* advanced by each fsync as it begins */
	pg_atomic_uint32 entries;	/* entries in the table: 0 skips it all */
	uint32		life;			/* lives of shared memory so far */
	int			tranche_id;
	LWLockPadded locks[PCS_FREE_PARTITIONS];
	slock_t		pool_lock;		/* protects the three fields below */
	int32		unused;			/* the pool's first unused run */
	int32		nunused;		/* runs unused */
	uint64		forgotten;		/* runs forgotten because the pool was full */
	pg_atomic_uint64 walks;		/* walks of the table to forget relations */
	/* segments to fsync early (pcs_free_want_sync()), under pool_lock */
	int32		nwanted;
	PcsFreeKey	wanted[PCS_FREE_WANTED];
	pg_atomic_uint32 syncer;	/* the background writer's proc number + 1, 0
								 * before it first came for them */
	/* entries per slot, by a hash of their relation (pcs_free_filter()) */
	pg_atomic_uint32 filter[PCS_FREE_FILTER_SLOTS];
	int32		nslots;			/* runs in the pool */
	PcsFreeRun	pool[FLEXIBLE_ARRAY_MEMBER];
} PcsFreeShared;

static PcsFreeShared *PcsFree = NULL;
static uint32 pcs_lives = 0;	/* in the postmaster: shared memory's lives */
static HTAB *PcsFreeTable = NULL;
static bool pcs_free_tranche_named = false;

/* Runs in the pool, for this many shared buffers */
static int32
pcs_free_pool_runs(void)
{
	return Max(PCS_FREE_MIN_RUNS, Min(NBuffers, PG_INT32_MAX / 4) * 2);
}

/* Size of the shared state */
Size
pcs_free_shmem_size(void)
{
	Size		size;

	size = add_size(offsetof(PcsFreeShared, pool),
					mul_size(pcs_free_pool_runs(), sizeof(PcsFreeRun)));
	return add_size(MAXALIGN(size),
					hash_estimate_size(PCS_FREE_SEGMENTS, sizeof(PcsFreeEntry)));
}

/* Set up the shared state (the postmaster, again after a crash) */
void
pcs_free_shmem_init(void)
{
	HASHCTL		info;
	bool		found;
	int32		nslots = pcs_free_pool_runs();

	PcsFree = ShmemInitStruct("pgstrata free units",
							  add_size(offsetof(PcsFreeShared, pool),
									   mul_size(nslots, sizeof(PcsFreeRun))),
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
		SpinLockInit(&PcsFree->pool_lock);
		PcsFree->nslots = nslots;
		for (int32 i = 0; i < nslots; i++)
			PcsFree->pool[i].next = i + 1 < nslots ? i + 1 : PCS_NO_RUN;
		PcsFree->unused = 0;
		PcsFree->nunused = nslots;
		PcsFree->forgotten = 0;
		pg_atomic_init_u64(&PcsFree->walks, 0);
		PcsFree->nwanted = 0;
		pg_atomic_init_u32(&PcsFree->syncer, 0);
		for (int i = 0; i < PCS_FREE_FILTER_SLOTS; i++)
			pg_atomic_init_u32(&PcsFree->filter[i], 0);
	}

	info.keysize = sizeof(PcsFreeKey);
	info.entrysize = sizeof(PcsFreeEntry);
	info.num_partitions = PCS_FREE_PARTITIONS;

	/*
	 * Fixed in size: a shared hash table that may grow takes the shared
	 * memory left over, which the lock manager's tables grow into; a segment
	 * that finds the table full forgets its units instead (pcs_free_entry()).
	 */
	PcsFreeTable = ShmemInitHash("pgstrata free units table",
								 PCS_FREE_SEGMENTS, PCS_FREE_SEGMENTS, &info,
								 HASH_ELEM | HASH_BLOBS | HASH_PARTITION |
								 HASH_FIXED_SIZE);
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

/*
 * How the pool is used, for the statistics: runs in it, runs kept now, and
 * runs forgotten so far because it was full
 */
void
pcs_free_usage(int32 *runs, int32 *kept, uint64 *forgotten)
{
	Assert(PcsFree != NULL);
	SpinLockAcquire(&PcsFree->pool_lock);
	*runs = PcsFree->nslots;
	*kept = PcsFree->nslots - PcsFree->nunused;
	*forgotten = PcsFree->forgotten;
	SpinLockRelease(&PcsFree->pool_lock);
}

/*
 * How many times the table was walked to forget the runs of a relation or
 * a database since shared memory was set up, for tests of the filter
 */
uint64
pcs_free_walks(void)
{
	Assert(PcsFree != NULL);
	return pg_atomic_read_u64(&PcsFree->walks);
}

/* The filter's count of the entries of relations that hash like rlocator */
static inline pg_atomic_uint32 *
pcs_free_filter(const RelFileLocator *rlocator)
{
	uint32		hash = hash_bytes((const unsigned char *) rlocator,
								  sizeof(RelFileLocator));

	return &PcsFree->filter[hash % PCS_FREE_FILTER_SLOTS];
}

/* The lock of the partition that holds a key of this hash code */
static LWLock *
pcs_free_lock(uint32 hashcode)
{
	return &PcsFree->locks[hashcode % PCS_FREE_PARTITIONS].lock;
}

/* A run of the pool that no segment keeps, or PCS_NO_RUN if it is full */
static int32
pcs_free_take_slot(void)
{
	int32		slot;

	SpinLockAcquire(&PcsFree->pool_lock);
	slot = PcsFree->unused;
	if (slot != PCS_NO_RUN)
	{
		PcsFree->unused = PcsFree->pool[slot].next;
		PcsFree->nunused--;
	}
	SpinLockRelease(&PcsFree->pool_lock);
	return slot;
}

/* Give a run back to the pool's unused ones; forgotten: its units are lost */
static void
pcs_free_put_slot(int32 slot, bool forgotten)
{
	Assert(slot >= 0 && slot < PcsFree->nslots);
	SpinLockAcquire(&PcsFree->pool_lock);
	PcsFree->pool[slot].next = PcsFree->unused;
	PcsFree->unused = slot;
	PcsFree->nunused++;
	if (forgotten)
		PcsFree->forgotten++;
	SpinLockRelease(&PcsFree->pool_lock);
}

/* The list of a run of count units */
static inline int
pcs_free_list_of(uint32 count)
{
	Assert(count > 0);
	return (int) Min(count, PCS_MAX_UNITS);
}

/* May run r of an entry be handed out now? */
static inline bool
pcs_free_run_ready(const PcsFreeEntry *entry, const PcsFreeRun *r)
{
	return r->clock == 0 || r->clock <= entry->synced;
}

/* Make an entry's lists empty */
static void
pcs_free_clear_lists(PcsFreeEntry *entry)
{
	for (int n = 0; n < PCS_FREE_LISTS; n++)
		entry->head[n] = entry->tail[n] = PCS_NO_RUN;
	entry->nonempty[0] = entry->nonempty[1] = 0;
	entry->nruns = 0;
}

/*
 * Put run slot into its list of an entry: first if it may be handed out,
 * last if it must wait, so that the runs that may be handed out come first.
 */
static void
pcs_free_push(PcsFreeEntry *entry, int32 slot)
{
	PcsFreeRun *r = &PcsFree->pool[slot];
	int			n = pcs_free_list_of(r->count);

	if (entry->head[n] == PCS_NO_RUN)
	{
		r->next = PCS_NO_RUN;
		entry->head[n] = entry->tail[n] = slot;
		entry->nonempty[n / 64] |= UINT64CONST(1) << (n % 64);
	}
	else if (pcs_free_run_ready(entry, r))
	{
		r->next = entry->head[n];
		entry->head[n] = slot;
	}
	else
	{
		r->next = PCS_NO_RUN;
		PcsFree->pool[entry->tail[n]].next = slot;
		entry->tail[n] = slot;
	}
	entry->nruns++;
}

/* Take the first run out of list n of an entry, which has one */
static int32
pcs_free_pop(PcsFreeEntry *entry, int n)
{
	int32		slot = entry->head[n];

	Assert(slot != PCS_NO_RUN && entry->nruns > 0);
	entry->head[n] = PcsFree->pool[slot].next;
	if (entry->head[n] == PCS_NO_RUN)
	{
		entry->tail[n] = PCS_NO_RUN;
		entry->nonempty[n / 64] &= ~(UINT64CONST(1) << (n % 64));
	}
	entry->nruns--;
	return slot;
}

/* The first non-empty list of an entry from list n on, or -1 */
static int
pcs_free_next_list(const PcsFreeEntry *entry, int n)
{
	for (; n < PCS_FREE_LISTS; n++)
	{
		uint64		bits = entry->nonempty[n / 64] >> (n % 64);

		if (bits != 0)
			return n + pg_rightmost_one_pos64(bits);
		/* nothing more in this word: go to the next one */
		n = (n / 64) * 64 + 63;
	}
	return -1;
}

/* Take every run out of an entry's lists, as one chain (unsorted) */
static int32
pcs_free_chain(PcsFreeEntry *entry)
{
	int32		chain = PCS_NO_RUN;

	for (int n = pcs_free_next_list(entry, 1); n >= 0;
		 n = pcs_free_next_list(entry, n + 1))
	{
		PcsFree->pool[entry->tail[n]].next = chain;
		chain = entry->head[n];
	}
	pcs_free_clear_lists(entry);
	return chain;
}

/* Sort a chain of runs by first unit (a merge sort, which needs no memory) */
static int32
pcs_free_sort(int32 chain)
{
	int32		a = PCS_NO_RUN,
				b = PCS_NO_RUN,
				merged = PCS_NO_RUN,
			   *link = &merged;

	if (chain == PCS_NO_RUN || PcsFree->pool[chain].next == PCS_NO_RUN)
		return chain;

	/* deal the runs into two chains, then sort each */
	while (chain != PCS_NO_RUN)
	{
		int32		next = PcsFree->pool[chain].next;

		PcsFree->pool[chain].next = a;
		a = chain;
		chain = next;
		if (chain == PCS_NO_RUN)
			break;
		next = PcsFree->pool[chain].next;
		PcsFree->pool[chain].next = b;
		b = chain;
		chain = next;
	}
	a = pcs_free_sort(a);
	b = pcs_free_sort(b);

	while (a != PCS_NO_RUN && b != PCS_NO_RUN)
	{
		int32	   *from = PcsFree->pool[a].first <= PcsFree->pool[b].first ? &a : &b;

		*link = *from;
		link = &PcsFree->pool[*from].next;
		*from = PcsFree->pool[*from].next;
	}
	*link = a != PCS_NO_RUN ? a : b;
	return merged;
}

/*
 * Give the whole pages of units [first, first + count) back to the file
 * system now, whether they may be reused yet or not (file is the
 * segment's).  A file system that cannot punch holes keeps them.
 */
static void
pcs_free_punch_range(int shift, uint32 data_offset, uint32 first,
					 uint32 count, File file)
{
	off_t		start = TYPEALIGN(PCS_PUNCH_PAGE,
								  data_offset + ((off_t) first << shift));
	off_t		end = TYPEALIGN_DOWN(PCS_PUNCH_PAGE,
									 data_offset +
									 ((off_t) (first + count) << shift));

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
	pcs_free_punch_range(entry->shift, entry->data_offset, r->first,
						 r->count, file);
	r->punched = true;
}

/*
 * Sort the runs of an entry by address, merge those that touch and may be
 * handed out alike, give back the whole pages of those that may be reused
 * (file is the segment's, or -1), and sort them into their lists again.
 *
 * Runs are merged only when both may be handed out, or both wait for the
 * same fsync.  A reusable run merged with one that waits would wait too:
 * units are freed in the order they were handed out, so the units a
 * truncation frees usually follow those the truncation before freed, and
 * each cycle of a queue table would keep the space of the one before from
 * being reused.
 *
 * Two runs that overlap would be handed out twice; that is a bug, and the
 * second is dropped (its units become garbage).  Runs nothing but this
 * function merges, so it is also where that is checked.
 */
static void
pcs_free_tidy(PcsFreeEntry *entry, File file)
{
	int32		run = pcs_free_sort(pcs_free_chain(entry));

	while (run != PCS_NO_RUN)
	{
		PcsFreeRun *r = &PcsFree->pool[run];
		int32		next = r->next;

		while (next != PCS_NO_RUN)
		{
			PcsFreeRun *s = &PcsFree->pool[next];
			int32		after = s->next;

			if ((uint64) r->first + r->count > s->first)
			{
				Assert(false);
				elog(WARNING, "units %u to %u of a compressed segment were freed twice",
					 s->first, s->first + s->count - 1);
			}
			else if (r->first + r->count == s->first &&
					 ((pcs_free_run_ready(entry, r) && pcs_free_run_ready(entry, s)) ||
					  r->clock == s->clock))
			{
				r->count += s->count;
				r->clock = Max(r->clock, s->clock);
				/* the page where they meet may still hold space */
				r->punched = false;
			}
			else
				break;
			pcs_free_put_slot(next, false);
			next = after;
		}
		pcs_free_punch_run(entry, r, file);
		pcs_free_push(entry, run);
		run = next;
	}
	entry->added = 0;
}

/*
 * Add a run of free units to an entry (punched: its whole pages were given
 * back already).  When the pool is full, the entry's
 * smallest run gives its place if it is smaller than the new one (its pages
 * given back first if it is reusable; file is the segment's, or -1), and
 * otherwise the new run is forgotten: forgotten units are garbage, which
 * costs space but never data.
 */
static void
pcs_free_add_run(PcsFreeEntry *entry, uint32 first, uint32 count,
				 uint64 clock, bool punched, File file)
{
	int32		slot;
	PcsFreeRun *r;

	Assert(count > 0 && (uint64) first + count <= PG_UINT32_MAX);

	slot = pcs_free_take_slot();
	if (slot == PCS_NO_RUN)
	{
		int			smallest = pcs_free_next_list(entry, 1);

		if (smallest < 0 || smallest >= pcs_free_list_of(count))
		{
			SpinLockAcquire(&PcsFree->pool_lock);
			PcsFree->forgotten++;
			SpinLockRelease(&PcsFree->pool_lock);
			return;
		}
		slot = pcs_free_pop(entry, smallest);
		pcs_free_punch_run(entry, &PcsFree->pool[slot], file);
		SpinLockAcquire(&PcsFree->pool_lock);
		PcsFree->forgotten++;
		SpinLockRelease(&PcsFree->pool_lock);
	}

	r = &PcsFree->pool[slot];
	r->first = first;
	r->count = count;
	r->clock = clock;
	r->punched = punched;
	pcs_free_push(entry, slot);

	/* merge what touches now and then, so that runs do not only get smaller */
	if (++entry->added >= Max(PCS_FREE_TIDY_MIN, entry->nruns))
		pcs_free_tidy(entry, file);
}

/* Give every run of an entry back to the pool, leaving its lists empty */
static void
pcs_free_release(PcsFreeEntry *entry)
{
	int32		run = pcs_free_chain(entry);

	while (run != PCS_NO_RUN)
	{
		int32		next = PcsFree->pool[run].next;

		pcs_free_put_slot(run, false);
		run = next;
	}
}

/* Give every run of an entry back to the pool, and remove the entry */
static void
pcs_free_drop_entry(PcsFreeEntry *entry, uint32 hashcode)
{
	pcs_free_release(entry);
	pg_atomic_fetch_sub_u32(pcs_free_filter(&entry->key.rlocator), 1);
	(void) hash_search_with_hash_value(PcsFreeTable, &entry->key, hashcode,
									   HASH_REMOVE, NULL);
	pg_atomic_fetch_sub_u32(&PcsFree->entries, 1);
}

/*
 * Find or make the entry of a segment, with its partition lock held
 * exclusively; NULL if the table is full.
 */
static PcsFreeEntry *
pcs_free_entry(const PcsFreeKey *key, uint32 hashcode, int shift,
			   uint32 data_offset)
{
	PcsFreeEntry *entry;
	bool		found;
	bool		relaid;

	entry = hash_search_with_hash_value(PcsFreeTable, key, hashcode,
										HASH_ENTER_NULL, &found);
	if (entry == NULL)
		return NULL;
	relaid = found &&
		(entry->shift != shift || entry->data_offset != data_offset);
	if (relaid)
	{
		/* a file of another layout: what was kept is not its units */
		pcs_free_release(entry);
	}
	if (!found || relaid)
	{
		if (!found)
		{
			pg_atomic_fetch_add_u32(&PcsFree->entries, 1);
			pg_atomic_fetch_add_u32(pcs_free_filter(&key->rlocator), 1);
		}
		entry->shift = shift;
		entry->data_offset = data_offset;
		entry->synced = 0;
		entry->added = 0;
		entry->waiting = 0;
		entry->sync_asked = false;
		pcs_free_clear_lists(entry);
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
 * Returns true, to one caller at a time, once PCS_EARLY_SYNC_BYTES have
 * been freed to wait since the segment's last fsync began: the caller
 * should then ask for an early fsync (pcs_free_want_sync()), if it can,
 * rather than leave them waiting for the checkpoint.
 *
 * Called in critical sections (truncation): it neither allocates memory
 * nor raises an ERROR.
 */
bool
pcs_free_units(const PcsFreeKey *key, const PcsHeader *header, uint32 first,
			   uint32 count, bool reuse_now, bool give_back_now, File file)
{
	int			shift = header->unit_shift;
	uint32		data_offset = (uint32) pcs_data_offset(header);
	uint32		hashcode;
	LWLock	   *lock;
	PcsFreeEntry *entry;
	uint64		clock = 0;
	bool		punched;
	bool		sync_early = false;

	if (count == 0)
		return false;

	/*
	 * Recovering from a copy of a running cluster, the copy's map may name
	 * these units in another block's entry: neither keep nor punch them
	 * (pcs_copy_recovery.c).  They are garbage until the next server start
	 * finds them unreferenced.
	 */
	if (!reuse_now && pcs_copy_recovery_active())
		return false;
	if (!enableFsync)
		reuse_now = true;

	/*
	 * Nobody can claim them before they are kept below.  Units reusable at
	 * once may be given back at once.
	 */
	punched = (give_back_now || reuse_now) && file >= 0;
	if (punched)
		pcs_free_punch_range(shift, data_offset, first, count, file);

	hashcode = get_hash_value(PcsFreeTable, key);
	lock = pcs_free_lock(hashcode);
	LWLockAcquire(lock, LW_EXCLUSIVE);

	/*
	 * The entry was switched before this read of the clock (the lock's
	 * acquisition is a barrier): an fsync that began before it read a smaller
	 * value (pcs_sync_begin()).  Read under the lock, the clocks of the runs
	 * added to a list only grow.
	 */
	if (!reuse_now)
		clock = pg_atomic_read_u64(&PcsFree->clock);

	entry = pcs_free_entry(key, hashcode, shift, data_offset);
	if (entry != NULL)
	{
		pcs_free_add_run(entry, first, count, clock, punched, file);
		if (clock != 0)
		{
			entry->waiting = Min((uint64) entry->waiting + count, PG_UINT32_MAX);
			if (!entry->sync_asked &&
				((uint64) entry->waiting << shift) >= PCS_EARLY_SYNC_BYTES)
				entry->sync_asked = sync_early = true;
		}
		if (entry->nruns == 0)
			pcs_free_drop_entry(entry, hashcode);
	}
	else
	{
		/* the table is full: the run is garbage, and counted as forgotten */
		SpinLockAcquire(&PcsFree->pool_lock);
		PcsFree->forgotten++;
		SpinLockRelease(&PcsFree->pool_lock);
	}
	LWLockRelease(lock);
	return sync_early;
}

/*
 * Ask for an early fsync of a segment, once pcs_free_units() said that
 * enough of its freed units wait for one.  The writer that freed them
 * holds a buffer's content lock and has its I/O in progress, where an
 * fsync of a whole segment would make every process that needs the buffer
 * wait; so the request goes to the background writer
 * (pcs_take_wanted_syncs()), whose latch is set.  When PCS_FREE_WANTED
 * requests wait already, this one is dropped: the checkpoint fsyncs the
 * segment anyway, and its entry, still asked, asks no more until then.
 */
void
pcs_free_want_sync(const PcsFreeKey *key)
{
	bool		queued = false;
	uint32		syncer;

	SpinLockAcquire(&PcsFree->pool_lock);
	if (PcsFree->nwanted < PCS_FREE_WANTED)
	{
		PcsFree->wanted[PcsFree->nwanted++] = *key;
		queued = true;
	}
	SpinLockRelease(&PcsFree->pool_lock);

	syncer = pg_atomic_read_u32(&PcsFree->syncer);
	if (queued && syncer != 0)
		SetLatch(&GetPGProcByNumber(syncer - 1)->procLatch);
}

/*
 * Take the segments whose early fsync writers asked for, at most max of
 * them, into keys; their number.  Called by the background writer, which
 * from then on is the one woken for new requests.
 */
int
pcs_take_wanted_syncs(PcsFreeKey *keys, int max)
{
	int			n;

	pg_atomic_write_u32(&PcsFree->syncer, (uint32) MyProcNumber + 1);
	SpinLockAcquire(&PcsFree->pool_lock);
	n = Min(max, PcsFree->nwanted);
	memcpy(keys, PcsFree->wanted + PcsFree->nwanted - n,
		   n * sizeof(PcsFreeKey));
	PcsFree->nwanted -= n;
	SpinLockRelease(&PcsFree->pool_lock);
	return n;
}

/*
 * Take count units of a segment out of its reusable free runs: the first
 * units of the smallest run that holds them, so that a run of just the
 * right size goes to a block of that size and larger runs stay whole for
 * larger images; false if no run holds them.  The units lie below the end
 * of the file (they were handed out before), and may be holes, which the
 * write into them fills.
 */
bool
pcs_claim_units(const PcsFreeKey *key, uint32 count, uint32 *first)
{
	uint32		hashcode;
	LWLock	   *lock;
	PcsFreeEntry *entry;
	bool		found = false;

	Assert(count > 0 && count <= PCS_MAX_UNITS);
	if (pg_atomic_read_u32(&PcsFree->entries) == 0)
		return false;

	hashcode = get_hash_value(PcsFreeTable, key);
	lock = pcs_free_lock(hashcode);
	LWLockAcquire(lock, LW_EXCLUSIVE);
	entry = hash_search_with_hash_value(PcsFreeTable, key, hashcode,
										HASH_FIND, NULL);
	if (entry != NULL)
	{
		for (int n = pcs_free_next_list(entry, pcs_free_list_of(count)); n >= 0;
			 n = pcs_free_next_list(entry, n + 1))
		{
			int32		slot;
			PcsFreeRun *r;

			/* the reusable runs come first: if the first waits, all do */
			if (!pcs_free_run_ready(entry, &PcsFree->pool[entry->head[n]]))
				continue;
			slot = pcs_free_pop(entry, n);
			r = &PcsFree->pool[slot];
			Assert(r->count >= count);
			*first = r->first;
			r->first += count;
			r->count -= count;
			if (r->count > 0)
				pcs_free_push(entry, slot);
			else
				pcs_free_put_slot(slot, false);
			found = true;
			break;
		}
		if (entry->nruns == 0)
			pcs_free_drop_entry(entry, hashcode);
	}
	LWLockRelease(lock);
	return found;
}

/*
 * Keep the runs of free units that the first allocation of a server
 * generation found in a segment's map (pcs_allocate()), replacing what was
 * kept for it.  They wait for the segment's next fsync, as freed units do:
 * the map they were found in was read from the page cache, which need not
 * be durable at the start of a generation.  A standby shut down before it
 * replayed a checkpoint record skips its restartpoint, and at its next
 * start nothing fsyncs the data directory, so an OS crash could bring back
 * an older map in which another block's entry points into these units.
 * When the pool is full, the largest runs are kept.  Returns true, once
 * until the segment's next fsync, when the caller should ask for that fsync
 * early (pcs_free_want_sync()).
 */
bool
pcs_free_publish(const PcsFreeKey *key, const PcsHeader *header,
				 const PcsUnitRun *runs, int nruns)
{
	int			shift = header->unit_shift;
	uint32		hashcode = get_hash_value(PcsFreeTable, key);
	LWLock	   *lock = pcs_free_lock(hashcode);
	PcsFreeEntry *entry;
	uint64		clock;
	bool		sync_early = false;

	LWLockAcquire(lock, LW_EXCLUSIVE);
	/* read under the lock, as pcs_free_units() reads it; fsync = off: now */
	clock = enableFsync ? pg_atomic_read_u64(&PcsFree->clock) : 0;
	entry = pcs_free_entry(key, hashcode, shift,
						   (uint32) pcs_data_offset(header));
	if (entry != NULL)
	{
		uint64		waiting = 0;

		pcs_free_release(entry);
		for (int i = 0; i < nruns; i++)
		{
			if (runs[i].count > 0)
			{
				pcs_free_add_run(entry, runs[i].first, runs[i].count, clock,
								 false, -1);
				waiting += runs[i].count;
			}
		}

		/*
		 * They wait like freed units, and are counted with them; but however
		 * few they are, the segment's first fsync in this generation is asked
		 * for now.  Until it, every write that moves a page takes fresh units
		 * from the file's end, and a server that crashes before its first
		 * checkpoint would grow the file at every start.
		 */
		if (clock != 0 && entry->nruns > 0)
		{
			entry->waiting = (uint32) Min(waiting, PG_UINT32_MAX);
			if (!entry->sync_asked)
				entry->sync_asked = sync_early = true;
		}
		if (entry->nruns == 0)
			pcs_free_drop_entry(entry, hashcode);
	}
	LWLockRelease(lock);
	return sync_early;
}

/*
 * Units of a segment freed to wait since its last fsync completed
 * (including those its generation's first allocation found): space that is
 * about to become reusable, so that growing the file in advance of it
 * would only add to what the file holds unused (pcs_ensure_capacity()).
 * A hint, read without waiting for writers.
 */
uint32
pcs_free_waiting_units(const PcsFreeKey *key)
{
	uint32		hashcode;
	LWLock	   *lock;
	PcsFreeEntry *entry;
	uint32		waiting = 0;

	if (pg_atomic_read_u32(&PcsFree->entries) == 0)
		return 0;
	hashcode = get_hash_value(PcsFreeTable, key);
	lock = pcs_free_lock(hashcode);
	LWLockAcquire(lock, LW_SHARED);
	entry = hash_search_with_hash_value(PcsFreeTable, key, hashcode,
										HASH_FIND, NULL);
	if (entry != NULL)
		waiting = entry->waiting;
	LWLockRelease(lock);
	return waiting;
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

	/*
	 * A relation whose slot of the filter holds zero has no entry.  Its
	 * entries were made and dropped by processes that wrote the relation
	 * before whoever forgets it now could drop or create its files (the
	 * relation's lock ordered them, and an LWLock's release is a barrier), so
	 * the counts they left are seen here after a barrier.
	 */
	if (rlocator != NULL)
	{
		pg_memory_barrier();
		if (pg_atomic_read_u32(pcs_free_filter(rlocator)) == 0)
			return;
	}

	pg_atomic_fetch_add_u64(&PcsFree->walks, 1);
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
		/* what was freed since this fsync began still waits: a hint only */
		entry->waiting = 0;
		entry->sync_asked = false;
		/* runs that may now be reused go first in their lists */
		pcs_free_tidy(entry, file);
		if (entry->nruns == 0)
			pcs_free_drop_entry(entry, hashcode);
	}
	LWLockRelease(lock);
}
