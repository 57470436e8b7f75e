/* fio's main process holds the ranks it runs on each root from the setup of
 * its first job (mdfio_rankfile_reserve) until the last of its jobs on that
 * root has ended, so that no other fio run can take them between two of its
 * phases, where no job of it holds them. Its jobs, forked from it or its
 * threads, claim their ranks through its open file, and the last one gives
 * the reservation up: fio has no hook in its main process after the jobs,
 * and a fio server's run ends in _exit(). The study workloads' engines
 * (engines/workloads/) keep their reservations here too, of no ranks. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fio_compat.h"
#include "job.h"
#include "robust.h"
#include "launcher.h"

/* The futex call whose timeout is this build's struct timespec: a 32-bit
 * architecture's futex takes a 32-bit time_t, so a build with a 64-bit one
 * (_TIME_BITS=64, as Debian builds armhf and armel since trixie) needs
 * futex_time64; the other would read the recheck's wait as none at all,
 * and the wait would spin. */
#ifdef SYS_futex_time64
#define MDFIO_SYS_FUTEX (sizeof(time_t) > sizeof(long) ? SYS_futex_time64 : SYS_futex)
#else
#define MDFIO_SYS_FUTEX SYS_futex
#endif

/* Roots one fio runs jobs on: more is refused with one line. */
#define MDFIO_ROOTS_MAX 16

struct reservation {
	char root[PATH_MAX];
	int dirfd;
	/* md-workbench's ranks of this fio. A study workload (mdfio-mdtest,
	 * mdfio-tree) holds none (n = 0): its sections number their ranks
	 * each by its own numjobs, so no range stays this fio's from phase to
	 * phase. Its reservation is the rank file held open: one waiter per
	 * fio at the barrier, the launcher's fence, the orphan watch and the
	 * last job giving it up. Its jobs' options are its own, not struct
	 * mdfio_options, and none is md-workbench's precreate: it makes no
	 * root (make_root). The rest holds for it as for md-workbench's: one
	 * mdfio engine and one spelling per root, none on a read-only one. */
	uint32_t first, n;
	int refused;		/* said once; every job of the root refuses */
	int created;		/* this fio created the root (a precreate's) */
	struct mdfio_rankfile rf;
};

static struct reservation held[MDFIO_ROOTS_MAX];
static unsigned int nr_held;
/* jobs of each root not ended yet: shared by the processes fio forks */
static unsigned int *jobs_left;
/* clones ended of each job section, by the thread number of its first
 * clone: shared by the processes fio forks, and a futex word each */
static uint32_t *clones_ended;
/* The thread number of the first clone of the section each job waits for
 * (0: none), by its own thread number. Found in fio's main process at
 * setup, where every job's engine is loaded, and inherited by the jobs it
 * forks: a job that has ended unloads its engine (fio clears its io_ops in
 * the shared job table), so a search made in a job that starts late would
 * miss a section still running and start beside it. */
static unsigned int waits_for[REAL_MAX_JOBS];
/* What the jobs of each root tell the later ones, shared likewise: a rank
 * failed in mid-phase (its line, as the root's later jobs in this fio
 * refuse with it). */
struct root_state {
	pthread_mutex_t lock;	/* robust: a job killed holding it blocks nobody */
	enum mdfio_stop stopped;
	char why[1024];
	/* the last barrier that every rank of the run passed, in this fio */
	char passed[64];
};
static struct root_state *shared;

static struct reservation *find(const char *root)
{
	unsigned int i;

	for (i = 0; root && i < nr_held; i++)
		if (!strcmp(held[i].root, root))
			return &held[i];
	return NULL;
}

static struct root_state *lock_state(const char *root)
{
	struct reservation *res = find(root);
	struct root_state *st;

	if (!res || !shared)
		return NULL;
	st = &shared[res - held];
	mdfio_robust_lock(&st->lock, 1);
	return st;
}

static void unlock_state(struct root_state *st)
{
	mdfio_robust_unlock(&st->lock);
}

/* The jobs (clones included) that will run on td's root, each of which
 * ends through mdfio_job_ended. Another mdfio engine on the same root is
 * refused: it would keep a reservation of its own, and its jobs would find
 * the root taken by this one's. Each engine is a shared object with a
 * memory of its own, so only the first job's engine says why. */
static int count_jobs(struct thread_data *td, unsigned int *n)
{
	struct thread_data *t, *first = NULL, *other = NULL;
	int i;

	*n = 0;
	mdfio_for_each_td(t, i) {
		if (!t->o.directory || strcmp(t->o.directory, td->o.directory) ||
		    !t->io_ops || strncmp(t->io_ops->name, "mdfio-", 6))
			continue;
		if (!first)
			first = t;
		if (t->io_ops != first->io_ops && !other)
			other = t;
		(*n)++;
	}
	if (!other)
		return 0;
	if (td->io_ops != first->io_ops)
		return 1;
	return mdfio_error("directory=%s: jobs %s and %s use different mdfio engines (%s, %s); run each engine in a fio of its own",
			   td->o.directory, first->o.name, other->o.name, first->io_ops->name,
			   other->io_ops->name);
}

/* md-workbench's precreate creates its root (-o); so does a precreate job
 * of this fio on a root whose last component alone is missing (fio's own
 * directory= refuses a missing one when it parses the jobfile; root= sets
 * it unchecked). Only the last component: a missing parent is a mistyped
 * path far more often than a wish. One line and 1 if it cannot. */
static int make_root(struct thread_data *td, struct reservation *res)
{
	struct thread_data *t;
	struct stat sb;
	int i, precreate = 0;

	if (!res->n)
		return 0;	/* a study workload's (struct reservation) */
	if (!lstat(res->root, &sb) || (errno != ENOENT && errno != ENOTDIR))
		return 0;	/* the job's own checks say what is wrong */
	mdfio_for_each_td(t, i)
		precreate |= t->io_ops == td->io_ops && t->o.directory &&
			     !strcmp(t->o.directory, res->root) && t->eo &&
			     ((const struct mdfio_options *)t->eo)->phase == MDFIO_PRECREATE + 1;
	if (!precreate)
		return 0;
	/* md-workbench's DIRMODE, less the umask */
	if (mkdir(res->root, 0775)) {
		if (errno == EEXIST)	/* another fio of the run made it */
			return 0;
		res->refused = 1;
		nr_held++;
		return mdfio_error("directory=%s: cannot create it: %s (mdfio creates only the last component of the root; create its parent first)",
				   res->root, strerror(errno));
	}
	res->created = 1;
	return 0;
}

static int is_mdfio(const struct thread_data *t)
{
	return t->io_ops && !strncmp(t->io_ops->name, "mdfio-", 6);
}

/* The first clone of the last mdfio section before td's on the same root. */
static struct thread_data *previous_section(struct thread_data *td)
{
	struct thread_data *t, *parent = mdfio_job_parent(td), *prev = NULL;
	int i;

	mdfio_for_each_td(t, i) {
		if (t->thread_number >= parent->thread_number)
			break;
		if (!t->subjob_number && is_mdfio(t) && t->o.directory &&
		    !strcmp(t->o.directory, parent->o.directory))
			prev = t;
	}
	return prev;
}

/* Whether another mdfio job of this fio names res's root another way ("/r"
 * and "/r/", or through a symlink): one line and 1 if so, from the first
 * job of each spelling, before any of them starts. The sections of one
 * root run in order, and its jobs share one reservation, only where the
 * jobfile names it alike; two spellings would make two runs of one
 * namespace in one fio, the second refused as "another fio run". */
static int same_directory(struct thread_data *td, struct reservation *res)
{
	struct thread_data *t;
	struct stat a, b;
	int i;

	if (fstat(res->dirfd, &a))
		return 0;
	mdfio_for_each_td(t, i) {
		if (!is_mdfio(t) || !t->o.directory || !strcmp(t->o.directory, td->o.directory) ||
		    stat(t->o.directory, &b) || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
			continue;
		close(res->dirfd);
		res->dirfd = -1;
		res->refused = 1;
		nr_held++;
		/* in one order from either side: said once (mdfio_error) */
		if (strcmp(td->o.directory, t->o.directory) < 0)
			return mdfio_error("directory=%s and directory=%s are one directory: name a root the same way in every section of the jobfile",
					   td->o.directory, t->o.directory);
		return mdfio_error("directory=%s and directory=%s are one directory: name a root the same way in every section of the jobfile",
				   t->o.directory, td->o.directory);
	}
	return 0;
}

int mdfio_reserve_ranks(struct thread_data *td, uint32_t first, uint32_t n,
			const char *host, const char *launcher, const char *run_id)
{
	const char *root = td->o.directory;
	struct thread_data *prev;
	struct reservation *res;
	struct statvfs vfs;
	char msg[1024];

	/* a job set up in its own process (create_serialize=0) claims its
	 * rank only for its phase, as a fio without this does */
	if (td->pid || !root || !*root)
		return 0;
	if (!clones_ended) {
		clones_ended = mmap(NULL, sizeof(*clones_ended) * REAL_MAX_JOBS, PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (clones_ended == MAP_FAILED) {
			clones_ended = NULL;
			return mdfio_error("cannot map the job counts: %s", strerror(errno));
		}
		mdfio_orphan_watch(launcher);
	}
	prev = previous_section(td);
	waits_for[td->thread_number - 1] = prev ? prev->thread_number : 0;
	res = find(root);
	if (res)
		return res->refused;
	if (nr_held == MDFIO_ROOTS_MAX)
		return mdfio_error("directory=%s: one fio runs mdfio jobs on at most %d roots",
				   root, MDFIO_ROOTS_MAX);
	if (!jobs_left) {
		jobs_left = mmap(NULL, sizeof(*jobs_left) * MDFIO_ROOTS_MAX, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (jobs_left == MAP_FAILED) {
			jobs_left = NULL;
			return mdfio_error("cannot map the job counts: %s", strerror(errno));
		}
		shared = mmap(NULL, sizeof(*shared) * MDFIO_ROOTS_MAX, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (shared == MAP_FAILED) {
			shared = NULL;
			return mdfio_error("cannot map the runs' states: %s", strerror(errno));
		}
		for (unsigned int i = 0; i < MDFIO_ROOTS_MAX; i++) {
			int err = mdfio_robust_init(&shared[i].lock);

			if (err)
				return mdfio_error("cannot make the runs' locks: %s", strerror(err));
		}
	}
	res = &held[nr_held];
	snprintf(res->root, sizeof(res->root), "%s", root);
	res->first = first;
	res->n = n;
	res->rf.fd = -1;
	if (count_jobs(td, &jobs_left[nr_held]))
		return 1;
	if (make_root(td, res))
		return 1;
	res->dirfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (res->dirfd < 0)
		return 0;	/* the job's own checks name it */
	/* nothing can change a namespace on a read-only mount, and nothing
	 * can be reserved there: the jobs' checks say what runs */
	if (!fstatvfs(res->dirfd, &vfs) && (vfs.f_flag & ST_RDONLY)) {
		close(res->dirfd);
		res->dirfd = -1;
		return 0;
	}
	if (same_directory(td, res))
		return 1;
	nr_held++;
	if (!mdfio_rankfile_reserve(&res->rf, res->dirfd, first, n, host, run_id, msg, sizeof(msg))) {
		/* here, in fio's main process, the launcher's client starts */
		if (res->rf.waiter)
			res->rf.fence = mdfio_launcher_fence();
		return 0;
	}
	res->refused = 1;
	return mdfio_error("%s: host %s: %s", root, host, msg);
}

const struct mdfio_rankfile *mdfio_reservation(const char *root)
{
	const struct reservation *res = find(root);

	return res && res->rf.fd >= 0 ? &res->rf : NULL;
}

int mdfio_reservation_stop(const char *root, enum mdfio_stop kind, const char *why)
{
	struct root_state *st = lock_state(root);
	int first = 0;

	if (!st)
		return 1;
	/* the first failure is the one the run stopped for */
	if (!st->stopped) {
		snprintf(st->why, sizeof(st->why), "%s", why);
		st->stopped = kind;
		first = 1;
	}
	unlock_state(st);
	return first;
}

enum mdfio_stop mdfio_reservation_stopped(const char *root, char *why, size_t len)
{
	struct root_state *st = lock_state(root);
	enum mdfio_stop set;

	if (!st)
		return MDFIO_STOP_NONE;
	set = st->stopped;
	if (set && why)
		snprintf(why, len, "%s", st->why);
	unlock_state(st);
	return set;
}

int mdfio_reservation_orphaned(void *root, char *why, size_t len)
{
	if (!mdfio_orphaned(why, len))
		return 0;
	mdfio_reservation_stop(root, MDFIO_STOP_GAVE_UP, why);
	return 1;
}

void mdfio_reservation_passed(const char *root, const char *barrier)
{
	struct root_state *st = lock_state(root);

	if (!st)
		return;
	snprintf(st->passed, sizeof(st->passed), "%s", barrier);
	unlock_state(st);
}

int mdfio_reservation_last_passed(const char *root, char *barrier, size_t len)
{
	struct root_state *st = lock_state(root);
	int set;

	if (!st)
		return 0;
	set = st->passed[0] != 0;
	snprintf(barrier, len, "%s", st->passed);
	unlock_state(st);
	return set;
}

int mdfio_reservation_created(const char *root)
{
	const struct reservation *res = find(root);

	return res && res->created;
}

/* The root, by its path, if it is still the directory this fio opened, and
 * if it is empty: rmdir fails otherwise, and the root stays with a notice
 * naming what is in it. */
static void remove_root(struct reservation *res)
{
	struct stat now, opened;
	struct dirent *e;
	DIR *d;
	int fd;

	if (fstat(res->dirfd, &opened) || lstat(res->root, &now) || now.st_dev != opened.st_dev ||
	    now.st_ino != opened.st_ino)
		return;
	if (!rmdir(res->root))
		return;
	if (errno != ENOTEMPTY && errno != EEXIST) {
		mdfio_notice("directory=%s: mdfio created it but cannot remove it: %s", res->root,
			     strerror(errno));
		return;
	}
	fd = openat(res->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)) && (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")))
		;
	mdfio_notice("directory=%s: mdfio created it, but it holds %s%s, which mdfio did not make: left in place",
		     res->root, e ? "files such as " : "files", e ? e->d_name : "");
	closedir(d);
}

static int status_left(void *arg)
{
	return mdfio_namespace_left(((const struct reservation *)arg)->dirfd);
}

/* Whether every clone of the section that prev heads has ended: counted by
 * the clones themselves, or seen by fio (a clone killed, or never started,
 * counts nothing). */
static int section_over(struct thread_data *prev)
{
	unsigned int k, n = prev->o.numjobs > 0 ? prev->o.numjobs : 1;

	if (__atomic_load_n(&clones_ended[prev->thread_number - 1], __ATOMIC_ACQUIRE) >= n)
		return 1;
	/* its clones follow it in fio's table: every waiting job of a long
	 * jobfile looks here at each recheck, so not a walk over all jobs */
	for (k = 0; k < n && prev->thread_number - 1 + k < thread_number; k++)
		if (tnumber_to_td(prev->thread_number - 1 + k)->runstate < TD_EXITED)
			return 0;
	return 1;
}

/* fio runs a group's sections at once. The job of a later phase waits here,
 * before it claims its rank, for the earlier phase's clones of this fio to
 * end, woken by the last one (a futex): then the barrier in the rank file
 * waits only for the other fio processes of the run, as it did after a
 * stonewall. fio's own stonewall waits for a group's end by polling, at a
 * cost in wall time per section; with it in the jobfile, this never waits. */
int mdfio_wait_previous_section(struct thread_data *td)
{
	/* how often the wait answers fio's requests for statistics, and looks
	 * at fio's job states for a clone that ends without counting itself
	 * (killed) */
	const struct timespec recheck = { .tv_sec = 0, .tv_nsec = MDFIO_ANSWER_MS * 1000 * 1000 };
	struct thread_data *prev;
	uint32_t *word, seen;
	char why[256];

	if (!clones_ended || !td->o.directory || !waits_for[td->thread_number - 1])
		return 0;
	prev = tnumber_to_td(waits_for[td->thread_number - 1] - 1);
	word = &clones_ended[prev->thread_number - 1];
	for (;;) {
		mdfio_answer_fio(td);
		seen = __atomic_load_n(word, __ATOMIC_ACQUIRE);
		if (section_over(prev))
			return 0;
		if (td->terminate)
			return mdfio_error("job %s stopped while it waited for job %s to end",
					   td->o.name, prev->o.name);
		/* a clone killed with fio's main process is never seen to end
		 * by anyone */
		if (mdfio_orphaned(why, sizeof(why)))
			return mdfio_error("job %s: %s while it waited for job %s to end",
					   td->o.name, why, prev->o.name);
		syscall(MDFIO_SYS_FUTEX, word, FUTEX_WAIT, seen, &recheck, NULL, 0);
	}
}

void mdfio_job_ended(struct thread_data *td)
{
	const char *root = td->o.directory;
	struct reservation *res;
	int root_goes;

	if (clones_ended) {
		uint32_t *word = &clones_ended[mdfio_job_parent(td)->thread_number - 1];

		__atomic_add_fetch(word, 1, __ATOMIC_RELEASE);
		syscall(MDFIO_SYS_FUTEX, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
	if (!root || !(res = find(root)) || res->rf.fd < 0)
		return;
	if (__atomic_sub_fetch(&jobs_left[res - held], 1, __ATOMIC_SEQ_CST))
		return;
	/* the last job of this fio on the root: its open file is fio's, so
	 * this gives fio's reservation up */
	root_goes = mdfio_rankfile_unreserve(&res->rf, res->dirfd, res->first, res->n,
					     status_left, res);
	/* a root mdfio created goes with the namespace: after the rank file,
	 * which the last rank out of the whole run removes, told by the mark
	 * the rank that emptied the namespace left in it, in any fio */
	if ((res->created || root_goes) && !status_left(res) &&
	    faccessat(res->dirfd, MDFIO_RANKFILE_NAME, F_OK, AT_SYMLINK_NOFOLLOW) && errno == ENOENT)
		remove_root(res);
}
