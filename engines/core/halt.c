/* A rank that stops its run in mid-phase: it starts no further unit (its
 * job is done once the units in flight have ended), says why in one line,
 * and stops the run, so that every other rank stops at its next barrier
 * and no later phase starts. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/statvfs.h>

#include "job.h"

/* md-workbench ends the run at the first object it cannot create, in the
 * precreate and in the benchmark, unless told to ignore such errors: this
 * rank starts no further unit (the job is done once the units in flight
 * have ended), and the run's other ranks stop at their next barrier. */
void __attribute__((cold, noinline))
mdfio_create_failed(struct mdfio_job *j, int err, const char *text, const char *dir, const char *name)
{
	char note[128];

	if (j->halted)
		return;
	j->halted = 1;
	mdfio_error("rank %" PRIu32 " %s: cannot create %s/%s: %s%s; the run stops here (ignore_precreate_errors=1 counts such errors and goes on)",
		    j->rank, mdfio_phase_name(j->phase), dir, name, text,
		    mdfio_no_room_note(j, err, note, sizeof(note)));
	mdfio_stop_run(j);
}

void __attribute__((cold, noinline))
mdfio_store_lost(struct mdfio_job *j, enum mdfio_op op, const char *text, const char *dir,
		 const char *name)
{
	if (j->halted)
		return;
	j->halted = 1;
	mdfio_error("rank %" PRIu32 " %s: the store did not answer the %s of %s/%s: %s; the run stops here (every later request would wait as long)",
		    j->rank, mdfio_phase_name(j->phase), mdfio_op_names[op], dir, name, text);
	mdfio_stop_run(j);
}

/* A working set of many small objects runs out of inodes long before it
 * runs out of blocks on a file system that fixes their number at mkfs
 * (ext4: one per 16 KiB by default), and "No space left on device" beside
 * a df that shows free space sends a user looking in the wrong place.
 * Only where the datasets are in the root is the root's file system
 * theirs. */
const char *mdfio_no_room_note(const struct mdfio_job *j, int err, char *buf, size_t len)
{
	struct statvfs vfs;

	if (err != ENOSPC || !j->store->in_root || fstatvfs(j->root_fd, &vfs) ||
	    vfs.f_files == 0 || vfs.f_ffree != 0)
		return "";
	snprintf(buf, len, " (no inode is free: the file system's %llu are all in use)",
		 (unsigned long long)vfs.f_files);
	return buf;
}

/* No one is left to receive this rank's results (fio killed, or its fio
 * server's client gone): it stops here, as at a failed create, and the run
 * with it; looked at every ORPHAN_EVERY units (units.c: two system calls)
 * and between the slices of a long wait (waiting_factor, wait.c). */
int __attribute__((cold, noinline)) mdfio_rank_orphaned(struct mdfio_job *j)
{
	char why[256];

	if (!mdfio_orphaned(why, sizeof(why)))
		return 0;
	j->halted = 1;
	mdfio_error("rank %" PRIu32 " %s: %s; the run stops here",
		    j->rank, mdfio_phase_name(j->phase), why);
	mdfio_stop_run(j);
	return 1;
}
