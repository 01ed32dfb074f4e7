/*-------------------------------------------------------------------------
 *
 * pcs_file.h
 *	  Recognising page-compressed (pcs) segment files in frontend programs.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * src/include/fe_utils/pcs_file.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PCS_FILE_H
#define PCS_FILE_H

extern bool pcs_fd_is_segment(int fd, const char *path);
extern bool pcs_path_is_segment(const char *dir, const char *path);

#endif							/* PCS_FILE_H */
