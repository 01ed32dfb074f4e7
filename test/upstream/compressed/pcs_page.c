/*-------------------------------------------------------------------------
 *
 * pcs_page.c
 *	  Read or replace one page of a compressed segment file of a stopped
 *	  server, for upstream TAP tests that damage pages on disk.
 *
 *	  pcs_page read SEGMENT BLOCK OUT	write block BLOCK's page (8 kB) to OUT
 *	  pcs_page write SEGMENT BLOCK IN	store the page in IN as block BLOCK
 *
 * An upstream test that edits a page at its md offset (block * BLCKSZ) edits
 * the header or map of a compressed file instead (test/upstream/
 * compressed-differences.md, cause 2); its accepted diff makes it read the
 * page with "read", edit it as before and store it with "write".  The page
 * is stored raw, in new units at the end of the file, and the block's map
 * entry points to them: the server started next recomputes where free space
 * begins from the file's end (README.pcs, "Allocation"), and the old image's
 * units become garbage.  In a segment of format 5 the block's entry may lie
 * in a map page that does not exist yet: one is then made, zeroed, at the
 * end of the file too, before the image, and its directory slot set; and
 * if the segment has no directory yet (its blocks had room in the header),
 * the directory is made with it, as the server makes both (pcs_segment.c,
 * pcs_map_page_make()).  The directory's words and slots are checked
 * against the segment's number, which is taken from the file's name
 * (RELFILENODE[_FORK][.SEGNO]).  Only segments without dictionaries are
 * handled.
 * The page's checksum is not recomputed: the tests that do this run without
 * data checksums.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * test/upstream/compressed/pcs_page.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/pcs_format.h"

/* Print an error and exit */
static void
fail(const char *what, const char *path)
{
	fprintf(stderr, "pcs_page: %s: %s\n", path, what);
	exit(1);
}

/* Read exactly len bytes at offset, or fail */
static void
read_at(int fd, void *buf, size_t len, off_t offset, const char *path)
{
	if (pread(fd, buf, len, offset) != (ssize_t) len)
		fail("short read", path);
}

/* Write exactly len bytes at offset, or fail */
static void
write_at(int fd, const void *buf, size_t len, off_t offset, const char *path)
{
	if (pwrite(fd, buf, len, offset) != (ssize_t) len)
		fail("short write", path);
}

/*
 * Read len bytes at offset; what lies past the end of the file reads as
 * zeros, as it does for the server (a format 5 directory, or a map page
 * whose slot reached disk before the page)
 */
static void
read_or_zeros(int fd, void *buf, size_t len, off_t offset, const char *path)
{
	ssize_t		r = pread(fd, buf, len, offset);

	if (r < 0)
		fail(strerror(errno), path);
	memset((char *) buf + r, 0, len - r);
}

/* The segment number in a relation file's name: 0 without ".N" */
static BlockNumber
segment_number(const char *path)
{
	const char *base = strrchr(path, '/');
	const char *dot;

	base = base != NULL ? base + 1 : path;
	dot = strrchr(base, '.');
	if (dot == NULL)
		return 0;
	if (dot[1] == '\0' || strspn(dot + 1, "0123456789") != strlen(dot + 1))
		fail("cannot tell the segment number from the file name", path);
	return (BlockNumber) strtoul(dot + 1, NULL, 10);
}

/*
 * Where the directory of a format 5 segment lies, as the server decides it
 * (pcs_meta.c, pcs_directory_lookup()): true and its first unit in *unit
 * if a sound copy of the header's directory word names one, false if both
 * copies are sound zeros (no directory, no map page).  A directory that
 * cannot be located leaves every map page unknown: this tool gives up.
 */
static bool
directory_location(PcsHeader *header, BlockNumber segno, uint32 *unit,
				   const char *path)
{
	bool		damaged = false;

	for (int copy = 0; copy < 2; copy++)
	{
		bool		present;

		if (pcs_directory_location_decode(header, segno, copy,
										  pg_atomic_read_u64(pcs_header_directory(header, copy)),
										  &present, unit) != PCS_SOUND)
			damaged = true;
		else if (present)
			return true;
	}
	if (damaged)
		fail(pcs_problem_message(PCS_DIRECTORY_BAD_LOCATION), path);
	return false;
}

/*
 * The first whole unit of the data area at or past the file's end, and in
 * format 5 past the directory and every map page too: a crash may leave a
 * directory word or a slot written before the file grew to hold what it
 * names, and those units are not free.
 */
static uint32
unit_at_end(int fd, PcsHeader *header, BlockNumber segno, const char *path)
{
	struct stat st;
	off_t		data_offset = pcs_data_offset(header);
	uint32		unit;
	uint32		directory_unit;

	if (fstat(fd, &st) != 0)
		fail(strerror(errno), path);
	unit = (uint32) ((Max(st.st_size, data_offset) - data_offset +
					  (1 << header->unit_shift) - 1) >> header->unit_shift);
	if (pcs_header_has_directory(header) &&
		directory_location(header, segno, &directory_unit, path))
	{
		PcsDirectory *directory = malloc(sizeof(PcsDirectory));

		unit = Max(unit, directory_unit +
				   pcs_directory_units(header->unit_shift));
		read_or_zeros(fd, directory, sizeof(PcsDirectory),
					  pcs_unit_offset(header, directory_unit), path);
		for (int k = 0; k < PCS_MAP_PAGES; k++)
		{
			bool		present;
			uint32		page_unit;
			PcsProblem	problem;

			problem = pcs_directory_decode(header, segno, k,
										   directory->slots[k], &present,
										   &page_unit);
			if (problem != PCS_SOUND)
				fail(pcs_problem_message(problem), path);
			if (present)
				unit = Max(unit, page_unit +
						   pcs_map_page_units(header->unit_shift));
		}
		free(directory);
	}
	return unit;
}

/*
 * Make the directory of a format 5 segment that has none, at the end of the
 * file, and return its first unit.  Its zeros are durable before the
 * header's directory words name it, so that a crash leaves either no
 * directory or an empty one: never words naming units that hold something
 * else.  The words are written one after the other, first copy first, as
 * the server writes them; a reader takes either.
 */
static uint32
directory_make(int fd, PcsHeader *header, BlockNumber segno,
			   const char *path)
{
	PGAlignedBlock zeros;
	uint32		unit = unit_at_end(fd, header, segno, path);

	StaticAssertStmt(PCS_DIRECTORY_SIZE <= BLCKSZ,
					 "the directory must fit in a block's buffer");
	memset(zeros.data, 0, PCS_DIRECTORY_SIZE);
	write_at(fd, zeros.data, PCS_DIRECTORY_SIZE,
			 pcs_unit_offset(header, unit), path);
	if (fsync(fd) != 0)
		fail(strerror(errno), path);
	for (int copy = 0; copy < 2; copy++)
	{
		pg_atomic_uint64 *word = pcs_header_directory(header, copy);
		uint64		value = pcs_directory_location_word(header, segno, copy,
														unit);

		pg_atomic_write_u64(word, value);
		write_at(fd, &value, sizeof(value),
				 (char *) word - (char *) header, path);
	}
	return unit;
}

/*
 * The file offset of the map entry of block of segment segno; false if the
 * block has none because its map page (format 5) does not exist, unless
 * create, which then makes the page, and the directory first if there is
 * none: each zeroed, at the end of the file, and durable before what names
 * it (the header's directory words, the page's directory slot) is written.
 */
static bool
entry_location(int fd, PcsHeader *header, BlockNumber segno,
			   BlockNumber block, bool create, off_t *offset,
			   const char *path)
{
	int			page = pcs_map_page_of(block);
	uint64		slot = 0;
	bool		present;
	uint32		directory = 0;
	uint32		unit = 0;
	PcsProblem	problem;

	if (block < pcs_header_entries(header) ||
		!pcs_header_has_directory(header))
	{
		*offset = pcs_entry_offset(header, block);
		return true;
	}

	present = false;
	if (directory_location(header, segno, &directory, path))
	{
		read_or_zeros(fd, &slot, sizeof(slot),
					  pcs_unit_offset(header, directory) +
					  page * sizeof(uint64), path);
		problem = pcs_directory_decode(header, segno, page, slot, &present,
									   &unit);
		if (problem != PCS_SOUND)
			fail(pcs_problem_message(problem), path);
	}
	else if (create)
		directory = directory_make(fd, header, segno, path);
	if (!present)
	{
		PGAlignedBlock zeros;

		if (!create)
			return false;
		StaticAssertStmt(PCS_MAP_PAGE_SIZE <= BLCKSZ,
						 "a map page must fit in a block's buffer");
		memset(zeros.data, 0, PCS_MAP_PAGE_SIZE);
		unit = unit_at_end(fd, header, segno, path);
		write_at(fd, zeros.data, PCS_MAP_PAGE_SIZE,
				 pcs_unit_offset(header, unit), path);
		if (fsync(fd) != 0)
			fail(strerror(errno), path);
		slot = pcs_directory_word(header, segno, page, unit);
		write_at(fd, &slot, sizeof(slot),
				 pcs_unit_offset(header, directory) + page * sizeof(uint64),
				 path);
	}
	*offset = pcs_map_page_entry_offset(header, unit, block);
	return true;
}

int
main(int argc, char **argv)
{
	const char *path;
	BlockNumber block;
	bool		reading;
	PGAlignedBlock header_buf;
	PcsHeader  *header = (PcsHeader *) header_buf.data;
	PcsMapEntry entry;
	PGAlignedBlock page;
	int			shift;
	int			fd;
	PcsProblem	problem;
	BlockNumber segno;
	off_t		entry_offset;

	if (argc != 5 ||
		(strcmp(argv[1], "read") != 0 && strcmp(argv[1], "write") != 0))
	{
		fprintf(stderr, "usage: pcs_page read|write SEGMENT BLOCK FILE\n");
		return 2;
	}
	reading = strcmp(argv[1], "read") == 0;
	path = argv[2];
	block = (BlockNumber) strtoul(argv[3], NULL, 10);
	if (block >= RELSEG_SIZE)
		fail("block number past the segment", path);
	segno = segment_number(path);

	fd = open(path, reading ? O_RDONLY : O_RDWR);
	if (fd < 0)
		fail(strerror(errno), path);
	read_at(fd, header_buf.data, PCS_HEADER_SIZE, 0, path);
	if (!pcs_is_segment_start(header_buf.data, PCS_HEADER_SIZE))
		fail("not a compressed segment", path);
	problem = pcs_header_check(header);
	if (problem != PCS_SOUND)
		fail(pcs_problem_message(problem), path);
	shift = header->unit_shift;
	memset(&entry, 0, sizeof(entry));
	if (entry_location(fd, header, segno, block, false, &entry_offset, path))
		read_or_zeros(fd, &entry, sizeof(entry), entry_offset, path);

	if (reading)
	{
		char	   *image;
		int			out;

		if (pcs_entry_is_empty(&entry))
			memset(page.data, 0, BLCKSZ);
		else
		{
			if (pcs_entry_dictionary(entry.flags) != 0)
				fail("the block's image uses a dictionary", path);
			image = malloc(entry.stored);
			read_at(fd, image, entry.stored,
					pcs_unit_offset(header, entry.first_unit), path);
			if (pcs_data_crc(image, entry.stored) != entry.data_crc)
				fail("the block's image does not match its CRC", path);
			problem = pcs_decode_image(header->algorithm, entry.flags,
									   image, entry.stored, page.data, NULL);
			if (problem != PCS_SOUND)
				fail(pcs_problem_message(problem), path);
			free(image);
		}
		out = open(argv[4], O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (out < 0)
			fail(strerror(errno), argv[4]);
		write_at(out, page.data, BLCKSZ, 0, argv[4]);
		close(out);
	}
	else
	{
		int			in = open(argv[4], O_RDONLY);
		uint32		first;
		int			units = pcs_raw_units(shift);

		if (in < 0)
			fail(strerror(errno), argv[4]);
		read_at(in, page.data, BLCKSZ, 0, argv[4]);
		close(in);
		/* the map page first, if it is made: the image goes past it */
		(void) entry_location(fd, header, segno, block, true, &entry_offset,
							  path);
		first = unit_at_end(fd, header, segno, path);
		write_at(fd, page.data, BLCKSZ, pcs_unit_offset(header, first), path);
		pcs_entry_set(&entry, block, first, BLCKSZ, units, PCS_ENTRY_RAW,
					  pcs_data_crc(page.data, BLCKSZ), shift);
		write_at(fd, &entry, sizeof(entry), entry_offset, path);
		if (fsync(fd) != 0)
			fail(strerror(errno), path);
	}
	close(fd);
	return 0;
}
