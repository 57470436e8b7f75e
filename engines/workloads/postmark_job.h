/* mdfio-postmark's job, shared by its issue paths (pm_io=): postmark.c
 * holds the options, the directory and the sequence, and one path
 * performs the operations: sync (system calls or C stdio, one at a time,
 * in postmark.c) or uring (postmark_uring.c, iodepth in flight). Each path
 * is a table of small functions, as fio's engines are. */
#ifndef MDFIO_POSTMARK_JOB_H
#define MDFIO_POSTMARK_JOB_H

#include <limits.h>
#include <stdint.h>

#include "fio_compat.h"
/* the engine's error lines: core/error.c's (a fio server sends them to
 * its client; hosts= hands the last one to the other hosts) */
#include "job.h"

#include "postmark.h"
#include "rankfile.h"

enum phase { PHASE_POOL = MDFIO_PM_POOL, PHASE_TRANSACTIONS = MDFIO_PM_TRANSACTIONS,
	     PHASE_DELETE = MDFIO_PM_DELETION };

struct pm_errors {
	uint64_t count;
	int first_errno;
	char first_name[64];
};

struct pm_job;

/* Beside the mark: the names whose create failed, one a line, appended as
 * each fails. A name taken by a file mdfio did not make stays that file's:
 * the sequence's later reads, appends and delete of it are not performed,
 * in this phase or in a later one, which reads this record. */
#define PM_NOT_MADE_RECORD ".mdfio-postmark.failed"
/* an operation's error when it was not performed: its create failed */
#define PM_ERR_NOT_MADE (-1)

/* An issue path: queue takes the phase's next operation for io_u; a path
 * that completes it there (sync) has no commit, getevents or event. */
struct pm_io_ops {
	const char *name;
	int (*init)(struct thread_data *td, struct pm_job *j);
	enum fio_q_status (*queue)(struct thread_data *td, struct pm_job *j, struct io_u *io_u);
	int (*commit)(struct thread_data *td, struct pm_job *j);
	int (*getevents)(struct thread_data *td, struct pm_job *j, unsigned int min, unsigned int max);
	struct io_u *(*event)(struct pm_job *j, int n);
	void (*exit)(struct pm_job *j);
};

extern const struct pm_io_ops pm_io_uring;

struct pm_job {
	struct mdfio_pm_params p;
	enum phase phase;
	const struct pm_io_ops *io;
	void *io_data;		/* the issue path's own */
	struct mdfio_pm pm;
	int pm_ready;
	struct mdfio_pm_op next;	/* the phase's next operation, if have_next */
	int have_next;
	char root[PATH_MAX];
	int root_fd;
	int *dir_fds;		/* s0 .. s<n-1>, or the root's alone */
	char *source;		/* postmark's content: 2 * size_high bytes */
	char *buf;		/* a read block */
	uint64_t units, done;
	uint64_t t0;
	struct pm_errors err[MDFIO_PM_KIND_NR];
	/* a bit per file number whose create failed (NULL while none), and
	 * the record of them, open once one failed in this phase */
	uint64_t *not_made;
	int record_fd;
	int record_found;	/* an earlier phase made the record */
	/* hosts=: this host's place in the run, whose rank file in the
	 * directory= the hosts meet at before and at the phase's start */
	struct mdfio_rankfile rf;
	int claimed;
	int base_fd;		/* directory=, which holds h<index> and the rank file */
	uint32_t host_index, hosts;	/* hosts: 0 without hosts= */
	char host[64];
};

/* 1 if op is on a file whose create failed: it is not performed */
static inline int pm_not_made(const struct pm_job *j, const struct mdfio_pm_op *op)
{
	return j->not_made && op->kind != MDFIO_PM_CREATE &&
	       (j->not_made[op->file / 64] >> (op->file % 64) & 1);
}

/* op, a create, failed to make its file: marked, and recorded */
void pm_create_failed(struct pm_job *j, const struct mdfio_pm_op *op);
/* A later phase's start: the record of earlier phases' failed creates. */
int pm_read_not_made(struct pm_job *j);

uint64_t pm_now_ns(void);
/* The phase's next operation into *op: 0 once it has none. */
int pm_next_op(struct pm_job *j, struct mdfio_pm_op *op);
/* The descriptor of op's directory, and op's name in it, into name. */
int pm_op_dir(struct pm_job *j, const struct mdfio_pm_op *op, char *name, size_t len);
/* op ran from start to end (ns) with err (0 or an errno value): its
 * latency, its error, and the phase's time once it was the last. */
void pm_ended(struct thread_data *td, struct pm_job *j, const struct mdfio_pm_op *op,
	      uint64_t start, uint64_t end, int err);

#endif
