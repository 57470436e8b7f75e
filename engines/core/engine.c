/* The fio glue of every engine: fio's ioengine_ops made from a backend
 * (mdfio_get_ioengine), a job's setup in fio's main process, its start
 * (init: the options into the job's state, the rank joining the run and
 * entering the phase, the backend's init) and its end (cleanup), and the
 * calls fio makes around the queue. The queue, which runs the units, is
 * units.c's; the rest of the core has files of its own (see job.h). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "account.h"
#include "job.h"
#include "pattern.h"

/* How often fio refreshes its cached clock between io_us: the mask fio's
 * gtod_reduce=1 sets (options.c, str_gtod_reduce_cb). */
#define FIO_GTOD_REDUCE_TS_CACHE_MASK 63

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
	if (mdfio_check_run(td, backend->direct) || mdfio_cache_check(eo))
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

const char *mdfio_job_who(struct thread_data *td, char *buf, size_t len)
{
	const struct mdfio_job *j = td->io_ops_data;

	snprintf(buf, len, "rank %" PRIu32 " %s", j->rank, mdfio_phase_name(j->phase));
	return buf;
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

	if (mdfio_store_open(td, j) || mdfio_datasets_build(j) ||
	    mdfio_datasets_fd_limit(td, j))
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
 * rest to the same three counters itself (count_batched in units.c). What
 * that saves per unit is measured by bench/run --only fio-patch. */
#define MDFIO_UNITS_PER_IO_U 16

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
	if (eo->run_id && mdfio_option_value("run_id", eo->run_id, j->run_id, sizeof(j->run_id)))
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
	if (mdfio_cache_prepare(j, eo) || mdfio_enter_phase(j, eo->repeat))
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
	/* fio may ask for more events than the engine has units in flight
	 * (it does with mdfio-posix): a backend waiting for units that are
	 * not in flight would wait for ever (mdfio-uring in io_uring_enter) */
	if (min > j->in_flight)
		min = j->in_flight;
	ret = j->be->reap(j->priv, min);
	if (ret < 0) {
		td_verror(td, -ret, "mdfio reap");
		return ret;
	}
	/* a unit reaped here may have ended a stonewalled phase, with an io_u
	 * refused meanwhile still requeued (only stonewall_hold refuses) */
	if ((td->done || td->terminate) && (j->sw_timer_ns || j->sw_stopped))
		mdfio_release_refused(td, NULL);
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
	mdfio_cache_release(j);
	if (j->rec_list)
		j->store->list_close(j->rec_list);
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
	if ((mdfio_report_errors(j) || (j->entered && !complete) || j->late_error) && !td->error)
		td_verror(td, EIO, "mdfio");
	mdfio_datasets_free(j);
	if (j->store_state && j->store->close)
		j->store->close(j->store_state);
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
	/* from here the loader is fio, whose log_err and is_backend every
	 * release has: a fio server's line reaches its client */
	if (strcmp(running, MDFIO_FIO_VERSION)) {
		mdfio_notice("%s was built for %s but this fio is %s; rebuild it against the source of this fio (meson setup -Dfio_src=...)",
			     be->name, MDFIO_FIO_VERSION, running);
		return;
	}
	for (i = 0; mdfio_core_options[i].name; i++)
		all[n++] = mdfio_core_options[i];
	for (i = 0; be->options && be->options[i].name; i++) {
		if (n + 1 >= sizeof(all) / sizeof(all[0])) {
			mdfio_notice("%s: more options than the core's table holds", be->name);
			return;
		}
		all[n++] = be->options[i];
	}
	backend = be;
	mdfio_fio_counts_batches = dlsym(RTLD_DEFAULT, "fio_io_u_nr_ios") != NULL;
	engine = (struct ioengine_ops){
		.name = be->name,
		.version = FIO_IOOPS_VERSION,
		.flags = FIO_DISKLESSIO | FIO_NOSTATS | FIO_NOFILEHASH |
			 (be->sync ? FIO_SYNCIO : 0),
		.init = engine_init,
		.setup = engine_setup,
		.queue = mdfio_queue,
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
