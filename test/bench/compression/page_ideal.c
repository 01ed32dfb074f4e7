/*-------------------------------------------------------------------------
 *
 * page_ideal.c
 *	  The per-page compression ideal of relation files: every 8 kB page of
 *	  the files named on the command line compressed on its own with zstd at
 *	  the given level, as compressed tablespaces do, and the sum of the
 *	  compressed sizes, without and with 512-byte allocation units.
 *
 *	  page_ideal LEVEL FILE...   prints: pages raw_bytes ideal_bytes unit_bytes
 *
 * A page that does not compress counts as 8192 bytes in both sums.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * test/bench/compression/page_ideal.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

#define PAGE 8192
#define UNIT 512

int
main(int argc, char **argv)
{
	static char page[PAGE];
	static char out[PAGE * 2];
	long long	pages = 0;
	long long	ideal = 0;
	long long	units = 0;
	int			level;

	if (argc < 3)
	{
		fprintf(stderr, "usage: %s LEVEL FILE...\n", argv[0]);
		return 2;
	}
	level = atoi(argv[1]);
	for (int i = 2; i < argc; i++)
	{
		FILE	   *f = fopen(argv[i], "rb");

		if (f == NULL)
		{
			perror(argv[i]);
			return 1;
		}
		while (fread(page, 1, PAGE, f) == PAGE)
		{
			size_t		n = ZSTD_compress(out, sizeof(out), page, PAGE, level);
			long long	u;

			if (ZSTD_isError(n) || n >= PAGE)
				n = PAGE;
			u = ((long long) n + UNIT - 1) / UNIT * UNIT;
			if (u >= PAGE)
				u = PAGE;
			pages++;
			ideal += n;
			units += u;
		}
		fclose(f);
	}
	printf("%lld %lld %lld %lld\n", pages, pages * PAGE, ideal, units);
	return 0;
}
