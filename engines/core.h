/* The shared core of every mdfio engine: options, namespace, phases, FIFO
 * status, the md-workbench cycle and per-operation statistics. A backend
 * (posix.c, uring.c, aio.c) only performs the requests of one I/O interface.
 *
 * A unit (one create of a precreate, one benchmark step, one delete of a
 * cleanup) is a short sequence of requests. The core hands a backend the
 * next request of a unit; the backend performs it, sets req.err, and hands
 * it back with mdfio_unit_next(). A synchronous backend is driven by the
 * core in a loop; an asynchronous one keeps up to iodepth units in flight. */
#ifndef MDFIO_CORE_H
#define MDFIO_CORE_H

#include <limits.h>
#include <stdint.h>
#include <time.h>

#include "fio.h"
#include "optgroup.h"

#include "req.h"
#include "status.h"

/* Object buffers are aligned and padded to this, for O_DIRECT and for
 * registered buffers. */
#define MDFIO_BUF_ALIGN 4096

struct mdfio_unit {
	struct mdfio_req req;	/* the request to perform next */
	struct io_u *io_u;
	unsigned int index;	/* 0 .. iodepth-1, stable for the job */
	void *rbuf, *wbuf;	/* read into, create from (MDFIO_BUF_ALIGN) */
	size_t buf_len;		/* their length: size rounded up */
	/* the core's own */
	uint64_t idx;
	uint32_t d;
	unsigned int step;	/* which request of the unit (mdfio_phase_desc) */
	int result;
	uint64_t st_size;
	struct mdfio_unit *next_free;
	char path[PATH_MAX];
};

/* One I/O interface: all an engine gives the core, which makes fio's
 * ioengine_ops from it (one function table per interface, as IOR's). */
struct mdfio_backend {
	const char *name;	/* the ioengine's name: "mdfio-posix" */
	/* A synchronous interface performs req and returns its errno value. */
	int (*perform)(struct mdfio_req *req);
	/* An asynchronous one keeps units in flight through fio's own calls;
	 * its getevents hands over ended units with mdfio_event_add(). */
	enum fio_q_status (*queue)(struct thread_data *td, struct io_u *io_u);
	int (*commit)(struct thread_data *td);
	int (*getevents)(struct thread_data *td, unsigned int min,
			 unsigned int max, const struct timespec *t);
	/* Optional: called once the options are known, before the phase is
	 * entered (so a refusal leaves the namespace untouched). Returns 0 or
	 * prints one line and returns 1. */
	int (*init)(struct thread_data *td, struct mdfio_unit *units,
		    unsigned int n, void **priv);
	void (*exit)(void *priv);
	/* Its own options, after the core's (NULL-terminated; may be NULL),
	 * in a struct that begins with struct mdfio_options. */
	const struct fio_option *options;
	size_t option_struct_size;
	int direct;		/* opens objects with O_DIRECT if direct=1 */
};

struct mdfio_options {
	void *pad;		/* fio keeps its thread_data pointer here */
	unsigned int phase;	/* 0: unset, else enum mdfio_phase + 1 */
	unsigned int datasets;
	unsigned int rank_offset;
	unsigned int read_only;
	unsigned int verify_read;
	unsigned long long precreate;
	unsigned long long steps;
	unsigned long long start_index;
	unsigned int repeat, repeats;
	char *latency_log;	/* md-workbench -L prefix; "" or unset: off */
};

/* Starts the next unit on io_u, its first request in unit->req. NULL: the
 * io_u is complete already (no unit left, or one the core did itself). */
struct mdfio_unit *mdfio_unit_start(struct thread_data *td, struct io_u *io_u);
/* Records unit->req as ended at end_ns. Returns 1 with the unit's next
 * request in unit->req, or 0: the unit is over, its io_u complete. */
int mdfio_unit_next(struct thread_data *td, struct mdfio_unit *unit,
		    uint64_t end_ns);
/* The backend data its init() returned. */
void *mdfio_priv(struct thread_data *td);

/* Ended units for an asynchronous engine's getevents: reset at its start,
 * added as they end, counted to return. */
void mdfio_events_reset(struct thread_data *td);
void mdfio_event_add(struct thread_data *td, struct io_u *io_u);
unsigned int mdfio_events(struct thread_data *td);

static inline uint64_t mdfio_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Engine options: "value|default" as for the core's (see pick() in core.c);
 * prints one line naming the option and returns 1 if s is not in range. */
int mdfio_parse_u64(const char *name, const char *s, uint64_t min,
		    uint64_t max, uint64_t *out);

/* An engine option, parsed by callback fn so that it takes value|default. */
#define MDFIO_OPT(n, fn, defv, text) {					\
	.name = n, .lname = n, .type = FIO_OPT_STR_STORE, .cb = fn,	\
	.def = defv, .help = text, .category = FIO_OPT_C_ENGINE,	\
	.group = FIO_OPT_G_INVALID }

/* fn: the callback of an unsigned option stored in field of struct T. */
#define MDFIO_U32_OPT(fn, name, T, field, lo, hi)			\
static int fn(void *data, const char *s)				\
{									\
	uint64_t v;							\
	if (mdfio_parse_u64(name, s, lo, hi, &v))			\
		return 1;						\
	((T *)data)->field = (unsigned int)v;				\
	return 0;							\
}

/* fio's entry point: refuses (one line, ops left NULL) when the loading fio
 * is not the release this engine was compiled against. */
void mdfio_get_ioengine(struct ioengine_ops **ops, const struct mdfio_backend *be);

/* One line "mdfio: ..." on fio's error output; returns 1. */
int mdfio_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
