/* The md-workbench cycle for one process as a bare loop of system calls:
 * the physical limit mdfio-posix is measured against. Same calls, flags and
 * paths as the engine (namespace.c builds both), no per-operation timing
 * unless --timed adds the engine's two clock reads per operation.
 *
 *   bare-loop ROOT PHASE DATASETS PRECREATE STEPS SIZE START [--timed]
 *
 * PHASE is precreate, benchmark or cleanup; prints "PHASE SECONDS UNITS".
 * PHASE clock times UNITS (DATASETS) clock reads alone: the timer's cost. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "namespace.h"

static int timed;
static volatile uint64_t sink;

static inline void tick(void)
{
	struct timespec ts;

	if (!timed)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	sink += (uint64_t)ts.tv_nsec;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *path)
{
	fprintf(stderr, "bare-loop: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static void create(const char *path, const char *buf, size_t size)
{
	int fd;

	tick();
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0664);
	if (fd < 0 || write(fd, buf, size) != (ssize_t)size || close(fd))
		die("create", path);
	tick();
}

int main(int argc, char **argv)
{
	char dir[4096], path[4096], *buf;
	size_t dlen, size;
	uint64_t p, steps, start, f, units = 0;
	uint32_t datasets, d;
	struct stat sb;
	double t0;
	int fd;

	if (argc < 8) {
		fprintf(stderr, "usage: bare-loop ROOT PHASE DATASETS PRECREATE STEPS SIZE START [--timed]\n");
		return 2;
	}
	datasets = (uint32_t)strtoul(argv[3], NULL, 10);
	p = strtoull(argv[4], NULL, 10);
	steps = strtoull(argv[5], NULL, 10);
	size = strtoull(argv[6], NULL, 10);
	start = strtoull(argv[7], NULL, 10);
	timed = argc > 8 && !strcmp(argv[8], "--timed");
	buf = calloc(1, size);
	memset(buf, 'x', size);

	t0 = now();
	if (!strcmp(argv[2], "precreate")) {
		for (d = 0; d < datasets; d++) {
			mdfio_dataset_path(dir, sizeof(dir), argv[1], 0, d);
			if (mkdir(dir, 0775))
				die("mkdir", dir);
		}
		for (f = 0; f < p; f++)
			for (d = 0; d < datasets; d++, units++) {
				dlen = mdfio_dataset_path(path, sizeof(path), argv[1], 0, d);
				mdfio_object_path(path, sizeof(path), dlen, start + f);
				create(path, buf, size);
			}
	} else if (!strcmp(argv[2], "benchmark")) {
		for (f = 0; f < steps; f++)
			for (d = 0; d < datasets; d++, units++) {
				dlen = mdfio_dataset_path(path, sizeof(path), argv[1], 0, d);
				mdfio_object_path(path, sizeof(path), dlen, start + f);
				tick();
				if (stat(path, &sb))
					die("stat", path);
				tick();
				tick();
				fd = open(path, O_RDONLY | O_CLOEXEC);
				if (fd < 0 || read(fd, buf, size) != (ssize_t)size || close(fd))
					die("read", path);
				tick();
				tick();
				if (unlink(path))
					die("unlink", path);
				tick();
				mdfio_object_path(path, sizeof(path), dlen, p + start + f);
				create(path, buf, size);
			}
	} else if (!strcmp(argv[2], "cleanup")) {
		for (d = 0; d < datasets; d++) {
			dlen = mdfio_dataset_path(dir, sizeof(dir), argv[1], 0, d);
			memcpy(path, dir, dlen + 1);
			for (f = 0; f < p; f++, units++) {
				mdfio_object_path(path, sizeof(path), dlen, start + f);
				tick();
				if (unlink(path))
					die("unlink", path);
				tick();
			}
			if (rmdir(dir))
				die("rmdir", dir);
		}
	} else if (!strcmp(argv[2], "clock")) {
		timed = 1;
		for (units = 0; units < datasets; units++)
			tick();
	} else {
		fprintf(stderr, "bare-loop: PHASE must be precreate, benchmark, cleanup or clock\n");
		return 2;
	}
	printf("%s %.9f %llu\n", argv[2], now() - t0, (unsigned long long)units);
	free(buf);
	return 0;
}
