/* The core of every engine: a job's units (what each request of a unit is,
 * in which order), their accounting in fio's statistics, and the glue that
 * makes fio's ioengine_ops from a backend. Options, the phase protocol, the
 * latency logs and recovery have files of their own (see job.h). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fio_compat.h"
#include "job.h"
#include "namespace.h"
#include "oplog.h"
#include "pattern.h"

/* fio's JSON slot of each operation: create=write, read=read, delete=trim
 * (clat_ns), stat=sync (lat_ns). */
/* How often fio refreshes its cached clock between io_us: the mask fio's
 * gtod_reduce=1 sets (options.c, str_gtod_reduce_cb). */
#define FIO_GTOD_REDUCE_TS_CACHE_MASK 63

static const enum fio_ddir op_ddir[MDFIO_OP_NR] = {
	[MDFIO_OP_CREATE] = DDIR_WRITE,
	[MDFIO_OP_STAT] = DDIR_SYNC,
	[MDFIO_OP_READ] = DDIR_READ,
	[MDFIO_OP_DELETE] = DDIR_TRIM,
};

/* ------------------------------------------------------------------ setup */

static void set_units(struct thread_data *td, uint64_t units)
{
	uint64_t bytes = units * td->o.bs[DDIR_WRITE];	/* one size for all */
	struct fio_file *f = td->files[0];

	f->real_file_size = bytes;
	f->io_size = bytes;
	f->file_offset = 0;
	td->o.size = bytes;
	td->total_io_size = bytes;
}

static const struct mdfio_backend *backend;

static int engine_setup(struct thread_data *td)
{
	struct mdfio_options *eo = td->eo;
	/* fio calls this in its main process before any job runs, so only
	 * the options are known here; init() corrects it for a recovery */
	if (!td->files || !td->o.nr_files)
		return 0;
	mdfio_share_errors();
	/* one job's refused option stops every mdfio job of the run here,
	 * before any of them starts */
	if (mdfio_check_run(td, backend->direct))
		return 1;
	set_units(td, mdfio_phase_units(eo));
	/* a job that cannot tell its ranks stops before any rank starts */
	return mdfio_check_jobfile(td) || mdfio_describe_rank(td) || mdfio_reserve_run(td);
}

/* Every unit in flight owns a path and a pair of object buffers; a create's
 * buffer keeps what its objects share (see mdfio_pattern_write). */
static int make_units(struct thread_data *td, struct mdfio_job *j)
{
	unsigned int n = td_ioengine_flagged(td, FIO_SYNCIO) ? 1 : td->o.iodepth;
	size_t len = (j->size + MDFIO_BUF_ALIGN - 1) / MDFIO_BUF_ALIGN * MDFIO_BUF_ALIGN;
	unsigned int i;

	if (!n)
		n = 1;
	j->unit = calloc(n, sizeof(*j->unit));
	j->events = calloc(n, sizeof(*j->events));
	if (!j->unit || !j->events ||
	    posix_memalign((void **)&j->bufs, MDFIO_BUF_ALIGN, 2 * len * n))
		return mdfio_error("out of memory for iodepth=%u and bs=%zu", n, j->size);
	j->nr_units = n;
	for (i = 0; i < n; i++) {
		struct mdfio_unit *u = &j->unit[n - 1 - i];

		u->index = n - 1 - i;
		u->buf_len = len;
		u->rbuf = j->bufs + 2 * len * u->index;
		u->wbuf = (uint8_t *)u->rbuf + len;
		memset(u->rbuf, 0, 2 * len);
		u->wbuf_holds = MDFIO_PATTERN_FRESH;
		u->req.name = u->name;
		u->req.size = j->size;
		u->next_free = j->free_unit;
		j->free_unit = u;
	}
	return 0;
}

unsigned int mdfio_job_ops(struct thread_data *td)
{
	const struct mdfio_job *j = td->io_ops_data;
	unsigned int ops = 0, k;

	for (k = 0; k < j->nr_steps; k++)
		ops |= 1u << j->ph->steps[k].op;
	return ops;
}

unsigned int mdfio_job_ranks_here(struct thread_data *td)
{
	return ((const struct mdfio_job *)td->io_ops_data)->world.local;
}

unsigned int mdfio_job_clones(struct thread_data *td)
{
	return ((const struct mdfio_job *)td->io_ops_data)->per_host;
}

/* What a rank needs before it can start: paths, buffers, its backend. */
static int prepare_rank(struct thread_data *td, struct mdfio_job *j)
{
	const struct mdfio_options *eo = td->eo;

	if (mdfio_datasets_build(j) || mdfio_datasets_fd_limit(td, j))
		return 1;
	if (mdfio_pattern_init(&j->pattern, eo->data_pattern, eo->packet_type,
			       eo->random_seed, j->datasets, j->size))
		return mdfio_error("out of memory for bs=%zu", j->size);
	if (make_units(td, j))
		return 1;
	if (j->be->init && j->be->init(td, j->root_fd, j->unit, j->nr_units, &j->priv))
		return 1;
	return 0;
}

/* Units a synchronous io_u carries: fio's own cycle per io_u is shared by
 * up to this many units. fio counts one I/O per io_u; a fio with
 * fio-patch/io_u-nr-ios.patch (the upstream route, fio_io_u_nr_ios) counts
 * xfer_buflen / buflen of them, and in any other fio the engine adds the
 * rest to the same three counters itself (count_batched). What that saves
 * per unit is measured by bench/run --only fio-patch. */
#define MDFIO_UNITS_PER_IO_U 16
static int fio_counts_batches;

static int init_job(struct thread_data *td)
{
	const struct mdfio_backend *be = backend;
	struct mdfio_options *eo = td->eo;
	struct mdfio_job *j;
	int root_fd;

	mdfio_error_scope(mdfio_job_parent(td)->thread_number);
	if (mdfio_wait_previous_section(td))
		return 1;
	if (!eo->phase)
		return mdfio_error("phase= is required: precreate, benchmark or cleanup");
	if (mdfio_check_fio_options(td, (enum mdfio_phase)(eo->phase - 1), be->direct))
		return 1;
	/* with I <= P every object a step reads existed before the phase
	 * began, whatever the iodepth; beyond, a step reads what another
	 * rank creates in the same phase, which no engine can order */
	if (eo->steps > eo->precreate && mdfio_phases[eo->phase - 1].per_set_is_steps)
		return mdfio_error("steps_per_set=%llu exceeds precreate_per_set=%llu: a step would read an object another rank creates in the same run",
				 eo->steps, eo->precreate);
	if (eo->stonewall_wear_out && !eo->stonewall_timer)
		return mdfio_error("stonewall_wear_out=1 needs stonewall_timer=<seconds> > 0: the wear-out starts when the timer stops the ranks (md-workbench -W with -w)");
	/* the root is the user's: it may be reached through symlinks. All
	 * the engine touches is found from this descriptor, one name at a
	 * time, without following any */
	root_fd = open(td->o.directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0 && (errno == ENOENT || errno == ENOTDIR))
		return mdfio_error("directory=%s: not an existing directory (only a precreate creates the root, and only its last component)",
				 td->o.directory);
	if (root_fd < 0)
		return mdfio_error("directory=%s: cannot open it: %s", td->o.directory, strerror(errno));
	j = calloc(1, sizeof(*j));
	if (!j) {
		close(root_fd);
		return mdfio_error("out of memory");
	}
	td->io_ops_data = j;
	j->td = td;
	j->root_fd = root_fd;
	j->rankfile.fd = -1;
	if (eo->phase == MDFIO_BENCHMARK + 1 && eo->repeat > eo->repeats) {
		/* a jobfile cannot vary its sections with the environment, so
		 * spare repeat sections stand down: no step, no status change */
		td->done = 1;
		return 0;
	}
	j->be = be;
	j->phase = (enum mdfio_phase)(eo->phase - 1);
	j->ph = &mdfio_phases[j->phase];
	if (mdfio_job_world(td, &j->world, j->host, sizeof(j->host), j->hosts,
			    sizeof(j->hosts)))
		return 1;
	j->per_host = mdfio_job_parent(td)->o.numjobs;
	j->rank = j->world.base + (uint32_t)td->subjob_number;
	j->ranks = j->world.total;
	if ((uint32_t)td->subjob_number >= j->per_host)
		return mdfio_error("cannot tell this clone's rank (%d of %" PRIu32 ")",
				 td->subjob_number, j->per_host);
	j->datasets = eo->datasets;
	j->offset = eo->rank_offset;
	j->precreate = eo->precreate;
	j->steps = eo->steps;
	j->start = eo->start_index;
	j->start_set = (int)eo->start_index_set;
	j->size = td->o.bs[j->ph->ddir];
	j->read_only = eo->read_only;
	j->verify = eo->verify_read;
	/* md-workbench waits in its benchmark only, and only above 1e-9 */
	if (j->phase == MDFIO_BENCHMARK && eo->waiting_factor > 1e-9)
		j->wait_factor = eo->waiting_factor;
	j->log_factor = (float)eo->waiting_factor;
	j->latency_all = (int)eo->latency_all;
	j->verbose = eo->verbose;
	j->slow = j->wait_factor != 0 || j->verbose;
	j->runs_per_iteration = eo->adaptive_waiting ? MDFIO_ADAPTIVE_RUNS : 1;
	j->ignore_create_errors = (int)eo->ignore_precreate_errors;
	j->nr_steps = j->read_only ? j->ph->nr_steps_read_only : j->ph->nr_steps;
	/* md-workbench limits the benchmark only */
	if (j->phase == MDFIO_BENCHMARK && eo->stonewall_timer) {
		j->sw_timer_ns = (uint64_t)eo->stonewall_timer * 1000000000u;
		j->sw_wear_out = (int)eo->stonewall_wear_out;
	}
	j->repeat = eo->repeat;
	j->join_timeout = eo->join_timeout;
	while (op_ddir[j->count_op] != j->ph->ddir)
		j->count_op++;
	snprintf(j->root, sizeof(j->root), "%s", td->o.directory);
	if ((size_t)snprintf(j->status_path, sizeof(j->status_path), "%s/%s",
			     j->root, MDFIO_STATUS_NAME) >= sizeof(j->status_path))
		return mdfio_error("directory=%s: path too long", j->root);
	/* the same for every rank of this fio: before any claims */
	if (eo->latency_log && mdfio_option_value("latency_log", eo->latency_log,
						  j->log_prefix, sizeof(j->log_prefix)))
		return 1;
	if (eo->run_info_file && mdfio_option_value("run_info_file", eo->run_info_file,
						    j->run_info, sizeof(j->run_info)))
		return 1;
	if (mdfio_check_read_only_root(j))
		return 1;
	/* once claimed, a rank that cannot start stops the whole run at its
	 * next barrier, before any rank touches the namespace: a refusal of
	 * one rank alone would leave the phase half run */
	if (mdfio_join_run(j))
		return 1;
	if (prepare_rank(td, j) || mdfio_phase_precheck(j))
		return mdfio_abort_run(j);
	if (mdfio_run_barrier(j, eo->repeat, 0, eo->join_timeout))
		return 1;
	if (mdfio_enter_phase(j, eo->repeat))
		return mdfio_abort_run(j);
	if (mdfio_run_barrier(j, eo->repeat, 1, eo->join_timeout) ||
	    mdfio_commit_phase(j)) {
		mdfio_close_logs(j, 1);
		return 1;
	}
	/* md-workbench counts failed operations and goes on; the engine
	 * reports them itself and fails the job at its end */
	td->o.continue_on_error = ERROR_TYPE_ANY;
	td->ts.continue_on_error = ERROR_TYPE_ANY;
	/* fio's per-io_u clock reads (start, issue, completion) feed only the
	 * statistics FIO_NOSTATS discards; drop them as gtod_reduce does, but
	 * keep the percentiles the engine's own samples use */
	td->o.disable_lat = td->o.disable_clat = 1;
	td->o.disable_slat = td->o.disable_bw = 1;
	td->ts_cache_mask = FIO_GTOD_REDUCE_TS_CACHE_MASK;
	j->units = mdfio_phase_units(eo);
	j->per_io_u = be->sync || (be->ends_in_start && j->priv && be->ends_in_start(j->priv)) ?
		      MDFIO_UNITS_PER_IO_U : 1;
	if (j->ph->removes_datasets) {
		uint32_t d;

		for (d = 0; d < j->datasets; d++)
			j->dsets[MDFIO_OWN][d].objects_left = j->precreate;
	}
	if (j->recover) {
		uint64_t n = mdfio_count_objects(j);

		/* notices on fio's error stream like every other: stdout may
		 * be fio's JSON */
		if (j->rec_lo == j->rec_hi)
			mdfio_notice("rank %" PRIu32 ": %s was made by mdfio-null, so no file in its datasets is mdfio's: only the empty ones are removed",
				     j->rank, j->root);
		else if (j->recover == 2)
			mdfio_notice("rank %" PRIu32 ": the ranks' FIFO positions in %s differ (ranks ended a benchmark after different numbers of steps: a stonewall_timer without stonewall_wear_out, or a run that stopped part-way); removing the %" PRIu64 " objects found in its datasets with indices %" PRIu64 " to %" PRIu64,
				     j->rank, j->root, n, j->rec_lo, j->rec_hi - 1);
		else
			mdfio_notice("rank %" PRIu32 ": the status of %s cannot be trusted; removing the %" PRIu64 " objects found in its datasets with indices %" PRIu64 " to %" PRIu64,
				     j->rank, j->root, n, j->rec_lo, j->rec_hi - 1);
		if (j->rec_old && j->rec_lo != j->rec_hi)
			mdfio_notice("rank %" PRIu32 ": %s predates mdfio-status 2, which records the steps of a benchmark: recovery takes them as precreate_per_set, the most there can be, and removes objects up to index %" PRIu64,
				    j->rank, j->status_path, j->rec_hi - 1);
		j->units = n ? n : 1;
		set_units(td, j->units);
	}
	return 0;
}

/* The job waits for its phase (the previous section, the run's barriers)
 * inside init: fio shows it as not yet running meanwhile. */
static int engine_init(struct thread_data *td)
{
	int state = mdfio_job_waits(td), err = init_job(td);

	mdfio_job_runs(td, state);
	return err;
}

/* ------------------------------------------------------------------ units */

/* The first error of an operation: kept for the report at the job's end
 * (the only place an object's full path is made). */
static void __attribute__((cold, noinline))
count_error(struct mdfio_op_errors *c, int err, const char *dir, const char *name)
{
	if (!c->count++) {
		c->first_errno = err;
		snprintf(c->first_path, sizeof(c->first_path), "%s/%s", dir, name);
	}
	if (MDFIO_IS_NOT_OBJECT(err) && !c->first_alien) {
		c->first_alien = err;
		snprintf(c->alien_path, sizeof(c->alien_path), "%s/%s", dir, name);
	}
}

const char *mdfio_err_text(int err)
{
#define NOT_OBJECT ", not an object (mdfio makes each a regular file of one link): left as it is"
	if (!MDFIO_IS_NOT_OBJECT(err))
		return strerror(err);
	switch ((unsigned int)(err & 0xf) << 12) {
	case S_IFIFO:
		return "a FIFO" NOT_OBJECT;
	case S_IFCHR:
		return "a character device" NOT_OBJECT;
	case S_IFBLK:
		return "a block device" NOT_OBJECT;
	case S_IFDIR:
		return "a directory" NOT_OBJECT;
	case S_IFLNK:
		return "a symlink, which mdfio never follows" NOT_OBJECT;
	case S_IFSOCK:
		return "a socket" NOT_OBJECT;
	case S_IFREG:
		return "a regular file of other than one link (a hard link)" NOT_OBJECT;
	default:
		return "a file of no known type" NOT_OBJECT;
	}
#undef NOT_OBJECT
}

/* md-workbench ends the run at the first object it cannot create, in the
 * precreate and in the benchmark, unless told to ignore such errors: this
 * rank starts no further unit (the job is done once the units in flight
 * have ended), and the run's other ranks stop at their next barrier. */
static void __attribute__((cold, noinline))
create_failed(struct mdfio_job *j, int err, const char *dir, const char *name)
{
	if (j->halted)
		return;
	j->halted = 1;
	mdfio_error("rank %" PRIu32 " %s: cannot create %s/%s: %s; the run stops here (ignore_precreate_errors=1 counts such errors and goes on)",
		    j->rank, mdfio_phase_name(j->phase), dir, name, strerror(err));
	mdfio_stop_run(j);
}

/* No one is left to receive this rank's results (fio killed, or its fio
 * server's client gone): it stops here, as at a failed create, and the run
 * with it; looked at every ORPHAN_EVERY units (two system calls) and
 * between the slices of a long wait (waiting_factor). */
#define ORPHAN_EVERY 64
static int __attribute__((cold, noinline)) orphaned(struct mdfio_job *j)
{
	char why[256];

	if (!mdfio_orphaned(why, sizeof(why)))
		return 0;
	j->halted = 1;
	mdfio_error("rank %" PRIu32 " %s: %s; the run stops here",
		    j->rank, mdfio_phase_name(j->phase), why);
	mdfio_stop_run(j);
	return 1;
}

/* A create found its object's name taken (O_EXCL): the file there is not
 * mdfio's, and the EEXIST is the proof. The status keeps it before the
 * unit goes on, so that no later phase, recovery or cleanup deletes it; a
 * rank that cannot record it stops the run, even with
 * ignore_precreate_errors=1. */
static void __attribute__((cold, noinline))
name_taken(struct mdfio_job *j, const struct mdfio_unit *u)
{
	const struct mdfio_step *st = &j->ph->steps[u->step];
	uint64_t idx = u->idx + (st->ahead ? j->precreate : 0);

	if (!mdfio_record_taken(j, j->dsets[st->target][u->d].rank, u->d, idx) || j->halted)
		return;
	j->halted = 1;
	mdfio_error("rank %" PRIu32 " %s: %s/%s is not mdfio's, and the status cannot say so; the run stops here",
		    j->rank, mdfio_phase_name(j->phase), u->dir, u->req.name);
	mdfio_stop_run(j);
}

/* Runs once per request: inlined into unit_next, the hot path; recover.c
 * calls it through mdfio_account_op. */
static inline __attribute__((always_inline)) void
account_op(struct thread_data *td, struct mdfio_job *j, enum mdfio_op op,
	   uint64_t start, uint64_t end, int err, const char *dir, const char *name)
{
	enum fio_ddir dd = op_ddir[op];
	uint64_t ns = end - start;

	if (dd == DDIR_SYNC)
		td->ts.total_io_u[DDIR_SYNC]++;
	if (!err) {
		if (dd == DDIR_SYNC)
			add_sync_clat_sample(&td->ts, ns);
		else
			mdfio_add_clat(td, dd, ns, j->size);
		if (j->log[op])
			mdfio_oplog_row(j->log[op], start - j->t0, ns);
		return;
	}
	if (dd != DDIR_SYNC)
		td->ts.drop_io_u[dd]++;
	count_error(&j->op[op], err, dir, name);
	if (op == MDFIO_OP_CREATE && !j->ignore_create_errors)
		create_failed(j, err, dir, name);
}

void mdfio_account_op(struct thread_data *td, struct mdfio_job *j,
		      enum mdfio_op op, uint64_t start, uint64_t end, int err,
		      const char *dir, const char *name)
{
	account_op(td, j, op, start, end, err, dir, name);
}

/* md-workbench's wait after an operation of ns (mdw_wait): a spin on the
 * clock below 10 ms, where a sleep would overshoot, a sleep above. The
 * rank's thread waits, as md-workbench's process does: with units in
 * flight, none is started or reaped meanwhile (docs/engines.md). */
#define MDFIO_SPIN_BELOW_NS 10000000u
static void __attribute__((cold, noinline))
wait_after(struct mdfio_job *j, uint64_t ns)
{
	const uint64_t slice = MDFIO_ANSWER_MS * 1000000u;
	uint64_t w = (uint64_t)((double)ns * j->wait_factor);
	uint64_t now = mdfio_now(), end = now + w, until;
	struct timespec ts;

	/* the rest of a unit whose rank has stopped */
	if (j->halted)
		return;
	if (w < MDFIO_SPIN_BELOW_NS) {
		while (mdfio_now() < end)
			;
		return;
	}
	/* a factor can make one wait long: it sleeps in slices, each to a
	 * time on the clock (so the slices add no overshoot), and answers
	 * fio between them */
	for (;;) {
		until = end - now > slice ? now + slice : end;
		ts.tv_sec = (time_t)(until / 1000000000u);
		ts.tv_nsec = (long)(until % 1000000000u);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		if (until == end)
			return;
		mdfio_answer_fio(j->td);
		now = mdfio_now();
		if (now >= end || orphaned(j))
			return;
	}
}

/* One line of md-workbench's -v output on stderr, in one write, so that
 * the lines of ranks running at once do not mix (stdout may be fio's JSON). */
static void __attribute__((cold, noinline, format(printf, 2, 3)))
trace(const struct mdfio_job *j, const char *fmt, ...)
{
	char line[2 * PATH_MAX + 128];
	va_list ap;
	int n;

	(void)j;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;	/* nowhere to say it */
}

/* md-workbench's -v lines of an operation that ended with err (level 1:
 * its error lines, level 2: its trace of every operation, in its wording
 * and order, with its paths: root/<rank>_<d>/file-<i>). */
static void trace_op(const struct mdfio_job *j, const struct mdfio_unit *u, int err)
{
	const struct mdfio_req *r = &u->req;
	uint32_t peer = j->dsets[j->ph->steps[u->step].target][u->d].rank;
	int v = (int)j->verbose;

	switch (r->op) {
	case MDFIO_OP_STAT:
		if (v >= 2)
			trace(j, "%" PRIu32 ": stat %s/%s (%d)", j->rank, u->dir, r->name, err ? -1 : 0);
		if (err)
			trace(j, "ERROR: %" PRIu32 ": Error while stating the obj: %s/%s", j->rank, u->dir, r->name);
		else if (v >= 2)	/* md-workbench says so before it reads */
			trace(j, "%" PRIu32 ": read %s/%s pretend: %" PRIu32, j->rank, u->dir, r->name, peer);
		break;
	case MDFIO_OP_READ:
		/* md-workbench counts a failed verify without a line */
		if (err && err != EBADMSG)
			trace(j, "WARNING: %" PRIu32 ": Error while reading the obj: %s/%s", j->rank, u->dir, r->name);
		break;
	case MDFIO_OP_DELETE:
		if (v >= 2)
			trace(j, "%" PRIu32 ": delete %s/%s", j->rank, u->dir, r->name);
		break;
	case MDFIO_OP_CREATE:
		if (err)
			trace(j, "ERROR: %" PRIu32 ": Error while creating the obj: %s/%s", j->rank, u->dir, r->name);
		if (v < 2)
			break;
		/* md-workbench's precreate names its rank's last dataset (the
		 * one its mkdir loop made last) and that mkdir's result; its
		 * benchmark the stat's result, 0 when it gets to a create */
		if (j->phase == MDFIO_PRECREATE)
			trace(j, "%" PRIu32 ": write %s:%s/%s (0) pretend: %" PRIu32, j->rank,
			      j->dsets[MDFIO_OWN][j->datasets - 1].path, u->dir, r->name, j->rank);
		else
			trace(j, "%" PRIu32 ": write %s/%s (0) pretend: %" PRIu32, j->rank, u->dir,
			      r->name, peer);
		break;
	default:
		break;
	}
}

/* What follows an operation of ns that ended with err only with -t or -v:
 * md-workbench's wait after it, then its lines. */
static void __attribute__((cold, noinline))
after_op(struct mdfio_job *j, const struct mdfio_unit *u, uint64_t ns, int err)
{
	if (j->wait_factor != 0)
		wait_after(j, ns);
	if (j->verbose)
		trace_op(j, u, err);
}

/* u's object for request st: its dataset and name, and a create's content
 * (a step's stat, read and delete share one object, so this runs only when
 * the object changes). */
static void aim(struct mdfio_job *j, struct mdfio_unit *u,
		const struct mdfio_step *st)
{
	const struct mdfio_dataset *ds = &j->dsets[st->target][u->d];
	uint64_t idx = u->idx + (st->ahead ? j->precreate : 0);

	u->req.dfd = ds->fd;
	u->dir = ds->path;
	mdfio_object_name(u->name, idx);
	if (st->op == MDFIO_OP_CREATE)
		mdfio_pattern_write(&j->pattern, u->wbuf, &u->wbuf_holds, ds->rank, u->d, idx);
}

/* u->req = request s of u's unit (its name and size are the unit's own,
 * set once in make_units). Runs once per request: inlined into its two
 * callers. */
static inline __attribute__((always_inline)) void
set_req(struct mdfio_job *j, struct mdfio_unit *u, unsigned int s)
{
	const struct mdfio_step *st = &j->ph->steps[s];
	struct mdfio_req *r = &u->req;

	u->step = s;
	r->op = st->op;
	r->buf = st->op == MDFIO_OP_READ ? u->rbuf : u->wbuf;
	r->err = 0;
	if (!s || st->target != st[-1].target)
		aim(j, u, st);
}

/* The phase's exact time, from its first unit's start to its last unit's
 * end (md-workbench's per-rank T), as the one submission-latency sample of
 * its slot: fio's runtime has whole milliseconds, and the slot's slat is
 * otherwise unused (see docs/engines.md). */
static void record_phase_time(struct thread_data *td, struct mdfio_job *j)
{
	/* md-workbench leaves its wear-out's MPI_Allreduce out of T too */
	mdfio_add_slat(td, j->ph->ddir, mdfio_now() - j->t0 - j->sw_wait_ns);
}

/* The wear-out's exchange of steps, outside the phase's time. */
static int stonewall_exchange(struct mdfio_job *j, uint64_t steps, uint64_t *max)
{
	uint64_t t = mdfio_now();
	int err = mdfio_run_max_steps(j, steps, max);

	j->sw_wait_ns += mdfio_now() - t;
	/* done: the run has its number of steps (or is broken) */
	j->sw_timer_ns = 0;
	return err;
}

void mdfio_phase_over(struct thread_data *td, struct mdfio_job *j)
{
	uint64_t max;

	if (j->recover) {
		uint32_t d;

		mdfio_recover_report(j);
		for (d = 0; d < j->datasets; d++)
			mdfio_remove_dataset(td, j, d);
	}
	record_phase_time(td, j);
	/* every step done before the timer: the most any rank can do, which
	 * the ranks the timer stopped wait for (md-workbench's allreduce
	 * after its loop) */
	if (j->sw_timer_ns && j->sw_wear_out && stonewall_exchange(j, j->units / j->datasets, &max))
		td_verror(td, EIO, "mdfio stonewall_wear_out");
	td->done = 1;
}

/* md-workbench -w and -W: whether unit j->next must not start yet. The
 * timer is looked at where a step over all datasets begins (md-workbench
 * looks after each step); once it has hit, no unit starts until those in
 * flight have ended (fio reaps them meanwhile), and then the rank knows
 * the steps it did: with -w alone it stops there; with -W it learns the
 * most steps any rank of the run did and goes on to that. */
static int __attribute__((noinline)) stonewall_hold(struct thread_data *td, struct mdfio_job *j)
{
	uint64_t k = j->next, max;

	/* fio, which still counts the phase's full size, asks for more: the
	 * units in flight end the phase (or it has ended, or broken) */
	if (td->done || k >= j->units)
		return 1;
	if (!j->sw_timer_ns)
		return 0;
	if (!k || k % j->datasets)
		return 0;
	if (!j->sw_stopped) {
		if (mdfio_now() - j->t0 < j->sw_timer_ns)
			return 0;
		j->sw_stopped = 1;
	}
	if (j->in_flight)
		return 1;
	if (!j->sw_wear_out) {
		j->sw_timer_ns = 0;
		j->units = k;
		mdfio_phase_over(td, j);
		return 1;
	}
	if (stonewall_exchange(j, k / j->datasets, &max)) {
		/* the run is broken: stop here, the phase left interrupted */
		td->done = 1;
		return 1;
	}
	/* this rank brought k / D, and a rank of a jobfile with another
	 * steps_per_set cannot take this one beyond its own */
	j->units = (max < j->steps ? max : j->steps) * j->datasets;
	if (j->finished < j->units)
		return 0;
	mdfio_phase_over(td, j);
	return 1;
}

static inline int unit_next(struct thread_data *td, struct mdfio_job *j,
			    struct mdfio_unit *u, uint64_t end_ns);

/* A unit whose first request would stat, read or delete a file that the
 * status records as taken (not mdfio's) fails that request without making
 * it: a benchmark step ends there, as at an object that is missing (no
 * read, delete or create), and a cleanup leaves the file, so that removing
 * its dataset fails. Returns 1 when the unit is over. */
static int __attribute__((cold, noinline))
unit_on_taken(struct thread_data *td, struct mdfio_job *j, struct mdfio_unit *u)
{
	const struct mdfio_step *st = &j->ph->steps[0];
	uint64_t idx = u->idx + (st->ahead ? j->precreate : 0);

	if (st->op == MDFIO_OP_CREATE ||
	    !mdfio_taken_find(j->taken, j->nr_taken, j->dsets[st->target][u->d].rank, u->d, idx))
		return 0;
	if (!j->taken_left++)
		mdfio_notice("rank %" PRIu32 " %s: %s/%s is not mdfio's (a create found its name taken), so it is left alone: a %s error",
			     j->rank, mdfio_phase_name(j->phase), u->dir, u->req.name, mdfio_op_names[st->op]);
	u->req.t0 = mdfio_now();
	u->req.err = EEXIST;
	return !unit_next(td, j, u, u->req.t0);
}

/* Starts the next unit on io_u, its first request in unit->req. NULL: the
 * io_u is complete already (no unit left, or one the core did itself). */
static struct mdfio_unit *unit_start(struct thread_data *td, struct io_u *io_u)
{
	struct mdfio_job *j = td->io_ops_data;
	struct mdfio_unit *u = j->free_unit;
	uint64_t k = j->next;

	if (k >= j->units || !u || j->halted || (k && !(k % ORPHAN_EVERY) && orphaned(j))) {
		/* fio asked for more than the phase holds (or this is a spare
		 * repeat section, with none): stop it there */
		if (!j->in_flight)
			td->done = 1;
		io_u->resid = io_u->xfer_buflen;
		return NULL;
	}
	if (!k)
		j->t0 = mdfio_now();
	j->next++;
	if (j->recover) {
		mdfio_recover_one(td, j, io_u);
		return NULL;
	}
	if (!k && j->ph->makes_datasets && mdfio_datasets_make(td, j)) {
		/* cannot go on */
		io_u->error = EIO;
		td->done = 1;
		return NULL;
	}
	j->free_unit = u->next_free;
	j->in_flight++;
	u->io_u = io_u;
	u->result = 0;
	if (j->ph->dataset_major) {
		u->d = (uint32_t)(k / j->precreate);
		u->idx = j->pos + k % j->precreate;
	} else {
		u->d = (uint32_t)(k % j->datasets);
		u->idx = j->pos + k / j->datasets;
	}
	set_req(j, u, 0);
	if (__builtin_expect(j->nr_taken != 0, 0) && unit_on_taken(td, j, u))
		return NULL;
	return u;
}

/* Ends unit u with result err (its io_u's error). */
static inline __attribute__((always_inline)) int unit_over(struct thread_data *td, struct mdfio_job *j,
		     struct mdfio_unit *u, int err)
{
	/* A failed unit is an io_u error, which continue_on_error (set in
	 * init) counts without stopping: total_ios counts attempts, io_bytes
	 * only objects really created, read or deleted. fio treats only EIO
	 * and EILSEQ as non-fatal; the real errno is in the engine's report. */
	u->io_u->error = err ? EIO : 0;
	u->next_free = j->free_unit;
	j->free_unit = u;
	j->in_flight--;
	if (++j->finished == j->units)
		mdfio_phase_over(td, j);
	else if (j->halted && !j->in_flight)
		td->done = 1;
	return 0;
}

/* Accounts unit->req as ended at end_ns. Returns 1 with the unit's next
 * request in unit->req, or 0: the unit is over, its io_u complete. Runs
 * once per request: inlined into run_unit's loop. */
static inline __attribute__((always_inline)) int
unit_next(struct thread_data *td, struct mdfio_job *j, struct mdfio_unit *u,
	  uint64_t end_ns)
{
	struct mdfio_req *r = &u->req;
	int err = r->err;

	if (r->op == MDFIO_OP_READ && !err && j->verify &&
	    (u->st_size != j->size ||
	     mdfio_pattern_check(&j->pattern, u->rbuf,
				 j->dsets[MDFIO_READ_FROM][u->d].rank, u->d, u->idx)))
		err = EBADMSG;
	if (__builtin_expect(err == EEXIST, 0) && r->op == MDFIO_OP_CREATE)
		name_taken(j, u);
	account_op(td, j, r->op, r->t0, end_ns, err, u->dir, r->name);
	if (__builtin_expect(j->slow, 0))
		after_op(j, u, end_ns - r->t0, err);
	/* the io_u fails with the operation that carries the phase's count;
	 * a failed read still deletes and replaces, as md-workbench's */
	if (r->op == j->count_op)
		u->result = err;
	switch (r->op) {
	case MDFIO_OP_STAT:
		if (err)	/* nothing to read */
			return unit_over(td, j, u, err);
		u->st_size = r->st_size;
		break;
	case MDFIO_OP_READ:
		/* what was not an object is left as it is: never deleted */
		if (__builtin_expect(MDFIO_IS_NOT_OBJECT(err), 0))
			return unit_over(td, j, u, u->result);
		break;
	case MDFIO_OP_DELETE:
		if (j->ph->removes_datasets &&
		    !--j->dsets[MDFIO_OWN][u->d].objects_left) {
			mdfio_remove_dataset(td, j, u->d);
			if (j->verbose >= 2)
				trace(j, "%" PRIu32 ": delete dset %s", j->rank,
				      j->dsets[MDFIO_OWN][u->d].path);
		}
		break;
	default:
		break;
	}
	if (u->step + 1 == j->nr_steps)
		return unit_over(td, j, u, u->result);
	set_req(j, u, u->step + 1);
	return 1;
}

/* Runs u's requests until one is in flight (0) or the unit is over (1: its
 * io_u complete, its error set). A synchronous backend ends every request
 * in start, so its units never leave this loop in flight. */
static int run_unit(struct thread_data *td, struct mdfio_job *j,
		    struct mdfio_unit *u)
{
	int (*start)(void *, struct mdfio_unit *) = j->be->start;
	void *priv = j->priv;

	while (start(priv, u))
		if (!unit_next(td, j, u, mdfio_now()))
			return 1;
	return 0;
}

int mdfio_req_done(struct thread_data *td, struct mdfio_unit *u,
		   uint64_t end_ns)
{
	struct mdfio_job *j = td->io_ops_data;

	if (unit_next(td, j, u, end_ns) && !run_unit(td, j, u))
		return 0;
	j->events[j->nr_events++] = u->io_u;
	return 1;
}

/* The I/Os of a batched io_u beyond its first, where fio itself counts one
 * per io_u: added where io_u-nr-ios.patch has fio add them (td_io_queue's
 * total_io_u for a completed io_u; io_completed's io_blocks and
 * this_io_blocks), so that fio's JSON counts every unit. The bytes count
 * themselves: they are xfer_buflen. Only successful units are batched. */
static inline void count_batched(struct thread_data *td, enum fio_ddir ddir, unsigned int more)
{
	td->ts.total_io_u[ddir] += more;
	td->io_blocks[ddir] += more;
	td->this_io_blocks[ddir] += more;
}

/* fio takes back an io_u the engine returned busy only by issuing it
 * again, which it never does once the job is done or terminated; its
 * teardown then frees the job's files (close_and_free_files) before it
 * puts the io_us it still holds for requeue (cleanup_io_u), and that put
 * reads the freed file (fio 3.33 to 3.41 alike). So once fio issues no
 * more, the engine hands them back while the files live: those fio has
 * requeued to its free list, and busy, which fio requeues only after the
 * queue returns, gives up its file reference now (as fio's own end_fsync
 * io_u holds none). Counts nothing: fio has uncounted a busy io_u. */
static void __attribute__((noinline)) release_refused(struct thread_data *td, struct io_u *busy)
{
	struct io_u *io_u;

	while ((io_u = io_u_rpop(&td->io_u_requeues)))
		put_io_u(td, io_u);
	if (busy && busy->file && !(busy->flags & IO_U_F_NO_FILE_PUT)) {
		put_file_log(td, busy->file);
		io_u_set(td, busy, IO_U_F_NO_FILE_PUT);
	}
}

/* fio's queue. An io_u carries one unit, or, where the backend ends every
 * request in start, up to j->per_io_u. A failed unit
 * always has an io_u of its own, so that fio counts exactly the failed
 * units as errors and the bytes of the others: one that fails after others
 * is held for the next io_u. */
static enum fio_q_status engine_queue(struct thread_data *td, struct io_u *io_u)
{
	struct mdfio_job *j = td->io_ops_data;
	struct mdfio_unit *u;
	unsigned int n;

	/* a failed create stopped the run: fio must reap the units in flight
	 * (it reaps nothing once the job is done), and must not take an io_u
	 * that transfers nothing for an error */
	if (j->halted && j->in_flight)
		return FIO_Q_BUSY;
	if (j->held_failure) {
		j->held_failure = 0;
		io_u->error = EIO;
		td->done = j->held_done;
		return FIO_Q_COMPLETED;
	}
	/* a backend that ended every request in start may keep them in
	 * flight from here on (mdfio-uring's issue=auto once its calls
	 * wait): only between io_us, as an io_u's units all ended in start */
	if (j->per_io_u > 1 && j->be->ends_in_start && !j->be->ends_in_start(j->priv)) {
		j->per_io_u = 1;
		/* fio may ask once more after the last unit (a time limit
		 * lowered the phase's units): nothing is left to switch */
		if (j->next < j->units)
			j->in_start_until = j->next;
	}
	/* one call site of unit_start and run_unit, so that both are
	 * inlined here */
	for (n = 0;;) {
		/* not started: fio reaps what is in flight, or sees done */
		if ((j->sw_timer_ns || j->sw_stopped) && stonewall_hold(td, j)) {
			if (n)
				break;
			if (td->done)
				release_refused(td, io_u);
			return FIO_Q_BUSY;
		}
		u = unit_start(td, io_u);
		if (u && !run_unit(td, j, u))
			return FIO_Q_QUEUED;
		if (io_u->error) {
			if (n) {
				/* the phase may have ended with it (or a
				 * failed create halted the rank): fio must
				 * still come back for its io_u, then stop */
				j->held_failure = 1;
				j->held_done = td->done;
				td->done = 0;
				io_u->error = 0;
			}
			break;
		}
		if (!u || ++n >= j->per_io_u || j->next >= j->units)
			break;
	}
	if (n > 1) {
		io_u->xfer_buflen = n * io_u->buflen;
		/* fio counted the io_u as one I/O issued: it stops issuing
		 * when the phase's units are, also once later io_us carry one
		 * unit each (mdfio-uring's issue=auto, once its calls wait) */
		td->io_issues[io_u->ddir] += n - 1;
		td->io_issue_bytes[io_u->ddir] += (n - 1) * io_u->buflen;
		if (!fio_counts_batches)
			count_batched(td, io_u->ddir, n - 1);
	}
	return FIO_Q_COMPLETED;
}

static int engine_commit(struct thread_data *td)
{
	struct mdfio_job *j = td->io_ops_data;
	int ret = j->be->commit && j->priv ? j->be->commit(j->priv) : 0;

	if (ret)
		td_verror(td, -ret, "mdfio commit");
	return ret;
}

static int engine_getevents(struct thread_data *td, unsigned int min,
			    unsigned int max, const struct timespec *t)
{
	struct mdfio_job *j = td->io_ops_data;
	int ret;

	(void)max;	/* at most iodepth units are in flight */
	(void)t;
	j->nr_events = 0;
	if (!j->priv)
		return 0;
	ret = j->be->reap(j->priv, min);
	if (ret < 0) {
		td_verror(td, -ret, "mdfio reap");
		return ret;
	}
	/* a unit reaped here may have ended a stonewalled phase, with an io_u
	 * refused meanwhile still requeued (only stonewall_hold refuses) */
	if ((td->done || td->terminate) && (j->sw_timer_ns || j->sw_stopped))
		release_refused(td, NULL);
	return (int)j->nr_events;
}

static struct io_u *engine_event(struct thread_data *td, int n)
{
	return ((struct mdfio_job *)td->io_ops_data)->events[n];
}

static int engine_open_file(struct thread_data *td, struct fio_file *f)
{
	(void)td;
	(void)f;
	return 0;	/* objects are not fio files: nothing to open */
}

static int engine_close_file(struct thread_data *td, struct fio_file *f)
{
	(void)td;
	(void)f;
	return 0;
}

static uint64_t report_errors(struct mdfio_job *j)
{
	uint64_t total = j->dsets_err;
	int op;

	for (op = 0; op < MDFIO_OP_NR; op++) {
		const struct mdfio_op_errors *c = &j->op[op];

		total += c->count;
		/* a create that stopped the run has said so */
		if (!c->count || (op == MDFIO_OP_CREATE && j->halted && c->count == 1))
			continue;
		if (c->first_alien && !MDFIO_IS_NOT_OBJECT(c->first_errno))
			mdfio_error("rank %" PRIu32 " %s: %" PRIu64 " %s error%s (first: %s: %s; first name holding no object: %s: %s)",
				    j->rank, mdfio_phase_name(j->phase), c->count, mdfio_op_names[op],
				    c->count > 1 ? "s" : "", c->first_path,
				    mdfio_err_text(c->first_errno), c->alien_path,
				    mdfio_err_text(c->first_alien));
		else
			mdfio_error("rank %" PRIu32 " %s: %" PRIu64 " %s error%s (first: %s: %s)",
				    j->rank, mdfio_phase_name(j->phase), c->count, mdfio_op_names[op],
				    c->count > 1 ? "s" : "", c->first_path,
				    mdfio_err_text(c->first_errno));
	}
	return total;
}

static void engine_cleanup(struct thread_data *td)
{
	struct mdfio_job *j = td->io_ops_data;
	int complete;

	if (!j) {
		mdfio_job_ended(td);
		return;
	}
	if (j->be && j->be->exit && j->priv)
		j->be->exit(j->priv);
	if (j->rec_dir)
		closedir(j->rec_dir);
	/* a rank that stopped the run may have ended its last units after
	 * the failed create */
	complete = j->units && j->finished == j->units && !j->halted;
	/* ranks waiting in the wear-out's exchange for this one: stop them
	 * now rather than after join_timeout */
	if (j->entered && j->sw_timer_ns && j->sw_wear_out && !complete) {
		char why[256];

		snprintf(why, sizeof(why), "rank %" PRIu32 " (host %s) stopped before the stonewall wear-out",
			 j->rank, j->host);
		mdfio_rankfile_abort(&j->rankfile, why);
	}
	mdfio_close_logs(j, 0);
	/* fio counts no short I/O of an mdfio job (an object is never half
	 * transferred through an io_u): the slot carries the datasets a phase
	 * that makes or removes them left undone, for md-workbench's dsets */
	if (j->entered && (j->ph->makes_datasets || j->ph->removes_datasets))
		td->ts.short_io_u[j->ph->ddir] = j->datasets - j->dsets_done;
	if (j->entered) {
		/* a rank's time then mixes two ways of issuing: say where,
		 * if a unit did end through the ring (not when a failed
		 * create stopped the rank at the switch) */
		if (j->in_start_until && j->finished > j->in_start_until)
			mdfio_notice("rank %" PRIu32 " %s: system calls for the first %" PRIu64 " of %" PRIu64 " %ss, the ring for the rest: the calls waited for the device or a server (%s issue=auto)",
				     j->rank, mdfio_phase_name(j->phase), j->in_start_until, j->units,
				     j->ph->unit, j->be->name);
		if (!complete)
			mdfio_error("rank %" PRIu32 " stopped after %" PRIu64 " of %" PRIu64 " %s units; the namespace is marked as interrupted",
				  j->rank, j->finished, j->units, mdfio_phase_name(j->phase));
		if (mdfio_leave_phase(j, complete && !(j->ph->removes_datasets && j->dsets_err)) &&
		    j->log_prefix[0] && j->latency_all)
			mdfio_merge_logs(j);
	}
	mdfio_leave_run(j);
	mdfio_job_ended(td);
	close(j->root_fd);
	/* a phase stopped short fails its job, as one with errors does */
	if ((report_errors(j) || (j->entered && !complete) || j->late_error) && !td->error)
		td_verror(td, EIO, "mdfio");
	mdfio_datasets_free(j);
	free(j->taken);
	mdfio_pattern_free(&j->pattern);
	free(j->unit);
	free(j->events);
	free(j->bufs);
	free(j);
	td->io_ops_data = NULL;
}

/* ----------------------------------------------------------------- loading */

void mdfio_get_ioengine(struct ioengine_ops **ops, const struct mdfio_backend *be)
{
	/* one engine per shared object: its table, the core's options then
	 * its own */
	static struct ioengine_ops engine;
	static struct fio_option all[64];
	const char *running = dlsym(RTLD_DEFAULT, "fio_version_string");
	size_t n = 0, i;

	*ops = NULL;
	if (!running) {
		fprintf(stderr, "mdfio: %s: the loading program exports no fio_version_string; load this engine from fio (built for %s)\n",
			be->name, MDFIO_FIO_VERSION);
		return;
	}
	if (strcmp(running, MDFIO_FIO_VERSION)) {
		fprintf(stderr, "mdfio: %s was built for %s but this fio is %s; rebuild it against the source of this fio (meson setup -Dfio_src=...)\n",
			be->name, MDFIO_FIO_VERSION, running);
		return;
	}
	for (i = 0; mdfio_core_options[i].name; i++)
		all[n++] = mdfio_core_options[i];
	for (i = 0; be->options && be->options[i].name; i++) {
		if (n + 1 >= sizeof(all) / sizeof(all[0])) {
			fprintf(stderr, "mdfio: %s: more options than the core's table holds\n", be->name);
			return;
		}
		all[n++] = be->options[i];
	}
	backend = be;
	fio_counts_batches = dlsym(RTLD_DEFAULT, "fio_io_u_nr_ios") != NULL;
	engine = (struct ioengine_ops){
		.name = be->name,
		.version = FIO_IOOPS_VERSION,
		.flags = FIO_DISKLESSIO | FIO_NOSTATS | FIO_NOFILEHASH |
			 (be->sync ? FIO_SYNCIO : 0),
		.init = engine_init,
		.setup = engine_setup,
		.queue = engine_queue,
		.commit = engine_commit,
		.getevents = engine_getevents,
		.event = engine_event,
		.cleanup = engine_cleanup,
		.open_file = engine_open_file,
		.close_file = engine_close_file,
		.options = all,
		.option_struct_size = be->option_struct_size ? be->option_struct_size
							   : sizeof(struct mdfio_options),
	};
	*ops = &engine;
}
