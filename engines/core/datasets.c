/* A job's datasets: their names, and the handles every object operation of
 * a phase goes through, all through the backend's store (struct
 * mdfio_store). In the directory store a dataset is opened once per phase
 * by its single name in the root, never through a symlink, and objects are
 * single names in it. So nothing the engine touches lies outside the root,
 * whatever is renamed or replaced while it runs: a dataset swapped for a
 * symlink after it was opened changes nothing, the descriptor is still the
 * real directory. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "dirstore.h"
#include "job.h"
#include "namespace.h"

const struct mdfio_store mdfio_dir_store = {
	.in_root = 1,
	.probe = mdfio_dirstore_probe,
	.make = mdfio_dirstore_make,
	.open_dataset = mdfio_dirstore_open,
	.close_dataset = mdfio_dirstore_close,
	.remove = mdfio_dirstore_remove,
	.list = mdfio_dirstore_list,
	.next = mdfio_dirstore_next,
	.listed_object = mdfio_dirstore_listed_object,
	.rewind = mdfio_dirstore_rewind,
	.list_close = mdfio_dirstore_list_close,
	.unlink = mdfio_dirstore_unlink,
};

/* Descriptors a job holds besides its datasets' (fio's own, the root, the
 * status and rank files, the logs, a ring), with room to spare. */
#define MDFIO_FD_SPARE 64

/* The targets whose datasets the phase's units use, as a bit mask. */
static unsigned int targets_used(const struct mdfio_job *j)
{
	unsigned int s, mask = 0;

	for (s = 0; s < j->nr_steps; s++)
		mask |= 1u << j->ph->steps[s].target;
	return mask;
}

int mdfio_store_open(struct thread_data *td, struct mdfio_job *j)
{
	void *state;

	j->store = j->be->store;
	if (!j->store->open) {
		j->store_state = &j->root_fd;
		j->store_where = j->root;
		return 0;
	}
	if (j->store->open(td, j->root_fd, &state, &j->store_where))
		return 1;
	j->store_state = state;
	return 0;
}

int mdfio_datasets_build(struct mdfio_job *j)
{
	/* each dataset path has room for an object's name after it, for the
	 * messages that name an object */
	const char *where = j->store_where;
	size_t stride = MDFIO_OBJECT_PATH_MAX(strlen(where));
	size_t where_len = strlen(where);
	struct mdfio_dataset *all;
	uint32_t d, k;

	if (stride > PATH_MAX)
		return j->store->in_root ? mdfio_error("directory=%s: path too long", where) :
		       mdfio_error("%s: path too long", where);
	all = calloc((size_t)j->datasets * MDFIO_TARGET_NR, sizeof(*all));
	j->dset_paths = malloc((size_t)j->datasets * MDFIO_TARGET_NR * stride);
	j->dsets[MDFIO_OWN] = all;
	if (!all || !j->dset_paths)
		return mdfio_error("out of memory for %" PRIu32 " datasets", j->datasets);
	j->dsets[MDFIO_READ_FROM] = all + j->datasets;
	j->dsets[MDFIO_WRITE_TO] = all + 2 * (size_t)j->datasets;
	for (d = 0; d < j->datasets; d++) {
		j->dsets[MDFIO_OWN][d].rank = j->rank;
		j->dsets[MDFIO_READ_FROM][d].rank = mdfio_read_rank(j->rank, d, j->offset, j->ranks);
		j->dsets[MDFIO_WRITE_TO][d].rank = mdfio_write_rank(j->rank, d, j->offset, j->ranks);
	}
	for (k = 0; k < j->datasets * MDFIO_TARGET_NR; k++) {
		struct mdfio_dataset *ds = &all[k];

		ds->path = j->dset_paths + (size_t)k * stride;
		ds->len = mdfio_dataset_path(ds->path, stride, where, ds->rank,
					     k % j->datasets);
		ds->name = ds->path + where_len + 1;
		j->dset_name_at = where_len + 1;
		ds->fd = -1;
	}
	return 0;
}

int mdfio_datasets_fd_limit(struct thread_data *td, struct mdfio_job *j)
{
	unsigned int mask = targets_used(j), targets = 0;
	/* clones running as threads share one table of descriptors */
	uint64_t clones = td->o.use_thread ? j->per_host : 1, need;
	struct rlimit rl;

	/* a store beside the root holds no descriptor per dataset */
	if (!j->store->in_root)
		return 0;
	for (; mask; mask &= mask - 1)
		targets++;
	need = (uint64_t)j->datasets * targets * clones + MDFIO_FD_SPARE;
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY || need <= rl.rlim_cur)
		return 0;
	if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > rl.rlim_cur) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) && getrlimit(RLIMIT_NOFILE, &rl))
			rl.rlim_cur = 0;
	}
	if (rl.rlim_cur == RLIM_INFINITY || need <= rl.rlim_cur)
		return 0;
	return mdfio_error("datasets=%" PRIu32 ": rank %" PRIu32 " keeps %" PRIu64 " dataset directories open, and the open-file limit (ulimit -n) is %llu; raise its hard limit to at least %" PRIu64 " or use fewer datasets",
			   j->datasets, j->rank, need - MDFIO_FD_SPARE,
			   (unsigned long long)rl.rlim_cur, need);
}

/* Opens dataset ds into ds->fd: 0, or 1 with one line naming it. With
 * missing_ok, a dataset that does not exist is no error (fd stays -1). */
static int open_one(struct mdfio_job *j, struct mdfio_dataset *ds, int missing_ok)
{
	const char *what, *other;
	int err, kind;

	err = j->store->open_dataset(j->store_state, ds->name, &ds->fd);
	if (!err) {
		ds->fd_owner = 1;
		return 0;
	}
	ds->fd = -1;
	if (err == ENOENT && missing_ok)
		return 0;
	/* a directory's open reports a symlink as ENOTDIR: say what is there */
	kind = j->store->probe(j->store_state, ds->name, &other);
	if (kind == MDFIO_PROBE_ABSENT)
		what = "is missing";
	else if (kind == MDFIO_PROBE_SYMLINK)
		what = "is a symlink, which mdfio never follows";
	else if (kind == MDFIO_PROBE_OTHER)
		what = other;
	else
		what = NULL;
	if (!what)
		return mdfio_error("rank %" PRIu32 " %s: cannot open dataset %s: %s",
				   j->rank, mdfio_phase_name(j->phase), ds->path, strerror(err));
	return mdfio_error("rank %" PRIu32 " %s: dataset %s %s; expected the directory mdfio's precreate made (nothing was touched)",
			   j->rank, mdfio_phase_name(j->phase), ds->path, what);
}

int mdfio_datasets_open(struct mdfio_job *j)
{
	unsigned int mask = targets_used(j), t, u;
	uint32_t d;

	/* a precreate makes its datasets with its first unit */
	if (j->ph->makes_datasets)
		return 0;
	for (t = 0; t < MDFIO_TARGET_NR; t++) {
		if (!(mask & 1u << t))
			continue;
		for (d = 0; d < j->datasets; d++) {
			struct mdfio_dataset *ds = &j->dsets[t][d];

			/* a dataset another target has open already */
			for (u = 0; u < t; u++)
				if ((mask & 1u << u) && j->dsets[u][d].rank == ds->rank)
					break;
			if (u < t) {
				ds->fd = j->dsets[u][d].fd;
				continue;
			}
			/* an interrupted precreate may not have made all */
			if (open_one(j, ds, j->recover && t == MDFIO_OWN))
				return 1;
		}
	}
	return 0;
}

/* A failed mkdir or rmdir: an error of the object operation beside it in
 * fio's JSON (drop_ios, so that it holds every error), and one of the job's
 * total_err. */
static void count_dataset_error(struct thread_data *td, struct mdfio_job *j,
				enum fio_ddir ddir, int err)
{
	j->dsets_err++;
	td->ts.drop_io_u[ddir]++;
	update_error_count(td, err);
}

int mdfio_datasets_make(struct thread_data *td, struct mdfio_job *j)
{
	uint32_t d;

	for (d = 0; d < j->datasets; d++) {
		struct mdfio_dataset *ds = &j->dsets[MDFIO_OWN][d];

		int err = j->store->make(j->store_state, ds->name);

		if (err) {
			char note[128];

			count_dataset_error(td, j, DDIR_WRITE, err);
			mdfio_error("rank %" PRIu32 ": cannot create dataset %s: %s%s",
				    j->rank, ds->path, strerror(err),
				    mdfio_no_room_note(j, err, note, sizeof(note)));
			/* md-workbench ends the run here unless told to
			 * ignore it; this rank cannot go on either way */
			if (!j->ignore_create_errors)
				mdfio_stop_run(j);
			return 1;
		}
		if (open_one(j, ds, 0)) {
			count_dataset_error(td, j, DDIR_WRITE, EIO);
			return 1;
		}
		j->dsets_done++;
	}
	return 0;
}

void mdfio_remove_dataset(struct thread_data *td, struct mdfio_job *j,
			  uint32_t d)
{
	const struct mdfio_dataset *ds = &j->dsets[MDFIO_OWN][d];
	int err = j->store->remove(j->store_state, ds->name);

	if (!err || (err == ENOENT && j->recover)) {
		j->dsets_done++;
		return;
	}
	count_dataset_error(td, j, DDIR_TRIM, err);
	mdfio_error("rank %" PRIu32 ": cannot remove dataset %s: %s%s", j->rank,
		  ds->path, strerror(err), err == ENOTEMPTY ?
		  " (it holds files mdfio did not expect; they were left alone)" : "");
}

void mdfio_datasets_free(struct mdfio_job *j)
{
	uint32_t k;

	for (k = 0; j->dsets[MDFIO_OWN] && k < j->datasets * MDFIO_TARGET_NR; k++)
		if (j->dsets[MDFIO_OWN][k].fd_owner)
			j->store->close_dataset(j->store_state, j->dsets[MDFIO_OWN][k].fd);
	free(j->dset_paths);
	free(j->dsets[MDFIO_OWN]);
	j->dset_paths = NULL;
	j->dsets[MDFIO_OWN] = NULL;
}
