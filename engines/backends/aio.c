/* mdfio-aio: object data through Linux AIO (libaio), with up to iodepth
 * units in flight per job; stat, open, unlink and close stay the plain
 * synchronous calls (sysio.c), as Linux AIO has none of them.
 *
 * direct=1 opens objects with O_DIRECT. Such a transfer must cover whole
 * blocks of the file system's direct-I/O alignment, so an object whose size
 * is not a multiple of it is written as the rounded-up length and truncated
 * back to its size (one ftruncate more per create), and read by asking for
 * the rounded-up length (the kernel stops at the end of the object). */
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend.h"
#include "sysio.h"

struct aio_slot {
	struct iocb iocb;
	int fd;
	size_t done;
};

struct aio {
	io_context_t ctx;
	struct thread_data *td;
	struct aio_slot *slot;
	struct io_event *ev;
	unsigned int n;
	int oflags;		/* O_DIRECT or 0 */
	size_t align;		/* direct=1: the transfer granule */
};

/* Submits the (rest of the) transfer of u's request; 0 or an errno value. */
static int submit_xfer(struct aio *a, struct mdfio_unit *u)
{
	struct aio_slot *s = &a->slot[u->index];
	struct mdfio_req *r = &u->req;
	struct iocb *cb = &s->iocb;
	size_t len = r->size - s->done;
	int ret;

	if (a->oflags)
		len = (r->size + a->align - 1) / a->align * a->align;
	if (r->op == MDFIO_OP_READ)
		io_prep_pread(cb, s->fd, (char *)r->buf + s->done, len, (long long)s->done);
	else
		io_prep_pwrite(cb, s->fd, (char *)r->buf + s->done, len, (long long)s->done);
	cb->data = u;
	do {
		ret = io_submit(a->ctx, 1, &cb);
	} while (ret == -EINTR);
	return ret == 1 ? 0 : ret < 0 ? -ret : EAGAIN;
}

/* Ends u's transfer request: truncates a padded object, closes it. */
static void end_xfer(struct aio *a, struct mdfio_unit *u, int err)
{
	struct aio_slot *s = &a->slot[u->index];
	struct mdfio_req *r = &u->req;
	int create = r->op == MDFIO_OP_CREATE, cerr;

	/* glibc's ftruncate: on 32-bit architectures SYS_ftruncate takes a
	 * 32-bit length, and the 64-bit one is another call */
	if (!err && create && a->oflags && r->size % a->align &&
	    ftruncate(s->fd, (off_t)r->size))
		err = errno;
	cerr = mdfio_sys_close(s->fd);
	/* a failed close of a new object loses its data; of a read, nothing */
	r->err = err ? err : create ? cerr : 0;
}

/* Opens u's object and submits its transfer: 1 if it is in flight, 0 if
 * the request ended here (r->err says how). */
static int start_xfer(struct aio *a, struct mdfio_unit *u)
{
	struct aio_slot *s = &a->slot[u->index];
	struct mdfio_req *r = &u->req;
	int err;

	if (r->op == MDFIO_OP_READ) {
		s->fd = mdfio_sys_open_read(r->dfd, r->name, a->oflags);
		if (s->fd < 0) {
			r->err = -s->fd;
			return 0;
		}
	} else {
		s->fd = mdfio_sys_open_create(r->dfd, r->name, a->oflags);
		if (s->fd < 0) {
			r->err = errno;
			return 0;
		}
	}
	s->done = 0;
	err = submit_xfer(a, u);
	if (!err)
		return 1;
	end_xfer(a, u, err);
	return 0;
}

/* Starts u's request: stat and delete are plain calls, ended at once (1);
 * a read or create is in flight (0) unless it ended early (1). */
static int libaio_start(void *priv, struct mdfio_unit *u)
{
	struct mdfio_req *r = &u->req;

	r->t0 = mdfio_now();
	if (r->op == MDFIO_OP_READ || r->op == MDFIO_OP_CREATE)
		return !start_xfer(priv, u);
	r->err = mdfio_sys_perform(r);
	return 1;
}

/* A completed transfer; returns 1 if its unit has ended. */
static int completed(struct aio *a, struct mdfio_unit *u, long res)
{
	struct aio_slot *s = &a->slot[u->index];
	struct mdfio_req *r = &u->req;
	int err = 0;

	if (res < 0) {
		err = (int)-res;
	} else if (a->oflags) {
		/* one transfer of whole granules: a read past the end of the
		 * object stops there, a write covers the padding */
		if ((size_t)res < r->size)
			err = EIO;
	} else if (!res) {
		err = EIO;	/* the object is shorter than bs */
	} else if ((s->done += (size_t)res) < r->size) {
		err = submit_xfer(a, u);
		if (!err)
			return 0;
	}
	end_xfer(a, u, err);
	return mdfio_req_done(a->td, u, mdfio_now());
}

static int libaio_reap(void *priv, unsigned int min)
{
	struct aio *a = priv;
	unsigned int ended = 0;

	do {
		int i, r = io_getevents(a->ctx, ended < min, a->n, a->ev, NULL);

		if (r == -EINTR)
			continue;
		if (r < 0)
			return r;
		for (i = 0; i < r; i++)
			ended += completed(a, a->ev[i].data, (long)a->ev[i].res);
	} while (ended < min);
	return 0;
}

/* ---------------------------------------------------------------- set-up */

/* direct=1: a probe file of our own in the root tells whether the file
 * system takes O_DIRECT and with which alignment (statx STATX_DIOALIGN,
 * Linux 6.1). It is created without O_DIRECT, which a file system that
 * lacks it refuses only after creating the file, and O_DIRECT is then set
 * on it: so the file is always ours, and removed whatever fails. */
static int probe_direct(struct aio *a, int root_fd, const char *root)
{
	char name[64];
	struct statx stx;
	int fd, err = 0, direct;

	snprintf(name, sizeof(name), ".mdfio-direct-probe-%ld", (long)syscall(SYS_gettid));
	fd = mdfio_sys_open_create(root_fd, name, 0);
	if (fd < 0)
		return mdfio_error("direct=1: cannot create the probe file %s/%s: %s",
				 root, name, strerror(errno));
	direct = fcntl(fd, F_SETFL, O_DIRECT) ? errno : 0;
	if (!direct && statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx))
		err = errno;
	mdfio_sys_close(fd);
	unlinkat(root_fd, name, 0);
	if (direct)
		return mdfio_error("direct=1: %s does not take O_DIRECT (%s); use direct=0",
				 root, strerror(direct));
	if (err)
		return mdfio_error("direct=1: statx of %s/%s: %s", root, name, strerror(err));
	if (!(stx.stx_mask & STATX_DIOALIGN))
		stx.stx_dio_offset_align = stx.stx_dio_mem_align = 4096;
	if (!stx.stx_dio_offset_align)
		return mdfio_error("direct=1: %s does not support O_DIRECT on its files", root);
	if (stx.stx_dio_offset_align > MDFIO_BUF_ALIGN || stx.stx_dio_mem_align > MDFIO_BUF_ALIGN)
		return mdfio_error("direct=1: %s needs O_DIRECT alignment %u (memory %u); mdfio aligns to %d",
				 root, stx.stx_dio_offset_align, stx.stx_dio_mem_align, MDFIO_BUF_ALIGN);
	a->oflags = O_DIRECT;
	a->align = stx.stx_dio_offset_align;
	return 0;
}

static void libaio_exit(void *priv)
{
	struct aio *a = priv;

	if (a->ctx)
		io_destroy(a->ctx);
	free(a->slot);
	free(a->ev);
	free(a);
}

static int libaio_setup_ctx(struct thread_data *td, int root_fd, struct mdfio_unit *units,
			 unsigned int n, void **priv)
{
	struct aio *a = calloc(1, sizeof(*a));
	int ret;

	(void)units;
	if (!a)
		return mdfio_error("out of memory");
	*priv = a;
	a->td = td;
	a->n = n;
	a->slot = calloc(n, sizeof(*a->slot));
	a->ev = calloc(n, sizeof(*a->ev));
	if (!a->slot || !a->ev)
		return mdfio_error("out of memory for iodepth=%u", n);
	if (td->o.odirect && probe_direct(a, root_fd, td->o.directory))
		return 1;
	ret = io_setup((int)n, &a->ctx);
	if (ret) {
		a->ctx = 0;
		return mdfio_error("io_setup(%u) for mdfio-aio: %s%s", n, strerror(-ret),
				 ret == -EAGAIN ? " (raise /proc/sys/fs/aio-max-nr or lower iodepth)" : "");
	}
	return 0;
}

static const struct mdfio_backend libaio_backend = {
	.name = "mdfio-aio",
	.start = libaio_start,
	.reap = libaio_reap,
	.init = libaio_setup_ctx,
	.exit = libaio_exit,
	.direct = 1,
	.store = &mdfio_dir_store,
};

MDFIO_EXPORT void get_ioengine(struct ioengine_ops **ops);
void get_ioengine(struct ioengine_ops **ops)
{
	mdfio_get_ioengine(ops, &libaio_backend);
}
