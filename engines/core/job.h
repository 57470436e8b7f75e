/* The core's private state of one job (one rank), shared by the files of
 * core/ and by no backend: a backend sees only backend.h. */
#ifndef MDFIO_JOB_H
#define MDFIO_JOB_H

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "memlimit.h"
#include "pattern.h"
#include "rankfile.h"
#include "world.h"

/* Where a request of a unit points: our own dataset d, or the dataset d of
 * the rank a benchmark step reads from or writes to. */
enum mdfio_target { MDFIO_OWN, MDFIO_READ_FROM, MDFIO_WRITE_TO, MDFIO_TARGET_NR };

/* One request of a unit: its operation, and the object it works on. */
struct mdfio_step {
	enum mdfio_op op;
	enum mdfio_target target;
	/* the object is the unit's index + precreate_per_set: the one a
	 * benchmark step creates at the far end of the FIFO */
	int ahead;
};

/* What each phase is; every difference between the phases lives here. */
struct mdfio_phase_desc {
	const char *unit;		/* what one unit is, for messages */
	/* fio's data direction that carries the headline count, its rw=
	 * setting and that setting's name */
	enum fio_ddir ddir;
	enum td_ddir rw;
	const char *rw_name;
	/* units per dataset: steps_per_set (else precreate_per_set) */
	int per_set_is_steps;
	/* unit k is object k % P of dataset k / P (else dataset k % D,
	 * object k / D: the datasets advance together) */
	int dataset_major;
	/* a unit's requests, in order */
	struct mdfio_step steps[4];
	unsigned int nr_steps;
	/* a read_only job stops its units after this many requests */
	unsigned int nr_steps_read_only;
	/* md-workbench's latency log name of each operation (NULL: none) */
	const char *log_name[MDFIO_OP_NR];
	/* its logs' names need no FIFO position: they are created before the
	 * status exists, so that one that cannot be made leaves nothing */
	int logs_before_status;
	int makes_datasets, removes_datasets;
	/* the rank's state in the status file while in it, and after it */
	enum mdfio_rank_state working, done;
	/* a completed phase moves the rank's FIFO position by steps_per_set */
	int advances;
};

extern const struct mdfio_phase_desc mdfio_phases[];

/* md-workbench -T's runs per iteration: the plain run, then factors
 * 0.0625, 0.125, ... 4 */
#define MDFIO_ADAPTIVE_RUNS 8

/* The longest hosts= list (host names separated by commas). */
#define MDFIO_HOSTS_MAX 65536

struct mdfio_op_errors {
	uint64_t count;
	int first_errno;
	char first_path[PATH_MAX];
	char first_why[128];	/* the backend's words beyond first_errno, or "" */
	/* the first name that held no object (MDFIO_ERR_NOT_OBJECT), which
	 * the report names even when another error came first */
	int first_alien;
	char alien_path[PATH_MAX];
};

struct mdfio_dataset {
	char *path;		/* "<root>/<rank>_<d>" (the store's where): for messages */
	const char *name;	/* "<rank>_<d>": its name in the store */
	size_t len;
	int fd;			/* open for the phase (the store's handle), or -1 */
	int fd_owner;		/* fd is this entry's to close (not a copy) */
	uint32_t rank;
	uint64_t objects_left;	/* cleanup: objects not yet deleted */
};

struct mdfio_job {
	struct thread_data *td;	/* the job this rank is */
	struct mdfio_mem_hold mem_held;	/* lim_free_mem's, through the phase */
	const struct mdfio_backend *be;
	void *priv;
	enum mdfio_phase phase;
	const struct mdfio_phase_desc *ph;
	unsigned int nr_steps;	/* requests per unit (read_only: fewer) */
	enum mdfio_op count_op;	/* the operation of the phase's ddir */
	uint32_t rank, ranks, datasets, offset;
	uint64_t precreate, steps, start, pos;
	size_t size;
	int read_only, verify, recover;
	/* ignore_precreate_errors: a failed create is counted; else it stops
	 * the run (halted: no unit starts any more) */
	int ignore_create_errors, halted;
	int start_set;		/* start_index was given */
	uint64_t ns_start;	/* the namespace's first index (its status) */
	/* the root is on a read-only mount: a read_only benchmark runs there
	 * without the rank file and without writing the status */
	int ro_root;
	char root[PATH_MAX];
	char status_path[PATH_MAX];
	/* the run's id in the status file: the rank file's id and the
	 * barrier that started the phase, the same on every host */
	char run[MDFIO_RUN_LEN];
	struct mdfio_world world;
	char host[HOST_NAME_MAX + 1];
	char hosts[MDFIO_HOSTS_MAX];	/* the hosts= option's value */
	char run_id[64];		/* the run_id= option's value */
	uint32_t per_host;	/* ranks of one fio job: numjobs */
	int root_fd;		/* the root, which holds the rank file */
	/* the backend's store, open (store_state: what its functions are
	 * handed; NULL before) and the path its datasets are named under */
	const struct mdfio_store *store;
	void *store_state;
	const char *store_where;
	struct mdfio_rankfile rankfile;
	/* units of the phase: handed out, finished */
	uint64_t units, next, finished;
	/* for each target, each d's dataset (names built once; a request
	 * names only its object, in the dataset's descriptor) */
	struct mdfio_dataset *dsets[MDFIO_TARGET_NR];
	char *dset_paths;
	/* a dataset's path is its name in the store preceded by this many
	 * bytes: the store's where and a '/' */
	size_t dset_name_at;
	char path[PATH_MAX];
	struct mdfio_pattern pattern;	/* what objects hold */
	/* units in flight: at most iodepth */
	struct mdfio_unit *unit, *free_unit;
	unsigned int nr_units, in_flight;
	uint8_t *bufs;
	struct io_u **events;
	unsigned int nr_events;
	struct mdfio_op_errors op[MDFIO_OP_NR];
	uint64_t dsets_err;
	uint32_t dsets_done;	/* datasets made (precreate) or removed (cleanup) */
	int entered;
	/* per-operation latency log (md-workbench -L), streamed */
	FILE *log[MDFIO_OP_NR];
	char log_prefix[PATH_MAX];
	/* md-workbench's run-info file (run_info_file; "": none), the
	 * position it held when the phase was entered (run_info_have: it
	 * existed), and whether this phase adopts a namespace md-workbench
	 * made (there is no status file, only the run-info file) */
	char run_info[PATH_MAX];
	int run_info_have;
	uint64_t run_info_pos;
	int adopt;
	/* an error after the phase's units (the run-info file not written):
	 * the job fails */
	int late_error;
	uint64_t log_iter;
	float log_factor;	/* the waiting factor in the logs' names */
	/* benchmark runs per md-workbench iteration: 1, or with -T
	 * (adaptive_waiting) the plain run and its waiting runs */
	unsigned int runs_per_iteration;
	int latency_all;	/* every rank logs, merged; else rank 0 only */
	/* md-workbench -t: each benchmark operation is followed by a wait of
	 * this factor times its time; 0 in other phases and when not given */
	double wait_factor;
	unsigned int verbose;	/* md-workbench -v */
	int slow;		/* wait_factor or verbose: after_op has work */
	uint64_t t0;		/* ns: the phase began (its first unit started) */
	/* md-workbench -w: a benchmark starts no step once this much of the
	 * phase (ns) has passed; 0: off, or the timer has done its work */
	uint64_t sw_timer_ns;
	int sw_wear_out;	/* -W: then on to the most steps of any rank */
	int sw_stopped;		/* the timer hit: units in flight drain */
	uint64_t sw_wait_ns;	/* the wear-out's exchange: not phase time */
	unsigned int repeat;	/* the benchmark repeat (names the exchange) */
	unsigned int join_timeout;
	/* units per io_u of a synchronous interface, and a failed unit
	 * waiting for an io_u of its own, with whether the job was done when
	 * it failed (see mdfio_queue in units.c) */
	unsigned int per_io_u;
	int held_failure, held_done;
	/* the units handed out before a backend that ended every request in
	 * start began to keep them in flight (mdfio-uring's issue=auto once
	 * its calls wait), which the rank reports; else 0 */
	uint64_t in_start_until;
	/* recovery: the indices [rec_lo, rec_hi) the status allows objects to
	 * have (rec_old: a status without steps, taken as the widest), the
	 * dataset being read and its directory stream */
	uint64_t rec_lo, rec_hi;
	int rec_old;
	uint32_t rec_d;
	void *rec_list;		/* the store's listing of dataset rec_d */
	uint64_t rec_found;	/* objects found in this pass over rec_list */
	char rec_name[MDFIO_OBJECT_NAME_MAX];	/* the object found last */
	/* the status's taken names (objects whose create found the name
	 * taken: files mdfio did not make), as the phase found them: no unit
	 * stats, reads or deletes one, and a recovery leaves them; the units
	 * that left one alone, and the first such object */
	struct mdfio_taken *taken;
	uint32_t nr_taken;
	uint64_t taken_left;
	/* a cleanup's start the status could not record (no room) */
	int unrecorded;
};

/* phases.c: the table of what each phase is (above), md-workbench's name of
 * each operation, and the units a phase's options make */
extern const char *const mdfio_op_names[MDFIO_OP_NR];
uint64_t mdfio_phase_units(const struct mdfio_options *eo);

/* error.c (mdfio_error and mdfio_notice: backend.h). In fio's main
 * process, before it forks its jobs: from then on a line mdfio_error
 * printed once in this fio is not printed again */
void mdfio_share_errors(void);
/* Lines are printed once per job section: job is its parent's number. */
void mdfio_error_scope(int job);
/* the last line mdfio_error printed in this thread */
const char *mdfio_last_error(void);
/* An error another job of this fio has printed: kept as the last line
 * (what this rank tells the run), not printed again; returns 1. */
int mdfio_error_said(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* options.c: the engine options (mdfio_parse_u64, mdfio_option_value:
 * backend.h) */
extern const struct fio_option mdfio_core_options[];

/* fio_checks.c: fio's own options a job was given, against the table in
 * lib/fio_options.c: one line "mdfio: ..." and 1 for the first one
 * refused. Checked when fio parses the job's phase= (a refusal then stops
 * fio before any job runs); in fio's main process before any job starts,
 * for every mdfio job of the run (the job refused prints its line, the
 * others fail quietly: nothing of the run touches the namespace); and at
 * job start, once per job rather than per clone, for a job set up in its
 * own process. direct: whether the backend opens objects with O_DIRECT. */
int mdfio_check_given_options(const struct thread_data *td, enum mdfio_phase ph);
int mdfio_check_run(const struct thread_data *td, int direct);
int mdfio_check_fio_options(const struct thread_data *td, enum mdfio_phase ph,
			    int direct);

/* jobfile.c: in fio's main process, refuses (one line for all, 1 for every
 * job of the root) a jobfile without a benchmark section for each repeat
 * it wants */
int mdfio_check_jobfile(struct thread_data *td);

/* fio_job.c: the job a clone was made from (which keeps the real numjobs) */
struct thread_data *mdfio_job_parent(struct thread_data *td);
/* fio's statistics (--status-interval, SIGUSR1, a fio client's) ask every
 * job that has not exited for its resource usage and wait for each answer,
 * holding the lock every job takes when its I/O loop ends; fio's loop
 * answers between io_us only. So whatever waits inside the engine, outside
 * that loop, calls this at least every MDFIO_ANSWER_MS: unanswered, the
 * statistics wait for the waiting job, and each job that ends meanwhile
 * gives up on that lock after a few seconds and fails the run ("fio seems
 * to be stuck grabbing stat_sem"). */
void mdfio_answer_fio(struct thread_data *td);
/* the same as a rank file's waiting callback (struct mdfio_rankfile), for
 * a waiting_arg that is the job itself */
void mdfio_answer_fio_waiting(void *td);
/* How long fio's statistics, and a job that ends meanwhile, may wait for a
 * rank that waits: a short wait of its own, against the wakeups of every
 * waiting rank. */
#define MDFIO_ANSWER_MS 50

/* run.c: a job's ranks among all of its run, and joining the run */
int mdfio_job_world(struct thread_data *td, struct mdfio_world *w,
		    char *host, size_t hostlen, char *hosts, size_t hostslen);
int mdfio_describe_rank(struct thread_data *td);
/* In fio's main process: reserves the job's ranks on its root for the life
 * of this fio (reserve.c). */
int mdfio_reserve_run(struct thread_data *td);
/* Whether the root is on a read-only file system (sets j->ro_root), and if
 * so, refuses (one line) what cannot run there. */
int mdfio_check_read_only_root(struct mdfio_job *j);
/* Claims this rank in the root's rank file (one line and 1 if it cannot).
 * From then on a rank that refuses calls mdfio_abort_run, so that the
 * other ranks stop at their next barrier instead of waiting for it. */
int mdfio_join_run(struct mdfio_job *j);
int mdfio_abort_run(struct mdfio_job *j);
/* This rank failed in mid-phase (its line printed last): every rank of the
 * run meets the refusal at its next barrier, and no later phase starts. */
void mdfio_stop_run(struct mdfio_job *j);
/* The barrier of step (0: the previous phase has ended everywhere; 1: every
 * rank has checked that it can start this one). One line and 1 if it
 * fails, and this rank has left the run. */
int mdfio_run_barrier(struct mdfio_job *j, unsigned int repeat,
		      unsigned int step, unsigned int timeout_s);
/* The stonewall wear-out (md-workbench -W's MPI_Allreduce MAX): every rank
 * of the run brings the steps it did and gets the most any rank did in
 * *max. One line and 1 if the run broke (a rank gone, or one stopped). */
int mdfio_run_max_steps(struct mdfio_job *j, uint64_t steps, uint64_t *max);
void mdfio_leave_run(struct mdfio_job *j);

/* orphan.c: whether anyone is left to receive this job's results. Called
 * first in fio's main process, before it forks the jobs (at their setup);
 * launcher is the variable of the launcher that numbered the ranks (NULL:
 * none). */
void mdfio_orphan_watch(const char *launcher);
/* 1, with why, once fio's main process, or what started fio (under a fio
 * server its client, under a launcher the launcher's process) is gone: the
 * job stops, and the run with it. */
int mdfio_orphaned(char *why, size_t len);

/* reserve.c: in fio's main process, the ranks [first, first+n) of each
 * root it runs (n = 0: a study workload's, which holds none), held until
 * the last of its jobs there has ended; one line and 1 (for every job of
 * the root) if another fio holds them; launcher as mdfio_orphan_watch's,
 * run_id (run_id=, parsed; NULL or "": unnamed) as mdfio_rankfile_reserve's */
int mdfio_reserve_ranks(struct thread_data *td, uint32_t first, uint32_t n,
			const char *host, const char *launcher, const char *run_id);
const struct mdfio_rankfile *mdfio_reservation(const char *root);
/* Why this fio's run on a root stopped: kept with the reason, so that no
 * rank has to tell from the reason's text whose it is. */
enum mdfio_stop {
	MDFIO_STOP_NONE,
	/* a rank of this fio could not start, and has said why: its siblings
	 * stay quiet */
	MDFIO_STOP_REFUSED,
	/* a barrier failed here (each rank that met it said so) */
	MDFIO_STOP_GAVE_UP,
	/* a rank failed in mid-phase */
	MDFIO_STOP_FAILED,
};
/* The run on root stopped, for why: every later job of this fio on root
 * refuses to start. The first stop is kept: 1 if it is this one. */
int mdfio_reservation_stop(const char *root, enum mdfio_stop kind, const char *why);
/* How it stopped (MDFIO_STOP_NONE: it has not), and why (may be NULL). */
enum mdfio_stop mdfio_reservation_stopped(const char *root, char *why, size_t len);
/* A struct mdfio_rankfile's stopped for a rank on root (its stopped_arg):
 * 1, with why, once nobody is left to receive the results (orphan.c), and
 * the run on root stops so (MDFIO_STOP_GAVE_UP): no later job of this fio
 * there starts, nor says it again. */
int mdfio_reservation_orphaned(void *root, char *why, size_t len);
/* Every rank of the run passed barrier (a phase's start, "benchmark repeat
 * 2"): a rank missing at a later one was in the run and is gone. */
void mdfio_reservation_passed(const char *root, const char *barrier);
int mdfio_reservation_last_passed(const char *root, char *barrier, size_t len);
/* Whether this fio created root (a precreate on a root whose last component
 * was missing); the status records it, so that the cleanup that empties the
 * namespace also removes the root. */
int mdfio_reservation_created(const char *root);
/* Every job calls it at its end, however it ends. */
void mdfio_job_ended(struct thread_data *td);
/* Blocks until every clone of the previous mdfio section on td's root in
 * this fio has ended, so that the sections of one fio group run in order;
 * 1 (one line) if fio stops the job meanwhile. */
int mdfio_wait_previous_section(struct thread_data *td);

/* progress.c: what fio shows of the job. Its phase and repeat, what fio's
 * closing lines count and where md-workbench's numbers are, for the job's
 * description (run.c). Around the waits for its phase: the job shows as not
 * yet running in fio's progress line (mdfio_job_waits returns the state to
 * hand back to mdfio_job_runs). */
void mdfio_job_summary(const struct thread_data *td, char *buf, size_t len);
int mdfio_job_waits(struct thread_data *td);
void mdfio_job_runs(struct thread_data *td, int state);

/* phase.c: the status protocol */
/* Refuses a phase that needs a namespace where there is none before the
 * barrier: every rank of every host finds the same, and none waits. */
int mdfio_phase_precheck(struct mdfio_job *j);
/* Enters a phase in two steps, with a barrier between them (so that no rank
 * starts one that another rank refuses): enter checks the status, works
 * out the FIFO position and opens the latency logs, writing nothing into
 * the root; commit then marks this rank as working in the status (creating
 * it for a precreate). Each prints one line and returns 1 on a refusal. */
int mdfio_enter_phase(struct mdfio_job *j, unsigned int repeat);

/* cache.c: drop_caches, lim_free_mem_phase and lim_free_mem. The check
 * comes with the option checks in fio's main process, before any rank is
 * reserved: 0, or 1 with one line. Prepare runs
 * between the barriers before the phase (0, or 1 with one line); release
 * at the job's end. */
int mdfio_cache_check(const struct mdfio_options *eo);
int mdfio_cache_prepare(struct mdfio_job *j, const struct mdfio_options *eo);
void mdfio_cache_release(struct mdfio_job *j);
int mdfio_commit_phase(struct mdfio_job *j);
int mdfio_leave_phase(struct mdfio_job *j, int complete);
/* A create of this rank found the name index of dataset (rank, d) taken:
 * the status records it before anything else can happen to the file, so
 * that no phase deletes it. One line and 1 if it cannot. */
int mdfio_record_taken(struct mdfio_job *j, uint32_t rank, uint32_t d, uint64_t index);

/* latency_log.c */
int mdfio_open_logs(struct mdfio_job *j, unsigned int repeat);
void mdfio_close_logs(struct mdfio_job *j, int discard);
void mdfio_merge_logs(struct mdfio_job *j);

/* recover.c: a cleanup that cannot trust the status. Its units, one at a
 * time; the last one ends the phase, with one line if anything is left in
 * the datasets. */
uint64_t mdfio_count_objects(struct mdfio_job *j);
void mdfio_recover_one(struct thread_data *td, struct mdfio_job *j,
		       struct io_u *io_u);

/* The path of u's dataset, for messages: before its name (req.dataset),
 * which the hot path sets alone. */
static inline const char *mdfio_unit_dir(const struct mdfio_job *j,
					 const struct mdfio_unit *u)
{
	return u->req.dataset - j->dset_name_at;
}

/* datasets.c: the store, names, and the handles a phase's objects are
 * found in */
/* Opens the backend's store (struct mdfio_store) into j->store_state: 0,
 * or one line and 1. */
int mdfio_store_open(struct thread_data *td, struct mdfio_job *j);
int mdfio_datasets_build(struct mdfio_job *j);
/* Refuses (one line) datasets= beyond what the open-file limit allows,
 * after raising its soft limit to the hard one if that is needed. */
int mdfio_datasets_fd_limit(struct thread_data *td, struct mdfio_job *j);
/* Opens the datasets the phase's units use (a precreate makes its own with
 * mdfio_datasets_make instead); refuses, one line, one that is missing
 * (but for a recovery), a symlink or not a directory. */
int mdfio_datasets_open(struct mdfio_job *j);
int mdfio_datasets_make(struct thread_data *td, struct mdfio_job *j);
void mdfio_remove_dataset(struct thread_data *td, struct mdfio_job *j,
			  uint32_t d);
void mdfio_datasets_free(struct mdfio_job *j);

/* units.c: the unit state machine, and fio's queue, which runs it */
enum fio_q_status mdfio_queue(struct thread_data *td, struct io_u *io_u);
/* Once fio issues no more, hands back the io_us it holds for requeue while
 * the job's files live, and busy's file reference (see units.c). */
void mdfio_release_refused(struct thread_data *td, struct io_u *busy);
extern int mdfio_fio_counts_batches;

/* halt.c: a rank that stops its run in mid-phase. A create failed with err
 * (dir/name, the object; text: what the error says), and
 * ignore_precreate_errors is not set. */
void mdfio_create_failed(struct mdfio_job *j, int err, const char *text, const char *dir,
			 const char *name) __attribute__((cold));
/* Whether err says the store did not answer (a server gone or stopped, a
 * connection cut): then every later request would cost the same wait. */
static inline int mdfio_store_unreachable(int err)
{
	return err == ETIMEDOUT || err == ECONNREFUSED || err == ECONNRESET ||
	       err == ECONNABORTED || err == EHOSTUNREACH || err == ENOTCONN;
}
/* The store did not answer a request (op on dir/name; text: what the error
 * says): the rank stops
 * and the run with it, whatever ignore_precreate_errors says, so that a
 * lost server costs one timeout, not one per step. */
void mdfio_store_lost(struct mdfio_job *j, enum mdfio_op op, const char *text,
		      const char *dir, const char *name) __attribute__((cold));
/* What a create's ENOSPC means when the file system has room but no inode
 * left (df shows space): " (no inode is free: ...)" in buf, else "". */
const char *mdfio_no_room_note(const struct mdfio_job *j, int err, char *buf,
			       size_t len) __attribute__((cold));
/* 1 once no one is left to receive this rank's results: it has stopped. */
int mdfio_rank_orphaned(struct mdfio_job *j) __attribute__((cold));

/* trace.c: md-workbench's -v lines. One line, in one write; and the lines
 * of an operation of u that ended with err. */
void mdfio_trace(const struct mdfio_job *j, const char *fmt, ...)
	__attribute__((cold, format(printf, 2, 3)));
void mdfio_trace_op(const struct mdfio_job *j, const struct mdfio_unit *u, int err);

/* wait.c: md-workbench -t's wait after an operation of ns */
void mdfio_wait_after(struct mdfio_job *j, uint64_t ns) __attribute__((cold));

/* stonewall.c: md-workbench -w and -W, and the end of a phase. Whether unit
 * j->next must not start yet (the timer has hit); and the phase is over:
 * its time recorded, the job done. */
int mdfio_stonewall_hold(struct thread_data *td, struct mdfio_job *j);
void mdfio_phase_over(struct thread_data *td, struct mdfio_job *j);

#endif
