/* PMIx_Fence as the barrier's wake-up (launcher.h). The PMIx client is
 * fio's main process, which the launcher started: fio's job processes are
 * its forks and may not use its connection. So a thread of the main
 * process (the agent) enters the fences that the jobs ask for through a
 * queue in shared memory, one at a time and in the order asked: every fio
 * process of the run enters the same fences in the same order, which is
 * what PMIx pairs them by. */
#include "launcher.h"
#include "backend.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pmix.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* At most this many barriers asked for and not yet fenced: one per root
 * at a time is the most a fio's jobs ask for. */
#define QUEUE_LEN 64

struct request {
	uint64_t ticket;	/* 1 + its index in the stream: written last */
	uint64_t round;
	uint64_t *fenced;
	uint32_t *wake;
};

/* In memory shared by fio's main process and its jobs. */
struct queue {
	uint32_t asked;		/* futex word of the agent: bumped per request */
	uint64_t next;		/* requests handed out so far */
	int broken;		/* a fence failed: no more are entered */
	struct request req[QUEUE_LEN];
};

static struct queue *queue;
static pid_t agent_pid;
static pthread_t agent;
static int stopping;
/* the agent's PMIx client: 0 not yet started, 1 up, -1 refused */
static int client;
static struct mdfio_rankfile_fence fence;

static void wake(uint32_t *word)
{
	__atomic_add_fetch(word, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* In a job (any process or thread of this fio). */
static int enter(void *arg, uint64_t round, uint64_t *fenced, uint32_t *word)
{
	struct queue *q = arg;
	uint64_t n;
	struct request *r;

	if (__atomic_load_n(&q->broken, __ATOMIC_ACQUIRE))
		return 1;
	n = __atomic_fetch_add(&q->next, 1, __ATOMIC_ACQ_REL);
	r = &q->req[n % QUEUE_LEN];
	/* the agent has not taken the request QUEUE_LEN before this one:
	 * fences that never completed; this fio's later ones would pair
	 * with the wrong barriers of the others, so there are no more */
	if (__atomic_load_n(&r->ticket, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&q->broken, 1, __ATOMIC_RELEASE);
		return 1;
	}
	r->round = round;
	r->fenced = fenced;
	r->wake = word;
	__atomic_store_n(&r->ticket, n + 1, __ATOMIC_RELEASE);
	wake(&q->asked);
	return 0;
}

struct fence_done {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done;
	pmix_status_t status;
};

static void fence_cb(pmix_status_t status, void *arg)
{
	struct fence_done *d = arg;

	pthread_mutex_lock(&d->lock);
	d->status = status;
	d->done = 1;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

/* One fence, waited for without blocking inside PMIx, so that the agent
 * can leave at fio's exit even while a fence never completes (a rank that
 * died): 1 completed, 0 stopping. */
static int fence_once(pmix_status_t *status)
{
	static struct fence_done d = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };

	pthread_mutex_lock(&d.lock);
	d.done = 0;
	pthread_mutex_unlock(&d.lock);
	*status = PMIx_Fence_nb(NULL, 0, NULL, 0, fence_cb, &d);
	if (*status != PMIX_SUCCESS)
		return 1;
	pthread_mutex_lock(&d.lock);
	while (!d.done && !__atomic_load_n(&stopping, __ATOMIC_ACQUIRE)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&d.cond, &d.lock, &ts);
	}
	*status = d.status;
	pthread_mutex_unlock(&d.lock);
	return d.done;
}

static void *agent_main(void *arg)
{
	struct queue *q = arg;
	uint64_t n = 0;

	(void)arg;
	while (!__atomic_load_n(&stopping, __ATOMIC_ACQUIRE)) {
		struct request *r = &q->req[n % QUEUE_LEN];
		uint32_t asked = __atomic_load_n(&q->asked, __ATOMIC_ACQUIRE);
		pmix_status_t status;

		if (__atomic_load_n(&r->ticket, __ATOMIC_ACQUIRE) != n + 1) {
			struct timespec ts = { 0, 100 * 1000 * 1000 };

			syscall(SYS_futex, &q->asked, FUTEX_WAIT, asked, &ts, NULL, 0);
			continue;
		}
		/* The client starts at the first fence, in this thread, not
		 * at fio's set-up: its own thread is busiest as it connects,
		 * and fio forks its jobs right after the set-up. A fork while
		 * another thread allocates leaves the child a locked allocator
		 * under AddressSanitizer (GCC 12's runtime has no fork
		 * handler), which hung a job at its first malloc. */
		if (!client) {
			pmix_proc_t me;

			status = PMIx_Init(&me, NULL, 0);
			client = status == PMIX_SUCCESS ? 1 : -1;
			if (client < 0) {
				__atomic_store_n(&q->broken, 1, __ATOMIC_RELEASE);
				mdfio_notice("PMIX_NAMESPACE is set, but PMIx_Init failed (%s): the barrier polls the rank file",
					     PMIx_Error_string(status));
			}
		}
		if (client > 0) {
			if (!fence_once(&status))
				break;
			if (status != PMIX_SUCCESS) {
				__atomic_store_n(&q->broken, 1, __ATOMIC_RELEASE);
				/* a launcher killed while its fio waits takes
				 * its server along: the ranks then stop with
				 * one line of their own (orphan.c), and this
				 * one would only precede it */
				if (status != PMIX_ERR_LOST_CONNECTION && status != PMIX_ERR_UNREACH)
					mdfio_notice("PMIx_Fence failed (%s): the barrier polls the rank file from here on",
						     PMIx_Error_string(status));
			}
		}
		/* done or failed, the ranks look at the file now */
		__atomic_store_n(r->fenced, r->round, __ATOMIC_RELEASE);
		wake(r->wake);
		__atomic_store_n(&r->ticket, 0, __ATOMIC_RELEASE);
		n++;
	}
	return NULL;
}

/* At fio's exit, in its main process only (its jobs leave by _exit, or
 * are threads): a PMIx client that ends without PMIx_Finalize is one that
 * died, to the launcher. */
static void leave(void)
{
	if (!queue || getpid() != agent_pid)
		return;
	__atomic_store_n(&stopping, 1, __ATOMIC_RELEASE);
	wake(&queue->asked);
	pthread_join(agent, NULL);
	if (client > 0)
		PMIx_Finalize(NULL, 0);
	queue = NULL;
}

const struct mdfio_rankfile_fence *mdfio_launcher_fence(void)
{
	static int tried;
	Dl_info self;
	int err;

	if (tried)
		return queue ? &fence : NULL;
	tried = 1;
	if (!getenv("PMIX_NAMESPACE"))
		return NULL;
	/* the agent runs this library's code until fio exits: fio's last
	 * dlclose must not unload it under the thread */
	if (!dladdr((void *)mdfio_launcher_fence, &self) ||
	    !dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) {
		mdfio_notice("cannot keep the engine loaded for its PMIx client: the barrier polls the rank file");
		return NULL;
	}
	queue = mmap(NULL, sizeof(*queue), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (queue == MAP_FAILED) {
		queue = NULL;
		return NULL;
	}
	agent_pid = getpid();
	err = pthread_create(&agent, NULL, agent_main, queue);
	if (err) {
		mdfio_notice("cannot start the PMIx agent thread (%s): the barrier polls the rank file",
			     strerror(err));
		munmap(queue, sizeof(*queue));
		queue = NULL;
		return NULL;
	}
	atexit(leave);
	fence.enter = enter;
	fence.arg = queue;
	return &fence;
}
