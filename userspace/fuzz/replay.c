// SPDX-License-Identifier: GPL-2.0-only
/*
 * A main() for the fuzz targets without libFuzzer: runs every file of the
 * directories (or files) given once. Used for the coverage build
 * (make -f core.mk fuzz-cov) and to replay a crash under a debugger.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void run_file(const char *path)
{
	static uint8_t buf[1 << 20];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f) {
		perror(path);
		exit(1);
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
}

int main(int argc, char **argv)
{
	unsigned long runs = 0;
	int i;

	for (i = 1; i < argc; i++) {
		struct stat st;
		struct dirent *de;
		DIR *d;

		if (stat(argv[i], &st) || !S_ISDIR(st.st_mode)) {
			run_file(argv[i]);
			runs++;
			continue;
		}
		d = opendir(argv[i]);
		while (d && (de = readdir(d))) {
			char path[4096];

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			run_file(path);
			runs++;
		}
		if (d)
			closedir(d);
	}
	fprintf(stderr, "replayed %lu inputs\n", runs);
	return 0;
}
