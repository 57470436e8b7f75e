/* LD_PRELOAD shim for the ASan build's tests, loaded before the runtime:
 * fork() waits until no other thread is inside the allocator.
 *
 * GCC 12's AddressSanitizer takes none of its allocator's locks around
 * fork (later runtimes do). fio forks its jobs while its helper thread
 * allocates (its status and disk-statistics ticks), and a fork at the
 * moment that thread holds a size class's lock leaves the job that lock
 * held by nobody: the job hangs at its first allocation of that class
 * (tests/test_asan_fork.c shows it without this shim). Every allocation
 * the runtime makes on a program's behalf enters through one of the
 * functions below, and fork() lets none in while it copies the process. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>
#include <wchar.h>

static int forking;
static int inside;	/* threads inside the allocator */
/* initial-exec: the general model calls __tls_get_addr, which the runtime
 * intercepts and cannot serve before it has started */
#define THREAD_LOCAL __thread __attribute__((tls_model("initial-exec")))
static THREAD_LOCAL volatile int depth;	/* a signal handler's allocation nests */
static THREAD_LOCAL volatile int resolving;	/* dlsym allocates */
/* the thread in fork(): the atfork handlers it runs there may allocate,
 * while every other thread is kept out */
static THREAD_LOCAL volatile int forker;

/* What dlsym allocates while the runtime's functions are looked up,
 * never freed. */
static _Alignas(64) char early[16384];
static size_t early_used;

static void *early_alloc(size_t n)
{
	size_t at = __atomic_fetch_add(&early_used, (n + 63) & ~(size_t)63, __ATOMIC_RELAXED);

	if (at + n > sizeof(early))
		abort();
	return memset(early + at, 0, n);
}

static int is_early(const void *p)
{
	return (const char *)p >= early && (const char *)p < early + sizeof(early);
}

static void *next(const char *name)
{
	void *f;

	resolving++;
	f = dlsym(RTLD_NEXT, name);
	resolving--;
	if (!f)
		abort();
	return f;
}

static void enter(void)
{
	if (depth++ || forker)
		return;
	for (;;) {
		while (__atomic_load_n(&forking, __ATOMIC_SEQ_CST))
			sched_yield();
		__atomic_add_fetch(&inside, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&forking, __ATOMIC_SEQ_CST))
			return;
		__atomic_sub_fetch(&inside, 1, __ATOMIC_SEQ_CST);
	}
}

static void leave(void)
{
	if (!--depth && !forker)
		__atomic_sub_fetch(&inside, 1, __ATOMIC_SEQ_CST);
}

/* Each wrapper: look the runtime's function up once, call it inside. */
#define WRAP(ret, name, params, args)					\
	ret name params							\
	{								\
		static ret (*real) params;				\
		ret r;							\
									\
		if (!real)						\
			real = (ret (*) params)next(#name);		\
		enter();						\
		r = real args;						\
		leave();						\
		return r;						\
	}

WRAP(void *, realloc, (void *p, size_t n), (p, n))
WRAP(void *, reallocarray, (void *p, size_t m, size_t n), (p, m, n))
WRAP(int, posix_memalign, (void **p, size_t a, size_t n), (p, a, n))
WRAP(void *, aligned_alloc, (size_t a, size_t n), (a, n))
WRAP(void *, memalign, (size_t a, size_t n), (a, n))
WRAP(void *, valloc, (size_t n), (n))
WRAP(void *, pvalloc, (size_t n), (n))
WRAP(char *, strdup, (const char *s), (s))
WRAP(char *, strndup, (const char *s, size_t n), (s, n))
WRAP(wchar_t *, wcsdup, (const wchar_t *s), (s))

void *malloc(size_t n)
{
	static void *(*real)(size_t);
	void *r;

	if (resolving)
		return early_alloc(n);
	if (!real)
		real = (void *(*)(size_t))next("malloc");
	enter();
	r = real(n);
	leave();
	return r;
}

void *calloc(size_t m, size_t n)
{
	static void *(*real)(size_t, size_t);
	void *r;

	if (resolving)
		return early_alloc(m * n);
	if (!real)
		real = (void *(*)(size_t, size_t))next("calloc");
	enter();
	r = real(m, n);
	leave();
	return r;
}

void free(void *p)
{
	static void (*real)(void *);

	/* what dlsym frees as it looks a function up is leaked */
	if (!p || is_early(p) || resolving)
		return;
	if (!real)
		real = (void (*)(void *))next("free");
	enter();
	real(p);
	leave();
}

pid_t fork(void)
{
	static pid_t (*real)(void);
	static int one;	/* one fork at a time */
	pid_t pid;

	if (!real)
		real = (pid_t (*)(void))next("fork");
	while (__atomic_exchange_n(&one, 1, __ATOMIC_ACQUIRE))
		sched_yield();
	__atomic_store_n(&forking, 1, __ATOMIC_SEQ_CST);
	/* a fork from a signal handler that interrupted an allocation of
	 * this thread counts that one */
	while (__atomic_load_n(&inside, __ATOMIC_SEQ_CST) > (depth > 0))
		sched_yield();
	forker = 1;
	pid = real();
	forker = 0;
	__atomic_store_n(&forking, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&one, 0, __ATOMIC_RELEASE);
	return pid;
}
