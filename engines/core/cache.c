/* What the page cache may hold when a phase starts: drop_caches, and
 * md-real-io's lim_free_mem_phase and lim_free_mem (-M, -m). All of it
 * happens between the run's two barriers before the phase, so no phase's
 * time includes it and no rank starts before every rank is done. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "job.h"
#include "memlimit.h"

#define DROP_CACHES "/proc/sys/vm/drop_caches"

int mdfio_cache_check(const struct mdfio_options *eo)
{
	uint64_t left;
	char why[256];
	int fd;

	if (eo->drop_caches) {
		fd = open(DROP_CACHES, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return mdfio_error("drop_caches=1: cannot open %s for writing (%s): dropping the page cache needs root",
					   DROP_CACHES, strerror(errno));
		close(fd);
	}
	if ((eo->lim_free_mem || eo->lim_free_mem_phase) && mdfio_mem_cacheable(&left, why, sizeof(why)))
		return mdfio_error("lim_free_mem: %s", why);
	return 0;
}

/* Writes dirty pages back, then drops the clean ones, dentries and
 * inodes: what is dirty cannot be dropped. */
static int drop_caches(void)
{
	int fd = open(DROP_CACHES, O_WRONLY | O_CLOEXEC), err = 0;

	sync();
	if (fd < 0 || write(fd, "3\n", 2) != 2)
		err = errno;
	if (fd >= 0)
		close(fd);
	if (err)
		return mdfio_error("drop_caches=1: cannot write %s: %s", DROP_CACHES, strerror(err));
	return 0;
}

int mdfio_cache_prepare(struct mdfio_job *j, const struct mdfio_options *eo)
{
	/* every rank of this host takes its share, as md-real-io's every
	 * process did */
	unsigned int takers = j->world.local;
	char why[256];

	/* one write drops the cache of the whole machine */
	if (eo->drop_caches && !j->td->subjob_number && drop_caches())
		return 1;
	if (eo->lim_free_mem_phase) {
		struct mdfio_mem_hold evict = { 0 };
		int err = mdfio_mem_take(&evict, eo->lim_free_mem_phase * MDFIO_MEMLIMIT_UNIT, takers,
					 why, sizeof(why));

		mdfio_mem_release(&evict);
		if (err)
			return mdfio_error("rank %" PRIu32 ": lim_free_mem_phase=%llu: %s", j->rank,
					   eo->lim_free_mem_phase, why);
	}
	if (eo->lim_free_mem &&
	    mdfio_mem_take(&j->mem_held, eo->lim_free_mem * MDFIO_MEMLIMIT_UNIT, takers, why, sizeof(why)))
		return mdfio_error("rank %" PRIu32 ": lim_free_mem=%llu: %s", j->rank, eo->lim_free_mem, why);
	return 0;
}

void mdfio_cache_release(struct mdfio_job *j)
{
	mdfio_mem_release(&j->mem_held);
}
