/* The shared core of every mdfio engine: options, namespace, phases, FIFO
 * status, the md-workbench cycle and per-operation statistics. A backend
 * (posix.c, uring.c, aio.c) only performs the requests of one I/O interface,
 * on the datasets of its store (struct mdfio_store).
 *
 * A unit (one create of a precreate, one benchmark step, one delete of a
 * cleanup) is a short sequence of requests. The core hands a backend each
 * request of a unit with start(); the backend ends it at once (a
 * synchronous interface) or later, handing it back from reap() with
 * mdfio_req_done(). */
#ifndef MDFIO_CORE_H
#define MDFIO_CORE_H

#include <limits.h>
#include <stdint.h>
#include <time.h>

#include "fio.h"
#include "optgroup.h"

#include "namespace.h"
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
	uint64_t wbuf_holds;	/* for mdfio_pattern_write */
	/* the core's own */
	uint64_t idx;
	uint32_t d;
	unsigned int step;	/* which request of the unit (mdfio_phase_desc) */
	int result;
	uint64_t st_size;
	struct mdfio_unit *next_free;
	char name[MDFIO_OBJECT_NAME_MAX];	/* req.name points here */
};

/* Where a backend's datasets and objects live: its namespace, or store (as
 * IOR's aiori has mkdir, rmdir and stat beside its I/O). The core makes,
 * probes, opens, removes and lists datasets only through it, and names a
 * request's object by the dataset's handle (req.dfd), the dataset's single
 * name (req.dataset, "<rank>_<d>") and the object's (req.name).
 *
 * The store holds the datasets and objects only. A run's coordination,
 * the status file, the rank file and their lock, lives in the directory
 * directory= names, which every host of a run shares, whatever the store
 * (docs/design.md, "Where a run's coordination lives"). Errors are errno
 * values; the core says what they mean, in one line. */
struct mdfio_store {
	/* the datasets are directories in the root (directory=), each held
	 * open for a phase; 0: they live where the backend's own options say,
	 * beside the root, and hold no descriptor */
	int in_root;
	/* Optional: opens the store for one rank, after the options are
	 * known and before anything is probed. *state is what every function
	 * below is handed, *where the path messages name its datasets under.
	 * 0, or one line and 1. Without it, state points to the root's
	 * descriptor (an int) and where is directory=. */
	int (*open)(struct thread_data *td, int root_fd, void **state, const char **where);
	void (*close)(void *state);
	/* What the dataset name holds: an enum mdfio_probe, or minus an errno
	 * value when the store cannot tell. For MDFIO_PROBE_OTHER, *what says
	 * what it is in words after the dataset's path ("is not a
	 * directory"). Follows no symlink. */
	int (*probe)(void *state, const char *name, const char **what);
	/* Makes dataset name (a precreate's); EEXIST if the name holds
	 * anything. */
	int (*make)(void *state, const char *name);
	/* Opens dataset name for a phase into *handle (>= 0); ENOENT if it is
	 * absent, another errno value if it is not a dataset (never followed
	 * as a symlink). close_dataset ends it. */
	int (*open_dataset)(void *state, const char *name, int *handle);
	void (*close_dataset)(void *state, int handle);
	/* Removes dataset name (a cleanup's, once its objects are deleted):
	 * ENOTEMPTY if it still holds names, which stay. */
	int (*remove)(void *state, const char *name);
	/* A recovery's listing of the names in dataset name, open in handle,
	 * NULL if it cannot be read; next returns them one by one (NULL at
	 * the end), rewind starts over. listed_object says whether the name
	 * next returned last is a regular file of one link, as every object
	 * mdfio makes is: the core checks the name, index and status. */
	void *(*list)(void *state, const char *name, int handle);
	const char *(*next)(void *listing);
	int (*listed_object)(void *listing, const char *name);
	void (*rewind)(void *listing);
	void (*list_close)(void *listing);
	/* Deletes object name of the dataset (its handle and name) that a
	 * listing found: a recovery's delete, outside the backend's queue. */
	int (*unlink)(void *state, int handle, const char *dataset, const char *name);
};

/* Datasets as directories of the root (lib/dirstore.c): the store of every
 * backend whose objects are files in them. */
extern const struct mdfio_store mdfio_dir_store;

/* One I/O interface: all an engine gives the core, which makes fio's
 * ioengine_ops from it and owns fio's queue, commit, getevents and event
 * (one function table per interface, as IOR's). */
struct mdfio_backend {
	const char *name;	/* the ioengine's name: "mdfio-posix" */
	/* Starts unit->req, setting req.t0 when it really starts. Returns 1
	 * if the request has ended already (req.err says how), 0 if it is in
	 * flight: then reap hands it back. */
	int (*start)(void *priv, struct mdfio_unit *unit);
	/* Optional: submits the requests start prepared since the last
	 * call. 0 or a negative errno value. */
	int (*commit)(void *priv);
	/* Hands each request that has ended to mdfio_req_done() until at
	 * least min units have ended (it returns 1 for each). Returns 0 or a
	 * negative errno value. Not called for a synchronous backend. */
	int (*reap)(void *priv, unsigned int min);
	/* Optional: called once the options are known, before the phase is
	 * entered (so a refusal leaves the namespace untouched). root_fd is
	 * the root directory, open: anything the backend makes there is made
	 * in it, never through a symlink. Returns 0 or prints one line and
	 * returns 1. */
	int (*init)(struct thread_data *td, int root_fd, struct mdfio_unit *units,
		    unsigned int n, void **priv);
	void (*exit)(void *priv);
	/* Its own options, after the core's (NULL-terminated; may be NULL),
	 * in a struct that begins with struct mdfio_options. */
	const struct fio_option *options;
	size_t option_struct_size;
	/* start ends every request: fio runs one unit at a time (iodepth 1),
	 * and a fio that counts several I/Os per io_u gets several units */
	int sync;
	/* Optional, for a backend that is not sync: whether start ends every
	 * request of the next io_u (it chose system calls at init); its io_us
	 * then carry several units, as a sync backend's do. Asked at the
	 * phase's start and before each io_u while it says 1, so that a
	 * backend may make a pending switch to requests in flight there,
	 * between io_us; once it says 0 it is not asked again. */
	int (*ends_in_start)(void *priv);
	int direct;		/* opens objects with O_DIRECT if direct=1 */
	/* where its datasets and objects live (mdfio_dir_store: directories
	 * of the root) */
	const struct mdfio_store *store;
	/* touches no object (mdfio-null): its namespaces hold none, so no
	 * phase of any engine deletes a file in their datasets, and it
	 * deletes none in a recovery */
	int no_objects;
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
	unsigned int start_index_set;	/* given, not the default */
	unsigned int repeat, repeats;
	char *latency_log;	/* md-workbench -L prefix; "" or unset: off */
	char *hosts;		/* fio servers of a run, by host name */
	char *run_id;		/* the run's name, the same in each of its fio */
	unsigned int join_timeout;	/* s a rank waits for one never started */
	unsigned int data_pattern;	/* enum mdfio_pattern_kind */
	unsigned int packet_type;	/* enum mdfio_packet */
	int random_seed;	/* md-workbench -G */
	/* md-workbench -t, kept as the float md-workbench holds it in, so
	 * that waits and log names round as md-workbench's do */
	double waiting_factor;
	unsigned int latency_all;	/* md-workbench --latency-all */
	unsigned int verbose;		/* md-workbench -v: 0, 1 or 2 */
	unsigned int adaptive_waiting;	/* md-workbench -T: 8 runs an iteration */
	unsigned int stonewall_timer;	/* md-workbench -w: s, 0 = off */
	unsigned int stonewall_wear_out;	/* md-workbench -W */
	char *run_info_file;	/* md-workbench --run-info-file; unset: none */
	/* md-workbench --ignore-precreate-errors: a create error is counted,
	 * not the end of the run */
	unsigned int ignore_precreate_errors;
	/* md-real-io's lim-free-mem (-m) and lim-free-mem-phase (-M), in
	 * its units of 1000 KiB (0: off); and 1: drop the page cache before
	 * each phase */
	unsigned long long lim_free_mem, lim_free_mem_phase;
	unsigned int drop_caches;
};


/* Ends unit->req at end_ns and starts the unit's next request. Returns 1
 * if the unit is over (its io_u is fio's event now), 0 if a request of it
 * is in flight. For a backend's reap. */
int mdfio_req_done(struct thread_data *td, struct mdfio_unit *unit,
		   uint64_t end_ns);

/* The operations the job's units perform: bit 1 << op for each enum
 * mdfio_op. For a backend's init, choosing how to issue them. */
unsigned int mdfio_job_ops(struct thread_data *td);

/* How the rank's lines begin ("rank 0 benchmark") into buf: for a
 * backend's own line about its phase, at its exit. */
const char *mdfio_job_who(struct thread_data *td, char *buf, size_t len);

/* The ranks of the job's run on this host: numjobs times the processes
 * its launcher says it started here (world.h); and those of this fio job
 * (numjobs). For a backend's init, judging whether the job has a CPU to
 * spare. */
unsigned int mdfio_job_ranks_here(struct thread_data *td);
unsigned int mdfio_job_clones(struct thread_data *td);

static inline uint64_t mdfio_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Engine options: "value|default" as for the core's (see pick() in options.c);
 * prints one line naming the option and returns 1 if s is not in range. */
int mdfio_parse_u64(const char *name, const char *s, uint64_t min,
		    uint64_t max, uint64_t *out);
/* Copies the value of a "value|default" string option into out; one
 * line and 1 if it does not fit. */
int mdfio_option_value(const char *name, const char *s, char *out, size_t len);

/* An engine option, parsed by callback fn so that it takes value|default. */
#define MDFIO_OPT(n, fn, defv, text) {					\
	.name = n, .lname = n, .type = FIO_OPT_STR_STORE, .cb = fn,	\
	.def = defv, .help = text, .category = FIO_OPT_C_ENGINE,	\
	.group = FIO_OPT_G_INVALID }

/* An engine option fio stores into field of struct T: a string kept as
 * given (value|default is resolved where it is used). No number is left to
 * fio's own parser, which prints "min value out of range" for -1 and runs
 * on with the default, and takes 1.5 for 1 (3.33 and 3.41). */
#define MDFIO_STR_OPT(n, T, field, text) {				\
	.name = n, .lname = n, .type = FIO_OPT_STR_STORE,		\
	.off1 = offsetof(T, field), .help = text,			\
	.category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID }

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

/* The engines are built with hidden symbols, so that calls inside one are
 * direct (and inlinable); only fio's entry point get_ioengine is exported. */
#define MDFIO_EXPORT __attribute__((visibility("default")))

/* fio's entry point: refuses (one line, ops left NULL) when the loading fio
 * is not the release this engine was compiled against. */
void mdfio_get_ioengine(struct ioengine_ops **ops, const struct mdfio_backend *be);

/* Reports an error: one line "mdfio: ..." on fio's error output; returns 1
 * so that a check can return it. */
int mdfio_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same for a notice, which fails nothing. */
void mdfio_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
