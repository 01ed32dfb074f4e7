/*-------------------------------------------------------------------------
 *
 * pgstrata.h
 *	  Name and version of the pgstrata patch set.
 *
 * The server reports them next to the PostgreSQL version, so that a build
 * carrying the patch set can be told from a stock build at a glance:
 * "postgres --version" and SELECT version().  server_version and
 * server_version_num stay those of the PostgreSQL release, so that clients
 * that parse them are not disturbed.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * src/include/pgstrata.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSTRATA_H
#define PGSTRATA_H

#define PGSTRATA_NAME		"pgstrata"
#define PGSTRATA_VERSION	"0.1"

/* Appended to the PostgreSQL version wherever the server names itself */
#define PGSTRATA_VERSION_TAG " (" PGSTRATA_NAME " " PGSTRATA_VERSION ")"

#endif							/* PGSTRATA_H */
