/* Whether anyone is left to receive a job's results. A fio killed with
 * SIGKILL leaves the jobs it forked running (each calls setsid()), and a
 * fio server whose client is gone runs the client's whole job list
 * unattended: the benchmark goes on, a cleanup deletes the namespace, and
 * no result reaches anyone. A job whose fio main process or, under a fio
 * server, whose connection to the client has ended is an orphan; mdfio
 * stops it, and the run with it, at its next step or barrier. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fio_compat.h"
#include "job.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434	/* the same number on every architecture */
#endif

/* fio's main process: the jobs' parent while it lives (or, with thread=1,
 * the job itself) */
static pid_t fio_main;
/* Under a fio server: a pidfd of the server's process for the client's
 * connection, fio's main process's parent. It reads the client's commands
 * and sends the jobs' output; it exits when the connection ends, while
 * fio's main process runs on. */
static int connection = -1;
static pid_t connection_pid;

void mdfio_orphan_watch(void)
{
	if (fio_main)
		return;
	fio_main = getpid();
	if (!is_backend)
		return;
	connection_pid = getppid();
	/* inherited by the jobs fio forks after this; without pidfds (Linux
	 * before 5.3) a lost client goes unseen, as before */
	connection = (int)syscall(SYS_pidfd_open, connection_pid, 0);
	if (connection >= 0)
		(void)fcntl(connection, F_SETFD, FD_CLOEXEC);
}

int mdfio_orphaned(char *why, size_t len)
{
	struct pollfd p = { .fd = connection, .events = POLLIN };

	if (!fio_main)
		return 0;
	if (mdfio_fio_gone((long)fio_main)) {
		snprintf(why, len, "fio's main process (pid %ld) is gone", (long)fio_main);
		return 1;
	}
	/* a pidfd is readable once its process has exited */
	if (connection >= 0 && poll(&p, 1, 0) == 1) {
		snprintf(why, len, "the fio client is gone (this fio server's connection to it, pid %ld, has ended)",
			 (long)connection_pid);
		return 1;
	}
	return 0;
}
