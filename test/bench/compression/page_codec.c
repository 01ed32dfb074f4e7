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
 * and of decoding, without and with it; then the ratio with a trained
 * dictionary per segment as pgstrata_train_dictionary() makes and keeps it
 * (its bytes counted; a segment whose dictionary would not pay keeps the
 * codec's images), the ratio of zstd on the whole file at the same level,
 * and the CPU per page of compressing and decoding with the dictionary.
 * Every decoded page is compared with the original; a mismatch is reported
 * and makes the exit status 1.
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

/* dictionary sampling and size, as contrib/pgstrata/pgstrata.c */
#define DICT_MIN_PAGES		64
#define DICT_MAX_PAGES		1024
#define DICT_SAMPLE_EVERY	50

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

/*
 * The units count segment pages[0..n) takes compressed with a dictionary
 * trained as pgstrata_train_dictionary() trains it (dictionary included),
 * or with the codec alone when the dictionary would not pay; adds the CPU
 * microseconds of compressing and decoding with it.
 */
static long long
dictionary_units(const char *pages, long long n, int level, double *c_us,
				 double *d_us, int *mismatches)
{
	static PGAlignedBlock image;
	static PGAlignedBlock back;
	int			want = (int) Min(DICT_MAX_PAGES, Max(DICT_MIN_PAGES, n / DICT_SAMPLE_EVERY));
	char	   *sample = malloc((size_t) want * BLCKSZ);
	char	   *dict = malloc(PCS_MAX_DICTIONARY_SIZE);
	int			sampled = 0;
	int			len = -1;
	PcsDict    *prepared = NULL;
	PcsCodecState codec = {0};
	long long	units = 0;

	for (int i = 0; i < want && n >= DICT_MIN_PAGES; i++)
	{
		const char *page = pages + (size_t) ((long long) i * n / want) * BLCKSZ;
		bool		is_new = true;

		for (int b = 0; b < BLCKSZ && is_new; b++)
			is_new = page[b] == 0;
		if (!is_new)
			memcpy(sample + (size_t) sampled++ * BLCKSZ, page, BLCKSZ);
	}
	if (sampled >= DICT_MIN_PAGES / 2)
		len = pcs_dict_train(sample, sampled, dict, pcs_dict_capacity(sampled));
	if (len > 0)
		prepared = pcs_dict_prepare(PCS_ALGO_ZSTD, level, dict, len);
	if (prepared != NULL)
	{
		/* does it pay for itself twice over the segment, on the samples? */
		PcsCodecState c1 = {0};
		PcsCodecState c2 = {0};
		long long	without = 0;
		long long	with = 0;
		uint8		flags;

		for (int i = 0; i < sampled; i++)
		{
			without += stored_units(pcs_compress_page(PCS_ALGO_ZSTD, level,
													  sample + (size_t) i * BLCKSZ,
													  image.data, BLCKSZ, &flags,
													  &c1, NULL, 0));
			with += stored_units(pcs_compress_page(PCS_ALGO_ZSTD, level,
												   sample + (size_t) i * BLCKSZ,
												   image.data, BLCKSZ, &flags,
												   &c2, prepared, 1));
		}
		if ((double) (without - with) * PCS_UNIT_SIZE / sampled * n <= 2.0 * len)
		{
			pcs_dict_free(prepared);
			prepared = NULL;
		}
	}
	if (prepared != NULL)
		units += pcs_units_for(len, PCS_UNIT_SHIFT);

	for (long long b = 0; b < n; b++)
	{
		const char *page = pages + (size_t) b * BLCKSZ;
		double		t = cpu_us();
		uint8		flags;
		int			ilen;

		ilen = pcs_compress_page(PCS_ALGO_ZSTD, level, page, image.data, BLCKSZ,
								 &flags, &codec, prepared, 1);
		*c_us += cpu_us() - t;
		units += stored_units(ilen);
		if (ilen >= 0)
		{
			t = cpu_us();
			if (pcs_decode_image(PCS_ALGO_ZSTD, flags, image.data, ilen,
								 back.data,
								 pcs_entry_dictionary(flags) ? prepared : NULL) != PCS_SOUND ||
				memcmp(back.data, page, BLCKSZ) != 0)
				(*mismatches)++;
			*d_us += cpu_us() - t;
		}
	}
	pcs_dict_free(prepared);
	free(sample);
	free(dict);
	return units;
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
	char	   *all = NULL;
	long long	all_pages = 0;
	long long	units_dict = 0;
	double		c_dict = 0,
				d_dict = 0;
	size_t		whole;

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
			/* kept for the dictionary and whole-file passes */
			if ((all_pages & (all_pages - 1)) == 0)
				all = realloc(all, (size_t) Max(all_pages * 2, 1) * BLCKSZ);
			memcpy(all + (size_t) all_pages++ * BLCKSZ, page.data, BLCKSZ);

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
	/* a dictionary per segment of RELSEG_SIZE pages, as the server keeps */
	for (long long first = 0; first < all_pages; first += RELSEG_SIZE)
		units_dict += dictionary_units(all + (size_t) first * BLCKSZ,
									   Min(RELSEG_SIZE, all_pages - first),
									   level, &c_dict, &d_dict, &mismatches);

	/*
	 * zstd on the whole relation at once, the ceiling per-page compression
	 * is measured against
	 */
	{
		size_t		bound = ZSTD_compressBound((size_t) all_pages * BLCKSZ);
		char	   *out = malloc(bound);

		whole = ZSTD_compress(out, bound, all, (size_t) all_pages * BLCKSZ, level);
		if (ZSTD_isError(whole))
			whole = (size_t) all_pages * BLCKSZ;
		free(out);
	}

	if (pages == 0)
		pages = 1;
	printf("%lld %.2f %.2f %.1f %.1f %.1f %.1f %.2f %.2f %.1f %.1f\n", pages,
		   (double) pages * PCS_RAW_UNITS / Max(units_plain, 1),
		   (double) pages * PCS_RAW_UNITS / Max(units_pcs, 1),
		   c_plain / pages, c_pcs / pages, d_plain / pages, d_pcs / pages,
		   (double) pages * PCS_RAW_UNITS / Max(units_dict, 1),
		   (double) pages * BLCKSZ / Max(whole, 1),
		   c_dict / pages, d_dict / pages);
	if (mismatches > 0)
		fprintf(stderr, "%d pages did not decode to themselves\n", mismatches);
	return mismatches > 0;
}
