/*-------------------------------------------------------------------------
 *
 * pcs_free_pool.h
 *	  The pool of units freed in compressed segments, kept for reuse
 *	  (pcs_free_pool.c).
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * src/include/storage/pcs_free_pool.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PCS_FREE_POOL_H
#define PCS_FREE_POOL_H

#include "storage/block.h"
#include "storage/fd.h"
#include "storage/pcs_format.h"
#include "storage/relfilelocator.h"
#include "storage/sync.h"

/* Which segment of which fork: zeroed, then filled in (hashed as bytes) */
typedef struct PcsFreeKey
{
	RelFileLocator rlocator;
	ProcNumber	backend;		/* of a temporary relation, else invalid */
	ForkNumber	forknum;
	BlockNumber segno;
} PcsFreeKey;

/* A run of units of one segment, as the rebuild after a restart finds it */
typedef struct PcsUnitRun
{
	uint32		first;
	uint32		count;
} PcsUnitRun;

extern Size pcs_free_shmem_size(void);
extern void pcs_free_shmem_init(void);
extern uint32 pcs_shmem_life(void);
extern void pcs_free_attach(void);
extern void pcs_free_usage(int32 *runs, int32 *kept, uint64 *forgotten);
extern uint64 pcs_free_walks(void);

extern bool pcs_free_units(const PcsFreeKey *key, const PcsHeader *header,
						   uint32 first, uint32 count, bool reuse_now,
						   bool give_back_now, File file);
extern bool pcs_claim_units(const PcsFreeKey *key, uint32 count,
							uint32 *first);
extern void pcs_free_want_sync(const PcsFreeKey *key);
extern int	pcs_take_wanted_syncs(PcsFreeKey *keys, int max);
extern bool pcs_free_publish(const PcsFreeKey *key, const PcsHeader *header,
							 const PcsUnitRun *runs, int nruns);
extern uint32 pcs_free_waiting_units(const PcsFreeKey *key);
extern void pcs_forget_fork(RelFileLocator rlocator, ForkNumber forknum);
extern void pcs_forget_database(Oid dbid);

extern uint64 pcs_sync_begin(const FileTag *ftag);
extern void pcs_sync_done(const FileTag *ftag, uint64 clock, File file);

#endif							/* PCS_FREE_POOL_H */
