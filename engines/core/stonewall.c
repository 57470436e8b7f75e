/* md-workbench -w and -W in a benchmark: the stonewall timer that stops a
 * rank's steps, and the wear-out's exchange of steps that then evens them
 * out; and the end of a phase, which either of them can bring: its exact
 * time, after the wear-out's exchange. */
#include <inttypes.h>
#include <stdint.h>

#include "fio_compat.h"
#include "job.h"

/* The phase's exact time, from its first unit's start to its last unit's
 * end (md-workbench's per-rank T), as the one submission-latency sample of
 * its slot: fio's runtime has whole milliseconds, and the slot's slat is
 * otherwise unused (see docs/engines.md). */
static void record_phase_time(struct thread_data *td, struct mdfio_job *j)
{
	/* md-workbench leaves its wear-out's MPI_Allreduce out of T too */
	mdfio_add_slat(td, j->ph->ddir, mdfio_now() - j->t0 - j->sw_wait_ns);
}

/* The wear-out's exchange of steps, outside the phase's time. */
static int stonewall_exchange(struct mdfio_job *j, uint64_t steps, uint64_t *max)
{
	uint64_t t = mdfio_now();
	int err = mdfio_run_max_steps(j, steps, max);

	j->sw_wait_ns += mdfio_now() - t;
	/* done: the run has its number of steps (or is broken) */
	j->sw_timer_ns = 0;
	return err;
}

void mdfio_phase_over(struct thread_data *td, struct mdfio_job *j)
{
	uint64_t max;

	record_phase_time(td, j);
	/* every step done before the timer: the most any rank can do, which
	 * the ranks the timer stopped wait for (md-workbench's allreduce
	 * after its loop) */
	if (j->sw_timer_ns && j->sw_wear_out && stonewall_exchange(j, j->units / j->datasets, &max))
		td_verror(td, EIO, "mdfio stonewall_wear_out");
	td->done = 1;
}

/* md-workbench -w and -W: whether unit j->next must not start yet. The
 * timer is looked at where a step over all datasets begins (md-workbench
 * looks after each step); once it has hit, no unit starts until those in
 * flight have ended (fio reaps them meanwhile), and then the rank knows
 * the steps it did: with -w alone it stops there; with -W it learns the
 * most steps any rank of the run did and goes on to that. */
int __attribute__((noinline)) mdfio_stonewall_hold(struct thread_data *td, struct mdfio_job *j)
{
	uint64_t k = j->next, max;

	/* fio, which still counts the phase's full size, asks for more: the
	 * units in flight end the phase (or it has ended, or broken) */
	if (td->done || k >= j->units) {
		if (!td->done && !j->in_flight) {
			/* none in flight, and yet the phase has not ended:
			 * fio reaps only what is in flight, so it would ask
			 * again for ever, with nothing left to change */
			mdfio_error("rank %" PRIu32 " %s: all %" PRIu64 " units started, %" PRIu64 " ended and none in flight; the phase stops here",
				    j->rank, mdfio_phase_name(j->phase), k, j->finished);
			td_verror(td, EIO, "mdfio stonewall");
			td->done = 1;
		}
		return 1;
	}
	if (!j->sw_timer_ns)
		return 0;
	if (!k || k % j->datasets)
		return 0;
	if (!j->sw_stopped) {
		if (mdfio_now() - j->t0 < j->sw_timer_ns)
			return 0;
		j->sw_stopped = 1;
	}
	if (j->in_flight)
		return 1;
	if (!j->sw_wear_out) {
		j->sw_timer_ns = 0;
		j->units = k;
		mdfio_phase_over(td, j);
		return 1;
	}
	if (stonewall_exchange(j, k / j->datasets, &max)) {
		/* the run is broken: stop here, the phase left interrupted */
		td->done = 1;
		return 1;
	}
	/* this rank brought k / D, and a rank of a jobfile with another
	 * steps_per_set cannot take this one beyond its own */
	j->units = (max < j->steps ? max : j->steps) * j->datasets;
	if (j->finished < j->units)
		return 0;
	mdfio_phase_over(td, j);
	return 1;
}
