/* Crash recovery: a cleanup whose status cannot be trusted (a phase was
 * interrupted) reads this rank's dataset directories instead of following
 * the FIFO, and removes what mdfio can have made there: regular files named
 * file-<i> with i in the window the status allows (mdfio_status_window).
 * Anything else is left, and reported. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "account.h"
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

/* Whether entry de of dir, our dataset d, can be an object mdfio made: its
 * name, index and type, and no create of it found the name taken. */
static int ours(const struct mdfio_job *j, uint32_t d, DIR *dir, const struct dirent *de,
		uint64_t *idx)
{
	struct stat sb;

	if (!mdfio_parse_object_name(de->d_name, idx) || *idx < j->rec_lo || *idx >= j->rec_hi)
		return 0;
	if (j->nr_taken && mdfio_taken_find(j->taken, j->nr_taken, j->rank, d, *idx))
		return 0;
	if (de->d_type != DT_UNKNOWN && de->d_type != DT_REG)
		return 0;
	/* one link, as every object mdfio makes: a hard link's name is the
	 * user's, as the benchmark's stat says (mdfio_sys_not_object) */
	return !fstatat(dirfd(dir), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) &&
	       !mdfio_sys_not_object(sb.st_mode, sb.st_nlink);
}

static int dot(const char *name)
{
	return name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
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
			n += ours(j, d, dir, de, &idx);
		closedir(dir);
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
		DIR *dir = listing(ds);
		struct dirent *de;

		if (!dir)
			continue;
		while ((de = readdir(dir))) {
			if (dot(de->d_name))
				continue;
			if (!n++)
				snprintf(first, sizeof(first), "%s/%s", ds->path, de->d_name);
		}
		closedir(dir);
	}
	if (n && j->rec_lo == j->rec_hi)
		mdfio_error("rank %" PRIu32 " cleanup: left %" PRIu64 " entr%s in its datasets (first: %s): mdfio-null made this namespace, so no file in it is mdfio's",
			    j->rank, n, n > 1 ? "ies" : "y", first);
	else if (n)
		mdfio_error("rank %" PRIu32 " cleanup: left %" PRIu64 " entr%s in its datasets (first: %s): mdfio removes only regular files of one link file-<i> with %" PRIu64 " <= i <= %" PRIu64 ", what this namespace's status allows it to have made, and none whose create found the name taken",
			    j->rank, n, n > 1 ? "ies" : "y", first, j->rec_lo, j->rec_hi - 1);
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
			if (!ours(j, j->rec_d, j->rec_dir, de, &idx))
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
	if (++j->finished == j->units) {
		uint32_t d;

		report_left(j);
		for (d = 0; d < j->datasets; d++)
			mdfio_remove_dataset(td, j, d);
		mdfio_phase_over(td, j);
	}
}
