/* mdfio-uring: the md-workbench cycle through io_uring, with up to iodepth
 * units (benchmark steps, creates, deletes) in flight per job.
 *
 * Each md-workbench operation is one submission: stat is a statx, delete an
 * unlinkat, and read and create are open, read or write, close. With
 * linked=1 (default) those three go in one linked chain through a direct
 * descriptor (the unit's slot of the registered file table), and only the
 * last of them, or the one that failed, posts a completion. With linked=0
 * each call is submitted when the one before it has completed, on a plain
 * descriptor. An operation's latency runs from its submission to the
 * moment its last completion is reaped (or, where the job's thread reads
 * or writes and closes the object itself, to the end of its close): the
 * same span the sync engine times, open to close.
 *
 * An operation can also be issued as mdfio-posix's plain system calls from
 * the job's thread (issue=, below): the kernel hands statx, unlinkat and a
 * creating openat to an io-wq worker thread, and where calls are as cheap
 * as tmpfs's, have nothing to overlap with, or leave the worker no idle
 * CPU, that handoff costs more than the call itself; issue=auto on tmpfs
 * splits the work between the two (auto_choice). */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "backend.h"
#include "sysio.h"
#include "waits.h"

/* issue=: how an operation is issued; the ring unless the jobfile says
 * otherwise (a benchmark does what its jobfile says) */
enum issue { ISSUE_RING, ISSUE_SYSCALL, ISSUE_AUTO };
static const char *const issue_names[] = { "ring", "syscall", "auto" };

struct uring_options {
	struct mdfio_options core;
	unsigned int linked, fixedbufs, sqthread_poll;
	unsigned int issue;
};

/* unlinked mode: where a read or create is */
enum stage { ST_OPEN, ST_XFER, ST_CLOSE };

/* A completion names its slot, the slot's request generation (a late
 * completion of an earlier request is ignored) and which call it is. */
enum tag { TAG_OPEN, TAG_XFER, TAG_CLOSE, TAG_ONE };
#define UD(slot, gen, tag) (((uint64_t)(slot) << 34) | ((uint64_t)(gen) << 2) | (tag))
#define UD_SLOT(ud) ((unsigned int)((ud) >> 34))
#define UD_GEN(ud) ((uint32_t)((ud) >> 2))
#define UD_TAG(ud) ((enum tag)((ud) & 3))

struct slot {
	struct mdfio_unit *u;
	struct statx stx;
	uint32_t gen;
	enum stage stage;
	int fd;			/* unlinked mode: the object's descriptor */
	size_t done;		/* unlinked mode: bytes transferred */
};

struct uring {
	struct io_uring ring;
	struct thread_data *td;
	int linked, regbufs;
	struct slot *slot;
	/* requests prepared but not yet submitted: their clock starts at
	 * submission; and all entries prepared since the last submission */
	struct mdfio_unit **unsent;
	unsigned int nr_unsent, nr_sqes;
	int via_ring;		/* else every operation is system calls */
	/* issue=auto's RING_BESIDE_CALLS (else 0): the ring's workers, at
	 * most, beside which the job's thread reads or writes and closes
	 * with system calls each object the ring opened (a plain
	 * descriptor) */
	unsigned int beside_workers;
	/* and in a cleanup, which has no transfers, one delete in
	 * thread_delete_every is an unlinkat from the job's thread */
	unsigned int thread_delete_every, deletes_started;
	/* issue=auto: system calls until they wait (check_waits), then
	 * the ring, taken between io_us */
	int watch_waits;
	unsigned int requests_done;
	struct mdfio_waits waits;
};

static struct io_uring_sqe *sqe_for(struct uring *ur, struct slot *s,
				    enum tag tag)
{
	/* the ring holds 3 entries per unit, and a unit has at most one
	 * chain unsubmitted, so there is always room */
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ur->ring);

	ur->nr_sqes++;
	io_uring_sqe_set_data64(sqe, UD(s->u->index, s->gen, tag));
	return sqe;
}

static void prep_xfer(struct uring *ur, struct io_uring_sqe *sqe, int fd,
		      struct mdfio_unit *u, size_t done)
{
	struct mdfio_req *r = &u->req;
	char *buf = (char *)r->buf + done;
	size_t len = r->size - done;
	int rd = r->op == MDFIO_OP_READ;

	if (ur->regbufs) {
		int idx = 2 * (int)u->index + !rd;

		if (rd)
			io_uring_prep_read_fixed(sqe, fd, buf, len, done, idx);
		else
			io_uring_prep_write_fixed(sqe, fd, buf, len, done, idx);
	} else if (rd) {
		io_uring_prep_read(sqe, fd, buf, len, done);
	} else {
		io_uring_prep_write(sqe, fd, buf, len, done);
	}
}

static void prep_open(struct io_uring_sqe *sqe, struct mdfio_req *r, int direct,
		      unsigned int slot)
{
	/* md-workbench's flags, never through a symlink; a direct descriptor
	 * cannot be O_CLOEXEC. A read's open does not wait for the writer of
	 * a FIFO put where an object belongs (a worker would wait for ever):
	 * the job's thread then checks what it opened (opened_object) */
	int flags = (r->op == MDFIO_OP_READ ? O_RDONLY | O_NONBLOCK
					    : O_RDWR | O_CREAT | O_EXCL) | O_NOFOLLOW;

	if (direct)
		io_uring_prep_openat_direct(sqe, r->dfd, r->name, flags, 0664, slot);
	else
		io_uring_prep_openat(sqe, r->dfd, r->name, flags | O_CLOEXEC, 0664);
}

/* Prepares the next submission of unit u's request. */
static void prep(struct uring *ur, struct mdfio_unit *u)
{
	struct slot *s = &ur->slot[u->index];
	struct mdfio_req *r = &u->req;
	struct io_uring_sqe *sqe;

	if (r->op == MDFIO_OP_STAT) {
		sqe = sqe_for(ur, s, TAG_ONE);
		io_uring_prep_statx(sqe, r->dfd, r->name, AT_SYMLINK_NOFOLLOW,
				    STATX_SIZE | STATX_TYPE | STATX_NLINK, &s->stx);
	} else if (r->op == MDFIO_OP_DELETE) {
		sqe = sqe_for(ur, s, TAG_ONE);
		io_uring_prep_unlinkat(sqe, r->dfd, r->name, 0);
	} else if (ur->beside_workers) {
		prep_open(sqe_for(ur, s, TAG_OPEN), r, 0, 0);
	} else if (ur->linked && r->op == MDFIO_OP_READ && s->stage == ST_XFER) {
		/* the object the thread checked: its read and close in one
		 * chain, on the plain descriptor of the open */
		sqe = sqe_for(ur, s, TAG_XFER);
		prep_xfer(ur, sqe, s->fd, u, 0);
		sqe->flags |= IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS;
		io_uring_prep_close(sqe_for(ur, s, TAG_CLOSE), s->fd);
		return;	/* the request's clock is running already */
	} else if (ur->linked && r->op == MDFIO_OP_CREATE) {
		sqe = sqe_for(ur, s, TAG_OPEN);
		prep_open(sqe, r, 1, u->index);
		sqe->flags |= IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS;
		sqe = sqe_for(ur, s, TAG_XFER);
		prep_xfer(ur, sqe, (int)u->index, u, 0);
		sqe->flags |= IOSQE_FIXED_FILE | IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS;
		sqe = sqe_for(ur, s, TAG_CLOSE);
		io_uring_prep_close_direct(sqe, u->index);
	} else {
		switch (s->stage) {
		case ST_OPEN:
			prep_open(sqe_for(ur, s, TAG_OPEN), r, 0, 0);
			break;
		case ST_XFER:
			prep_xfer(ur, sqe_for(ur, s, TAG_XFER), s->fd, u, s->done);
			break;
		case ST_CLOSE:
			io_uring_prep_close(sqe_for(ur, s, TAG_CLOSE), s->fd);
			break;
		}
		if (s->stage != ST_OPEN)
			return;	/* the request's clock is running already */
	}
	ur->unsent[ur->nr_unsent++] = u;
}

/* issue=auto where the ring waits its turn (auto_choice): the job's calls
 * go through the ring once they wait for the device or a server (waits.h).
 * With every call cached, few units in flight, or no CPU to spare for
 * io_uring's workers, the ring overlaps too little to pay for its handoffs
 * (bench/run --only uring-issue); a wait leaves a CPU idle for it to fill.
 * The engine's own waits (waiting_factor) need iodepth 1. */
static void check_waits(struct uring *ur)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return;
	/* once due, the switch is made at the next io_u */
	ur->watch_waits = !mdfio_waits_window(&ur->waits, ru.ru_nvcsw, ru.ru_inblock);
}

/* Whether the job's thread makes u's request itself, a delete of a cleanup
 * beside the ring: every thread_delete_every-th. */
static int thread_deletes(struct uring *ur, struct mdfio_unit *u)
{
	return ur->thread_delete_every && u->req.op == MDFIO_OP_DELETE &&
	       !(ur->deletes_started++ % ur->thread_delete_every);
}

/* Prepares u's request, in flight from the next submission on; or performs
 * it with system calls, timed as mdfio-posix times it, and returns 1. */
static int uring_start(void *priv, struct mdfio_unit *u)
{
	struct uring *ur = priv;
	struct slot *s = &ur->slot[u->index];

	/* a new generation either way: the ring may still hold completions
	 * of the slot's last request (a failed chain's cancelled calls) */
	s->gen++;
	if (!ur->via_ring || thread_deletes(ur, u)) {
		u->req.t0 = mdfio_now();
		u->req.err = mdfio_sys_perform(&u->req);
		if (ur->watch_waits && !(ur->requests_done++ % MDFIO_WAITS_WINDOW))
			check_waits(ur);
		return 1;
	}
	s->stage = ST_OPEN;
	s->done = 0;
	prep(ur, u);
	return 0;
}

/* Submits what is prepared, starting the clock of each new request, and
 * waits for at least wait completions. */
static int submit(struct uring *ur, unsigned int wait)
{
	int ret;

	if (ur->nr_unsent) {
		uint64_t t0 = mdfio_now();
		unsigned int i;

		for (i = 0; i < ur->nr_unsent; i++)
			ur->unsent[i]->req.t0 = t0;
		ur->nr_unsent = 0;
	}
	ur->nr_sqes = 0;
	do {
		ret = wait ? io_uring_submit_and_wait(&ur->ring, wait)
			   : io_uring_submit(&ur->ring);
	} while (ret == -EINTR);
	return ret < 0 ? ret : 0;
}

/* A transfer's result: 0 when it is complete, -1 when more is due (then
 * *done has moved), else an errno value. */
static int xfer_result(struct mdfio_req *r, int res, size_t *done)
{
	if (res < 0)
		return -res;
	if (!res)
		return EIO;	/* the object is shorter than bs */
	*done += (size_t)res;
	return *done < r->size ? -1 : 0;
}

/* A stat's result: the size, and whether the name holds an object (the
 * link count as one where the file system does not give it: the read's
 * open checks again). */
static int stat_result(struct slot *s, struct mdfio_req *r)
{
	const struct statx *x = &s->stx;

	r->st_size = x->stx_size;
	return mdfio_sys_not_object(x->stx_mode, x->stx_mask & STATX_NLINK ? x->stx_nlink : 1);
}

/* One completion of slot s; returns 1 when its request is over, 2 when
 * the job's thread has just made its last calls (beside_workers, or the
 * check of a read's object). */
static int complete(struct uring *ur, struct slot *s, enum tag tag, int res)
{
	struct mdfio_req *r = &s->u->req;
	int err;

	if (tag == TAG_ONE) {
		r->err = res < 0 ? -res : 0;
		if (!r->err && r->op == MDFIO_OP_STAT)
			r->err = stat_result(s, r);
		return 1;
	}
	if (tag == TAG_OPEN && res >= 0 && r->op == MDFIO_OP_READ) {
		err = mdfio_sys_opened_object(res, 0);
		if (err) {
			mdfio_sys_close(res);
			r->err = err;
			return 2;
		}
	}
	if (ur->beside_workers) {
		if (res < 0) {
			r->err = -res;
			return 1;
		}
		r->err = mdfio_sys_transfer_close(res, r);
		return 2;
	}
	if (ur->linked && tag != TAG_OPEN) {
		/* only the close, or the call that failed, completes; a
		 * short transfer fails the chain */
		if (tag == TAG_XFER && res >= 0)
			res = -EIO;
		r->err = res < 0 ? -res : 0;
		if (tag == TAG_XFER && r->op == MDFIO_OP_READ) {
			/* its close was cancelled with the chain: the
			 * descriptor is a plain one, closed here, and the
			 * cancelled close's completion is not this request's */
			mdfio_sys_close(s->fd);
			s->gen++;
		}
		return 1;
	}
	switch (tag) {
	case TAG_OPEN:
		if (res < 0) {
			r->err = -res;
			return 1;
		}
		s->fd = res;
		s->stage = ST_XFER;
		break;
	case TAG_XFER:
		err = xfer_result(r, res, &s->done);
		if (err < 0)
			break;	/* the rest of a partial transfer */
		r->err = err;
		s->stage = ST_CLOSE;
		break;
	default:
		/* a failed close of a new object loses its data */
		if (!r->err && res < 0 && r->op == MDFIO_OP_CREATE)
			r->err = -res;
		return 1;
	}
	prep(ur, s->u);
	return 0;
}

/* Reaps every completion there is; returns how many units ended. */
static unsigned int reap(struct uring *ur)
{
	struct io_uring_cqe *cqe;
	unsigned int head, n = 0, ended = 0;
	uint64_t now = 0;

	io_uring_for_each_cqe(&ur->ring, head, cqe) {
		uint64_t ud = io_uring_cqe_get_data64(cqe);
		struct slot *s = &ur->slot[UD_SLOT(ud)];
		int over;

		n++;
		if (UD_GEN(ud) != s->gen || !(over = complete(ur, s, UD_TAG(ud), cqe->res)))
			continue;
		/* one clock read stands for all completions seen together;
		 * a unit whose calls the thread just made ends after them, and
		 * so do the units it reaps after it */
		if (!now || over == 2)
			now = mdfio_now();
		ended += mdfio_req_done(ur->td, s->u, now);
	}
	io_uring_cq_advance(&ur->ring, n);
	return ended;
}

static int uring_commit(void *priv)
{
	struct uring *ur = priv;

	return ur->nr_sqes ? submit(ur, 0) : 0;
}

static int uring_reap(void *priv, unsigned int min)
{
	struct uring *ur = priv;
	unsigned int ended = 0;
	int ret;

	for (;;) {
		ended += reap(ur);
		/* a reaped completion may have prepared the next call */
		if (ended >= min && !ur->nr_sqes)
			return 0;
		ret = submit(ur, ended >= min ? 0 : 1);
		if (ret)
			return ret;
	}
}

/* ---------------------------------------------------------------- set-up */

static int need_opcodes(struct io_uring *ring, int regbufs)
{
	/* fixed: needed only for registered buffers (fixedbufs=1) */
	static const struct { int op; const char *name; int fixed; } ops[] = {
		{ IORING_OP_STATX, "STATX", 0 }, { IORING_OP_OPENAT, "OPENAT", 0 },
		{ IORING_OP_READ, "READ", 0 }, { IORING_OP_WRITE, "WRITE", 0 },
		{ IORING_OP_CLOSE, "CLOSE", 0 }, { IORING_OP_UNLINKAT, "UNLINKAT", 0 },
		{ IORING_OP_READ_FIXED, "READ_FIXED", 1 },
		{ IORING_OP_WRITE_FIXED, "WRITE_FIXED", 1 },
	};
	struct io_uring_probe *probe = io_uring_get_probe_ring(ring);
	size_t i, n = sizeof(ops) / sizeof(ops[0]);
	int ret = 0;

	if (!probe)
		return mdfio_error("this kernel cannot list its io_uring opcodes (IORING_REGISTER_PROBE, Linux 5.6), which mdfio-uring checks; use mdfio-posix");
	for (i = 0; i < n && !ret; i++)
		if ((regbufs || !ops[i].fixed) && !io_uring_opcode_supported(probe, ops[i].op))
			ret = mdfio_error("this kernel's io_uring has no IORING_OP_%s (mdfio-uring needs it); use mdfio-posix%s",
					ops[i].name, ops[i].fixed ? " or fixedbufs=0" : "");
	io_uring_free_probe(probe);
	return ret;
}

/* Direct descriptors: one table slot per unit. Opening the root directory
 * (again, from its descriptor) into slot 0 proves the kernel can (openat
 * into a slot: Linux 5.15). */
static int need_direct(struct uring *ur, int root_fd, unsigned int n)
{
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int ret = io_uring_register_files_sparse(&ur->ring, n), res[2] = { 0, 0 }, i;

	if (ret)
		return mdfio_error("linked=1: cannot register %u direct descriptors: %s; set linked=0",
				 n, strerror(-ret));
	sqe = io_uring_get_sqe(&ur->ring);
	io_uring_prep_openat_direct(sqe, root_fd, ".", O_RDONLY | O_DIRECTORY, 0, 0);
	sqe->flags |= IOSQE_IO_LINK;
	sqe->user_data = 0;
	sqe = io_uring_get_sqe(&ur->ring);
	io_uring_prep_close_direct(sqe, 0);
	sqe->user_data = 1;
	ret = io_uring_submit_and_wait(&ur->ring, 2);
	for (i = 0; ret >= 0 && i < 2 && !io_uring_wait_cqe(&ur->ring, &cqe); i++) {
		res[cqe->user_data & 1] = cqe->res;
		io_uring_cqe_seen(&ur->ring, cqe);
	}
	if (ret < 0 || res[0] < 0 || res[1] < 0)
		return mdfio_error("linked=1: this kernel cannot open into a direct descriptor (%s; Linux 5.15); set linked=0",
				 strerror(ret < 0 ? -ret : res[0] < 0 ? -res[0] : -res[1]));
	return 0;
}

static int need_buffers(struct uring *ur, struct mdfio_unit *units,
			unsigned int n)
{
	struct iovec *iov = calloc(2 * (size_t)n, sizeof(*iov));
	unsigned int i;
	int ret;

	if (!iov)
		return mdfio_error("out of memory");
	for (i = 0; i < n; i++) {
		iov[2 * i] = (struct iovec){ units[i].rbuf, units[i].buf_len };
		iov[2 * i + 1] = (struct iovec){ units[i].wbuf, units[i].buf_len };
	}
	ret = io_uring_register_buffers(&ur->ring, iov, 2 * n);
	free(iov);
	if (ret)
		return mdfio_error("fixedbufs=1: cannot register %u buffers of %zu bytes: %s; set fixedbufs=0%s",
				 2 * n, units[0].buf_len, strerror(-ret),
				 ret == -ENOMEM ? " or raise the locked-memory limit (ulimit -l)" : "");
	return 0;
}

/* Asked before each io_u: an io_u carries several units only while start
 * ends them all, so a switch to the ring waits for the next one. */
static int uring_ends_in_start(void *priv)
{
	struct uring *ur = priv;

	if (mdfio_waits_due(&ur->waits))
		ur->via_ring = 1;
	return !ur->via_ring;
}

static void uring_exit(void *priv)
{
	struct uring *ur = priv;

	if (ur->ring.ring_fd > 0)
		io_uring_queue_exit(&ur->ring);
	free(ur->slot);
	free(ur->unsent);
	free(ur);
}

/* Only the job's thread submits and reaps, so the kernel may run the work
 * that completes a request (a linked chain's next call, a worker's result)
 * when that thread next enters the ring to wait, instead of interrupting
 * it (SINGLE_ISSUER, DEFER_TASKRUN: Linux 6.1): fewer context switches and
 * less CPU per step (docs/benchmarks.md). Not with SQPOLL, whose thread
 * submits; and without them on a kernel that has neither. */
static int init_ring(struct uring *ur, unsigned int entries, struct io_uring_params *p)
{
	struct io_uring_params plain = *p;
	int ret;

	if (!(p->flags & IORING_SETUP_SQPOLL)) {
		p->flags |= IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
		ret = io_uring_queue_init_params(entries, &ur->ring, p);
		if (ret != -EINVAL)
			return ret;
		*p = plain;
	}
	return io_uring_queue_init_params(entries, &ur->ring, p);
}

/* The CPUs the job's thread may run on (its affinity), and the ranks
 * sharing them: bound to some of the host's CPUs (fio's cpus_allowed, a
 * launcher's binding), this fio's clones; unbound, every rank on the host.
 * The CPUs beyond one per rank are left to io_uring's workers. A cgroup's
 * CPU quota is not seen. */
struct job_cpus {
	unsigned int mine, sharing;
};

static struct job_cpus job_cpus(struct thread_data *td)
{
	long conf = sysconf(_SC_NPROCESSORS_CONF), online = sysconf(_SC_NPROCESSORS_ONLN);
	size_t size = CPU_ALLOC_SIZE(conf > 0 ? conf : 1);
	cpu_set_t *cpus = CPU_ALLOC(conf > 0 ? conf : 1);
	struct job_cpus c = { 1, 1 };	/* unknown: none to spare */

	if (!cpus || sched_getaffinity(0, size, cpus)) {
		CPU_FREE(cpus);
		return c;
	}
	c.mine = (unsigned int)CPU_COUNT_S(size, cpus);
	CPU_FREE(cpus);
	c.sharing = online > 0 && c.mine < (unsigned long)online ? mdfio_job_clones(td)
								 : mdfio_job_ranks_here(td);
	return c;
}

/* Whole CPUs to spare per rank: each rank's share of its io_uring workers
 * where they work beside its thread (RING_BESIDE_CALLS). */
static unsigned int spare_per_rank(struct job_cpus c)
{
	return c.mine > c.sharing ? (c.mine - c.sharing) / c.sharing : 0;
}

/* issue=auto's choice. Through the ring the kernel hands statx, unlinkat
 * and a creating openat to an io-wq worker thread, which pays on a block
 * file system once enough units are in flight to keep workers busy on a
 * CPU the ranks leave idle, with its cache cold or warm, or once the calls
 * wait for the device. On tmpfs and ramfs, whose calls never wait, it also
 * hands every read and write to a worker (their files cannot be read or
 * written without blocking, IOCB_NOWAIT), where the copy costs less than
 * the handoff.
 * In the order checked:
 * - at iodepth 1 system calls, where nothing can overlap;
 * - in a cleanup (deletes only) on xfs system calls: its deletes are in
 *   one dataset directory at a time, and handed to workers they contend
 *   for it and lose to one thread's unlinks;
 * - with sqthread_poll=1 the ring, whose polling thread would take a CPU
 *   while the job made system calls;
 * - on tmpfs and ramfs, from AUTO_RING_DEPTH with a whole CPU to spare per
 *   rank, the ring for stat, delete and open (a creating open is a
 *   worker's; a reading one completes inside the submission), and the
 *   job's thread reads or writes and closes each object by system calls,
 *   beside as many workers as CPUs to spare per rank: more would contend
 *   with it and with each other for the CPUs and the datasets'
 *   directories. A cleanup has no transfers: there the thread makes a
 *   share of the deletes itself (THREAD_DELETE_EVERY). Otherwise system
 *   calls;
 * - elsewhere the ring from AUTO_RING_DEPTH where the host has a CPU to
 *   spare, and otherwise system calls until they wait (check_waits).
 * Deciding per operation from whether sampled calls slept lost to the ring
 * there; each rule is a row of bench/run --only uring-issue. */
enum issue_choice { SYSCALLS, SYSCALLS_UNTIL_WAITING, RING, RING_BESIDE_CALLS };
#define AUTO_RING_DEPTH 8u
/* a cleanup beside w workers: the thread makes one delete in 1 + 2w, as
 * one worker's unlinks keep pace with the thread's own plus its share of
 * fio's and the ring's work for every delete (bench/run --only
 * uring-issue); more workers were not measured */
#define THREAD_DELETE_EVERY(w) (1u + 2u * (w))

/* f_type's type differs by architecture (a signed int on 32-bit x86, where
 * comparing it with a magic above INT_MAX is a sign-compare warning); the
 * magic numbers are 32 bits on every one. */
static inline uint32_t fs_magic(const struct statfs *fs)
{
	return (uint32_t)fs->f_type;
}

static enum issue_choice auto_choice(struct thread_data *td, unsigned int n,
				     const struct statfs *fs, struct job_cpus cpus)
{
	struct uring_options *o = td->eo;

	if (n == 1)
		return SYSCALLS;
	if (fs_magic(fs) == XFS_SUPER_MAGIC && mdfio_job_ops(td) == 1u << MDFIO_OP_DELETE)
		return SYSCALLS;
	if (o->sqthread_poll)
		return RING;
	if (fs_magic(fs) == TMPFS_MAGIC || fs_magic(fs) == RAMFS_MAGIC)
		return n >= AUTO_RING_DEPTH && spare_per_rank(cpus) ? RING_BESIDE_CALLS : SYSCALLS;
	if (n >= AUTO_RING_DEPTH && cpus.mine > cpus.sharing)
		return RING;
	return SYSCALLS_UNTIL_WAITING;
}

/* Whether the thread's block reads (ru_inblock) are the file system's: it
 * sits on a block device (btrfs gives its files anonymous device numbers),
 * not on a server, and the kernel counts them (task I/O accounting, whose
 * file is /proc/self/io). */
static int reads_count(const struct statfs *fs, int root_fd)
{
	struct stat st;

	if (access("/proc/self/io", F_OK))
		return 0;
	if (fs_magic(fs) == BTRFS_SUPER_MAGIC)
		return 1;
	return !fstat(root_fd, &st) && major(st.st_dev) != 0;
}

static int uring_setup_ring(struct thread_data *td, int root_fd, struct mdfio_unit *units,
			    unsigned int n, void **priv)
{
	struct uring_options *o = td->eo;
	struct io_uring_params p = { 0 };
	struct uring *ur = calloc(1, sizeof(*ur));
	unsigned int i;
	int ret;

	if (!ur)
		return mdfio_error("out of memory");
	*priv = ur;
	ur->td = td;
	ur->linked = o->linked;
	ur->regbufs = o->fixedbufs;
	ur->slot = calloc(n, sizeof(*ur->slot));
	ur->unsent = calloc(n, sizeof(*ur->unsent));
	if (!ur->slot || !ur->unsent)
		return mdfio_error("out of memory for iodepth=%u", n);
	for (i = 0; i < n; i++)
		ur->slot[i].u = &units[i];
	if (o->issue == ISSUE_AUTO) {
		struct job_cpus cpus = job_cpus(td);
		struct statfs fs;
		enum issue_choice c = fstatfs(root_fd, &fs) ? RING : auto_choice(td, n, &fs, cpus);

		ur->via_ring = c == RING || c == RING_BESIDE_CALLS;
		if (c == RING_BESIDE_CALLS)
			ur->beside_workers = spare_per_rank(cpus);
		if (ur->beside_workers && mdfio_job_ops(td) == 1u << MDFIO_OP_DELETE)
			ur->thread_delete_every = THREAD_DELETE_EVERY(ur->beside_workers);
		ur->watch_waits = c == SYSCALLS_UNTIL_WAITING;
		ur->waits.reads_count = ur->watch_waits && reads_count(&fs, root_fd);
	} else {
		ur->via_ring = o->issue == ISSUE_RING;
	}
	/* a job that never enters a ring needs none, nor any io_uring
	 * feature: it runs on a kernel that lacks them */
	if (!ur->via_ring && !ur->watch_waits)
		return 0;
	/* a plain descriptor and the job's own buffers */
	if (ur->beside_workers)
		ur->linked = ur->regbufs = 0;
	if (o->sqthread_poll) {
		p.flags |= IORING_SETUP_SQPOLL;
		p.sq_thread_idle = 1000;	/* ms */
	}
	ret = init_ring(ur, 3 * n, &p);
	if (ret) {
		ur->ring.ring_fd = -1;
		return mdfio_error("cannot set up an io_uring of %u entries%s: %s",
				 3 * n, o->sqthread_poll ? " with sqthread_poll=1" : "", strerror(-ret));
	}
	if (need_opcodes(&ur->ring, ur->regbufs))
		return 1;
	if (ur->linked && !(p.features & IORING_FEAT_CQE_SKIP))
		return mdfio_error("linked=1: this kernel's io_uring cannot skip completions (IORING_FEAT_CQE_SKIP, Linux 5.17); set linked=0");
	if (ur->linked && need_direct(ur, root_fd, n))
		return 1;
	if (ur->regbufs && need_buffers(ur, units, n))
		return 1;
	if (ur->beside_workers) {
		/* statx, unlinkat and openat are bound work; a kernel that
		 * cannot cap it (before Linux 5.15) runs as many workers as
		 * io_uring starts, and one that keeps a pool per NUMA node
		 * caps each pool */
		unsigned int workers[2] = { ur->beside_workers, 0 };

		io_uring_register_iowq_max_workers(&ur->ring, workers);
	}
	return 0;
}

/* parsed here, not by fio, which takes linked=-1 and 1.5 for 1 (backend.h) */
MDFIO_U32_OPT(cb_linked, "linked", struct uring_options, linked, 0, 1)
MDFIO_U32_OPT(cb_fixedbufs, "fixedbufs", struct uring_options, fixedbufs, 0, 1)
MDFIO_U32_OPT(cb_sqthread_poll, "sqthread_poll", struct uring_options, sqthread_poll, 0, 1)

static int cb_issue(void *data, const char *s)
{
	/* "value|default", as the core's options take it */
	const char *bar = strchr(s, '|');
	const char *v = bar == s ? s + 1 : s;
	size_t n = bar && bar != s ? (size_t)(bar - s) : strlen(v);
	unsigned int k;

	for (k = 0; k < sizeof(issue_names) / sizeof(issue_names[0]); k++)
		if (strlen(issue_names[k]) == n && !strncmp(v, issue_names[k], n)) {
			((struct uring_options *)data)->issue = k;
			return 0;
		}
	return mdfio_error("issue=%s: expected ring, syscall or auto", s);
}

/* fixedbufs and sqthread_poll are fio's io_uring names for the same
 * switches; linked has no counterpart there (its direct descriptors exist
 * only to carry a chain) */
static const struct fio_option uring_options[] = {
	MDFIO_OPT("linked", cb_linked, "1",
		  "1: a create's open, write and close as one linked chain on a direct descriptor, a read's read and close once the job's thread has checked what its open opened; 0: one call at a time on a plain descriptor"),
	MDFIO_OPT("fixedbufs", cb_fixedbufs, "1",
		  "1: object data through registered buffers (READ_FIXED/WRITE_FIXED)"),
	MDFIO_OPT("sqthread_poll", cb_sqthread_poll, "0",
		  "1: a kernel thread polls the submission queue (IORING_SETUP_SQPOLL); it takes a CPU"),
	MDFIO_OPT("issue", cb_issue, "ring",
		  "How object calls are issued: ring (all through io_uring), syscall (all as mdfio-posix's system calls) or auto (the engine chooses per job from the file system, iodepth and the CPUs, and may move to the ring mid-phase: see mdfio(7))"),
	{ .name = NULL },
};

static const struct mdfio_backend uring_backend = {
	.name = "mdfio-uring",
	.start = uring_start,
	.commit = uring_commit,
	.reap = uring_reap,
	.init = uring_setup_ring,
	.exit = uring_exit,
	.ends_in_start = uring_ends_in_start,
	.options = uring_options,
	.option_struct_size = sizeof(struct uring_options),
	.store = &mdfio_dir_store,
};

MDFIO_EXPORT void get_ioengine(struct ioengine_ops **ops);
void get_ioengine(struct ioengine_ops **ops)
{
	mdfio_get_ioengine(ops, &uring_backend);
}
