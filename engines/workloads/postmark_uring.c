/* mdfio-postmark's uring path (pm_io=uring): up to iodepth of PostMark's
 * operations in flight, each a chain of io_uring requests, one after the
 * other: a create is openat O_CREAT|O_EXCL, writes of pm_write_block, a
 * close; a read is openat, reads of pm_read_block to the end, a close; an
 * append is openat O_APPEND, writes, a close; a delete is one unlinkat.
 *
 * The sequence stays PostMark's: an operation starts only once its file's
 * previous operation (the sequence's after) has ended, so each file's own
 * order is kept, and operations on different files overlap. Names are
 * never reused (a file is named by the count of creates), so a create
 * waits for nothing, and the subdirectories are made before the phase.
 * An operation's latency runs from the submission of its first request
 * to the reaping of its last. */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "postmark_job.h"
#include "sysio.h"

enum step { STEP_OPEN, STEP_XFER, STEP_CLOSE, STEP_UNLINK };

/* One io_u's operation; slot i is io_u i's. */
struct pm_slot {
	struct io_u *io_u;
	struct mdfio_pm_op op;
	char name[64];
	int dfd, fd, busy, err;
	enum step step;
	uint32_t done;		/* bytes read or written */
	uint64_t start;
	char *buf;		/* a read block of its own */
	struct pm_slot *waiter;	/* the next operation on its file, if queued */
};

struct pm_uring {
	struct io_uring ring;
	unsigned int nr;
	struct pm_slot *slot;
	char *bufs;
	/* operations whose first request is prepared but not submitted:
	 * their clock starts at the submission */
	struct pm_slot **unsent;
	unsigned int nr_unsent;
	/* ended operations, oldest first; the first `handed` were returned
	 * by the last getevents */
	struct io_u **ready;
	unsigned int nr_ready, handed;
	unsigned int nr_busy;	/* operations queued and not ended */
};

static uint32_t piece(const struct pm_job *j, const struct pm_slot *s)
{
	uint32_t left = s->op.bytes - s->done;

	return left < j->p.write_block ? left : j->p.write_block;
}

/* Prepares slot s's next request; there is room: each slot has at most
 * one request in the ring, which has an entry per slot. */
static void prep(struct pm_uring *ur, struct pm_job *j, struct pm_slot *s)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ur->ring);
	/* as the sync path's calls: never through a symlink; a read's open
	 * does not wait for the writer of a FIFO (opened_object checks it) */
	static const int open_flags[MDFIO_PM_KIND_NR] = {
		[MDFIO_PM_CREATE] = O_RDWR | O_CREAT | O_EXCL,
		[MDFIO_PM_READ] = O_RDONLY | O_NONBLOCK,
		[MDFIO_PM_APPEND] = O_WRONLY | O_APPEND,
	};

	switch (s->step) {
	case STEP_OPEN:
		io_uring_prep_openat(sqe, s->dfd, s->name,
				     open_flags[s->op.kind] | O_NOFOLLOW | O_CLOEXEC, 0664);
		break;
	case STEP_XFER:
		if (s->op.kind == MDFIO_PM_READ)
			io_uring_prep_read(sqe, s->fd, s->buf, j->p.read_block, s->done);
		else
			/* an append's offset is the file's end (O_APPEND) */
			io_uring_prep_write(sqe, s->fd, j->source + s->done, piece(j, s),
					    s->op.kind == MDFIO_PM_APPEND ? (uint64_t)-1 : s->done);
		break;
	case STEP_CLOSE:
		io_uring_prep_close(sqe, s->fd);
		break;
	case STEP_UNLINK:
		io_uring_prep_unlinkat(sqe, s->dfd, s->name, 0);
		break;
	}
	io_uring_sqe_set_data(sqe, s);
}

static void ended(struct thread_data *td, struct pm_job *j, struct pm_uring *ur,
		  struct pm_slot *s, uint64_t now);

/* An operation on a file whose create failed ends here, not performed;
 * that create has ended, since it is the operation's after or before it. */
static void start(struct thread_data *td, struct pm_uring *ur, struct pm_job *j,
		  struct pm_slot *s)
{
	s->step = s->op.kind == MDFIO_PM_DELETE ? STEP_UNLINK : STEP_OPEN;
	s->fd = -1;
	s->done = 0;
	s->err = 0;
	if (pm_not_made(j, &s->op)) {
		s->err = PM_ERR_NOT_MADE;
		s->start = pm_now_ns();
		ended(td, j, ur, s, s->start);
		return;
	}
	prep(ur, j, s);
	ur->unsent[ur->nr_unsent++] = s;
}

/* Slot s's request completed with res: 1 if its operation is over, else
 * its next request is prepared. */
static int advance(struct pm_uring *ur, struct pm_job *j, struct pm_slot *s, int res)
{
	switch (s->step) {
	case STEP_OPEN:
		if (res < 0) {
			s->err = -res;
			if (s->op.kind == MDFIO_PM_CREATE)
				pm_create_failed(j, &s->op);
			return 1;
		}
		s->fd = res;
		s->step = STEP_XFER;
		if (s->op.kind == MDFIO_PM_READ && (s->err = mdfio_sys_opened_object(res, 0)))
			s->step = STEP_CLOSE;
		break;
	case STEP_XFER:
		if (res < 0) {
			s->err = -res;
			s->step = STEP_CLOSE;
		} else if (s->op.kind == MDFIO_PM_READ) {
			/* to the end, as postmark reads; a file of another
			 * size is not the one this sequence made */
			s->done += (uint32_t)res;
			if (!res) {
				s->err = s->done == s->op.bytes ? 0 : EIO;
				s->step = STEP_CLOSE;
			}
		} else if ((uint32_t)res != piece(j, s)) {
			s->err = EIO;	/* a short write, as the sync path's */
			s->step = STEP_CLOSE;
		} else if ((s->done += (uint32_t)res) == s->op.bytes) {
			s->step = STEP_CLOSE;
		}
		break;
	case STEP_CLOSE:
		if (res < 0 && !s->err)
			s->err = -res;
		return 1;
	case STEP_UNLINK:
		s->err = res < 0 ? -res : 0;
		return 1;
	}
	prep(ur, j, s);
	return 0;
}

/* The io_us the last getevents handed fio leave the list: fio has taken
 * them (event) before it queues or reaps again, and without them the list
 * holds at most one entry per io_u in flight. */
static void drop_handed(struct pm_uring *ur)
{
	ur->nr_ready -= ur->handed;
	memmove(ur->ready, ur->ready + ur->handed, ur->nr_ready * sizeof(*ur->ready));
	ur->handed = 0;
}

static void ended(struct thread_data *td, struct pm_job *j, struct pm_uring *ur,
		  struct pm_slot *s, uint64_t now)
{
	struct pm_slot *w = s->waiter;

	/* an operation not performed ends in queue, after that getevents */
	drop_handed(ur);
	pm_ended(td, j, &s->op, s->start, now, s->err);
	s->io_u->error = s->err ? EIO : 0;
	ur->ready[ur->nr_ready++] = s->io_u;
	s->busy = 0;
	ur->nr_busy--;
	s->waiter = NULL;
	if (w)
		start(td, ur, j, w);
}

/* Submits what is prepared, waiting for wait completions. */
static int submit(struct pm_uring *ur, unsigned int wait)
{
	uint64_t now = pm_now_ns();
	int ret;

	for (unsigned int i = 0; i < ur->nr_unsent; i++)
		ur->unsent[i]->start = now;
	ur->nr_unsent = 0;
	do
		ret = io_uring_submit_and_wait(&ur->ring, wait);
	while (ret == -EINTR);
	return ret < 0 ? ret : 0;
}

static void reap(struct thread_data *td, struct pm_job *j, struct pm_uring *ur)
{
	struct io_uring_cqe *cqe;
	unsigned int head, n = 0;
	uint64_t now = 0;

	io_uring_for_each_cqe(&ur->ring, head, cqe) {
		struct pm_slot *s = io_uring_cqe_get_data(cqe);

		n++;
		if (!advance(ur, j, s, cqe->res))
			continue;
		/* one clock read stands for the completions seen together */
		if (!now)
			now = pm_now_ns();
		ended(td, j, ur, s, now);
	}
	io_uring_cq_advance(&ur->ring, n);
}

static enum fio_q_status uring_queue(struct thread_data *td, struct pm_job *j, struct io_u *io_u)
{
	struct pm_uring *ur = j->io_data;
	struct pm_slot *s;

	if (io_u->index >= ur->nr || !pm_next_op(j, &ur->slot[io_u->index].op)) {
		td->done = 1;
		return FIO_Q_COMPLETED;
	}
	s = &ur->slot[io_u->index];
	s->io_u = io_u;
	s->busy = 1;
	ur->nr_busy++;
	s->waiter = NULL;
	s->dfd = pm_op_dir(j, &s->op, s->name, sizeof(s->name));
	/* its file's previous operation, if still in flight, starts it */
	for (unsigned int i = 0; s->op.after && i < ur->nr; i++)
		if (ur->slot[i].busy && ur->slot[i].op.seq == s->op.after) {
			ur->slot[i].waiter = s;
			return FIO_Q_QUEUED;
		}
	start(td, ur, j, s);
	return FIO_Q_QUEUED;
}

static int uring_commit(struct thread_data *td, struct pm_job *j)
{
	struct pm_uring *ur = j->io_data;

	(void)td;
	return io_uring_sq_ready(&ur->ring) ? submit(ur, 0) : 0;
}

static int uring_getevents(struct thread_data *td, struct pm_job *j, unsigned int min,
			   unsigned int max)
{
	struct pm_uring *ur = j->io_data;
	int ret;

	drop_handed(ur);
	/* fio may ask for more than it has queued: never wait for
	 * operations that are not in flight (as the core's getevents) */
	if (min > ur->nr_ready + ur->nr_busy)
		min = ur->nr_ready + ur->nr_busy;
	for (;;) {
		reap(td, j, ur);
		if (ur->nr_ready >= min)
			break;
		/* an operation waiting for another is started by its end, so
		 * there is always one in the ring to wait for */
		if ((ret = submit(ur, 1)))
			return ret;
	}
	/* what the ended ones started goes in flight now */
	if (io_uring_sq_ready(&ur->ring) && (ret = submit(ur, 0)))
		return ret;
	ur->handed = ur->nr_ready < max ? ur->nr_ready : max;
	return (int)ur->handed;
}

static struct io_u *uring_event(struct pm_job *j, int n)
{
	struct pm_uring *ur = j->io_data;

	return ur->ready[n];
}

static int need_opcodes(struct io_uring *ring)
{
	static const struct { int op; const char *name; } ops[] = {
		{ IORING_OP_OPENAT, "OPENAT" }, { IORING_OP_READ, "READ" },
		{ IORING_OP_WRITE, "WRITE" }, { IORING_OP_CLOSE, "CLOSE" },
		{ IORING_OP_UNLINKAT, "UNLINKAT" },
	};
	struct io_uring_probe *probe = io_uring_get_probe_ring(ring);
	int ret = 0;

	if (!probe)
		return mdfio_error("pm_io=uring: this kernel cannot list its io_uring opcodes (Linux 5.6); use pm_io=sync");
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]) && !ret; i++)
		if (!io_uring_opcode_supported(probe, ops[i].op))
			ret = mdfio_error("pm_io=uring: this kernel's io_uring has no IORING_OP_%s; use pm_io=sync",
				      ops[i].name);
	io_uring_free_probe(probe);
	return ret;
}

static int uring_init(struct thread_data *td, struct pm_job *j)
{
	struct pm_uring *ur = calloc(1, sizeof(*ur));
	unsigned int n = td->o.iodepth ? td->o.iodepth : 1;
	int ret;

	if (!ur)
		return mdfio_error("out of memory");
	j->io_data = ur;
	ur->nr = n;
	ur->slot = calloc(n, sizeof(*ur->slot));
	ur->unsent = calloc(n, sizeof(*ur->unsent));
	ur->ready = calloc(n, sizeof(*ur->ready));
	ur->bufs = malloc((size_t)n * j->p.read_block);
	if (!ur->slot || !ur->unsent || !ur->ready || !ur->bufs)
		return mdfio_error("out of memory for %u read blocks of %u bytes", n, j->p.read_block);
	for (unsigned int i = 0; i < n; i++)
		ur->slot[i].buf = ur->bufs + (size_t)i * j->p.read_block;
	ret = io_uring_queue_init(n, &ur->ring, 0);
	if (ret) {
		ur->nr = 0;
		return mdfio_error("pm_io=uring: cannot set up a ring of %u entries: %s", n, strerror(-ret));
	}
	return need_opcodes(&ur->ring);
}

static void uring_exit(struct pm_job *j)
{
	struct pm_uring *ur = j->io_data;

	if (!ur)
		return;
	if (ur->nr)
		io_uring_queue_exit(&ur->ring);
	free(ur->slot);
	free(ur->unsent);
	free(ur->ready);
	free(ur->bufs);
	free(ur);
	j->io_data = NULL;
}

const struct pm_io_ops pm_io_uring = {
	.name = "uring",
	.init = uring_init,
	.queue = uring_queue,
	.commit = uring_commit,
	.getevents = uring_getevents,
	.event = uring_event,
	.exit = uring_exit,
};
