/* A study workload's rank file held by fio's main process (reserve.h): a
 * reservation of no ranks. fio has no hook in its main process after its
 * jobs, and a fio server's run ends in _exit(): the last job to end,
 * forked from the main process or one of its threads, gives the
 * reservation up through the main process's open file, as the core's last
 * job does. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fio_compat.h"
#include "job.h"
#include "launcher.h"
#include "reserve.h"

/* Roots one fio runs a workload's jobs on: more run without a reservation. */
#define ROOTS_MAX 16

struct reservation {
	char root[PATH_MAX];
	int dirfd;
	int refused;
	struct mdfio_rankfile rf;
};

/* In memory shared by the processes fio forks. */
struct shared {
	/* jobs of each root not ended yet */
	unsigned int jobs_left[ROOTS_MAX];
	/* a barrier stopped because nobody is left to receive the results,
	 * and its rank said so: no later phase of this fio starts */
	int orphaned;
};

static struct reservation held[ROOTS_MAX];
static unsigned int nr_held;
static struct shared *shared;

static struct reservation *find(const char *root)
{
	unsigned int i;

	for (i = 0; root && i < nr_held; i++)
		if (!strcmp(held[i].root, root))
			return &held[i];
	return NULL;
}

/* The jobs of this engine on td's directory, every clone counted: each
 * ends once. */
static unsigned int count_jobs(struct thread_data *td)
{
	struct thread_data *t;
	unsigned int n = 0;
	int i;

	mdfio_for_each_td(t, i)
		if (t->io_ops == td->io_ops && t->o.directory && !strcmp(t->o.directory, td->o.directory))
			n++;
	return n;
}

int mdfio_workload_reserve(struct thread_data *td, const char *host, const char *launcher,
			   char *msg, size_t len)
{
	const char *root = td->o.directory;
	struct reservation *res;

	if (td->pid || !root || !*root)
		return 0;
	mdfio_orphan_watch(launcher);
	res = find(root);
	if (res)
		return res->refused ? 2 : 0;
	if (nr_held == ROOTS_MAX)
		return 0;
	if (!shared) {
		shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (shared == MAP_FAILED) {
			shared = NULL;
			return 0;
		}
	}
	res = &held[nr_held];
	res->dirfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (res->dirfd < 0)
		return 0;	/* the job's own checks name it */
	snprintf(res->root, sizeof(res->root), "%s", root);
	res->rf.fd = -1;
	shared->jobs_left[nr_held++] = count_jobs(td);
	if (mdfio_rankfile_reserve(&res->rf, res->dirfd, 0, 0, host, NULL, msg, len)) {
		res->refused = 1;
		return 1;
	}
	/* here, in fio's main process, the launcher's client starts */
	if (res->rf.waiter)
		res->rf.fence = mdfio_launcher_fence();
	return 0;
}

const struct mdfio_rankfile *mdfio_workload_reservation(const char *root)
{
	const struct reservation *res = find(root);

	return res && res->rf.fd >= 0 ? &res->rf : NULL;
}

void mdfio_workload_job_ended(struct thread_data *td)
{
	struct reservation *res = find(td->o.directory);

	if (!res || res->rf.fd < 0 || __atomic_sub_fetch(&shared->jobs_left[res - held], 1, __ATOMIC_SEQ_CST))
		return;
	(void)mdfio_rankfile_unreserve(&res->rf, res->dirfd, 0, 0, NULL, NULL);
}

int mdfio_workload_orphaned(void *arg, char *why, size_t len)
{
	(void)arg;
	if (!mdfio_orphaned(why, len))
		return 0;
	if (shared)
		__atomic_store_n(&shared->orphaned, 1, __ATOMIC_RELEASE);
	return 1;
}

int mdfio_workload_stopped(void)
{
	return shared && __atomic_load_n(&shared->orphaned, __ATOMIC_ACQUIRE);
}
