/* md-real-io's lim-free-mem measure (MemFree + Cached + Buffers, or a
 * memory cgroup's headroom) and taking memory until it is down to a limit. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "memlimit.h"

static void meminfo(void)
{
	uint64_t b = 0;

	CHECK(!mdfio_meminfo_cacheable("MemTotal:       24000000 kB\nMemFree:          100 kB\n"
				       "MemAvailable:   9999 kB\nBuffers:            20 kB\nCached:             3 kB\n"
				       "SwapCached:         7 kB\n", &b) && b == 123 * 1024,
	      "MemFree + Buffers + Cached, not SwapCached or MemAvailable: %llu", (unsigned long long)b);
	CHECK(mdfio_meminfo_cacheable("MemFree: 1 kB\nCached: 2 kB\n", &b), "Buffers missing");
	CHECK(mdfio_meminfo_cacheable("MemFree: x kB\nCached: 2 kB\nBuffers: 3 kB\n", &b), "a field that is no number");
}

static void cgroups(void)
{
	uint64_t b = 0;

	/* v1: the hierarchical limit, less usage, its cache free */
	CHECK(!mdfio_cgroup_cacheable(NULL, "700\n", "cache 10\nhierarchical_memory_limit 1000\ntotal_cache 200\n", &b) &&
	      b == 500, "v1 headroom: %llu", (unsigned long long)b);
	CHECK(mdfio_cgroup_cacheable(NULL, "700\n", "hierarchical_memory_limit 9223372036854771712\ntotal_cache 200\n", &b),
	      "v1 without a limit");
	CHECK(!mdfio_cgroup_cacheable(NULL, "5000\n", "hierarchical_memory_limit 1000\ntotal_cache 200\n", &b) && b == 0,
	      "v1 over its limit: nothing left");
	/* v2 */
	CHECK(!mdfio_cgroup_cacheable("2000\n", "1500\n", "anon 1000\nfile 400\n", &b) && b == 900,
	      "v2 headroom: %llu", (unsigned long long)b);
	CHECK(mdfio_cgroup_cacheable("max\n", "1500\n", "file 400\n", &b), "v2 without a limit");
	CHECK(mdfio_cgroup_cacheable("2000\n", "1500\n", "anon 1000\n", &b), "v2 stat without file");
}

/* This process's resident memory, from /proc/self/status, in bytes. */
static uint64_t resident(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long kb = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return (uint64_t)kb * 1024;
}

/* Taking memory brings the measure down to the limit, giving it back
 * brings it up again. */
static void take(void)
{
	struct mdfio_mem_hold h;
	uint64_t before, during, rss, want = 256u << 20;
	char why[256];

	memset(&h, 0, sizeof(h));
	CHECK(!mdfio_mem_cacheable(&before, why, sizeof(why)), "measure: %s", why);
	if (before < 2 * want)
		return;	/* a machine too small to take from */
	CHECK(!mdfio_mem_take(&h, before - want, 1, why, sizeof(why)), "take: %s", why);
	CHECK(!mdfio_mem_cacheable(&during, why, sizeof(why)), "measure: %s", why);
	CHECK(during <= before - want + (64u << 20), "taking %llu MiB left %llu MiB of %llu",
	      (unsigned long long)(want >> 20), (unsigned long long)(during >> 20),
	      (unsigned long long)(before >> 20));
	/* more where the measure lags (memlimit.c), less where another
	 * process took some meanwhile */
	CHECK(h.bytes >= want / 2 && h.bytes <= want + before / 8 + (64u << 20), "held %llu MiB to take %llu",
	      (unsigned long long)(h.bytes >> 20), (unsigned long long)(want >> 20));
	/* the machine's measure moves with every other process too: this
	 * one's own memory says what it gave back */
	rss = resident();
	CHECK(rss >= h.bytes, "resident %llu MiB while holding %llu", (unsigned long long)(rss >> 20),
	      (unsigned long long)(h.bytes >> 20));
	mdfio_mem_release(&h);
	CHECK(!h.nr && !h.bytes && !h.chunks, "released");
	CHECK(resident() + want / 2 < rss, "given back: resident %llu MiB, %llu while held",
	      (unsigned long long)(resident() >> 20), (unsigned long long)(rss >> 20));
	/* a limit above what is left takes nothing */
	CHECK(!mdfio_mem_take(&h, UINT64_MAX, 1, why, sizeof(why)) && !h.nr, "nothing to take");
	mdfio_mem_release(&h);
}

int main(void)
{
	meminfo();
	cgroups();
	take();
	return check_result();
}
