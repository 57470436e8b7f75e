/* md-workbench's -v output (verbose=): its error lines and, at level 2,
 * its trace of every operation, in its wording and order, on stderr. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "job.h"

/* One line of md-workbench's -v output on stderr, in one write, so that
 * the lines of ranks running at once do not mix (stdout may be fio's JSON). */
void __attribute__((cold, noinline, format(printf, 2, 3)))
mdfio_trace(const struct mdfio_job *j, const char *fmt, ...)
{
	char line[2 * PATH_MAX + 128];
	va_list ap;
	int n;

	(void)j;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;	/* nowhere to say it */
}

/* md-workbench's -v lines of an operation that ended with err (level 1:
 * its error lines, level 2: its trace of every operation, in its wording
 * and order, with its paths: root/<rank>_<d>/file-<i>). */
void mdfio_trace_op(const struct mdfio_job *j, const struct mdfio_unit *u, int err)
{
	const struct mdfio_req *r = &u->req;
	uint32_t peer = j->dsets[j->ph->steps[u->step].target][u->d].rank;
	int v = (int)j->verbose;

	switch (r->op) {
	case MDFIO_OP_STAT:
		if (v >= 2)
			mdfio_trace(j, "%" PRIu32 ": stat %s/%s (%d)", j->rank, mdfio_unit_dir(j, u), r->name, err ? -1 : 0);
		if (err)
			mdfio_trace(j, "ERROR: %" PRIu32 ": Error while stating the obj: %s/%s", j->rank, mdfio_unit_dir(j, u), r->name);
		else if (v >= 2)	/* md-workbench says so before it reads */
			mdfio_trace(j, "%" PRIu32 ": read %s/%s pretend: %" PRIu32, j->rank, mdfio_unit_dir(j, u), r->name, peer);
		break;
	case MDFIO_OP_READ:
		/* md-workbench counts a failed verify without a line */
		if (err && err != EBADMSG)
			mdfio_trace(j, "WARNING: %" PRIu32 ": Error while reading the obj: %s/%s", j->rank, mdfio_unit_dir(j, u), r->name);
		break;
	case MDFIO_OP_DELETE:
		if (v >= 2)
			mdfio_trace(j, "%" PRIu32 ": delete %s/%s", j->rank, mdfio_unit_dir(j, u), r->name);
		break;
	case MDFIO_OP_CREATE:
		if (err)
			mdfio_trace(j, "ERROR: %" PRIu32 ": Error while creating the obj: %s/%s", j->rank, mdfio_unit_dir(j, u), r->name);
		if (v < 2)
			break;
		/* md-workbench's precreate names its rank's last dataset (the
		 * one its mkdir loop made last) and that mkdir's result; its
		 * benchmark the stat's result, 0 when it gets to a create */
		if (j->phase == MDFIO_PRECREATE)
			mdfio_trace(j, "%" PRIu32 ": write %s:%s/%s (0) pretend: %" PRIu32, j->rank,
			      j->dsets[MDFIO_OWN][j->datasets - 1].path, mdfio_unit_dir(j, u), r->name, j->rank);
		else
			mdfio_trace(j, "%" PRIu32 ": write %s/%s (0) pretend: %" PRIu32, j->rank, mdfio_unit_dir(j, u),
			      r->name, peer);
		break;
	default:
		break;
	}
}
