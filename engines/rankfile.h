/* The rank file, <root>/mdfio.ranks: how the ranks of one run, in any number
 * of fio processes on any number of hosts sharing the root, claim their
 * global rank and meet at the barrier that starts every phase (md-workbench's
 * MPI_Barrier). It uses nothing but the shared file system: a rank holds an
 * open-file-description lock on its own record for the life of its job, so
 * the kernel (or the file system's lock manager) drops the claim when the
 * process or its host dies, and a second claimant of a live rank is refused.
 * One record per rank, fixed width, behind a header record. */
#ifndef MDFIO_RANKFILE_H
#define MDFIO_RANKFILE_H

#include <stddef.h>
#include <stdint.h>

#define MDFIO_RANKFILE_NAME "mdfio.ranks"
/* One record: header or rank. Host names longer than fit are cut. */
#define MDFIO_RANKFILE_RECORD 96

/* Names one rank file among all that ever existed in a root: part of the
 * run ids the status file keeps. */
#define MDFIO_RANKFILE_ID_LEN 17

struct mdfio_rankfile {
	int fd;
	uint32_t rank, total;
	char host[64];
	char id[MDFIO_RANKFILE_ID_LEN];	/* 16 hex digits */
};

/* Opens (creating) the rank file in directory dirfd, never through a
 * symlink, and claims rank of total for this process. Returns 0, or 1 with
 * one line in msg (a live holder of the rank is named: host and pid). */
int mdfio_rankfile_claim(struct mdfio_rankfile *rf, int dirfd, uint32_t rank,
			 uint32_t total, const char *host, char *msg,
			 size_t msglen);

/* Waits until every rank of the run has arrived. A rank that is still
 * claimed is waited for however long it takes (it is busy with the previous
 * phase); one that nobody has claimed for timeout_ms makes the barrier fail:
 * returns 1 with the missing ranks in msg, and this rank withdraws; the
 * first rank to give up also lets describe (may be NULL) append to the
 * reason, which every other rank waiting at the barrier then reports. On
 * success *barrier is the barrier's number in the life of the file: every
 * rank that passed it together gets the same. */
typedef void (*mdfio_rankfile_describe)(void *arg,
					const struct mdfio_rankfile *rf,
					char *why, size_t len);
int mdfio_rankfile_barrier(struct mdfio_rankfile *rf, unsigned int timeout_ms,
			   uint64_t *barrier, mdfio_rankfile_describe describe,
			   void *arg, char *msg, size_t msglen);

/* Whether a process other than this one holds rank's claim. */
int mdfio_rankfile_claimed(const struct mdfio_rankfile *rf, uint32_t rank);

/* Gives the claim up; the last rank out removes the rank file, which
 * exists only while ranks of a run are alive (a new one gets a new id). */
void mdfio_rankfile_release(struct mdfio_rankfile *rf, int dirfd);

#endif
