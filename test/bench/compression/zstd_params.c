/*-------------------------------------------------------------------------
 *
 * zstd_params.c
 *	  What zstd's own parameters would change on single 8 kB pages of real
 *	  relation files: every non-empty page of the files named on the command
 *	  line compressed at LEVEL with zstd's choice of parameters for an input
 *	  of one page, and with one parameter changed at a time, as the storage
 *	  manager would compress it (no frame checksum, content size or
 *	  dictionary id), without the codec's transforms.
 *
 *	  zstd_params LEVEL FILE...
 *
 * prints one line per variant: its name, the pages, the ratio in 128-byte
 * units (a page that does not save 512 bytes counts as stored raw), and the
 * CPU microseconds per page of compressing and of decoding.  Every variant
 * runs twice and the second pass is reported (the first warms caches).
 * Every decoded page is compared with the original; a mismatch makes the
 * exit status 1.
 *
 * Stand-alone (libzstd only):
 *	  gcc -O2 -o zstd_params zstd_params.c -lzstd
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * test/bench/compression/zstd_params.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

/*
 * The storage manager's page, unit and least saving (BLCKSZ, PCS_UNIT_SIZE
 * and PCS_MIN_SAVING of format 3 in storage/pcs_format.h), repeated so that
 * this program needs libzstd only
 */
#define PAGE_SIZE	8192
#define UNIT_SIZE	128
#define RAW_UNITS	(PAGE_SIZE / UNIT_SIZE)
#define MIN_SAVING	512

/* One way of compressing: a parameter set over the level's, or none */
typedef struct Variant
{
	const char *name;
	ZSTD_cParameter param;
	int			value;			/* 0: zstd's choice */
} Variant;

static const Variant variants[] = {
	{"zstd's choice", ZSTD_c_hashLog, 0},
	{"hashLog 13", ZSTD_c_hashLog, 13},
	{"hashLog 12", ZSTD_c_hashLog, 12},
	{"hashLog 11", ZSTD_c_hashLog, 11},
	{"minMatch 4", ZSTD_c_minMatch, 4},
	{"minMatch 6", ZSTD_c_minMatch, 6},
	{"minMatch 7", ZSTD_c_minMatch, 7},
	{"targetLength 2", ZSTD_c_targetLength, 2},
	{"targetLength 4", ZSTD_c_targetLength, 4},
};

/* CPU time of this process in microseconds */
static double
cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Read the non-empty pages of the files into one array; returns the count */
static size_t
read_pages(int nfiles, char **files, char **pages)
{
	size_t		n = 0;
	size_t		cap = 0;
	char		buf[PAGE_SIZE];

	*pages = NULL;
	for (int f = 0; f < nfiles; f++)
	{
		FILE	   *fp = fopen(files[f], "rb");

		if (fp == NULL)
		{
			perror(files[f]);
			exit(2);
		}
		while (fread(buf, 1, PAGE_SIZE, fp) == PAGE_SIZE)
		{
			int			empty = 1;

			for (int i = 0; i < PAGE_SIZE && empty; i++)
				empty = buf[i] == 0;
			if (empty)
				continue;		/* the storage manager stores no image */
			if (n == cap)
			{
				cap = cap ? cap * 2 : 1024;
				*pages = realloc(*pages, cap * PAGE_SIZE);
				if (*pages == NULL)
				{
					fprintf(stderr, "out of memory\n");
					exit(2);
				}
			}
			memcpy(*pages + n * PAGE_SIZE, buf, PAGE_SIZE);
			n++;
		}
		fclose(fp);
	}
	return n;
}

int
main(int argc, char **argv)
{
	char	   *pages;
	size_t		n;
	int			level;
	ZSTD_CCtx  *cctx = ZSTD_createCCtx();
	ZSTD_DCtx  *dctx = ZSTD_createDCtx();
	static char image[2 * PAGE_SIZE];
	static char back[PAGE_SIZE];
	int			status = 0;

	if (argc < 3)
	{
		fprintf(stderr, "usage: %s LEVEL FILE...\n", argv[0]);
		return 2;
	}
	level = atoi(argv[1]);
	n = read_pages(argc - 2, argv + 2, &pages);
	if (n == 0)
	{
		fprintf(stderr, "no non-empty pages\n");
		return 2;
	}

	for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++)
	{
		for (int pass = 0; pass < 2; pass++)
		{
			long long	units = 0;
			double		c_us = 0;
			double		d_us = 0;

			for (size_t i = 0; i < n; i++)
			{
				const char *page = pages + i * PAGE_SIZE;
				double		t = cpu_us();
				size_t		r;

				/* as pcs_compress_bytes() sets up its context for each page */
				ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
				ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
				ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0);
				ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
				ZSTD_CCtx_setParameter(cctx, ZSTD_c_dictIDFlag, 0);
				if (variants[v].value != 0)
					ZSTD_CCtx_setParameter(cctx, variants[v].param,
										   variants[v].value);
				r = ZSTD_compress2(cctx, image, sizeof(image), page, PAGE_SIZE);
				c_us += cpu_us() - t;
				if (ZSTD_isError(r) || r > PAGE_SIZE - MIN_SAVING)
				{
					units += RAW_UNITS;
					continue;
				}
				units += (r + UNIT_SIZE - 1) / UNIT_SIZE;
				t = cpu_us();
				if (ZSTD_decompressDCtx(dctx, back, PAGE_SIZE, image, r) != PAGE_SIZE ||
					memcmp(back, page, PAGE_SIZE) != 0)
					status = 1;
				d_us += cpu_us() - t;
			}
			if (pass == 1)
				printf("%s\t%zu\t%.3f\t%.2f\t%.2f\n", variants[v].name, n,
					   (double) n * RAW_UNITS / units, c_us / n, d_us / n);
		}
	}
	if (status != 0)
		fprintf(stderr, "a decoded page differs from its original\n");
	return status;
}
