/* The accounting of each operation a unit ends: its latency sample in fio's
 * statistics (each operation has its slot of fio's JSON), its row in the
 * latency log, and its errors, kept for the report at the job's end. Runs
 * once per request: account_op is inlined into the unit state machine's
 * hot path (units.c); account.c holds the rest. */
#ifndef MDFIO_ACCOUNT_H
#define MDFIO_ACCOUNT_H

#include "fio_compat.h"
#include "job.h"
#include "oplog.h"

/* fio's JSON slot of each operation: create=write, read=read, delete=trim
 * (clat_ns), stat=sync (lat_ns). */
static const enum fio_ddir op_ddir[MDFIO_OP_NR] = {
	[MDFIO_OP_CREATE] = DDIR_WRITE,
	[MDFIO_OP_STAT] = DDIR_SYNC,
	[MDFIO_OP_READ] = DDIR_READ,
	[MDFIO_OP_DELETE] = DDIR_TRIM,
};

/* The first error of an operation, kept for the report (account.c); why:
 * the backend's words beyond err (req.h), or NULL. */
void mdfio_count_error(struct mdfio_op_errors *c, int err, const char *why,
		       const char *dir, const char *name) __attribute__((cold));
/* A failed operation on object name of the dataset named dataset in the
 * store: its count, and a create's stop of the run. */
void mdfio_op_failed(struct mdfio_job *j, enum mdfio_op op, int err, const char *why,
		     const char *dataset, const char *name) __attribute__((cold));
/* account_op for a caller outside the hot path (recover.c). */
void mdfio_account_op(struct thread_data *td, struct mdfio_job *j,
		      enum mdfio_op op, uint64_t start, uint64_t end, int err,
		      const char *why, const char *dataset, const char *name);
/* What a request's err says: strerror, or what an object's name held
 * instead of an object (MDFIO_ERR_NOT_OBJECT). */
const char *mdfio_err_text(int err);
/* mdfio_err_text(err), and " (why)" if why is not NULL, into buf. */
const char *mdfio_err_why(int err, const char *why, char *buf, size_t len);
/* Reports (one line each) the errors of each operation this rank counted;
 * returns how many it counted, the datasets' included. */
uint64_t mdfio_report_errors(struct mdfio_job *j);

/* Runs once per request: inlined into unit_next (units.c), the hot path;
 * recover.c calls it through mdfio_account_op. */
static inline __attribute__((always_inline)) void
account_op(struct thread_data *td, struct mdfio_job *j, enum mdfio_op op,
	   uint64_t start, uint64_t end, int err, const char *why, const char *dataset,
	   const char *name)
{
	enum fio_ddir dd = op_ddir[op];
	uint64_t ns = end - start;

	mdfio_account_slot(td, dd, ns, j->size, err);
	if (!err) {
		if (j->log[op])
			mdfio_oplog_row(j->log[op], start - j->t0, ns);
		return;
	}
	mdfio_op_failed(j, op, err, why, dataset, name);
}

#endif
