/*-------------------------------------------------------------------------
 *
 * pgstrata_tableam.h
 *	  Loading the table access method a partitioned table names
 *	  (pgstrata_tableam.c).
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * src/include/access/pgstrata_tableam.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSTRATA_TABLEAM_H
#define PGSTRATA_TABLEAM_H

extern void pgstrata_load_table_am(Oid amoid);

#endif							/* PGSTRATA_TABLEAM_H */
