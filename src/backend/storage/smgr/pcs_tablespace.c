/*-------------------------------------------------------------------------
 *
 * pcs_tablespace.c
 *	  Compressed tablespaces: the compression option of CREATE TABLESPACE,
 *	  the marker file that carries it to the storage manager, its WAL, and
 *	  the settings that protect compressed pages while they may exist.
 *
 * The storage manager cannot read pg_tablespace (the checkpointer and the
 * startup process have no catalog access), so CREATE TABLESPACE leaves the
 * settings in a marker file in the tablespace's version directory, and the
 * XLOG_TBLSPC_CREATE record carries them to standbys, which write the same
 * marker.  The settings are appended after the record's path, where a
 * server without pgstrata does not look.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/backend/storage/smgr/pcs_tablespace.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "access/reloptions.h"
#include "access/xlog.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "access/xlogutils.h"
#include "catalog/pg_tablespace_d.h"
#include "commands/defrem.h"
#include "commands/tablespace.h"
#include "common/relpath.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "storage/fd.h"
#include "storage/pcs.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"

/* What XLOG_TBLSPC_CREATE carries after the path */
typedef struct PcsTablespaceWal
{
	uint32		magic;			/* PCS_TABLESPACE_WAL_MAGIC */
	uint8		algorithm;		/* PcsAlgorithm */
	int8		level;
} PcsTablespaceWal;

#define PCS_TABLESPACE_WAL_MAGIC	0x50435331	/* "PCS1" */

/* Registered with XLogRegisterData, so it must outlive the call */
static PcsTablespaceWal pcs_wal_data;

/* Shared state of the cluster's compressed storage */
typedef struct PcsClusterState
{
	/* PCS_IN_USE_FILE is durable: compressed forks may exist */
	bool		in_use;
} PcsClusterState;

static PcsClusterState *PcsCluster = NULL;

/*
 * pcs_debug_force_compression: a developer option that creates every new
 * relation fork compressed, whatever its tablespace, so that upstream's own
 * test suites run on compressed storage (test/upstream/
 * run-upstream-compressed.sh).  It decides only how a fork is created: once
 * created, a fork is recognised from its own first bytes, so compressed and
 * plain forks mix freely in any tablespace, and turning the option off (or
 * a standby or a crash recovery that runs without it) leaves existing
 * compressed forks compressed and readable.
 */
int			pcs_debug_force_compression = PCS_ALGO_NONE;

const struct config_enum_entry pcs_force_compression_options[] = {
	{"off", PCS_ALGO_NONE, false},
#ifdef USE_ZSTD
	{"zstd", PCS_ALGO_ZSTD, false},
#endif
#ifdef USE_LZ4
	{"lz4", PCS_ALGO_LZ4, false},
#endif
	{"none", PCS_ALGO_NONE, true},
	{"false", PCS_ALGO_NONE, true},
	{"no", PCS_ALGO_NONE, true},
	{"0", PCS_ALGO_NONE, true},
	{NULL, 0, false}
};

/* Parse a value of the compression option; false if it is not one */
static bool
pcs_parse_compression(const char *value, PcsAlgorithm *algorithm)
{
	bool		on;

	if (pcs_algorithm_from_name(value, algorithm))
		return true;
	if (parse_bool(value, &on))
	{
		*algorithm = on ? PCS_ALGO_ZSTD : PCS_ALGO_NONE;
		return true;
	}
	return false;
}

/* Validator of the compression reloption */
void
pcs_validate_compression_option(const char *value)
{
	PcsAlgorithm algorithm;

	if (value == NULL || !pcs_parse_compression(value, &algorithm))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for option \"compression\": \"%s\"",
						value ? value : ""),
				 errdetail("Valid values are \"zstd\", \"lz4\", \"none\", true (zstd) and false (none).")));
#ifndef USE_ZSTD
	if (algorithm == PCS_ALGO_ZSTD)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("compression method zstd not supported"),
				 errdetail("This functionality requires the server to be built with zstd support.")));
#endif
#ifndef USE_LZ4
	if (algorithm == PCS_ALGO_LZ4)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("compression method lz4 not supported"),
				 errdetail("This functionality requires the server to be built with lz4 support.")));
#endif
}

/*
 * Check the options of a new tablespace and return its compression
 * settings.  A compressed tablespace needs every page write covered by a
 * full-page image since the last checkpoint (README.pcs), so it requires
 * full_page_writes and WAL-logged hint bits.
 */
void
pcs_check_tablespace_options(Datum options, PcsAlgorithm *algorithm,
							 int *level)
{
	TableSpaceOpts *opts = (TableSpaceOpts *) tablespace_reloptions(options, false);
	bool		level_given = false;
	List	   *list = untransformRelOptions(options);
	ListCell   *lc;

	*algorithm = PCS_ALGO_NONE;
	*level = PCS_ZSTD_DEFAULT_LEVEL;
	if (opts == NULL)
		return;

	if (opts->compression_offset != 0)
		(void) pcs_parse_compression((char *) opts + opts->compression_offset,
									 algorithm);
	*level = opts->compression_level;

	foreach(lc, list)
	{
		if (strcmp(((DefElem *) lfirst(lc))->defname, "compression_level") == 0)
			level_given = true;
	}
	if (level_given && *algorithm != PCS_ALGO_ZSTD)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"compression_level\" requires compression = 'zstd'")));

	if (*algorithm == PCS_ALGO_NONE)
		return;

	/*
	 * pg_upgrade runs the new cluster with full_page_writes off while it
	 * restores the old cluster's tablespaces; nothing it writes then needs to
	 * survive a crash (a failed upgrade starts again from the old cluster),
	 * and once it has finished the server keeps both settings in effect
	 * (pcs_enforce_startup_settings()).
	 */
	if (IsBinaryUpgrade)
		return;

	if (!fullPageWrites)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("compressed tablespaces require full_page_writes"),
				 errdetail("A compressed page is rewritten as a whole; only a full-page image in WAL can repair one torn by a crash."),
				 errhint("Set full_page_writes = on.")));
	if (!XLogHintBitIsNeeded())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("compressed tablespaces require wal_log_hints or data checksums"),
				 errdetail("A page whose only change is a hint bit is rewritten compressed as a whole, so that change must be covered by a full-page image in WAL too."),
				 errhint("Set wal_log_hints = on in postgresql.conf and restart the server.")));
}

/* The path of a tablespace's marker file (MAXPGPATH bytes) */
static void
pcs_marker_path(char *path, Oid spcOid)
{
	snprintf(path, MAXPGPATH, "pg_tblspc/%u/%s/%s", spcOid,
			 TABLESPACE_VERSION_DIRECTORY, PCS_MARKER_FILE);
}

/*
 * Read the compression settings of a tablespace from its marker file.
 * Returns false when the tablespace has none (it is not compressed).
 */
bool
pcs_tablespace_settings(Oid spcOid, PcsAlgorithm *algorithm, int *level)
{
	char		path[MAXPGPATH];
	char		buf[256];
	char		name[64];
	FILE	   *file;
	size_t		n;

	if (spcOid == DEFAULTTABLESPACE_OID || spcOid == GLOBALTABLESPACE_OID)
		return false;

	pcs_marker_path(path, spcOid);
	file = AllocateFile(path, "r");
	if (file == NULL)
	{
		if (errno == ENOENT)
			return false;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
	}
	n = fread(buf, 1, sizeof(buf) - 1, file);
	FreeFile(file);
	buf[n] = '\0';

	if (sscanf(buf, "algorithm=%63s level=%d", name, level) != 2 ||
		!pcs_algorithm_from_name(name, algorithm) ||
		*algorithm == PCS_ALGO_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid compression marker file \"%s\"", path)));
	return true;
}

/* Answers of pcs_tablespace_is_compressed() kept per process */
#define PCS_SPC_CACHE_SIZE 16
#define PCS_SPC_CACHE_SECONDS 60

typedef struct PcsSpcAnswer
{
	Oid			spcOid;
	bool		compressed;
	pg_time_t	asked;
} PcsSpcAnswer;

/*
 * Does the tablespace have a compression marker?  For the background
 * writer, which asks about each buffer it may clean ahead of the clock
 * sweep (BgBufferSync()): the answer is kept for a minute, the marker is
 * looked at with stat(), and nothing here raises an error.  Only a
 * heuristic rests on it, so a stale answer costs at most a buffer written
 * earlier or later than it could have been.
 */
bool
pcs_tablespace_is_compressed(Oid spcOid)
{
	static PcsSpcAnswer answers[PCS_SPC_CACHE_SIZE];
	static int	next_answer;
	pg_time_t	now;
	char		path[MAXPGPATH];
	struct stat st;
	PcsSpcAnswer *answer;

	if (!OidIsValid(spcOid) || spcOid == DEFAULTTABLESPACE_OID ||
		spcOid == GLOBALTABLESPACE_OID)
		return false;

	now = (pg_time_t) time(NULL);
	for (int i = 0; i < PCS_SPC_CACHE_SIZE; i++)
	{
		if (answers[i].spcOid == spcOid &&
			now - answers[i].asked < PCS_SPC_CACHE_SECONDS)
			return answers[i].compressed;
	}

	pcs_marker_path(path, spcOid);
	answer = &answers[next_answer];
	next_answer = (next_answer + 1) % PCS_SPC_CACHE_SIZE;
	answer->spcOid = spcOid;
	answer->compressed = (stat(path, &st) == 0);
	answer->asked = now;
	return answer->compressed;
}

/*
 * Write a small file with text, and make it and its directory entry
 * durable before returning: the marker of a compressed tablespace and the
 * note that compressed storage may exist decide what later writes do.
 */
static void
pcs_write_durable_file(const char *path, const char *dir, const char *text)
{
	int			len = strlen(text);
	int			fd;

	fd = OpenTransientFile(path, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", path)));
	errno = 0;
	if (write(fd, text, len) != len)
	{
		if (errno == 0)
			errno = ENOSPC;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", path)));
	}
	if (pg_fsync(fd) != 0)
		ereport(data_sync_elevel(ERROR),
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", path)));
	CloseTransientFile(fd);
	fsync_fname(dir, true);
}

/* Write the marker file of a new compressed tablespace (also in redo) */
void
pcs_write_tablespace_marker(const char *versiondir, PcsAlgorithm algorithm,
							int level)
{
	char		path[MAXPGPATH];
	char		buf[64];

	snprintf(path, sizeof(path), "%s/%s", versiondir, PCS_MARKER_FILE);
	snprintf(buf, sizeof(buf), "algorithm=%s level=%d\n",
			 pcs_algorithm_name(algorithm), level);
	/* Relations created next decide their format from this file. */
	pcs_write_durable_file(path, versiondir, buf);
}

/*
 * The settings pcs_debug_force_compression gives a new fork of a tablespace
 * without a marker; false if the option is off.  zstd gets its default
 * level.
 */
bool
pcs_forced_settings(PcsAlgorithm *algorithm, int *level)
{
	if (pcs_debug_force_compression == PCS_ALGO_NONE)
		return false;
	*algorithm = (PcsAlgorithm) pcs_debug_force_compression;
	*level = PCS_ZSTD_DEFAULT_LEVEL;
	return true;
}

/* Path of a tablespace's version directory, palloc'd */
static char *
pcs_version_dir(Oid tablespaceoid)
{
	return psprintf("pg_tblspc/%u/%s", tablespaceoid,
					TABLESPACE_VERSION_DIRECTORY);
}

/* Leave the marker of a new compressed tablespace, after its directories */
void
pcs_create_tablespace(Oid tablespaceoid, PcsAlgorithm algorithm, int level)
{
	char	   *dir;

	if (algorithm == PCS_ALGO_NONE)
		return;
	pcs_note_compressed_storage();
	dir = pcs_version_dir(tablespaceoid);
	pcs_write_tablespace_marker(dir, algorithm, level);
	/* space for writing back its pages on a full disk (pcs_reserve.c) */
	pcs_reserve_fill(dir, InRecovery ? LOG : WARNING);
	pfree(dir);
}

/* Append the compression settings to XLOG_TBLSPC_CREATE being assembled */
void
pcs_log_tablespace(PcsAlgorithm algorithm, int level)
{
	if (algorithm == PCS_ALGO_NONE)
		return;
	pcs_wal_data.magic = PCS_TABLESPACE_WAL_MAGIC;
	pcs_wal_data.algorithm = (uint8) algorithm;
	pcs_wal_data.level = (int8) level;
	XLogRegisterData((char *) &pcs_wal_data, sizeof(pcs_wal_data));
}

/* Replay: write the marker if XLOG_TBLSPC_CREATE carries settings */
void
pcs_redo_tablespace(XLogReaderState *record, Oid tablespaceoid)
{
	xl_tblspc_create_rec *xlrec = (xl_tblspc_create_rec *) XLogRecGetData(record);
	Size		used = offsetof(xl_tblspc_create_rec, ts_path) +
		strlen(xlrec->ts_path) + 1;
	PcsTablespaceWal wal;

	if (XLogRecGetDataLen(record) < used + sizeof(wal))
		return;
	memcpy(&wal, XLogRecGetData(record) + used, sizeof(wal));
	if (wal.magic != PCS_TABLESPACE_WAL_MAGIC)
		return;
	pcs_create_tablespace(tablespaceoid, (PcsAlgorithm) wal.algorithm,
						  wal.level);
}

/*
 * Remove the marker of a tablespace being dropped (no error in redo), once
 * nothing else is left in its version directory; the reserve went first
 * (pcs_reserve_remove())
 */
void
pcs_remove_tablespace_marker(const char *versiondir, bool redo)
{
	char	   *path = psprintf("%s/%s", versiondir, PCS_MARKER_FILE);

	if (unlink(path) < 0 && errno != ENOENT)
		ereport(redo ? LOG : ERROR,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\": %m", path)));
	pfree(path);
}

/* ALTER TABLESPACE may not change or reset the compression settings */
void
pcs_check_alter_tablespace(const char *name, List *options)
{
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *def = (DefElem *) lfirst(lc);

		if (strcmp(def->defname, "compression") == 0 ||
			strcmp(def->defname, "compression_level") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot change option \"%s\" of tablespace \"%s\"",
							def->defname, name),
					 errdetail("The compression of a tablespace is fixed when it is created."),
					 errhint("Create a tablespace with the compression you want and move relations to it with ALTER TABLE ... SET TABLESPACE.")));
	}
}

/*
 * Does any tablespace of the cluster have the compression marker?  The
 * marker files answer it without catalog access.  Only the start of a
 * cluster made before PCS_IN_USE_FILE existed needs the answer.
 */
bool
pcs_compressed_tablespaces_exist(void)
{
	DIR		   *dir;
	struct dirent *de;
	bool		found = false;

	dir = AllocateDir("pg_tblspc");
	while (!found && (de = ReadDirExtended(dir, "pg_tblspc", LOG)) != NULL)
	{
		char		path[MAXPGPATH];
		struct stat st;

		if (strspn(de->d_name, "0123456789") != strlen(de->d_name))
			continue;
		snprintf(path, sizeof(path), "pg_tblspc/%s/%s/%s", de->d_name,
				 TABLESPACE_VERSION_DIRECTORY, PCS_MARKER_FILE);
		if (stat(path, &st) == 0)
			found = true;
	}
	FreeDir(dir);
	return found;
}

/*
 * Is PCS_IN_USE_FILE in the data directory?  A file that cannot be looked
 * at for another reason than its absence counts as there: the answer only
 * turns protections on.
 */
static bool
pcs_in_use_file_exists(void)
{
	struct stat st;

	return stat(PCS_IN_USE_FILE, &st) == 0 || errno != ENOENT;
}

/* Size of the in-use flag in shared memory (pcs_shmem.c) */
Size
pcs_in_use_shmem_size(void)
{
	return sizeof(PcsClusterState);
}

/*
 * Set up the in-use flag from the data directory.  The postmaster makes it
 * (again after a crash), before any process may set a hint bit.
 */
void
pcs_in_use_shmem_init(void)
{
	bool		found;

	PcsCluster = ShmemInitStruct("pgstrata compressed storage",
								 sizeof(PcsClusterState), &found);
	if (!found)
		PcsCluster->in_use = pcs_in_use_file_exists();
}

/*
 * May this cluster hold compressed forks?  XLogHintBitIsNeeded() asks it
 * once data checksums and wal_log_hints have said no, and the background
 * writer before each pass, so the usual answer is a read of shared memory.
 * Before shared memory exists (the postmaster's start, single-user mode)
 * the file in the data directory answers.
 */
bool
pcs_compressed_forks_may_exist(void)
{
	if (PcsCluster != NULL)
		return PcsCluster->in_use;
	return pcs_in_use_file_exists();
}

/*
 * Record, durably, that this cluster may hold compressed forks from now on.
 * Called before a compressed tablespace's marker and before a compressed
 * fork is created, in normal running and in redo, so that the file is on
 * disk before anything compressed is: a crash, a base backup or pg_rewind
 * can then never leave compressed files without it.  From the moment the
 * shared flag is set, every process WAL-logs hint-bit changes, and a
 * standby leaves pages dirtied only by hint bits clean instead
 * (MarkBufferDirtyHint()).  full_page_writes is on already where this is
 * reached through CREATE TABLESPACE, which insists on it; a standby puts
 * it in effect at promotion, and the checkpointer at its next reload.
 *
 * Nothing removes the file: relations keep their format when they are
 * copied verbatim elsewhere (ALTER DATABASE ... SET TABLESPACE, CREATE
 * DATABASE ... STRATEGY FILE_COPY), so dropping the last compressed
 * tablespace does not prove that no compressed fork is left.
 */
void
pcs_note_compressed_storage(void)
{
	static const char text[] =
		"This cluster may hold compressed relation forks (pgstrata).\n";

	if (pcs_compressed_forks_may_exist())
		return;

	pcs_write_durable_file(PCS_IN_USE_FILE, ".", text);

	if (PcsCluster != NULL)
	{
		PcsCluster->in_use = true;
		/* seen by others before the compressed fork can be (see above) */
		pg_memory_barrier();
	}
}

/*
 * Settle, at server start, what protects compressed pages, before any
 * child process starts: a cluster made before PCS_IN_USE_FILE existed gets
 * it if it has compressed tablespaces, and wal_log_hints is turned on when
 * compressed forks may exist and nothing else WAL-logs hint bits.  The
 * setting can have been dropped from postgresql.conf, or never set on a
 * standby; a page whose only change is a hint bit would then be rewritten
 * in place with no full-page image to repair it after a torn write.
 * Overriding the setting, rather than refusing to start, keeps the server
 * available, and the control file then records what is really in effect
 * (pg_rewind looks).
 */
void
pcs_enforce_startup_settings(void)
{
	if (!pcs_in_use_file_exists() && pcs_compressed_tablespaces_exist())
		pcs_note_compressed_storage();

	/*
	 * Not XLogHintBitIsNeeded(), which says yes whenever compressed forks may
	 * exist: the question is whether the settings alone log hint bits.
	 */
	if (DataChecksumsEnabled() || wal_log_hints ||
		!pcs_compressed_forks_may_exist())
		return;

	ereport(WARNING,
			(errmsg("wal_log_hints is turned on because compressed relations may exist"),
			 errdetail("A compressed page whose only change is a hint bit is rewritten as a whole; only a full-page image in WAL protects it from a torn write."),
			 errhint("Set wal_log_hints = on in postgresql.conf.")));
	SetConfigOption("wal_log_hints", "on", PGC_POSTMASTER, PGC_S_OVERRIDE);
}

/*
 * The value of full_page_writes that WAL insertion must follow, given the
 * configured one: on whenever compressed forks may exist, for the reason
 * given at pcs_enforce_startup_settings().  Called by UpdateFullPageWrites()
 * outside its critical section.
 */
bool
pcs_full_page_writes(bool configured)
{
	if (configured || !pcs_compressed_forks_may_exist())
		return configured;

	ereport(WARNING,
			(errmsg("full_page_writes = off is ignored because compressed relations may exist"),
			 errdetail("A compressed page is rewritten as a whole; only a full-page image in WAL can repair one torn by a crash."),
			 errhint("Leave full_page_writes on; a cluster that has held compressed relations keeps it on.")));
	return true;
}
