/*-------------------------------------------------------------------------
 *
 * pcs_dict.h
 *	  Compression dictionaries of compressed segments: what pcs_dict.c
 *	  offers block I/O (pcs.c) and asynchronous reads (pcs_aio.c).
 *
 * Only the files of the storage manager include it, through
 * storage/pcs_internal.h.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * src/include/storage/pcs_dict.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PCS_DICT_H
#define PCS_DICT_H

#include "storage/pcs_segment.h"

/* dictionaries and the sample that trains one (pcs_dict.c) */
extern PGDLLIMPORT int pcs_dict_cache_limit;
extern void pcs_seg_free_dictionaries(PcsSegment *seg);
extern size_t pcs_dict_memory(void);
extern const PcsDict *pcs_seg_current_dictionary(PcsSegment *seg, int *number);
extern PcsProblem pcs_seg_dictionary(PcsSegment *seg, int number,
									 const PcsDict **dict);
extern PcsProblem pcs_seg_dictionary_bytes(PcsSegment *seg, int number,
										   PcsDictRecord *record,
										   char **bytes);
extern void pcs_seg_sample(SMgrRelation reln, ForkNumber forknum,
						   PcsSegment *seg, BlockNumber segblock,
						   const char *page);

#endif							/* PCS_DICT_H */
