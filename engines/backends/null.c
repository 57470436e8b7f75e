/* mdfio-null: every request ends at once and touches nothing, as fio's own
 * null engine: what is left is the cost of the core and of fio, and a fast
 * run of the accounting.
 *
 * Only objects are null. The core still makes and removes the datasets and
 * keeps the status file, so that the phase protocol (FIFO position, run
 * ids, refusals, recovery) works as under any engine, and a namespace left
 * by mdfio-null is an empty one of the shape the job describes. No object
 * is ever read, so verify_read=1 is refused.
 *
 * At iodepth=1 a request ends inside start; deeper, requests stay in
 * flight until fio next reaps, so that fio's queue, commit and getevents
 * cycle runs as with a real asynchronous interface. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"

struct null_queue {
	struct thread_data *td;
	int deep;		/* iodepth > 1: requests wait for reap */
	/* requests in flight (at most one per unit), and those being ended */
	struct mdfio_unit **pending, **ending;
	unsigned int nr_pending;
};

static void end_now(struct mdfio_unit *u)
{
	struct mdfio_req *r = &u->req;

	r->err = 0;
	if (r->op == MDFIO_OP_STAT)
		r->st_size = r->size;
}

static int null_start(void *priv, struct mdfio_unit *u)
{
	struct null_queue *q = priv;

	u->req.t0 = mdfio_now();
	end_now(u);
	if (!q->deep)
		return 1;
	q->pending[q->nr_pending++] = u;
	return 0;
}

static int null_reap(void *priv, unsigned int min)
{
	struct null_queue *q = priv;
	unsigned int ended = 0;

	/* ending one request may start its unit's next: that one waits for
	 * the next round */
	do {
		unsigned int i, n = q->nr_pending;
		uint64_t now = mdfio_now();

		memcpy(q->ending, q->pending, n * sizeof(*q->ending));
		q->nr_pending = 0;
		for (i = 0; i < n; i++)
			ended += mdfio_req_done(q->td, q->ending[i], now);
	} while (ended < min && q->nr_pending);
	return 0;
}

static int null_init(struct thread_data *td, int root_fd, struct mdfio_unit *units,
		     unsigned int n, void **priv)
{
	struct mdfio_options *o = td->eo;
	struct null_queue *q;

	(void)root_fd;
	(void)units;
	if (o->verify_read)
		return mdfio_error("verify_read=1: mdfio-null reads no object; use a real engine to verify");
	q = calloc(1, sizeof(*q));
	if (!q)
		return mdfio_error("out of memory");
	*priv = q;
	q->td = td;
	q->deep = n > 1;
	q->pending = calloc(n, sizeof(*q->pending));
	q->ending = calloc(n, sizeof(*q->ending));
	if (!q->pending || !q->ending)
		return mdfio_error("out of memory for iodepth=%u", n);
	return 0;
}

static void null_exit(void *priv)
{
	struct null_queue *q = priv;

	free(q->pending);
	free(q->ending);
	free(q);
}

static const struct mdfio_backend null_backend = {
	.name = "mdfio-null",
	.start = null_start,
	.reap = null_reap,
	.init = null_init,
	.exit = null_exit,
	.no_objects = 1,
	.store = &mdfio_dir_store,
};

MDFIO_EXPORT void get_ioengine(struct ioengine_ops **ops);
void get_ioengine(struct ioengine_ops **ops)
{
	mdfio_get_ioengine(ops, &null_backend);
}
