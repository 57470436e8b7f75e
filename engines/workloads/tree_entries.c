/* phase=read, rewrite and delete: one manifest entry per unit, each
 * touched only while its name still holds what the copy made there. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tree.h"

/* The end of a read or rewrite: the file closed (its error counts as the
 * operation's), the time from t0 recorded, or the operation counted as
 * dropped with its one line. err -1: not the copy's file (no errno). */
static int64_t closed(struct thread_data *td, struct tree_job *j, enum fio_ddir dd, const char *what,
		      const char *path, int fd, int err, uint64_t t0, uint64_t bytes)
{
	uint64_t t1;

	if (fd >= 0 && close(fd) && !err)
		err = errno;
	t1 = mdfio_now();
	if (err) {
		td->ts.drop_io_u[dd]++;
		op_error(j, what, path, err > 0 ? err : 0);
		return -1;
	}
	mdfio_add_clat(td, dd, t1 - t0, bytes);
	return (int64_t)bytes;
}

static int64_t read_one(struct thread_data *td, struct tree_job *j, const struct tree_entry *e)
{
	const char *name;
	int dir = enter_parent(j, e->path, &name), fd, err = 0;
	uint64_t t0, bytes = 0;
	struct tree_id id;

	if (dir < 0) {
		td->ts.drop_io_u[DDIR_READ]++;
		return op_error(j, "read: open the directory of", e->path, errno), -1;
	}
	t0 = mdfio_now();
	fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
	} else if (id_of(fd, "", &id) || !same_file(e, &id)) {
		err = -1;
	} else {
		for (;;) {
			ssize_t got = read(fd, j->buf, TREE_COPY_BUF);

			if (got < 0) {
				err = errno;
				break;
			}
			if (!got)
				break;
			bytes += (uint64_t)got;
		}
	}
	return closed(td, j, DDIR_READ, "read:", e->path, fd, err, t0, bytes);
}

static int64_t rewrite_one(struct thread_data *td, struct tree_job *j, const struct tree_entry *e)
{
	const char *name;
	int dir = enter_parent(j, e->path, &name), fd, err = 0;
	uint64_t t0;
	struct tree_id id;
	size_t put = 0;

	if (dir < 0) {
		td->ts.drop_io_u[DDIR_WRITE]++;
		return op_error(j, "rewrite: open the directory of", e->path, errno), -1;
	}
	t0 = mdfio_now();
	/* no O_TRUNC: the file is truncated only once it has proved to be
	 * the one the copy made */
	fd = openat(dir, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
	} else if (id_of(fd, "", &id) || !same_file(e, &id)) {
		err = -1;
	} else if (ftruncate(fd, 0)) {
		err = errno;
	} else {
		while (put < j->value_len) {
			ssize_t w = write(fd, j->value + put, j->value_len - put);

			if (w < 0) {
				err = errno;
				break;
			}
			put += (size_t)w;
		}
	}
	return closed(td, j, DDIR_WRITE, "rewrite:", e->path, fd, err, t0, j->value_len);
}

/* A name the delete leaves: not what the copy made there, or a directory
 * that holds names the copy did not make. Not an error: it is kept. */
static void left(struct tree_job *j, const char *path, const char *why)
{
	if (j->left++)
		return;
	snprintf(j->first_left, sizeof(j->first_left), "%s%s%s (%s)",
		 TREE_NAME, strcmp(path, ".") ? "/" : "", strcmp(path, ".") ? path : "", why);
	one_line(j->first_left);
}

static int64_t delete_one(struct thread_data *td, struct tree_job *j, const struct tree_entry *e)
{
	const char *name;
	int dir = enter_parent(j, e->path, &name), err = 0;
	uint64_t t0, t1;
	struct tree_id id;
	int is_dir = e->type == 'd';

	if (dir < 0) {
		if (errno == ENOENT)
			return 0;	/* gone with its directory, or before */
		if (errno == ELOOP || errno == ENOTDIR || errno == EXDEV) {
			/* a directory on its way is a symlink now, or no
			 * directory: the name is not reached, so not touched */
			left(j, e->path, "a directory on its way is not the copy's");
			return 0;
		}
		td->ts.drop_io_u[DDIR_TRIM]++;
		return op_error(j, "delete: open the directory of", e->path, errno), -1;
	}
	/* the name must still hold what the copy made there */
	if (id_of(dir, name, &id)) {
		if (errno == ENOENT)
			return 0;
		td->ts.drop_io_u[DDIR_TRIM]++;
		return op_error(j, "delete: stat", e->path, errno), -1;
	}
	if (!same_file(e, &id)) {
		left(j, e->path, "not what the copy made there");
		return 0;
	}
	t0 = mdfio_now();
	err = unlinkat(dir, name, is_dir ? AT_REMOVEDIR : 0) ? errno : 0;
	t1 = mdfio_now();
	if (err == ENOTEMPTY || err == EEXIST) {
		if (is_dir)
			failed_sync(td);
		left(j, e->path, "it holds names the copy did not make");
		return 0;
	}
	if (err) {
		if (is_dir)
			failed_sync(td);
		else
			td->ts.drop_io_u[DDIR_TRIM]++;
		return op_error(j, "delete:", e->path, err), -1;
	}
	if (is_dir)
		record(td, DDIR_SYNC, t0, t1);
	else
		mdfio_add_clat(td, DDIR_TRIM, t1 - t0, 0);
	return 0;
}

/* The manifest's entries this rank works on: read and rewrite split the
 * files among the ranks, entry k to rank k mod N; delete takes every
 * entry, the deepest first. */
static uint64_t rank_units(const struct tree_job *j)
{
	uint64_t n = 0, k;

	if (j->phase == TP_DELETE)
		return j->man.n;
	for (k = 0; k < j->man.files; k++)
		n += k % j->ranks == j->rank;
	return n;
}

static const struct tree_entry *unit_entry(struct tree_job *j, uint64_t k)
{
	if (j->phase == TP_DELETE)
		return &j->man.entry[j->man.n - 1 - k];
	return j->man.file[k * j->ranks + j->rank];
}

int start_entries(struct tree_job *j, const char *root, const struct tree_values *o)
{
	(void)o;
	if (open_tree(j, root))
		return 1;
	j->units = rank_units(j);
	return 0;
}

static uint64_t fnv_step(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

int start_rewrite(struct tree_job *j, const char *root, const struct tree_values *o)
{
	uint64_t h = 0x6d64666955ULL;
	size_t i;

	/* the same value for every file and rank: the study writes one
	 * random value, made once; rewrite_size= is j->value_len */
	j->value = malloc(j->value_len);
	if (!j->value)
		return mdfio_error("out of memory");
	for (i = 0; i < j->value_len; i++)
		j->value[i] = (unsigned char)((h = fnv_step(h + i)) >> 56);
	return start_entries(j, root, o);
}

int64_t read_unit(struct thread_data *td, struct tree_job *j, uint64_t k)
{
	return read_one(td, j, unit_entry(j, k));
}

int64_t rewrite_unit(struct thread_data *td, struct tree_job *j, uint64_t k)
{
	return rewrite_one(td, j, unit_entry(j, k));
}

int64_t delete_unit(struct thread_data *td, struct tree_job *j, uint64_t k)
{
	return delete_one(td, j, unit_entry(j, k));
}
