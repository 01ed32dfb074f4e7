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
 * units become garbage.  Only segments without dictionaries are handled.
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
	read_at(fd, &entry, sizeof(entry),
			pcs_entry_offset(header, block), path);

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
					pcs_unit_offset(entry.first_unit, shift), path);
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
		struct stat st;
		uint32		first;
		int			units = pcs_raw_units(shift);

		if (in < 0)
			fail(strerror(errno), argv[4]);
		read_at(in, page.data, BLCKSZ, 0, argv[4]);
		close(in);
		if (fstat(fd, &st) != 0)
			fail(strerror(errno), path);
		/* the first whole unit at or past the file's end */
		first = (uint32) ((Max(st.st_size, PCS_DATA_OFFSET) - PCS_DATA_OFFSET +
						   (1 << shift) - 1) >> shift);
		write_at(fd, page.data, BLCKSZ, pcs_unit_offset(first, shift), path);
		pcs_entry_set(&entry, block, first, BLCKSZ, units, PCS_ENTRY_RAW,
					  pcs_data_crc(page.data, BLCKSZ), shift);
		write_at(fd, &entry, sizeof(entry),
				 pcs_entry_offset(header, block), path);
		if (fsync(fd) != 0)
			fail(strerror(errno), path);
	}
	close(fd);
	return 0;
}
