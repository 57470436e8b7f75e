/* mdfio-postmark: PostMark (Debian's postmark 1.53) as a workload of mdfio.
 * One fio job section is one of PostMark's phases (phase=pool,
 * transactions or delete); what it does, in which order, under which
 * names and sizes, is lib/postmark.c's sequence, one operation per io_u,
 * performed by an issue path (pm_io=): sync, here, with system calls (or C
 * stdio, as postmark's buffered mode), or uring (postmark_uring.c), with
 * iodepth in flight. A later phase replays the earlier ones without I/O
 * to reach their state. Each operation's latency goes to its slot of fio's
 * JSON (create: write, read: read, append: sync, delete: trim) and the
 * phase's exact time to the headline slot's one slat sample
 * (docs/postmark.md).
 *
 * It is an engine of its own: PostMark is one process in one directory,
 * and needs nothing of md-workbench's namespace, status file or FIFO. */
#include <dirent.h>
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
#include "optgroup.h"

#include "pick.h"
#include "postmark_job.h"
#include "sysio.h"
#include "world.h"

#define EXPORT __attribute__((visibility("default")))
/* what the pool leaves in the root beside the files: the parameters it ran
 * with, so that a later phase runs only where the pool of the same
 * parameters ran, and never in a directory mdfio did not fill */
#define MARK ".mdfio-postmark"
#define DIR_MODE 0775

static const char *const phase_names[] = { "pool", "transactions", "delete" };
struct pm_eo {
	void *pad;		/* fio keeps its thread_data pointer here */
	char *phase, *files, *transactions, *size_low, *size_high, *subdirectories;
	char *read_block, *write_block, *bias_read, *bias_create, *seed, *buffering;
	char *io, *hosts, *join_timeout;
};

/* "value|default", as every mdfio option takes it (lib/pick.h); NULL: the
 * option was not given, and its caller's default stands */
static const char *pick(const char *s, char *buf, size_t len)
{
	return s ? mdfio_pick(s, buf, len) : NULL;
}

/* A number with fio's size suffixes (k, m, g: 1024-based, as fio's
 * default kb_base), or a plain integer; lo..hi. */
static int parse_num(const char *name, const char *given, long long def, long long lo,
		     long long hi, int sizes, long long *out)
{
	char buf[64], *end;
	const char *s = pick(given, buf, sizeof(buf));
	long long v, scale = 1;

	if (!s) {
		*out = def;
		return 0;
	}
	errno = 0;
	v = strtoll(s, &end, 10);
	if (sizes && *end && end != s) {
		switch (*end | 0x20) {
		case 'k': scale = 1LL << 10; break;
		case 'm': scale = 1LL << 20; break;
		case 'g': scale = 1LL << 30; break;
		default: scale = 0;
		}
		if (scale && ((end[1] | 0x20) == 'i' || (end[1] | 0x20) == 'b'))
			end++;
		if (scale && (end[1] | 0x20) == 'b')
			end++;
		if (scale)
			end++;
	}
	if (!*s || *end || end == s || errno || !scale || v > hi / scale || v * scale < lo)
		return mdfio_error("%s=%s: expected %s from %lld to %lld", name, given,
			    sizes ? "a size (k, m, g: 1024s)" : "an integer", lo, hi);
	*out = v * scale;
	return 0;
}

static const char *const BOOLS[] = { "0", "no", "off", "false", "1", "yes", "on", "true" };

static int parse_bool(const char *name, const char *given, int def, int *out)
{
	char buf[16];
	const char *s = pick(given, buf, sizeof(buf));

	if (!s) {
		*out = def;
		return 0;
	}
	for (size_t i = 0; i < sizeof(BOOLS) / sizeof(BOOLS[0]); i++)
		if (!strcasecmp(s, BOOLS[i])) {
			*out = i >= 4;
			return 0;
		}
	return mdfio_error("%s=%s: expected true or false (1, 0, yes, no, on, off)", name, given);
}

#define OPT(n, field, text) {						\
	.name = n, .lname = n, .type = FIO_OPT_STR_STORE,		\
	.off1 = offsetof(struct pm_eo, field), .help = text,		\
	.category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID }

/* The phase sets fio's direction (its headline slot) while fio parses the
 * section, before fio checks the job; rw= given by hand is left. */
static int cb_phase(void *data, const char *s)
{
	struct thread_data *td = *(struct thread_data **)data;
	char buf[64];
	const char *ph = pick(s, buf, sizeof(buf));

	if (!td || fio_option_is_set(&td->o, td_ddir))
		return 0;
	td->o.td_ddir = !strcmp(ph, "pool") ? TD_DDIR_WRITE :
			!strcmp(ph, "transactions") ? TD_DDIR_READ : TD_DDIR_TRIM;
	return 0;
}

/* root sets fio's directory, so that a jobfile can give it a default */
static int cb_root(void *data, const char *s)
{
	struct thread_data *td = *(struct thread_data **)data;
	char buf[PATH_MAX];
	const char *v = pick(s, buf, sizeof(buf));

	if (!*v)
		return mdfio_error("root=%s: expected a directory", s);
	if (td) {
		free(td->o.directory);
		td->o.directory = strdup(v);
	}
	return 0;
}

/* pm_iodepth sets fio's iodepth, so that a jobfile can give it a default */
static int cb_iodepth(void *data, const char *s)
{
	struct thread_data *td = *(struct thread_data **)data;
	long long v;

	if (parse_num("pm_iodepth", s, 1, 1, 65536, 0, &v))
		return 1;
	if (td)
		td->o.iodepth = (unsigned int)v;
	return 0;
}

static struct fio_option options[] = {
	{ .name = "root", .lname = "root", .type = FIO_OPT_STR_STORE, .cb = cb_root,
	  .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID,
	  .help = "Sets directory (postmark: set location); accepts value|default" },
	{ .name = "phase", .lname = "phase", .type = FIO_OPT_STR_STORE, .cb = cb_phase,
	  .off1 = offsetof(struct pm_eo, phase), .category = FIO_OPT_C_ENGINE,
	  .group = FIO_OPT_G_INVALID,
	  .help = "PostMark's phase this section runs: pool, transactions or delete" },
	OPT("pm_files", files, "Files in the pool (postmark: set number; value|default, default 500)"),
	OPT("pm_transactions", transactions, "Transactions (set transactions; default 500)"),
	OPT("pm_size_low", size_low, "Smallest file size (set size L H; default 500)"),
	OPT("pm_size_high", size_high, "Files are below this size, or all pm_size_low if equal (default 10000)"),
	OPT("pm_subdirectories", subdirectories, "Subdirectories s0.. the files spread over (set subdirectories; default 0)"),
	OPT("pm_read_block", read_block, "Bytes of each read call (set read; default 512)"),
	OPT("pm_write_block", write_block, "Bytes of each write call (set write; default 512)"),
	OPT("pm_bias_read", bias_read, "Tenths of transactions that read rather than append; -1: neither (set bias read; default 5)"),
	OPT("pm_bias_create", bias_create, "Tenths of transactions that create rather than delete; -1: neither (set bias create; default 5)"),
	OPT("pm_seed", seed, "The generator's seed (set seed; default 42)"),
	OPT("pm_buffering", buffering, "true: C stdio, as postmark's default; false: plain read and write (set buffering; default true)"),
	{ .name = "pm_iodepth", .lname = "pm_iodepth", .type = FIO_OPT_STR_STORE, .cb = cb_iodepth,
	  .category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID,
	  .help = "Sets iodepth: operations in flight with pm_io=uring; accepts value|default" },
	OPT("pm_io", io, "How operations are issued: sync (one at a time, as postmark) or uring (io_uring, iodepth in flight; needs pm_buffering=false)"),
	OPT("hosts", hosts, "Host names of the fio servers of one run, ','-separated: each runs its own PostMark in <directory>/h<index> with pm_seed + index"),
	OPT("join_timeout", join_timeout, "With hosts=: seconds a host waits at a phase's start for hosts no fio has started (default 60)"),
	{ .name = NULL },
};

static const struct pm_io_ops pm_io_sync;
static const struct pm_io_ops *const io_paths[] = { &pm_io_sync, &pm_io_uring };

static int read_io(const struct pm_eo *eo, struct pm_job *j)
{
	char buf[16];
	const char *s = pick(eo->io, buf, sizeof(buf));
	size_t i;

	j->io = io_paths[0];
	for (i = 0; s && i < sizeof(io_paths) / sizeof(io_paths[0]); i++)
		if (!strcmp(s, io_paths[i]->name))
			j->io = io_paths[i];
	if (s && strcmp(s, j->io->name))
		return mdfio_error("pm_io=%s: expected sync or uring", eo->io);
	/* stdio's buffer decides when a system call is made, one at a time
	 * in the caller's thread: nothing of it can be in flight on a ring */
	if (j->io != &pm_io_sync && j->p.buffered)
		return mdfio_error("pm_io=%s: expected pm_buffering=false (C stdio, postmark's buffered mode, is synchronous)",
			       j->io->name);
	return 0;
}

static int read_options(struct thread_data *td, struct pm_job *j)
{
	struct pm_eo *eo = td->eo;
	struct mdfio_pm_params *p = &j->p;
	const char *why, *ph;
	char buf[64];
	long long v[11];
	size_t i;

	ph = pick(eo->phase, buf, sizeof(buf));
	for (i = 0; ph && i < 3 && strcmp(ph, phase_names[i]); i++)
		;
	if (!ph || i == 3)
		return mdfio_error("phase=%s: expected pool, transactions or delete", ph ? eo->phase : "");
	j->phase = (enum phase)i;
	*p = (struct mdfio_pm_params)MDFIO_PM_DEFAULTS;
	if (parse_num("pm_files", eo->files, p->number, 1, MDFIO_PM_MAX, 0, &v[0]) ||
	    parse_num("pm_transactions", eo->transactions, p->transactions, 1, INT32_MAX, 0, &v[1]) ||
	    parse_num("pm_size_low", eo->size_low, p->size_low, 1, MDFIO_PM_MAX, 1, &v[2]) ||
	    parse_num("pm_size_high", eo->size_high, p->size_high, 1, MDFIO_PM_MAX, 1, &v[3]) ||
	    parse_num("pm_subdirectories", eo->subdirectories, 0, 0, 1 << 20, 0, &v[4]) ||
	    parse_num("pm_read_block", eo->read_block, p->read_block, 1, INT32_MAX, 1, &v[5]) ||
	    parse_num("pm_write_block", eo->write_block, p->write_block, 1, INT32_MAX, 1, &v[6]) ||
	    parse_num("pm_bias_read", eo->bias_read, p->bias_read, -1, 10, 0, &v[7]) ||
	    parse_num("pm_bias_create", eo->bias_create, p->bias_create, -1, 10, 0, &v[8]) ||
	    parse_num("pm_seed", eo->seed, p->seed, 1, INT32_MAX, 0, &v[9]) ||
	    parse_bool("pm_buffering", eo->buffering, 1, &p->buffered))
		return 1;
	p->number = (uint32_t)v[0];
	p->transactions = (uint32_t)v[1];
	p->size_low = (uint32_t)v[2];
	p->size_high = (uint32_t)v[3];
	p->subdirectories = (uint32_t)v[4];
	p->read_block = (uint32_t)v[5];
	p->write_block = (uint32_t)v[6];
	p->bias_read = (int)v[7];
	p->bias_create = (int)v[8];
	p->seed = (uint32_t)v[9];
	if (p->size_high < p->size_low)
		return mdfio_error("pm_size_high=%u: expected at least pm_size_low=%u", p->size_high, p->size_low);
	if ((why = mdfio_pm_check(p)))
		return mdfio_error("postmark parameters: %s", why);
	if (p->transactions < 10)
		/* postmark itself divides by T/10 and dies of SIGFPE */
		return mdfio_error("pm_transactions=%u: expected 10 or more (postmark dies below that)",
			    p->transactions);
	return read_io(eo, j);
}

/* hosts=: this host's index in the list (the host index is the rank, as
 * every host runs one job), and its seed: pm_seed + index, so that the
 * hosts' pools differ as separate postmark runs would. */
static int place_host(struct thread_data *td, struct pm_job *j)
{
	struct pm_eo *eo = td->eo;
	struct mdfio_world w;
	char buf[1024], msg[1024];
	const char *hosts = pick(eo->hosts, buf, sizeof(buf));

	j->hosts = 0;
	if (!hosts || !*hosts)
		return 0;
	if (gethostname(j->host, sizeof(j->host)))
		snprintf(j->host, sizeof(j->host), "?");
	j->host[sizeof(j->host) - 1] = '\0';
	if (mdfio_world_find(&w, 1, hosts, j->host, (const char *(*)(const char *))getenv,
			     msg, sizeof(msg)))
		return mdfio_error("%s", msg);
	j->host_index = w.base;
	j->hosts = w.total;
	if (j->p.seed > INT32_MAX - j->host_index)
		return mdfio_error("pm_seed=%u: expected at most %u with hosts= of %u hosts (host %u runs seed pm_seed + %u)",
			       j->p.seed, (unsigned int)(INT32_MAX - (j->hosts - 1)), j->hosts,
			       j->host_index, j->host_index);
	j->p.seed += j->host_index;
	return 0;
}

/* ------------------------------------------------- the sequence's state */

/* Replays the phases before this one without I/O, up to this phase's first
 * operation, which is kept as the next (the sequence tells a phase's end
 * only by handing out the next phase's first operation). With count set,
 * the phase's operations are counted by replaying it too (and the replay
 * is started again to perform them). */
static int reach_phase(struct pm_job *j, char *source, uint64_t *count)
{
	struct mdfio_pm_op op;

	if (j->pm_ready)
		mdfio_pm_free(&j->pm);
	if (mdfio_pm_init(&j->pm, &j->p, source))
		return mdfio_error("out of memory for postmark's table of %u files", 2 * j->p.number);
	j->pm_ready = 1;
	j->have_next = 0;
	while (mdfio_pm_next(&j->pm, &op))
		if ((int)op.phase >= (int)j->phase) {
			j->next = op;
			j->have_next = (int)op.phase == (int)j->phase;
			break;
		}
	if (!count)
		return 0;
	*count = j->have_next;
	while (j->have_next && mdfio_pm_next(&j->pm, &op) && (int)op.phase == (int)j->phase)
		++*count;
	return 0;
}

/* The whole run's counters and byte totals as postmark sums them (single
 * floats, one operation at a time): what mdfio-report prints postmark's
 * Data lines from, since fio's JSON holds no per-operation sizes. */
static int whole_run(const struct mdfio_pm_params *p, char *line, size_t len)
{
	struct mdfio_pm pm;
	struct mdfio_pm_op op;

	if (mdfio_pm_init(&pm, p, NULL))
		return mdfio_error("out of memory for postmark's table of %u files", 2 * p->number);
	while (mdfio_pm_next(&pm, &op))
		;
	snprintf(line, len, "files=%u transactions=%u; created=%u read=%u appended=%u deleted=%u alone=%u out=%d bytes=%.0f/%.0f",
		 p->number, p->transactions, pm.created, pm.read, pm.appended, pm.deleted, pm.deleted_alone, pm.out_of_files,
		 (double)pm.bytes_read, (double)pm.bytes_written);
	mdfio_pm_free(&pm);
	return 0;
}

static void set_units(struct thread_data *td, uint64_t units)
{
	uint64_t bytes = units ? units : 1;
	struct fio_file *f = td->files[0];

	f->real_file_size = bytes;
	f->io_size = bytes;
	f->file_offset = 0;
	td->o.size = bytes;
	td->total_io_size = bytes;
}

/* fio's main process, before any job runs: the options checked once, the
 * phase's direction and size, and the run's description, which
 * mdfio-report reads. */
static int engine_setup(struct thread_data *td)
{
	struct pm_job j = { .root_fd = -1, .record_fd = -1, .base_fd = -1 };
	char desc[FIO_JOBDESC_SIZE], whole[224];
	uint64_t units = 0;
	int d, err;

	if (!td->files || !td->o.nr_files)
		return 0;
	if (read_options(td, &j) || place_host(td, &j))
		return 1;
	if (td->o.numjobs > 1)
		return mdfio_error("numjobs: expected 1 (mdfio-postmark runs postmark's one process)");
	if (td->o.td_ddir != (j.phase == PHASE_POOL ? TD_DDIR_WRITE :
			      j.phase == PHASE_TRANSACTIONS ? TD_DDIR_READ : TD_DDIR_TRIM))
		return mdfio_error("rw: phase=%s takes rw=%s (or none)", phase_names[j.phase],
			    j.phase == PHASE_POOL ? "write" : j.phase == PHASE_TRANSACTIONS ? "read" : "trim");
	for (d = 0; d < DDIR_RWDIR_CNT; d++)
		td->o.bs[d] = td->o.min_bs[d] = td->o.max_bs[d] = 1;
	err = reach_phase(&j, NULL, &units) || whole_run(&j.p, whole, sizeof(whole));
	if (j.pm_ready)
		mdfio_pm_free(&j.pm);
	if (err)
		return 1;
	set_units(td, units);
	snprintf(desc, sizeof(desc), "mdfio postmark phase=%s %s",
		 phase_names[j.phase], whole);
	free(td->o.description);
	td->o.description = strdup(desc);
	return 0;
}

/* ------------------------------------------------------- the directory */

static void param_text(const struct mdfio_pm_params *p, char *buf, size_t len)
{
	snprintf(buf, len, "postmark size %u %u number %u transactions %u subdirectories %u read %u write %u buffering %d bias %d %d seed %u\n",
		 p->size_low, p->size_high, p->number, p->transactions, p->subdirectories,
		 p->read_block, p->write_block, p->buffered, p->bias_read, p->bias_create, p->seed);
}

/* The pool starts in an empty directory only, and marks it as its own. */
static int claim_empty_root(struct pm_job *j, const char *params)
{
	DIR *d;
	struct dirent *e;
	int fd, dup_fd = dup(j->root_fd);
	size_t len = strlen(params);

	if (dup_fd < 0 || !(d = fdopendir(dup_fd)))
		return mdfio_error("directory=%s: cannot list it: %s", j->root, strerror(errno));
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			char name[NAME_MAX + 1];

			snprintf(name, sizeof(name), "%s", e->d_name);
			closedir(d);
			return mdfio_error("directory=%s: not empty (it holds %s): mdfio-postmark's pool starts in an empty directory and touches nothing it did not make",
				    j->root, name);
		}
	closedir(d);
	fd = mdfio_sys_open_create(j->root_fd, MARK, 0);
	if (fd < 0 || write(fd, params, len) != (ssize_t)len || close(fd))
		return mdfio_error("%s/%s: cannot write it: %s", j->root, MARK, strerror(errno));
	return 0;
}

/* A later phase runs only where a pool of the same parameters ran. */
static int check_mark(struct pm_job *j, const char *params)
{
	char got[512];
	ssize_t n = 0;
	int fd = mdfio_sys_open_read(j->root_fd, MARK, 0);

	if (fd >= 0) {
		n = read(fd, got, sizeof(got) - 1);
		close(fd);
	}
	if (fd < 0 || n < 0)
		return mdfio_error("directory=%s: no %s in it: run phase=pool there first", j->root, MARK);
	got[n] = '\0';
	if (strcmp(got, params))
		return mdfio_error("directory=%s: its pool ran with other parameters (%s holds \"%.*s\")",
			    j->root, MARK, (int)strcspn(got, "\n"), got);
	return 0;
}

static int open_dirs(struct pm_job *j)
{
	uint32_t n = j->p.subdirectories > 1 ? j->p.subdirectories : 1, k;
	char name[32];

	j->dir_fds = malloc(n * sizeof(*j->dir_fds));
	if (!j->dir_fds)
		return mdfio_error("out of memory");
	for (k = 0; k < n; k++)
		j->dir_fds[k] = -1;
	if (j->p.subdirectories <= 1) {
		j->dir_fds[0] = j->root_fd;
		return 0;
	}
	for (k = 0; k < n; k++) {
		snprintf(name, sizeof(name), "s%u", k);
		if (j->phase == PHASE_POOL && mkdirat(j->root_fd, name, DIR_MODE))
			return mdfio_error("%s/%s: cannot make it: %s", j->root, name, strerror(errno));
		j->dir_fds[k] = openat(j->root_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (j->dir_fds[k] < 0)
			return mdfio_error("%s/%s: cannot open it: %s", j->root, name, strerror(errno));
	}
	return 0;
}

/* After the deletion: the subdirectories and the mark go, as postmark
 * removes its subdirectories; whatever else is in them stays, and says so. */
static void remove_own(struct pm_job *j)
{
	char name[32];
	uint32_t k;

	for (k = 0; j->p.subdirectories > 1 && k < j->p.subdirectories; k++) {
		snprintf(name, sizeof(name), "s%u", k);
		if (unlinkat(j->root_fd, name, AT_REMOVEDIR))
			mdfio_error("%s/%s: left: %s", j->root, name, strerror(errno));
	}
	if (unlinkat(j->root_fd, PM_NOT_MADE_RECORD, 0) && errno != ENOENT)
		mdfio_error("%s/%s: left: %s", j->root, PM_NOT_MADE_RECORD, strerror(errno));
	if (unlinkat(j->root_fd, MARK, 0))
		mdfio_error("%s/%s: left: %s", j->root, MARK, strerror(errno));
}

/* ------------------------------------------------------- the operations */

/* count bytes from source in write_block pieces: fwrite through stdio when
 * buffered, as postmark; else plain write calls. 0 or an errno value. */
static int write_blocks(struct pm_job *j, int fd, FILE *f, uint32_t count)
{
	uint32_t done = 0, n;

	while (done < count) {
		n = count - done < j->p.write_block ? count - done : j->p.write_block;
		if (f ? fwrite(j->source + done, 1, n, f) != n : write(fd, j->source + done, n) != (ssize_t)n)
			return errno ? errno : EIO;
		done += n;
	}
	return 0;
}

/* Writes bytes to fd, opened for a create or an append, through C stdio
 * (mode "w" or "a") when buffered, as postmark does, and closes it. */
static int write_opened(struct pm_job *j, int fd, const char *mode, uint32_t bytes)
{
	FILE *f = NULL;
	int err;

	if (j->p.buffered && !(f = fdopen(fd, mode))) {
		err = errno;
		close(fd);
		return err;
	}
	errno = 0;
	err = write_blocks(j, fd, f, bytes);
	if (f ? fclose(f) : close(fd))
		err = err ? err : errno;
	return err;
}

static int do_create(struct pm_job *j, int dfd, const char *name, const struct mdfio_pm_op *op)
{
	int fd = mdfio_sys_open_create(dfd, name, 0);

	if (fd >= 0)
		return write_opened(j, fd, "w", op->bytes);
	pm_create_failed(j, op);
	return errno;
}

static int do_append(struct pm_job *j, int dfd, const char *name, const struct mdfio_pm_op *op)
{
	int fd = openat(dfd, name, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);

	return fd < 0 ? errno : write_opened(j, fd, "a", op->bytes);
}

/* Reads the whole file in read_block pieces, as postmark (to its end). */
static int do_read(struct pm_job *j, int dfd, const char *name, const struct mdfio_pm_op *op)
{
	int fd = mdfio_sys_open_read(dfd, name, 0), err = 0;
	uint64_t total = 0;
	FILE *f = NULL;
	ssize_t n;

	if (fd < 0)
		return -fd;
	if (j->p.buffered && !(f = fdopen(fd, "r"))) {
		err = errno;
		close(fd);
		return err;
	}
	for (;;) {
		n = f ? (ssize_t)fread(j->buf, 1, j->p.read_block, f) : read(fd, j->buf, j->p.read_block);
		if (n <= 0)
			break;
		total += (uint64_t)n;
	}
	if (n < 0 || (f && ferror(f)))
		err = errno ? errno : EIO;
	else if (total != op->bytes)
		err = EIO;	/* not the file this sequence made */
	if (f ? fclose(f) : close(fd))
		err = err ? err : errno;
	return err;
}

static int do_delete(struct pm_job *j, int dfd, const char *name, const struct mdfio_pm_op *op)
{
	(void)j;
	(void)op;
	return mdfio_sys_unlink(dfd, name);
}

/* One function per kind, as fio's engines have their ops table. */
static int (*const perform[MDFIO_PM_KIND_NR])(struct pm_job *, int, const char *,
					      const struct mdfio_pm_op *) = {
	[MDFIO_PM_CREATE] = do_create, [MDFIO_PM_READ] = do_read,
	[MDFIO_PM_APPEND] = do_append, [MDFIO_PM_DELETE] = do_delete,
};

/* ------------------------------------------------------------ the job */

/* The root: directory= itself, or with hosts= this host's own h<index>
 * in it, which the pool makes (or takes, if empty). Never through a
 * symlink. */
static int open_root(struct thread_data *td, struct pm_job *j)
{
	const char *base = td->o.directory ? td->o.directory : ".";
	char name[32];

	if (!j->hosts) {
		snprintf(j->root, sizeof(j->root), "%s", base);
		j->root_fd = open(j->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	} else {
		snprintf(name, sizeof(name), "h%u", j->host_index);
		snprintf(j->root, sizeof(j->root), "%s/%s", base, name);
		if (j->phase == PHASE_POOL && mkdirat(j->base_fd, name, DIR_MODE) && errno != EEXIST)
			return mdfio_error("%s: cannot make it: %s", j->root, strerror(errno));
		j->root_fd = openat(j->base_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (j->root_fd < 0)
		return mdfio_error("directory=%s: %s", j->root,
			    errno == ENOENT || errno == ENOTDIR || errno == ELOOP ?
			    "not an existing directory" : strerror(errno));
	return 0;
}

/* Everything before the phase's first operation: untimed. */
static int prepare(struct thread_data *td, struct pm_job *j)
{
	char params[512];

	if (open_root(td, j))
		return 1;
	param_text(&j->p, params, sizeof(params));
	if (j->phase == PHASE_POOL ? claim_empty_root(j, params) :
	    check_mark(j, params) || pm_read_not_made(j))
		return 1;
	if (open_dirs(j))
		return 1;
	j->source = malloc(2 * (size_t)j->p.size_high);
	j->buf = malloc(j->p.read_block);
	if (!j->source || !j->buf)
		return mdfio_error("out of memory for %u bytes of content", 2 * j->p.size_high);
	if (reach_phase(j, j->source, &j->units) || reach_phase(j, j->source, NULL))
		return 1;
	set_units(td, j->units);
	td->o.continue_on_error = ERROR_TYPE_ANY;
	td->ts.continue_on_error = ERROR_TYPE_ANY;
	td->o.disable_lat = td->o.disable_clat = td->o.disable_slat = td->o.disable_bw = 1;
	if (!j->units)
		td->done = 1;
	if (j->io->init && j->io->init(td, j))
		return 1;
	if (j->io->getevents)
		/* this job's operations complete in getevents: fio treats an
		 * engine as asynchronous by its job's copy of the flags */
		td->flags &= ~((unsigned long long)FIO_SYNCIO << TD_ENG_FLAG_SHIFT);
	return 0;
}

static void answer_fio(void *arg)
{
	struct thread_data *td = arg;

	/* what fio's loop does between io_us, while the job waits outside
	 * it at a barrier */
	if (!td->update_rusage || !td->rusage_sem)
		return;
	td->update_rusage = 0;
	update_rusage_stat(td);
	fio_sem_up(td->rusage_sem);
}

/* Every host of the run meets here: step tells a phase's two barriers
 * apart, the section's thread number its sections (the same on every host
 * of one jobfile). */
static int barrier(struct thread_data *td, struct pm_job *j, unsigned int timeout_s, const char *step)
{
	char phase[MDFIO_RANKFILE_PHASE_LEN], msg[1024];
	uint64_t b;

	snprintf(phase, sizeof(phase), "postmark-%s-%d%s", phase_names[j->phase],
		 td->thread_number, step);
	j->rf.waiting = answer_fio;
	j->rf.waiting_arg = td;
	if (mdfio_rankfile_barrier(&j->rf, phase, timeout_s * 1000u, &b, NULL, NULL, msg, sizeof(msg)))
		return mdfio_error("%s: host %u (%s), postmark %s: %s", td->o.directory, j->host_index,
			       j->host, phase_names[j->phase], msg);
	return 0;
}

/* hosts=: the hosts claim their ranks in directory='s rank file and meet
 * before the phase is prepared (the previous phase has ended on every
 * host) and at its start, from whose release the phase's time runs. */
static int init_hosts(struct thread_data *td, struct pm_job *j)
{
	struct pm_eo *eo = td->eo;
	const char *base = td->o.directory ? td->o.directory : ".";
	long long timeout;
	char msg[1024];

	if (parse_num("join_timeout", eo->join_timeout, 60, 1, 86400, 0, &timeout))
		return 1;
	j->base_fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (j->base_fd < 0)
		return mdfio_error("directory=%s: %s", base,
			    errno == ENOENT || errno == ENOTDIR ? "not an existing directory" : strerror(errno));
	if (mdfio_rankfile_claim(&j->rf, j->base_fd, j->host_index, j->hosts, 1, j->host,
				 msg, sizeof(msg)))
		return mdfio_error("directory=%s: %s", base, msg);
	j->claimed = 1;
	if (barrier(td, j, (unsigned int)timeout, ""))
		return 1;
	if (prepare(td, j)) {
		snprintf(msg, sizeof(msg), "host %u (%s): %s", j->host_index, j->host, mdfio_last_error());
		mdfio_rankfile_abort(&j->rf, msg);
		return 1;
	}
	if (barrier(td, j, (unsigned int)timeout, "-go")) {
		char name[32];

		/* another host could not start: the pool this one prepared
		 * goes, so that the run can be started again as it was */
		if (j->phase == PHASE_POOL) {
			remove_own(j);
			snprintf(name, sizeof(name), "h%u", j->host_index);
			if (unlinkat(j->base_fd, name, AT_REMOVEDIR))
				mdfio_error("%s: left: %s", j->root, strerror(errno));
		}
		return 1;
	}
	j->t0 = pm_now_ns();
	return 0;
}

static int init_job(struct thread_data *td, struct pm_job *j)
{
	if (read_options(td, j) || place_host(td, j))
		return 1;
	/* a clone has numjobs 1: its subjob number tells it is one */
	if (td->o.numjobs > 1 || td->subjob_number)
		return mdfio_error("numjobs: expected 1 (mdfio-postmark runs postmark's one process)");
	return j->hosts ? init_hosts(td, j) : prepare(td, j);
}

static int engine_init(struct thread_data *td)
{
	struct pm_job *j = calloc(1, sizeof(*j));

	if (!j)
		return mdfio_error("out of memory");
	j->root_fd = -1;
	j->record_fd = -1;
	j->base_fd = -1;
	j->rf.fd = -1;
	td->io_ops_data = j;
	return init_job(td, j);
}

static enum fio_q_status sync_queue(struct thread_data *td, struct pm_job *j, struct io_u *io_u)
{
	struct mdfio_pm_op op;
	char name[64];
	uint64_t start;
	int dfd, err;

	/* what fio counts for an engine without commit, as every sync
	 * engine's: this table has one for pm_io=uring, so fio leaves it */
	io_u_mark_submit(td, 1);
	io_u_mark_complete(td, 1);
	if (j->done >= j->units || !pm_next_op(j, &op)) {
		td->done = 1;
		return FIO_Q_COMPLETED;
	}
	dfd = pm_op_dir(j, &op, name, sizeof(name));
	start = pm_now_ns();
	err = pm_not_made(j, &op) ? PM_ERR_NOT_MADE : perform[op.kind](j, dfd, name, &op);
	pm_ended(td, j, &op, start, pm_now_ns(), err);
	if (err)
		io_u->error = EIO;
	return FIO_Q_COMPLETED;
}

static const struct pm_io_ops pm_io_sync = { .name = "sync", .queue = sync_queue };

static enum fio_q_status engine_queue(struct thread_data *td, struct io_u *io_u)
{
	struct pm_job *j = td->io_ops_data;

	io_u->error = 0;
	return j->io->queue(td, j, io_u);
}

static int engine_commit(struct thread_data *td)
{
	struct pm_job *j = td->io_ops_data;

	return j->io->commit ? j->io->commit(td, j) : 0;
}

static int engine_getevents(struct thread_data *td, unsigned int min, unsigned int max,
			    const struct timespec *t)
{
	struct pm_job *j = td->io_ops_data;

	(void)t;
	return j->io->getevents ? j->io->getevents(td, j, min, max) : 0;
}

static struct io_u *engine_event(struct thread_data *td, int n)
{
	struct pm_job *j = td->io_ops_data;

	return j->io->event(j, n);
}

static int engine_open_file(struct thread_data *td, struct fio_file *f)
{
	(void)td;
	(void)f;
	return 0;
}

static void engine_cleanup(struct thread_data *td)
{
	struct pm_job *j = td->io_ops_data;
	uint64_t errors = 0;
	uint32_t k;

	if (!j)
		return;
	for (k = 0; k < MDFIO_PM_KIND_NR; k++) {
		if (!j->err[k].count)
			continue;
		errors += j->err[k].count;
		mdfio_error("postmark %s: %" PRIu64 " %s errors (first: %s/%s: %s)", phase_names[j->phase],
		     j->err[k].count, mdfio_pm_kind_names[k], j->root, j->err[k].first_name,
		     j->err[k].first_errno == PM_ERR_NOT_MADE ?
		     "not performed: its create failed, the file there is not mdfio's" :
		     strerror(j->err[k].first_errno));
	}
	if (j->units && j->done != j->units && !td->error)
		mdfio_error("postmark %s stopped after %" PRIu64 " of %" PRIu64 " operations",
		     phase_names[j->phase], j->done, j->units);
	if ((errors || j->done != j->units) && !td->error)
		td_verror(td, EIO, "mdfio-postmark");
	if (j->io && j->io->exit)
		j->io->exit(j);
	if (j->phase == PHASE_DELETE && j->done == j->units && j->root_fd >= 0)
		remove_own(j);
	if (j->phase == PHASE_DELETE && j->done == j->units && j->hosts && j->root_fd >= 0) {
		char name[32];

		/* the pool made h<index>: it goes if nothing else is in it */
		snprintf(name, sizeof(name), "h%u", j->host_index);
		if (unlinkat(j->base_fd, name, AT_REMOVEDIR))
			mdfio_error("%s: left: %s", j->root, strerror(errno));
	}
	for (k = 0; j->dir_fds && j->p.subdirectories > 1 && k < j->p.subdirectories; k++)
		if (j->dir_fds[k] >= 0)
			close(j->dir_fds[k]);
	if (j->root_fd >= 0)
		close(j->root_fd);
	if (j->record_fd >= 0)
		close(j->record_fd);
	if (j->claimed)
		(void)mdfio_rankfile_release(&j->rf, j->base_fd, NULL, NULL);
	if (j->base_fd >= 0)
		close(j->base_fd);
	if (j->pm_ready)
		mdfio_pm_free(&j->pm);
	free(j->dir_fds);
	free(j->not_made);
	free(j->source);
	free(j->buf);
	free(j);
	td->io_ops_data = NULL;
}

static struct ioengine_ops engine = {
	.name = "mdfio-postmark",
	.version = FIO_IOOPS_VERSION,
	.flags = FIO_DISKLESSIO | FIO_NOSTATS | FIO_NOFILEHASH | FIO_SYNCIO,
	.init = engine_init,
	.setup = engine_setup,
	.queue = engine_queue,
	.commit = engine_commit,
	.getevents = engine_getevents,
	.event = engine_event,
	.cleanup = engine_cleanup,
	.open_file = engine_open_file,
	.close_file = engine_open_file,
	.options = options,
	.option_struct_size = sizeof(struct pm_eo),
};

EXPORT void get_ioengine(struct ioengine_ops **ops);
void get_ioengine(struct ioengine_ops **ops)
{
	*ops = mdfio_loaded_by_built_fio("mdfio-postmark") ? &engine : NULL;
}
