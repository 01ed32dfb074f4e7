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

/* The first bytes of a segment, up to the end of its version field */
#define PCS_SPARSE_HEAD		12

/*
 * A file being written from a stream, for pcs_sparse_write(); zeroed when
 * the stream starts
 */
typedef struct PcsSparseFile
{
	off_t		offset;			/* bytes of the stream seen so far */
	bool		segment;		/* does it start with the pcs magic? */
	off_t		sparse_end;		/* end of the part that may stay sparse
								 * (pcs_copy_sparse_end()), if segment */
	char		head[PCS_SPARSE_HEAD];	/* the stream's first bytes */
} PcsSparseFile;

extern bool pcs_fd_is_segment(int fd, const char *path);
extern bool pcs_sparse_write(PcsSparseFile *state, int fd,
							 const char *path, const char *data, int len);
extern void pcs_sparse_finish(PcsSparseFile *state, int fd,
							  const char *path);
extern bool pcs_path_is_segment(const char *dir, const char *path);
#ifdef HAVE_COPY_FILE_RANGE
extern bool pcs_copy_file_range(int src_fd, int dest_fd, const char *src,
								const char *dest);
#endif
extern void pcs_copy_in_use_file(const char *old_pgdata,
								 const char *new_pgdata);

#endif							/* PCS_FILE_H */
