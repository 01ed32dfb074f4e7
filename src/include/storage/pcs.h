/*-------------------------------------------------------------------------
 *
 * pcs.h
 *	  Page-compressed storage: the storage manager of compressed tablespaces.
 *
 * pcs.c is the storage manager of every relation: it handles compressed
 * forks and passes all others to md.c.  See src/backend/storage/smgr/README.pcs.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * src/include/storage/pcs.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PCS_H
#define PCS_H

#include "nodes/pg_list.h"
#if PG_VERSION_NUM >= 180000
#include "storage/aio_types.h"
#endif
#include "storage/block.h"
#include "storage/pcs_format.h"
#include "storage/relfilelocator.h"
#include "storage/smgr.h"
#include "utils/guc.h"

/* Index of pcs in smgr.c's table of storage managers */
#define PCS_SMGR_ID			1

/* smgr callbacks */
extern void pcs_open(SMgrRelation reln);
extern void pcs_close(SMgrRelation reln, ForkNumber forknum);
extern void pcs_create(SMgrRelation reln, ForkNumber forknum, bool isRedo);
extern bool pcs_exists(SMgrRelation reln, ForkNumber forknum);
extern void pcs_unlink(RelFileLocatorBackend rlocator, ForkNumber forknum,
					   bool isRedo);
extern void pcs_extend(SMgrRelation reln, ForkNumber forknum,
					   BlockNumber blocknum, const void *buffer, bool skipFsync);
extern void pcs_zeroextend(SMgrRelation reln, ForkNumber forknum,
						   BlockNumber blocknum, int nblocks, bool skipFsync);
extern bool pcs_prefetch(SMgrRelation reln, ForkNumber forknum,
						 BlockNumber blocknum, int nblocks);
extern void pcs_readv(SMgrRelation reln, ForkNumber forknum,
					  BlockNumber blocknum, void **buffers,
					  BlockNumber nblocks);
extern void pcs_writev(SMgrRelation reln, ForkNumber forknum,
					   BlockNumber blocknum, const void **buffers,
					   BlockNumber nblocks, bool skipFsync);
extern void pcs_writeback(SMgrRelation reln, ForkNumber forknum,
						  BlockNumber blocknum, BlockNumber nblocks);
extern BlockNumber pcs_nblocks(SMgrRelation reln, ForkNumber forknum);
extern void pcs_truncate(SMgrRelation reln, ForkNumber forknum,
						 BlockNumber old_blocks, BlockNumber nblocks);
extern void pcs_immedsync(SMgrRelation reln, ForkNumber forknum);
extern void pcs_registersync(SMgrRelation reln, ForkNumber forknum);
#if PG_VERSION_NUM >= 180000
/* the callbacks 18's asynchronous I/O added (pcs_aio.c) */
extern uint32 pcs_maxcombine(SMgrRelation reln, ForkNumber forknum,
							 BlockNumber blocknum);
extern void pcs_startreadv(PgAioHandle * ioh, SMgrRelation reln,
						   ForkNumber forknum, BlockNumber blocknum,
						   void **buffers, BlockNumber nblocks);
extern int	pcs_fd(SMgrRelation reln, ForkNumber forknum,
				   BlockNumber blocknum, uint32 *off);
extern PGDLLIMPORT const PgAioHandleCallbacks aio_pcs_readv_cb;
#endif

/*
 * A read-only view of one segment of a compressed fork (pcs_segment_view()),
 * for reports on the format; valid until the next call into the storage
 * manager
 */
typedef struct PcsSegmentView
{
	const PcsHeader *header;	/* the process's copy of the header, its
								 * dictionary records read at the view */
	struct PcsSegment *seg;		/* for pcs_view_entry() */
	BlockNumber segno;
	BlockNumber nblocks;		/* its block count */
	uint32		unit_limit;		/* the first unit not handed out */
	int			shift;			/* log2 of its unit size */
	uint64		physical_bytes; /* allocated by the file system */
	uint32		map_units;		/* units its directory and map pages take
								 * (version 5) */
} PcsSegmentView;

extern bool pcs_segment_view(SMgrRelation reln, ForkNumber forknum,
							 BlockNumber segno, PcsSegmentView *view);
extern PcsMapEntry pcs_view_entry(const PcsSegmentView *view,
								  BlockNumber segblock);
extern bool pcs_fork_is_compressed(SMgrRelation reln, ForkNumber forknum);
extern void pcs_sync_wanted_segments(void);

/* what a dictionary gains on the pages sampled to train it */
typedef struct PcsDictGain
{
	int64		without;		/* bytes they take stored without it */
	int64		with;			/* ... and with it */
} PcsDictGain;

extern int	pcs_install_dictionary(SMgrRelation reln, ForkNumber forknum,
								   BlockNumber segno, const char *bytes,
								   int len, const char *pages, int npages,
								   PcsDictGain *gain);

/* sizes (pcs.c) */
struct stat;
extern off_t pcs_file_size(const char *path, const struct stat *st);

/* compressed tablespaces and their marker files (pcs_tablespace.c) */
extern bool pcs_tablespace_settings(Oid spcOid, PcsAlgorithm *algorithm,
									int *level);
extern void pcs_write_tablespace_marker(const char *versiondir,
										PcsAlgorithm algorithm, int level);
struct XLogReaderState;
extern void pcs_validate_compression_option(const char *value);
extern void pcs_check_tablespace_options(Datum options,
										 PcsAlgorithm *algorithm, int *level);
extern void pcs_create_tablespace(Oid tablespaceoid, PcsAlgorithm algorithm,
								  int level);
extern void pcs_log_tablespace(PcsAlgorithm algorithm, int level);
extern void pcs_redo_tablespace(struct XLogReaderState *record,
								Oid tablespaceoid);
extern void pcs_remove_tablespace_marker(const char *versiondir, bool redo);
extern void pcs_check_alter_tablespace(const char *name, List *options);
extern bool pcs_compressed_tablespaces_exist(void);

/* the shared memory of compressed storage, for ipci.c (pcs_shmem.c) */
extern Size pcs_shmem_size(void);
extern void pcs_shmem_init(void);

/* what protects compressed pages while they may exist (pcs_tablespace.c) */
extern bool pcs_compressed_forks_may_exist(void);
extern Size pcs_in_use_shmem_size(void);
extern void pcs_in_use_shmem_init(void);
extern bool pcs_tablespace_is_compressed(Oid spcOid);
extern void pcs_note_compressed_storage(void);
extern void pcs_enforce_startup_settings(void);
extern bool pcs_full_page_writes(bool configured);

/* recovery from a copy of a running cluster (pcs_copy_recovery.c) */
extern Size pcs_copy_recovery_shmem_size(void);
extern void pcs_copy_recovery_shmem_init(void);
extern bool pcs_copy_recovery_active(void);
extern void pcs_copy_recovery_consistent(void);
extern void pcs_copy_recovery_checkpoint_begin(int flags);
extern void pcs_copy_recovery_checkpoint_end(void);

/* space held back for writing back pages on a full disk (pcs_reserve.c) */
extern PGDLLIMPORT int compressed_tablespace_reserve;
extern void pcs_reserve_fill(const char *versiondir, int elevel);
extern void pcs_reserve_fill_all(void);
extern bool pcs_reserve_release(Oid spcOid, off_t need);
extern void pcs_reserve_remove(const char *versiondir, bool redo);
extern void pcs_reserve_check_extension(Oid spcOid, const char *path,
										int nblocks);

/* pcs_debug_force_compression (pcs_tablespace.c) */
extern PGDLLIMPORT int pcs_debug_force_compression;
extern PGDLLIMPORT const struct config_enum_entry pcs_force_compression_options[];
extern bool pcs_forced_settings(PcsAlgorithm *algorithm, int *level);

#endif							/* PCS_H */
