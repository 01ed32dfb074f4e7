/*-------------------------------------------------------------------------
 *
 * pcs_shmem.c
 *	  The shared memory of page-compressed storage: one entry point for
 *	  ipci.c, which sizes and sets up every part of it.
 *
 * Compressed storage keeps five things in shared memory: the flag that
 * says compressed forks may exist (pcs_tablespace.c), the pool of units
 * freed in compressed segments (pcs_free_pool.c), the state of recovery
 * from a copy (pcs_copy_recovery.c), the locks of the segments' shared
 * words (pcs_meta.c) and, on PostgreSQL 18,
 * the prepared dictionaries that asynchronous reads decode with
 * (pcs_aio.c).  Each part owns its own state; this file only adds them up,
 * so that core calls one function for the size and one for the setup, and
 * no part of the storage manager has to know of the others.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/backend/storage/smgr/pcs_shmem.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/pcs_free_pool.h"
#include "storage/pcs_internal.h"
#include "storage/shmem.h"

/* Size of the shared memory of compressed storage (CalculateShmemSize()) */
Size
pcs_shmem_size(void)
{
	Size		size = pcs_in_use_shmem_size();

	size = add_size(size, pcs_free_shmem_size());
	size = add_size(size, pcs_copy_recovery_shmem_size());
	size = add_size(size, pcs_meta_shmem_size());
#if PG_VERSION_NUM >= 180000
	size = add_size(size, pcs_aio_shmem_size());
#endif
	return size;
}

/*
 * Set up the shared memory of compressed storage (CreateOrAttachShmemStructs(),
 * in the postmaster, and again after a crash resets shared memory)
 */
void
pcs_shmem_init(void)
{
	pcs_in_use_shmem_init();
	pcs_free_shmem_init();
	pcs_copy_recovery_shmem_init();
	pcs_meta_shmem_init();
#if PG_VERSION_NUM >= 180000
	pcs_aio_shmem_init();
#endif
}
