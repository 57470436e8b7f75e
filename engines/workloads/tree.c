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
 * a time beneath its directory, following no symlink.
 *
 * A section's clones are ranks, numbered across fio processes and hosts as
 * md-workbench's are (hosts=, lib/world.c), and meet twice at the rank
 * file's barrier (lib/rankfile.c, in directory=): before the phase is
 * prepared, so that the previous one has ended on every host, and when it
 * starts, from whose release each rank's time runs. Rank 0 alone copies,
 * searches and deletes; the reads and the rewrite split the files over all
 * ranks. The parts: tree_copy.c, tree_find.c and tree_entries.c give the
 * phases; tree_names.c and tree_account.c what they share. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	char *hosts;
	char *join_timeout;
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
	MDFIO_STR_OPT("hosts", struct tree_options, hosts,
	    "host names of the fio servers of one run, ','-separated; each takes numjobs ranks in this order"),
	MDFIO_STR_OPT("join_timeout", struct tree_options, join_timeout,
	    "seconds a rank waits at a barrier for ranks no process has started (default 60)"),
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

/* drop_caches=1: the first rank of each fio drops its host's caches; the
 * barrier after it holds every rank until all have. */
static int drop_caches(struct thread_data *td)
{
	int fd;

	if (td->subjob_number)
		return 0;
	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "3", 1) != 1) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		return mdfio_error("drop_caches=1: cannot write /proc/sys/vm/drop_caches: %s (it needs root)",
				   strerror(err));
	}
	close(fd);
	return 0;
}

/* ------------------------------------------------------------- the job */

/* Where the job's ranks stand in the run: hosts= or a launcher's
 * variables, else this fio job alone (lib/world.c). 0, or 1 with msg. */
static int world_of(struct thread_data *td, const char *hosts, struct mdfio_world *w,
		    char *host, size_t hostlen, char *msg, size_t msglen)
{
	if (gethostname(host, hostlen))
		snprintf(host, hostlen, "?");
	host[hostlen - 1] = 0;
	return mdfio_world_find(w, mdfio_job_parent(td)->o.numjobs, hosts, host,
				(const char *(*)(const char *))getenv, msg, msglen);
}

/* Every rank of the run meets here; step names which of a phase's two
 * barriers (a section's thread number tells its sections apart, the same
 * on every host of one jobfile). */
static int barrier(struct thread_data *td, struct tree_job *j, unsigned int timeout_s, const char *step)
{
	char phase[MDFIO_RANKFILE_PHASE_LEN], msg[1024];
	uint64_t b;

	snprintf(phase, sizeof(phase), "tree-%s-%d%s", phases[j->phase].name,
		 mdfio_job_parent(td)->thread_number, step);
	j->rf.waiting = mdfio_answer_fio_waiting;
	j->rf.waiting_arg = td;
	if (mdfio_rankfile_barrier(&j->rf, phase, timeout_s * 1000u, &b, NULL, NULL, msg, sizeof(msg)))
		return mdfio_error("%s: rank %u (host %s), tree %s: %s%s", td->o.directory, j->rank,
				   j->host, phases[j->phase].name, msg,
				   mdfio_reservation_stopped(td->o.directory, NULL, 0) ?
				   "; the run stops here" : "");
	return 0;
}

/* What the phase's units are, and the caches dropped: between the two
 * barriers, so that the previous phase has ended on every host before (a
 * read on one host reads the copy another made) and none of it is timed. */
static int prepare(struct thread_data *td, struct tree_job *j, const char *root,
		   const struct tree_values *o, uint64_t drop)
{
	if (phases[j->phase].one_rank && j->rank)
		return 0;	/* rank 0's phase: this rank only meets it */
	if (phases[j->phase].start(j, root, o))
		return 1;
	if (drop && drop_caches(td))
		return 1;
	/* a split phase's work is every rank's files: one rank may have
	 * none of them */
	if (!(phases[j->phase].one_rank ? j->units : j->man.files))
		return mdfio_error("phase=%s: nothing to do (the tree is empty)", phases[j->phase].name);
	return 0;
}

static int tree_init(struct thread_data *td)
{
	struct tree_options *given = td->eo;
	const struct tree_values *o;
	struct thread_data *parent = mdfio_job_parent(td);
	struct tree_job *j;
	const char *root = td->o.directory;
	uint64_t v, size, join_timeout = 60;
	char msg[1024];

	mdfio_error_scope(parent->thread_number);
	/* fio frees the options' strings: their picked values are kept
	 * apart (pick may cut a string, never moves it) */
	o = &(struct tree_values){ pick(given->source), pick(given->iname),
				   pick(given->rewrite_size), pick(given->drop_caches),
				   pick(given->hosts), pick(given->join_timeout) };
	/* a rank of this fio has said why the run stopped */
	if (mdfio_reservation_stopped(root, NULL, 0))
		return 1;
	if (!given->phase)
		return mdfio_error("phase= is required: copy, find, read, rewrite or delete");
	j = calloc(1, sizeof(*j));
	if (!j)
		return mdfio_error("out of memory");
	td->io_ops_data = j;
	j->phase = (enum tree_phase)(given->phase - 1);
	j->ddir = phases[j->phase].ddir;
	j->numjobs = parent->o.numjobs;
	j->parent_fd = j->tree_fd = j->root_fd = j->rf.fd = -1;
	j->bs = td->o.bs[DDIR_WRITE];
	if (td->o.td_ddir != phases[j->phase].rw)
		return mdfio_error("rw: phase=%s reports its count as rw=%s; remove the rw= option",
				   phases[j->phase].name, phases[j->phase].rw_name);
	if (phases[j->phase].one_rank && j->numjobs > 1)
		return mdfio_error("numjobs=%u: phase=%s runs as one rank, as the study's command does (numjobs=1)",
				   j->numjobs, phases[j->phase].name);
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
	if (o->join_timeout && parse_count("join_timeout", o->join_timeout, 1, 86400, &join_timeout))
		return 1;
	if (world_of(td, o->hosts, &j->world, j->host, sizeof(j->host), msg, sizeof(msg)))
		return mdfio_error("%s", msg);
	j->rank = j->world.base + (uint32_t)td->subjob_number;
	j->ranks = j->world.total;
	j->root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (j->root_fd < 0)
		return mdfio_error("directory=%s: not an existing directory: %s", root, strerror(errno));
	if (posix_memalign((void **)&j->buf, 4096, TREE_COPY_BUF))
		return mdfio_error("out of memory");
	if (mdfio_rankfile_claim_reserved(&j->rf, j->root_fd, j->rank, j->ranks, j->numjobs, j->host,
					  mdfio_reservation(root), NULL, msg, sizeof(msg)))
		return mdfio_error("directory=%s: %s", root, msg);
	j->claimed = 1;
	/* a barrier stops once nobody is left to receive the results */
	j->rf.stopped = mdfio_reservation_orphaned;
	j->rf.stopped_arg = td->o.directory;
	if (barrier(td, j, (unsigned int)join_timeout, ""))
		return 1;
	if (prepare(td, j, root, o, v)) {
		snprintf(msg, sizeof(msg), "rank %u: %s", j->rank, mdfio_last_error());
		mdfio_rankfile_abort(&j->rf, msg);
		return 1;
	}
	if (barrier(td, j, (unsigned int)join_timeout, "-go"))
		return 1;
	/* the phase's time runs from the release, as md-workbench's after
	 * its barrier: the slowest rank's is the phase's */
	j->t0 = mdfio_now();
	/* each unit's failure is counted, as md-workbench counts its
	 * operations'; the job fails at its end */
	td->o.continue_on_error = ERROR_TYPE_ANY;
	td->ts.continue_on_error = ERROR_TYPE_ANY;
	td->o.disable_lat = td->o.disable_clat = 1;
	td->o.disable_slat = td->o.disable_bw = 1;
	if (!j->units) {
		/* a rank with no share ends at the release: its time is the
		 * clock's from there, 0 ns if it has not moved, which the
		 * reader takes from a rank with no unit (fiojson.slot_seconds) */
		mdfio_add_slat(td, j->ddir, mdfio_now() - j->t0);
		set_units(td, 1);
		td->done = 1;
		return 0;
	}
	set_units(td, j->units);
	return 0;
}

static int tree_setup(struct thread_data *td)
{
	struct tree_options *given = td->eo;
	struct mdfio_world w;
	char host[HOST_NAME_MAX + 1], desc[FIO_JOBDESC_SIZE], msg[512];

	if (!td->files || !td->o.nr_files)
		return 0;
	mdfio_share_errors();
	/* the units are known once the job starts (init); fio wants a size */
	set_units(td, 1);
	/* the rank's place in fio's job description, which mdfio-report
	 * reads as md-workbench's; an error is the job's init's to say */
	if (!given->phase || world_of(td, pick(given->hosts), &w, host, sizeof(host), msg, sizeof(msg)))
		return 0;
	/* the ranks' waiter and, under a launcher, its fence and its watch:
	 * here, before fio forks any job */
	if (mdfio_reserve_ranks(td, 0, 0, host, w.launcher, NULL))
		return 1;
	if (!td->o.description || strncmp(td->o.description, "mdfio ", 6)) {
		snprintf(desc, sizeof(desc), "mdfio rank=%u ranks=%u host=%s; tree %s",
			 w.base + (uint32_t)td->subjob_number, w.total, host, phases[given->phase - 1].name);
		free(td->o.description);
		td->o.description = strdup(desc);
	}
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

	if (!j) {
		mdfio_job_ended(td);
		return;
	}
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
	if (j->claimed)
		(void)mdfio_rankfile_release(&j->rf, j->root_fd, NULL, NULL);
	mdfio_job_ended(td);
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
