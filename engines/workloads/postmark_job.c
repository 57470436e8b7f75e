/* mdfio-postmark's job as both issue paths share it: the next operation,
 * where it is, and what its end is accounted as (postmark_job.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "postmark_job.h"

/* the slot of each kind of operation, and the headline slot of each phase */
static const enum fio_ddir kind_ddir[MDFIO_PM_KIND_NR] = {
	[MDFIO_PM_CREATE] = DDIR_WRITE, [MDFIO_PM_READ] = DDIR_READ,
	[MDFIO_PM_APPEND] = DDIR_SYNC, [MDFIO_PM_DELETE] = DDIR_TRIM,
};
static const enum fio_ddir phase_ddir[] = { DDIR_WRITE, DDIR_READ, DDIR_TRIM };

uint64_t pm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int pm_fail(const char *fmt, ...)
{
	char line[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "mdfio: %s\n", line);
	fflush(stderr);
	return 1;
}

int pm_next_op(struct pm_job *j, struct mdfio_pm_op *op)
{
	if (!j->have_next)
		return 0;
	*op = j->next;
	j->have_next = mdfio_pm_next(&j->pm, &j->next) && (int)j->next.phase == (int)j->phase;
	return 1;
}

static void count_error(struct pm_job *j, const struct mdfio_pm_op *op, int err)
{
	struct pm_errors *e = &j->err[op->kind];

	if (!e->count++) {
		e->first_errno = err;
		mdfio_pm_name(e->first_name, sizeof(e->first_name), &j->p, op);
	}
}

static void account(struct thread_data *td, struct pm_job *j, const struct mdfio_pm_op *op,
		    uint64_t ns, int err)
{
	enum fio_ddir dd = kind_ddir[op->kind];

	if (dd == DDIR_SYNC)
		td->ts.total_io_u[DDIR_SYNC]++;
	if (!err) {
		if (dd == DDIR_SYNC)
			add_sync_clat_sample(&td->ts, ns);
		else
			mdfio_add_clat(td, dd, ns, op->bytes);
		return;
	}
	if (dd != DDIR_SYNC)
		td->ts.drop_io_u[dd]++;
	count_error(j, op, err);
}

int pm_op_dir(struct pm_job *j, const struct mdfio_pm_op *op, char *name, size_t len)
{
	char path[64];
	const char *slash;

	mdfio_pm_name(path, sizeof(path), &j->p, op);
	slash = strrchr(path, '/');
	snprintf(name, len, "%s", slash ? slash + 1 : path);
	return j->dir_fds[j->p.subdirectories > 1 ? op->subdir : 0];
}

void pm_ended(struct thread_data *td, struct pm_job *j, const struct mdfio_pm_op *op,
	      uint64_t start, uint64_t end, int err)
{
	if (!j->t0 || start < j->t0)
		j->t0 = start;
	account(td, j, op, end - start, err);
	if (++j->done == j->units) {
		/* the phase's exact time, as the headline slot's one slat sample */
		mdfio_add_slat(td, phase_ddir[j->phase], end - j->t0);
		td->done = 1;
	}
}
