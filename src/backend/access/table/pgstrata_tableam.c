/*-------------------------------------------------------------------------
 *
 * pgstrata_tableam.c
 *	  Loading the table access method a partitioned table names, when the
 *	  partitioned table is opened.
 *
 * A table access method whose library installs hooks (refdata's take the
 * write lock of a partitioned tree at parse analysis, before tuple routing
 * locks any partition) needs its library loaded before the first statement
 * that writes one of its tables is analysed.  Opening a table with storage
 * loads it, since its relcache entry calls the access method's handler;
 * opening a partitioned table does not: PostgreSQL keeps the access method
 * a partitioned table names only as the default of its new partitions.
 * So a session whose first write goes to a partitioned tree loaded the
 * library only when tuple routing opened a partition, too late for that
 * statement, unless the library was preloaded.  Calling the handler of the
 * access method a partitioned table names when its relcache entry is
 * built loads the library as the parser opens the table, in time.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/backend/access/table/pgstrata_tableam.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/pgstrata_tableam.h"
#include "access/tableam.h"
#include "catalog/pg_am.h"
#include "utils/syscache.h"

/*
 * Load the library of table access method amoid, which a partitioned table
 * names, by calling its handler (which also checks what it returns), as
 * the relcache entry of a table with storage does.  Heap, built in, has
 * nothing to load.
 */
void
pgstrata_load_table_am(Oid amoid)
{
	HeapTuple	tuple;
	Oid			amhandler;

	if (amoid == HEAP_TABLE_AM_OID)
		return;
	tuple = SearchSysCache1(AMOID, ObjectIdGetDatum(amoid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for access method %u", amoid);
	amhandler = ((Form_pg_am) GETSTRUCT(tuple))->amhandler;
	ReleaseSysCache(tuple);
	(void) GetTableAmRoutine(amhandler);
}
