/* mdfio-postmark's job as both issue paths share it: the next operation,
 * where it is, and what its end is accounted as (postmark_job.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <inttypes.h>

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

int pm_next_op(struct pm_job *j, struct mdfio_pm_op *op)
{
	if (!j->have_next)
		return 0;
	*op = j->next;
	j->have_next = mdfio_pm_next(&j->pm, &j->next) && (int)j->next.phase == (int)j->phase;
	return 1;
}

/* Files are numbered 1 .. the count of creates, at most number +
 * transactions; the bitmap is made at the first failed create only.
 * 1, 0 for a number out of that range, or -1. */
static int mark_not_made(struct pm_job *j, uint64_t file)
{
	uint64_t bits = (uint64_t)j->p.number + j->p.transactions + 1;

	if (!file || file >= bits)
		return 0;
	if (!j->not_made && !(j->not_made = calloc((bits + 63) / 64, sizeof(uint64_t))))
		return -mdfio_error("out of memory for the failed creates of %" PRIu64 " files", bits - 1);
	j->not_made[file / 64] |= 1ull << (file % 64);
	return 1;
}

void pm_create_failed(struct pm_job *j, const struct mdfio_pm_op *op)
{
	char line[72];
	int n, saved = errno;

	mark_not_made(j, op->file);
	n = mdfio_pm_name(line, sizeof(line) - 1, &j->p, op);
	line[n++] = '\n';
	/* made by the phase that first needs it (O_EXCL: never someone
	 * else's file), or the one an earlier phase made */
	if (j->record_fd < 0)
		j->record_fd = openat(j->root_fd, PM_NOT_MADE_RECORD,
				      O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC |
				      (j->record_found ? 0 : O_CREAT | O_EXCL), 0664);
	/* one write per name: O_APPEND keeps each line whole */
	if (j->record_fd < 0 || write(j->record_fd, line, (size_t)n) != n)
		mdfio_error("%s/%s: cannot record that %.*s is not mdfio's (%s): a later phase may touch it",
			j->root, PM_NOT_MADE_RECORD, n - 1, line, strerror(errno));
	errno = saved;
}

int pm_read_not_made(struct pm_job *j)
{
	int fd = openat(j->root_fd, PM_NOT_MADE_RECORD, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char *line = NULL, *end;
	const char *num;
	size_t cap = 0;
	unsigned int n = 0;
	int ret = 0;
	FILE *f;

	if (fd < 0)
		return errno == ENOENT ? 0 : mdfio_error("%s/%s: cannot read it: %s", j->root,
						     PM_NOT_MADE_RECORD, strerror(errno));
	j->record_found = 1;
	if (!(f = fdopen(fd, "r"))) {
		close(fd);
		return mdfio_error("out of memory");
	}
	while (!ret && getline(&line, &cap, f) > 0) {
		unsigned long long file;
		int marked = 0;

		n++;
		num = strrchr(line, '/') ? strrchr(line, '/') + 1 : line;
		errno = 0;
		file = strtoull(num, &end, 10);
		if (end != num && *end == '\n' && !errno)
			marked = mark_not_made(j, file);
		if (!marked)
			ret = mdfio_error("%s/%s: line %u: expected a file name of this pool's sequence",
				      j->root, PM_NOT_MADE_RECORD, n);
		else if (marked < 0)
			ret = 1;
	}
	free(line);
	fclose(f);
	return ret;
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

	mdfio_account_slot(td, dd, ns, op->bytes, err);
	if (err)
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
