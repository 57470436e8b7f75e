/* The shared core of every mdfio engine: options, namespace, phases, FIFO
 * status, the md-workbench cycle and per-operation statistics. A backend
 * (posix.c, uring.c, aio.c) only performs the requests of one I/O interface.
 *
 * A unit (one create of a precreate, one benchmark step, one delete of a
 * cleanup) is a short sequence of requests. The core hands a backend the
 * next request of a unit; the backend performs it, sets req.err, and hands
 * it back with mdfio_unit_next(). A synchronous backend does that in a loop
 * (mdfio_queue); an asynchronous one keeps up to iodepth units in flight. */
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
	int result;
	uint64_t st_size;
	struct mdfio_unit *next_free;
	char path[PATH_MAX];
};

struct mdfio_backend {
	const char *name;
	/* Synchronous engines: performs req and returns its errno value. */
	int (*perform)(struct mdfio_req *req);
	/* Optional: called once the options are known, before the phase is
	 * entered (so a refusal leaves the namespace untouched). Returns 0 or
	 * prints one line and returns 1. */
	int (*init)(struct thread_data *td, struct mdfio_unit *units,
		    unsigned int n, void **priv);
	void (*exit)(void *priv);
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

int mdfio_init(struct thread_data *td, const struct mdfio_backend *be);
int mdfio_setup(struct thread_data *td);
void mdfio_cleanup(struct thread_data *td);
int mdfio_open_file(struct thread_data *td, struct fio_file *f);
int mdfio_close_file(struct thread_data *td, struct fio_file *f);

/* The synchronous engine's ->queue: one unit, performed with be->perform. */
enum fio_q_status mdfio_queue(struct thread_data *td, struct io_u *io_u);

/* Starts the next unit on io_u, its first request in unit->req. NULL: the
 * io_u is complete already (no unit left, or one the core did itself). */
struct mdfio_unit *mdfio_unit_start(struct thread_data *td, struct io_u *io_u);
/* Records unit->req as ended at end_ns. Returns 1 with the unit's next
 * request in unit->req, or 0: the unit is over, its io_u complete. */
int mdfio_unit_next(struct thread_data *td, struct mdfio_unit *unit,
		    uint64_t end_ns);
/* The backend data its init() returned. */
void *mdfio_priv(struct thread_data *td);

/* Completed io_us for an asynchronous engine's ->getevents/->event. */
void mdfio_events_reset(struct thread_data *td);
void mdfio_event_add(struct thread_data *td, struct io_u *io_u);
unsigned int mdfio_events(struct thread_data *td);
struct io_u *mdfio_event(struct thread_data *td, int n);

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

/* Refuses (one line, ops left NULL) when the loading fio is not the release
 * this engine was compiled against. Appends the engine's own options
 * (extra, NULL-terminated; may be NULL) to the core's. */
void mdfio_get_ioengine(struct ioengine_ops **ops, struct ioengine_ops *mine,
			const struct fio_option *extra);

/* One line "mdfio: ..." on fio's error output; returns 1. */
int mdfio_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
