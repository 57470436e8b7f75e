/* mdfio-mdtest: IOR's mdtest as a workload of mdfio. One fio job section is
 * one mdtest phase (phase=tree_create ... tree_remove); its clones are the
 * ranks, numbered across fio processes and hosts as md-workbench's ranks
 * are (lib/world.c), and they meet at the rank file's barrier
 * (lib/rankfile.c) before the phase starts, as mdtest's ranks meet at
 * MPI_Barrier. What each rank does, in which order and under which names,
 * is lib/mdtest_tree.c's; this file performs it with system calls, one
 * operation per io_u, and records each operation's latency in its slot of
 * fio's JSON and the rank's exact phase time as the slot's one slat sample
 * (docs/engines.md, "mdfio-mdtest").
 *
 * It is an engine of its own rather than a phase of the md-workbench core:
 * the core's namespace, status file and FIFO are md-workbench's, and mdtest
 * needs none of them. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fio_compat.h"
#include "job.h"
#include "optgroup.h"

#include "mdtest_tree.h"
#include "pick.h"
#include "rankfile.h"
#include "world.h"

#define EXPORT __attribute__((visibility("default")))
/* mdtest's modes: DIRMODE 0775, FILEMODE 0664 */
#define MDTEST_DIR_MODE 0775
#define MDTEST_FILE_MODE 0664
/* directories a rank holds open at once; past it, it closes them all */
#define DIR_FDS_MAX 256
#define JOIN_TIMEOUT_DEFAULT 60
#define ITERATION_MAX 999999

struct mdtest_eo {
	void *pad;		/* fio keeps its thread_data pointer here */
	unsigned int phase;	/* enum mdtest_phase + 1; 0: unset */
	char *items, *items_per_dir, *branch, *depth, *unique_dir, *leaf_only, *random_seed, *make_node, *stride;
	char *sync_file, *shared_file, *sync_after_phase, *collective;
	char *iteration, *write_bytes, *read_bytes, *hosts, *join_timeout;
};

/* One operation: what, in which directory (an index into dirs), on which
 * name (an offset into names); a rename's new name is to_name in
 * to_dir. */
struct op {
	uint32_t dir;
	uint32_t name;
	uint32_t to_dir;
	uint32_t to_name;
	enum mdtest_op kind;
};

struct dir {
	uint32_t path;		/* offset into names: relative to the root */
	int fd;			/* open, or -1 */
};

struct rank {
	struct mdtest_params p;
	struct mdtest_shape s;
	enum mdtest_phase phase;
	enum mdtest_op op;
	enum fio_ddir ddir;
	int root_fd;
	char root[PATH_MAX];
	char host[HOST_NAME_MAX + 1];
	char hosts[4096];
	struct mdfio_world world;
	struct mdfio_rankfile rf;
	int claimed;
	unsigned int join_timeout;
	uint64_t write_bytes, read_bytes;
	int make_node;		/* -k: a file is made by mknod alone */
	int sync_file;		/* -y: a file's write is followed by its fsync */
	int sync_after_phase;	/* -Y: a directory or file phase ends with sync */
	void *buf;
	/* the plan: ops in order, their directories, and the names' text */
	struct op *ops;
	uint64_t nr_ops, next, done;
	uint64_t barrier_at;	/* -c: the ranks meet before ops[barrier_at]; UINT64_MAX: never */
	struct dir *dirs;
	uint32_t nr_dirs, open_dirs;
	char *names;
	size_t names_len, names_cap;
	/* a hash of dirs[] by path, for building the plan */
	uint32_t *slot;
	uint32_t nr_slots;
	uint64_t t0;
	uint64_t errors;
	int first_err;
	char first_path[PATH_MAX];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* set while a clone repeats a check its job's first clone has said the
 * result of: one line per refusal */
static int quiet;

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	char line[2048];
	va_list ap;

	if (quiet)
		return 1;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* core/error.c's printer: a fio server sends it to its client */
	mdfio_notice("%s", line);
	return 1;
}

static int parse_u64(const char *name, const char *given, const char *def,
		     uint64_t lo, uint64_t hi, uint64_t *out)
{
	char buf[64], *end;
	const char *s = given ? mdfio_pick(given, buf, sizeof(buf)) : def;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || *end || errno || *s == '-' || *s == '+' || v < lo || v > hi)
		return fail("%s=%s: expected an integer from %" PRIu64 " to %" PRIu64,
			    name, given ? given : def, lo, hi);
	*out = v;
	return 0;
}

static int cb_phase(void *data, const char *s)
{
	struct thread_data *td = *(struct thread_data **)data;
	char buf[64];
	int ph = mdtest_phase_parse(mdfio_pick(s, buf, sizeof(buf)));
	enum mdtest_op op;

	if (ph < 0)
		return fail("phase=%s: expected tree_create, dir_create, dir_stat, dir_rename, dir_remove, file_create, file_stat, file_read, file_remove or tree_remove", s);
	((struct mdtest_eo *)data)->phase = (unsigned int)ph + 1;
	op = mdtest_phase_op[ph];
	if (td && !fio_option_is_set(&td->o, td_ddir))
		td->o.td_ddir = op == MDTEST_OP_MKDIR || op == MDTEST_OP_CREATE || op == MDTEST_OP_RENAME ? TD_DDIR_WRITE :
				op == MDTEST_OP_STAT || op == MDTEST_OP_READ ? TD_DDIR_READ : TD_DDIR_TRIM;
	return 0;
}

/* ranks and root set fio's numjobs and directory, so that a jobfile can
 * give them a default */
static int cb_ranks(void *data, const char *s)
{
	struct thread_data *td = *(struct thread_data **)data;
	uint64_t v;

	if (parse_u64("ranks", s, NULL, 1, MDFIO_MAX_RANKS, &v))
		return 1;
	if (td)
		td->o.numjobs = (unsigned int)v;
	return 0;
}

static int cb_root(void *data, const char *s)
{
	struct thread_data *td = *(struct thread_data **)data;
	char buf[PATH_MAX];
	const char *v = mdfio_pick(s, buf, sizeof(buf));

	if (!*v)
		return fail("root=%s: expected a directory", s);
	if (td) {
		free(td->o.directory);
		td->o.directory = strdup(v);
	}
	return 0;
}

#define OPT(n, field, text) {						\
	.name = n, .lname = n, .type = FIO_OPT_STR_STORE,		\
	.off1 = offsetof(struct mdtest_eo, field), .help = text,	\
	.category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID }
#define CB(n, fn, text) {						\
	.name = n, .lname = n, .type = FIO_OPT_STR_STORE, .cb = fn,	\
	.help = text, .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID }

static struct fio_option options[] = {
	CB("phase", cb_phase, "The mdtest phase this section runs: tree_create, dir_create, dir_stat, dir_rename (mdtest -U), dir_remove, file_create, file_stat, file_read, file_remove, tree_remove"),
	CB("ranks", cb_ranks, "Sets numjobs (the number of ranks); accepts value|default"),
	CB("root", cb_root, "Sets directory (mdtest -d); accepts value|default"),
	OPT("items", items, "Items per rank (mdtest -n; value|default)"),
	OPT("items_per_dir", items_per_dir, "Items per directory of the tree (mdtest -I; value|default)"),
	OPT("branching_factor", branch, "Branching factor of the tree (mdtest -b; value|default, default 1)"),
	OPT("depth", depth, "Depth of the tree (mdtest -z; value|default, default 0)"),
	OPT("unique_dir", unique_dir, "1: a tree of its own for each rank (mdtest -u; value|default)"),
	OPT("leaf_only", leaf_only, "1: items in the tree's deepest directories alone (mdtest -L; value|default)"),
	OPT("make_node", make_node, "1: a file is made by mknod alone, without open, write or close (mdtest -k; value|default)"),
	OPT("random_seed", random_seed, "Stats and reads in mdtest's random order of this seed, 0: in order (mdtest -R --random-seed; value|default)"),
	OPT("shared_file", shared_file, "1: every rank creates, stats, reads the same files, file.mdtest.shared.<i>, and rank 0 removes them; files only (mdtest -S; value|default)"),
	OPT("sync_after_phase", sync_after_phase, "1: each rank ends a directory or file phase with sync, in the phase's time (mdtest -Y; value|default)"),
	OPT("collective_creates", collective, "1: rank 0 makes and removes every rank's directories and files, each rank then opens its own files to write them (mdtest -c; value|default)"),
	OPT("sync_file", sync_file, "1: fsync each file after its write, in the create's time (mdtest -y; value|default)"),
	OPT("stride", stride, "Rank stride between phases (mdtest -N; value|default, default 0)"),
	OPT("iteration", iteration, "Which iteration this section belongs to: test-dir.<iteration>-0 (mdtest -i's count; value|default, default 0)"),
	OPT("write_bytes", write_bytes, "Bytes written to each file it creates (mdtest -w; value|default)"),
	OPT("read_bytes", read_bytes, "Bytes read from each file (mdtest -e; value|default)"),
	OPT("hosts", hosts, "Host names of the fio servers of one run, separated by ','; each takes numjobs ranks in this order (value|default)"),
	OPT("join_timeout", join_timeout, "Seconds a rank waits at the barrier for ranks no process has started (value|default, default 60)"),
	{ .name = NULL },
};

static const char *env(const char *name)
{
	return getenv(name);
}

static int find_world(struct thread_data *td, struct rank *r)
{
	struct mdtest_eo *eo = td->eo;
	char msg[512], buf[sizeof(r->hosts)];

	if (gethostname(r->host, sizeof(r->host)))
		snprintf(r->host, sizeof(r->host), "?");
	r->host[sizeof(r->host) - 1] = '\0';
	snprintf(r->hosts, sizeof(r->hosts), "%s", mdfio_pick(eo->hosts, buf, sizeof(buf)));
	if (mdfio_world_find(&r->world, mdfio_job_parent(td)->o.numjobs, r->hosts, r->host,
			     env, msg, sizeof(msg)))
		return fail("%s", msg);
	return 0;
}

static int read_options(struct thread_data *td, struct rank *r)
{
	struct mdtest_eo *eo = td->eo;
	uint64_t v;
	char msg[512];

	if (!eo->phase)
		return fail("phase= is required: tree_create, dir_create, dir_stat, dir_rename, dir_remove, file_create, file_stat, file_read, file_remove or tree_remove");
	r->phase = (enum mdtest_phase)(eo->phase - 1);
	r->op = mdtest_phase_op[r->phase];
	r->ddir = td->o.td_ddir == TD_DDIR_WRITE ? DDIR_WRITE :
		  td->o.td_ddir == TD_DDIR_READ ? DDIR_READ : DDIR_TRIM;
	if (parse_u64("items", eo->items, "0", 0, (uint64_t)1 << 40, &r->p.items) ||
	    parse_u64("items_per_dir", eo->items_per_dir, "0", 0, (uint64_t)1 << 40, &r->p.items_per_dir) ||
	    parse_u64("write_bytes", eo->write_bytes, "0", 0, (uint64_t)1 << 30, &r->write_bytes) ||
	    parse_u64("read_bytes", eo->read_bytes, "0", 0, (uint64_t)1 << 30, &r->read_bytes))
		return 1;
	if (parse_u64("branching_factor", eo->branch, "1", 1, 1u << 20, &v))
		return 1;
	r->p.branch = (uint32_t)v;
	if (parse_u64("depth", eo->depth, "0", 0, 64, &v))
		return 1;
	r->p.depth = (uint32_t)v;
	if (parse_u64("unique_dir", eo->unique_dir, "0", 0, 1, &v))
		return 1;
	r->p.unique_dir = (int)v;
	if (parse_u64("leaf_only", eo->leaf_only, "0", 0, 1, &v))
		return 1;
	r->p.leaf_only = (int)v;
	if (parse_u64("random_seed", eo->random_seed, "0", 0, INT32_MAX, &v))
		return 1;
	r->p.random_seed = (uint32_t)v;
	if (parse_u64("stride", eo->stride, "0", 0, MDFIO_MAX_RANKS, &v))
		return 1;
	r->p.stride = (uint32_t)v;
	if (parse_u64("iteration", eo->iteration, "0", 0, ITERATION_MAX, &v))
		return 1;
	r->p.iteration = (uint32_t)v;
	if (parse_u64("join_timeout", eo->join_timeout, "60", 1, 86400, &v))
		return 1;
	r->join_timeout = (unsigned int)v;
	if (parse_u64("make_node", eo->make_node, "0", 0, 1, &v))
		return 1;
	r->make_node = (int)v;
	if (parse_u64("sync_file", eo->sync_file, "0", 0, 1, &v))
		return 1;
	r->sync_file = (int)v;
	if (parse_u64("sync_after_phase", eo->sync_after_phase, "0", 0, 1, &v))
		return 1;
	/* mdtest's phase_end, which syncs, ends the directory and file
	 * phases; its tree phases have none */
	r->sync_after_phase = (int)v && r->phase != MDTEST_TREE_CREATE && r->phase != MDTEST_TREE_REMOVE;
	if (parse_u64("collective_creates", eo->collective, "0", 0, 1, &v))
		return 1;
	r->p.collective = (int)v;
	if (r->p.collective && r->make_node)
		return fail("collective_creates=1 with make_node=1: each rank would mknod a file rank 0 has made");
	if (parse_u64("shared_file", eo->shared_file, "0", 0, 1, &v))
		return 1;
	r->p.shared_file = (int)v;
	if (r->p.shared_file && (r->phase == MDTEST_DIR_CREATE || r->phase == MDTEST_DIR_STAT ||
				 r->phase == MDTEST_DIR_RENAME || r->phase == MDTEST_DIR_REMOVE))
		return fail("phase=%s with shared_file=1: mdtest -S has files only, no directory phases",
			    mdtest_phase_names[r->phase]);
	if (r->p.shared_file && r->make_node)
		return fail("shared_file=1 with make_node=1: every rank but the first would fail its mknod of a shared name");
	if (r->make_node && r->write_bytes)
		return fail("make_node=1 with write_bytes=%" PRIu64 ": a file mknod makes is not written (mdtest: -k not compatible with -w)",
			    r->write_bytes);
	if (r->phase == MDTEST_FILE_READ && r->write_bytes && r->read_bytes > r->write_bytes)
		return fail("read_bytes=%" PRIu64 " exceeds write_bytes=%" PRIu64 " (mdtest: read bytes must be smaller than write bytes)",
			    r->read_bytes, r->write_bytes);
	if (mdtest_shape_of(&r->p, &r->s, msg, sizeof(msg)))
		return fail("%s", msg);
	/* mdtest runs no rename phase, and so no phase_end, for one item */
	if (r->phase == MDTEST_DIR_RENAME && r->s.items <= 1)
		r->sync_after_phase = 0;
	return 0;
}

/* The operations rank p makes in its phase (without the plan). */
static uint64_t units_of(const struct mdtest_params *p, const struct mdtest_shape *s,
			 enum mdtest_phase ph)
{
	uint64_t per;

	switch (ph) {
	case MDTEST_TREE_CREATE:
	case MDTEST_TREE_REMOVE:
		return mdtest_makes_tree(p) ? s->loops * s->dirs_in_tree : 0;
	case MDTEST_DIR_RENAME:
		return s->loops * mdtest_renames_per_loop(s);
	case MDTEST_DIR_STAT:
	case MDTEST_FILE_STAT:
	case MDTEST_FILE_READ:
		return s->loops * (s->loops != 1 ? s->items_per_dir : s->items);
	default:
		per = s->loops * s->items_per_dir * (p->leaf_only ? s->leaves : s->dirs_in_tree);
		if (ph == MDTEST_FILE_REMOVE && !mdtest_removes_files(p))
			return 0;
		/* -c: rank 0 makes or removes every rank's items; a file
		 * create then has each rank open its own */
		if (p->collective)
			return (p->rank == 0 ? p->ranks * per : 0) + (ph == MDTEST_FILE_CREATE ? per : 0);
		return per;
	}
}

static void set_units(struct thread_data *td, uint64_t units)
{
	uint64_t bytes = (units ? units : 1) * td->o.bs[DDIR_WRITE];
	struct fio_file *f = td->files[0];

	f->real_file_size = bytes;
	f->io_size = bytes;
	f->file_offset = 0;
	td->o.size = bytes;
	td->total_io_size = bytes;
}

static int test_dirs(struct rank *r, int make);

/* fio's main process, before any job runs: the options checked once, the
 * size fio counts down, and the rank's place in fio's job description
 * (which mdfio-report reads, as it reads md-workbench's). */
static int engine_setup(struct thread_data *td)
{
	struct rank r;
	char desc[FIO_JOBDESC_SIZE];
	int d;

	if (!td->files || !td->o.nr_files)
		return 0;
	memset(&r, 0, sizeof(r));
	if (read_options(td, &r) || find_world(td, &r))
		return 1;
	r.p.ranks = r.world.total;
	r.p.rank = 0;	/* the most units any rank has: rank 0's */
	/* the fio of rank 0 refuses a tree_create over an existing test
	 * directory in every clone, before any of its jobs starts: a refusal
	 * once ranks have claimed their records could leave a rank that
	 * claims later waiting for rank 0 at the barrier (the other fio
	 * processes of a run give up after join_timeout) */
	if (r.phase == MDTEST_TREE_CREATE && r.world.base == 0) {
		int err;

		snprintf(r.root, sizeof(r.root), "%s", td->o.directory ? td->o.directory : ".");
		r.root_fd = open(r.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (r.root_fd < 0)
			return fail("directory=%s: %s", r.root,
				    errno == ENOENT || errno == ENOTDIR ? "not an existing directory" : strerror(errno));
		quiet = td->subjob_number != 0;
		err = test_dirs(&r, 0);
		quiet = 0;
		close(r.root_fd);
		if (err)
			return 1;
	}
	/* the ranks' waiter and, under a launcher, its fence and its watch:
	 * here, before fio forks any job, once the job's checks have passed
	 * (a refused job leaves no rank file) */
	if (mdfio_reserve_ranks(td, 0, 0, r.host, r.world.launcher, NULL))
		return 1;
	for (d = 0; d < DDIR_RWDIR_CNT; d++)
		td->o.bs[d] = td->o.min_bs[d] = td->o.max_bs[d] = 1;
	set_units(td, units_of(&r.p, &r.s, r.phase));
	if (!td->o.description || strncmp(td->o.description, "mdfio ", 6)) {
		snprintf(desc, sizeof(desc), "mdfio rank=%" PRIu32 " ranks=%" PRIu32 " host=%s; mdtest %s",
			 r.world.base + (uint32_t)td->subjob_number, r.world.total, r.host,
			 mdtest_phase_names[r.phase]);
		free(td->o.description);
		td->o.description = strdup(desc);
	}
	return 0;
}

/* ------------------------------------------------------------ the plan */

static int add_text(struct rank *r, const char *s, size_t n, uint32_t *off)
{
	if (r->names_len + n + 1 > r->names_cap) {
		size_t cap = r->names_cap ? 2 * r->names_cap : 1 << 16;
		char *p;

		while (cap < r->names_len + n + 1)
			cap *= 2;
		if (cap > UINT32_MAX || !(p = realloc(r->names, cap)))
			return fail("rank %" PRIu32 ": out of memory for the names of phase %s",
				    r->p.rank, mdtest_phase_names[r->phase]);
		r->names = p;
		r->names_cap = cap;
	}
	memcpy(r->names + r->names_len, s, n);
	r->names[r->names_len + n] = '\0';
	*off = (uint32_t)r->names_len;
	r->names_len += n + 1;
	return 0;
}

static uint32_t hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

static int grow_slots(struct rank *r)
{
	uint32_t n = r->nr_slots ? 2 * r->nr_slots : 1024, i;
	uint32_t *s = malloc((size_t)n * sizeof(*s));

	if (!s)
		return fail("out of memory");
	memset(s, 0xff, (size_t)n * sizeof(*s));
	for (i = 0; i < r->nr_dirs; i++) {
		const char *p = r->names + r->dirs[i].path;
		uint32_t h = hash(p, strlen(p)) & (n - 1);

		while (s[h] != UINT32_MAX)
			h = (h + 1) & (n - 1);
		s[h] = i;
	}
	free(r->slot);
	r->slot = s;
	r->nr_slots = n;
	return 0;
}

/* The index of directory path[0..n) in dirs, added if new. */
static int dir_index(struct rank *r, const char *path, size_t n, uint32_t *idx)
{
	uint32_t h;
	struct dir *d;

	if (2 * (r->nr_dirs + 1) > r->nr_slots && grow_slots(r))
		return 1;
	for (h = hash(path, n) & (r->nr_slots - 1); r->slot[h] != UINT32_MAX;
	     h = (h + 1) & (r->nr_slots - 1)) {
		const char *p = r->names + r->dirs[r->slot[h]].path;

		if (!strncmp(p, path, n) && !p[n]) {
			*idx = r->slot[h];
			return 0;
		}
	}
	d = realloc(r->dirs, (size_t)(r->nr_dirs + 1) * sizeof(*d));
	if (!d)
		return fail("out of memory");
	r->dirs = d;
	d[r->nr_dirs].fd = -1;
	if (add_text(r, path, n, &d[r->nr_dirs].path))
		return 1;
	r->slot[h] = r->nr_dirs;
	*idx = r->nr_dirs++;
	return 0;
}

static int plan_one(void *arg, enum mdtest_op op, const char *path, const char *to)
{
	struct rank *r = arg;
	const char *slash = strrchr(path, '/');
	struct op *o;

	if (op == MDTEST_OP_BARRIER) {
		r->barrier_at = r->next;
		return 0;
	}
	if (r->next >= r->nr_ops)
		return fail("rank %" PRIu32 ": the phase has more operations than counted", r->p.rank);
	o = &r->ops[r->next++];
	o->kind = op;
	if (to) {
		const char *to_slash = strrchr(to, '/');

		if (dir_index(r, to, (size_t)(to_slash - to), &o->to_dir) ||
		    add_text(r, to_slash + 1, strlen(to_slash + 1), &o->to_name))
			return 1;
	}
	return dir_index(r, path, (size_t)(slash - path), &o->dir) ||
	       add_text(r, slash + 1, strlen(slash + 1), &o->name);
}

static int make_plan(struct rank *r)
{
	int err;

	r->nr_ops = units_of(&r->p, &r->s, r->phase);
	r->ops = calloc(r->nr_ops ? r->nr_ops : 1, sizeof(*r->ops));
	if (!r->ops)
		return fail("rank %" PRIu32 ": out of memory for %" PRIu64 " operations",
			    r->p.rank, r->nr_ops);
	r->next = 0;
	r->barrier_at = UINT64_MAX;
	err = mdtest_walk(&r->p, &r->s, r->phase, plan_one, r);
	if (err < 0)
		return fail("rank %" PRIu32 ": a path of phase %s is longer than %d bytes%s",
			    r->p.rank, mdtest_phase_names[r->phase], 4095,
			    r->p.random_seed ? ", or random_seed='s order is out of memory" : "");
	if (err)
		return 1;
	if (r->next != r->nr_ops)
		return fail("rank %" PRIu32 ": %" PRIu64 " operations where %" PRIu64 " were counted",
			    r->p.rank, r->next, r->nr_ops);
	r->next = 0;
	free(r->slot);
	r->slot = NULL;
	return 0;
}

/* ------------------------------------------------------- the namespace */

/* Opens dirs[i] from the root one component at a time, never through a
 * symlink: -1 with errno if it cannot. */
static int open_dir(struct rank *r, uint32_t i)
{
	char path[PATH_MAX], *save = NULL, *c;
	int fd = r->root_fd, next;

	if (r->dirs[i].fd >= 0)
		return r->dirs[i].fd;
	if (r->open_dirs >= DIR_FDS_MAX) {
		uint32_t k;

		for (k = 0; k < r->nr_dirs; k++) {
			if (r->dirs[k].fd >= 0)
				close(r->dirs[k].fd);
			r->dirs[k].fd = -1;
		}
		r->open_dirs = 0;
	}
	snprintf(path, sizeof(path), "%s", r->names + r->dirs[i].path);
	for (c = strtok_r(path, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		next = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd != r->root_fd) {
			int e = errno;

			close(fd);
			errno = e;
		}
		if (next < 0)
			return -1;
		fd = next;
	}
	r->dirs[i].fd = fd;
	r->open_dirs++;
	return fd;
}

/* The bench's variants (bench/meson.build; never the engine fio loads):
 * each issues one of the calls IOR's POSIX backend makes where this
 * engine makes none, so that docs/benchmarks.md can measure what each
 * costs. MDFIO_BENCH_LSEEK: the lseek to offset 0 before a file's write
 * or read (IOR's transfers take an offset). */
#ifdef MDFIO_BENCH_LSEEK
static void ior_lseek(int fd)
{
	(void)lseek(fd, 0, SEEK_SET);
}
#else
static inline void ior_lseek(int fd)
{
	(void)fd;
}
#endif

/* The rest of a file create: write_bytes written (and synced with -y),
 * then closed. 0 or an errno value. */
static int write_and_close(struct rank *r, int fd)
{
	ssize_t n;
	int err = 0;

	if (r->write_bytes) {
		ior_lseek(fd);
		n = write(fd, r->buf, r->write_bytes);
		err = n < 0 ? errno : (uint64_t)n != r->write_bytes ? EIO : 0;
		/* mdtest -y: IOR's POSIX backend syncs after a write, so a
		 * file without write_bytes is not synced */
		if (!err && r->sync_file && fsync(fd))
			err = errno;
	}
	close(fd);
	return err;
}

/* One operation of mdtest, timed as mdtest times it: a file's create
 * includes its write and close, a read its open, read and close; a
 * rename's new name is to in tfd. 0 or an errno value. */
static int perform(struct rank *r, enum mdtest_op op, int dfd, const char *name, int tfd, const char *to)
{
	int fd, err = 0;
	ssize_t n;

	switch (op) {
	case MDTEST_OP_MKDIR:
		return mkdirat(dfd, name, MDTEST_DIR_MODE) ? errno : 0;
	case MDTEST_OP_RMDIR:
		return unlinkat(dfd, name, AT_REMOVEDIR) ? errno : 0;
	case MDTEST_OP_STAT: {
		struct stat sb;

		return fstatat(dfd, name, &sb, 0) ? errno : 0;
	}
	case MDTEST_OP_CREATE:
		/* mdtest -k, as IOR's POSIX backend makes it (mode 0400); it
		 * fails on an existing name, as O_EXCL below */
		if (r->make_node)
			return mknodat(dfd, name, S_IFREG | S_IRUSR, 0) ? errno : 0;
		/* O_EXCL: never writes into a file mdfio did not make. With
		 * -S every rank opens the shared name, as IOR's POSIX backend
		 * does (O_CREAT alone): the name is in a directory this
		 * workload made, and O_NOFOLLOW keeps a symlink's target out */
		fd = openat(dfd, name, O_CREAT | (r->p.shared_file ? O_NOFOLLOW : O_EXCL) | O_RDWR | O_CLOEXEC,
			    MDTEST_FILE_MODE);
		return fd < 0 ? errno : write_and_close(r, fd);
	case MDTEST_OP_TOUCH:
		/* mdtest -c: rank 0's create of a rank's file, closed empty */
		fd = openat(dfd, name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, MDTEST_FILE_MODE);
		if (fd < 0)
			return errno;
		close(fd);
		return 0;
	case MDTEST_OP_OPEN:
		/* mdtest -c: a rank opens the file rank 0 made (write only,
		 * as IOR's POSIX backend opens it), in this workload's
		 * directory, never through a symlink */
		fd = openat(dfd, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		return fd < 0 ? errno : write_and_close(r, fd);
	case MDTEST_OP_READ:
		/* O_RDWR: IOR's POSIX backend opens a file to read so */
		fd = openat(dfd, name, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return errno;
		if (r->read_bytes) {
			ior_lseek(fd);
			n = read(fd, r->buf, r->read_bytes);
			err = n < 0 ? errno : (uint64_t)n != r->read_bytes ? EIO : 0;
		}
		close(fd);
		return err;
	case MDTEST_OP_RENAME:
		/* RENAME_NOREPLACE: mdtest's rename(2) would put a directory
		 * over an empty one of the new name; this one fails instead,
		 * so that nothing it did not move is lost */
		return renameat2(dfd, name, tfd, to, RENAME_NOREPLACE) ? errno : 0;
	case MDTEST_OP_UNLINK:
		/* no stat first, as mdtest: the name is in a directory this
		 * workload made (tree_create refuses an existing one), and an
		 * unlink removes a name only: never a directory, a symlink's
		 * target or a hard link's other names */
		return unlinkat(dfd, name, 0) ? errno : 0;
	default:
		return EINVAL;
	}
}

/* The test directories: a tree_create's rank 0 makes them (mdtest makes
 * them before the timed tree create), refusing any that exists, so that
 * no later phase works in a directory mdfio did not make; any other phase
 * needs them. make: 0 only looks. */
static int test_dirs(struct rank *r, int make)
{
	char name[64];
	struct stat sb;
	uint64_t k;

	for (k = 0; k < r->s.loops; k++) {
		mdtest_test_dir(name, sizeof(name), &r->p, k);
		if (r->phase == MDTEST_TREE_CREATE) {
			if (!fstatat(r->root_fd, name, &sb, AT_SYMLINK_NOFOLLOW) || errno != ENOENT)
				return fail("%s/%s already exists: refusing to run mdtest's tree_create over it (nothing was touched)",
					    r->root, name);
			continue;
		}
		if (fstatat(r->root_fd, name, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(sb.st_mode))
			return fail("%s/%s: %s: run phase=tree_create first",
				    r->root, name, errno == ENOENT ? "missing" : "not a directory");
	}
	if (r->phase != MDTEST_TREE_CREATE || !make)
		return 0;
	for (k = 0; k < r->s.loops; k++) {
		mdtest_test_dir(name, sizeof(name), &r->p, k);
		if (mkdirat(r->root_fd, name, MDTEST_DIR_MODE))
			return fail("%s/%s: cannot make it: %s", r->root, name, strerror(errno));
	}
	return 0;
}

/* After a tree_remove, once every rank has removed its tree: rank 0
 * removes the test directories it made, as mdtest's rank 0 does. */
static void remove_test_dirs(struct rank *r)
{
	char name[64];
	uint64_t k;

	for (k = 0; k < r->s.loops; k++) {
		mdtest_test_dir(name, sizeof(name), &r->p, k);
		if (unlinkat(r->root_fd, name, AT_REMOVEDIR))
			fail("rank 0 tree_remove: cannot remove %s/%s: %s", r->root, name, strerror(errno));
	}
}

/* ------------------------------------------------------------ the job */

static int barrier(struct thread_data *td, struct rank *r, const char *step)
{
	char phase[MDFIO_RANKFILE_PHASE_LEN], msg[1024];
	uint64_t b;

	snprintf(phase, sizeof(phase), "mdtest-%" PRIu32 "-%s%s", r->p.iteration,
		 mdtest_phase_names[r->phase], step);
	r->rf.waiting = mdfio_answer_fio_waiting;
	r->rf.waiting_arg = td;
	if (mdfio_rankfile_barrier(&r->rf, phase, r->join_timeout * 1000u, &b, NULL, NULL,
				   msg, sizeof(msg)))
		return fail("%s: rank %" PRIu32 " (host %s), mdtest %s: %s%s",
			    r->root, r->p.rank, r->host, mdtest_phase_names[r->phase], msg,
			    mdfio_reservation_stopped(r->root, NULL, 0) ? "; the run stops here" : "");
	return 0;
}

static int init_rank(struct thread_data *td, struct rank *r)
{
	char msg[1024];
	uint64_t size;

	/* a rank of this fio has said why the run stopped */
	if (mdfio_reservation_stopped(td->o.directory, NULL, 0) || read_options(td, r) ||
	    find_world(td, r))
		return 1;
	r->p.rank = r->world.base + (uint32_t)td->subjob_number;
	r->p.ranks = r->world.total;
	snprintf(r->root, sizeof(r->root), "%s", td->o.directory ? td->o.directory : ".");
	r->root_fd = open(r->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r->root_fd < 0)
		return fail("directory=%s: %s", r->root,
			    errno == ENOENT || errno == ENOTDIR ? "not an existing directory" : strerror(errno));
	size = r->write_bytes > r->read_bytes ? r->write_bytes : r->read_bytes;
	if (posix_memalign(&r->buf, 4096, size ? size : 1))
		return fail("out of memory for %" PRIu64 " bytes", size);
	/* mdtest's buffer holds a pattern; the bytes are not what is timed */
	memset(r->buf, 'm', size);
	r->rf.fd = -1;
	if (mdfio_rankfile_claim_reserved(&r->rf, r->root_fd, r->p.rank, r->p.ranks,
					  mdfio_job_parent(td)->o.numjobs, r->host,
					  mdfio_reservation(td->o.directory), NULL, msg, sizeof(msg)))
		return fail("%s: %s", r->root, msg);
	r->claimed = 1;
	/* a barrier stops once nobody is left to receive the results */
	r->rf.stopped = mdfio_reservation_orphaned;
	r->rf.stopped_arg = r->root;
	/* every rank looks for the test directories, so that none waits at
	 * the barrier for one that refused */
	if (make_plan(r) || ((r->p.rank == 0 || r->phase != MDTEST_TREE_CREATE) && test_dirs(r, 1))) {
		mdfio_rankfile_abort(&r->rf, "a rank could not start its mdtest phase");
		return 1;
	}
	if (barrier(td, r, ""))
		return 1;
	set_units(td, r->nr_ops);
	td->o.continue_on_error = ERROR_TYPE_ANY;
	td->ts.continue_on_error = ERROR_TYPE_ANY;
	td->o.disable_lat = td->o.disable_clat = td->o.disable_slat = td->o.disable_bw = 1;
	if (!r->nr_ops) {
		/* mdtest -Y: a rank with nothing to do in a phase syncs too */
		if (r->sync_after_phase)
			sync();
		td->done = 1;
	}
	return 0;
}

static void phase_over(struct thread_data *td, struct rank *r)
{
	/* mdtest -Y: sync(2), which mdtest's sync command calls, in the
	 * phase's time */
	if (r->sync_after_phase)
		sync();
	/* the rank's exact phase time (mdtest's per-rank time, without its
	 * closing barrier), as the slot's one slat sample */
	mdfio_add_slat(td, r->ddir, now_ns() - r->t0);
	/* mdtest's directory read phase, which reads nothing and which
	 * mdfio has not, ends with a sync of its own after the stat
	 * phase's: made here, outside the stat's time */
	if (r->sync_after_phase && r->phase == MDTEST_DIR_STAT)
		sync();
	td->done = 1;
}

static int engine_init(struct thread_data *td)
{
	struct rank *r = calloc(1, sizeof(*r));

	if (!r)
		return fail("out of memory");
	r->root_fd = -1;
	td->io_ops_data = r;
	return init_rank(td, r);
}

static enum fio_q_status engine_queue(struct thread_data *td, struct io_u *io_u)
{
	struct rank *r = td->io_ops_data;
	struct op *o;
	uint64_t start, end;
	int dfd, tfd, err;

	if (r->next >= r->nr_ops) {
		td->done = 1;
		io_u->error = 0;
		return FIO_Q_COMPLETED;
	}
	if (r->next == r->barrier_at) {
		/* mdtest -c: every rank waits, in its phase's time, until
		 * rank 0 has made its files */
		if (!r->t0)
			r->t0 = now_ns();
		r->barrier_at = UINT64_MAX;
		if (barrier(td, r, "-c")) {
			td->done = 1;
			io_u->error = EIO;
			return FIO_Q_COMPLETED;
		}
	}
	o = &r->ops[r->next++];
	dfd = open_dir(r, o->dir);
	tfd = -1;
	if (dfd >= 0 && o->kind == MDTEST_OP_RENAME) {
		tfd = open_dir(r, o->to_dir);
		/* the second open may have closed every directory the rank
		 * held, the first's too: it opens again, with room to spare */
		if (tfd >= 0 && r->dirs[o->dir].fd < 0)
			dfd = open_dir(r, o->dir);
		if (tfd < 0)
			dfd = -1;
	}
	start = now_ns();
	if (!r->t0)
		r->t0 = start;
#ifdef MDFIO_BENCH_WHOLE_PATHS
	/* the bench's variant: the whole path in every call, made in the
	 * operation's time, as mdtest names an item (with its "//") */
	if (dfd >= 0) {
		char whole[PATH_MAX], whole_to[PATH_MAX];

		whole_to[0] = '\0';

		if (snprintf(whole, sizeof(whole), "%s/%s//%s", r->root, r->names + r->dirs[o->dir].path,
			     r->names + o->name) >= (int)sizeof(whole) ||
		    (o->kind == MDTEST_OP_RENAME &&
		     snprintf(whole_to, sizeof(whole_to), "%s/%s//%s", r->root, r->names + r->dirs[o->to_dir].path,
			      r->names + o->to_name) >= (int)sizeof(whole_to)))
			err = ENAMETOOLONG;
		else
			err = perform(r, o->kind, AT_FDCWD, whole, AT_FDCWD, whole_to);
	} else {
		err = errno;
	}
#else
	err = dfd < 0 ? errno : perform(r, o->kind, dfd, r->names + o->name, tfd, r->names + o->to_name);
#endif
	end = now_ns();
	io_u->error = 0;
	if (!err) {
		mdfio_add_clat(td, r->ddir, end - start, 1);
	} else {
		td->ts.drop_io_u[r->ddir]++;
		if (!r->errors++) {
			r->first_err = err;
			if (snprintf(r->first_path, sizeof(r->first_path), "%s/%s/%s", r->root,
				     r->names + r->dirs[o->dir].path, r->names + o->name) >=
			    (int)sizeof(r->first_path))
				memcpy(r->first_path + sizeof(r->first_path) - 4, "...", 4);
		}
		io_u->error = EIO;
	}
	if (++r->done == r->nr_ops)
		phase_over(td, r);
	return FIO_Q_COMPLETED;
}

static int engine_open_file(struct thread_data *td, struct fio_file *f)
{
	(void)td;
	(void)f;
	return 0;
}

static void engine_cleanup(struct thread_data *td)
{
	struct rank *r = td->io_ops_data;
	uint32_t k;

	if (!r) {
		mdfio_job_ended(td);
		return;
	}
	for (k = 0; k < r->nr_dirs; k++)
		if (r->dirs[k].fd >= 0)
			close(r->dirs[k].fd);
	if (r->claimed && r->done == r->nr_ops && r->phase == MDTEST_TREE_REMOVE &&
	    !barrier(td, r, "-end") && r->p.rank == 0)
		remove_test_dirs(r);
	if (r->done != r->nr_ops && r->claimed && !td->error)
		fail("rank %" PRIu32 " stopped after %" PRIu64 " of %" PRIu64 " operations of mdtest %s",
		     r->p.rank, r->done, r->nr_ops, mdtest_phase_names[r->phase]);
	if (r->errors)
		fail("rank %" PRIu32 " %s: %" PRIu64 " errors (first: %s: %s)", r->p.rank,
		     mdtest_phase_names[r->phase], r->errors, r->first_path, strerror(r->first_err));
	if ((r->errors || (r->claimed && r->done != r->nr_ops)) && !td->error)
		td_verror(td, EIO, "mdfio-mdtest");
	if (r->claimed)
		(void)mdfio_rankfile_release(&r->rf, r->root_fd, NULL, NULL);
	mdfio_job_ended(td);
	if (r->root_fd >= 0)
		close(r->root_fd);
	free(r->ops);
	free(r->dirs);
	free(r->names);
	free(r->slot);
	free(r->buf);
	free(r);
	td->io_ops_data = NULL;
}

static struct ioengine_ops engine = {
	.name = "mdfio-mdtest",
	.version = FIO_IOOPS_VERSION,
	.flags = FIO_DISKLESSIO | FIO_NOSTATS | FIO_NOFILEHASH | FIO_SYNCIO,
	.init = engine_init,
	.setup = engine_setup,
	.queue = engine_queue,
	.cleanup = engine_cleanup,
	.open_file = engine_open_file,
	.close_file = engine_open_file,
	.options = options,
	.option_struct_size = sizeof(struct mdtest_eo),
};

EXPORT void get_ioengine(struct ioengine_ops **ops);
void get_ioengine(struct ioengine_ops **ops)
{
	*ops = mdfio_loaded_by_built_fio("mdfio-mdtest") ? &engine : NULL;
}
