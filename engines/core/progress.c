/* What fio shows of an mdfio job while it runs and after: its state in fio's
 * progress line, and the description fio prints above its closing lines.
 * fio knows sections, not phases: these say which phase and repeat a job is,
 * whether it runs yet, and where md-workbench's numbers are. */
#include <stdio.h>

#include "fio_compat.h"
#include "job.h"

/* What fio's closing lines of a phase count as its I/Os, by phase. */
static const char *const counted[] = {
	[MDFIO_PRECREATE] = "fio's write line counts creates",
	[MDFIO_BENCHMARK] = "fio's read line counts steps (stat, read, delete, create)",
	[MDFIO_CLEANUP] = "fio's trim line counts deletes",
};

void mdfio_job_summary(const struct thread_data *td, char *buf, size_t len)
{
	const struct mdfio_options *eo = td->eo;
	enum mdfio_phase ph;
	char repeat[32] = "";

	if (!eo->phase) {
		snprintf(buf, len, "no phase");
		return;
	}
	ph = (enum mdfio_phase)(eo->phase - 1);
	if (ph == MDFIO_BENCHMARK && eo->repeat > eo->repeats) {
		snprintf(buf, len, "benchmark %u: not run (repeats=%u)", eo->repeat, eo->repeats);
		return;
	}
	if (ph == MDFIO_BENCHMARK)
		snprintf(repeat, sizeof(repeat), " %u of %u", eo->repeat, eo->repeats);
	snprintf(buf, len, "%s%s: %s; md-workbench's numbers: mdfio-report on fio's JSON of the run",
		 mdfio_phase_name(ph), repeat, counted[ph]);
}

/* fio's progress line counts a job as running from when fio starts it; an
 * mdfio job only runs once every earlier phase has ended, so until then it
 * shows as created (C), and fio counts it neither as running nor in its
 * ETA. Not fio's own setting-up state: fio's percentage subtracts jobs in
 * it as if they were among the running ones. */
int mdfio_job_waits(struct thread_data *td)
{
	return td_bump_runstate(td, TD_CREATED);
}

void mdfio_job_runs(struct thread_data *td, int state)
{
	td_restore_runstate(td, state);
}
