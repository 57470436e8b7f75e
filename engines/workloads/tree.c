/* mdfio-tree: the small-file tree study as fio job sections. A real source
 * tree is copied into the file system under test, searched by name cold
 * and warm, read file by file by several readers, rewritten with a small
 * value, and deleted; each step is a phase= of its own, with its time in
 * its headline slot's slat_ns and each operation's latency in fio's slots
 * as md-workbench's phases have them (docs/studies.md, "The small-file tree
 * study").
 *
 * The copy is the tree <directory>/tree, and every name it makes is listed
 * in <directory>/mdfio.tree, the manifest, with its type and inode number.
 * Later phases work from the manifest, never from a walk of the tree (but
 * the search, which is the walk): a rewrite writes, and a delete removes,
 * only a name that still holds what the copy made there, so a file someone
 * put in the tree is never touched. Every name is resolved one component at
 * a time beneath its directory, following no symlink. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fio_compat.h"
#include "job.h"
#include "tree_manifest.h"

#define TREE_NAME "tree"
#define TREE_MANIFEST "mdfio.tree"
#define TREE_COPY_BUF (128 * 1024)
/* the default tree: Perl's modules as Debian's perl-modules package
 * installs them (./setup installs perl) */
#define TREE_DEFAULT_SOURCE "/usr/share/perl"
/* the study's search: find -iname '*a*' once cold, then '*a*' .. '*j*' */
#define TREE_DEFAULT_INAME "*a*"
/* the study's value: 6 KiB (dd bs=1K count=6 of /dev/urandom) */
#define TREE_DEFAULT_REWRITE 6144
#define TREE_MAX_PATTERNS 64

enum tree_phase { TP_COPY, TP_FIND, TP_READ, TP_REWRITE, TP_DELETE, TP_NR };

static const struct {
	const char *name;
	enum fio_ddir ddir;
	enum td_ddir rw;
	const char *rw_name;
	int one_rank;		/* runs as one rank, as the study's command does */
} phases[TP_NR] = {
	[TP_COPY] = { "copy", DDIR_WRITE, TD_DDIR_WRITE, "write", 1 },
	[TP_FIND] = { "find", DDIR_READ, TD_DDIR_READ, "read", 1 },
	[TP_READ] = { "read", DDIR_READ, TD_DDIR_READ, "read", 0 },
	[TP_REWRITE] = { "rewrite", DDIR_WRITE, TD_DDIR_WRITE, "write", 0 },
	[TP_DELETE] = { "delete", DDIR_TRIM, TD_DDIR_TRIM, "trim", 1 },
};

struct tree_options {
	void *pad;		/* fio keeps its thread_data pointer here */
	unsigned int phase;	/* enum tree_phase + 1; 0: unset */
	char *source;
	char *iname;
	char *rewrite_size;
	char *drop_caches;
};

/* The values of the options given as text, picked ("value|default";
 * NULL: not given). */
struct tree_values {
	const char *source, *iname, *rewrite_size, *drop_caches;
};

/* One directory of the copy's walk: its entries, sorted by name (the
 * study reads "in an alphabetic way"), and the one handed out next. */
struct level {
	int src, dst;		/* the source directory and its copy */
	struct stat st;		/* the source's, for the copy's mode and times */
	char **names;
	size_t n, i;
	size_t path_len;	/* the relative path up to this directory */
};

struct tree_job {
	enum tree_phase phase;
	enum fio_ddir ddir;
	uint32_t rank, ranks;
	int root_fd;		/* directory= */
	uint64_t units, next, finished;
	uint64_t t0;
	unsigned long long bs;
	/* copy */
	char source[PATH_MAX];
	struct level *levels;
	size_t depth, max_depth;
	FILE *manifest;
	uint64_t specials;	/* FIFOs, sockets, devices: not copied */
	/* find */
	char *patterns[TREE_MAX_PATTERNS];
	unsigned int nr_patterns;
	uint64_t names_seen, names_matched;
	/* read, rewrite, delete: what the copy made */
	struct tree_manifest man;
	int tree_fd;
	char parent[PATH_MAX];	/* the directory parent_fd holds */
	int parent_fd;
	uint64_t left;		/* delete: names left (not ours, or not empty) */
	char first_left[PATH_MAX];
	/* rewrite */
	unsigned char *value;
	size_t value_len;
	unsigned char *buf;
	/* errors */
	uint64_t errors;
	char first_error[PATH_MAX + 256];
	char path[PATH_MAX];
};

/* ------------------------------------------------------------ options */

static int cb_phase(void *data, const char *s)
{
	struct thread_data *td = *(struct thread_data **)data;
	unsigned int p;

	for (p = 0; p < TP_NR; p++) {
		if (strcmp(s, phases[p].name))
			continue;
		((struct tree_options *)data)->phase = p + 1;
		/* the phase owns the headline direction */
		if (td && !fio_option_is_set(&td->o, td_ddir))
			td->o.td_ddir = phases[p].rw;
		return 0;
	}
	return mdfio_error("phase=%s: expected copy, find, read, rewrite or delete", s);
}

static struct fio_option tree_options[] = {
	MDFIO_OPT("phase", cb_phase, NULL,
	    "the tree study's step: copy, find, read, rewrite or delete (required)"),
	MDFIO_STR_OPT("tree_source", struct tree_options, source,
	    "copy: the tree to copy into <directory>/tree (default " TREE_DEFAULT_SOURCE ")"),
	MDFIO_STR_OPT("find_iname", struct tree_options, iname,
	    "find: the name patterns, ':'-separated, each a whole walk as find -iname (default " TREE_DEFAULT_INAME ")"),
	MDFIO_STR_OPT("rewrite_size", struct tree_options, rewrite_size,
	    "rewrite: bytes of the value every file is rewritten with, 1 to 1048576 (default 6144)"),
	MDFIO_STR_OPT("drop_caches", struct tree_options, drop_caches,
	    "1: drop the page cache, dentries and inodes before the phase (root only; untimed)"),
	{ .name = NULL },
};

/* "value|default", as the core's options take them: a jobfile writes
 * tree_source=${TREE_SOURCE}|/usr/share/perl because fio turns an unset
 * variable into "" and refuses an empty value. NULL: unset. */
static const char *pick(char *s)
{
	char *bar;

	if (!s)
		return NULL;
	bar = strchr(s, '|');
	if (!bar)
		return *s ? s : NULL;
	if (bar == s)
		return bar[1] ? bar + 1 : NULL;
	*bar = 0;
	return s;
}

static int parse_count(const char *name, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || *end || errno || *s == '-' || v < lo || v > hi)
		return mdfio_error("%s=%s: expected a whole number from %" PRIu64 " to %" PRIu64,
				   name, s, lo, hi);
	*out = v;
	return 0;
}

/* ------------------------------------------------------------- helpers */

static void set_units(struct thread_data *td, uint64_t units)
{
	uint64_t bytes = units * td->o.bs[DDIR_WRITE];
	struct fio_file *f = td->files[0];

	f->real_file_size = bytes;
	f->io_size = bytes;
	f->file_offset = 0;
	td->o.size = bytes;
	td->total_io_size = bytes;
}

/* The job a clone was made from: fio places clones right after it. */
static struct thread_data *parent_of(struct thread_data *td)
{
	struct thread_data *t, *parent = td;
	int i;

	if (!td->subjob_number)
		return td;
	mdfio_for_each_td(t, i) {
		if (t->thread_number > td->thread_number)
			break;
		if (!t->subjob_number)
			parent = t;
	}
	return parent;
}

/* Opens beneath dir, following no symlink on the way (nor at the end). */
static int open_beneath(int dir, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};

	return (int)syscall(SYS_openat2, dir, path, &how, sizeof(how));
}

/* What a name holds: its type bits, inode number and birth time (0 where
 * the file system tells none); name "" for dir itself. */
struct tree_id {
	unsigned int mode;
	uint64_t ino, btime;
};

static int id_of(int dir, const char *name, struct tree_id *id)
{
	struct statx sx;

	if (statx(dir, name, AT_SYMLINK_NOFOLLOW | (*name ? 0 : AT_EMPTY_PATH),
		  STATX_TYPE | STATX_INO | STATX_BTIME, &sx))
		return -1;
	id->mode = sx.stx_mode;
	id->ino = sx.stx_ino;
	id->btime = sx.stx_mask & STATX_BTIME ?
		    (uint64_t)sx.stx_btime.tv_sec * 1000000000u + sx.stx_btime.tv_nsec : 0;
	return 0;
}

static int same_file(const struct tree_entry *e, const struct tree_id *id)
{
	unsigned int type = e->type == 'd' ? S_IFDIR : e->type == 'l' ? S_IFLNK : S_IFREG;

	return (id->mode & S_IFMT) == type && id->ino == e->ino &&
	       (!e->btime || !id->btime || e->btime == id->btime);
}

/* A message stays one line, whatever the names in it hold. */
static void one_line(char *s)
{
	while ((s = strchr(s, '\n')))
		*s = '?';
}

static void op_error(struct tree_job *j, const char *what, const char *path, int err)
{
	if (j->errors++)
		return;
	snprintf(j->first_error, sizeof(j->first_error), "%s %s: %s", what, path,
		 err ? strerror(err) : "not the file the copy made (left as it is)");
	one_line(j->first_error);
}

static void record(struct thread_data *td, enum fio_ddir dd, uint64_t start, uint64_t end)
{
	if (dd == DDIR_SYNC) {
		td->ts.total_io_u[DDIR_SYNC]++;
		add_sync_clat_sample(&td->ts, end - start);
	} else {
		mdfio_add_clat(td, dd, end - start, 0);
	}
}

static void failed_sync(struct thread_data *td)
{
	td->ts.total_io_u[DDIR_SYNC]++;
}

/* drop_caches=1: rank 0 of the job drops them, the others wait for it
 * (fio starts the clones' I/O without a barrier after their init), through
 * a page the main process maps before it forks the jobs: a slot per job,
 * DROP_DONE once dropped, DROP_FAILED if rank 0 could not. */
static volatile uint32_t *dropped;
#define DROPPED_SLOTS 1024
#define DROP_DONE 1
#define DROP_FAILED 2
/* how long a rank waits for rank 0 to drop them */
#define DROP_WAIT_S 600

static int drop_caches(struct thread_data *td, struct tree_job *j)
{
	volatile uint32_t *slot = dropped ? &dropped[parent_of(td)->thread_number % DROPPED_SLOTS] : NULL;
	uint32_t state = 0;
	unsigned int waited_ms = 0;
	int fd;

	if (j->rank) {
		while (slot && !(state = __atomic_load_n(slot, __ATOMIC_ACQUIRE)) &&
		       waited_ms < DROP_WAIT_S * 1000) {
			usleep(1000);
			waited_ms++;
		}
		if (state == DROP_DONE || !slot)
			return 0;
		return mdfio_error_said("rank %u: rank 0 did not drop the caches%s", j->rank,
					state ? "" : " within 600 s");
	}
	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "3", 1) != 1) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		if (slot)
			__atomic_store_n(slot, DROP_FAILED, __ATOMIC_RELEASE);
		return mdfio_error("drop_caches=1: cannot write /proc/sys/vm/drop_caches: %s (it needs root)",
				   strerror(err));
	}
	close(fd);
	if (slot)
		__atomic_store_n(slot, DROP_DONE, __ATOMIC_RELEASE);
	return 0;
}

/* --------------------------------------------------------------- copy */

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in directory fd (kept open), sorted; -1 with errno if it
 * cannot be read. */
static int list_dir(int fd, char ***names, size_t *n)
{
	int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	DIR *d;
	struct dirent *e;
	size_t cap = 0;

	*names = NULL;
	*n = 0;
	if (dup_fd < 0)
		return -1;
	d = fdopendir(dup_fd);
	if (!d) {
		close(dup_fd);
		return -1;
	}
	rewinddir(d);
	while ((errno = 0, e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (*n == cap) {
			char **more = realloc(*names, (cap = cap ? 2 * cap : 64) * sizeof(char *));

			if (!more)
				break;
			*names = more;
		}
		if (!((*names)[*n] = strdup(e->d_name)))
			break;
		(*n)++;
	}
	if (errno) {
		int err = errno;

		closedir(d);
		while (*n)
			free((*names)[--*n]);
		free(*names);
		*names = NULL;
		errno = err;
		return -1;
	}
	closedir(d);
	if (*n)
		qsort(*names, *n, sizeof(char *), cmp_names);
	return 0;
}

static void free_names(char **names, size_t n)
{
	while (n)
		free(names[--n]);
	free(names);
}

/* The entries below directory fd, counted (the copy's units). */
static int count_tree(int fd, const char *path, uint64_t *count)
{
	char **names;
	size_t n, i;
	int err = 0;

	if (list_dir(fd, &names, &n))
		return mdfio_error("tree_source: cannot list %s: %s", path, strerror(errno));
	for (i = 0; i < n && !err; i++) {
		struct stat st;
		int sub;
		char sub_path[PATH_MAX];

		(*count)++;
		if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
			continue;
		snprintf(sub_path, sizeof(sub_path), "%s/%s", path, names[i]);
		sub = openat(fd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			err = mdfio_error("tree_source: cannot open %s: %s", sub_path, strerror(errno));
			break;
		}
		err = count_tree(sub, sub_path, count);
		close(sub);
	}
	free_names(names, n);
	return err;
}

static int push_level(struct tree_job *j, int src, int dst, const struct stat *st, size_t path_len)
{
	struct level *l;

	if (j->depth == j->max_depth) {
		struct level *more = realloc(j->levels, (j->max_depth += 16) * sizeof(*more));

		if (!more)
			return ENOMEM;
		j->levels = more;
	}
	l = &j->levels[j->depth];
	memset(l, 0, sizeof(*l));
	l->src = src;
	l->dst = dst;
	l->st = *st;
	l->path_len = path_len;
	if (list_dir(src, &l->names, &l->n))
		return errno;
	j->depth++;
	return 0;
}

/* A directory's copy gets its mode and times once its entries are in it,
 * as cp -a gives them (a read-only directory could not take them before). */
static void pop_level(struct tree_job *j)
{
	struct level *l = &j->levels[--j->depth];
	struct timespec ts[2] = { l->st.st_atim, l->st.st_mtim };

	if (fchmod(l->dst, l->st.st_mode & 07777) || futimens(l->dst, ts))
		op_error(j, "copy: cannot set the mode and times of", *j->path ? j->path : TREE_NAME, errno);
	close(l->src);
	close(l->dst);
	free_names(l->names, l->n);
}

static int copy_file(int src_dir, int dst_dir, const char *name, const struct stat *st,
		     unsigned char *buf, uint64_t *bytes, struct tree_id *made)
{
	int in, out, err = 0;
	struct timespec ts[2] = { st->st_atim, st->st_mtim };

	in = openat(src_dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in < 0)
		return errno;
	out = openat(dst_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		err = errno;
		close(in);
		return err;
	}
	*bytes = 0;
	for (;;) {
		ssize_t got = read(in, buf, TREE_COPY_BUF), put = 0;

		if (got < 0) {
			err = errno;
			break;
		}
		if (!got)
			break;
		while (put < got) {
			ssize_t w = write(out, buf + put, (size_t)(got - put));

			if (w < 0) {
				err = errno;
				break;
			}
			put += w;
		}
		if (err)
			break;
		*bytes += (uint64_t)got;
	}
	if (!err && (fchmod(out, st->st_mode & 07777) || futimens(out, ts) || id_of(out, "", made)))
		err = errno;
	close(in);
	if (close(out) && !err)
		err = errno;
	return err;
}

/* One unit of the copy: the next name of the walk (the first: the tree's
 * top directory). Returns the bytes copied, or -1 on an error. */
static int64_t copy_one(struct thread_data *td, struct tree_job *j)
{
	struct level *l;
	struct stat st;
	const char *name;
	uint64_t t0, t1, bytes = 0;
	struct tree_id made;
	int err = 0, sub_src, sub_dst;
	size_t len;

	if (!j->next) {
		int src = open(j->source, O_RDONLY | O_DIRECTORY | O_CLOEXEC), dst;
		struct tree_id made;

		if (src < 0 || fstat(src, &st))
			return op_error(j, "copy: cannot open tree_source", j->source, errno), -1;
		t0 = mdfio_now();
		err = mkdirat(j->root_fd, TREE_NAME, 0700) ? errno : 0;
		t1 = mdfio_now();
		if (err) {
			failed_sync(td);
			close(src);
			return op_error(j, "copy: mkdir", TREE_NAME, err), -1;
		}
		record(td, DDIR_SYNC, t0, t1);
		dst = openat(j->root_fd, TREE_NAME, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dst < 0 || id_of(dst, "", &made) ||
		    tree_manifest_add(j->manifest, 'd', made.ino, made.btime, ".")) {
			err = errno;
			close(src);
			if (dst >= 0)
				close(dst);
			return op_error(j, "copy: make", TREE_NAME, err), -1;
		}
		j->path[0] = 0;
		if ((err = push_level(j, src, dst, &st, 0)))
			return op_error(j, "copy: cannot list", j->source, err), -1;
		return 0;
	}
	/* the directories whose every name is handed out are done */
	while (j->depth && j->levels[j->depth - 1].i == j->levels[j->depth - 1].n) {
		pop_level(j);
		if (j->depth) {
			char *slash = strrchr(j->path, '/');

			if (slash)
				*slash = 0;
			else
				j->path[0] = 0;
		}
	}
	if (!j->depth)
		return op_error(j, "copy:", "the source", ENOENT), -1;	/* it changed since counted */
	l = &j->levels[j->depth - 1];
	name = l->names[l->i++];
	len = strlen(j->path);
	snprintf(j->path + len, sizeof(j->path) - len, "%s%s", len ? "/" : "", name);
	t0 = mdfio_now();
	if (fstatat(l->src, name, &st, AT_SYMLINK_NOFOLLOW)) {
		err = errno;
		j->path[len] = 0;
		failed_sync(td);
		return op_error(j, "copy: stat of the source's", name, err), -1;
	}
	if (S_ISREG(st.st_mode)) {
		err = copy_file(l->src, l->dst, name, &st, j->buf, &bytes, &made);
		t1 = mdfio_now();
		if (err) {
			td->ts.drop_io_u[DDIR_WRITE]++;
			op_error(j, "copy: create", j->path, err);
		} else {
			mdfio_add_clat(td, DDIR_WRITE, t1 - t0, bytes);
			if (tree_manifest_add(j->manifest, 'f', made.ino, made.btime, j->path))
				op_error(j, "copy: write", TREE_MANIFEST, errno), err = 1;
		}
		j->path[len] = 0;
		return err ? -1 : (int64_t)bytes;
	}
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(l->src, name, target, sizeof(target) - 1);
		struct timespec ts[2] = { st.st_atim, st.st_mtim };

		if (n < 0 || (target[n] = 0, symlinkat(target, l->dst, name)))
			err = errno;
		t1 = mdfio_now();
		if (!err) {
			record(td, DDIR_SYNC, t0, t1);
			utimensat(l->dst, name, ts, AT_SYMLINK_NOFOLLOW);
			if (id_of(l->dst, name, &made) ||
			    tree_manifest_add(j->manifest, 'l', made.ino, made.btime, j->path))
				op_error(j, "copy: write", TREE_MANIFEST, errno), err = 1;
		} else {
			failed_sync(td);
			op_error(j, "copy: symlink", j->path, err);
		}
		j->path[len] = 0;
		return err ? -1 : 0;
	}
	if (!S_ISDIR(st.st_mode)) {
		/* what the tree study's sources hold no example of */
		j->specials++;
		j->path[len] = 0;
		return 0;
	}
	err = mkdirat(l->dst, name, 0700) ? errno : 0;
	t1 = mdfio_now();
	if (err) {
		failed_sync(td);
		op_error(j, "copy: mkdir", j->path, err);
		j->path[len] = 0;
		return -1;
	}
	record(td, DDIR_SYNC, t0, t1);
	sub_src = openat(l->src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	sub_dst = openat(l->dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub_src < 0 || sub_dst < 0) {
		err = errno;
		if (sub_src >= 0)
			close(sub_src);
		if (sub_dst >= 0)
			close(sub_dst);
		op_error(j, "copy: open", j->path, err);
		j->path[len] = 0;
		return -1;
	}
	{
		if (id_of(sub_dst, "", &made) ||
		    tree_manifest_add(j->manifest, 'd', made.ino, made.btime, j->path)) {
			op_error(j, "copy: write", TREE_MANIFEST, errno);
			close(sub_src);
			close(sub_dst);
			j->path[len] = 0;
			return -1;
		}
	}
	if ((err = push_level(j, sub_src, sub_dst, &st, len))) {
		op_error(j, "copy: cannot list the source's", j->path, err);
		j->path[len] = 0;
		return -1;
	}
	/* j->path stays: the walk is in this directory now */
	return 0;
}

/* --------------------------------------------------------------- find */

/* One directory of a search: listed (open and every entry read, the
 * readdir latency), each name matched, and its directories walked. */
static void find_dir(struct thread_data *td, struct tree_job *j, int parent, const char *name,
		     const char *pattern)
{
	uint64_t t0 = mdfio_now(), t1;
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char **names = NULL;
	unsigned char *types = NULL;
	size_t n = 0, cap = 0, i;
	DIR *d;
	struct dirent *e;

	if (fd < 0 || !(d = fdopendir(fd))) {
		td->ts.drop_io_u[DDIR_READ]++;
		op_error(j, "find: open", name, errno);
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((errno = 0, e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			names = realloc(names, cap * sizeof(*names));
			types = realloc(types, cap);
			if (!names || !types)
				abort();
		}
		names[n] = strdup(e->d_name);
		types[n++] = e->d_type;
	}
	t1 = mdfio_now();
	if (errno) {
		td->ts.drop_io_u[DDIR_READ]++;
		op_error(j, "find: readdir", name, errno);
	} else {
		mdfio_add_clat(td, DDIR_READ, t1 - t0, 0);
	}
	fd = dirfd(d);
	for (i = 0; i < n; i++) {
		unsigned char type = types[i];

		j->names_seen++;
		if (!fnmatch(pattern, names[i], FNM_CASEFOLD))
			j->names_matched++;
		if (type == DT_UNKNOWN) {
			struct stat st;

			t0 = mdfio_now();
			if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW)) {
				failed_sync(td);
				op_error(j, "find: stat", names[i], errno);
				continue;
			}
			record(td, DDIR_SYNC, t0, mdfio_now());
			type = S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
		}
		if (type == DT_DIR)
			find_dir(td, j, fd, names[i], pattern);
	}
	free_names(names, n);
	free(types);
	closedir(d);
}

/* ------------------------------------------------- read, rewrite, delete */

/* The directory the manifest's entry path is in, open (O_PATH) in
 * j->parent_fd, and the entry's own name. The top directory's parent is
 * directory= itself. */
static int enter_parent(struct tree_job *j, const char *path, const char **name)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0;
	int fd;

	if (!strcmp(path, ".")) {
		*name = TREE_NAME;
		return j->root_fd;
	}
	*name = slash ? slash + 1 : path;
	if (j->parent_fd >= 0 && strlen(j->parent) == len && !strncmp(j->parent, path, len))
		return j->parent_fd;
	if (j->parent_fd >= 0)
		close(j->parent_fd);
	j->parent_fd = -1;
	memcpy(j->parent, path, len);
	j->parent[len] = 0;
	if (!len)
		fd = fcntl(j->tree_fd, F_DUPFD_CLOEXEC, 0);
	else
		fd = open_beneath(j->tree_fd, j->parent, O_PATH | O_DIRECTORY);
	if (fd < 0)
		return -1;
	j->parent_fd = fd;
	return fd;
}

static int64_t read_one(struct thread_data *td, struct tree_job *j, const struct tree_entry *e)
{
	const char *name;
	int dir = enter_parent(j, e->path, &name), fd, err = 0;
	uint64_t t0, t1, bytes = 0;
	struct tree_id id;

	if (dir < 0) {
		td->ts.drop_io_u[DDIR_READ]++;
		return op_error(j, "read: open the directory of", e->path, errno), -1;
	}
	t0 = mdfio_now();
	fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
	} else if (id_of(fd, "", &id) || !same_file(e, &id)) {
		err = -1;
	} else {
		for (;;) {
			ssize_t got = read(fd, j->buf, TREE_COPY_BUF);

			if (got < 0) {
				err = errno;
				break;
			}
			if (!got)
				break;
			bytes += (uint64_t)got;
		}
	}
	if (fd >= 0 && close(fd) && !err)
		err = errno;
	t1 = mdfio_now();
	if (err) {
		td->ts.drop_io_u[DDIR_READ]++;
		op_error(j, "read:", e->path, err > 0 ? err : 0);
		return -1;
	}
	mdfio_add_clat(td, DDIR_READ, t1 - t0, bytes);
	return (int64_t)bytes;
}

static int64_t rewrite_one(struct thread_data *td, struct tree_job *j, const struct tree_entry *e)
{
	const char *name;
	int dir = enter_parent(j, e->path, &name), fd, err = 0;
	uint64_t t0, t1;
	struct tree_id id;
	size_t put = 0;

	if (dir < 0) {
		td->ts.drop_io_u[DDIR_WRITE]++;
		return op_error(j, "rewrite: open the directory of", e->path, errno), -1;
	}
	t0 = mdfio_now();
	/* no O_TRUNC: the file is truncated only once it has proved to be
	 * the one the copy made */
	fd = openat(dir, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
	} else if (id_of(fd, "", &id) || !same_file(e, &id)) {
		err = -1;
	} else if (ftruncate(fd, 0)) {
		err = errno;
	} else {
		while (put < j->value_len) {
			ssize_t w = write(fd, j->value + put, j->value_len - put);

			if (w < 0) {
				err = errno;
				break;
			}
			put += (size_t)w;
		}
	}
	if (fd >= 0 && close(fd) && !err)
		err = errno;
	t1 = mdfio_now();
	if (err) {
		td->ts.drop_io_u[DDIR_WRITE]++;
		op_error(j, "rewrite:", e->path, err > 0 ? err : 0);
		return -1;
	}
	mdfio_add_clat(td, DDIR_WRITE, t1 - t0, j->value_len);
	return (int64_t)j->value_len;
}

/* A name the delete leaves: not what the copy made there, or a directory
 * that holds names the copy did not make. Not an error: it is kept. */
static void left(struct tree_job *j, const char *path, const char *why)
{
	if (j->left++)
		return;
	snprintf(j->first_left, sizeof(j->first_left), "%s%s%s (%s)",
		 TREE_NAME, strcmp(path, ".") ? "/" : "", strcmp(path, ".") ? path : "", why);
	one_line(j->first_left);
}

static int64_t delete_one(struct thread_data *td, struct tree_job *j, const struct tree_entry *e)
{
	const char *name;
	int dir = enter_parent(j, e->path, &name), err = 0;
	uint64_t t0, t1;
	struct tree_id id;
	int is_dir = e->type == 'd';

	if (dir < 0) {
		if (errno == ENOENT)
			return 0;	/* gone with its directory, or before */
		if (errno == ELOOP || errno == ENOTDIR || errno == EXDEV) {
			/* a directory on its way is a symlink now, or no
			 * directory: the name is not reached, so not touched */
			left(j, e->path, "a directory on its way is not the copy's");
			return 0;
		}
		td->ts.drop_io_u[DDIR_TRIM]++;
		return op_error(j, "delete: open the directory of", e->path, errno), -1;
	}
	/* the name must still hold what the copy made there */
	if (id_of(dir, name, &id)) {
		if (errno == ENOENT)
			return 0;
		td->ts.drop_io_u[DDIR_TRIM]++;
		return op_error(j, "delete: stat", e->path, errno), -1;
	}
	if (!same_file(e, &id)) {
		left(j, e->path, "not what the copy made there");
		return 0;
	}
	t0 = mdfio_now();
	err = unlinkat(dir, name, is_dir ? AT_REMOVEDIR : 0) ? errno : 0;
	t1 = mdfio_now();
	if (err == ENOTEMPTY || err == EEXIST) {
		if (is_dir)
			failed_sync(td);
		left(j, e->path, "it holds names the copy did not make");
		return 0;
	}
	if (err) {
		if (is_dir)
			failed_sync(td);
		else
			td->ts.drop_io_u[DDIR_TRIM]++;
		return op_error(j, "delete:", e->path, err), -1;
	}
	if (is_dir)
		record(td, DDIR_SYNC, t0, t1);
	else
		mdfio_add_clat(td, DDIR_TRIM, t1 - t0, 0);
	return 0;
}

/* ------------------------------------------------------------- the job */

static uint64_t fnv_step(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

/* The manifest's entries this rank works on: read and rewrite split the
 * files among the ranks, entry k to rank k mod N; delete takes every
 * entry, the deepest first. */
static uint64_t rank_units(const struct tree_job *j)
{
	uint64_t n = 0, k;

	if (j->phase == TP_DELETE)
		return j->man.n;
	for (k = 0; k < j->man.files; k++)
		n += k % j->ranks == j->rank;
	return n;
}

static const struct tree_entry *unit_entry(struct tree_job *j, uint64_t k)
{
	if (j->phase == TP_DELETE)
		return &j->man.entry[j->man.n - 1 - k];
	return j->man.file[k * j->ranks + j->rank];
}

static int open_tree(struct tree_job *j, const char *root)
{
	struct tree_id id;

	if (tree_manifest_read(j->root_fd, TREE_MANIFEST, &j->man))
		return mdfio_error("directory=%s: %s", root, j->man.why);
	j->tree_fd = openat(j->root_fd, TREE_NAME, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (j->tree_fd < 0)
		return mdfio_error("directory=%s: cannot open %s: %s", root, TREE_NAME, strerror(errno));
	if (id_of(j->tree_fd, "", &id) || !same_file(&j->man.entry[0], &id))
		return mdfio_error("directory=%s: %s/%s is not the tree %s lists (it was replaced); refusing to touch it",
				   root, root, TREE_NAME, TREE_MANIFEST);
	return 0;
}

static int start_copy(struct tree_job *j, const char *root, const struct tree_values *o)
{
	struct stat st;
	int src, fd;
	uint64_t count = 0;

	snprintf(j->source, sizeof(j->source), "%s", o->source && *o->source ? o->source : TREE_DEFAULT_SOURCE);
	src = open(j->source, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (src < 0)
		return mdfio_error("tree_source=%s: not a directory that can be read: %s", j->source, strerror(errno));
	if (count_tree(src, j->source, &count)) {
		close(src);
		return 1;
	}
	close(src);
	if (!fstatat(j->root_fd, TREE_NAME, &st, AT_SYMLINK_NOFOLLOW) ||
	    !fstatat(j->root_fd, TREE_MANIFEST, &st, AT_SYMLINK_NOFOLLOW))
		return mdfio_error("directory=%s: %s/%s or %s/%s already exists: refusing to copy over it (run phase=delete after a copy; nothing was touched)",
				   root, root, TREE_NAME, root, TREE_MANIFEST);
	fd = openat(j->root_fd, TREE_MANIFEST, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || !(j->manifest = fdopen(fd, "w")))
		return mdfio_error("directory=%s: cannot create %s: %s", root, TREE_MANIFEST, strerror(errno));
	if (tree_manifest_header(j->manifest))
		return mdfio_error("directory=%s: cannot write %s: %s", root, TREE_MANIFEST, strerror(errno));
	j->units = count + 1;
	return 0;
}

static int start_find(struct tree_job *j, const struct tree_values *o)
{
	char *s, *save = NULL, *p;

	s = strdup(o->iname && *o->iname ? o->iname : TREE_DEFAULT_INAME);
	for (p = strtok_r(s, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
		if (j->nr_patterns == TREE_MAX_PATTERNS) {
			free(s);
			return mdfio_error("find_iname: at most %d patterns", TREE_MAX_PATTERNS);
		}
		j->patterns[j->nr_patterns++] = strdup(p);
	}
	free(s);
	if (!j->nr_patterns)
		return mdfio_error("find_iname=%s: expected one or more name patterns separated by ':'", o->iname);
	j->units = j->nr_patterns;
	return 0;
}

static int tree_init(struct thread_data *td)
{
	struct tree_options *given = td->eo;
	const struct tree_values *o;
	struct thread_data *parent = parent_of(td);
	struct tree_job *j;
	const char *root = td->o.directory;
	uint64_t v;

	mdfio_error_scope(parent->thread_number);
	/* fio frees the options' strings: their picked values are kept
	 * apart (pick may cut a string, never moves it) */
	o = &(struct tree_values){ pick(given->source), pick(given->iname),
				   pick(given->rewrite_size), pick(given->drop_caches) };
	if (!given->phase)
		return mdfio_error("phase= is required: copy, find, read, rewrite or delete");
	j = calloc(1, sizeof(*j));
	if (!j)
		return mdfio_error("out of memory");
	td->io_ops_data = j;
	j->phase = (enum tree_phase)(given->phase - 1);
	j->ddir = phases[j->phase].ddir;
	j->rank = (uint32_t)td->subjob_number;
	j->ranks = parent->o.numjobs;
	j->parent_fd = j->tree_fd = j->root_fd = -1;
	j->bs = td->o.bs[DDIR_WRITE];
	if (td->o.td_ddir != phases[j->phase].rw)
		return mdfio_error("rw: phase=%s reports its count as rw=%s; remove the rw= option",
				   phases[j->phase].name, phases[j->phase].rw_name);
	if (phases[j->phase].one_rank && j->ranks > 1)
		return mdfio_error("numjobs=%u: phase=%s runs as one rank, as the study's command does (numjobs=1)",
				   j->ranks, phases[j->phase].name);
	if (!root || !*root || strchr(root, ':'))
		return mdfio_error("directory= is required: one existing directory, which the copy goes into as %s/", TREE_NAME);
	if (o->source && *o->source && j->phase != TP_COPY)
		return mdfio_error("tree_source= is the copy's: phase=%s works on what the copy made", phases[j->phase].name);
	if (o->iname && *o->iname && j->phase != TP_FIND)
		return mdfio_error("find_iname= is the search's (phase=find), not phase=%s's", phases[j->phase].name);
	if (o->rewrite_size && *o->rewrite_size && j->phase != TP_REWRITE)
		return mdfio_error("rewrite_size= is phase=rewrite's, not phase=%s's", phases[j->phase].name);
	v = 0;
	if (o->drop_caches && *o->drop_caches && parse_count("drop_caches", o->drop_caches, 0, 1, &v))
		return 1;
	j->root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (j->root_fd < 0)
		return mdfio_error("directory=%s: not an existing directory: %s", root, strerror(errno));
	if (posix_memalign((void **)&j->buf, 4096, TREE_COPY_BUF))
		return mdfio_error("out of memory");
	switch (j->phase) {
	case TP_COPY:
		if (start_copy(j, root, o))
			return 1;
		break;
	case TP_FIND:
		if (start_find(j, o))
			return 1;
		break;
	case TP_REWRITE: {
		uint64_t size = TREE_DEFAULT_REWRITE, h = 0x6d64666955ULL;
		size_t i;

		if (o->rewrite_size && *o->rewrite_size &&
		    parse_count("rewrite_size", o->rewrite_size, 1, 1 << 20, &size))
			return 1;
		/* the same value for every file and rank: the study writes
		 * one random value, made once */
		j->value_len = (size_t)size;
		j->value = malloc(j->value_len);
		if (!j->value)
			return mdfio_error("out of memory");
		for (i = 0; i < j->value_len; i++)
			j->value[i] = (unsigned char)((h = fnv_step(h + i)) >> 56);
	}
		/* fall through */
	case TP_READ:
	case TP_DELETE:
		if (open_tree(j, root))
			return 1;
		if (j->phase != TP_DELETE && j->ranks > j->man.files) {
			/* a rank without a file would have no phase time */
			return mdfio_error("numjobs=%u: more ranks than the %zu files the copy made; each reads or rewrites its share",
					   j->ranks, j->man.files);
		}
		j->units = rank_units(j);
		break;
	default:
		break;
	}
	if (v && drop_caches(td, j))
		return 1;
	if (!j->units)
		return mdfio_error("phase=%s: nothing to do (the tree is empty)", phases[j->phase].name);
	set_units(td, j->units);
	/* each unit's failure is counted, as md-workbench counts its
	 * operations'; the job fails at its end */
	td->o.continue_on_error = ERROR_TYPE_ANY;
	td->ts.continue_on_error = ERROR_TYPE_ANY;
	td->o.disable_lat = td->o.disable_clat = 1;
	td->o.disable_slat = td->o.disable_bw = 1;
	return 0;
}

static int tree_setup(struct thread_data *td)
{
	if (!td->files || !td->o.nr_files)
		return 0;
	if (!dropped) {
		void *p = mmap(NULL, DROPPED_SLOTS * sizeof(uint32_t), PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return mdfio_error("out of memory");
		dropped = p;
	}
	mdfio_share_errors();
	/* the units are known once the job starts (init); fio wants a size */
	set_units(td, 1);
	return 0;
}

static enum fio_q_status tree_queue(struct thread_data *td, struct io_u *io_u)
{
	struct tree_job *j = td->io_ops_data;
	int64_t bytes = 0;

	if (j->next >= j->units) {
		td->done = 1;
		io_u->resid = io_u->xfer_buflen;
		return FIO_Q_COMPLETED;
	}
	if (!j->next)
		j->t0 = mdfio_now();
	switch (j->phase) {
	case TP_COPY:
		bytes = copy_one(td, j);
		break;
	case TP_FIND:
		find_dir(td, j, j->root_fd, TREE_NAME, j->patterns[j->next]);
		break;
	case TP_READ:
		bytes = read_one(td, j, unit_entry(j, j->next));
		break;
	case TP_REWRITE:
		bytes = rewrite_one(td, j, unit_entry(j, j->next));
		break;
	case TP_DELETE:
		bytes = delete_one(td, j, unit_entry(j, j->next));
		break;
	default:
		break;
	}
	j->next++;
	if (bytes < 0) {
		/* counted as the job's error; fio adds no bytes for it */
		io_u->error = EIO;
	} else {
		/* io_bytes holds the bytes the phase really moved: fio adds
		 * the unit's bs, taken back here */
		td->io_bytes[io_u->ddir] += (uint64_t)bytes - io_u->xfer_buflen;
	}
	if (++j->finished == j->units) {
		mdfio_add_slat(td, j->ddir, mdfio_now() - j->t0);
		td->done = 1;
	}
	return FIO_Q_COMPLETED;
}

static void tree_cleanup(struct thread_data *td)
{
	struct tree_job *j = td->io_ops_data;
	unsigned int i;

	if (!j)
		return;
	while (j->depth)
		pop_level(j);
	free(j->levels);
	if (j->manifest && fclose(j->manifest))
		op_error(j, "copy: write", TREE_MANIFEST, errno);
	if (j->phase == TP_FIND && j->units) {
		td->ts.short_io_u[DDIR_READ] = j->names_seen;
		td->ts.short_io_u[DDIR_WRITE] = j->names_matched;
	}
	if (j->specials)
		mdfio_notice("rank %u copy: %" PRIu64 " names of the source are neither files, directories nor symlinks (FIFOs, sockets, devices): not copied",
			     j->rank, j->specials);
	if (j->phase == TP_DELETE && j->finished == j->units && j->units) {
		if (j->left)
			mdfio_notice("delete: %" PRIu64 " names of the copy are left in place, such as %s; %s is kept, which lists what the copy made",
				     j->left, j->first_left, TREE_MANIFEST);
		else if (unlinkat(j->root_fd, TREE_MANIFEST, 0))
			op_error(j, "delete:", TREE_MANIFEST, errno);
	}
	if (j->errors) {
		mdfio_error("rank %u %s: %" PRIu64 " error%s (first: %s)", j->rank,
			    phases[j->phase].name, j->errors, j->errors > 1 ? "s" : "", j->first_error);
		if (!td->error)
			td_verror(td, EIO, "mdfio-tree");
	}
	if (j->units && j->finished < j->units && !td->error)
		td_verror(td, EIO, "mdfio-tree");
	for (i = 0; i < j->nr_patterns; i++)
		free(j->patterns[i]);
	tree_manifest_free(&j->man);
	if (j->parent_fd >= 0)
		close(j->parent_fd);
	if (j->tree_fd >= 0)
		close(j->tree_fd);
	if (j->root_fd >= 0)
		close(j->root_fd);
	free(j->value);
	free(j->buf);
	free(j);
	td->io_ops_data = NULL;
}

static int tree_open_file(struct thread_data *td, struct fio_file *f)
{
	(void)td;
	(void)f;
	return 0;
}

static struct ioengine_ops tree_engine = {
	.name = "mdfio-tree",
	.version = FIO_IOOPS_VERSION,
	.flags = FIO_DISKLESSIO | FIO_NOSTATS | FIO_NOFILEHASH | FIO_SYNCIO,
	.init = tree_init,
	.setup = tree_setup,
	.queue = tree_queue,
	.cleanup = tree_cleanup,
	.open_file = tree_open_file,
	.close_file = tree_open_file,
	.options = tree_options,
	.option_struct_size = sizeof(struct tree_options),
};

MDFIO_EXPORT void get_ioengine(struct ioengine_ops **ops);
void get_ioengine(struct ioengine_ops **ops)
{
	*ops = mdfio_loaded_by_built_fio("mdfio-tree") ? &tree_engine : NULL;
}
