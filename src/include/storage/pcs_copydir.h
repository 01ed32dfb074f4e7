/*-------------------------------------------------------------------------
 *
 * pcs_copydir.h
 *	  Verbatim copies of page-compressed (pcs) segments that stay sparse.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * src/include/storage/pcs_copydir.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PCS_COPYDIR_H
#define PCS_COPYDIR_H

extern void pcs_copy_write_chunk(int dstfd, const char *tofile,
								 const char *buf, int nbytes, off_t offset);
extern void pcs_copy_finish(int dstfd, const char *tofile, off_t length);
#if PG_VERSION_NUM >= 180000 && defined(HAVE_COPY_FILE_RANGE)
extern bool pcs_clone_file(const char *fromfile, const char *tofile);
#endif

#endif							/* PCS_COPYDIR_H */
