/* md-real-io's lim-free-mem: memory taken and touched until only a given
 * amount is left for the page cache, so that a working set larger than it
 * cannot stay cached. "Left for the page cache" is md-real-io's measure,
 * MemFree + Cached + Buffers of /proc/meminfo; inside a memory cgroup with
 * a limit, the cgroup's own headroom (its limit less what it uses, its
 * page cache counted as free) when that is smaller, as the cache a job
 * there can keep is bounded by it. */
#ifndef MDFIO_MEMLIMIT_H
#define MDFIO_MEMLIMIT_H

#include <stddef.h>
#include <stdint.h>

/* md-real-io's unit: lim-free-mem=N means N * 1000 KiB */
#define MDFIO_MEMLIMIT_UNIT (1000u * 1024u)

/* MemFree + Cached + Buffers of a /proc/meminfo text, in bytes: 0, or 1
 * if a field is missing. */
int mdfio_meminfo_cacheable(const char *meminfo, uint64_t *bytes);

/* A memory cgroup's headroom for the page cache: limit - usage + cache,
 * in bytes, from its files' texts: cgroup v1 memory.stat (whose
 * hierarchical_memory_limit, total_cache are used) and
 * memory.usage_in_bytes (limit NULL); or cgroup v2 memory.max, .current
 * and .stat (file). 0 with *bytes, 1 if it has no limit or a text does not
 * parse. */
int mdfio_cgroup_cacheable(const char *limit, const char *usage,
			   const char *stat, uint64_t *bytes);

/* What this process may leave in the page cache now: the smaller of the
 * machine's and its memory cgroup's. 0, or 1 with a reason in why. */
int mdfio_mem_cacheable(uint64_t *bytes, char *why, size_t len);

/* Memory taken to hold the page cache down. */
struct mdfio_mem_chunk {
	void *p;
	size_t len;
};
struct mdfio_mem_hold {
	struct mdfio_mem_chunk *chunks;
	size_t nr, cap;
	uint64_t bytes;		/* held in all */
};

/* Takes memory in chunks, each touched and locked where the process may
 * lock it, until what mdfio_mem_cacheable says is at most limit bytes.
 * takers processes may take at once: each chunk, taken after a fresh
 * look, is at most a takers-th of what is left to take, so that together
 * they come down to the limit rather than past it. 0, or 1 with a reason
 * in why (what it took stays held: release it). */
int mdfio_mem_take(struct mdfio_mem_hold *h, uint64_t limit, unsigned int takers,
		   char *why, size_t len);

/* Gives back all h holds. */
void mdfio_mem_release(struct mdfio_mem_hold *h);

#endif
