/* The phase protocol over the status file (status.c): a rank enters a phase
 * after checking that the namespace is what the job expects, and leaves it
 * recording how far it got. The table of what each phase is: phases.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job.h"
#include "namespace.h"

/* Returns 0 if no dataset name of any rank exists yet in the store (as
 * anything: a symlink too), else writes the first existing path into p. */
static int namespace_clear(struct mdfio_job *j, char *p, size_t len)
{
	char name[MDFIO_DATASET_NAME_MAX];
	const char *what;
	uint32_t r, d;

	for (r = 0; r < j->ranks; r++) {
		for (d = 0; d < j->datasets; d++) {
			mdfio_dataset_name(name, r, d);
			if (j->store->probe(j->store_state, name, &what) != MDFIO_PROBE_ABSENT) {
				mdfio_dataset_path(p, len, j->store_where, r, d);
				return 1;
			}
		}
	}
	return 0;
}

/* The status a new namespace starts with: a precreate's, every rank
 * precreating from start_index; or that of a namespace md-workbench made
 * and this phase adopts, every rank ready at the run-info file's position,
 * changed by no job of mdfio yet. */
static int fill_status(struct mdfio_job *j, struct mdfio_status *st)
{
	uint64_t pos = j->adopt ? j->run_info_pos : j->start;
	uint32_t r;

	memset(st, 0, sizeof(*st));
	st->rank = calloc(j->ranks, sizeof(*st->rank));
	if (!st->rank)
		return mdfio_error("out of memory");
	st->ranks = j->ranks;
	st->datasets = j->datasets;
	st->precreate = j->precreate;
	st->object_size = j->size;
	st->start = pos;
	st->version = MDFIO_STATUS_VERSION;
	/* md-workbench's namespace holds objects, whichever engine adopts it */
	st->no_objects = j->be->no_objects && !j->adopt;
	for (r = 0; r < j->ranks; r++) {
		st->rank[r].state = j->adopt ? MDFIO_RS_READY : MDFIO_RS_PRECREATING;
		st->rank[r].pos = pos;
		if (!j->adopt)
			snprintf(st->rank[r].run, MDFIO_RUN_LEN, "%s", j->run);
	}
	return 0;
}

/* A namespace without a status, whose run-info file this phase was given:
 * every dataset of every rank must be the directory md-workbench's
 * precreate made. One line and 1 if one is not. */
static int adoptable(struct mdfio_job *j)
{
	char name[MDFIO_DATASET_NAME_MAX];
	uint32_t r, d;

	if (j->ro_root)
		return mdfio_error("run_info_file=%s: %s is on a read-only file system, where mdfio cannot create the %s that adopting md-workbench's namespace needs",
				   j->run_info, j->root, MDFIO_STATUS_NAME);
	for (r = 0; r < j->ranks; r++) {
		for (d = 0; d < j->datasets; d++) {
			const char *what = NULL;
			int kind;

			mdfio_dataset_name(name, r, d);
			kind = j->store->probe(j->store_state, name, &what);
			if (kind < 0)
				what = strerror(-kind);
			else if (kind == MDFIO_PROBE_ABSENT)
				what = "is missing";
			else if (kind == MDFIO_PROBE_SYMLINK)
				what = "is a symlink";
			else if (kind == MDFIO_PROBE_DATASET)
				continue;
			mdfio_dataset_path(j->path, sizeof(j->path), j->store_where, r, d);
			return mdfio_error("run_info_file=%s: cannot adopt md-workbench's namespace: dataset %s %s (nothing was touched)",
					   j->run_info, j->path, what);
		}
	}
	return 0;
}

static int status_mismatch(struct mdfio_job *j, const struct mdfio_status *st)
{
	if (st->ranks != j->ranks)
		return mdfio_error("%s was made with %" PRIu32 " ranks; this job has numjobs=%" PRIu32,
				 j->status_path, st->ranks, j->ranks);
	if (st->datasets != j->datasets)
		return mdfio_error("%s was made with datasets=%" PRIu32 "; this job has datasets=%" PRIu32,
				 j->status_path, st->datasets, j->datasets);
	if (st->precreate != j->precreate)
		return mdfio_error("%s was made with precreate_per_set=%" PRIu64 "; this job has %" PRIu64,
				 j->status_path, st->precreate, j->precreate);
	if (st->object_size != j->size)
		return mdfio_error("%s was made with object size (bs) %" PRIu64 "; this job has bs=%zu",
				 j->status_path, st->object_size, j->size);
	return 0;
}

/* A namespace of mdfio-null holds no object, and one of a real engine
 * objects mdfio-null cannot see: a benchmark of the other kind would count
 * every step as failed and still move the FIFO, and mdfio-null's cleanup
 * would remove none of a real namespace's objects. A real engine's cleanup
 * of mdfio-null's namespace is allowed: it deletes no file (recover 3). */
static int engine_mismatch(struct mdfio_job *j, struct mdfio_status *st)
{
	/* an older mdfio did not say: the namespace is taken to be of this
	 * engine's kind, and from its next update says so */
	if (st->version < 4)
		st->no_objects = j->be->no_objects;
	if (j->ph->makes_datasets || !st->no_objects == !j->be->no_objects)
		return 0;
	if (st->no_objects && j->phase == MDFIO_BENCHMARK)
		return mdfio_error("%s: the namespace in %s was made by mdfio-null and holds no objects, so a benchmark with %s would find none: run phase=cleanup, then phase=precreate with %s",
				   j->status_path, j->root, j->be->name, j->be->name);
	if (!st->no_objects)
		return mdfio_error("%s: the namespace in %s holds objects a real engine made, which %s does not touch: run its %s with the engine that made them",
				   j->status_path, j->root, j->be->name, mdfio_phase_name(j->phase));
	return 0;
}

/* The status's taken names, for the units of the phase. */
static int keep_taken(struct mdfio_job *j, const struct mdfio_status *st)
{
	free(j->taken);
	j->taken = NULL;
	j->nr_taken = 0;
	if (!st->nr_taken)
		return 0;
	j->taken = malloc((size_t)st->nr_taken * sizeof(*j->taken));
	if (!j->taken)
		return mdfio_error("out of memory");
	memcpy(j->taken, st->taken, (size_t)st->nr_taken * sizeof(*j->taken));
	j->nr_taken = st->nr_taken;
	return 0;
}

int mdfio_phase_precheck(struct mdfio_job *j)
{
	struct stat sb;
	char msg[512];
	uint64_t pos;
	int recover = 0;

	switch (mdfio_reservation_stopped(j->root, msg, sizeof(msg))) {
	case MDFIO_STOP_NONE:
		break;
	case MDFIO_STOP_FAILED:
		return mdfio_error("this run stopped before this phase (%s)", msg);
	default:
		/* a rank of this fio that could not start, or each that met
		 * the failed barrier, has said why */
		return mdfio_error_said("this run stopped before this phase (%s)", msg);
	}
	/* a file that is not md-workbench's is refused before any phase
	 * touches anything, as it will not be replaced at its end */
	if (j->run_info[0]) {
		int err = mdfio_run_info_read(j->run_info, &j->run_info_pos, msg, sizeof(msg));

		if (err && err != ENOENT)
			return mdfio_error("run_info_file=%s: %s", j->run_info, msg);
		j->run_info_have = !err;
	}
	if (j->ph->makes_datasets ||
	    !fstatat(j->root_fd, MDFIO_STATUS_NAME, &sb, AT_SYMLINK_NOFOLLOW) || errno != ENOENT)
		return 0;
	if (j->run_info_have)
		return 0;	/* adopted on entering, once every rank is here */
	if (j->run_info[0])
		return mdfio_error("%s: no namespace here (no %s, and run_info_file=%s does not exist): run phase=precreate first",
				   j->root, MDFIO_STATUS_NAME, j->run_info);
	if (mdfio_status_enter(NULL, j->phase, j->rank, j->run, 0, &pos, &recover,
			       msg, sizeof(msg)))
		return mdfio_error("%s: %s", j->root, msg);
	return 0;
}

/* Reads the status (if there is one) under its lock and decides where this
 * rank starts: *have says whether there was one. Writes nothing. */
static int read_entry(struct mdfio_job *j, struct mdfio_status *st, int *fd,
		      int *have)
{
	char msg[512];
	int err = mdfio_status_lock(j->root_fd, j->ro_root, fd, msg, sizeof(msg));

	*have = !err;
	if (err && err != ENOENT)
		return mdfio_error("%s: %s", j->status_path, msg);
	if (*have && mdfio_status_read(j->root_fd, *fd, st, msg, sizeof(msg))) {
		mdfio_error("%s: %s; refusing to touch this directory", j->status_path, msg);
		goto fail;
	}
	if (*have && (status_mismatch(j, st) || engine_mismatch(j, st)))
		goto fail;
	/* md-workbench's namespace: the status it will get, where every rank
	 * is at the run-info file's position */
	j->adopt = !*have && !j->ph->makes_datasets && j->run_info_have;
	if (j->adopt && fill_status(j, st))
		return 1;
	j->pos = j->ns_start = j->start;	/* a new namespace's */
	if (mdfio_status_enter(*have || j->adopt ? st : NULL, j->phase, j->rank, j->run,
			       j->steps, &j->pos, &j->recover,
			       msg, sizeof(msg))) {
		mdfio_error("%s: %s", j->root, msg);
		goto fail;
	}
	/* both files say where the FIFO is; a recovery follows no position */
	if (*have && j->run_info_have && !j->ph->makes_datasets && !j->recover &&
	    j->pos != j->run_info_pos) {
		mdfio_error("run_info_file=%s holds pos: %" PRIu64 " but %s says %" PRIu64
			    ": which is right? (nothing was touched)",
			    j->run_info, j->run_info_pos, j->status_path, j->pos);
		goto fail;
	}
	if ((*have || j->adopt) && !j->ph->makes_datasets) {
		/* md-workbench's --start-item names the namespace's first
		 * index (one jobfile gives it to every phase) or, in a run of
		 * its own, where the FIFO is now; any other value would aim at
		 * objects that do not exist */
		if (j->start_set && j->start != st->start && j->start != j->pos) {
			mdfio_error("start_index=%" PRIu64 ": the namespace in %s starts at %" PRIu64
				    " and rank %" PRIu32 "'s FIFO is at %" PRIu64
				    "; give one of them, or leave start_index unset",
				    j->start, j->root, st->start, j->rank, j->pos);
			goto fail;
		}
		j->ns_start = st->start;
	}
	/* a real engine's cleanup of mdfio-null's namespace reads its
	 * datasets, in which no file is mdfio's */
	if (*have && st->no_objects && !j->be->no_objects && j->phase == MDFIO_CLEANUP && !j->recover)
		j->recover = 3;
	if (j->recover) {
		j->rec_old = mdfio_status_window(st, &j->rec_lo, &j->rec_hi);
		/* mdfio-null made no file, whatever an older status says */
		if (j->be->no_objects)
			j->rec_hi = j->rec_lo;
	}
	if (*have && !j->ph->makes_datasets && keep_taken(j, st))
		goto fail;
	return 0;
fail:
	mdfio_status_free(st);
	if (*have)
		mdfio_status_unlock(*fd);
	return 1;
}

int mdfio_enter_phase(struct mdfio_job *j, unsigned int repeat)
{
	struct mdfio_status st = { 0 };
	int fd, have;

	/* a precreate's logs are named before the status exists: a log that
	 * cannot be made then leaves nothing behind */
	if (j->ph->logs_before_status && mdfio_open_logs(j, repeat))
		return 1;
	if (read_entry(j, &st, &fd, &have)) {
		mdfio_close_logs(j, 1);
		return 1;
	}
	mdfio_status_free(&st);
	if (have)
		mdfio_status_unlock(fd);
	if (!have && j->ph->makes_datasets &&
	    namespace_clear(j, j->path, sizeof(j->path))) {
		mdfio_close_logs(j, 1);
		return mdfio_error("%s already exists: refusing to precreate over it (nothing was touched)",
				   j->path);
	}
	if (j->adopt && adoptable(j)) {
		mdfio_close_logs(j, 1);
		return 1;
	}
	/* every dataset the units use, before anything is touched; the other
	 * phases' log names need the position */
	if (mdfio_datasets_open(j) ||
	    (!j->ph->logs_before_status && mdfio_open_logs(j, repeat))) {
		mdfio_close_logs(j, 1);
		return 1;
	}
	return 0;
}

int mdfio_commit_phase(struct mdfio_job *j)
{
	struct mdfio_status st = { 0 };
	struct stat sb;
	uint64_t pos = j->pos;
	int fd, err, have;

	/* a read-only namespace: its status stays as found (a read_only
	 * benchmark does not move the position) */
	if (j->ro_root)
		return 0;
	/* the first rank of a precreate, or of a phase that adopts
	 * md-workbench's namespace, creates the status; a sibling may have
	 * done so since this rank looked */
	while ((j->ph->makes_datasets || j->adopt) &&
	       fstatat(j->root_fd, MDFIO_STATUS_NAME, &sb, AT_SYMLINK_NOFOLLOW) && errno == ENOENT) {
		if (fill_status(j, &st))
			return 1;
		err = mdfio_status_create(j->root_fd, &st);
		mdfio_status_free(&st);
		/* a sibling that created it meanwhile may have gone on to fill
		 * the file system, so that the temporary file this rank needed
		 * found no room: only a status still missing is an error */
		if (err && err != EEXIST &&
		    fstatat(j->root_fd, MDFIO_STATUS_NAME, &sb, AT_SYMLINK_NOFOLLOW))
			return mdfio_error("cannot create %s: %s", j->status_path,
					   strerror(err));
	}
	if (read_entry(j, &st, &fd, &have))
		return 1;
	if (!have || j->pos != pos) {
		/* only ranks of this run, which all passed the same checks,
		 * can have written it since */
		mdfio_error("%s changed between this rank's checks and its start", j->status_path);
		err = -1;
	} else {
		st.rank[j->rank].state = j->ph->working;
		st.rank[j->rank].pos = j->pos;
		/* whichever rank of the run created the status: each fio
		 * that created the root says so */
		if (j->ph->makes_datasets && mdfio_reservation_created(j->root))
			st.root_created = 1;
		/* a recovery keeps the I it recovers from, so that the window
		 * of one interrupted in turn is as wide */
		if (!j->recover)
			st.rank[j->rank].steps = j->ph->advances && !j->read_only ? j->steps : 0;
		snprintf(st.rank[j->rank].run, MDFIO_RUN_LEN, "%s", j->run);
		err = mdfio_status_write(j->root_fd, fd, &st);
		/* a cleanup is what makes room on a file system that is full
		 * (the update needs a file of its own): it goes on, and its
		 * leave records it */
		if ((err == ENOSPC || err == EDQUOT) && j->phase == MDFIO_CLEANUP) {
			mdfio_notice("rank %" PRIu32 ": cannot update %s: %s; the cleanup goes on, and records its end once its deletes have made room",
				     j->rank, j->status_path, strerror(err));
			j->unrecorded = 1;
			err = 0;
		} else if (err) {
			mdfio_error("cannot update %s: %s (it is left as it was)", j->status_path, strerror(err));
		}
	}
	mdfio_status_free(&st);
	if (have)
		mdfio_status_unlock(fd);
	if (err)
		return 1;
	j->entered = 1;
	return 0;
}

/* md-workbench stores the position its next run starts from after every
 * run without a cleanup, and only if it got there: the last rank out of a
 * precreate or benchmark that every rank completed writes it. */
static void store_position(struct mdfio_job *j, const struct mdfio_status *st)
{
	char msg[512];
	uint32_t r;

	if (!j->run_info[0] || j->ph->removes_datasets)
		return;
	for (r = 0; r < st->ranks; r++)
		if (st->rank[r].state != j->ph->done || strcmp(st->rank[r].run, j->run) ||
		    st->rank[r].pos != st->rank[0].pos)
			return;
	if (mdfio_run_info_write(j->run_info, st->rank[0].pos, msg, sizeof(msg))) {
		mdfio_error("run_info_file=%s: %s", j->run_info, msg);
		j->late_error = 1;
	}
}

/* Leaves the phase: records the new position; the last rank out of a
 * cleanup that removed everything also removes the status file. With
 * wait, an update that finds no room (ENOSPC, EDQUOT) while other ranks
 * are still in the phase returns -1 and says nothing: see
 * mdfio_leave_phase. */
static int leave_once(struct mdfio_job *j, int complete, int wait)
{
	struct mdfio_status st;
	struct mdfio_rank_rec *me;
	char msg[512];
	uint32_t r, cleaned = 0;
	int fd, err, last;

	/* a rank whose end the status cannot record fails its phase: the
	 * next one would find it still working */
	err = mdfio_status_lock(j->root_fd, 0, &fd, msg, sizeof(msg));
	/* the phase's end not recorded fails the job, as any error said */
	if (err) {
		mdfio_error("%s: %s", j->status_path,
			    err == ENOENT ? "removed while the phase ran" : msg);
		j->late_error = 1;
		return 0;
	}
	if (mdfio_status_read(j->root_fd, fd, &st, msg, sizeof(msg))) {
		mdfio_error("%s: %s", j->status_path, msg);
		j->late_error = 1;
		mdfio_status_unlock(fd);
		return 0;
	}
	if (st.version < 4)
		st.no_objects = j->be->no_objects;
	if (strcmp(st.left_run, j->run)) {
		st.left = 0;
		snprintf(st.left_run, MDFIO_RUN_LEN, "%s", j->run);
	}
	last = ++st.left == st.ranks;
	me = &st.rank[j->rank];
	if (j->unrecorded) {
		me->state = j->ph->working;
		me->pos = j->pos;
		snprintf(me->run, MDFIO_RUN_LEN, "%s", j->run);
	}
	if (complete) {
		me->state = j->ph->done;
		/* by the steps really done: a stonewall_timer may have
		 * stopped the rank before steps_per_set */
		if (j->ph->advances && !j->read_only)
			me->pos = j->pos + j->units / j->datasets;
		me->steps = 0;
	}
	/* every clone of this job passes here; one cleaned by an earlier job
	 * may still be about to enter and read the status */
	for (r = 0; r < st.ranks; r++)
		cleaned += st.rank[r].state == MDFIO_RS_CLEANED &&
			   !strcmp(st.rank[r].run, j->run);
	if (cleaned == st.ranks) {
		unsigned int stay = mdfio_status_remove_leftovers(j->root_fd, msg, sizeof(msg));

		if (stay)
			mdfio_notice("%s/%s%s looks like a status update left by a killed rank, but nothing proves it mdfio's: it stays",
				     j->root, msg, stay > 1 ? " (and more)" : "");
		err = unlinkat(j->root_fd, MDFIO_STATUS_NAME, 0) ? errno : 0;
		/* the last fio out of the rank file, which need not be this
		 * one, removes the root after it (mdfio_job_ended) */
		if (!err && st.root_created && mdfio_rankfile_mark_root(&j->rankfile))
			mdfio_notice("%s: cannot mark %s: mdfio created this root, but it stays",
				     j->root, MDFIO_RANKFILE_NAME);
	} else
		err = mdfio_status_write(j->root_fd, fd, &st);
	if ((err == ENOSPC || err == EDQUOT) && wait && !last) {
		mdfio_status_free(&st);
		mdfio_status_unlock(fd);
		return -1;
	}
	if (err) {
		mdfio_error("cannot update %s: %s (it is left as it was)", j->status_path, strerror(err));
		j->late_error = 1;
		last = 0;
	} else if (last)
		store_position(j, &st);
	mdfio_status_free(&st);
	mdfio_status_unlock(fd);
	return last;
}

int mdfio_leave_phase(struct mdfio_job *j, int complete)
{
	/* a cleanup makes room on a file system that is full, and the
	 * status's update needs a file of its own: a rank out before the
	 * others' deletes have made any waits for them, as long as a barrier
	 * waits for a rank */
	uint64_t until = mdfio_now() + (uint64_t)j->join_timeout * 1000000000u;
	int last;

	while ((last = leave_once(j, complete, j->phase == MDFIO_CLEANUP && mdfio_now() < until)) < 0) {
		usleep(MDFIO_ANSWER_MS * 1000);
		mdfio_answer_fio(j->td);
	}
	return last;
}

int mdfio_record_taken(struct mdfio_job *j, uint32_t rank, uint32_t d, uint64_t index)
{
	struct mdfio_status st;
	char msg[512];
	int fd, err;

	err = mdfio_status_lock(j->root_fd, 0, &fd, msg, sizeof(msg));
	if (err)
		return mdfio_error("%s: %s", j->status_path, err == ENOENT ? "removed while the phase ran" : msg);
	if (mdfio_status_read(j->root_fd, fd, &st, msg, sizeof(msg))) {
		mdfio_status_unlock(fd);
		return mdfio_error("%s: %s", j->status_path, msg);
	}
	err = mdfio_status_add_taken(&st, rank, d, index);
	if (!err)
		err = mdfio_status_write(j->root_fd, fd, &st);
	mdfio_status_free(&st);
	mdfio_status_unlock(fd);
	if (err == E2BIG)
		return mdfio_error("%s already records %d object names that files mdfio did not make had taken, the most it keeps",
				   j->status_path, MDFIO_TAKEN_MAX);
	if (err)
		return mdfio_error("cannot update %s: %s (it is left as it was)", j->status_path, strerror(err));
	return 0;
}
