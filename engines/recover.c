/* Crash recovery: a cleanup whose status cannot be trusted (a phase was
 * interrupted) removes whatever objects it finds in this rank's datasets,
 * reading the directories instead of following the FIFO. */
#include <dirent.h>
#include <errno.h>

#include "job.h"
#include "namespace.h"
#include "sysio.h"

/* Objects left in our datasets, for a cleanup that cannot trust the status. */
uint64_t mdfio_count_objects(struct mdfio_job *j)
{
	uint64_t n = 0, idx;
	uint32_t d;

	for (d = 0; d < j->datasets; d++) {
		DIR *dir = opendir(j->dsets[MDFIO_OWN][d].path);
		struct dirent *de;

		if (!dir)
			continue;
		while ((de = readdir(dir)))
			n += mdfio_parse_object_name(de->d_name, &idx);
		closedir(dir);
	}
	return n;
}

/* Recovery: the next object found by reading our dataset directories into
 * j->path. 0 if there is none. Units of a recovery run one at a time (an
 * object whose delete is in flight would be listed again). */
static int next_found(struct mdfio_job *j)
{
	struct dirent *de;
	uint64_t idx;

	for (;;) {
		if (!j->rec_dir) {
			if (j->rec_d >= j->datasets)
				return 0;
			j->rec_dir = opendir(j->dsets[MDFIO_OWN][j->rec_d].path);
			if (!j->rec_dir) {
				j->rec_d++;
				continue;
			}
		}
		while ((de = readdir(j->rec_dir))) {
			if (!mdfio_parse_object_name(de->d_name, &idx))
				continue;
			j->rec_found++;
			memcpy(j->path, j->dsets[MDFIO_OWN][j->rec_d].path, j->dsets[MDFIO_OWN][j->rec_d].len);
			mdfio_object_path(j->path, sizeof(j->path), j->dsets[MDFIO_OWN][j->rec_d].len, idx);
			return 1;
		}
		/* unlinking while reading a directory may skip entries (tmpfs
		 * does): read it again until a pass finds no object */
		if (j->rec_found) {
			j->rec_found = 0;
			rewinddir(j->rec_dir);
			continue;
		}
		closedir(j->rec_dir);
		j->rec_dir = NULL;
		j->rec_d++;
	}
}

/* A recovery unit: one synchronous unlink of an object found on disk. */
void mdfio_recover_one(struct thread_data *td, struct mdfio_job *j,
			struct io_u *io_u)
{
	uint64_t t0 = mdfio_now();
	int err = ENOENT;	/* none left: the unit of an empty recovery */

	if (next_found(j)) {
		err = mdfio_sys_unlink(j->path);
		mdfio_account_op(td, j, MDFIO_OP_DELETE, t0, mdfio_now(), err, j->path);
	}
	io_u->error = err ? EIO : 0;
	if (++j->finished == j->units)
		mdfio_phase_over(td, j);
}

