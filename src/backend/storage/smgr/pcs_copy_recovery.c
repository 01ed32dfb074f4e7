/*-------------------------------------------------------------------------
 *
 * pcs_copy_recovery.c
 *	  Recovery of compressed segments from a copy of a running cluster.
 *
 * A copy of a running cluster (pg_basebackup, pg_backup_start and a file
 * copy, pg_rewind from a live source) reads each segment while the server
 * writes it: the map entries of a segment are read at one moment, the data
 * at another, and the entries of different blocks at different moments.
 * md.c does not mind, because redo of one block only ever writes that
 * block's bytes.  A compressed segment reuses units: a block whose entry
 * was copied may move after that, a checkpoint's fsync makes its old units
 * reusable, and a block whose entry is copied later may take them.  The
 * copy then holds two entries naming the same units.  Both blocks changed
 * after the backup began, so redo restores both from full-page images; if
 * each were written back in place, the second write would destroy the
 * image the first entry names.
 *
 * So, while a server recovers from a copy, and until every page its redo
 * dirtied before the copy became consistent has been written back and
 * fsynced, compressed pages are written out of place (pcs.c), into units no
 * entry of the copy names, and the units the writes leave behind are not
 * reused (pcs_free_pool.c): they may be named by another entry of the copy
 * still.  They are garbage until the next server start reads the map for
 * free units, which then finds them free.
 *
 * A blank page of compressed storage cannot tell a copy from the original,
 * so the mode is entered where a copy shows itself: a backup_label in the
 * data directory (every kind of base backup, and pg_rewind, writes one).
 * A file of our own, PCS_COPY_RECOVERY_FILE, keeps the mode over crashes
 * until it ends: the label is renamed early in recovery, and a crash after
 * the backup's end would otherwise restart from the same checkpoint with
 * the shared entries still on disk.  The mode ends at the end of the first
 * checkpoint or restartpoint that began once redo was consistent (or
 * finished): that checkpoint wrote back, out of place, every page redo had
 * dirtied until then, and fsynced them, so no two entries on disk share a
 * unit any more.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/backend/storage/smgr/pcs_copy_recovery.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/xlog.h"
#include "port/atomics.h"
#include "storage/fd.h"
#include "storage/pcs.h"
#include "storage/shmem.h"

/*
 * In the data directory while a server recovers from a copy of a running
 * cluster, and until that recovery's writes are durable
 */
#define PCS_COPY_RECOVERY_FILE	"pgstrata_copy_recovery"

typedef struct PcsCopyRecoveryState
{
	pg_atomic_uint32 active;	/* writes go out of place, frees are dropped */
	pg_atomic_uint32 consistent;	/* redo has reached a consistent state */
} PcsCopyRecoveryState;

static PcsCopyRecoveryState *PcsCopyRecovery = NULL;

/* in the checkpointer: the running checkpoint may end the mode */
static bool checkpoint_ends_mode = false;

/* Size of the shared state (pcs_shmem.c) */
Size
pcs_copy_recovery_shmem_size(void)
{
	return sizeof(PcsCopyRecoveryState);
}

/*
 * Set up the shared state, and enter the mode if the data directory is a
 * copy still being recovered (pcs_shmem.c).  Runs in the postmaster before
 * any other process, at its start and again after a crash of a process has
 * reset shared memory, so it sees the files as recovery will.
 */
void
pcs_copy_recovery_shmem_init(void)
{
	bool		found;
	struct stat st;
	bool		label;
	bool		marker;

	PcsCopyRecovery = ShmemInitStruct("pgstrata copy recovery",
									  sizeof(PcsCopyRecoveryState), &found);
	if (found)
		return;

	pg_atomic_init_u32(&PcsCopyRecovery->active, 0);
	pg_atomic_init_u32(&PcsCopyRecovery->consistent, 0);

	label = stat(BACKUP_LABEL_FILE, &st) == 0;
	marker = stat(PCS_COPY_RECOVERY_FILE, &st) == 0;
	if (!label && !marker)
		return;

	/* durable before recovery writes anything the mode protects */
	if (!marker)
	{
		int			fd;

		fd = OpenTransientFile(PCS_COPY_RECOVERY_FILE,
							   O_WRONLY | O_CREAT | O_EXCL | PG_BINARY);
		if (fd < 0)
			ereport(FATAL,
					(errcode_for_file_access(),
					 errmsg("could not create file \"%s\": %m",
							PCS_COPY_RECOVERY_FILE)));
		if (CloseTransientFile(fd) != 0)
			ereport(FATAL,
					(errcode_for_file_access(),
					 errmsg("could not close file \"%s\": %m",
							PCS_COPY_RECOVERY_FILE)));
		fsync_fname(PCS_COPY_RECOVERY_FILE, false);
		fsync_fname(".", true);
	}

	pg_atomic_write_u32(&PcsCopyRecovery->active, 1);
	ereport(LOG,
			(errmsg("compressed pages are written out of place until recovery from a copy is durable"),
			 errdetail("The data directory is a copy of a running cluster (\"%s\" or \"%s\" exists), whose compressed segments may hold map entries that share units.",
					   BACKUP_LABEL_FILE, PCS_COPY_RECOVERY_FILE)));
}

/*
 * Are compressed pages written out of place, with the units they leave
 * behind dropped, because the server recovers from a copy?  Read at every
 * write of a compressed page: one read of shared memory.
 */
bool
pcs_copy_recovery_active(void)
{
	return PcsCopyRecovery != NULL &&
		pg_atomic_read_u32(&PcsCopyRecovery->active) != 0;
}

/*
 * Redo has reached a consistent state (the startup process,
 * CheckRecoveryConsistency()): every full-page image from the time the
 * copy was being taken has been replayed, into buffers.
 */
void
pcs_copy_recovery_consistent(void)
{
	if (PcsCopyRecovery != NULL)
		pg_atomic_write_u32(&PcsCopyRecovery->consistent, 1);
}

/*
 * A checkpoint or restartpoint begins (CheckPointGuts(), before the buffers
 * are written).  If redo was consistent by now, or is over, the pages it
 * dirtied are all dirty at this moment, so this checkpoint writes them all,
 * out of place, and fsyncs them: once it has, the mode may end.
 */
void
pcs_copy_recovery_checkpoint_begin(int flags)
{
	checkpoint_ends_mode = pcs_copy_recovery_active() &&
		((flags & CHECKPOINT_END_OF_RECOVERY) != 0 ||
		 !RecoveryInProgress() ||
		 pg_atomic_read_u32(&PcsCopyRecovery->consistent) != 0);
}

/*
 * A checkpoint or restartpoint has written and fsynced the buffers
 * (CheckPointGuts()).  If it began late enough, no two entries on disk
 * share units any more: remove the file, durably, then write in place
 * again.  Should the removal fail, the mode simply lasts until a later
 * checkpoint manages it.
 */
void
pcs_copy_recovery_checkpoint_end(void)
{
	if (!checkpoint_ends_mode)
		return;
	checkpoint_ends_mode = false;

	if (durable_unlink(PCS_COPY_RECOVERY_FILE, LOG) != 0)
		return;
	pg_atomic_write_u32(&PcsCopyRecovery->active, 0);
	ereport(LOG,
			(errmsg("writes of compressed pages go in place again"),
			 errdetail("A checkpoint has made durable what recovery from a copy of a running cluster wrote.")));
}
