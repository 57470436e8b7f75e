/* The latency logs of a job (md-workbench -L), opened on entering the
 * phase. md-workbench's files: without --latency-all rank 0's own log of
 * each operation under the plain name and nothing else; with it (
 * latency_all=1) only the logs of all ranks, merged into "-all" by the last
 * rank out, from a file per rank that stays. The file format is oplog.c's. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job.h"
#include "oplog.h"

/* md-workbench's file name of an operation in a phase; NULL: not logged. */
static const char *log_name(const struct mdfio_job *j, enum mdfio_op op)
{
	unsigned int s;

	/* only what the job's units do (read_only: no create, no delete) */
	for (s = 0; s < j->nr_steps; s++)
		if (j->ph->steps[s].op == op)
			return j->ph->log_name[op];
	return NULL;
}

/* Rank r's log of an operation of this phase: its own file with
 * latency_all, else md-workbench's plain name (rank 0 only); 0 if the name
 * does not fit. */
static size_t rank_log_path(const struct mdfio_job *j, const char *name,
			    uint32_t rank, char *buf, size_t len)
{
	char suffix[32] = "";

	if (j->latency_all)
		snprintf(suffix, sizeof(suffix), "-rank%" PRIu32, rank);
	return mdfio_oplog_path(buf, len, j->log_prefix, j->log_factor, j->log_iter,
				name, suffix);
}

/* Closes the logs; with discard (the phase was refused) also removes the
 * files this rank just created. */
void mdfio_close_logs(struct mdfio_job *j, int discard)
{
	char path[PATH_MAX];
	int op;

	for (op = 0; op < MDFIO_OP_NR; op++) {
		size_t named;
		int err;

		if (!j->log[op])
			continue;
		err = mdfio_oplog_close(j->log[op]);
		j->log[op] = NULL;
		named = rank_log_path(j, log_name(j, (enum mdfio_op)op), j->rank, path, sizeof(path));
		if (discard && named) {
			unlink(path);
		} else if (err) {
			/* a log cut short (a full file system) fails the job */
			mdfio_error("latency log %s: %s: rows of this phase are missing",
				    named ? path : mdfio_op_names[op], strerror(err));
			j->late_error = 1;
		}
	}
}

int mdfio_open_logs(struct mdfio_job *j, unsigned int repeat)
{
	char path[PATH_MAX];
	int op;

	/* md-workbench writes rank 0's log alone without --latency-all */
	if (!j->log_prefix[0] || (!j->latency_all && j->rank))
		return 0;
	/* md-workbench's iteration: 0 for precreate, then one per benchmark
	 * run; cleanup gets the next. With -T (adaptive_waiting) an
	 * iteration is md-workbench's 8 runs, all of one iteration number */
	j->log_iter = j->ph->logs_before_status ? 0 :
		(j->pos - j->ns_start) / j->steps / j->runs_per_iteration;
	if (j->ph->advances && j->read_only)
		j->log_iter += repeat - 1;
	for (op = 0; op < MDFIO_OP_NR; op++) {
		const char *name = log_name(j, (enum mdfio_op)op);

		if (!name)
			continue;
		if (!rank_log_path(j, name, j->rank, path, sizeof(path))) {
			mdfio_close_logs(j, 1);
			return mdfio_error("latency_log=%s: path too long", j->log_prefix);
		}
		j->log[op] = mdfio_oplog_create(path);
		if (!j->log[op]) {
			int err = errno;

			mdfio_close_logs(j, 1);
			return mdfio_error("latency_log: cannot create %s: %s%s", path, strerror(err),
					 err == EEXIST ? " (mdfio never replaces a file: remove it or use another prefix)" : "");
		}
	}
	return 0;
}

/* With latency_all, the last rank out merges every rank's log of each
 * operation into the "-all" file. */
void mdfio_merge_logs(struct mdfio_job *j)
{
	char out[PATH_MAX];
	char **in = calloc(j->ranks, sizeof(char *));
	char *paths = malloc((size_t)j->ranks * PATH_MAX);
	uint32_t r;
	int op, err;

	for (r = 0; in && paths && r < j->ranks; r++)
		in[r] = paths + (size_t)r * PATH_MAX;
	for (op = 0; in && paths && op < MDFIO_OP_NR; op++) {
		const char *name = log_name(j, (enum mdfio_op)op);

		if (!name)
			continue;
		for (r = 0; r < j->ranks; r++)
			rank_log_path(j, name, r, in[r], PATH_MAX);
		mdfio_oplog_path(out, sizeof(out), j->log_prefix, j->log_factor, j->log_iter,
				 name, "-all");
		err = mdfio_oplog_merge(out, in, j->ranks);
		if (err) {
			mdfio_error("latency log %s: %s", out, strerror(err));
			j->late_error = 1;
		}
	}
	if (!in || !paths) {
		mdfio_error("out of memory merging the latency logs");
		j->late_error = 1;
	}
	free(paths);
	free(in);
}

