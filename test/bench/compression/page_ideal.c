/*-------------------------------------------------------------------------
 *
 * page_ideal.c
 *	  The per-page compression ideal of relation files: every 8 kB page of
 *	  the files named on the command line compressed on its own with zstd at
 *	  the given level, as compressed tablespaces do, and the sum of the
 *	  compressed sizes, without and with the allocation units of format 3
 *	  (128 bytes; a page that does not save 512 bytes is stored raw).
 *
 *	  page_ideal LEVEL FILE...
 *
 * prints: pages raw_bytes ideal_bytes unit_bytes ns_per_page, the last
 * being the CPU time of one compression call per page (a reused context,
 * as the storage manager has), whether it succeeds or not.
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
#include <time.h>
#include <zstd.h>

#define PAGE 8192
#define UNIT 128
#define MIN_SAVING 512

int
main(int argc, char **argv)
{
	static char page[PAGE];
	static char out[PAGE * 2];
	long long	pages = 0;
	long long	ideal = 0;
	long long	units = 0;
	long long	ns = 0;
	int			level;
	ZSTD_CCtx  *cctx = ZSTD_createCCtx();

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
			struct timespec t0,
						t1;
			size_t		n;
			long long	u;

			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
			n = ZSTD_compressCCtx(cctx, out, sizeof(out), page, PAGE, level);
			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
			ns += (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);

			if (ZSTD_isError(n) || n >= PAGE)
				n = PAGE;
			u = ((long long) n + UNIT - 1) / UNIT * UNIT;
			if (n > PAGE - MIN_SAVING || u >= PAGE)
				u = PAGE;
			pages++;
			ideal += n;
			units += u;
		}
		fclose(f);
	}
	printf("%lld %lld %lld %lld %lld\n", pages, pages * PAGE, ideal, units,
		   pages > 0 ? ns / pages : 0);
	ZSTD_freeCCtx(cctx);
	return 0;
}
