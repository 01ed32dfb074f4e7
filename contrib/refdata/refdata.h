/*-------------------------------------------------------------------------
 *
 * refdata.h
 *	  Shared declarations of the refdata table access method.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * contrib/refdata/refdata.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef REFDATA_H
#define REFDATA_H

#include "access/tableam.h"
#include "utils/rel.h"

/* The heap routine refdata wraps; set by the handler on first use. */
extern const TableAmRoutine *refdata_heap;

/* refdata_am.c */
extern bool refdata_is_refdata_relid(Oid relid);
extern bool refdata_is_refdata_rel(Relation rel);

/* refdata_lock.c */
extern void refdata_lock_for_write(Relation rel);
extern TM_Result refdata_tuple_lock(Relation rel, ItemPointer tid,
									Snapshot snapshot, TupleTableSlot *slot,
									CommandId cid, LockTupleMode mode,
									LockWaitPolicy wait_policy, uint8 flags,
									TM_FailureData *tmfd);
extern void refdata_install_hooks(void);
extern void refdata_forget_trees(void);

#endif							/* REFDATA_H */
