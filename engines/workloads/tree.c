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
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tree.h"

const struct tree_phase_info phases[TP_NR] = {
	[TP_COPY] = { "copy", DDIR_WRITE, TD_DDIR_WRITE, "write", 1, start_copy, copy_unit },
	[TP_FIND] = { "find", DDIR_READ, TD_DDIR_READ, "read", 1, start_find, find_unit },
	[TP_READ] = { "read", DDIR_READ, TD_DDIR_READ, "read", 0, start_entries, read_unit },
	[TP_REWRITE] = { "rewrite", DDIR_WRITE, TD_DDIR_WRITE, "write", 0, start_rewrite, rewrite_unit },
	[TP_DELETE] = { "delete", DDIR_TRIM, TD_DDIR_TRIM, "trim", 1, start_entries, delete_unit },
};

struct tree_options {
	void *pad;		/* fio keeps its thread_data pointer here */
	unsigned int phase;	/* enum tree_phase + 1; 0: unset */
	char *source;
	char *iname;
	char *rewrite_size;
	char *drop_caches;
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


/* ------------------------------------------------------------- the job */

static int tree_init(struct thread_data *td)
{
	struct tree_options *given = td->eo;
	const struct tree_values *o;
	struct thread_data *parent = parent_of(td);
	struct tree_job *j;
	const char *root = td->o.directory;
	uint64_t v, size;

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
	size = TREE_DEFAULT_REWRITE;
	if (o->rewrite_size && *o->rewrite_size &&
	    parse_count("rewrite_size", o->rewrite_size, 1, 1 << 20, &size))
		return 1;
	j->value_len = (size_t)size;
	j->root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (j->root_fd < 0)
		return mdfio_error("directory=%s: not an existing directory: %s", root, strerror(errno));
	if (posix_memalign((void **)&j->buf, 4096, TREE_COPY_BUF))
		return mdfio_error("out of memory");
	if (phases[j->phase].start(j, root, o))
		return 1;
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
	bytes = phases[j->phase].unit(td, j, j->next);
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
