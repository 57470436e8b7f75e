/* Rank claims and barriers between processes on one file system. */
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "rankfile.h"

#define ROUNDS 40

static int dirfd_of(const char *dir)
{
	return open(dir, O_RDONLY | O_DIRECTORY);
}

/* Each of n processes claims its rank and runs ROUNDS phases, each started
 * by a barrier: none may pass barrier k before all have finished phase k-1. */

/* Waits for n children: how many did not exit with 0. */
static unsigned int failed_children(unsigned int n)
{
	unsigned int bad = 0;
	int status;

	while (n--) {
		wait(&status);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			bad++;
	}
	return bad;
}
static void lockstep(const char *dir, unsigned int n)
{
	unsigned int *done = mmap(NULL, sizeof(unsigned int) * (ROUNDS + 1),
				  PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	unsigned int r, bad;

	for (r = 0; r < n; r++) {
		if (fork())
			continue;
		struct mdfio_rankfile rf;
		char msg[256];
		uint64_t b;
		int k, fd = dirfd_of(dir), early = 0;

		if (mdfio_rankfile_claim(&rf, fd, r, n, 1, "h", msg, sizeof(msg)))
			_exit(2);
		for (k = 1; k <= ROUNDS; k++) {
			if (mdfio_rankfile_barrier(&rf, "p", 5000, &b, NULL, NULL, msg, sizeof(msg)))
				_exit(3);
			if (b != (uint64_t)k)
				_exit(5);	/* every rank numbers barriers alike */
			if (__atomic_load_n(&done[k - 1], __ATOMIC_SEQ_CST) != (k > 1 ? n : 0))
				early = 1;
			if (r == k % n)
				usleep(1000);	/* one slow rank per phase */
			__atomic_add_fetch(&done[k], 1, __ATOMIC_SEQ_CST);
		}
		mdfio_rankfile_release(&rf, fd, NULL, NULL);
		_exit(early ? 4 : 0);
	}
	/* done[0] is the "phase" before the first barrier: nothing */
	bad = failed_children(n);
	CHECK(!bad, "%u of %u ranks failed the lockstep", bad, n);
	CHECK(faccessat(dirfd_of(dir), MDFIO_RANKFILE_NAME, F_OK, 0),
	      "the last rank out removes the rank file");
	munmap(done, sizeof(unsigned int) * (ROUNDS + 1));
}

/* What rank r brings to the k-th barrier of max_of_values: differs among
 * the ranks and from round to round, so that a stale or partial maximum
 * shows. */
static uint64_t value_of(unsigned int r, unsigned int k)
{
	return (uint64_t)((r * 31 + k * 17) % 97) + (r == k % 5 ? 1000 : 0);
}

/* n processes pass ROUNDS barriers, each bringing a value, with a plain
 * barrier between two of them; every rank gets the largest of each round
 * (the cross-rank maximum of a stonewall wear-out). */
static void max_of_values(const char *dir, unsigned int n)
{
	unsigned int r, k, bad;

	for (r = 0; r < n; r++) {
		if (fork())
			continue;
		struct mdfio_rankfile rf;
		char msg[256];
		uint64_t b, max, want;
		unsigned int q;
		int fd = dirfd_of(dir), wrong = 0;

		if (mdfio_rankfile_claim(&rf, fd, r, n, 1, "h", msg, sizeof(msg)))
			_exit(2);
		for (k = 1; k <= ROUNDS; k++) {
			max = UINT64_MAX;
			if (mdfio_rankfile_barrier_max(&rf, "w", value_of(r, k), &max, 5000, &b,
						       NULL, NULL, msg, sizeof(msg)))
				_exit(3);
			for (want = 0, q = 0; q < n; q++)
				if (value_of(q, k) > want)
					want = value_of(q, k);
			wrong |= max != want;
			if (r == k % n)
				usleep(1000);	/* the others wait for it here */
			if (mdfio_rankfile_barrier(&rf, "p", 5000, &b, NULL, NULL, msg, sizeof(msg)))
				_exit(3);
		}
		mdfio_rankfile_release(&rf, fd, NULL, NULL);
		_exit(wrong ? 4 : 0);
	}
	bad = failed_children(n);
	CHECK(!bad, "%u of %u ranks did not get the largest value of every barrier", bad, n);
}

/* Counts a rank's calls while it waits, in memory its test shares. */
static void count_shared(void *arg)
{
	__atomic_add_fetch((unsigned int *)arg, 1, __ATOMIC_SEQ_CST);
}

/* One "fio": reserves ranks [first, first+k) of 2k (its fio's fence, may
 * be NULL) and forks a job for each, which claims through the reservation
 * (sharing its waiter) and exits with job(rf, fd, arg)'s status, 0 when
 * it kept every rule. Returns how many of its jobs failed. */
static unsigned int one_fio(const char *dir, uint32_t first, uint32_t k,
			    const struct mdfio_rankfile_fence *fence,
			    int (*job)(struct mdfio_rankfile *rf, int fd, void *arg), void *arg)
{
	struct mdfio_rankfile res;
	char msg[256];
	uint32_t r;
	int fd = dirfd_of(dir), status;
	unsigned int bad = 0;
	pid_t jobs[8];

	if (k > 8 || mdfio_rankfile_reserve(&res, fd, first, k, "h", NULL, msg, sizeof(msg)))
		return k;
	res.fence = fence;
	for (r = first; r < first + k; r++) {
		jobs[r - first] = fork();
		if (jobs[r - first])
			continue;
		struct mdfio_rankfile rf;
		int err;

		if (mdfio_rankfile_claim_reserved(&rf, fd, r, 2 * k, k, "h", &res, NULL, msg, sizeof(msg)))
			_exit(2);
		err = job(&rf, fd, arg);
		mdfio_rankfile_release(&rf, fd, NULL, NULL);
		_exit(err);
	}
	/* its own jobs: the other fio may be this one's child */
	for (r = 0; r < k; r++)
		if (waitpid(jobs[r], &status, 0) != jobs[r] || !WIFEXITED(status) || WEXITSTATUS(status))
			bad++;
	mdfio_rankfile_unreserve(&res, fd, first, k, NULL, NULL);
	close(fd);
	return bad;
}

struct shared_counts {
	unsigned int *done, *waited;
};

/* A job of shared_lockstep: ROUNDS barriers, each bringing a value, in
 * lockstep with the other fio's jobs. Barrier 2 waits for a slow rank of
 * the second fio, and every rank counts its calls to rf->waiting there. */
static int shared_job(struct mdfio_rankfile *rf, int fd, void *arg)
{
	const struct shared_counts *c = arg;
	uint32_t r = rf->rank, n = rf->total, q;
	uint64_t b, max, want;
	char msg[256];
	int i, early = 0, wrong = 0;

	(void)fd;
	for (i = 1; i <= ROUNDS; i++) {
		rf->waiting = i == 2 ? count_shared : NULL;
		rf->waiting_arg = &c->waited[r];
		max = UINT64_MAX;
		if (mdfio_rankfile_barrier_max(rf, "s", value_of(r, (unsigned int)i), &max, 5000, &b,
					       NULL, NULL, msg, sizeof(msg)))
			return 3;
		if (b != (uint64_t)i)
			return 5;
		for (want = 0, q = 0; q < n; q++)
			if (value_of(q, (unsigned int)i) > want)
				want = value_of(q, (unsigned int)i);
		wrong |= max != want;
		if (__atomic_load_n(&c->done[i - 1], __ATOMIC_SEQ_CST) != (i > 1 ? n : 0))
			early = 1;
		if (r == (uint32_t)i % n)
			usleep(1000);	/* one slow rank per phase */
		if (i == 1 && r == n - 1)
			usleep(300000);	/* long enough for every rank to be asked */
		__atomic_add_fetch(&c->done[i], 1, __ATOMIC_SEQ_CST);
	}
	return early ? 4 : wrong ? 6 : 0;
}

/* Two fio processes of k ranks each: the ranks of one fio share one poller
 * of the file (rankfile.c), and still every rank passes every barrier
 * together with all others, gets the largest value, and is asked about
 * fio's requests while it waits, poller or not. */
static void shared_lockstep(const char *dir, uint32_t k)
{
	size_t len = sizeof(unsigned int) * (ROUNDS + 1 + 2 * k);
	unsigned int *done = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	unsigned int *waited = done + ROUNDS + 1, bad, asked = 0;
	uint32_t r;
	int status = -1;
	struct shared_counts counts = { done, waited };
	pid_t other = fork();

	if (!other)
		_exit((int)one_fio(dir, k, k, NULL, shared_job, &counts));
	bad = one_fio(dir, 0, k, NULL, shared_job, &counts);
	waitpid(other, &status, 0);
	CHECK(!bad && WIFEXITED(status) && !WEXITSTATUS(status),
	      "%u jobs of the first fio failed the lockstep, the second fio: status %d", bad, status);
	for (r = 0; r + 1 < 2 * k; r++)
		asked += waited[r] > 1;
	CHECK(asked == 2 * k - 1, "%u of %u waiting ranks were asked about fio's requests", asked, 2 * k - 1);
	CHECK(faccessat(dirfd_of(dir), MDFIO_RANKFILE_NAME, F_OK, 0),
	      "the last fio out removes the rank file");
	munmap(done, len);
}

/* A launcher's collective between the two "fio" processes of
 * fenced_lockstep, as PMIx_Fence is between mpirun's: round r completes
 * once both fios have entered it, and then only after a delay, so that a
 * rank that passed its barrier by polling the file would pass before the
 * fence completed. Shared by both fios (mapped before they fork). */
#define FENCE_ROUNDS 6
#define FENCE_DELAY_US 100000
struct fake_launcher {
	unsigned int entered[FENCE_ROUNDS + 1];
	unsigned int completed[FENCE_ROUNDS + 1];
	/* whether a rank of fio f passed round r before its fence completed */
	unsigned int unfenced[FENCE_ROUNDS + 1][2];
	int mode;	/* 0 as the launcher's; 1 completes at once; 2 refuses */
};
static struct fake_launcher *launcher;

static int fake_enter(void *arg, uint64_t round, uint64_t *fenced, uint32_t *wake)
{
	struct fake_launcher *l = arg;
	uint64_t was;

	if (l->mode == 2 || round > FENCE_ROUNDS)
		return 1;
	__atomic_add_fetch(&l->entered[round], 1, __ATOMIC_SEQ_CST);
	/* an agent of its own, as launcher.c's thread: enter never waits */
	if (fork())
		return 0;
	/* not past the test's own end: an agent left waiting would hold
	 * its output open */
	alarm(60);
	while (l->mode == 0 && __atomic_load_n(&l->entered[round], __ATOMIC_SEQ_CST) < 2)
		usleep(1000);
	if (l->mode == 0)
		usleep(FENCE_DELAY_US);
	__atomic_store_n(&l->completed[round], 1, __ATOMIC_SEQ_CST);
	/* never back to an earlier round, as launcher.c's one agent, which
	 * completes a fio's fences one at a time in the order entered: here
	 * the agent of the round before may end last (a fio that released a
	 * barrier passes it without its fence), and a round taken back would
	 * leave its waiting ranks to the lock probe at half the timeout */
	was = __atomic_load_n(fenced, __ATOMIC_SEQ_CST);
	while (was < round &&
	       !__atomic_compare_exchange_n(fenced, &was, round, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
	__atomic_add_fetch(wake, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, wake, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	_exit(0);
}

static const struct mdfio_rankfile_fence fake_fence = { fake_enter, NULL };

/* A job of fenced_lockstep: FENCE_ROUNDS barriers; it exits 4 if it passed
 * a barrier before the other fio's ranks arrived, and says when it passed
 * one before its fence completed (in launcher->unfenced). */
static int fenced_job(struct mdfio_rankfile *rf, int fd, void *arg)
{
	const unsigned int *done = arg;
	uint32_t r = rf->rank, n = rf->total;
	uint64_t b;
	char msg[256];
	int i, early = 0;

	(void)fd;
	for (i = 1; i <= FENCE_ROUNDS; i++) {
		/* a timeout whose lock probes (each half of it, which also
		 * read the header) come long after the fence on a loaded
		 * machine */
		if (mdfio_rankfile_barrier(rf, "f", 60000, &b, NULL, NULL, msg, sizeof(msg)))
			return 3;
		if (b != (uint64_t)i)
			return 5;
		if (__atomic_load_n(&done[i - 1], __ATOMIC_SEQ_CST) != (i > 1 ? n : 0))
			early = 1;
		if (!__atomic_load_n(&launcher->completed[i], __ATOMIC_SEQ_CST))
			launcher->unfenced[i][r >= n / 2] = 1;
		if (r == (uint32_t)i % n)
			usleep(20000);	/* one slow rank per phase */
		__atomic_add_fetch((unsigned int *)&done[i], 1, __ATOMIC_SEQ_CST);
	}
	return early ? 4 : 0;
}

/* Two fios of k ranks each with a launcher's fence: every rank passes every
 * barrier together with all others, and (mode 0) the ranks of the fio
 * whose rank did not release it only once the fence has completed: the
 * waiting ranks look at the file when it completes, not before. A fence
 * that completes before the release (mode 1: fios that entered different
 * barriers) or that cannot be entered (mode 2) leaves the file's barrier
 * as it is: polled, and passed together. */
static void fenced_lockstep(const char *dir, uint32_t k, int mode)
{
	size_t len = sizeof(unsigned int) * (FENCE_ROUNDS + 1);
	unsigned int *done = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct mdfio_rankfile_fence fence = fake_fence;
	unsigned int bad, r;
	int status = -1;
	pid_t other;

	launcher = mmap(NULL, sizeof(*launcher), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	memset(launcher, 0, sizeof(*launcher));
	launcher->mode = mode;
	fence.arg = launcher;
	other = fork();
	if (!other)
		_exit((int)one_fio(dir, k, k, &fence, fenced_job, done));
	bad = one_fio(dir, 0, k, &fence, fenced_job, done);
	waitpid(other, &status, 0);
	CHECK(!bad && WIFEXITED(status) && !WEXITSTATUS(status),
	      "fence mode %d, %u ranks a fio: %u jobs of the first fio failed the lockstep, the second fio: status %d",
	      mode, k, bad, status);
	for (r = 1; mode == 0 && r <= FENCE_ROUNDS; r++)
		CHECK(!launcher->unfenced[r][0] || !launcher->unfenced[r][1],
		      "%u ranks a fio: ranks of both fios passed barrier %u before its fence completed", k, r);
	/* the fence's own agents */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	munmap(launcher, sizeof(*launcher));
	munmap(done, len);
}

static double seconds_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Counts a rank's stall lines (rf->stalled), in memory its test shares. */
static void count_stalled(void *arg, const char *line)
{
	(void)line;
	__atomic_add_fetch((unsigned int *)arg, 1, __ATOMIC_SEQ_CST);
}

/* Waits (at most 10 s) until counts[r] is non-zero. */
static int await_count(const unsigned int *counts, uint32_t r)
{
	int i;

	for (i = 0; i < 10000 && !__atomic_load_n(&counts[r], __ATOMIC_SEQ_CST); i++)
		usleep(1000);
	return __atomic_load_n(&counts[r], __ATOMIC_SEQ_CST) > 0;
}

/* Waits for children[0..n) until deadline (CLOCK_MONOTONIC seconds), then
 * kills the rest: how many did not exit with status want. */
static unsigned int reap_by(const pid_t *children, unsigned int n, int want, double deadline)
{
	unsigned int i, bad = 0;
	int status;

	for (i = 0; i < n; i++) {
		while (waitpid(children[i], &status, WNOHANG) == 0 && seconds_now() < deadline)
			usleep(10000);
		if (seconds_now() >= deadline && waitpid(children[i], &status, WNOHANG) == 0) {
			kill(children[i], SIGKILL);
			waitpid(children[i], &status, 0);
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status) != want)
			bad++;
	}
	return bad;
}

/* Steps of late_arrival, in memory its processes share: rank 0 waits at
 * barrier 1, then at barrier 2 (counted by its rf->waiting); rank 1 is in
 * the fence of barrier 1; rank 2 has passed barrier 1; and whether every
 * step came in the order the case needs. */
enum { LATE_WAITS_1, LATE_WAITS_2, LATE_IN_FENCE, LATE_PASSED, LATE_IN_ORDER, LATE_STEPS };

/* The fence of late_arrival's fio: barrier 1's completes while the rank
 * that entered it (the fio's last to arrive) is held inside it, as a busy
 * machine may hold it, until its sibling has passed the barrier and waits
 * at the next one; later barriers have no collective (the file is polled). */
static int held_enter(void *arg, uint64_t round, uint64_t *fenced, uint32_t *wake)
{
	unsigned int *steps = arg;
	int in_order;

	if (round != 1)
		return 1;
	__atomic_store_n(&steps[LATE_IN_FENCE], 1, __ATOMIC_SEQ_CST);
	in_order = await_count(steps, LATE_PASSED);
	__atomic_store_n(fenced, round, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(wake, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, wake, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	in_order &= await_count(steps, LATE_WAITS_2);
	__atomic_store_n(&steps[LATE_IN_ORDER], (unsigned int)in_order, __ATOMIC_SEQ_CST);
	return 0;
}

/* A fio of ranks 0 and 1 with a fence, and rank 2 alone. Rank 0 waits at
 * barrier 1; rank 1 arrives, the last of its fio, and enters the fence;
 * rank 2 arrives last of all and releases the barrier; the fence completes,
 * and rank 0, its fio's poller, reads the release, passes, and waits at
 * barrier 2 for the next fence, which rank 1 enters only once it has
 * passed barrier 1 too. Only then does rank 1 come out of the fence and
 * tell its sibling the header it read when it arrived: what its poller
 * published since must stand, or rank 1 would wait for a release nobody
 * polls for until its poller probes the file at half the timeout. */
static void late_arrival(const char *dir)
{
	unsigned int *steps = mmap(NULL, sizeof(unsigned int) * LATE_STEPS, PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct mdfio_rankfile_fence fence = { held_enter, steps };
	struct mdfio_rankfile res;
	char msg[256];
	pid_t jobs[3];
	uint32_t r;
	unsigned int bad;
	int fd = dirfd_of(dir);

	CHECK(!mdfio_rankfile_reserve(&res, fd, 0, 2, "h", NULL, msg, sizeof(msg)), "reserve: %s", msg);
	res.fence = &fence;
	for (r = 0; r < 3; r++) {
		jobs[r] = fork();
		if (jobs[r])
			continue;
		struct mdfio_rankfile rf;
		uint64_t b1 = 0, b2 = 0;

		if (r < 2 ? mdfio_rankfile_claim_reserved(&rf, fd, r, 3, 2, "h", &res, NULL, msg, sizeof(msg))
			  : mdfio_rankfile_claim(&rf, fd, r, 3, 1, "h2", msg, sizeof(msg)))
			_exit(2);
		if (r == 1 && !await_count(steps, LATE_WAITS_1))
			_exit(6);
		if (r == 2 && !await_count(steps, LATE_IN_FENCE))
			_exit(6);
		rf.waiting = r == 0 ? count_shared : NULL;
		rf.waiting_arg = &steps[LATE_WAITS_1];
		/* a probe (half the timeout) only after the test gave up */
		if (mdfio_rankfile_barrier(&rf, "p", 120000, &b1, NULL, NULL, msg, sizeof(msg)))
			_exit(3);
		if (r == 2)
			__atomic_store_n(&steps[LATE_PASSED], 1, __ATOMIC_SEQ_CST);
		rf.waiting_arg = &steps[LATE_WAITS_2];
		if (mdfio_rankfile_barrier(&rf, "p", 120000, &b2, NULL, NULL, msg, sizeof(msg)))
			_exit(3);
		mdfio_rankfile_release(&rf, fd, NULL, NULL);
		_exit(b1 == 1 && b2 == 2 ? 0 : 5);
	}
	bad = reap_by(jobs, 3, 0, seconds_now() + 20);
	CHECK(!bad, "%u of 3 ranks did not pass both barriers while a rank was held in its fence", bad);
	CHECK(steps[LATE_IN_ORDER], "the ranks did not take the steps of a late arrival in order");
	mdfio_rankfile_unreserve(&res, fd, 0, 2, NULL, NULL);
	/* a rank killed above leaves its file */
	unlinkat(fd, MDFIO_RANKFILE_NAME, 0);
	close(fd);
	munmap(steps, sizeof(unsigned int) * LATE_STEPS);
}

/* A fio of 3 ranks (0-2) and one of 1 (rank 3), with a join_timeout of 1 s:
 * rank 3 claims its rank and stays busy; rank 0 waits first at a barrier,
 * so it polls the file for its fio; then ranks 1 and 2 wait. Rank 3
 * arrives when rank 0 has been dealt with, 0.3 s after ranks 1 and 2 wait.
 *
 * kill_it: rank 0 is killed (SIGKILL). A poller that is gone is replaced:
 * the barrier cannot pass without rank 0, and its siblings, which learn
 * only through a poller, hear that rank 3 gave up on it, and give up too,
 * instead of waiting for ever.
 *
 * Otherwise rank 0 is stopped for 3.5 s (SIGSTOP, longer than a heartbeat
 * would allow), then let run for 1.5 s (SIGCONT). A poller that is only
 * slow stays its fio's only poller: no sibling starts polling beside it,
 * so only it ever says that the wait stalls (rf->stalled); and the barrier
 * passes for all. */
static void poller_mishap(const char *dir, int kill_it)
{
	unsigned int *waited = mmap(NULL, sizeof(unsigned int) * 9, PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	unsigned int *go = waited + 4, *said = waited + 5, bad;
	struct mdfio_rankfile res;
	char msg[256];
	uint32_t r, i;
	pid_t jobs[4];
	int fd = dirfd_of(dir);

	CHECK(!mdfio_rankfile_reserve(&res, fd, 0, 3, "h", NULL, msg, sizeof(msg)), "reserve: %s", msg);
	for (i = 0; i < 4; i++) {
		r = (i + 3) % 4;	/* 3, 0, 1, 2 */
		jobs[r] = fork();
		if (!jobs[r]) {
			struct mdfio_rankfile rf;
			uint64_t b;

			if (r < 3 ? mdfio_rankfile_claim_reserved(&rf, fd, r, 4, 3, "h", &res, NULL, msg, sizeof(msg))
				  : mdfio_rankfile_claim(&rf, fd, r, 4, 1, "h2", msg, sizeof(msg)))
				_exit(2);
			__atomic_add_fetch(&waited[r], r == 3, __ATOMIC_SEQ_CST);	/* claimed */
			while (r == 3 && !__atomic_load_n(go, __ATOMIC_SEQ_CST))
				usleep(1000);
			rf.waiting = count_shared;
			rf.waiting_arg = &waited[r];
			rf.stalled = count_stalled;
			rf.stalled_arg = &said[r];
			if (mdfio_rankfile_barrier(&rf, "p", 1000, &b, NULL, NULL, msg, sizeof(msg)))
				_exit(3);
			mdfio_rankfile_release(&rf, fd, NULL, NULL);
			_exit(0);
		}
		CHECK(await_count(waited, r), "rank %u did not claim or wait", r);
	}
	usleep(300000);
	if (kill_it) {
		int status;

		/* reaped: its claim is gone before rank 3 looks (a process
		 * killed but still exiting holds its locks) */
		kill(jobs[0], SIGKILL);
		waitpid(jobs[0], &status, 0);
	} else {
		kill(jobs[0], SIGSTOP);
		usleep(3500000);
		kill(jobs[0], SIGCONT);
		usleep(1500000);
	}
	__atomic_store_n(go, 1, __ATOMIC_SEQ_CST);
	mdfio_rankfile_unreserve(&res, fd, 0, 3, NULL, NULL);
	if (kill_it) {
		bad = reap_by(jobs + 1, 3, 3, seconds_now() + 20);
		CHECK(!bad, "%u of the 3 ranks that outlived the poller did not give up on it", bad);
	} else {
		bad = reap_by(jobs, 4, 0, seconds_now() + 20);
		CHECK(!bad, "%u of 4 ranks failed the barrier after their poller was stopped", bad);
		CHECK(said[0] >= 1 && !said[1] && !said[2],
		      "stall lines of the fio's ranks 0, 1, 2: %u, %u, %u (its poller, rank 0, alone)",
		      said[0], said[1], said[2]);
	}
	unlinkat(fd, MDFIO_RANKFILE_NAME, 0);
	close(fd);
	munmap(waited, sizeof(unsigned int) * 9);
}

/* Keeps the first line a stalled barrier says. */
static void keep_line(void *arg, const char *line)
{
	char *kept = arg;

	if (!kept[0])
		snprintf(kept, 512, "%s", line);
}

static int keep(void *arg)
{
	(void)arg;
	return 1;
}

static void describe(void *arg, const struct mdfio_rankfile *rf, char *why, size_t len)
{
	(void)arg;
	(void)rf;
	snprintf(why + strlen(why), len - strlen(why), "; hosts: x");
}

/* Says the run has stopped the third time it is asked. */
static int stopped_on_third_look(void *arg, char *why, size_t len)
{
	int *calls = arg;

	if (++*calls < 3)
		return 0;
	snprintf(why, len, "rank 1 (host h) cannot start: no room");
	return 1;
}

/* Counts the polls of a barrier that waits. */
static void count_poll(void *arg)
{
	++*(int *)arg;
}

/* A header whose fields lie beyond what mdfio writes is no rank file of
 * mdfio's: with total 2^64 - 1 a claim looked at every rank's lock, for
 * ever (the alarm ends the test there). */
static void out_of_bounds(int fd)
{
	static const char *const fields[] = {
		"total 18446744073709551615 released 0 failed 0 max 0",
		"total 4294967297 released 0 failed 0 max 0",
		"total 1048577 released 0 failed 0 max 0",
		"total 0 released 0 failed 0 max 0",
		"total -1 released 0 failed 0 max 0",
		"total +1 released 0 failed 0 max 0",
		"total 1 released 18446744073709551616 failed 0 max 0",
		"total 1 released 18446744073709551615 failed 0 max 0",
		"total 1 released 0 failed -1 max 0",
		"total 1 released 0 failed 0 max 99999999999999999999",
		"total 1 released 0 failed 0 max 0 root-goes 2",
		"total 1 released 0 failed 0 max 0 trailing",
	};
	struct mdfio_rankfile a;
	char msg[256], rec[MDFIO_RANKFILE_RECORD];
	size_t k;

	alarm(30);
	for (k = 0; k < sizeof(fields) / sizeof(fields[0]); k++) {
		int f = openat(fd, MDFIO_RANKFILE_NAME, O_WRONLY | O_CREAT | O_EXCL, 0644);
		int n = snprintf(rec, sizeof(rec), "mdfio-ranks 1 id 0123456789abcdef %s", fields[k]);

		memset(rec + n, ' ', sizeof(rec) - 1 - (size_t)n);
		rec[sizeof(rec) - 1] = '\n';
		CHECK(f >= 0 && write(f, rec, sizeof(rec)) == (ssize_t)sizeof(rec), "write");
		close(f);
		CHECK(mdfio_rankfile_claim(&a, fd, 0, 1, 1, "h", msg, sizeof(msg)) &&
		      strstr(msg, "not mdfio's rank file"), "header '%s': %s", fields[k], msg);
		unlinkat(fd, MDFIO_RANKFILE_NAME, 0);
	}
	alarm(0);
}

/* A named run (run_id=) that fails keeps its reason in the file after its
 * last rank has left: a fio of that run that comes later is refused at once
 * (its reservation and its claim), one of another run, or of none, starts
 * the file afresh, and an unnamed run's failure leaves no file. */
static void named_run_failure(int fd)
{
	struct mdfio_rankfile a, late;
	const char *why = "ranks 1 of 2 did not join within 1 s";
	char msg[1024];
	uint64_t gen;

	alarm(30);
	CHECK(!mdfio_rankfile_claim_reserved(&a, fd, 0, 2, 1, "hostA", NULL, "nightly-42", msg, sizeof(msg)),
	      "claim: %s", msg);
	CHECK(mdfio_rankfile_barrier(&a, "p", 1000, &gen, NULL, NULL, msg, sizeof(msg)) && !strcmp(msg, why),
	      "the named run fails: %s", msg);
	mdfio_rankfile_release(&a, fd, NULL, NULL);
	CHECK(!faccessat(fd, MDFIO_RANKFILE_NAME, F_OK, AT_SYMLINK_NOFOLLOW),
	      "a named run's failure outlives its last rank");
	CHECK(mdfio_rankfile_reserve(&late, fd, 1, 1, "hostB", "nightly-42", msg, sizeof(msg)) &&
	      strstr(msg, "run_id=nightly-42 stopped before this fio joined it: ") && strstr(msg, why),
	      "a late fio of the run is refused at its reservation: %s", msg);
	/* a claim of the run (a later phase of a fio that joined it) is
	 * told the reason alone, as at a failed barrier */
	CHECK(mdfio_rankfile_claim_reserved(&late, fd, 1, 2, 1, "hostB", NULL, "nightly-42", msg, sizeof(msg)) == 2 &&
	      !strcmp(msg, why), "a claim of the run: %s", msg);
	CHECK(!faccessat(fd, MDFIO_RANKFILE_NAME, F_OK, AT_SYMLINK_NOFOLLOW), "the refusal leaves the file");
	/* another run starts afresh, passes, and takes the file with it */
	CHECK(!mdfio_rankfile_claim_reserved(&a, fd, 0, 1, 1, "hostA", NULL, "nightly-43", msg, sizeof(msg)),
	      "another run: %s", msg);
	CHECK(!mdfio_rankfile_barrier(&a, "p", 1000, &gen, NULL, NULL, msg, sizeof(msg)), "its barrier: %s", msg);
	mdfio_rankfile_release(&a, fd, NULL, NULL);
	CHECK(faccessat(fd, MDFIO_RANKFILE_NAME, F_OK, AT_SYMLINK_NOFOLLOW), "another run's last rank removes the file");
	/* unnamed: the failure goes with the last rank */
	CHECK(!mdfio_rankfile_claim(&a, fd, 0, 2, 1, "hostA", msg, sizeof(msg)), "claim: %s", msg);
	CHECK(mdfio_rankfile_barrier(&a, "p", 1000, &gen, NULL, NULL, msg, sizeof(msg)), "the unnamed run fails");
	mdfio_rankfile_release(&a, fd, NULL, NULL);
	CHECK(faccessat(fd, MDFIO_RANKFILE_NAME, F_OK, AT_SYMLINK_NOFOLLOW), "an unnamed run's failure leaves no file");
	alarm(0);
}

int main(void)
{
	char dir[] = "/tmp/mdfio-test-rankfile-XXXXXX";
	struct mdfio_rankfile a, b;
	char msg[256];
	uint64_t gen;
	int fd, status, calls;
	pid_t child;

	if (!mkdtemp(dir))
		return 1;
	fd = dirfd_of(dir);

	lockstep(dir, 1);
	lockstep(dir, 5);
	max_of_values(dir, 1);
	max_of_values(dir, 5);
	shared_lockstep(dir, 1);
	shared_lockstep(dir, 4);
	poller_mishap(dir, 0);
	poller_mishap(dir, 1);
	fenced_lockstep(dir, 1, 0);
	fenced_lockstep(dir, 3, 0);
	fenced_lockstep(dir, 3, 1);
	fenced_lockstep(dir, 3, 2);
	late_arrival(dir);
	named_run_failure(fd);

	/* a wait that makes no progress for the timeout says what it sees,
	 * before it fails: the busy rank, and the one nobody has claimed */
	{
		int go[2], ready[2];
		char kept[512] = "", c;

		CHECK(!pipe(go) && !pipe(ready), "pipe");
		child = fork();
		if (!child) {
			int cfd = dirfd_of(dir);

			close(go[1]);
			close(ready[0]);
			if (mdfio_rankfile_claim(&b, cfd, 1, 3, 1, "hostB", msg, sizeof(msg)))
				_exit(2);
			close(ready[1]);
			/* busy until the parent is done */
			if (read(go[0], &c, 1) < 0)
				_exit(3);
			mdfio_rankfile_release(&b, cfd, NULL, NULL);
			_exit(0);
		}
		close(go[0]);
		close(ready[1]);
		CHECK(read(ready[0], &c, 1) == 0, "the busy rank has claimed");
		close(ready[0]);
		CHECK(!mdfio_rankfile_claim(&a, fd, 0, 3, 1, "hostA", msg, sizeof(msg)), "claim: %s", msg);
		a.stalled = keep_line;
		a.stalled_arg = kept;
		CHECK(mdfio_rankfile_barrier(&a, "p", 1000, &gen, NULL, NULL, msg, sizeof(msg)) &&
		      !strcmp(msg, "ranks 2 of 3 did not join within 1 s"), "an unclaimed rank: %s", msg);
		CHECK(strstr(kept, " s to enter p (barrier 1): 2 of 3 ranks have not arrived: "
				   "1 (host hostB, busy), 2 (claimed by nobody)") && !strncmp(kept, "has waited ", 11),
		      "the stalled barrier said: %s", kept);
		mdfio_rankfile_release(&a, fd, NULL, NULL);
		close(go[1]);
		waitpid(child, &status, 0);
		CHECK(WIFEXITED(status) && !WEXITSTATUS(status), "the busy rank: %d", WEXITSTATUS(status));
	}

	/* a live rank cannot be claimed twice; the holder is named */
	CHECK(!mdfio_rankfile_claim(&a, fd, 1, 3, 1, "hostA", msg, sizeof(msg)), "claim: %s", msg);
	child = fork();
	if (!child)
		_exit(mdfio_rankfile_claim(&b, fd, 1, 3, 1, "hostB", msg, sizeof(msg)) &&
		      strstr(msg, "rank 1 is taken by a live fio (host hostA, pid") ? 0 : 1);
	waitpid(child, &status, 0);
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status), "a second claim of rank 1 is refused");
	/* ... nor by a run of another size */
	child = fork();
	if (!child)
		_exit(mdfio_rankfile_claim(&b, fd, 0, 4, 1, "hostB", msg, sizeof(msg)) &&
		      strstr(msg, "another fio run with 3 ranks") ? 0 : 1);
	waitpid(child, &status, 0);
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status), "a run of another size is refused");

	/* ranks nobody claims make the barrier fail, naming them */
	CHECK(mdfio_rankfile_barrier(&a, "p", 300, &gen, NULL, NULL, msg, sizeof(msg)) &&
	      !strcmp(msg, "ranks 0,2 of 3 did not join within 0.3 s"), "missing ranks: %s", msg);
	/* ... and for good: a later phase must not meet ranks of earlier ones */
	CHECK(mdfio_rankfile_barrier(&a, "q", 300, &gen, NULL, NULL, msg, sizeof(msg)) &&
	      !strcmp(msg, "this run stopped before this phase (ranks 0,2 of 3 did not join within 0.3 s)"),
	      "a later barrier: %s", msg);
	/* kept for the namespace's next phase, and started afresh by its
	 * first rank: the failure is forgotten once no rank of it is left */
	mdfio_rankfile_release(&a, fd, keep, NULL);
	CHECK(!faccessat(fd, MDFIO_RANKFILE_NAME, F_OK, 0), "kept without remove");
	CHECK(!mdfio_rankfile_claim(&a, fd, 1, 3, 1, "hostA", msg, sizeof(msg)), "claim again: %s", msg);

	/* the first rank to give up says why for all: a rank still willing
	 * to wait gives up at once with the same reason */
	child = fork();
	if (!child) {
		int cfd = dirfd_of(dir);
		uint64_t t0;
		struct timespec ts;

		if (mdfio_rankfile_claim(&b, cfd, 0, 3, 1, "hostB", msg, sizeof(msg)))
			_exit(2);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		t0 = (uint64_t)ts.tv_sec;
		if (!mdfio_rankfile_barrier(&b, "p", 20000, &gen, NULL, NULL, msg, sizeof(msg)))
			_exit(3);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		_exit(strcmp(msg, "ranks 2 of 3 did not join within 0.3 s; hosts: x") ? 4 :
		      (uint64_t)ts.tv_sec - t0 > 5 ? 5 : 0);
	}
	usleep(200000);
	CHECK(mdfio_rankfile_barrier(&a, "p", 300, &gen, describe, NULL, msg, sizeof(msg)) &&
	      !strcmp(msg, "ranks 2 of 3 did not join within 0.3 s; hosts: x"), "give up: %s", msg);
	waitpid(child, &status, 0);
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status), "the other rank gave up with it: %d",
	      WEXITSTATUS(status));
	mdfio_rankfile_release(&a, fd, NULL, NULL);	/* the 3-rank run is over */
	CHECK(faccessat(fd, MDFIO_RANKFILE_NAME, F_OK, 0), "the last rank out removed the file");

	/* a claimed rank is waited for beyond the timeout (busy elsewhere) */
	child = fork();
	if (!child) {
		int cfd = dirfd_of(dir);

		if (mdfio_rankfile_claim(&b, cfd, 0, 2, 1, "hostB", msg, sizeof(msg)))
			_exit(2);
		usleep(600000);
		status = mdfio_rankfile_barrier(&b, "p", 200, &gen, NULL, NULL, msg, sizeof(msg));
		mdfio_rankfile_release(&b, cfd, NULL, NULL);
		_exit(status ? 3 : 0);
	}
	usleep(100000);
	CHECK(!mdfio_rankfile_claim(&a, fd, 1, 2, 1, "hostA", msg, sizeof(msg)), "claim: %s", msg);
	CHECK(!mdfio_rankfile_barrier(&a, "p", 200, &gen, NULL, NULL, msg, sizeof(msg)) && gen == 1,
	      "a busy rank is waited for: %s", msg);
	mdfio_rankfile_release(&a, fd, NULL, NULL);
	waitpid(child, &status, 0);
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status), "the busy rank passes too");
	CHECK(faccessat(fd, MDFIO_RANKFILE_NAME, F_OK, 0), "whichever rank leaves last removes the file");

	/* a block (one fio's clones) with a claimed rank is busy, not missing:
	 * a sibling that starts late is waited for; an unclaimed block is named */
	child = fork();
	if (!child) {
		int cfd = dirfd_of(dir);

		usleep(500000);
		if (mdfio_rankfile_claim(&b, cfd, 1, 2, 2, "h", msg, sizeof(msg)))
			_exit(2);
		status = mdfio_rankfile_barrier(&b, "p", 200, &gen, NULL, NULL, msg, sizeof(msg));
		mdfio_rankfile_release(&b, cfd, NULL, NULL);
		_exit(status ? 3 : 0);
	}
	CHECK(!mdfio_rankfile_claim(&a, fd, 0, 2, 2, "h", msg, sizeof(msg)), "claim: %s", msg);
	CHECK(!mdfio_rankfile_barrier(&a, "p", 200, &gen, NULL, NULL, msg, sizeof(msg)),
	      "a late sibling is waited for: %s", msg);
	mdfio_rankfile_release(&a, fd, NULL, NULL);
	waitpid(child, &status, 0);
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status), "the late sibling passes too");
	CHECK(!mdfio_rankfile_claim(&a, fd, 0, 4, 2, "h", msg, sizeof(msg)), "claim: %s", msg);
	CHECK(mdfio_rankfile_barrier(&a, "p", 300, &gen, NULL, NULL, msg, sizeof(msg)) &&
	      !strcmp(msg, "ranks 2-3 of 4 did not join within 0.3 s"), "an unclaimed block: %s", msg);
	mdfio_rankfile_release(&a, fd, NULL, NULL);

	/* a sibling that could not claim its rank (told through rf->stopped)
	 * fails the barrier at once, not after the timeout, with its reason */
	calls = 0;
	CHECK(!mdfio_rankfile_claim(&a, fd, 0, 2, 2, "h", msg, sizeof(msg)), "claim: %s", msg);
	CHECK(!a.stopped, "a claim asks nobody whether the run stopped");
	a.stopped = stopped_on_third_look;
	a.stopped_arg = &calls;
	CHECK(mdfio_rankfile_barrier(&a, "p", 60000, &gen, NULL, NULL, msg, sizeof(msg)) &&
	      !strcmp(msg, "rank 1 (host h) cannot start: no room"), "a sibling that cannot start: %s", msg);
	CHECK(calls == 3, "the barrier asked %d times", calls);
	mdfio_rankfile_release(&a, fd, NULL, NULL);

	/* a waiting rank is called at its polls: fio waits for its answer to
	 * a request for statistics while the rank waits here */
	calls = 0;
	CHECK(!mdfio_rankfile_claim(&a, fd, 0, 2, 1, "h", msg, sizeof(msg)), "claim: %s", msg);
	CHECK(!a.waiting, "a claim calls nobody while it waits");
	a.waiting = count_poll;
	a.waiting_arg = &calls;
	CHECK(mdfio_rankfile_barrier(&a, "p", 300, &gen, NULL, NULL, msg, sizeof(msg)) &&
	      !strcmp(msg, "ranks 1 of 2 did not join within 0.3 s"), "a missing rank: %s", msg);
	CHECK(calls > 1, "the waiting barrier called %d times", calls);
	mdfio_rankfile_release(&a, fd, NULL, NULL);

	/* ranks that enter different phases at one barrier fail it, both */
	child = fork();
	if (!child) {
		int cfd = dirfd_of(dir);

		if (mdfio_rankfile_claim(&b, cfd, 1, 2, 1, "hostB", msg, sizeof(msg)))
			_exit(2);
		status = mdfio_rankfile_barrier(&b, "cleanup-0", 5000, &gen, NULL, NULL, msg, sizeof(msg));
		mdfio_rankfile_release(&b, cfd, NULL, NULL);
		_exit(!status ? 3 : strstr(msg, "the hosts do not run the same jobs") ? 0 : 4);
	}
	usleep(200000);
	CHECK(!mdfio_rankfile_claim(&a, fd, 0, 2, 1, "hostA", msg, sizeof(msg)), "claim: %s", msg);
	CHECK(mdfio_rankfile_barrier(&a, "benchmark-1", 5000, &gen, NULL, NULL, msg, sizeof(msg)) &&
	      !strcmp(msg, "rank 1 (host hostB) entered cleanup-0 where rank 0 (host hostA) entered benchmark-1: "
			   "the hosts do not run the same jobs"), "different phases: %s", msg);
	mdfio_rankfile_release(&a, fd, NULL, NULL);
	waitpid(child, &status, 0);
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status), "the other rank fails with it: %d", WEXITSTATUS(status));
	CHECK(faccessat(fd, MDFIO_RANKFILE_NAME, F_OK, 0), "the rank file is gone");

	/* a rank that cannot start stops the others at their next barrier at
	 * once, with its reason, whether they wait there already or come
	 * later; a run already failed keeps its first reason */
	child = fork();
	if (!child) {
		int cfd = dirfd_of(dir);

		if (mdfio_rankfile_claim(&b, cfd, 1, 3, 1, "h", msg, sizeof(msg)))
			_exit(2);
		status = mdfio_rankfile_barrier(&b, "p", 60000, &gen, NULL, NULL, msg, sizeof(msg));
		mdfio_rankfile_release(&b, cfd, NULL, NULL);
		_exit(!status ? 3 : !strcmp(msg, "rank 2: no log") ? 0 : 4);
	}
	CHECK(!mdfio_rankfile_claim(&a, fd, 2, 3, 1, "h", msg, sizeof(msg)), "claim: %s", msg);
	usleep(100000);
	CHECK(!mdfio_rankfile_abort(&a, "rank 2: no log"), "abort");
	CHECK(!mdfio_rankfile_abort(&a, "rank 2: again"), "abort twice");
	waitpid(child, &status, 0);
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status), "a waiting rank stops with the reason: %d",
	      WEXITSTATUS(status));
	{
		struct mdfio_rankfile c;
		int rc = mdfio_rankfile_claim(&c, fd, 0, 3, 1, "h", msg, sizeof(msg));

		CHECK(!rc, "claim: %s", msg);
		CHECK(!rc && mdfio_rankfile_barrier(&c, "p", 60000, &gen, NULL, NULL, msg, sizeof(msg)) &&
		      !strcmp(msg, "this run stopped before this phase (rank 2: no log)"),
		      "a later rank stops at once: %s", msg);
		if (!rc)
			mdfio_rankfile_release(&c, fd, NULL, NULL);
	}
	mdfio_rankfile_release(&a, fd, NULL, NULL);
	CHECK(faccessat(fd, MDFIO_RANKFILE_NAME, F_OK, 0), "the rank file is gone");

	/* a fio's reservation of its ranks: its own jobs claim them through it,
	 * another fio can neither reserve nor claim them, and the file goes
	 * when the reservation, the last holder, is given up */
	{
		struct mdfio_rankfile res, c;

		CHECK(!mdfio_rankfile_reserve(&res, fd, 0, 2, "hostA", NULL, msg, sizeof(msg)), "reserve: %s", msg);
		child = fork();
		if (!child) {
			int cfd = dirfd_of(dir);
			char m[256];

			if (!mdfio_rankfile_reserve(&b, cfd, 1, 2, "hostB", NULL, m, sizeof(m)))
				_exit(2);
			snprintf(msg, sizeof(msg), "another fio run is using this namespace (rank 1: host hostA, fio pid %ld)",
				 (long)getppid());
			if (strcmp(m, msg))
				_exit(3);
			if (!mdfio_rankfile_claim(&b, cfd, 0, 2, 2, "hostB", m, sizeof(m)))
				_exit(4);
			snprintf(msg, sizeof(msg), "another fio run is using this namespace (rank 0: host hostA, fio pid %ld)",
				 (long)getppid());
			_exit(strcmp(m, msg) ? 5 : 0);
		}
		waitpid(child, &status, 0);
		CHECK(WIFEXITED(status) && !WEXITSTATUS(status), "another fio is refused: %d", WEXITSTATUS(status));
		child = fork();
		if (!child) {
			/* a job of the reserving fio, forked from it */
			if (mdfio_rankfile_claim_reserved(&c, fd, 1, 2, 2, "hostA", &res, NULL, msg, sizeof(msg)))
				_exit(2);
			mdfio_rankfile_release(&c, fd, NULL, NULL);
			_exit(faccessat(fd, MDFIO_RANKFILE_NAME, F_OK, 0) ? 3 : 0);
		}
		waitpid(child, &status, 0);
		CHECK(WIFEXITED(status) && !WEXITSTATUS(status),
		      "its own job claims, and the file stays while reserved: %d", WEXITSTATUS(status));
		mdfio_rankfile_unreserve(&res, fd, 0, 2, NULL, NULL);
		CHECK(faccessat(fd, MDFIO_RANKFILE_NAME, F_OK, 0), "the rank file is gone with the reservation");
	}

	/* a cleanup that emptied a root mdfio made marks it: whoever removes
	 * the file last, not necessarily the marking rank, learns that the
	 * root goes; the next run's file starts unmarked */
	{
		struct mdfio_rankfile c;

		CHECK(!mdfio_rankfile_claim(&a, fd, 0, 2, 1, "hostA", msg, sizeof(msg)), "claim: %s", msg);
		CHECK(!mdfio_rankfile_claim(&c, fd, 1, 2, 1, "hostB", msg, sizeof(msg)), "claim: %s", msg);
		CHECK(!mdfio_rankfile_mark_root(&a), "mark the root");
		CHECK(mdfio_rankfile_release(&a, fd, NULL, NULL) == 0, "the marking rank is not the last out");
		CHECK(mdfio_rankfile_release(&c, fd, NULL, NULL) == 1, "the last one out learns that the root goes");
		CHECK(faccessat(fd, MDFIO_RANKFILE_NAME, F_OK, 0), "the rank file is gone");
		CHECK(!mdfio_rankfile_claim(&a, fd, 0, 1, 1, "h", msg, sizeof(msg)), "claim: %s", msg);
		CHECK(mdfio_rankfile_release(&a, fd, NULL, NULL) == 0, "a new run's file is not marked");
		CHECK(!mdfio_rankfile_claim(&a, fd, 0, 1, 1, "h", msg, sizeof(msg)), "claim: %s", msg);
		CHECK(!mdfio_rankfile_mark_root(&a), "mark the root");
		CHECK(mdfio_rankfile_release(&a, fd, keep, NULL) == 0, "a file kept is no root to remove");
		CHECK(!mdfio_rankfile_claim(&a, fd, 0, 1, 1, "h", msg, sizeof(msg)), "claim: %s", msg);
		CHECK(mdfio_rankfile_release(&a, fd, NULL, NULL) == 0, "its next run starts unmarked");
	}

	/* never through a symlink, never a foreign file */
	CHECK(!symlinkat("/etc/passwd", fd, MDFIO_RANKFILE_NAME), "symlink");
	CHECK(mdfio_rankfile_claim(&a, fd, 0, 1, 1, "h", msg, sizeof(msg)) && strstr(msg, "symlink"),
	      "a symlinked rank file: %s", msg);
	unlinkat(fd, MDFIO_RANKFILE_NAME, 0);
	{
		int f = openat(fd, MDFIO_RANKFILE_NAME, O_WRONLY | O_CREAT, 0644);

		CHECK(write(f, "not ours\n", 9) == 9, "write");
		close(f);
	}
	CHECK(mdfio_rankfile_claim(&a, fd, 0, 1, 1, "h", msg, sizeof(msg)) &&
	      strstr(msg, "not mdfio's rank file"), "a foreign file: %s", msg);
	unlinkat(fd, MDFIO_RANKFILE_NAME, 0);
	out_of_bounds(fd);
	rmdir(dir);
	return check_result();
}
