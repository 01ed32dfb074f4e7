/*-------------------------------------------------------------------------
 *
 * heap_storage.h
 *	  Which table access methods store heap pages, for the tools that read
 *	  pages themselves (amcheck's verify_heapam, pg_amcheck).
 *
 * Such tools used to accept heap only.  pgstrata's refdata access method
 * stores heap pages too, written and read by heap's own code (it changes
 * only locking), so there is no reason to refuse it.  The backend decides
 * from the access method's callbacks; frontend programs, which can only
 * look at the catalogs, go by the names of the access methods pgstrata
 * ships.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * src/include/access/heap_storage.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef HEAP_STORAGE_H
#define HEAP_STORAGE_H

/*
 * A SQL subquery giving the oids of the table access methods a frontend
 * program may treat as storing heap pages: heap, and refdata where it is
 * installed.  The server still checks each relation
 * (table_am_stores_heap_pages), so an unrelated access method that happens
 * to be called refdata is refused there, not misread.
 */
#define HEAP_STORAGE_RELAMS \
	"(SELECT a.oid FROM pg_catalog.pg_am a " \
	"WHERE a.amtype = 't' AND a.amname IN ('heap', 'refdata'))"

#ifndef FRONTEND

#include "access/tableam.h"

/*
 * Does the table access method routine store heap pages?  Heap does; so
 * does any access method that creates, reads and vacuums its relations with
 * heap's own callbacks and keeps heap's tuple slots (refdata wraps only
 * heap's locking and modification callbacks).
 */
static inline bool
table_am_stores_heap_pages(const TableAmRoutine *routine)
{
	const TableAmRoutine *heap = GetHeapamTableAmRoutine();

	if (routine == heap)
		return true;
	return routine != NULL &&
		routine->slot_callbacks == heap->slot_callbacks &&
		routine->relation_set_new_filelocator == heap->relation_set_new_filelocator &&
		routine->scan_getnextslot == heap->scan_getnextslot &&
		routine->tuple_fetch_row_version == heap->tuple_fetch_row_version &&
		routine->relation_vacuum == heap->relation_vacuum;
}

#endif							/* FRONTEND */

#endif							/* HEAP_STORAGE_H */
