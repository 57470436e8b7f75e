/* engines/lib/robust.c: a lock in shared memory whose holder dies is taken by
 * the next, where a spin lock waited for ever. */
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "robust.h"
#include "check.h"

static void test_holder_killed_inside(void)
{
	pthread_mutex_t *m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int ready[2], status;
	char c;
	pid_t pid;

	CHECK(m != MAP_FAILED && !mdfio_robust_init(m), "init");
	CHECK(!pipe(ready), "pipe");
	pid = fork();
	if (!pid) {
		mdfio_robust_lock(m, 1);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		pause();	/* killed holding it */
		_exit(0);
	}
	CHECK(read(ready[0], &c, 1) == 1, "the holder took it");
	CHECK(!mdfio_robust_lock(m, 0), "a live holder's lock is not taken");
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	/* SIGALRM ends a test that would wait for ever */
	alarm(20);
	CHECK(mdfio_robust_lock(m, 1), "taken after its holder died");
	alarm(0);
	mdfio_robust_unlock(m);
	CHECK(mdfio_robust_lock(m, 0), "and again, consistent");
	mdfio_robust_unlock(m);
	munmap(m, sizeof(*m));
}

int main(void)
{
	test_holder_killed_inside();
	return check_result();
}
