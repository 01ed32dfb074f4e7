/*-------------------------------------------------------------------------
 *
 * page_codec.c
 *	  What the page shuffle and the index split of compressed tablespaces
 *	  gain and cost on real relation files: every 8 kB page of the files
 *	  named on the command line through the storage manager's own codec
 *	  (pcs_compress_page(), pcs_decode_image() of pcs_codec.c: shuffle or
 *	  split, estimate, zstd) and through plain zstd at the same level, side
 *	  by side.
 *
 *	  page_codec LEVEL FILE...
 *
 * prints one line: pages, the ratio in the storage manager's units without and with
 * the shuffle or split, then the CPU microseconds per page of compressing
 * and of decoding, without and with it.  Every decoded page is compared with the
 * original; a mismatch is reported and makes the exit status 1.
 *
 * Built by ratio.sh against the server's headers and the format layer.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * test/bench/compression/page_codec.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>
#include <zstd.h>

#include "storage/pcs_format.h"

/* CPU time of this process in microseconds */
static double
cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/*
 * Units a compressed image of len bytes takes, raw when it does not save
 * PCS_MIN_SAVING bytes, as the storage manager stores it
 */
static int
stored_units(long len)
{
	if (len < 0 || len > BLCKSZ - PCS_MIN_SAVING)
		return PCS_RAW_UNITS;
	return pcs_units_for((int) len, PCS_UNIT_SHIFT);
}

int
main(int argc, char **argv)
{
	static PGAlignedBlock page;
	static PGAlignedBlock image;
	static PGAlignedBlock back;
	ZSTD_CCtx  *cctx = ZSTD_createCCtx();
	ZSTD_DCtx  *dctx = ZSTD_createDCtx();
	long long	pages = 0;
	long long	units_plain = 0;
	long long	units_pcs = 0;
	double		c_plain = 0,
				c_pcs = 0,
				d_plain = 0,
				d_pcs = 0;
	int			mismatches = 0;
	int			level;

	if (argc < 3)
	{
		fprintf(stderr, "usage: page_codec LEVEL FILE...\n");
		return 2;
	}
	level = atoi(argv[1]);
	for (int f = 2; f < argc; f++)
	{
		FILE	   *fp = fopen(argv[f], "rb");
		PcsCodecState codec = {0};	/* one per segment, as the server */

		if (fp == NULL)
		{
			perror(argv[f]);
			return 2;
		}
		while (fread(page.data, BLCKSZ, 1, fp) == 1)
		{
			double		t;
			size_t		r;
			int			len;
			uint8		flags;

			pages++;

			/* plain zstd, as the ideal of page_ideal.c */
			t = cpu_us();
			r = ZSTD_compressCCtx(cctx, image.data, BLCKSZ, page.data, BLCKSZ, level);
			c_plain += cpu_us() - t;
			units_plain += stored_units(ZSTD_isError(r) ? -1 : (long) r);
			if (!ZSTD_isError(r) && stored_units((long) r) < PCS_RAW_UNITS)
			{
				t = cpu_us();
				(void) ZSTD_decompressDCtx(dctx, back.data, BLCKSZ, image.data, r);
				d_plain += cpu_us() - t;
			}

			/* the storage manager's codec */
			t = cpu_us();
			len = pcs_compress_page(PCS_ALGO_ZSTD, level, page.data, image.data,
									BLCKSZ, &flags, &codec, NULL, 0);
			c_pcs += cpu_us() - t;
			units_pcs += stored_units(len);
			if (len >= 0)
			{
				t = cpu_us();
				if (pcs_decode_image(PCS_ALGO_ZSTD, flags, image.data, len,
									 back.data, NULL) != PCS_SOUND ||
					memcmp(back.data, page.data, BLCKSZ) != 0)
					mismatches++;
				d_pcs += cpu_us() - t;
			}
		}
		fclose(fp);
	}
	if (pages == 0)
		pages = 1;
	printf("%lld %.2f %.2f %.1f %.1f %.1f %.1f\n", pages,
		   (double) pages * PCS_RAW_UNITS / Max(units_plain, 1),
		   (double) pages * PCS_RAW_UNITS / Max(units_pcs, 1),
		   c_plain / pages, c_pcs / pages, d_plain / pages, d_pcs / pages);
	if (mismatches > 0)
		fprintf(stderr, "%d pages did not decode to themselves\n", mismatches);
	return mismatches > 0;
}
