/*-------------------------------------------------------------------------
 *
 * page_estimate.c
 *	  The CPU cost of the storage manager's incompressibility estimate
 *	  (pcs_page_incompressible() in pcs_estimate.c) against one zstd
 *	  compression attempt, on every 8 kB page of the files named on the
 *	  command line.
 *
 *	  page_estimate LEVEL FILE...
 *
 * prints: pages skipped compressible wrong ns_estimate ns_attempt, where
 * skipped counts the pages the estimate would store raw without trying,
 * compressible the pages zstd at LEVEL stores in fewer units than raw,
 * wrong the pages both skipped and compressible (a bug if not 0), and the
 * two times are CPU nanoseconds per page: the estimate alone, and a zstd
 * attempt with a reused context as pcs_compress_page() makes it.  As in the
 * storage manager, each page is first copied to a local buffer (the write
 * path works on a copy), and the time of a loop of copies alone is
 * subtracted; each loop makes REPEAT passes over the pages, so that clock
 * reads do not dominate.
 *
 * Built against the installed server headers and the format layer, as
 * test/pcs/001_pcs_format_unit.pl builds the unit test.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * test/bench/toast/page_estimate.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>
#include <zstd.h>

#include "storage/pcs_format.h"

#define REPEAT 5

/* CPU time of this process in nanoseconds */
static long long
cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int
main(int argc, char **argv)
{
	char	   *pages = NULL;
	long long	npages = 0;
	long long	skipped = 0;
	long long	compressible = 0;
	long long	wrong = 0;
	long long	t0,
				t1,
				t2,
				t3;
	int			level;
	static char scratch[BLCKSZ];
	static char copy[BLCKSZ];
	static char out[2 * BLCKSZ];
	ZSTD_CCtx  *cctx = ZSTD_createCCtx();
	volatile long long sink = 0;

	if (argc < 3)
	{
		fprintf(stderr, "usage: %s LEVEL FILE...\n", argv[0]);
		return 2;
	}
	level = atoi(argv[1]);

	/* read all pages first, so that timing sees no I/O */
	for (int i = 2; i < argc; i++)
	{
		FILE	   *f = fopen(argv[i], "rb");
		char		page[BLCKSZ];

		if (f == NULL)
		{
			perror(argv[i]);
			return 1;
		}
		while (fread(page, 1, BLCKSZ, f) == BLCKSZ)
		{
			pages = realloc(pages, (npages + 1) * BLCKSZ);
			if (pages == NULL)
				return 1;
			memcpy(pages + npages * BLCKSZ, page, BLCKSZ);
			npages++;
		}
		fclose(f);
	}

	for (long long p = 0; p < npages; p++)
	{
		size_t		n = ZSTD_compressCCtx(cctx, out, sizeof(out),
										  pages + p * BLCKSZ, BLCKSZ, level);
		bool		c = !ZSTD_isError(n) && n <= BLCKSZ - PCS_MIN_SAVING;
		bool		s = pcs_page_incompressible(pages + p * BLCKSZ, scratch);

		compressible += c;
		skipped += s;
		wrong += c && s;
	}

	t0 = cpu_ns();
	for (int r = 0; r < REPEAT; r++)
		for (long long p = 0; p < npages; p++)
		{
			memcpy(copy, pages + p * BLCKSZ, BLCKSZ);
			sink += copy[p % BLCKSZ];
		}
	t1 = cpu_ns();
	for (int r = 0; r < REPEAT; r++)
		for (long long p = 0; p < npages; p++)
		{
			memcpy(copy, pages + p * BLCKSZ, BLCKSZ);
			sink += pcs_page_incompressible(copy, scratch);
		}
	t2 = cpu_ns();
	for (int r = 0; r < REPEAT; r++)
		for (long long p = 0; p < npages; p++)
		{
			memcpy(copy, pages + p * BLCKSZ, BLCKSZ);
			ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
			ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
			ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0);
			ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
			ZSTD_CCtx_setParameter(cctx, ZSTD_c_dictIDFlag, 0);
			sink += ZSTD_compress2(cctx, out, BLCKSZ, copy, BLCKSZ);
		}
	t3 = cpu_ns();

	printf("%lld %lld %lld %lld %lld %lld\n", npages, skipped, compressible, wrong,
		   npages > 0 ? ((t2 - t1) - (t1 - t0)) / (npages * REPEAT) : 0,
		   npages > 0 ? ((t3 - t2) - (t1 - t0)) / (npages * REPEAT) : 0);
	ZSTD_freeCCtx(cctx);
	free(pages);
	return 0;
}
