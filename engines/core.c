#include "core.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fio_compat.h"
#include "options.h"
#include "namespace.h"
#include "oplog.h"
#include "pattern.h"
#include "sysio.h"

/* fio's JSON slot of each operation: create=write, read=read, delete=trim
 * (clat_ns), stat=sync (lat_ns). */
static const enum fio_ddir op_ddir[MDFIO_OP_NR] = {
	[MDFIO_OP_CREATE] = DDIR_WRITE,
	[MDFIO_OP_STAT] = DDIR_SYNC,
	[MDFIO_OP_READ] = DDIR_READ,
	[MDFIO_OP_DELETE] = DDIR_TRIM,
};
static const char *const op_name[MDFIO_OP_NR] = {
	"create", "stat", "read", "delete" };
/* The data direction that carries each phase's headline count, as fio's
 * io_u direction, its rw= setting, and the option's name. */
static const struct {
	enum fio_ddir ddir;
	enum td_ddir rw;
	const char *rw_name;
} phase_io[] = {
	[MDFIO_PRECREATE] = { DDIR_WRITE, TD_DDIR_WRITE, "write" },
	[MDFIO_BENCHMARK] = { DDIR_READ, TD_DDIR_READ, "read" },
	[MDFIO_CLEANUP] = { DDIR_TRIM, TD_DDIR_TRIM, "trim" },
};

struct op_count {
	uint64_t err;
	int first_errno;
	char first_path[PATH_MAX];
};

struct dataset {
	char *path;
	size_t len;
	uint32_t rank;
	uint64_t left;		/* cleanup: objects not yet deleted */
};

struct mdfio_job {
	const struct mdfio_backend *be;
	void *priv;
	enum mdfio_phase phase;
	uint32_t rank, ranks, datasets, offset;
	uint64_t precreate, steps, start, pos;
	size_t size;
	int read_only, verify, recover;
	char root[PATH_MAX];
	char status_path[PATH_MAX];
	char run[MDFIO_RUN_LEN];
	/* units of the phase: handed out, finished */
	uint64_t units, next, finished;
	/* for each d: our dataset, the one a step reads from, the one it
	 * writes to (paths built once; a step only appends the object) */
	struct dataset *own, *rd, *wr;
	char *dset_paths;
	char path[PATH_MAX];
	uint8_t *ref;		/* the filler every object shares */
	/* units in flight: at most iodepth */
	struct mdfio_unit *unit, *free_unit;
	unsigned int nr_units, in_flight;
	uint8_t *bufs;
	struct io_u **events;
	unsigned int nr_events;
	struct op_count op[MDFIO_OP_NR];
	uint64_t dsets_err;
	int entered;
	/* per-operation latency log (md-workbench -L), streamed */
	FILE *log[MDFIO_OP_NR];
	char log_prefix[PATH_MAX];
	uint64_t log_iter, log_t0;
	/* units per io_u of a synchronous interface, and a failed unit
	 * waiting for an io_u of its own (see sync_queue) */
	unsigned int per_io_u;
	int held_failure;
	/* recovery: the dataset being read and its directory stream */
	uint32_t rec_d;
	DIR *rec_dir;
	uint64_t rec_found;	/* objects found in this pass over rec_dir */
};

/* ---------------------------------------------------------------- options */

int mdfio_say(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_err("mdfio: %s\n", buf);
	return 1;
}

/* "value|default": a jobfile writes datasets=${MDW_D}|10 because fio turns an
 * unset variable into "" and rejects empty values. */
static const char *pick(const char *s, char *buf, size_t len)
{
	const char *bar = strchr(s, '|');

	if (!bar)
		return s;
	if (bar != s) {
		size_t n = (size_t)(bar - s);

		if (n >= len)
			n = len - 1;
		memcpy(buf, s, n);
		buf[n] = '\0';
		return buf;
	}
	return bar + 1;
}

static void pick_into(const char *s, char *out, size_t len)
{
	char buf[PATH_MAX];

	snprintf(out, len, "%s", pick(s, buf, sizeof(buf)));
}

int mdfio_parse_u64(const char *name, const char *s, uint64_t min,
		    uint64_t max, uint64_t *out)
{
	char buf[256], *end;
	const char *v = pick(s, buf, sizeof(buf));
	unsigned long long x;

	errno = 0;
	x = strtoull(v, &end, 10);
	if (!*v || *v == '-' || *end || errno || x < min || x > max)
		return mdfio_say("%s=%s: expected an integer from %" PRIu64
				 " to %" PRIu64, name, s, min, max);
	*out = x;
	return 0;
}

static struct mdfio_options *opts_of(void *data)
{
	return data;
}

#define U64_OPT(fn, name, field, lo, hi)				\
static int fn(void *data, const char *s)				\
{									\
	uint64_t v;							\
	if (mdfio_parse_u64(name, s, lo, hi, &v))			\
		return 1;						\
	opts_of(data)->field = v;					\
	return 0;							\
}

MDFIO_U32_OPT(cb_datasets, "datasets", struct mdfio_options, datasets, 1, UINT32_MAX)
MDFIO_U32_OPT(cb_rank_offset, "rank_offset", struct mdfio_options, rank_offset, 0, UINT32_MAX)
MDFIO_U32_OPT(cb_read_only, "read_only", struct mdfio_options, read_only, 0, 1)
MDFIO_U32_OPT(cb_verify_read, "verify_read", struct mdfio_options, verify_read, 0, 1)
MDFIO_U32_OPT(cb_repeat, "repeat", struct mdfio_options, repeat, 1, 1000000)
MDFIO_U32_OPT(cb_repeats, "repeats", struct mdfio_options, repeats, 1, 1000000)
U64_OPT(cb_precreate, "precreate_per_set", precreate, 1, (uint64_t)1 << 40)
U64_OPT(cb_steps, "steps_per_set", steps, 1, (uint64_t)1 << 40)
U64_OPT(cb_start_index, "start_index", start_index, 0, (uint64_t)1 << 60)

static int cb_phase(void *data, const char *s)
{
	struct thread_data *td = *(struct thread_data **)data;
	char buf[64];
	const char *v = pick(s, buf, sizeof(buf));
	enum mdfio_phase ph;

	for (ph = MDFIO_PRECREATE; ph <= MDFIO_CLEANUP; ph++) {
		if (strcmp(v, mdfio_phase_name(ph)))
			continue;
		opts_of(data)->phase = ph + 1;
		if (!td)
			return 0;
		/* the phase owns the headline direction (fio parses engine
		 * options last, so a contradicting rw= is already known) */
		if (fio_option_is_set(&td->o, td_ddir) && td->o.td_ddir != phase_io[ph].rw)
			return mdfio_say("phase=%s reports its count as rw=%s; remove the rw= option",
					 v, phase_io[ph].rw_name);
		td->o.td_ddir = phase_io[ph].rw;
		return 0;
	}
	return mdfio_say("phase=%s: expected precreate, benchmark or cleanup", s);
}

/* ranks, object_size and root set fio's own numjobs, bs and directory; they
 * exist only so that a jobfile can give those a default (see pick()). */
static int cb_ranks(void *data, const char *s)
{
	struct thread_data *td = *(struct thread_data **)data;
	uint64_t v;

	if (mdfio_parse_u64("ranks", s, 1, 1u << 20, &v))
		return 1;
	if (td)
		td->o.numjobs = (unsigned int)v;
	return 0;
}

static int cb_object_size(void *data, const char *s)
{
	struct thread_data *td = *(struct thread_data **)data;
	uint64_t v;
	int d;

	if (mdfio_parse_u64("object_size", s, 1, 1u << 30, &v))
		return 1;
	for (d = 0; td && d < DDIR_RWDIR_CNT; d++)
		td->o.bs[d] = td->o.min_bs[d] = td->o.max_bs[d] = v;
	return 0;
}

static int cb_root(void *data, const char *s)
{
	struct thread_data *td = *(struct thread_data **)data;
	char buf[PATH_MAX];
	const char *v = pick(s, buf, sizeof(buf));

	if (!*v)
		return mdfio_say("root=%s: expected a directory", s);
	if (td) {
		free(td->o.directory);
		td->o.directory = strdup(v);
	}
	return 0;
}

static const struct fio_option core_options[] = {
	MDFIO_OPT("phase", cb_phase, NULL,
	    "md-workbench phase: precreate, benchmark or cleanup (required)"),
	MDFIO_OPT("datasets", cb_datasets, "10",
	    "Datasets (directories) per rank, md-workbench -D"),
	MDFIO_OPT("precreate_per_set", cb_precreate, "3000",
	    "Objects per dataset, the FIFO depth, md-workbench -P"),
	MDFIO_OPT("steps_per_set", cb_steps, "1000",
	    "Benchmark steps per dataset per run, md-workbench -I"),
	MDFIO_OPT("rank_offset", cb_rank_offset, "1",
	    "Rank distance to the datasets read and written, md-workbench -O"),
	MDFIO_OPT("start_index", cb_start_index, "0",
	    "Index of the first object, md-workbench --start-item"),
	MDFIO_OPT("read_only", cb_read_only, "0",
	    "1: benchmark only stats and reads, md-workbench --read-only"),
	MDFIO_OPT("verify_read", cb_verify_read, "0",
	    "1: check owner rank, dataset and index of every object read, md-workbench -X"),
	MDFIO_OPT("repeat", cb_repeat, "1",
	    "Which benchmark repeat this job section is (1, 2, ...)"),
	MDFIO_OPT("repeats", cb_repeats, "1",
	    "Benchmark repeats wanted, md-workbench -R: a section whose repeat exceeds it does nothing"),
	{
		.name = "latency_log", .lname = "latency_log",
		.type = FIO_OPT_STR_STORE,
		.off1 = offsetof(struct mdfio_options, latency_log),
		.help = "Prefix of per-operation latency CSVs, md-workbench -L (value|default; empty: off)",
		.category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID,
	},
	MDFIO_OPT("ranks", cb_ranks, NULL,
	    "Sets numjobs (the number of ranks); accepts value|default"),
	MDFIO_OPT("object_size", cb_object_size, NULL,
	    "Sets bs (bytes per object, md-workbench -S); accepts value|default"),
	MDFIO_OPT("root", cb_root, NULL,
	    "Sets directory (the namespace root, md-workbench -o); accepts value|default"),
	{ .name = NULL },
};

/* ----------------------------------------------------------------- checks */

static int check_fio_options(struct thread_data *td, enum mdfio_phase ph)
{
	struct thread_options *o = &td->o;
	enum fio_ddir dd = phase_io[ph].ddir;

	/* a job section's rw= can contradict a phase= from [global] */
	if (o->td_ddir != phase_io[ph].rw)
		return mdfio_say("phase=%s needs rw=%s (its count is reported in fio's '%s' section); leave rw unset",
				 mdfio_phase_name(ph), phase_io[ph].rw_name, phase_io[ph].rw_name);
	if (o->min_bs[dd] != o->max_bs[dd] || o->bs[dd] != o->min_bs[dd])
		return mdfio_say("bs must be one fixed size (the object size), not a range");
	/* fio has set size itself by now (setup runs first), so ask the
	 * parser whether the user gave it */
	if (fio_option_is_set(o, size) || fio_option_is_set(o, io_size))
		return mdfio_say("size/io_size must not be set: the phase decides how many objects and steps there are");
	if (o->timeout || o->time_based)
		return mdfio_say("runtime/time_based must not be set: a phase stopped early breaks the FIFO (md-workbench -w without -W); lower steps_per_set instead");
	if (o->number_ios)
		return mdfio_say("number_ios must not be set: use steps_per_set");
	if (o->loops > 1)
		return mdfio_say("loops must be 1: repeat the benchmark as separate job sections separated by stonewall");
	if (o->nr_files > 1)
		return mdfio_say("nrfiles must be 1: objects are not fio files");
	if (!o->directory || !*o->directory)
		return mdfio_say("directory= (or root=) is required: the namespace root");
	if (strchr(o->directory, ':'))
		return mdfio_say("directory=%s: one directory only (no ':' list)",
				 o->directory);
	return 0;
}

static uint64_t phase_units(const struct mdfio_options *eo)
{
	uint64_t per_set = eo->phase == MDFIO_BENCHMARK + 1 ? eo->steps
							   : eo->precreate;
	return per_set * eo->datasets;
}

/* ------------------------------------------------------------ status file */

/* The job a clone was made from: fio gives clones numjobs=1 and places them
 * right after their parent (subjob 0), which keeps the real numjobs. */
static struct thread_data *job_parent(struct thread_data *td)
{
	struct thread_data *t, *parent = td;
	int i;

	if (!td->subjob_number)
		return td;
	for_each_td(t, i) {
		if (t->thread_number > td->thread_number)
			break;
		if (!t->subjob_number)
			parent = t;
	}
	return parent;
}

/* Names the job (not the clone): the fio process, its start time, and the
 * job's first thread. Clones of one job share it; a later job or another fio
 * invocation gets a different one. */
static void make_run_id(struct thread_data *td, char *out)
{
	pid_t fio = td->o.use_thread ? getpid() : getppid();
	unsigned long long start = 0;
	char path[64], buf[1024], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)fio);
	f = fopen(path, "re");
	if (f) {
		if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')'))) {
			int i;

			for (i = 0; p && i < 20; i++)
				p = strchr(p + 1, ' ');
			if (p)
				start = strtoull(p + 1, NULL, 10);
		}
		fclose(f);
	}
	snprintf(out, MDFIO_RUN_LEN, "%d.%llu.%u", (int)fio, start,
		 job_parent(td)->thread_number);
}

/* Returns 0 if no dataset name of any rank exists yet, else writes the
 * first existing path into p. */
static int namespace_clear(struct mdfio_job *j, char *p, size_t len)
{
	struct stat sb;
	uint32_t r, d;

	for (r = 0; r < j->ranks; r++) {
		for (d = 0; d < j->datasets; d++) {
			mdfio_dataset_path(p, len, j->root, r, d);
			if (!lstat(p, &sb) || errno != ENOENT)
				return 1;
		}
	}
	return 0;
}

static void fill_status(struct mdfio_job *j, struct mdfio_status *st)
{
	uint32_t r;

	st->ranks = j->ranks;
	st->datasets = j->datasets;
	st->precreate = j->precreate;
	st->object_size = j->size;
	st->start = j->start;
	for (r = 0; r < j->ranks; r++) {
		st->rank[r].state = MDFIO_RS_PRECREATING;
		st->rank[r].pos = j->start;
		snprintf(st->rank[r].run, MDFIO_RUN_LEN, "%s", j->run);
	}
}

static int status_mismatch(struct mdfio_job *j, const struct mdfio_status *st)
{
	if (st->ranks != j->ranks)
		return mdfio_say("%s was made with %" PRIu32 " ranks; this job has numjobs=%" PRIu32,
				 j->status_path, st->ranks, j->ranks);
	if (st->datasets != j->datasets)
		return mdfio_say("%s was made with datasets=%" PRIu32 "; this job has datasets=%" PRIu32,
				 j->status_path, st->datasets, j->datasets);
	if (st->precreate != j->precreate)
		return mdfio_say("%s was made with precreate_per_set=%" PRIu64 "; this job has %" PRIu64,
				 j->status_path, st->precreate, j->precreate);
	if (st->object_size != j->size)
		return mdfio_say("%s was made with object size (bs) %" PRIu64 "; this job has bs=%zu",
				 j->status_path, st->object_size, j->size);
	return 0;
}

/* ------------------------------------------------------------ latency log */

/* md-workbench's file name of an operation in a phase; NULL: not logged. */
static const char *log_name(const struct mdfio_job *j, enum mdfio_op op)
{
	if (j->phase == MDFIO_PRECREATE)
		return op == MDFIO_OP_CREATE ? "precreate" : NULL;
	if (j->phase == MDFIO_CLEANUP)
		return op == MDFIO_OP_DELETE ? "cleanup" : NULL;
	if (j->read_only && (op == MDFIO_OP_CREATE || op == MDFIO_OP_DELETE))
		return NULL;
	return op_name[op];
}

/* Rank r's log of an operation of this phase; 0 if the name does not fit. */
static size_t rank_log_path(const struct mdfio_job *j, const char *name,
			    uint32_t rank, char *buf, size_t len)
{
	char suffix[32];

	snprintf(suffix, sizeof(suffix), "-rank%" PRIu32, rank);
	return mdfio_oplog_path(buf, len, j->log_prefix, j->log_iter, name, suffix);
}

/* Closes the logs; with discard (the phase was refused) also removes the
 * files this rank just created. */
static void close_logs(struct mdfio_job *j, int discard)
{
	char path[PATH_MAX];
	int op;

	for (op = 0; op < MDFIO_OP_NR; op++) {
		if (!j->log[op])
			continue;
		if (fclose(j->log[op]))
			mdfio_say("latency log of %s: %s", op_name[op], strerror(errno));
		j->log[op] = NULL;
		if (discard && rank_log_path(j, log_name(j, (enum mdfio_op)op), j->rank,
					     path, sizeof(path)))
			unlink(path);
	}
}

static int open_logs(struct mdfio_job *j, unsigned int repeat)
{
	char path[PATH_MAX];
	int op;

	if (!j->log_prefix[0])
		return 0;
	/* md-workbench's iteration: 0 for precreate, then one per benchmark
	 * run; cleanup gets the next */
	j->log_iter = j->phase == MDFIO_PRECREATE ? 0 : (j->pos - j->start) / j->steps;
	if (j->phase == MDFIO_BENCHMARK && j->read_only)
		j->log_iter += repeat - 1;
	for (op = 0; op < MDFIO_OP_NR; op++) {
		const char *name = log_name(j, (enum mdfio_op)op);

		if (!name)
			continue;
		if (!rank_log_path(j, name, j->rank, path, sizeof(path))) {
			close_logs(j, 1);
			return mdfio_say("latency_log=%s: path too long", j->log_prefix);
		}
		j->log[op] = mdfio_oplog_create(path);
		if (!j->log[op]) {
			int err = errno;

			close_logs(j, 1);
			return mdfio_say("latency_log: cannot create %s: %s%s", path, strerror(err),
					 err == EEXIST ? " (mdfio never replaces a file: remove it or use another prefix)" : "");
		}
	}
	return 0;
}

/* The last rank out merges every rank's log of each operation into the
 * "-all" file and links rank 0's under md-workbench's plain name. */
static void merge_logs(struct mdfio_job *j)
{
	char out[PATH_MAX], plain[PATH_MAX];
	char **in = calloc(j->ranks, sizeof(char *));
	char *paths = malloc((size_t)j->ranks * PATH_MAX);
	uint32_t r;
	int op, err;

	for (r = 0; in && paths && r < j->ranks; r++)
		in[r] = paths + (size_t)r * PATH_MAX;
	for (op = 0; in && paths && op < MDFIO_OP_NR; op++) {
		const char *name = log_name(j, (enum mdfio_op)op);

		if (!name)
			continue;
		for (r = 0; r < j->ranks; r++)
			rank_log_path(j, name, r, in[r], PATH_MAX);
		mdfio_oplog_path(out, sizeof(out), j->log_prefix, j->log_iter, name, "-all");
		err = mdfio_oplog_merge(out, in, j->ranks);
		if (err)
			mdfio_say("latency log %s: %s", out, strerror(err));
		mdfio_oplog_path(plain, sizeof(plain), j->log_prefix, j->log_iter, name, "");
		if (link(in[0], plain))
			mdfio_say("latency log %s: %s", plain, strerror(errno));
	}
	if (!in || !paths)
		mdfio_say("out of memory merging the latency logs");
	free(paths);
	free(in);
}

/* Enters the phase: checks the status and marks this rank as working. */
static int enter_phase(struct mdfio_job *j, unsigned int repeat)
{
	static const enum mdfio_rank_state working[] = {
		MDFIO_RS_PRECREATING, MDFIO_RS_BENCHMARKING, MDFIO_RS_CLEANING };
	struct mdfio_status st = { 0 };
	char msg[512];
	int fd, err, have, ret = 1;

	/* a precreate's logs are named before the status exists: a log that
	 * cannot be made then leaves nothing behind */
	if (j->phase == MDFIO_PRECREATE && open_logs(j, repeat))
		return 1;
	for (;;) {
		err = mdfio_status_lock(j->status_path, &fd);
		if (err != ENOENT || j->phase != MDFIO_PRECREATE)
			break;
		/* first rank of a new namespace: check, then create */
		if (namespace_clear(j, j->path, sizeof(j->path))) {
			/* a sibling may have created the status (and its
			 * datasets) since we looked: look again */
			if (!access(j->status_path, F_OK))
				continue;
			close_logs(j, 1);
			return mdfio_say("%s already exists: refusing to precreate over it (nothing was touched)",
					 j->path);
		}
		st.rank = calloc(j->ranks, sizeof(*st.rank));
		if (!st.rank) {
			close_logs(j, 1);
			return mdfio_say("out of memory");
		}
		fill_status(j, &st);
		err = mdfio_status_create(j->status_path, &st);
		mdfio_status_free(&st);
		if (err && err != EEXIST) {
			close_logs(j, 1);
			return mdfio_say("cannot create %s: %s", j->status_path,
					 strerror(err));
		}
	}
	have = !err;
	if (err && err != ENOENT)
		return mdfio_say("cannot open %s: %s", j->status_path, strerror(err));
	if (have && mdfio_status_read(fd, &st, msg, sizeof(msg))) {
		mdfio_say("%s: %s; refusing to touch this directory", j->status_path, msg);
		goto out;
	}
	if (have && status_mismatch(j, &st))
		goto out;
	if (mdfio_status_enter(have ? &st : NULL, j->phase, j->rank, j->run,
			       j->read_only ? 0 : j->steps, &j->pos, &j->recover,
			       msg, sizeof(msg))) {
		mdfio_say("%s: %s", j->root, msg);
		goto out;
	}
	/* the other phases' log names need the position; a log that cannot
	 * be made leaves the status as it was */
	if (j->phase != MDFIO_PRECREATE && open_logs(j, repeat))
		goto out;
	st.rank[j->rank].state = working[j->phase];
	st.rank[j->rank].pos = j->pos;
	snprintf(st.rank[j->rank].run, MDFIO_RUN_LEN, "%s", j->run);
	err = mdfio_status_write(fd, &st);
	if (err) {
		mdfio_say("cannot update %s: %s", j->status_path, strerror(err));
		goto out;
	}
	j->entered = 1;
	ret = 0;
out:
	if (ret)
		close_logs(j, 1);
	mdfio_status_free(&st);
	if (have)
		mdfio_status_unlock(fd);
	return ret;
}

/* Leaves the phase: records the new position; the last rank out of a
 * cleanup that removed everything also removes the status file. */
static int leave_phase(struct mdfio_job *j, int complete)
{
	struct mdfio_status st;
	struct mdfio_rank_rec *me;
	char msg[512];
	uint32_t r, cleaned = 0;
	int fd, err, last;

	err = mdfio_status_lock(j->status_path, &fd);
	if (err) {
		mdfio_say("cannot reopen %s: %s", j->status_path, strerror(err));
		return 0;
	}
	if (mdfio_status_read(fd, &st, msg, sizeof(msg))) {
		mdfio_say("%s: %s", j->status_path, msg);
		mdfio_status_unlock(fd);
		return 0;
	}
	if (strcmp(st.left_run, j->run)) {
		st.left = 0;
		snprintf(st.left_run, MDFIO_RUN_LEN, "%s", j->run);
	}
	last = ++st.left == st.ranks;
	me = &st.rank[j->rank];
	if (complete) {
		switch (j->phase) {
		case MDFIO_PRECREATE:
			me->state = MDFIO_RS_READY;
			break;
		case MDFIO_BENCHMARK:
			me->state = MDFIO_RS_READY;
			me->pos = j->pos + (j->read_only ? 0 : j->steps);
			break;
		case MDFIO_CLEANUP:
			me->state = MDFIO_RS_CLEANED;
			break;
		}
	}
	/* every clone of this job passes here; one cleaned by an earlier job
	 * may still be about to enter and read the status */
	for (r = 0; r < st.ranks; r++)
		cleaned += st.rank[r].state == MDFIO_RS_CLEANED &&
			   !strcmp(st.rank[r].run, j->run);
	if (cleaned == st.ranks)
		err = unlink(j->status_path) ? errno : 0;
	else
		err = mdfio_status_write(fd, &st);
	if (err)
		mdfio_say("cannot update %s: %s", j->status_path, strerror(err));
	mdfio_status_free(&st);
	mdfio_status_unlock(fd);
	return last;
}

/* ------------------------------------------------------------------ setup */

static int build_paths(struct mdfio_job *j)
{
	size_t stride = strlen(j->root) + 48;	/* see mdfio_dataset_path */
	uint32_t d, k;

	if (stride + 27 > sizeof(j->path))	/* + "/file-<20 digits>" */
		return mdfio_say("directory=%s: path too long", j->root);
	j->own = calloc((size_t)j->datasets * 3, sizeof(*j->own));
	j->dset_paths = malloc((size_t)j->datasets * 3 * stride);
	if (!j->own || !j->dset_paths)
		return mdfio_say("out of memory for %" PRIu32 " datasets", j->datasets);
	j->rd = j->own + j->datasets;
	j->wr = j->rd + j->datasets;
	for (d = 0; d < j->datasets; d++) {
		j->own[d].rank = j->rank;
		j->rd[d].rank = mdfio_read_rank(j->rank, d, j->offset, j->ranks);
		j->wr[d].rank = mdfio_write_rank(j->rank, d, j->offset, j->ranks);
	}
	for (k = 0; k < j->datasets * 3; k++) {
		struct dataset *ds = &j->own[k];

		ds->path = j->dset_paths + (size_t)k * stride;
		ds->len = mdfio_dataset_path(ds->path, stride, j->root, ds->rank,
					     k % j->datasets);
	}
	return 0;
}

/* Objects left in our datasets, for a cleanup that cannot trust the status. */
static uint64_t count_objects(struct mdfio_job *j)
{
	uint64_t n = 0, idx;
	uint32_t d;

	for (d = 0; d < j->datasets; d++) {
		DIR *dir = opendir(j->own[d].path);
		struct dirent *de;

		if (!dir)
			continue;
		while ((de = readdir(dir)))
			n += mdfio_parse_object_name(de->d_name, &idx);
		closedir(dir);
	}
	return n;
}

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

static int engine_setup(struct thread_data *td)
{
	struct mdfio_options *eo = td->eo;
	/* fio calls this in its main process before any job runs, so only
	 * the options are known here; init() corrects it for a recovery */
	if (!td->files || !td->o.nr_files)
		return 0;
	set_units(td, phase_units(eo));
	return 0;
}

/* Every unit in flight owns a path and a pair of object buffers; a create's
 * buffer keeps the filler and gets only its header stamped. */
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
		return mdfio_say("out of memory for iodepth=%u and bs=%zu", n, j->size);
	j->nr_units = n;
	for (i = 0; i < n; i++) {
		struct mdfio_unit *u = &j->unit[n - 1 - i];

		u->index = n - 1 - i;
		u->buf_len = len;
		u->rbuf = j->bufs + 2 * len * u->index;
		u->wbuf = (uint8_t *)u->rbuf + len;
		memset(u->rbuf, 0, 2 * len);
		memcpy(u->wbuf, j->ref, j->size);
		u->next_free = j->free_unit;
		j->free_unit = u;
	}
	return 0;
}

static const struct mdfio_backend *backend;

/* Units a synchronous io_u carries where fio counts several I/Os per io_u
 * (fio_io_u_nr_ios: a proposed fio change, fio-patch/io_u-nr-ios.patch).
 * fio's own cycle is about 1230 instructions per io_u; 16 units take 1155
 * off every cleanup unit (bench/run --only fio-patch). */
#define MDFIO_UNITS_PER_IO_U 16
static unsigned int units_per_io_u = 1;

static int engine_init(struct thread_data *td)
{
	const struct mdfio_backend *be = backend;
	struct mdfio_options *eo = td->eo;
	struct mdfio_job *j;
	struct stat sb;

	if (!eo->phase)
		return mdfio_say("phase= is required: precreate, benchmark or cleanup");
	if (check_fio_options(td, (enum mdfio_phase)(eo->phase - 1)))
		return 1;
	/* with I <= P every object a step reads existed before the phase
	 * began, whatever the iodepth; beyond, a step reads what another
	 * rank creates in the same phase, which no engine can order */
	if (eo->steps > eo->precreate && eo->phase == MDFIO_BENCHMARK + 1)
		return mdfio_say("steps_per_set=%llu exceeds precreate_per_set=%llu: a step would read an object another rank creates in the same run",
				 eo->steps, eo->precreate);
	if (td->o.odirect && !be->direct)
		return mdfio_say("direct=1: %s does not open objects with O_DIRECT; use mdfio-aio",
				 be->name);
	if (stat(td->o.directory, &sb) || !S_ISDIR(sb.st_mode))
		return mdfio_say("directory=%s: not an existing directory (create it; mdfio creates only its own datasets inside)",
				 td->o.directory);

	j = calloc(1, sizeof(*j));
	if (!j)
		return mdfio_say("out of memory");
	td->io_ops_data = j;
	if (eo->phase == MDFIO_BENCHMARK + 1 && eo->repeat > eo->repeats) {
		/* a jobfile cannot vary its sections with the environment, so
		 * spare repeat sections stand down: no step, no status change */
		td->done = 1;
		return 0;
	}
	j->be = be;
	j->phase = (enum mdfio_phase)(eo->phase - 1);
	j->rank = td->subjob_number;
	j->ranks = job_parent(td)->o.numjobs;
	if (j->rank >= j->ranks)
		return mdfio_say("cannot tell this clone's rank (%" PRIu32 " of %" PRIu32 ")",
				 j->rank, j->ranks);
	j->datasets = eo->datasets;
	j->offset = eo->rank_offset;
	j->precreate = eo->precreate;
	j->steps = eo->steps;
	j->start = eo->start_index;
	j->size = td->o.bs[phase_io[j->phase].ddir];
	j->read_only = eo->read_only;
	j->verify = eo->verify_read;
	snprintf(j->root, sizeof(j->root), "%s", td->o.directory);
	if ((size_t)snprintf(j->status_path, sizeof(j->status_path), "%s/%s",
			     j->root, MDFIO_STATUS_NAME) >= sizeof(j->status_path))
		return mdfio_say("directory=%s: path too long", j->root);
	make_run_id(td, j->run);
	if (build_paths(j))
		return 1;
	j->ref = malloc(j->size);
	if (!j->ref)
		return mdfio_say("out of memory for bs=%zu", j->size);
	mdfio_pattern_fill(j->ref, j->size);
	if (make_units(td, j))
		return 1;
	if (be->init && be->init(td, j->unit, j->nr_units, &j->priv))
		return 1;
	if (eo->latency_log)
		pick_into(eo->latency_log, j->log_prefix, sizeof(j->log_prefix));
	if (enter_phase(j, eo->repeat))
		return 1;
	/* md-workbench counts failed operations and goes on; the engine
	 * reports them itself and fails the job at its end */
	td->o.continue_on_error = ERROR_TYPE_ANY;
	td->ts.continue_on_error = ERROR_TYPE_ANY;
	/* fio's per-io_u clock reads (start, issue, completion) feed only the
	 * statistics FIO_NOSTATS discards; drop them as gtod_reduce does, but
	 * keep the percentiles the engine's own samples use */
	td->o.disable_lat = td->o.disable_clat = 1;
	td->o.disable_slat = td->o.disable_bw = 1;
	td->ts_cache_mask = 63;
	j->units = phase_units(eo);
	/* fio thinks after each io_u: batched units would think less */
	j->per_io_u = td->o.thinktime ? 1 : units_per_io_u;
	if (j->phase == MDFIO_CLEANUP) {
		uint32_t d;

		for (d = 0; d < j->datasets; d++)
			j->own[d].left = j->precreate;
	}
	if (j->recover) {
		uint64_t n = count_objects(j);

		log_info("mdfio: rank %" PRIu32 ": the status of %s cannot be trusted; removing the %" PRIu64 " objects found in its datasets\n",
			 j->rank, j->root, n);
		j->units = n ? n : 1;
		set_units(td, j->units);
	}
	return 0;
}

void *mdfio_priv(struct thread_data *td)
{
	return ((struct mdfio_job *)td->io_ops_data)->priv;
}

/* ------------------------------------------------------------------ units */

static void record(struct thread_data *td, struct mdfio_job *j,
		   enum mdfio_op op, uint64_t start, uint64_t end, int err,
		   const char *path)
{
	struct op_count *c = &j->op[op];
	enum fio_ddir dd = op_ddir[op];
	uint64_t ns = end - start;

	if (dd == DDIR_SYNC)
		td->ts.total_io_u[DDIR_SYNC]++;
	if (!err) {
		if (dd == DDIR_SYNC)
			add_sync_clat_sample(&td->ts, ns);
		else
			mdfio_add_clat(td, dd, ns, j->size);
		if (j->log[op])
			mdfio_oplog_row(j->log[op], start - j->log_t0, ns);
		return;
	}
	if (dd != DDIR_SYNC)
		td->ts.drop_io_u[dd]++;
	if (!c->err++) {
		c->first_errno = err;
		snprintf(c->first_path, sizeof(c->first_path), "%s", path);
	}
}

/* u's object: index idx in dataset ds (a step's stat, read and delete share
 * one, so the path is built once). */
static void aim(struct mdfio_unit *u, const struct dataset *ds, uint64_t idx)
{
	memcpy(u->path, ds->path, ds->len);
	mdfio_object_path(u->path, sizeof(u->path), ds->len, idx);
}

/* u->req = op on u's object; a create stamps the header of object idx of
 * owner's dataset first. */
static void set_req(struct mdfio_job *j, struct mdfio_unit *u, enum mdfio_op op,
		    uint32_t owner, uint64_t idx)
{
	struct mdfio_req *r = &u->req;

	r->op = op;
	r->path = u->path;
	r->size = j->size;
	r->buf = op == MDFIO_OP_READ ? u->rbuf : u->wbuf;
	r->err = 0;
	if (op == MDFIO_OP_CREATE)
		mdfio_pattern_stamp(u->wbuf, j->size, owner, u->d, idx);
}

static int make_datasets(struct thread_data *td, struct mdfio_job *j)
{
	uint32_t d;

	for (d = 0; d < j->datasets; d++) {
		if (mkdir(j->own[d].path, 0775)) {
			j->dsets_err++;
			td->ts.drop_io_u[op_ddir[MDFIO_OP_CREATE]]++;
			return mdfio_say("rank %" PRIu32 ": cannot create dataset %s: %s",
					 j->rank, j->own[d].path, strerror(errno));
		}
	}
	return 0;
}

/* Dataset errors count as errors of the object operation beside them, so
 * that fio's JSON holds every error. */
static void remove_dataset(struct thread_data *td, struct mdfio_job *j,
			   uint32_t d)
{
	int err = rmdir(j->own[d].path) ? errno : 0;

	if (!err || (err == ENOENT && j->recover))
		return;
	j->dsets_err++;
	td->ts.drop_io_u[op_ddir[MDFIO_OP_DELETE]]++;
	mdfio_say("rank %" PRIu32 ": cannot remove dataset %s: %s%s", j->rank,
		  j->own[d].path, strerror(err), err == ENOTEMPTY ?
		  " (it holds files mdfio did not expect; they were left alone)" : "");
}

/* Recovery: the next object found by reading our dataset directories into
 * j->path. 0 if there is none. Units of a recovery run one at a time (an
 * object whose delete is in flight would be listed again). */
static int next_found(struct mdfio_job *j)
{
	struct dirent *de;
	uint64_t idx;

	for (;;) {
		if (!j->rec_dir) {
			if (j->rec_d >= j->datasets)
				return 0;
			j->rec_dir = opendir(j->own[j->rec_d].path);
			if (!j->rec_dir) {
				j->rec_d++;
				continue;
			}
		}
		while ((de = readdir(j->rec_dir))) {
			if (!mdfio_parse_object_name(de->d_name, &idx))
				continue;
			j->rec_found++;
			memcpy(j->path, j->own[j->rec_d].path, j->own[j->rec_d].len);
			mdfio_object_path(j->path, sizeof(j->path), j->own[j->rec_d].len, idx);
			return 1;
		}
		/* unlinking while reading a directory may skip entries (tmpfs
		 * does): read it again until a pass finds no object */
		if (j->rec_found) {
			j->rec_found = 0;
			rewinddir(j->rec_dir);
			continue;
		}
		closedir(j->rec_dir);
		j->rec_dir = NULL;
		j->rec_d++;
	}
}

static void phase_over(struct thread_data *td, struct mdfio_job *j)
{
	if (j->phase == MDFIO_CLEANUP && j->recover) {
		uint32_t d;

		for (d = 0; d < j->datasets; d++)
			remove_dataset(td, j, d);
	}
	td->done = 1;
}

/* A recovery unit: one synchronous unlink of an object found on disk. */
static void recover_one(struct thread_data *td, struct mdfio_job *j,
			struct io_u *io_u)
{
	uint64_t t0 = mdfio_now();
	int err = ENOENT;	/* none left: the unit of an empty recovery */

	if (next_found(j)) {
		err = mdfio_sys_unlink(j->path);
		record(td, j, MDFIO_OP_DELETE, t0, mdfio_now(), err, j->path);
	}
	io_u->error = err ? EIO : 0;
	if (++j->finished == j->units)
		phase_over(td, j);
}

struct mdfio_unit *mdfio_unit_start(struct thread_data *td, struct io_u *io_u)
{
	struct mdfio_job *j = td->io_ops_data;
	struct mdfio_unit *u = j->free_unit;
	uint64_t k = j->next;

	if (k >= j->units || !u) {
		/* fio asked for more than the phase holds (or this is a spare
		 * repeat section, with none): stop it there */
		if (!j->in_flight)
			td->done = 1;
		io_u->resid = io_u->xfer_buflen;
		return NULL;
	}
	if (!k)
		j->log_t0 = mdfio_now();
	j->next++;
	if (j->recover) {
		recover_one(td, j, io_u);
		return NULL;
	}
	if (!k && j->phase == MDFIO_PRECREATE && make_datasets(td, j)) {
		/* cannot go on */
		io_u->error = EIO;
		td->done = 1;
		return NULL;
	}
	j->free_unit = u->next_free;
	j->in_flight++;
	u->io_u = io_u;
	u->result = 0;
	switch (j->phase) {
	case MDFIO_PRECREATE:
		u->d = (uint32_t)(k % j->datasets);
		u->idx = j->pos + k / j->datasets;
		aim(u, &j->own[u->d], u->idx);
		set_req(j, u, MDFIO_OP_CREATE, j->rank, u->idx);
		break;
	case MDFIO_BENCHMARK:
		/* one md-workbench step: stat, read, delete an object of
		 * readRank, create one for writeRank */
		u->d = (uint32_t)(k % j->datasets);
		u->idx = j->pos + k / j->datasets;
		aim(u, &j->rd[u->d], u->idx);
		set_req(j, u, MDFIO_OP_STAT, 0, 0);
		break;
	case MDFIO_CLEANUP:
		u->d = (uint32_t)(k / j->precreate);
		u->idx = j->pos + k % j->precreate;
		aim(u, &j->own[u->d], u->idx);
		set_req(j, u, MDFIO_OP_DELETE, 0, 0);
		break;
	}
	return u;
}

/* Ends unit u with result err (its io_u's error). */
static int unit_over(struct thread_data *td, struct mdfio_job *j,
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
		phase_over(td, j);
	return 0;
}

int mdfio_unit_next(struct thread_data *td, struct mdfio_unit *u,
		    uint64_t end_ns)
{
	struct mdfio_job *j = td->io_ops_data;
	struct mdfio_req *r = &u->req;
	int err = r->err;

	if (r->op == MDFIO_OP_READ && !err && j->verify &&
	    (u->st_size != j->size ||
	     mdfio_pattern_check(u->rbuf, j->ref, j->size, j->rd[u->d].rank, u->d, u->idx)))
		err = EBADMSG;
	record(td, j, r->op, r->t0, end_ns, err, r->path);
	if (j->phase == MDFIO_PRECREATE)
		return unit_over(td, j, u, err);
	if (j->phase == MDFIO_CLEANUP) {
		if (!--j->own[u->d].left)
			remove_dataset(td, j, u->d);
		return unit_over(td, j, u, err);
	}
	switch (r->op) {
	case MDFIO_OP_STAT:
		if (err)
			return unit_over(td, j, u, err);
		u->st_size = r->st_size;
		set_req(j, u, MDFIO_OP_READ, 0, 0);
		return 1;
	case MDFIO_OP_READ:
		/* a failed read still deletes and replaces, as md-workbench */
		u->result = err;
		if (j->read_only)
			return unit_over(td, j, u, err);
		set_req(j, u, MDFIO_OP_DELETE, 0, 0);
		return 1;
	case MDFIO_OP_DELETE:
		aim(u, &j->wr[u->d], j->precreate + u->idx);
		set_req(j, u, MDFIO_OP_CREATE, j->wr[u->d].rank, j->precreate + u->idx);
		return 1;
	default:
		return unit_over(td, j, u, u->result);
	}
}

/* One unit of a synchronous interface, request after request; its io_u's
 * error says whether it failed. 0 if mdfio_unit_start handed out none (a
 * recovery unit runs inside it). */
static int sync_unit(struct thread_data *td, struct mdfio_job *j,
		     struct io_u *io_u)
{
	struct mdfio_unit *u = mdfio_unit_start(td, io_u);

	if (!u)
		return 0;
	do {
		u->req.t0 = mdfio_now();
		u->req.err = j->be->perform(&u->req);
	} while (mdfio_unit_next(td, u, mdfio_now()));
	return 1;
}

/* A synchronous interface's queue: one unit per io_u, or where fio counts
 * them, up to j->per_io_u. A failed unit always has an io_u of its own,
 * so that fio counts exactly the failed units as errors and the bytes of
 * the others: one that fails after others is held for the next io_u. */
static enum fio_q_status sync_queue(struct thread_data *td, struct io_u *io_u)
{
	struct mdfio_job *j = td->io_ops_data;
	unsigned int n;

	if (j->held_failure) {
		j->held_failure = 0;
		io_u->error = EIO;
		td->done = j->finished == j->units;
		return FIO_Q_COMPLETED;
	}
	if (!sync_unit(td, j, io_u) || io_u->error)
		return FIO_Q_COMPLETED;
	for (n = 1; n < j->per_io_u && j->next < j->units; n++) {
		sync_unit(td, j, io_u);
		if (io_u->error) {
			/* the phase may have ended with it: fio must still
			 * come back for its io_u */
			j->held_failure = 1;
			td->done = 0;
			io_u->error = 0;
			break;
		}
	}
	if (n > 1)
		io_u->xfer_buflen = n * io_u->buflen;
	return FIO_Q_COMPLETED;
}

void mdfio_events_reset(struct thread_data *td)
{
	((struct mdfio_job *)td->io_ops_data)->nr_events = 0;
}

void mdfio_event_add(struct thread_data *td, struct io_u *io_u)
{
	struct mdfio_job *j = td->io_ops_data;

	j->events[j->nr_events++] = io_u;
}

unsigned int mdfio_events(struct thread_data *td)
{
	return ((struct mdfio_job *)td->io_ops_data)->nr_events;
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

static uint64_t report_errors(struct mdfio_job *j)
{
	uint64_t total = j->dsets_err;
	int op;

	for (op = 0; op < MDFIO_OP_NR; op++) {
		const struct op_count *c = &j->op[op];

		if (!c->err)
			continue;
		total += c->err;
		mdfio_say("rank %" PRIu32 " %s: %" PRIu64 " %s error%s (first: %s: %s)",
			  j->rank, mdfio_phase_name(j->phase), c->err, op_name[op],
			  c->err > 1 ? "s" : "", c->first_path,
			  strerror(c->first_errno));
	}
	return total;
}

static void engine_cleanup(struct thread_data *td)
{
	struct mdfio_job *j = td->io_ops_data;
	int complete;

	if (!j)
		return;
	if (j->be && j->be->exit && j->priv)
		j->be->exit(j->priv);
	if (j->rec_dir)
		closedir(j->rec_dir);
	complete = j->units && j->finished == j->units;
	close_logs(j, 0);
	if (j->entered) {
		if (!complete)
			mdfio_say("rank %" PRIu32 " stopped after %" PRIu64 " of %" PRIu64 " %s units; the namespace is marked as interrupted",
				  j->rank, j->finished, j->units, mdfio_phase_name(j->phase));
		if (leave_phase(j, complete && !(j->phase == MDFIO_CLEANUP && j->dsets_err)) &&
		    j->log_prefix[0])
			merge_logs(j);
	}
	if (report_errors(j) && !td->error)
		td_verror(td, EIO, "mdfio");
	free(j->dset_paths);
	free(j->own);
	free(j->ref);
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
	if (strcmp(running, MDFIO_FIO_VERSION)) {
		fprintf(stderr, "mdfio: %s was built for %s but this fio is %s; rebuild it against the source of this fio (meson setup -Dfio_src=...)\n",
			be->name, MDFIO_FIO_VERSION, running);
		return;
	}
	for (i = 0; core_options[i].name; i++)
		all[n++] = core_options[i];
	for (i = 0; be->options && be->options[i].name; i++) {
		if (n + 1 >= sizeof(all) / sizeof(all[0])) {
			fprintf(stderr, "mdfio: %s: more options than the core's table holds\n", be->name);
			return;
		}
		all[n++] = be->options[i];
	}
	backend = be;
	if (dlsym(RTLD_DEFAULT, "fio_io_u_nr_ios"))
		units_per_io_u = MDFIO_UNITS_PER_IO_U;
	engine = (struct ioengine_ops){
		.name = be->name,
		.version = FIO_IOOPS_VERSION,
		.flags = FIO_DISKLESSIO | FIO_NOSTATS | FIO_NOFILEHASH |
			 (be->perform ? FIO_SYNCIO : 0),
		.init = engine_init,
		.setup = engine_setup,
		.queue = be->perform ? sync_queue : be->queue,
		.commit = be->commit,
		.getevents = be->getevents,
		.event = be->getevents ? engine_event : NULL,
		.cleanup = engine_cleanup,
		.open_file = engine_open_file,
		.close_file = engine_close_file,
		.options = all,
		.option_struct_size = be->option_struct_size ? be->option_struct_size
							   : sizeof(struct mdfio_options),
	};
	*ops = &engine;
}
