/* Holding the page cache down, as md-real-io's lim-free-mem (memlimit.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memlimit.h"

/* small enough that processes taking at once overshoot little, large
 * enough that a machine's worth takes few looks at /proc/meminfo */
#define CHUNK (64u << 20)
#define PAGE 4096u

/* The number after "key" at a line's start (key includes its ':' or
 * ' '): 0, or 1 if there is none. */
static int field(const char *text, const char *key, uint64_t *v)
{
	size_t n = strlen(key);
	const char *p = text;

	while (p && *p) {
		if (!strncmp(p, key, n)) {
			char *end;
			unsigned long long x;

			errno = 0;
			x = strtoull(p + n, &end, 10);
			if (errno || end == p + n)
				return 1;
			*v = x;
			return 0;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return 1;
}

int mdfio_meminfo_cacheable(const char *meminfo, uint64_t *bytes)
{
	uint64_t free_kb, cached_kb, buffers_kb;

	if (field(meminfo, "MemFree:", &free_kb) || field(meminfo, "Cached:", &cached_kb) ||
	    field(meminfo, "Buffers:", &buffers_kb))
		return 1;
	*bytes = (free_kb + cached_kb + buffers_kb) * 1024;
	return 0;
}

int mdfio_cgroup_cacheable(const char *limit, const char *usage,
			   const char *stat, uint64_t *bytes)
{
	uint64_t max, used, cache;
	char *end;

	if (limit) {
		/* v2: "max" is no limit */
		if (!strncmp(limit, "max", 3))
			return 1;
		errno = 0;
		max = strtoull(limit, &end, 10);
		if (errno || end == limit || field(stat, "file ", &cache))
			return 1;
	} else if (field(stat, "hierarchical_memory_limit ", &max) ||
		   field(stat, "total_cache ", &cache)) {
		return 1;
	}
	errno = 0;
	used = strtoull(usage, &end, 10);
	if (errno || end == usage)
		return 1;
	/* v1 says "no limit" with a number near 2^63 */
	if (max >= (UINT64_C(1) << 62))
		return 1;
	*bytes = max + cache > used ? max + cache - used : 0;
	return 0;
}

/* A whole small file into buf: 0, or 1. */
static int slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	ssize_t n;

	if (fd < 0)
		return 1;
	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = '\0';
	return got == 0;
}

/* This process's memory cgroup directory (v1's memory controller, else
 * v2's unified one) into dir: 0, or 1 if it has none. */
static int own_cgroup(char *dir, size_t len, int *v2)
{
	char text[4096], *line, *save = NULL;
	const char *v1_path = NULL, *v2_path = NULL;

	if (slurp("/proc/self/cgroup", text, sizeof(text)))
		return 1;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *ctrl = strchr(line, ':'), *path = ctrl ? strchr(ctrl + 1, ':') : NULL;

		if (!path)
			continue;
		*path++ = '\0';
		ctrl++;
		if (!*ctrl)
			v2_path = path;
		else if (strstr(ctrl, "memory") && (!strcmp(ctrl, "memory") || strstr(ctrl, ",memory") ||
						    !strncmp(ctrl, "memory,", 7)))
			v1_path = path;
	}
	if (v1_path) {
		*v2 = 0;
		return (size_t)snprintf(dir, len, "/sys/fs/cgroup/memory%s", v1_path) >= len;
	}
	if (v2_path) {
		*v2 = 1;
		return (size_t)snprintf(dir, len, "/sys/fs/cgroup%s", v2_path) >= len;
	}
	return 1;
}

int mdfio_mem_cacheable(uint64_t *bytes, char *why, size_t len)
{
	char text[8192], stat[8192], limit[64], usage[64], dir[4096], path[4200];
	uint64_t cg;
	int v2;

	if (slurp("/proc/meminfo", text, sizeof(text)) || mdfio_meminfo_cacheable(text, bytes)) {
		snprintf(why, len, "cannot read MemFree, Cached and Buffers from /proc/meminfo");
		return 1;
	}
	if (own_cgroup(dir, sizeof(dir), &v2))
		return 0;
	snprintf(path, sizeof(path), "%s/memory.stat", dir);
	if (slurp(path, stat, sizeof(stat)))
		return 0;
	snprintf(path, sizeof(path), "%s/%s", dir, v2 ? "memory.current" : "memory.usage_in_bytes");
	if (slurp(path, usage, sizeof(usage)))
		return 0;
	if (v2) {
		snprintf(path, sizeof(path), "%s/memory.max", dir);
		if (slurp(path, limit, sizeof(limit)))
			return 0;
	}
	if (!mdfio_cgroup_cacheable(v2 ? limit : NULL, usage, stat, &cg) && cg < *bytes)
		*bytes = cg;
	return 0;
}

int mdfio_mem_take(struct mdfio_mem_hold *h, uint64_t limit, unsigned int takers,
		   char *why, size_t len)
{
	uint64_t left, first, taken = 0;

	if (mdfio_mem_cacheable(&first, why, len))
		return 1;
	left = first;
	while (left > limit) {
		uint64_t gap = (left - limit) / (takers ? takers : 1);
		size_t n = gap < PAGE ? PAGE : gap < CHUNK ? (size_t)gap : CHUNK;
		void *p;

		/* the measure may lag what is taken (a kernel that keeps
		 * pages it hands back to a hypervisor out of MemFree: they
		 * are taken first, unseen), but memory it never sees go must
		 * not take the machine */
		if (taken > first - limit + first / 8 + CHUNK) {
			snprintf(why, len, "took %" PRIu64 " bytes, yet %" PRIu64 " are still left for the page cache", taken, left);
			return 1;
		}
		if (h->nr == h->cap) {
			size_t cap = h->cap ? 2 * h->cap : 64;
			struct mdfio_mem_chunk *c = realloc(h->chunks, cap * sizeof(*c));

			if (!c) {
				snprintf(why, len, "out of memory");
				return 1;
			}
			h->chunks = c;
			h->cap = cap;
		}
		/* populated: the pages are taken now, not at a first touch */
		p = mmap(NULL, n, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (p == MAP_FAILED) {
			snprintf(why, len, "cannot take %zu more bytes after %" PRIu64 ": %s",
				 n, h->bytes, strerror(errno));
			return 1;
		}
		/* locked where allowed, so that no swap gives the memory back
		 * to the cache; without swap, populated is as good */
		(void)mlock(p, n);
		h->chunks[h->nr].p = p;
		h->chunks[h->nr++].len = n;
		h->bytes += n;
		taken += n;
		if (mdfio_mem_cacheable(&left, why, len))
			return 1;
	}
	return 0;
}

void mdfio_mem_release(struct mdfio_mem_hold *h)
{
	size_t k;

	for (k = 0; k < h->nr; k++)
		munmap(h->chunks[k].p, h->chunks[k].len);
	free(h->chunks);
	memset(h, 0, sizeof(*h));
}
