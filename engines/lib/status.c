/* F_OFD_* locks */
#define _GNU_SOURCE
#include "status.h"
#include "fnv.h"
#include "reason.h"
#include "world.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *const state_names[] = {
	[MDFIO_RS_PRECREATING] = "precreating",
	[MDFIO_RS_READY] = "ready",
	[MDFIO_RS_BENCHMARKING] = "benchmarking",
	[MDFIO_RS_CLEANING] = "cleaning",
	[MDFIO_RS_CLEANED] = "cleaned",
};

const char *mdfio_phase_name(enum mdfio_phase p)
{
	return p == MDFIO_PRECREATE ? "precreate" :
	       p == MDFIO_BENCHMARK ? "benchmark" : "cleanup";
}

/* Any change of one byte changes the checksum, which is what guards the
 * file against edits; it is no defence against someone who recomputes it. */
static uint64_t checksum(const char *p, size_t n)
{
	return mdfio_fnv1a(p, n);
}

char *mdfio_status_format(const struct mdfio_status *st)
{
	char *buf;
	/* header fields, rank and taken lines have bounded widths */
	size_t len = 640 + (size_t)st->ranks * (96 + MDFIO_RUN_LEN) + (size_t)st->nr_taken * 64, n;
	uint32_t r;

	buf = malloc(len);
	if (!buf)
		return NULL;
	n = (size_t)snprintf(buf, len,
		"mdfio-status %d\nidentity root-inode %" PRIu64 " file-inode %" PRIu64
		"\nranks %" PRIu32 "\ndatasets %" PRIu32
		"\nprecreate-per-set %" PRIu64 "\nobject-size %" PRIu64
		"\nstart-index %" PRIu64 "\n%s%sleft %" PRIu32 " %s\n",
		MDFIO_STATUS_VERSION, st->root_ino, st->file_ino, st->ranks,
		st->datasets, st->precreate, st->object_size, st->start,
		st->root_created ? "root created-by-mdfio\n" : "",
		st->no_objects ? "objects none\n" : "",
		st->left, st->left_run[0] ? st->left_run : "-");
	for (r = 0; r < st->ranks; r++) {
		const struct mdfio_rank_rec *rec = &st->rank[r];
		char steps[24];

		/* unknown stays unknown when an old file is rewritten */
		if (rec->steps == MDFIO_STEPS_UNKNOWN)
			snprintf(steps, sizeof(steps), "?");
		else
			snprintf(steps, sizeof(steps), "%" PRIu64, rec->steps);
		n += (size_t)snprintf(buf + n, len - n,
			"rank %" PRIu32 " %s %" PRIu64 " %s %s\n", r,
			state_names[rec->state], rec->pos, steps,
			rec->run[0] ? rec->run : "-");
	}
	for (r = 0; r < st->nr_taken; r++)
		n += (size_t)snprintf(buf + n, len - n, "taken %" PRIu32 " %" PRIu32 " %" PRIu64 "\n",
				      st->taken[r].rank, st->taken[r].d, st->taken[r].index);
	snprintf(buf + n, len - n, "checksum %016" PRIx64 "\n", checksum(buf, n));
	return buf;
}

void mdfio_status_free(struct mdfio_status *st)
{
	free(st->rank);
	free(st->taken);
	st->rank = NULL;
	st->taken = NULL;
	st->nr_taken = 0;
}

static int taken_cmp(const struct mdfio_taken *a, uint32_t rank, uint32_t d, uint64_t index)
{
	if (a->rank != rank)
		return a->rank < rank ? -1 : 1;
	if (a->d != d)
		return a->d < d ? -1 : 1;
	return a->index < index ? -1 : a->index > index;
}

/* The position of (rank, d, index) in the sorted list: where it is, or
 * where it belongs (*found 0). */
static uint32_t taken_pos(const struct mdfio_taken *list, uint32_t n, uint32_t rank,
			  uint32_t d, uint64_t index, int *found)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = taken_cmp(&list[mid], rank, d, index);

		if (!c) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = 0;
	return lo;
}

int mdfio_taken_find(const struct mdfio_taken *list, uint32_t n, uint32_t rank,
		     uint32_t d, uint64_t index)
{
	int found;

	taken_pos(list, n, rank, d, index, &found);
	return found;
}

int mdfio_status_add_taken(struct mdfio_status *st, uint32_t rank, uint32_t d,
			   uint64_t index)
{
	struct mdfio_taken *list;
	int found;
	uint32_t at = taken_pos(st->taken, st->nr_taken, rank, d, index, &found);

	if (found)
		return 0;
	if (st->nr_taken >= MDFIO_TAKEN_MAX)
		return E2BIG;
	list = realloc(st->taken, ((size_t)st->nr_taken + 1) * sizeof(*list));
	if (!list)
		return ENOMEM;
	memmove(&list[at + 1], &list[at], (size_t)(st->nr_taken - at) * sizeof(*list));
	list[at] = (struct mdfio_taken){ rank, d, index };
	st->taken = list;
	st->nr_taken++;
	return 0;
}

/* The most any field holds that mdfio writes (options.c's bounds; a
 * position grows by steps_per_set, at most 2^40, per benchmark from a
 * start_index of at most 2^60): a file holding more is not mdfio's, and
 * no loop over or sum with what is read back can run away. */
#define PRECREATE_MAX ((uint64_t)1 << 40)
#define OBJECT_SIZE_MAX ((uint64_t)1 << 30)
#define START_MAX ((uint64_t)1 << 60)
#define POS_MAX ((uint64_t)1 << 62)

/* A decimal number of digits only (strtoull takes a sign and blanks), at
 * most max; *end after it. */
static int number(const char *s, uint64_t max, uint64_t *v, char **end)
{
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoull(s, end, 10);
	return errno || *v > max ? -1 : 0;
}

/* A whole word of digits (from sscanf's %[0-9]), at most max. */
static int number_word(const char *s, uint64_t max, uint64_t *v)
{
	char *end;

	return number(s, max, v, &end) || *end ? -1 : 0;
}

static int header_field(const char **p, const char *key, uint64_t max, uint64_t *v)
{
	size_t kl = strlen(key);
	char *end;

	if (strncmp(*p, key, kl) || (*p)[kl] != ' ')
		return -1;
	if (number(*p + kl + 1, max, v, &end) || *end != '\n')
		return -1;
	*p = end + 1;
	return 0;
}

int mdfio_status_parse(const char *text, struct mdfio_status *st,
		       char *msg, size_t msglen)
{
	static const char *const keys[] = { "ranks", "datasets",
		"precreate-per-set", "object-size", "start-index" };
	static const uint64_t max[] = { MDFIO_MAX_RANKS, UINT32_MAX, PRECREATE_MAX,
		OBJECT_SIZE_MAX, START_MAX };
	uint64_t v[5];
	const char *p = text, *sum = NULL;
	uint32_t r;
	int i, version;

	memset(st, 0, sizeof(*st));
	/* version 1 has no steps in its rank lines, 3 a line for the root, 4
	 * its identity, taken names and a checksum */
	if (strncmp(p, "mdfio-status ", 13) || p[13] < '1' || p[13] > '0' + MDFIO_STATUS_VERSION ||
	    p[14] != '\n') {
		mdfio_reason(msg, msglen, "it is not an mdfio status file (no 'mdfio-status 1' to '%d' first line)",
			     MDFIO_STATUS_VERSION);
		return -1;
	}
	version = p[13] - '0';
	st->version = version;
	p += 15;
	if (version >= 4) {
		unsigned long long root, file;
		uint64_t want = 0;
		int used = 0;

		/* checked first: nothing of an edited file is believed. The
		 * line is the last one, 16 hex digits */
		sum = strstr(text, "\nchecksum ");
		for (i = 10; sum && i < 26 && isxdigit((unsigned char)sum[i]); i++)
			want = want << 4 | (uint64_t)(isdigit((unsigned char)sum[i]) ? sum[i] - '0' :
						     tolower((unsigned char)sum[i]) - 'a' + 10);
		if (!sum || i != 26 || strcmp(sum + 26, "\n") ||
		    want != checksum(text, (size_t)(sum + 1 - text))) {
			mdfio_reason(msg, msglen, "its checksum does not match its content (the file was edited, or cut short)");
			return -1;
		}
		if (sscanf(p, "identity root-inode %llu file-inode %llu%n", &root, &file, &used) != 2 ||
		    p[used] != '\n') {
			mdfio_reason(msg, msglen, "malformed line where 'identity root-inode <n> file-inode <n>' belongs");
			return -1;
		}
		st->root_ino = root;
		st->file_ino = file;
		p += used + 1;
	}
	for (i = 0; i < 5; i++) {
		if (header_field(&p, keys[i], max[i], &v[i])) {
			mdfio_reason(msg, msglen, "malformed line where '%s <n>' belongs (n at most %" PRIu64 ")",
				     keys[i], max[i]);
			return -1;
		}
	}
	if (!v[0] || !v[1] || !v[2] || !v[3]) {
		mdfio_reason(msg, msglen, "ranks, datasets, precreate-per-set and object-size must be at least 1");
		return -1;
	}
	st->ranks = (uint32_t)v[0];
	st->datasets = (uint32_t)v[1];
	st->precreate = v[2];
	st->object_size = v[3];
	st->start = v[4];
	{
		static const char root_line[] = "root created-by-mdfio\n";
		static const char null_line[] = "objects none\n";

		if (!strncmp(p, root_line, sizeof(root_line) - 1) && version >= 3) {
			p += sizeof(root_line) - 1;
			st->root_created = 1;
		} else if (version == 3) {
			mdfio_reason(msg, msglen, "malformed line where 'root created-by-mdfio' belongs");
			return -1;
		}
		if (!strncmp(p, null_line, sizeof(null_line) - 1) && version >= 4) {
			p += sizeof(null_line) - 1;
			st->no_objects = 1;
		}
	}
	{
		char run[MDFIO_RUN_LEN], n[12];
		uint64_t left;
		int used = 0;

		if (sscanf(p, "left %11[0-9] %63s%n", n, run, &used) != 2 ||
		    p[used] != '\n' || number_word(n, MDFIO_MAX_RANKS, &left)) {
			mdfio_reason(msg, msglen, "malformed line where 'left <n> <job>' belongs");
			return -1;
		}
		p += used + 1;
		st->left = left;
		snprintf(st->left_run, MDFIO_RUN_LEN, "%s", strcmp(run, "-") ? run : "");
	}
	st->rank = calloc(st->ranks, sizeof(*st->rank));
	if (!st->rank) {
		mdfio_reason(msg, msglen, "out of memory");
		return -1;
	}
	for (r = 0; r < st->ranks; r++) {
		char state[16], run[MDFIO_RUN_LEN], steps[24] = "?", rn[12], posn[24];
		uint64_t pos, rr;
		int used = 0, s, ok;

		if (version == 1)
			ok = sscanf(p, "rank %11[0-9] %15s %23[0-9] %63s%n", rn, state, posn,
				    run, &used) == 4;
		else
			ok = sscanf(p, "rank %11[0-9] %15s %23[0-9] %23s %63s%n", rn, state, posn,
				    steps, run, &used) == 5;
		if (!ok || number_word(rn, UINT32_MAX, &rr) || rr != r || p[used] != '\n' ||
		    number_word(posn, POS_MAX, &pos)) {
			mdfio_reason(msg, msglen, "malformed or missing line for rank %" PRIu32, r);
			goto err;
		}
		if (!strcmp(steps, "?")) {
			st->rank[r].steps = MDFIO_STEPS_UNKNOWN;
		} else if (number_word(steps, PRECREATE_MAX, &st->rank[r].steps)) {
			mdfio_reason(msg, msglen, "malformed steps '%s' for rank %" PRIu32, steps, r);
			goto err;
		}
		p += used + 1;
		for (s = 0; s <= MDFIO_RS_CLEANED; s++)
			if (!strcmp(state, state_names[s]))
				break;
		if (s > MDFIO_RS_CLEANED) {
			mdfio_reason(msg, msglen, "unknown state '%s' for rank %" PRIu32, state, r);
			goto err;
		}
		st->rank[r].state = (enum mdfio_rank_state)s;
		st->rank[r].pos = pos;
		snprintf(st->rank[r].run, MDFIO_RUN_LEN, "%s",
			 strcmp(run, "-") ? run : "");
	}
	while (version >= 4 && !strncmp(p, "taken ", 6)) {
		unsigned int tr, td;
		unsigned long long idx;
		int used = 0, found;

		if (sscanf(p, "taken %u %u %llu%n", &tr, &td, &idx, &used) != 3 || p[used] != '\n' ||
		    tr >= st->ranks || td >= st->datasets ||
		    taken_pos(st->taken, st->nr_taken, tr, td, idx, &found) != st->nr_taken ||
		    mdfio_status_add_taken(st, tr, td, idx)) {
			mdfio_reason(msg, msglen, "malformed line after 'taken %" PRIu32 "' names", st->nr_taken);
			goto err;
		}
		p += used + 1;
	}
	if (version >= 4 && p == sum + 1)
		p += 26;
	if (*p) {
		mdfio_reason(msg, msglen, "trailing data after rank %" PRIu32, st->ranks - 1);
		goto err;
	}
	return 0;
err:
	mdfio_status_free(st);
	return -1;
}

int mdfio_status_enter(const struct mdfio_status *st, enum mdfio_phase phase,
		       uint32_t rank, const char *run, uint64_t advance,
		       uint64_t *pos, int *recover, char *msg, size_t msglen)
{
	uint64_t lo = UINT64_MAX, hi = 0, room;
	uint32_t k, lo_rank = 0, hi_rank = 0;

	*recover = 0;
	if (phase == MDFIO_PRECREATE) {
		if (!st)
			return 0;
		for (k = 0; k < st->ranks; k++) {
			const struct mdfio_rank_rec *rec = &st->rank[k];

			if (strcmp(rec->run, run) || rec->state > MDFIO_RS_READY) {
				mdfio_reason(msg, msglen, "a namespace already exists (rank %" PRIu32
				    " is %s at position %" PRIu64 "): run phase=cleanup to remove it, or use another directory",
				    k, state_names[rec->state], rec->pos);
				return -1;
			}
		}
		*pos = st->start;
		return 0;
	}
	if (!st) {
		mdfio_reason(msg, msglen, "no namespace here (no %s): run phase=precreate first, or give run_info_file= to adopt one md-workbench made",
		    MDFIO_STATUS_NAME);
		return -1;
	}
	for (k = 0; k < st->ranks; k++) {
		const struct mdfio_rank_rec *rec = &st->rank[k];
		int ours = !strcmp(rec->run, run);
		uint64_t s = rec->pos;

		switch (rec->state) {
		case MDFIO_RS_READY:
			/* finished in this very job: it started from the
			 * status these checks saw, and a stonewall_timer may
			 * have moved it by fewer than steps_per_set */
			if (ours && phase == MDFIO_BENCHMARK)
				continue;
			break;
		case MDFIO_RS_BENCHMARKING:
		case MDFIO_RS_CLEANING:
		case MDFIO_RS_CLEANED:
			if (ours)
				break;
			/* fall through */
		case MDFIO_RS_PRECREATING:
			if (phase == MDFIO_CLEANUP) {
				*recover = 1;
				break;
			}
			if (rec->state == MDFIO_RS_CLEANED ||
			    rec->state == MDFIO_RS_CLEANING)
				mdfio_reason(msg, msglen, "the namespace is being or was removed (rank %" PRIu32
				    " is %s): finish it with phase=cleanup, then phase=precreate",
				    k, state_names[rec->state]);
			else
				mdfio_reason(msg, msglen, "rank %" PRIu32 " was interrupted while %s, so the FIFO is incomplete: run phase=cleanup to remove the namespace",
				    k, state_names[rec->state]);
			return -1;
		}
		if (*recover)
			continue;
		if (s < lo) {
			lo = s;
			lo_rank = k;
		}
		if (s > hi) {
			hi = s;
			hi_rank = k;
		}
	}
	if (phase == MDFIO_CLEANUP) {
		/* positions a stonewall_timer left apart: each dataset holds
		 * what its reader has not deleted and its writer made */
		if (!*recover && lo != hi)
			*recover = 2;
		*pos = *recover ? st->rank[rank].pos : lo;
		return 0;
	}
	/* each rank goes on from its own position. A step of a rank at hi
	 * reads up to hi+I-1, which a rank at lo created only up to lo+P-1:
	 * with hi-lo <= P-I every object read existed before the run, as
	 * I <= P ensures for ranks at one position */
	room = st->precreate - (advance < st->precreate ? advance : st->precreate);
	if (lo < hi && hi - lo > room) {
		if (hi - lo >= st->precreate)
			mdfio_reason(msg, msglen, "the ranks' FIFO positions differ by %" PRIu64 " (rank %" PRIu32
			    " at %" PRIu64 ", rank %" PRIu32 " at %" PRIu64 "), as much as precreate_per_set=%" PRIu64
			    ": a step would read an object not created yet; run phase=cleanup to remove the namespace",
			    hi - lo, lo_rank, lo, hi_rank, hi, st->precreate);
		else
			mdfio_reason(msg, msglen, "the ranks' FIFO positions differ by %" PRIu64 " (rank %" PRIu32
			    " at %" PRIu64 ", rank %" PRIu32 " at %" PRIu64 ", after a stonewall_timer without stonewall_wear_out)"
			    ": with steps_per_set=%" PRIu64 " a step could read an object not created yet; use steps_per_set=%" PRIu64
			    " at most, or phase=cleanup",
			    hi - lo, lo_rank, lo, hi_rank, hi, advance, st->precreate - (hi - lo));
		return -1;
	}
	*pos = st->rank[rank].pos;
	return 0;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

int mdfio_status_window(const struct mdfio_status *st, uint64_t *lo, uint64_t *hi)
{
	uint32_t k;
	int old = 0;

	/* below the positions are objects whose delete failed in an earlier
	 * benchmark: mdfio made every index from the start on */
	*lo = st->start;
	*hi = 0;
	/* mdfio-null made none: no file in its datasets is mdfio's */
	if (st->no_objects) {
		*hi = *lo;
		return 0;
	}
	for (k = 0; k < st->ranks; k++) {
		const struct mdfio_rank_rec *rec = &st->rank[k];
		uint64_t steps = rec->steps;

		/* a benchmark's creates reach s+P+I-1; a recovery of one keeps
		 * its I */
		if (steps == MDFIO_STEPS_UNKNOWN) {
			int busy = rec->state == MDFIO_RS_BENCHMARKING ||
				   rec->state == MDFIO_RS_CLEANING;

			steps = busy ? st->precreate : 0;
			old |= busy;
		}
		if (rec->pos < *lo)
			*lo = rec->pos;
		if (add_sat(add_sat(rec->pos, st->precreate), steps) > *hi)
			*hi = add_sat(add_sat(rec->pos, st->precreate), steps);
	}
	return old;
}

static int write_all(int fd, const char *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, buf + done, len - done, (off_t)done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		done += (size_t)n;
	}
	return ftruncate(fd, (off_t)len) ? errno : 0;
}

/* A temporary file beside the status, named by the host and the thread's
 * id (clones running as threads share a pid): no other live thread of any
 * host sharing the root has it. A file of that name (a copy left by a
 * thread that died here, or anyone's) is not mdfio's to remove: the next
 * name is tried. Returns its descriptor (its name in tmp) or -1 with errno
 * set; EEXIST becomes EBUSY, kept for the status itself. */
static int open_tmp(int dirfd, char *tmp, size_t len)
{
	char host[65] = "";
	unsigned int k;
	int fd = -1;

	gethostname(host, sizeof(host) - 1);
	for (k = 0; k < 100 && fd < 0; k++) {
		snprintf(tmp, len, "%s.%s.%ld.%u.tmp", MDFIO_STATUS_NAME, host,
			 (long)syscall(SYS_gettid), k);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			return -1;
	}
	if (fd < 0)
		errno = EBUSY;
	return fd;
}

/* Writes st into the new file fd as the status of the root dirfd, naming
 * the file's own inode, and makes it durable before it is given the
 * status's name. 0 or an errno value; fd is closed. */
static int fill_tmp(int dirfd, int fd, struct mdfio_status *st)
{
	struct stat root, self;
	char *text;
	int err;

	if (fstat(dirfd, &root) || fstat(fd, &self)) {
		err = errno;
		close(fd);
		return err;
	}
	st->root_ino = (uint64_t)root.st_ino;
	st->file_ino = (uint64_t)self.st_ino;
	text = mdfio_status_format(st);
	err = text ? write_all(fd, text, strlen(text)) : ENOMEM;
	free(text);
	/* a rename or link published before the data could show an empty
	 * file after a crash */
	if (!err && fsync(fd))
		err = errno;
	if (close(fd) && !err)
		err = errno;
	return err;
}

int mdfio_status_create(int dirfd, struct mdfio_status *st)
{
	char tmp[160];
	int fd, err;

	fd = open_tmp(dirfd, tmp, sizeof(tmp));
	if (fd < 0)
		return errno;
	err = fill_tmp(dirfd, fd, st);
	/* link() fails with EEXIST instead of replacing: a concurrent clone or
	 * a foreign file of that name (a symlink too) is never overwritten */
	if (!err && linkat(dirfd, tmp, dirfd, MDFIO_STATUS_NAME, 0))
		err = errno;
	unlinkat(dirfd, tmp, 0);
	return err;
}

int mdfio_status_lock(int dirfd, int shared, int *fd, char *msg, size_t msglen)
{
	struct stat sb, now;
	int err;

again:
	/* looked at first, so that nothing but a regular file is ever
	 * opened (opening a device or a FIFO may act on it) */
	if (fstatat(dirfd, MDFIO_STATUS_NAME, &sb, AT_SYMLINK_NOFOLLOW)) {
		err = errno;
		/* GlusterFS's client may fail the look at a name another
		 * client has just renamed an update over with ESTALE */
		if (err == ESTALE)
			goto again;
		if (err != ENOENT)
			mdfio_reason(msg, msglen, "cannot look at it: %s", strerror(err));
		return err;
	}
	if (S_ISLNK(sb.st_mode)) {
		mdfio_reason(msg, msglen, "a symlink, which mdfio never follows: refusing to touch it");
		return ELOOP;
	}
	if (!S_ISREG(sb.st_mode))
		goto not_regular;
	/* read and write: an exclusive lock needs a descriptor open for
	 * writing, though the status is only ever replaced, not written */
	*fd = openat(dirfd, MDFIO_STATUS_NAME, (shared ? O_RDONLY : O_RDWR) |
		     O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (*fd < 0) {
		err = errno;
		/* replaced or removed since the look (ESTALE: as above) */
		if (err == ENOENT || err == ESTALE)
			goto again;
		mdfio_reason(msg, msglen, "cannot open it: %s", strerror(err));
		return err;
	}
	/* Replaced between the look and the open: a shared file system's
	 * client may then fail the fstat of what it opened with ESTALE, as
	 * GlusterFS's does when another client has just renamed an update
	 * over the status (tests/engines/test_gluster.py) */
	if (fstat(*fd, &sb)) {
		err = errno;
		close(*fd);
		if (err == ESTALE || err == ENOENT)
			goto again;
		mdfio_reason(msg, msglen, "cannot look at it: %s", strerror(err));
		return err;
	}
	if (!S_ISREG(sb.st_mode)) {
		close(*fd);
		goto not_regular;
	}
	/* a whole-file OFD lock, as the rank file's: byte-range locks reach
	 * every client of the shared file systems mdfio runs on, where flock()
	 * may stay on one node (docs/hosts.md, P1 and P3) */
	while (fcntl(*fd, F_OFD_SETLKW, &(struct flock){ .l_type = shared ? F_RDLCK : F_WRLCK,
							  .l_whence = SEEK_SET })) {
		if (errno != EINTR) {
			err = errno;
			close(*fd);
			if (err == ESTALE || err == ENOENT)
				goto again;	/* replaced while waiting */
			mdfio_reason(msg, msglen, "cannot lock it: %s", strerror(err));
			return err;
		}
	}
	/* The lock is on the file, and an update replaces the file: the
	 * holder this waited for may have renamed a new status over this one,
	 * or removed it. Only the file the name holds once it is locked is the
	 * status, so one lock still orders every update, without a lock file
	 * of its own, which would have to be created, refused when foreign and
	 * removed with the same care */
	if (fstatat(dirfd, MDFIO_STATUS_NAME, &now, AT_SYMLINK_NOFOLLOW) ||
	    now.st_ino != sb.st_ino || now.st_dev != sb.st_dev) {
		close(*fd);
		goto again;
	}
	return 0;
not_regular:
	mdfio_reason(msg, msglen, "not a regular file, so not mdfio's status file: refusing to touch it");
	return EINVAL;
}

int mdfio_status_read(int dirfd, int fd, struct mdfio_status *st, char *msg,
		      size_t msglen)
{
	struct stat sb, root;
	char *text;
	size_t done = 0;
	int ret;

	if (fstat(fd, &sb) || fstat(dirfd, &root)) {
		mdfio_reason(msg, msglen, "cannot stat it: %s", strerror(errno));
		return -1;
	}
	if (!S_ISREG(sb.st_mode) || sb.st_size > (64 << 20)) {
		mdfio_reason(msg, msglen, "it is not an mdfio status file (not a small regular file)");
		return -1;
	}
	text = malloc((size_t)sb.st_size + 1);
	if (!text) {
		mdfio_reason(msg, msglen, "out of memory");
		return -1;
	}
	while (done < (size_t)sb.st_size) {
		ssize_t n = pread(fd, text + done, (size_t)sb.st_size - done,
				  (off_t)done);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			mdfio_reason(msg, msglen, "cannot read it: %s",
			    n ? strerror(errno) : "file shrank");
			free(text);
			return -1;
		}
		done += (size_t)n;
	}
	text[done] = '\0';
	ret = strlen(text) == done ? mdfio_status_parse(text, st, msg, msglen)
		: (mdfio_reason(msg, msglen, "it is not an mdfio status file (binary data)"), -1);
	free(text);
	if (ret)
		return ret;
	/* Inode numbers, not the device: every client of a shared file
	 * system sees the same inode numbers but a device number of its own,
	 * which may also change when the file system is mounted again. A
	 * copy is another file (another inode), and a file moved or linked
	 * into another directory has another root. A status an older mdfio
	 * wrote names neither: it is taken as this root's, and bound to it by
	 * its next update */
	if (st->version >= 4 && (st->root_ino != (uint64_t)root.st_ino ||
				 st->file_ino != (uint64_t)sb.st_ino)) {
		mdfio_reason(msg, msglen, "it was written as the status of another %s (root inode %" PRIu64
			     ", file inode %" PRIu64 "; here %" PRIu64 " and %" PRIu64
			     "): a copy or a move of another namespace's status, which mdfio does not trust",
			     st->root_ino != (uint64_t)root.st_ino ? "directory" : "file",
			     st->root_ino, st->file_ino, (uint64_t)root.st_ino, (uint64_t)sb.st_ino);
		mdfio_status_free(st);
		return -1;
	}
	return 0;
}

int mdfio_status_write(int dirfd, int fd, struct mdfio_status *st)
{
	char tmp[160];
	int tfd, err;

	/* only the holder of the exclusive lock replaces the status */
	if ((fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY)
		return EBADF;
	tfd = open_tmp(dirfd, tmp, sizeof(tmp));
	if (tfd < 0)
		return errno;
	err = fill_tmp(dirfd, tfd, st);
	/* rename replaces the name at once: a reader finds the old file or
	 * the new one, each whole, and a write that failed (ENOSPC) leaves
	 * the old one as it was */
	if (!err && renameat(dirfd, tmp, dirfd, MDFIO_STATUS_NAME))
		err = errno;
	if (err)
		unlinkat(dirfd, tmp, 0);
	return err;
}

void mdfio_status_unlock(int fd)
{
	close(fd);	/* releases the lock: the last descriptor of its open file */
}

/* Whether name in dirfd is an update's temporary file that mdfio wrote for
 * the root whose inode is root_ino: its first two lines, which the first
 * write puts there, name that root and the file itself. */
static int leftover_is_ours(int dirfd, const char *name, uint64_t root_ino)
{
	char text[160], *end;
	struct stat sb, now;
	unsigned long long root, self;
	int fd, version, n, ours = 0;
	ssize_t got;

	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (!fstat(fd, &sb) && S_ISREG(sb.st_mode) && sb.st_nlink == 1) {
		got = pread(fd, text, sizeof(text) - 1, 0);
		if (got > 0) {
			text[got] = '\0';
			end = strchr(text, '\n');
			end = end ? strchr(end + 1, '\n') : NULL;
			n = 0;
			ours = end && sscanf(text, "mdfio-status %d\nidentity root-inode %llu file-inode %llu%n",
					     &version, &root, &self, &n) == 3 &&
			       text + n == end && version == MDFIO_STATUS_VERSION &&
			       root == root_ino && self == (unsigned long long)sb.st_ino;
		}
	}
	close(fd);
	/* still the file read, under that name */
	return ours && !fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) &&
	       now.st_ino == sb.st_ino && now.st_dev == sb.st_dev;
}

unsigned int mdfio_status_remove_leftovers(int dirfd, char *kept, size_t keptlen)
{
	const size_t plen = strlen(MDFIO_STATUS_NAME ".");
	struct stat root;
	struct dirent *e;
	unsigned int stay = 0, removed, passes = 0;
	size_t len;
	DIR *d;
	int fd;

	if (keptlen)
		kept[0] = '\0';
	if (fstat(dirfd, &root))
		return 0;
	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	/* a name removed while the directory is read may hide another from
	 * the same pass (tmpfs): read it again until a pass removes none */
	do {
		removed = stay = 0;
		rewinddir(d);
		while ((e = readdir(d))) {
			len = strlen(e->d_name);
			if (len <= plen + 4 || strncmp(e->d_name, MDFIO_STATUS_NAME ".", plen) ||
			    strcmp(e->d_name + len - 4, ".tmp"))
				continue;
			if (leftover_is_ours(dirfd, e->d_name, (uint64_t)root.st_ino) &&
			    !unlinkat(dirfd, e->d_name, 0)) {
				removed++;
				continue;
			}
			if (!stay++ && keptlen)
				snprintf(kept, keptlen, "%s", e->d_name);
		}
	} while (removed && ++passes < 100);
	closedir(d);
	return stay;
}

int mdfio_run_info_parse(const char *text, uint64_t *pos)
{
	const char *p = text + 5;
	char *end;

	if (strncmp(text, "pos: ", 5) || *p < '0' || *p > '9')
		return -1;
	errno = 0;
	*pos = strtoull(p, &end, 10);
	if (errno || (*end && strcmp(end, "\n")))
		return -1;
	return 0;
}

int mdfio_run_info_format(char *buf, size_t len, uint64_t pos)
{
	return snprintf(buf, len, "pos: %" PRIu64 "\n", pos);
}

/* The longest run-info file: "pos: " and 20 digits and a newline. */
#define RUN_INFO_MAX 26

int mdfio_run_info_read(const char *path, uint64_t *pos, char *msg, size_t msglen)
{
	char text[RUN_INFO_MAX + 2];
	struct stat sb;
	ssize_t n;
	int fd, err;

	if (lstat(path, &sb)) {
		err = errno;
		if (err != ENOENT)
			mdfio_reason(msg, msglen, "cannot look at it: %s", strerror(err));
		return err;
	}
	if (!S_ISREG(sb.st_mode) || sb.st_size > RUN_INFO_MAX)
		goto foreign;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		mdfio_reason(msg, msglen, "cannot open it: %s", strerror(err));
		return err;
	}
	n = read(fd, text, sizeof(text) - 1);
	err = errno;
	close(fd);
	if (n < 0) {
		mdfio_reason(msg, msglen, "cannot read it: %s", strerror(err));
		return err;
	}
	text[n] = '\0';
	if (strlen(text) == (size_t)n && !mdfio_run_info_parse(text, pos))
		return 0;
foreign:
	mdfio_reason(msg, msglen, "not an md-workbench run-info file (a regular file holding 'pos: <n>'): refusing to touch it");
	return EINVAL;
}

int mdfio_run_info_write(const char *path, uint64_t pos, char *msg, size_t msglen)
{
	char tmp[PATH_MAX], text[RUN_INFO_MAX + 1];
	uint64_t old;
	int fd, err, len;

	err = mdfio_run_info_read(path, &old, msg, msglen);
	if (err && err != ENOENT)
		return err;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.mdfio-%ld.tmp", path,
			     (long)syscall(SYS_gettid)) >= sizeof(tmp)) {
		mdfio_reason(msg, msglen, "path too long");
		return ENAMETOOLONG;
	}
	len = mdfio_run_info_format(text, sizeof(text), pos);
	/* md-workbench's fopen(..., "w") makes it 0666 less the umask */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0) {
		err = errno;
		mdfio_reason(msg, msglen, "cannot create %s: %s", tmp, strerror(err));
		return err;
	}
	err = write_all(fd, text, (size_t)len);
	if (!err && fsync(fd))
		err = errno;
	close(fd);
	if (!err && rename(tmp, path))
		err = errno;
	if (err) {
		unlink(tmp);
		mdfio_reason(msg, msglen, "cannot write it: %s", strerror(err));
	}
	return err;
}

int mdfio_namespace_left(int dirfd)
{
	struct mdfio_status st;
	char msg[256];
	int fd, ok;

	if (mdfio_status_lock(dirfd, 0, &fd, msg, sizeof(msg)))
		return 0;
	ok = !mdfio_status_read(dirfd, fd, &st, msg, sizeof(msg));
	if (ok)
		mdfio_status_free(&st);
	mdfio_status_unlock(fd);
	return ok;
}
