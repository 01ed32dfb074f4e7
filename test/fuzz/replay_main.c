/*-------------------------------------------------------------------------
 *
 * replay_main.c
 *	  Feed files to the pcs fuzz target without libFuzzer: each argument is
 *	  a file or a directory of files, and every file is one input.
 *
 * Linked with pcs_fuzz.c by a compiler without libFuzzer (gcc with
 * -fsanitize=address,undefined), this replays the committed corpus in
 * `make check`; a crash or a sanitizer report ends the program with a
 * non-zero status.  Prints "replayed N inputs" at the end.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * test/fuzz/replay_main.c
 *
 *-------------------------------------------------------------------------
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int	nreplayed = 0;

/* Run the target on the contents of one file */
static int
replay_file(const char *path)
{
	FILE	   *f = fopen(path, "rb");
	uint8_t    *buf;
	long		len;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0)
	{
		perror(path);
		return 1;
	}
	rewind(f);
	/* exactly len bytes, so that a read past the input is caught */
	buf = malloc(len > 0 ? len : 1);
	if (buf == NULL || fread(buf, 1, len, f) != (size_t) len)
	{
		perror(path);
		return 1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	nreplayed++;
	return 0;
}

/* Run the target on a file, or on every file of a directory */
static int
replay_path(const char *path)
{
	struct stat st;
	DIR		   *dir;
	struct dirent *de;
	int			rc = 0;

	if (stat(path, &st) != 0)
	{
		perror(path);
		return 1;
	}
	if (!S_ISDIR(st.st_mode))
		return replay_file(path);
	dir = opendir(path);
	if (dir == NULL)
	{
		perror(path);
		return 1;
	}
	while ((de = readdir(dir)) != NULL)
	{
		char		full[4096];

		if (de->d_name[0] == '.')
			continue;
		snprintf(full, sizeof(full), "%s/%s", path, de->d_name);
		rc |= replay_path(full);
	}
	closedir(dir);
	return rc;
}

int
main(int argc, char **argv)
{
	int			rc = 0;

	for (int i = 1; i < argc; i++)
		rc |= replay_path(argv[i]);
	printf("replayed %d inputs\n", nreplayed);
	return rc;
}
