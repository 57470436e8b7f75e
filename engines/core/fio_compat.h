/* fio's engine-facing API differs between releases without an ABI marker
 * beyond FIO_IOOPS_VERSION; every version-dependent call goes through here.
 * Built and tested against 3.33 (ioops 31) and 3.41 (ioops 39). */
#ifndef MDFIO_FIO_COMPAT_H
#define MDFIO_FIO_COMPAT_H

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "fio.h"

/* Every job of this fio, t its thread_data and i its index: 3.34 turned
 * for_each_td(td, i) into a block macro that declares both itself, so the
 * loop is written here on tnumber_to_td, which every release has. */
#define mdfio_for_each_td(t, i)						\
	for ((i) = 0; (i) < (int)thread_number && ((t) = tnumber_to_td((unsigned int)(i))); (i)++)

/* 3.38 (ioops 36) replaced offset/ioprio/clat_prio_index by the io_u. */
static inline void mdfio_add_clat(struct thread_data *td, enum fio_ddir ddir,
				  unsigned long long nsec,
				  unsigned long long bytes)
{
#if FIO_IOOPS_VERSION >= 36
	add_clat_sample(td, ddir, nsec, bytes, NULL);
#else
	add_clat_sample(td, ddir, nsec, bytes, 0, 0, 0);
#endif
}

/* One operation in ddir's slot of fio's JSON: its latency when it
 * succeeded (err 0), else one dropped I/O. The sync slot (stat, append)
 * has no drop count (drop_io_u holds the data directions only): an
 * operation there counts in its total_io_u, failed or not. */
static inline __attribute__((always_inline)) void
mdfio_account_slot(struct thread_data *td, enum fio_ddir ddir, unsigned long long nsec,
		   unsigned long long bytes, int err)
{
	if (ddir == DDIR_SYNC) {
		td->ts.total_io_u[DDIR_SYNC]++;
		if (!err)
			add_sync_clat_sample(&td->ts, nsec);
	} else if (!err) {
		mdfio_add_clat(td, ddir, nsec, bytes);
	} else {
		td->ts.drop_io_u[ddir]++;
	}
}

/* One submission-latency sample of nsec in ddir's slot. From 3.38 fio takes
 * it from an io_u's start and issue times only, so a stand-in io_u carries
 * an issue time of now and a start nsec before it: a slat log then gets
 * the sample at the time it was added, as 3.33 logs it. */
static inline void mdfio_add_slat(struct thread_data *td, enum fio_ddir ddir,
				  unsigned long long nsec)
{
#if FIO_IOOPS_VERSION >= 36
	struct io_u io_u = { .ddir = ddir };
	long long start;

	fio_gettime(&io_u.issue_time, NULL);
	start = (long long)io_u.issue_time.tv_sec * 1000000000LL +
		io_u.issue_time.tv_nsec - (long long)nsec;
	io_u.start_time.tv_sec = start / 1000000000LL;
	io_u.start_time.tv_nsec = start % 1000000000LL;
	add_slat_sample(td, &io_u);
#else
	add_slat_sample(td, ddir, nsec, 0, 0, 0);
#endif
}

/* Whether the fio that loads engine (its name, for the line) is the
 * release it was built for: fio's structures differ between releases
 * with no marker the loader checks, so an engine loaded by another one
 * says so in one line and gives fio no ops table. */
static inline int mdfio_loaded_by_built_fio(const char *engine)
{
	const char *running = dlsym(RTLD_DEFAULT, "fio_version_string");

	if (running && !strcmp(running, MDFIO_FIO_VERSION))
		return 1;
	fprintf(stderr, "mdfio: %s was built for %s but this fio is %s; rebuild it against the source of this fio "
		"(meson setup -Dfio_src=...)\n", engine, MDFIO_FIO_VERSION, running ? running : "not fio");
	return 0;
}

#endif
