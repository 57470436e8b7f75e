/* The accounting of operations outside the hot path (account.h): the first
 * error of each operation, what a request's error says, and the report of
 * a rank's errors at its job's end. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "account.h"

/* The first error of an operation: kept for the report at the job's end
 * (the only place an object's full path is made). */
void __attribute__((cold, noinline))
mdfio_count_error(struct mdfio_op_errors *c, int err, const char *why, const char *dir, const char *name)
{
	if (!c->count++) {
		c->first_errno = err;
		snprintf(c->first_path, sizeof(c->first_path), "%s/%s", dir, name);
		snprintf(c->first_why, sizeof(c->first_why), "%s", why ? why : "");
	}
	if (MDFIO_IS_NOT_OBJECT(err) && !c->first_alien) {
		c->first_alien = err;
		snprintf(c->alien_path, sizeof(c->alien_path), "%s/%s", dir, name);
	}
}

/* The dataset's path is made here, off the hot path, from its name. */
void __attribute__((cold, noinline))
mdfio_op_failed(struct mdfio_job *j, enum mdfio_op op, int err, const char *why,
		const char *dataset, const char *name)
{
	const char *dir = dataset - j->dset_name_at;
	char text[256];

	mdfio_count_error(&j->op[op], err, why, dir, name);
	if (mdfio_store_unreachable(err))
		mdfio_store_lost(j, op, mdfio_err_why(err, why, text, sizeof(text)), dir, name);
	else if (op == MDFIO_OP_CREATE && !j->ignore_create_errors)
		mdfio_create_failed(j, err, mdfio_err_why(err, why, text, sizeof(text)), dir, name);
}

const char *mdfio_err_text(int err)
{
#define NOT_OBJECT ", not an object (mdfio makes each a regular file of one link): left as it is"
	if (!MDFIO_IS_NOT_OBJECT(err))
		return strerror(err);
	switch ((unsigned int)(err & 0xf) << 12) {
	case S_IFIFO:
		return "a FIFO" NOT_OBJECT;
	case S_IFCHR:
		return "a character device" NOT_OBJECT;
	case S_IFBLK:
		return "a block device" NOT_OBJECT;
	case S_IFDIR:
		return "a directory" NOT_OBJECT;
	case S_IFLNK:
		return "a symlink, which mdfio never follows" NOT_OBJECT;
	case S_IFSOCK:
		return "a socket" NOT_OBJECT;
	case S_IFREG:
		return "a regular file of other than one link (a hard link)" NOT_OBJECT;
	default:
		return "a file of no known type" NOT_OBJECT;
	}
#undef NOT_OBJECT
}

const char *mdfio_err_why(int err, const char *why, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s", mdfio_err_text(err), why && why[0] ? " (" : "", why ? why : "",
		 why && why[0] ? ")" : "");
	return buf;
}

void mdfio_account_op(struct thread_data *td, struct mdfio_job *j,
		      enum mdfio_op op, uint64_t start, uint64_t end, int err,
		      const char *why, const char *dataset, const char *name)
{
	account_op(td, j, op, start, end, err, why, dataset, name);
}

uint64_t mdfio_report_errors(struct mdfio_job *j)
{
	uint64_t total = j->dsets_err;
	char text[256];
	int op;

	for (op = 0; op < MDFIO_OP_NR; op++) {
		const struct mdfio_op_errors *c = &j->op[op];

		total += c->count;
		/* a create that stopped the run has said so */
		if (!c->count || (op == MDFIO_OP_CREATE && j->halted && c->count == 1))
			continue;
		if (c->first_alien && !MDFIO_IS_NOT_OBJECT(c->first_errno))
			mdfio_error("rank %" PRIu32 " %s: %" PRIu64 " %s error%s (first: %s: %s; first name holding no object: %s: %s)",
				    j->rank, mdfio_phase_name(j->phase), c->count, mdfio_op_names[op],
				    c->count > 1 ? "s" : "", c->first_path,
				    mdfio_err_why(c->first_errno, c->first_why, text, sizeof(text)), c->alien_path,
				    mdfio_err_text(c->first_alien));
		else
			mdfio_error("rank %" PRIu32 " %s: %" PRIu64 " %s error%s (first: %s: %s)",
				    j->rank, mdfio_phase_name(j->phase), c->count, mdfio_op_names[op],
				    c->count > 1 ? "s" : "", c->first_path,
				    mdfio_err_why(c->first_errno, c->first_why, text, sizeof(text)));
	}
	return total;
}
