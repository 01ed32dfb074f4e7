/*-------------------------------------------------------------------------
 *
 * pcs_checksums.c
 *	  pg_checksums for page-compressed (pcs) segments: verify, or set, the
 *	  data checksum of every page stored in a compressed segment.
 *
 * A compressed segment is not a sequence of 8 kB blocks (README.pcs in
 * src/backend/storage/smgr): a header, a map with one entry per block, and
 * page images in units of 128 bytes (512 in format 2), and the segment's
 * compression dictionaries, which some images are compressed with.  So
 * each page is found through its map entry, its image checked against the
 * entry's CRC32C, decompressed, and the page checksum computed on the page
 * the server would see.  Damaged headers, directory slots, entries and
 * images count as bad blocks, like wrong checksums.
 *
 * Where the entries lie depends on the format version: a segment's first
 * PCS_HEADER_ENTRIES blocks have theirs in the header (version 4 on); the
 * others in a map of fixed place between the header and the data area
 * (versions 2 to 4), or in map pages of the data area that the directory
 * locates (version 5).  The directory lies in the data area too, where the
 * header's two directory words say; it is read once per file
 * (PcsMapPages).  The units of the directory and of the map pages are
 * used, not free space.  Both lie within the file of a cluster shut down
 * cleanly: a crash may leave a directory word or slot written before the
 * file grew to hold what it names, but redo gives it storage again, so one
 * past the end of the file is damage, as for the server.
 *
 * Enabling checksums rewrites the image of every page whose checksum
 * changes, recompressed with the segment's own algorithm and level.  Each
 * new image goes to fresh units past the end of the file, and the file is
 * made durable before any map entry points there.  Whenever pg_checksums
 * stops (an error, a signal, a crash), every entry on disk points to a
 * complete image with a matching CRC: the old one or the new one, and
 * either is the same page, with or without its checksum.  Data checksums
 * are switched on in pg_control only after every file is done, as for
 * plain files.  The old images become garbage (the pgstrata extension's
 * garbage_bytes), until the relation is rewritten (VACUUM FULL); a server
 * started afterwards allocates above the file's end, as after any restart.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * IDENTIFICATION
 *	  src/bin/pg_checksums/pcs_checksums.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <sys/stat.h>
#include <unistd.h>

#include "common/logging.h"
#include "pcs_checksums.h"
#include "storage/bufpage.h"
#include "storage/checksum.h"
#include "storage/pcs_format.h"

/* Read len bytes at offset; returns the bytes read, fails on an error */
static ssize_t
pcs_read_at(int fd, const char *fn, void *buf, size_t len, off_t offset)
{
	ssize_t		r = pg_pread(fd, buf, len, offset);

	if (r < 0)
		pg_fatal("could not read file \"%s\": %m", fn);
	return r;
}

/* Write len bytes at offset, or fail */
static void
pcs_write_at(int fd, const char *fn, const void *buf, size_t len,
			 off_t offset)
{
	ssize_t		w = pg_pwrite(fd, buf, len, offset);

	if (w != (ssize_t) len)
	{
		if (w < 0)
			pg_fatal("could not write file \"%s\": %m", fn);
		pg_fatal("could not write file \"%s\": wrote %zd of %zu",
				 fn, w, len);
	}
}

/*
 * Where the pages of the map of a segment of version 5 lie, as its
 * directory says, and which of them pg_checksums changed
 */
typedef struct PcsMapPages
{
	bool		present[PCS_MAP_PAGES]; /* the slot locates a page */
	uint32		unit[PCS_MAP_PAGES];	/* its first unit, if present */
	bool		dirty[PCS_MAP_PAGES];	/* entries of it were rewritten */
} PcsMapPages;

/*
 * Dictionary number of segment segmentno (header as read from it), prepared
 * into dicts[number] at its first use; PCS_SOUND, or what is wrong with it.
 */
static PcsProblem
pcs_load_dictionary(int fd, const char *fn, const PcsHeader *header,
					int segmentno, int number, uint32 unit_limit,
					PcsDict **dicts)
{
	const PcsDictRecord *record = &header->dictionaries.records[number - 1];
	PcsProblem	problem;
	char	   *bytes;

	if (dicts[number] != NULL)
		return PCS_SOUND;
	if ((header->flags & PCS_HEADER_DICTIONARIES) == 0 ||
		pcs_dict_record_is_unused(record))
		return PCS_IMAGE_NO_DICTIONARY;
	problem = pcs_dict_record_check(header, segmentno, number, record,
									header->unit_shift);
	if (problem == PCS_SOUND &&
		(uint64) record->first_unit +
		pcs_units_for(record->bytes, header->unit_shift) > unit_limit)
		problem = PCS_DICTIONARY_BAD_RECORD;
	if (problem != PCS_SOUND)
		return problem;
	bytes = pg_malloc(record->bytes);
	if (pcs_read_at(fd, fn, bytes, record->bytes,
					pcs_unit_offset(header, record->first_unit)) != record->bytes ||
		pcs_data_crc(bytes, record->bytes) != record->data_crc)
		problem = PCS_DICTIONARY_BAD_CRC;
	else if ((dicts[number] = pcs_dict_prepare(header->algorithm, header->level,
											   bytes, record->bytes)) == NULL)
		problem = PCS_IMAGE_DICTIONARY_FAILED;
	pg_free(bytes);
	return problem;
}

/*
 * Read the page of one map entry into page, with the segment's dictionaries
 * (dicts, loaded as needed); PCS_SOUND if it is sound, else what is wrong
 * with it.
 */
static PcsProblem
pcs_read_page(int fd, const char *fn, const PcsHeader *header,
			  int segmentno, const PcsMapEntry *entry, BlockNumber segblock,
			  uint32 unit_limit, char *page, PcsDict **dicts)
{
	PGAlignedBlock image;
	PcsProblem	problem;
	int			number = pcs_entry_dictionary(entry->flags);

	problem = pcs_entry_check(entry, segblock, unit_limit, header->unit_shift);
	if (problem != PCS_SOUND)
		return problem;
	if (pcs_read_at(fd, fn, image.data, entry->stored,
					pcs_unit_offset(header, entry->first_unit)) != entry->stored)
		return PCS_IMAGE_CUT_SHORT;
	if (pcs_data_crc(image.data, entry->stored) != entry->data_crc)
		return PCS_IMAGE_BAD_CRC;
	if (number != 0)
	{
		problem = pcs_load_dictionary(fd, fn, header, segmentno, number,
									  unit_limit, dicts);
		if (problem != PCS_SOUND)
			return problem;
	}
	return pcs_decode_image(header->algorithm, entry->flags, image.data,
							entry->stored, page, number != 0 ? dicts[number] : NULL);
}

/*
 * Where the directory of segment segmentno, of version 5, lies, as the
 * server's pcs_directory_lookup() decides it from the header's two
 * directory words: a sound copy that names a unit is taken, whichever it
 * is (the copies are written one after the other and change only from
 * zeros, so a crash may leave the second one zero); two sound zeros mean
 * no directory, hence no map page; anything else leaves the directory, and
 * so every map page, unknown: PCS_DIRECTORY_BAD_LOCATION.
 */
static PcsProblem
pcs_locate_directory(PcsHeader *header, int segmentno, bool *present,
					 uint32 *unit)
{
	bool		damaged = false;

	for (int copy = 0; copy < 2; copy++)
	{
		uint64		word = pg_atomic_read_u64(pcs_header_directory(header,
																   copy));

		if (pcs_directory_location_decode(header, segmentno, copy, word,
										  present, unit) != PCS_SOUND)
			damaged = true;
		else if (*present)
			return PCS_SOUND;
	}
	*present = false;
	*unit = 0;
	return damaged ? PCS_DIRECTORY_BAD_LOCATION : PCS_SOUND;
}

/*
 * Read the directory of segment segmentno, of version 5, into pages: once
 * per file.  A directory that cannot be located is damage of the segment:
 * none of its map pages can be found, nor the units they take.  It is
 * reported, every page taken for one without entries, and counted in
 * *bad; when enabling it stops the program before anything of the file is
 * changed, as a damaged header does.  Every slot is decoded, not only
 * those of pages that hold entries of blocks below the block count: pages
 * are never freed, so a truncated segment keeps the pages of its former
 * blocks, and their units are in use too.  A slot that fails its check is
 * damage too, of its page alone, and handled the same way.
 *
 * So is a directory or map page that does not lie wholly below unit_limit,
 * within the file: pg_checksums runs only on a cluster shut down cleanly,
 * and once a server has recovered from a crash that left one past the end
 * of the file, redo has given it storage; one past the end is a file cut
 * short, which the server reports as an ERROR when it reads the page.
 * Returns the unit past the last one of the directory and of any map page
 * (0 if there is no directory).
 */
static uint32
pcs_read_directory(int fd, const char *fn, PcsHeader *header,
				   int segmentno, bool enable, uint32 unit_limit,
				   PcsMapPages *pages, int64 *bad)
{
	PcsDirectory *directory;
	int			page_units = pcs_map_page_units(header->unit_shift);
	uint32		map_end;
	uint32		directory_unit;
	bool		present;
	PcsProblem	problem;

	memset(pages, 0, sizeof(PcsMapPages));
	problem = pcs_locate_directory(header, segmentno, &present,
								   &directory_unit);
	if (problem != PCS_SOUND)
	{
		if (enable)
			pg_fatal("cannot enable checksums in file \"%s\": invalid map directory location: %s",
					 fn, _(pcs_problem_message(problem)));
		pg_log_error("invalid map directory location in file \"%s\", map pages of blocks %u to %u: %s",
					 fn, pcs_header_entries(header), RELSEG_SIZE - 1,
					 _(pcs_problem_message(problem)));
		(*bad)++;
		return 0;
	}
	if (!present)
		return 0;
	map_end = directory_unit + pcs_directory_units(header->unit_shift);
	if (map_end > unit_limit)
	{
		if (enable)
			pg_fatal("cannot enable checksums in file \"%s\": the map directory at unit %u lies past the end of the file",
					 fn, directory_unit);
		pg_log_error("map directory past the end of file \"%s\", map pages of blocks %u to %u: it begins at unit %u",
					 fn, pcs_header_entries(header), RELSEG_SIZE - 1,
					 directory_unit);
		(*bad)++;
		return map_end;
	}

	directory = pg_malloc0(sizeof(PcsDirectory));
	(void) pcs_read_at(fd, fn, directory, sizeof(PcsDirectory),
					   pcs_unit_offset(header, directory_unit));
	for (int k = 0; k < PCS_MAP_PAGES; k++)
	{
		BlockNumber first = (BlockNumber) k * PCS_MAP_PAGE_ENTRIES;
		BlockNumber last = Min(first + PCS_MAP_PAGE_ENTRIES,
							   RELSEG_SIZE) - 1;

		problem = pcs_directory_decode(header, segmentno, k,
									   directory->slots[k],
									   &pages->present[k], &pages->unit[k]);
		if (problem != PCS_SOUND)
		{
			if (enable)
				pg_fatal("cannot enable checksums in file \"%s\": invalid directory slot of the map page of blocks %u to %u: %s",
						 fn, first, last, _(pcs_problem_message(problem)));
			pg_log_error("invalid directory slot in file \"%s\", map page of blocks %u to %u: %s",
						 fn, first, last, _(pcs_problem_message(problem)));
			(*bad)++;
			continue;
		}
		if (!pages->present[k])
			continue;
		map_end = Max(map_end, pages->unit[k] + page_units);
		if ((uint64) pages->unit[k] + page_units > unit_limit)
		{
			if (enable)
				pg_fatal("cannot enable checksums in file \"%s\": the map page of blocks %u to %u lies past the end of the file",
						 fn, first, last);
			pg_log_error("map page past the end of file \"%s\", blocks %u to %u: it begins at unit %u",
						 fn, first, last, pages->unit[k]);
			pages->present[k] = false;
			(*bad)++;
		}
	}
	pg_free(directory);
	return map_end;
}

/*
 * Read the entries of blocks [first, first + count) of a segment from the
 * file at offset into map[first...]; entries past the end of the file are
 * empty (map[] is zeroed).  Only a version 5 map page may end there, and
 * none that is read does: pcs_read_directory() reports those that do as
 * damage and takes them for absent.
 */
static void
pcs_read_entries(int fd, const char *fn, const PcsHeader *header,
				 PcsMapEntry *map, BlockNumber first, BlockNumber count,
				 off_t offset)
{
	size_t		len = count * sizeof(PcsMapEntry);

	if (pcs_read_at(fd, fn, map + first, len, offset) != len &&
		!pcs_header_has_directory(header))
		pg_fatal("could not read the map of compressed segment \"%s\"", fn);
}

/*
 * Read (or write) the entries of blocks [0, nblocks) of a segment from (or
 * to) map[]: those the header holds (version 4 on) from its copy in header,
 * the rest from the map in the file, at its fixed place (versions 2 to 4)
 * or in the map pages pages locates (version 5).  Version 5's entries are
 * written only for the pages marked dirty: the others did not change, and
 * the pages of absent slots hold none.
 */
static void
pcs_transfer_entries(int fd, const char *fn, PcsHeader *header,
					 const PcsMapPages *pages, PcsMapEntry *map,
					 BlockNumber nblocks, bool write)
{
	BlockNumber in_header = Min(nblocks, pcs_header_entries(header));

	if (write && in_header > 0)
		pcs_write_at(fd, fn, map, in_header * sizeof(PcsMapEntry),
					 pcs_entry_offset(header, 0));
	else if (!write)
		memcpy(map, header->entries, in_header * sizeof(PcsMapEntry));
	if (nblocks <= in_header)
		return;

	if (!pcs_header_has_directory(header))
	{
		BlockNumber count = nblocks - in_header;
		off_t		offset = pcs_entry_offset(header, in_header);

		if (write)
			pcs_write_at(fd, fn, map + in_header,
						 count * sizeof(PcsMapEntry), offset);
		else
			pcs_read_entries(fd, fn, header, map, in_header, count, offset);
		return;
	}

	for (int k = pcs_map_page_of(in_header);
		 k <= pcs_map_page_of(nblocks - 1); k++)
	{
		BlockNumber first = Max((BlockNumber) k * PCS_MAP_PAGE_ENTRIES,
								in_header);
		BlockNumber end = Min((BlockNumber) (k + 1) * PCS_MAP_PAGE_ENTRIES,
							  nblocks);
		off_t		offset;

		/* an absent page's entries are all empty; a damaged slot's unknown */
		if (!pages->present[k] || (write && !pages->dirty[k]))
			continue;
		offset = pcs_map_page_entry_offset(header, pages->unit[k], first);
		if (write)
			pcs_write_at(fd, fn, map + first,
						 (end - first) * sizeof(PcsMapEntry), offset);
		else
			pcs_read_entries(fd, fn, header, map, first, end - first,
							 offset);
	}
}

/*
 * Verify (enable false) or set (enable true) the page checksums of one
 * compressed segment, segment number segmentno of its fork, open as fd
 * (read-write to enable).  Problems are logged as pg_checksums logs them;
 * when enabling, a page that cannot be read stops the program before
 * anything of this file is changed.  With do_sync, new images are made
 * durable before the map points to them.
 */
PcsChecksumCounts
pcs_checksum_segment(int fd, const char *fn, int segmentno, bool enable,
					 bool do_sync)
{
	PcsChecksumCounts counts = {0};
	PGAlignedBlock hbuf;
	PcsHeader  *header = (PcsHeader *) hbuf.data;
	PcsMapPages *pages = NULL;
	PcsMapEntry *map;
	PcsCodecState codec = {0};	/* as the server learns per segment */
	PcsDict    *dicts[PCS_MAX_DICTIONARIES + 1] = {0};
	struct stat st;
	const char *problem = NULL;
	PcsProblem	format_problem = PCS_SOUND;
	BlockNumber nblocks = 0;
	int			sound_copies;
	int			shift;
	off_t		data_offset;
	off_t		data_bytes;
	uint32		unit_limit;
	uint32		next_unit;
	uint32		map_end = 0;

	if (fstat(fd, &st) < 0)
		pg_fatal("could not stat file \"%s\": %m", fn);
	counts.bytes = st.st_size;

	/*
	 * A segment of version 5 may be its header alone (nothing was written to
	 * it yet); versions 2 to 4 were made at the size of header and map.
	 */
	memset(hbuf.data, 0, BLCKSZ);
	if (st.st_size < PCS_HEADER_SIZE)
		problem = _("The file is shorter than a compressed segment's header.");
	else if (pcs_read_at(fd, fn, hbuf.data, sizeof(PcsHeader), 0) != sizeof(PcsHeader))
		problem = _("The header is cut short.");
	else if (pcs_header_other_version(header) != 0)
		problem = psprintf(_("The file has format version %u; this build reads only versions %u to %u (it was made by another build of pgstrata)."),
						   header->version, PCS_FORMAT_VERSION_2,
						   PCS_FORMAT_VERSION);
	else if ((format_problem = pcs_header_check(header)) == PCS_SOUND &&
			 st.st_size < pcs_data_offset(header) &&
			 !pcs_header_has_directory(header))
		problem = _("The file is shorter than a compressed segment's header and map.");
	/* one sound copy of the block count is enough, as for the server */
	if (problem == NULL && format_problem == PCS_SOUND)
		format_problem = pcs_nblocks_read(header, segmentno, &nblocks,
										  &sound_copies);
	if (format_problem != PCS_SOUND)
		problem = _(pcs_problem_message(format_problem));
	if (problem != NULL)
	{
		if (enable)
			pg_fatal("cannot enable checksums in file \"%s\": invalid compressed segment header: %s",
					 fn, problem);
		pg_log_error("invalid compressed segment header in file \"%s\": %s",
					 fn, problem);
		counts.bad_blocks++;
		return counts;
	}

	/* the server repairs it from the other copy at its next use */
	if (sound_copies < pcs_header_nblocks_copies(header))
		pg_log_warning("one copy of the block count in compressed segment \"%s\" is damaged; the other one is sound",
					   fn);

	/*
	 * Units past the end of the file are not there: entries must lie below. A
	 * segment of version 5 may end before its data area begins.
	 */
	shift = header->unit_shift;
	data_offset = pcs_data_offset(header);
	data_bytes = st.st_size > data_offset ? st.st_size - data_offset : 0;
	unit_limit = (uint32) Min(data_bytes >> shift, PG_UINT32_MAX);
	next_unit = (uint32) Min((data_bytes + (1 << shift) - 1) >> shift,
							 PG_UINT32_MAX);

	/*
	 * Version 5: where the directory and the map pages lie.  New images go
	 * past them too: their units are the map's, never free space, even those
	 * of a page that is damage for lying past the end of the file (enabling
	 * stops there anyway).
	 */
	if (pcs_header_has_directory(header))
	{
		pages = pg_malloc(sizeof(PcsMapPages));
		map_end = pcs_read_directory(fd, fn, header, segmentno, enable,
									 unit_limit, pages, &counts.bad_blocks);
		next_unit = Max(next_unit, map_end);
	}

	map = pg_malloc0(Max(nblocks, 1) * sizeof(PcsMapEntry));
	pcs_transfer_entries(fd, fn, header, pages, map, nblocks, false);

	for (BlockNumber b = 0; b < nblocks; b++)
	{
		PGAlignedBlock page;
		PGAlignedBlock image;
		PageHeader	phdr = (PageHeader) page.data;
		BlockNumber blkno = b + segmentno * RELSEG_SIZE;
		uint16		csum;
		const char *src;
		int			len;
		int			units;
		int			number;
		uint8		image_flags;

		/* a block without storage reads as zeros: a new page */
		if (pcs_entry_is_empty(&map[b]))
			continue;
		counts.blocks_scanned++;

		format_problem = pcs_read_page(fd, fn, header, segmentno, &map[b], b,
									   unit_limit, page.data, dicts);
		if (format_problem != PCS_SOUND)
		{
			problem = _(pcs_problem_message(format_problem));
			if (enable)
				pg_fatal("cannot enable checksums: invalid compressed page in file \"%s\", block %u: %s",
						 fn, b, problem);
			pg_log_error("invalid compressed page in file \"%s\", block %u: %s",
						 fn, b, problem);
			counts.bad_blocks++;
			continue;
		}

		/* New pages have no checksum yet */
		if (PageIsNew(page.data))
			continue;

		csum = pg_checksum_page(page.data, blkno);
		if (!enable)
		{
			if (csum != phdr->pd_checksum)
			{
				pg_log_error("checksum verification failed in file \"%s\", block %u: calculated checksum %X but block contains %X",
							 fn, b, csum, phdr->pd_checksum);
				counts.bad_blocks++;
			}
			continue;
		}
		if (phdr->pd_checksum == csum)
			continue;

		/*
		 * A new image with the checksum, in fresh units at the end, with the
		 * dictionary the old one had (it is on disk, and stays).
		 */
		phdr->pd_checksum = csum;
		number = pcs_entry_dictionary(map[b].flags);
		len = pcs_compress_page(header->algorithm, header->level, page.data,
								image.data, BLCKSZ, &image_flags, &codec,
								number != 0 ? dicts[number] : NULL, number);
		src = len < 0 ? page.data : image.data;
		if (len < 0)
			len = BLCKSZ;
		units = pcs_units_to_allocate(len, false, shift);
		if ((uint64) next_unit + units > PG_UINT32_MAX)
			pg_fatal("compressed segment \"%s\" is full", fn);
		pcs_write_at(fd, fn, src, len, pcs_unit_offset(header, next_unit));
		pcs_entry_set(&map[b], b, next_unit, len, units, image_flags,
					  pcs_data_crc(src, len), shift);
		next_unit += units;
		if (pages != NULL && b >= pcs_header_entries(header))
			pages->dirty[pcs_map_page_of(b)] = true;
		counts.blocks_written++;
	}

	if (counts.blocks_written > 0)
	{
		/*
		 * The file must end past the last unit handed out, which the server
		 * takes as the limit of sound entries and where it allocates next;
		 * and the images must be durable before the map points to them.
		 */
		if (ftruncate(fd, pcs_unit_offset(header, next_unit)) != 0)
			pg_fatal("could not extend file \"%s\": %m", fn);
		if (do_sync && fsync(fd) != 0)
			pg_fatal("could not fsync file \"%s\": %m", fn);
		pcs_transfer_entries(fd, fn, header, pages, map, nblocks, true);
	}
	pg_free(map);
	pg_free(pages);
	for (int n = 1; n <= PCS_MAX_DICTIONARIES; n++)
		pcs_dict_free(dicts[n]);
	return counts;
}
