/* Crash recovery: a cleanup whose status cannot be trusted (a phase was
 * interrupted) lists this rank's datasets in the store instead of following
 * the FIFO, and removes what mdfio can have made there: regular files named
 * file-<i> with i in the window the status allows (mdfio_status_window).
 * Anything else is left, and reported. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>

#include "account.h"
#include "job.h"
#include "namespace.h"

/* A listing of dataset ds in the store (NULL if it has none: never made). */
static void *listing(const struct mdfio_job *j, const struct mdfio_dataset *ds)
{
	if (ds->fd < 0)
		return NULL;
	return j->store->list(j->store_state, ds->name, ds->fd);
}

/* Whether name, listed last in our dataset d, can be an object mdfio made:
 * its name, index and, from the store, type; and no create of it found the
 * name taken. */
static int ours(const struct mdfio_job *j, uint32_t d, void *list, const char *name,
		uint64_t *idx)
{
	if (!mdfio_parse_object_name(name, idx) || *idx < j->rec_lo || *idx >= j->rec_hi)
		return 0;
	if (j->nr_taken && mdfio_taken_find(j->taken, j->nr_taken, j->rank, d, *idx))
		return 0;
	/* one link, as every object mdfio makes: a hard link's name is the
	 * user's, as the benchmark's stat says (mdfio_sys_not_object) */
	return j->store->listed_object(list, name);
}

/* Objects left in our datasets, for a cleanup that cannot trust the status. */
uint64_t mdfio_count_objects(struct mdfio_job *j)
{
	uint64_t n = 0, idx;
	uint32_t d;

	for (d = 0; d < j->datasets; d++) {
		void *list = listing(j, &j->dsets[MDFIO_OWN][d]);
		const char *name;

		if (!list)
			continue;
		while ((name = j->store->next(list)))
			n += ours(j, d, list, name, &idx);
		j->store->list_close(list);
	}
	return n;
}

/* One line if anything is left in the datasets: how much, and the first. */
static void report_left(struct mdfio_job *j)
{
	char first[PATH_MAX] = "";
	uint64_t n = 0;
	uint32_t d;

	for (d = 0; d < j->datasets; d++) {
		const struct mdfio_dataset *ds = &j->dsets[MDFIO_OWN][d];
		void *list = listing(j, ds);
		const char *name;

		if (!list)
			continue;
		while ((name = j->store->next(list)))
			if (!n++)
				snprintf(first, sizeof(first), "%s/%s", ds->path, name);
		j->store->list_close(list);
	}
	if (n && j->rec_lo == j->rec_hi)
		mdfio_error("rank %" PRIu32 " cleanup: left %" PRIu64 " entr%s in its datasets (first: %s): mdfio-null made this namespace, so no file in it is mdfio's",
			    j->rank, n, n > 1 ? "ies" : "y", first);
	else if (n)
		mdfio_error("rank %" PRIu32 " cleanup: left %" PRIu64 " entr%s in its datasets (first: %s): mdfio removes only regular files of one link file-<i> with %" PRIu64 " <= i <= %" PRIu64 ", what this namespace's status allows it to have made, and none whose create found the name taken",
			    j->rank, n, n > 1 ? "ies" : "y", first, j->rec_lo, j->rec_hi - 1);
}

/* Recovery: the next object found by listing our datasets, its
 * name into j->rec_name. 0 if there is none. Units of a recovery run one at
 * a time (an object whose delete is in flight would be listed again). */
static int next_found(struct mdfio_job *j)
{
	const char *name;
	uint64_t idx;

	for (;;) {
		if (!j->rec_list) {
			if (j->rec_d >= j->datasets)
				return 0;
			j->rec_list = listing(j, &j->dsets[MDFIO_OWN][j->rec_d]);
			if (!j->rec_list) {
				j->rec_d++;
				continue;
			}
		}
		while ((name = j->store->next(j->rec_list))) {
			if (!ours(j, j->rec_d, j->rec_list, name, &idx))
				continue;
			j->rec_found++;
			mdfio_object_name(j->rec_name, idx);
			return 1;
		}
		/* unlinking while reading a directory may skip entries (tmpfs
		 * does): read it again until a pass finds no object */
		if (j->rec_found) {
			j->rec_found = 0;
			j->store->rewind(j->rec_list);
			continue;
		}
		j->store->list_close(j->rec_list);
		j->rec_list = NULL;
		j->rec_d++;
	}
}

/* A recovery unit: one synchronous unlink of an object found in the store. */
void mdfio_recover_one(struct thread_data *td, struct mdfio_job *j,
			struct io_u *io_u)
{
	uint64_t t0 = mdfio_now();
	int err = ENOENT;	/* none left: the unit of an empty recovery */

	if (next_found(j)) {
		const struct mdfio_dataset *ds = &j->dsets[MDFIO_OWN][j->rec_d];

		err = j->store->unlink(j->store_state, ds->fd, ds->name, j->rec_name);
		mdfio_account_op(td, j, MDFIO_OP_DELETE, t0, mdfio_now(), err,
				 NULL, ds->name, j->rec_name);
	}
	io_u->error = err ? EIO : 0;
	if (++j->finished == j->units) {
		uint32_t d;

		report_left(j);
		for (d = 0; d < j->datasets; d++)
			mdfio_remove_dataset(td, j, d);
		mdfio_phase_over(td, j);
	}
}
