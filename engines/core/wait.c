/* md-workbench -t (waiting_factor): the wait after each benchmark
 * operation, a factor times the operation's time. */
#include <errno.h>
#include <time.h>

#include "job.h"

/* md-workbench's wait after an operation of ns (mdw_wait): a spin on the
 * clock below 10 ms, where a sleep would overshoot, a sleep above. The
 * rank's thread waits, as md-workbench's process does: with units in
 * flight, none is started or reaped meanwhile (docs/design.md). */
#define MDFIO_SPIN_BELOW_NS 10000000u
void __attribute__((cold, noinline))
mdfio_wait_after(struct mdfio_job *j, uint64_t ns)
{
	const uint64_t slice = MDFIO_ANSWER_MS * 1000000u;
	uint64_t w = (uint64_t)((double)ns * j->wait_factor);
	uint64_t now = mdfio_now(), end = now + w, until;
	struct timespec ts;

	/* the rest of a unit whose rank has stopped */
	if (j->halted)
		return;
	if (w < MDFIO_SPIN_BELOW_NS) {
		while (mdfio_now() < end)
			;
		return;
	}
	/* a factor can make one wait long: it sleeps in slices, each to a
	 * time on the clock (so the slices add no overshoot), and answers
	 * fio between them */
	for (;;) {
		until = end - now > slice ? now + slice : end;
		ts.tv_sec = (time_t)(until / 1000000000u);
		ts.tv_nsec = (long)(until % 1000000000u);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		if (until == end)
			return;
		mdfio_answer_fio(j->td);
		now = mdfio_now();
		if (now >= end || mdfio_rank_orphaned(j))
			return;
	}
}
