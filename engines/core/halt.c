/* A rank that stops its run in mid-phase: it starts no further unit (its
 * job is done once the units in flight have ended), says why in one line,
 * and stops the run, so that every other rank stops at its next barrier
 * and no later phase starts. */
#include <inttypes.h>
#include <string.h>

#include "job.h"

/* md-workbench ends the run at the first object it cannot create, in the
 * precreate and in the benchmark, unless told to ignore such errors: this
 * rank starts no further unit (the job is done once the units in flight
 * have ended), and the run's other ranks stop at their next barrier. */
void __attribute__((cold, noinline))
mdfio_create_failed(struct mdfio_job *j, int err, const char *dir, const char *name)
{
	if (j->halted)
		return;
	j->halted = 1;
	mdfio_error("rank %" PRIu32 " %s: cannot create %s/%s: %s; the run stops here (ignore_precreate_errors=1 counts such errors and goes on)",
		    j->rank, mdfio_phase_name(j->phase), dir, name, strerror(err));
	mdfio_stop_run(j);
}

/* No one is left to receive this rank's results (fio killed, or its fio
 * server's client gone): it stops here, as at a failed create, and the run
 * with it; looked at every ORPHAN_EVERY units (units.c: two system calls)
 * and between the slices of a long wait (waiting_factor, wait.c). */
int __attribute__((cold, noinline)) mdfio_rank_orphaned(struct mdfio_job *j)
{
	char why[256];

	if (!mdfio_orphaned(why, sizeof(why)))
		return 0;
	j->halted = 1;
	mdfio_error("rank %" PRIu32 " %s: %s; the run stops here",
		    j->rank, mdfio_phase_name(j->phase), why);
	mdfio_stop_run(j);
	return 1;
}
