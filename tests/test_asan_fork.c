/* tests/asan_fork.c: forks of a process one of whose threads allocates
 * without a pause, under GCC 12's AddressSanitizer, each child allocating
 * in every size class the other thread uses. Without the shim preloaded a
 * child soon hangs on a size class's lock that the other thread held as
 * the process forked; with it every child ends. Built with the sanitizer
 * in every build, run with the shim preloaded (tests/meson.build). */
#define _GNU_SOURCE
#include "engines/check.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FORKS 100
#define CHILD_SECONDS 30

/* Distinct call chains: every new one is a new entry of the runtime's
 * stack depot, which widens the window in which the allocating thread
 * holds a lock. */
static void *chain(unsigned long bits, int depth, size_t size);

__attribute__((noinline)) static void *left(unsigned long bits, int depth, size_t size)
{
	void *p = chain(bits >> 1, depth - 1, size);

	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) static void *right(unsigned long bits, int depth, size_t size)
{
	void *p = chain(bits >> 1, depth - 1, size);

	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) static void *chain(unsigned long bits, int depth, size_t size)
{
	if (!depth)
		return malloc(size);
	return bits & 1 ? left(bits, depth, size) : right(bits, depth, size);
}

static int stop;

static void *churn(void *arg)
{
	(void)arg;
	for (unsigned long i = 1; !__atomic_load_n(&stop, __ATOMIC_RELAXED); i++)
		free(chain(i, 24, 16 + (i * 7919) % 8192));
	return NULL;
}

/* 0: ended by itself; 1: still running after CHILD_SECONDS (killed) */
static int stuck(pid_t pid)
{
	struct timespec tick = { 0, 1000 * 1000 };
	int status;

	for (long waited = 0; waited < CHILD_SECONDS * 1000L; waited++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return 0;
		nanosleep(&tick, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return 1;
}

/* fork()'s handlers run inside it, in the forking thread, and may
 * allocate (as libraries' handlers do) */
static void allocate(void)
{
	char *volatile p = malloc(64);

	free(p);
}

int main(void)
{
	pthread_t thread;

	CHECK(!pthread_atfork(allocate, allocate, allocate), "pthread_atfork");

	CHECK(!pthread_create(&thread, NULL, churn, NULL), "pthread_create");
	for (int i = 0; i < FORKS && !failures; i++) {
		pid_t pid = fork();

		if (!pid) {
			for (unsigned long k = 0; k < 2000; k++) {
				char *p = chain(k * 2654435761u + (unsigned long)i * 97, 24, 16 + (k * 31) % 9000);

				memset(p, 1, 16);
				free(p);
			}
			_exit(0);
		}
		CHECK(pid > 0, "fork failed");
		if (pid > 0)
			CHECK(!stuck(pid), "child %d of %d still allocating after %d s: it hangs on a lock of the allocator",
			      i + 1, FORKS, CHILD_SECONDS);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(thread, NULL);
	return check_result();
}
