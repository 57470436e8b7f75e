/* Crash recovery: a cleanup whose status cannot be trusted (a phase was
 * interrupted) removes whatever objects it finds in this rank's datasets,
 * reading the directories instead of following the FIFO. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "job.h"
#include "namespace.h"
#include "sysio.h"

/* A listing of dataset ds (NULL if it has none: never made). A descriptor
 * of its own, not a dup: a dup would share the read position with every
 * listing before it. */
static DIR *listing(const struct mdfio_dataset *ds)
{
	int fd;
	DIR *dir;

	if (ds->fd < 0)
		return NULL;
	fd = openat(ds->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	dir = fdopendir(fd);
	if (!dir)
		close(fd);
	return dir;
}

/* Objects left in our datasets, for a cleanup that cannot trust the status. */
uint64_t mdfio_count_objects(struct mdfio_job *j)
{
	uint64_t n = 0, idx;
	uint32_t d;

	for (d = 0; d < j->datasets; d++) {
		DIR *dir = listing(&j->dsets[MDFIO_OWN][d]);
		struct dirent *de;

		if (!dir)
			continue;
		while ((de = readdir(dir)))
			n += mdfio_parse_object_name(de->d_name, &idx);
		closedir(dir);
	}
	return n;
}

/* Recovery: the next object found by reading our dataset directories, its
 * name into j->rec_name. 0 if there is none. Units of a recovery run one at
 * a time (an object whose delete is in flight would be listed again). */
static int next_found(struct mdfio_job *j)
{
	struct dirent *de;
	uint64_t idx;

	for (;;) {
		if (!j->rec_dir) {
			if (j->rec_d >= j->datasets)
				return 0;
			j->rec_dir = listing(&j->dsets[MDFIO_OWN][j->rec_d]);
			if (!j->rec_dir) {
				j->rec_d++;
				continue;
			}
		}
		while ((de = readdir(j->rec_dir))) {
			if (!mdfio_parse_object_name(de->d_name, &idx))
				continue;
			j->rec_found++;
			mdfio_object_name(j->rec_name, idx);
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
		const struct mdfio_dataset *ds = &j->dsets[MDFIO_OWN][j->rec_d];

		err = mdfio_sys_unlink(ds->fd, j->rec_name);
		mdfio_account_op(td, j, MDFIO_OP_DELETE, t0, mdfio_now(), err,
				 ds->path, j->rec_name);
	}
	io_u->error = err ? EIO : 0;
	if (++j->finished == j->units)
		mdfio_phase_over(td, j);
}
