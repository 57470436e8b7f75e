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
#include <unistd.h>

#define MDFIO_RANKFILE_NAME "mdfio.ranks"
/* One record: header or rank. Host names longer than fit are cut. */
#define MDFIO_RANKFILE_RECORD 160
/* What a rank enters at a barrier ("benchmark-2"): all must enter the same. */
#define MDFIO_RANKFILE_PHASE_LEN 32

/* Names one rank file among all that ever existed in a root: part of the
 * run ids the status file keeps. */
#define MDFIO_RANKFILE_ID_LEN 17

/* What the ranks of one fio process on one root share while they wait at a
 * barrier, in memory that fio's job processes and threads all see: one of
 * them polls the rank file for all (rankfile.c). */
struct mdfio_rankfile_waiter;

/* A collective of the program that started the run's fio processes (its
 * launcher), which every fio process enters once per barrier of the file,
 * in the same order: when it completes, every rank has arrived and the
 * last to arrive has released the barrier in the file. enter asks for the
 * collective of barrier b and returns 0, or non-zero if it cannot (the
 * waiting ranks then poll the file); once that collective completes,
 * successfully or not, it stores b into *fenced and wakes the futex word
 * *wake (both in memory the ranks share). */
struct mdfio_rankfile_fence {
	int (*enter)(void *arg, uint64_t b, uint64_t *fenced, uint32_t *wake);
	void *arg;
};

struct mdfio_rankfile {
	int fd;
	uint32_t rank, total;
	/* ranks of one fio process (numjobs): its clones end at different
	 * times, so a rank is missing only while its whole block is */
	uint32_t block;
	char host[64];
	char id[MDFIO_RANKFILE_ID_LEN];	/* 16 hex digits */
	/* The run's name (run_id=) digested to 16 hex digits, and its start
	 * for messages; "" if unnamed */
	char run_digest[MDFIO_RANKFILE_ID_LEN];
	char run_id[64];
	long fio_pid;	/* the fio process that reserved the rank */
	int reserved_fd;	/* that fio's open file, if it is this one's */
	/* The file's run when that fio reserved the rank, if a barrier of it
	 * had failed ("": none): a failure the file shows in another run
	 * came after, at a barrier of that fio's own run. */
	char failed_before[MDFIO_RANKFILE_ID_LEN];
	/* Whether the run has stopped where this file cannot show it (1, with
	 * why): a sibling rank that could not claim its record never arrives,
	 * and its claimed siblings would wait for it for ever. The barrier
	 * asks while it waits; NULL (what a claim sets) asks nobody. */
	int (*stopped)(void *arg, char *why, size_t len);
	void *stopped_arg;
	/* Called at every poll while the barrier waits (NULL: nothing), so
	 * that a program which asks the waiting process for something and
	 * waits for the answer is answered meanwhile. */
	void (*waiting)(void *arg);
	void *waiting_arg;
	/* Called with one line (what the barrier sees, and which ranks and
	 * hosts it waits for) when a wait has made no progress for the
	 * barrier's timeout, and again after each further timeout (NULL:
	 * nobody is told). */
	void (*stalled)(void *arg, const char *line);
	void *stalled_arg;
	/* CLOCK_MONOTONIC microseconds by which every rank must have arrived
	 * (0: none): past it, ranks still missing fail the barrier even if
	 * claimed, as a rank that is busy for so long is stuck. A claim
	 * sets none. */
	uint64_t arrive_by_us;
	/* The reservation's, shared with every rank its fio claims on the root
	 * (NULL: this rank polls the file alone). */
	struct mdfio_rankfile_waiter *waiter;
	/* The launcher's collective (NULL: none, or no waiter): the ranks
	 * that share the waiter look at the file once it completes, and
	 * poll it only if the barrier is not released then. */
	const struct mdfio_rankfile_fence *fence;
};

/* In the fio process that starts the jobs, before any starts: reserves
 * ranks [first, first+n) of dirfd's rank file (creating it) for as long as
 * rf stays open, which its jobs' claims need not but another fio's
 * reservation or claim of them cannot pass: a run is not left open to
 * another between its phases. It also maps the memory in which the jobs
 * that claim through it (forked from this process, or its threads) share
 * one poller of the file at each barrier. n may be 0: the file and the
 * waiter, no ranks held. Returns 0, or 1 with one line in msg (a live
 * holder is named: host and fio pid).
 * run_id (run_id=; NULL or "": unnamed) names the run. A barrier of a named
 * run that fails keeps its reason in the file after the last rank has
 * left, and every fio of that run that comes later is refused at once with
 * it, where an unnamed run's late host cannot be told from the first host
 * of a new run; a run of another name (or none) starts the file afresh. */
int mdfio_rankfile_reserve(struct mdfio_rankfile *rf, int dirfd, uint32_t first,
			   uint32_t n, const char *host, const char *run_id,
			   char *msg, size_t msglen);

/* Opens (creating) the rank file in directory dirfd, never through a
 * symlink, and claims rank of total for this process. Returns 0, or 1 with
 * one line in msg (a live holder of the rank is named: host and pid). */
int mdfio_rankfile_claim(struct mdfio_rankfile *rf, int dirfd, uint32_t rank,
			 uint32_t total, uint32_t block, const char *host,
			 char *msg, size_t msglen);

/* The same, for a job whose fio holds reserved (mdfio_rankfile_reserve; may
 * be NULL): the reservation by any other fio refuses the claim. The run's
 * name is reserved's, or without one run_id (as mdfio_rankfile_reserve's).
 * Returns 2, with the reason alone in msg, where no rank holds a claim and
 * the file keeps a failure of the run: a named run's, or one since its fio
 * reserved the rank (its fio was still in the phase before when the others
 * gave up and left); a later phase of the run, which stopped before it. */
int mdfio_rankfile_claim_reserved(struct mdfio_rankfile *rf, int dirfd, uint32_t rank,
				  uint32_t total, uint32_t block, const char *host,
				  const struct mdfio_rankfile *reserved, const char *run_id,
				  char *msg, size_t msglen);

/* Gives up the reservation of ranks [first, first+n) and closes rf; removes
 * the file as mdfio_rankfile_release does when nobody else holds it, and
 * returns the same. */
int mdfio_rankfile_unreserve(struct mdfio_rankfile *rf, int dirfd, uint32_t first,
			     uint32_t n, int (*keep)(void *arg), void *arg);

/* Waits until every rank of the run has arrived to enter phase (a name that
 * must be the same for all: ranks entering different phases fail the
 * barrier). Of the waiting ranks that share a waiter, one polls the file,
 * backing off to a ceiling, and the others sleep until it tells them. A
 * block of ranks of which one is still claimed is waited for however long
 * it takes (busy with the previous phase); a block that nobody
 * has claimed for timeout_ms makes the barrier fail (the claims are looked
 * at after half of timeout_ms without a release, and then each half of it,
 * so it fails within one and a half of timeout_ms), and so does
 * rf->stopped at once, with its reason. Once a barrier has
 * failed, every later one in the life of the file fails at once with the
 * same reason: the run is broken, and its later phases must not meet ranks
 * that are still in earlier ones. A failing barrier
 * returns 1 with the missing ranks in msg, and this rank withdraws; the
 * first rank to give up also lets describe (may be NULL) append to the
 * reason, which every other rank waiting at the barrier then reports. On
 * success *barrier is the barrier's number in the life of the file: every
 * rank that passed it together gets the same. */
typedef void (*mdfio_rankfile_describe)(void *arg,
					const struct mdfio_rankfile *rf,
					char *why, size_t len);
int mdfio_rankfile_barrier(struct mdfio_rankfile *rf, const char *phase,
			   unsigned int timeout_ms, uint64_t *barrier,
			   mdfio_rankfile_describe describe, void *arg,
			   char *msg, size_t msglen);
/* The same barrier, where each rank brings a value and every rank that
 * passes gets the largest any rank brought (md-workbench's MPI_Allreduce
 * with MPI_MAX): *max is set when it returns 0. */
int mdfio_rankfile_barrier_max(struct mdfio_rankfile *rf, const char *phase,
			       uint64_t value, uint64_t *max, unsigned int timeout_ms,
			       uint64_t *barrier, mdfio_rankfile_describe describe,
			       void *arg, char *msg, size_t msglen);

/* This rank cannot take part in the run (why: one line naming the rank and
 * its reason): the next barrier fails for every rank with why, so that no
 * rank starts a phase that one of them will not run. 0 or an errno value. */
int mdfio_rankfile_abort(struct mdfio_rankfile *rf, const char *why);

/* Whether a process other than this one holds rank's claim. */
int mdfio_rankfile_claimed(const struct mdfio_rankfile *rf, uint32_t rank);

/* Whether a fio other than this one holds rank's reservation: that fio (or,
 * on a network file system, its lock) lives, though no job of it may
 * claim the rank now. */
int mdfio_rankfile_reserved_elsewhere(const struct mdfio_rankfile *rf, uint32_t rank);

/* Gives the claim up. The last rank out also removes the rank file, unless
 * keep (may be NULL), asked then, says the file must stay: for the
 * namespace's next phase, so that a cleanup can claim its ranks even on a
 * file system too full for a new file. The first rank of a run starts the
 * file afresh (a new id, no barrier passed or failed). Returns 1 if this
 * removed the file and a rank had marked the root to go with it
 * (mdfio_rankfile_mark_root), else 0. */
int mdfio_rankfile_release(struct mdfio_rankfile *rf, int dirfd,
			   int (*keep)(void *arg), void *arg);

/* A cleanup emptied a namespace whose root mdfio made: whichever process
 * removes the rank file last, of any fio on any host, learns that the root
 * is to go as well (the fio that removed the status may not be the last
 * one out). Returns 0 or an errno. */
int mdfio_rankfile_mark_root(struct mdfio_rankfile *rf);

/* Whether fio's main process, pid fio_pid, has died (SIGKILL, a crash) and
 * left this job running: it is a job's parent, or the job itself, until it
 * dies. */
static inline int mdfio_fio_gone(long fio_pid)
{
	return fio_pid != (long)getpid() && fio_pid != (long)getppid();
}

#endif
