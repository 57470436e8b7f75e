/* The unit state machine of a job: which request of a unit comes next and
 * on which object, a unit's start and end, and fio's queue, which runs
 * them (the hot path: one file, so that the per-request steps inline into
 * it). A unit is one create of a precreate, one benchmark step, one delete
 * of a cleanup; its requests, in order, are its phase's (phases.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "account.h"
#include "job.h"
#include "namespace.h"
#include "pattern.h"

/* Whether fio counts the units of a batched io_u itself (see
 * MDFIO_UNITS_PER_IO_U in engine.c): set when the engine is loaded. */
int mdfio_fio_counts_batches;

/* Every ORPHAN_EVERY units a rank looks whether anyone is left to receive
 * its results (halt.c). */
#define ORPHAN_EVERY 64

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
		    j->rank, mdfio_phase_name(j->phase), mdfio_unit_dir(j, u), u->req.name);
	mdfio_stop_run(j);
}

/* What follows an operation of ns that ended with err only with -t or -v:
 * md-workbench's wait after it, then its lines. */
static void __attribute__((cold, noinline))
after_op(struct mdfio_job *j, const struct mdfio_unit *u, uint64_t ns, int err)
{
	if (j->wait_factor != 0)
		mdfio_wait_after(j, ns);
	if (j->verbose)
		mdfio_trace_op(j, u, err);
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
	u->req.dataset = ds->name;
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
	r->why = NULL;
	if (!s || st->target != st[-1].target)
		aim(j, u, st);
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
			     j->rank, mdfio_phase_name(j->phase), mdfio_unit_dir(j, u), u->req.name, mdfio_op_names[st->op]);
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

	if (k >= j->units || !u || j->halted || (k && !(k % ORPHAN_EVERY) && mdfio_rank_orphaned(j))) {
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
	account_op(td, j, r->op, r->t0, end_ns, err, err == r->err ? r->why : NULL, r->dataset, r->name);
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
				mdfio_trace(j, "%" PRIu32 ": delete dset %s", j->rank,
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
void __attribute__((noinline)) mdfio_release_refused(struct thread_data *td, struct io_u *busy)
{
	struct io_u *io_u;

	while ((io_u = io_u_rpop(&td->io_u_requeues)))
		put_io_u(td, io_u);
	if (busy && busy->file && !(busy->flags & IO_U_F_NO_FILE_PUT)) {
		put_file_log(td, busy->file);
		io_u_set(td, busy, IO_U_F_NO_FILE_PUT);
	}
}

/* fio's queue (the engine's queue call). An io_u carries one unit, or, where the backend ends every
 * request in start, up to j->per_io_u. A failed unit
 * always has an io_u of its own, so that fio counts exactly the failed
 * units as errors and the bytes of the others: one that fails after others
 * is held for the next io_u. */
enum fio_q_status mdfio_queue(struct thread_data *td, struct io_u *io_u)
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
		if ((j->sw_timer_ns || j->sw_stopped) && mdfio_stonewall_hold(td, j)) {
			if (n)
				break;
			if (td->done)
				mdfio_release_refused(td, io_u);
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
		if (!mdfio_fio_counts_batches)
			count_batched(td, io_u->ddir, n - 1);
	}
	return FIO_Q_COMPLETED;
}
