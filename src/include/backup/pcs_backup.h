/*-------------------------------------------------------------------------
 *
 * pcs_backup.h
 *	  Base backups of page-compressed (pcs) segments.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * src/include/backup/pcs_backup.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef PCS_BACKUP_H
#define PCS_BACKUP_H

extern bool pcs_backup_is_segment(const char *path);

#endif							/* PCS_BACKUP_H */
