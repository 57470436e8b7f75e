/* A job's ranks among all ranks of its run, which may span several fio
 * processes (mpirun, srun) and hosts (fio --server), and joining the run at
 * the start of each phase: the rank claimed in the root's rank file, then
 * the barrier every rank of every host passes together (md-workbench's
 * MPI_Barrier), so that the next phase starts nowhere before the last one
 * has ended everywhere. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fio_compat.h"
#include "job.h"

static const char *env(const char *name)
{
	return getenv(name);
}

int mdfio_job_world(struct thread_data *td, struct mdfio_world *w,
		    char *host, size_t hostlen, char *hosts, size_t hostslen)
{
	struct mdfio_options *eo = td->eo;
	char msg[512];

	if (gethostname(host, hostlen))
		snprintf(host, hostlen, "?");
	host[hostlen - 1] = '\0';
	hosts[0] = '\0';
	if (eo->hosts && mdfio_option_value("hosts", eo->hosts, hosts, hostslen))
		return 1;
	if (!mdfio_world_find(w, mdfio_job_parent(td)->o.numjobs, hosts, host,
			      env, msg, sizeof(msg)))
		return 0;
	/* once per job, not once per clone */
	if (!td->subjob_number)
		mdfio_error("%s", msg);
	return 1;
}

/* Puts the clone's global rank and host into fio's job description, which
 * fio's JSON carries per job ("desc") also from a fio server to its client:
 * how mdfio-report labels and checks the ranks of a run over many hosts.
 * Then the job's phase and what fio's closing lines of it count, then the
 * user's own description. fio calls setup in its main process, whose copy
 * of the options is the one its report reads. Returns 1 (one line printed)
 * if the ranks cannot be told. */
int mdfio_describe_rank(struct thread_data *td)
{
	struct mdfio_world w;
	char host[HOST_NAME_MAX + 1], hosts[MDFIO_HOSTS_MAX], desc[FIO_JOBDESC_SIZE];
	char summary[FIO_JOBDESC_SIZE];
	const char *mine = td->o.description;
	size_t n;

	if (mdfio_job_world(td, &w, host, sizeof(host), hosts, sizeof(hosts)))
		return 1;
	mdfio_job_summary(td, summary, sizeof(summary));
	/* a clone inherits its parent's description, ours included */
	if (mine && !strncmp(mine, "mdfio ", 6)) {
		mine = strstr(mine, "; ") ? strstr(mine, "; ") + 2 : "";
		n = strlen(summary);
		if (!strncmp(mine, summary, n))
			mine += n;
		if (!strncmp(mine, "; ", 2))
			mine += 2;
		if (!*mine)
			mine = NULL;
	}
	snprintf(desc, sizeof(desc), "mdfio rank=%" PRIu32 " ranks=%" PRIu32 " host=%s; %s%s%s",
		 w.base + (uint32_t)td->subjob_number, w.total, host, summary,
		 mine ? "; " : "", mine ? mine : "");
	free(td->o.description);
	td->o.description = strdup(desc);
	return 0;
}

int mdfio_reserve_run(struct thread_data *td)
{
	const struct mdfio_options *eo = td->eo;
	struct mdfio_world w;
	char host[HOST_NAME_MAX + 1], hosts[MDFIO_HOSTS_MAX], run_id[64] = "";

	if (mdfio_job_world(td, &w, host, sizeof(host), hosts, sizeof(hosts)))
		return 1;
	if (eo->run_id && mdfio_option_value("run_id", eo->run_id, run_id, sizeof(run_id)))
		return 1;
	return mdfio_reserve_ranks(td, w.base, mdfio_job_parent(td)->o.numjobs, host, w.launcher,
				   run_id);
}

enum host_state { HOST_HERE, HOST_NOT_STARTED, HOST_GONE, HOST_LATE };

/* Where host i of hosts= is: here if a rank of it is claimed (or is this
 * one); else, before any barrier of the run passed, not started; after
 * one, late if its fio still holds its ranks (alive, or on a network file
 * system its lock outlives it), gone if not. */
static enum host_state host_state(struct mdfio_job *j, const struct mdfio_rankfile *rf,
				  uint32_t i, int passed)
{
	uint32_t r, end = (i + 1) * j->per_host;
	int reserved = 0;

	for (r = i * j->per_host; r < end; r++) {
		if (r == j->rank || mdfio_rankfile_claimed(rf, r))
			return HOST_HERE;
		reserved |= mdfio_rankfile_reserved_elsewhere(rf, r);
	}
	if (!passed)
		return HOST_NOT_STARTED;
	return reserved ? HOST_LATE : HOST_GONE;
}

/* Appends the name to the list (a string of at most len), comma-separated. */
static void list_host(char *list, size_t len, const char *name, size_t namelen)
{
	size_t n = strlen(list);

	if (n < len)
		snprintf(list + n, len - n, "%s%.*s", n ? "," : "", (int)namelen, name);
}

/* Appends to msg the hosts of hosts= none of whose ranks is claimed, and
 * what became of them as far as the rank file tells: each host's claims
 * and reservations are probed once. */
static void name_missing_hosts(void *arg, const struct mdfio_rankfile *rf,
			       char *msg, size_t msglen)
{
	struct mdfio_job *j = arg;
	char passed[64], away[2][1024] = { "", "" };
	const char *e;
	size_t len, n = strlen(msg);
	uint32_t i;
	int any = mdfio_reservation_last_passed(j->root, passed, sizeof(passed));

	for (i = 0; (e = mdfio_world_host(j->hosts, i, &len)); i++) {
		enum host_state st = host_state(j, rf, i, any);

		if (st != HOST_HERE)
			list_host(away[st == HOST_LATE], sizeof(away[0]), e, len);
	}
	if (n >= msglen)
		return;
	if (!any) {
		if (away[0][0])
			snprintf(msg + n, msglen - n, "; no rank of host %s has started", away[0]);
		return;
	}
	if (away[0][0])
		n += (size_t)snprintf(msg + n, msglen - n,
				      "; host %s is gone (its fio, or the host, died) since the start of %s, which every rank passed",
				      away[0], passed);
	if (away[1][0] && n < msglen)
		snprintf(msg + n, msglen - n, "; host %s is late (its fio still holds its ranks, but none came)",
			 away[1]);
}

/* A read_only benchmark reads and writes nothing but objects it only
 * reads, so on a read-only file system, where nobody can change the
 * namespace under it either, the barrier has nothing to order: the ranks of
 * one fio start together anyway (fio releases a job's clones at once). The
 * ranks of several fio processes cannot meet without writing, and are
 * refused rather than started unsynchronised; so is everything that would
 * write. */
int mdfio_check_read_only_root(struct mdfio_job *j)
{
	struct statvfs vfs;

	if (fstatvfs(j->root_fd, &vfs) || !(vfs.f_flag & ST_RDONLY))
		return 0;
	j->ro_root = 1;
	if (j->phase != MDFIO_BENCHMARK || !j->read_only)
		return mdfio_error("directory=%s is on a read-only file system: phase=%s%s writes there (only a read_only=1 benchmark runs on a read-only namespace)",
				   j->root, mdfio_phase_name(j->phase),
				   j->phase == MDFIO_BENCHMARK ? " without read_only=1" : "");
	if (j->ranks != j->per_host)
		return mdfio_error("directory=%s is on a read-only file system, where the ranks of several fio processes cannot meet at the barrier (%s): run read_only=1 from one fio, or mount it read-write",
				   j->root, MDFIO_RANKFILE_NAME);
	/* rank 0's own log alone needs no merge */
	if (j->log_prefix[0] && j->latency_all)
		return mdfio_error("latency_all=1: on a read-only file system no status tells the last rank out to merge the logs of latency_log=%s; run with latency_all=0, or mount %s read-write",
				   j->log_prefix, j->root);
	if (j->sw_wear_out)
		return mdfio_error("stonewall_wear_out=1: on the read-only file system of directory=%s the ranks cannot exchange their steps (%s); run without it, or mount it read-write",
				   j->root, MDFIO_RANKFILE_NAME);
	return 0;
}

static int run_stopped(void *arg, char *why, size_t len)
{
	const struct mdfio_job *j = arg;
	char orphan[256];

	if (mdfio_reservation_stopped(j->root, why, len))
		return 1;
	if (!mdfio_orphaned(orphan, sizeof(orphan)))
		return 0;
	snprintf(why, len, "rank %" PRIu32 " (host %s) stopped: %s", j->rank, j->host, orphan);
	return 1;
}

static void answer_fio(void *arg)
{
	mdfio_answer_fio(((struct mdfio_job *)arg)->td);
}

/* A barrier that waits long says so, once per join_timeout of its wait,
 * from one rank of each fio: a run that waits for a slow or stuck host
 * must not look hung. */
static void say_stalled(void *arg, const char *line)
{
	struct mdfio_job *j = arg;

	mdfio_notice("%s: rank %" PRIu32 " (host %s) %s", j->root, j->rank, j->host, line);
}

int mdfio_join_run(struct mdfio_job *j)
{
	char msg[1024], why[1280];
	int err;

	if (j->ro_root) {
		/* a run id no record can hold: no rank counts as ours */
		snprintf(j->run, sizeof(j->run), "read-only");
		return 0;
	}
	err = mdfio_rankfile_claim_reserved(&j->rankfile, j->root_fd, j->rank, j->ranks,
					    j->per_host, j->host, mdfio_reservation(j->root),
					    j->run_id, msg, sizeof(msg));
	if (err == 2) {
		/* a named run's failure, kept in the file: this later phase
		 * of the run stops as at a failed barrier, with one line from
		 * this fio unless it has said why already (as phase.c's
		 * precheck says it) */
		switch (mdfio_reservation_stopped(j->root, why, sizeof(why))) {
		case MDFIO_STOP_NONE:
			if (!mdfio_reservation_stop(j->root, MDFIO_STOP_GAVE_UP, msg))
				return mdfio_error_said("this run stopped before this phase (%s)", msg);
			return mdfio_error("%s: rank %" PRIu32 " (host %s): this run stopped before this phase (%s); nothing was started",
					   j->root, j->rank, j->host, msg);
		case MDFIO_STOP_FAILED:
			return mdfio_error("this run stopped before this phase (%s)", why);
		default:
			return mdfio_error_said("this run stopped before this phase (%s)", why);
		}
	}
	if (err) {
		mdfio_error("%s: host %s: %s", j->root, j->host, msg);
		/* its siblings, claimed, would wait at the barrier for it for
		 * ever. Without a claim this rank may not write the file,
		 * which can be another run's: it tells its own fio's jobs,
		 * and the first of them at the barrier fails it */
		snprintf(why, sizeof(why), "rank %" PRIu32 " (host %s) cannot start: %s",
			 j->rank, j->host, mdfio_last_error());
		mdfio_reservation_stop(j->root, MDFIO_STOP_REFUSED, why);
		return 1;
	}
	j->rankfile.stopped = run_stopped;
	j->rankfile.stopped_arg = j;
	j->rankfile.waiting = answer_fio;
	j->rankfile.waiting_arg = j;
	j->rankfile.stalled = say_stalled;
	j->rankfile.stalled_arg = j;
	return 0;
}

int mdfio_abort_run(struct mdfio_job *j)
{
	char why[1024];

	if (j->ro_root)
		return 1;
	snprintf(why, sizeof(why), "rank %" PRIu32 " (host %s) cannot start: %s",
		 j->rank, j->host, mdfio_last_error());
	/* before the rank file: a sibling that meets the refusal there finds
	 * it is this fio's, already said */
	mdfio_reservation_stop(j->root, MDFIO_STOP_REFUSED, why);
	mdfio_rankfile_abort(&j->rankfile, why);
	mdfio_leave_run(j);
	return 1;
}

void mdfio_stop_run(struct mdfio_job *j)
{
	char why[1024];

	if (j->ro_root)
		return;
	snprintf(why, sizeof(why), "rank %" PRIu32 " (host %s) failed: %s",
		 j->rank, j->host, mdfio_last_error());
	/* the later phases of this fio (the rank file starts afresh for a
	 * phase that no rank has claimed yet, so, but for a named run's, it
	 * cannot carry the failure there), and the ranks of this phase still
	 * at its barrier */
	mdfio_reservation_stop(j->root, MDFIO_STOP_FAILED, why);
	mdfio_rankfile_abort(&j->rankfile, why);
}

int mdfio_run_barrier(struct mdfio_job *j, unsigned int repeat,
		      unsigned int step, unsigned int timeout_s)
{
	char msg[1024], why[1280], phase[MDFIO_RANKFILE_PHASE_LEN], label[64];
	uint64_t barrier;

	if (j->ro_root)
		return 0;
	/* every rank of a barrier must be entering the same phase and repeat */
	snprintf(phase, sizeof(phase), "%s-%u%s", mdfio_phase_name(j->phase),
		 j->ph->advances ? repeat : 0, step ? "-go" : "");
	if (j->ph->advances)
		snprintf(label, sizeof(label), "%s repeat %u", mdfio_phase_name(j->phase), repeat);
	else
		snprintf(label, sizeof(label), "%s", mdfio_phase_name(j->phase));
	if (mdfio_rankfile_barrier(&j->rankfile, phase, timeout_s * 1000u, &barrier,
				   j->hosts[0] ? name_missing_hosts : NULL, j,
				   msg, sizeof(msg))) {
		mdfio_leave_run(j);
		/* one line per fio: the refusing rank's own */
		if (mdfio_reservation_stopped(j->root, why, sizeof(why)) == MDFIO_STOP_REFUSED)
			return 1;
		/* the rank file forgets an unnamed run's failure once no rank
		 * holds a claim, and fio goes on to its later sections: this
		 * fio's refuse at once, quietly, rather than each waiting
		 * another join_timeout for ranks that are gone */
		snprintf(why, sizeof(why), "rank %" PRIu32 " (host %s) cannot start: %s",
			 j->rank, j->host, msg);
		mdfio_reservation_stop(j->root, MDFIO_STOP_GAVE_UP, why);
		return mdfio_error("%s: rank %" PRIu32 " (host %s), entering %s: %s; nothing was started",
				   j->root, j->rank, j->host, label, msg);
	}
	if (!step) {
		snprintf(j->run, sizeof(j->run), "%s.%" PRIu64, j->rankfile.id, barrier);
		mdfio_reservation_passed(j->root, label);
	}
	return 0;
}

int mdfio_run_max_steps(struct mdfio_job *j, uint64_t steps, uint64_t *max)
{
	char msg[1024], phase[MDFIO_RANKFILE_PHASE_LEN];
	uint64_t barrier;
	uint32_t block = j->rankfile.block;
	int err;

	snprintf(phase, sizeof(phase), "benchmark-%u-wear-out", j->repeat);
	/* every rank holds its claim until it has passed this exchange, so
	 * one unclaimed here is gone, even beside live ranks of its fio:
	 * waited for join_timeout, not for ever */
	j->rankfile.block = 1;
	/* and every rank comes here by the timer and the steps it has in
	 * flight then, or having done all of them before: one still busy
	 * join_timeout past the timer is stuck, and would hold the others
	 * here for ever */
	j->rankfile.arrive_by_us = (j->t0 + j->sw_timer_ns) / 1000u + (uint64_t)j->join_timeout * 1000000u;
	err = mdfio_rankfile_barrier_max(&j->rankfile, phase, steps, max,
					 j->join_timeout * 1000u, &barrier, NULL, NULL,
					 msg, sizeof(msg));
	j->rankfile.block = block;
	j->rankfile.arrive_by_us = 0;
	if (err)
		return mdfio_error("%s: rank %" PRIu32 " (host %s): stonewall_wear_out: %s (stonewall_timer=%" PRIu64 " s, then join_timeout=%u s for the steps in flight); the steps of the ranks cannot be evened out",
				   j->root, j->rank, j->host, msg, j->sw_timer_ns / 1000000000u, j->join_timeout);
	return 0;
}

static int namespace_left(void *arg)
{
	return mdfio_namespace_left(((struct mdfio_job *)arg)->root_fd);
}

void mdfio_leave_run(struct mdfio_job *j)
{
	/* never the last out of a fio that reserved its ranks: the root, if
	 * it goes, goes with that reservation (mdfio_job_ended); a fio that
	 * holds none leaves it (docs/design.md) */
	(void)mdfio_rankfile_release(&j->rankfile, j->root_fd, namespace_left, j);
}
