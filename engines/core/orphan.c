/* Whether anyone is left to receive a job's results. A fio killed with
 * SIGKILL leaves the jobs it forked running (each calls setsid()), a fio
 * server whose client is gone runs the client's whole job list
 * unattended, and so does a fio whose mpirun was killed: the benchmark goes
 * on, a cleanup deletes the namespace, and no result reaches anyone. A job
 * whose fio main process or, under a fio server, whose connection to the
 * client or, under a launcher, whose launcher process has ended is an
 * orphan; mdfio stops it, and the run with it, at its next step or
 * barrier. */
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
/* What started fio, whose end leaves no one to receive the results: a
 * pidfd of fio's main process's parent. Under a fio server that is the
 * server's process for the client's connection: it reads the client's
 * commands and sends the jobs' output, and exits when the connection ends,
 * while fio's main process runs on. Under a launcher (mpirun, srun) it is
 * the launcher's process that started fio (mpirun itself, Open MPI's
 * daemon, MPICH's proxy, slurmstepd): killed, it leaves fio running with
 * nobody to collect its output or end the job. */
static int starter = -1;
static pid_t starter_pid;
static const char *starter_launcher;

void mdfio_orphan_watch(const char *launcher)
{
	if (fio_main)
		return;
	fio_main = getpid();
	if (!is_backend && !launcher)
		return;
	starter_pid = getppid();
	starter_launcher = is_backend ? NULL : launcher;
	/* inherited by the jobs fio forks after this; without pidfds (Linux
	 * before 5.3) a lost client or launcher goes unseen, as before */
	starter = (int)syscall(SYS_pidfd_open, starter_pid, 0);
	if (starter >= 0 && getppid() != starter_pid) {
		/* it ended (and its pid may be another's now) before the
		 * pidfd was taken: nothing left to watch */
		close(starter);
		starter = -1;
	}
	if (starter >= 0)
		(void)fcntl(starter, F_SETFD, FD_CLOEXEC);
}

int mdfio_orphaned(char *why, size_t len)
{
	struct pollfd p = { .fd = starter, .events = POLLIN };

	if (!fio_main)
		return 0;
	if (mdfio_fio_gone((long)fio_main)) {
		snprintf(why, len, "fio's main process (pid %ld) is gone", (long)fio_main);
		return 1;
	}
	/* a pidfd is readable once its process has exited */
	if (starter < 0 || poll(&p, 1, 0) != 1)
		return 0;
	if (starter_launcher)
		snprintf(why, len, "the launcher that started this fio is gone (fio's parent, pid %ld, has ended; %s numbered the ranks)",
			 (long)starter_pid, starter_launcher);
	else
		snprintf(why, len, "the fio client is gone (this fio server's connection to it, pid %ld, has ended)",
			 (long)starter_pid);
	return 1;
}
