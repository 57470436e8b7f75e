/* F_OFD_* locks */
#define _GNU_SOURCE
#include "rankfile.h"
#include "fnv.h"
#include "reason.h"
#include "robust.h"
#include "world.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define REC MDFIO_RANKFILE_RECORD
#define MAGIC "mdfio-ranks 1"

/* Polling the shared file: short sleeps first (the usual case is ranks
 * arriving within a few milliseconds of each other), then doubling, so
 * that a rank notices a release at most about as late as it had waited
 * already, up to a ceiling that bounds what a long wait costs the file
 * system's server: every fio process of a run polls while it waits, for
 * as long as its slowest peer runs (bench/run --only barrier). */
#define POLL_FIRST_US 50
#define POLL_MAX_US 1000000
/* How often a waiting rank answers fio (rf->waiting), in memory: fio's
 * requests for statistics wait for it (MDFIO_ANSWER_MS in job.h). */
#define ANSWER_US 50000
/* The futex call whose timeout is this build's struct timespec (see
 * reserve.c: a 32-bit build with a 64-bit time_t needs futex_time64). */
#ifdef SYS_futex_time64
#define RF_SYS_FUTEX (sizeof(time_t) > sizeof(long) ? SYS_futex_time64 : SYS_futex)
#else
#define RF_SYS_FUTEX SYS_futex
#endif

/* The ranks of one fio on one root wait together: one of them (the poller)
 * reads the file and publishes what it saw here, in memory shared by fio's
 * job processes, and wakes the others; so the file system sees one poller
 * per fio process, not one per rank. Published states are the header's,
 * of the file with id; released only grows in one file's life.
 * Both locks are robust: the kernel frees a lock whose holder (a job
 * process or thread) dies, and the next to take it is told. So a poller
 * is replaced exactly when it is gone, never because it was slow (a busy
 * machine may not run it for seconds, and a lock request to a network
 * file system may take as long: a second poller then would poll beside
 * it for ever after), and a job killed while publishing blocks nobody
 * (what it left half written is a copy of the header, which the next
 * publication writes whole). */
struct mdfio_rankfile_waiter {
	uint32_t seq;		/* futex word: bumped at every publication */
	pthread_mutex_t poller;	/* held by the rank that polls for the others */
	pthread_mutex_t lock;	/* guards what follows */
	char id[MDFIO_RANKFILE_ID_LEN];
	uint64_t released, failed, max;
	/* The fence: the barriers of this fio's ranks, counted (round);
	 * how many of them have arrived at barrier arrive_b of the file
	 * with arrive_id, whose last enters the fence for round; and the
	 * last round whose fence completed. */
	char arrive_id[MDFIO_RANKFILE_ID_LEN];
	uint64_t arrive_b, round, fenced;
	uint32_t arrived;
};

/* Initialises the two locks of w. 0, or an errno. */
static int waiter_init(struct mdfio_rankfile_waiter *w)
{
	int err = mdfio_robust_init(&w->poller);

	if (!err) {
		err = mdfio_robust_init(&w->lock);
		if (err)
			pthread_mutex_destroy(&w->poller);
	}
	return err;
}

/* The header record, then why the last barrier failed (so that every rank
 * waiting at it reports the same ranks and hosts), then one record a rank. */
#define FAILURE_OFF REC
#define FAILURE_LEN 1024

static off_t rec_off(uint32_t rank)
{
	return FAILURE_OFF + FAILURE_LEN + (off_t)rank * REC;
}

/* An open-file-description lock on a record range: per open file, not per
 * process, so clones running as threads (thread=1) each hold their own. */
static int lock(int fd, short type, off_t start, off_t len, int wait)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET,
			    .l_start = start, .l_len = len };
	int cmd = wait ? F_OFD_SETLKW : F_OFD_SETLK;

	while (fcntl(fd, cmd, &fl)) {
		if (errno != EINTR)
			return errno;
	}
	return 0;
}

static void unlock(int fd, off_t start, off_t len)
{
	lock(fd, F_UNLCK, start, len, 0);
}

/* A rank's record is locked in two parts: the claim of the rank's job (all
 * of it but its last byte) and the reservation of the fio process that runs
 * the job (its last byte), which lasts from fio's start to its end, so that
 * another run cannot take the ranks between two of its phases. */
#define CLAIM_LEN (REC - 1)
static off_t reservation_off(uint32_t rank)
{
	return rec_off(rank) + CLAIM_LEN;
}

/* Whether a fio other than the one that runs rf's job reserves rank: seen
 * through the reserving fio's own open file, its reservation is no
 * conflict. */
static int reserved_elsewhere(const struct mdfio_rankfile *rf, uint32_t rank)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = reservation_off(rank), .l_len = 1 };

	if (fcntl(rf->reserved_fd >= 0 ? rf->reserved_fd : rf->fd, F_OFD_GETLK, &fl))
		return 1;	/* cannot tell: never take a rank that may be used */
	return fl.l_type != F_UNLCK;
}

/* Whether another open file holds rank's claim. */
static int claimed(int fd, uint32_t rank)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = rec_off(rank), .l_len = CLAIM_LEN };

	if (fcntl(fd, F_OFD_GETLK, &fl))
		return 1;	/* cannot tell: never call a rank gone */
	return fl.l_type != F_UNLCK;
}

struct header {
	char id[MDFIO_RANKFILE_ID_LEN];
	uint32_t total;
	uint64_t released;	/* barriers completed in this file's life */
	uint64_t failed;	/* the last barrier given up, never used again */
	/* the largest value the ranks brought to the barrier released last */
	uint64_t max;
	/* a cleanup emptied a namespace whose root mdfio made: the last one
	 * out of this file removes the root too (mdfio_rankfile_mark_root) */
	int root_goes;
};

struct rank_rec {
	uint64_t value;		/* what it brings to the barrier (its steps) */
	char host[64];
	long pid;
	uint64_t arrived;	/* the barrier it waits at (released + 1) */
	char phase[MDFIO_RANKFILE_PHASE_LEN];	/* what it enters there */
	long fio_pid;		/* the fio process that reserved it */
};

static int read_rec(int fd, off_t off, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len, off);

	if (n < 0)
		return errno;
	buf[n > 0 ? n - 1 : 0] = '\0';
	return 0;
}

/* Writes a record of len bytes: the text, padded with spaces, and '\n'. */
static int write_rec(int fd, off_t off, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int write_rec(int fd, off_t off, size_t len, const char *fmt, ...)
{
	char buf[FAILURE_LEN];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len)
		n = (int)len - 1;
	memset(buf + n, ' ', len - 1 - (size_t)n);
	buf[len - 1] = '\n';
	return pwrite(fd, buf, len, off) == (ssize_t)len ? 0 : errno ? errno : EIO;
}

/* The bound of every count a record holds (barriers, steps): far beyond
 * any run's, and far enough below 2^64 that no sum or + 1 of them wraps. */
#define COUNT_MAX ((uint64_t)1 << 62)

/* Reads "key <decimal>" at *p and the space after it, if any: a number from
 * lo to hi, with no sign and no overflow. Another writer may have left
 * anything in a record, and a total of 2^64 - 1 made a loop over the ranks
 * last for ever: every field is bounded by what mdfio writes there. */
static int field_u64(const char **p, const char *key, uint64_t lo, uint64_t hi, uint64_t *v)
{
	size_t kl = strlen(key);
	const char *s = *p + kl + 1;
	char *end;

	if (strncmp(*p, key, kl) || (*p)[kl] != ' ' || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	if (errno || *v < lo || *v > hi || (*end != ' ' && *end))
		return -1;
	*p = *end ? end + 1 : end;
	return 0;
}

/* "key <word>": a word of 1 to len - 1 characters in out. */
static int field_word(const char **p, const char *key, char *out, size_t len)
{
	size_t kl = strlen(key), n;
	const char *s = *p + kl + 1;

	if (strncmp(*p, key, kl) || (*p)[kl] != ' ')
		return -1;
	n = strcspn(s, " ");
	if (!n || n >= len)
		return -1;
	memcpy(out, s, n);
	out[n] = '\0';
	*p = s[n] ? s + n + 1 : s + n;
	return 0;
}

/* The rest of a record is the padding write_rec puts there. */
static int record_end(const char *p)
{
	return p[strspn(p, " ")] ? -1 : 0;
}

/* 0: parsed; 1: empty (a new file); -1: not a rank file */
static int read_header(int fd, struct header *h)
{
	char buf[REC];
	const char *p = buf;
	uint64_t total, root_goes = 0;
	size_t i;

	if (read_rec(fd, 0, buf, REC))
		return -1;
	if (!buf[0])
		return 1;
	if (strncmp(p, MAGIC " ", sizeof(MAGIC)))
		return -1;
	p += sizeof(MAGIC);
	if (field_word(&p, "id", h->id, sizeof(h->id)) || strlen(h->id) != sizeof(h->id) - 1)
		return -1;
	for (i = 0; i < sizeof(h->id) - 1; i++)
		if (!strchr("0123456789abcdef", h->id[i]))
			return -1;
	if (field_u64(&p, "total", 1, MDFIO_MAX_RANKS, &total) ||
	    field_u64(&p, "released", 0, COUNT_MAX, &h->released) ||
	    field_u64(&p, "failed", 0, COUNT_MAX, &h->failed) ||
	    field_u64(&p, "max", 0, COUNT_MAX, &h->max))
		return -1;
	/* a file kept from a phase run by an older mdfio has no root-goes */
	if (!strncmp(p, "root-goes ", 10) && field_u64(&p, "root-goes", 0, 1, &root_goes))
		return -1;
	if (record_end(p))
		return -1;
	h->total = (uint32_t)total;
	h->root_goes = (int)root_goes;
	return 0;
}

static int write_header(int fd, const struct header *h)
{
	return write_rec(fd, 0, REC, MAGIC " id %s total %" PRIu32 " released %" PRIu64
			 " failed %" PRIu64 " max %" PRIu64 " root-goes %d", h->id, h->total,
			 h->released, h->failed, h->max, h->root_goes);
}

/* A new file's id: random, so that the run ids of a file that replaced an
 * older one never repeat the older one's. */
static void new_id(char *id)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		v = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid();
	}
	snprintf(id, MDFIO_RANKFILE_ID_LEN, "%016" PRIx64, v);
}

/* Names the run of rf's ranks (NULL or "": unnamed). */
static void name_run(struct mdfio_rankfile *rf, const char *run_id)
{
	rf->run_digest[0] = rf->run_id[0] = '\0';
	if (!run_id || !*run_id)
		return;
	/* the name only has to differ from other runs' names */
	snprintf(rf->run_digest, sizeof(rf->run_digest), "%016" PRIx64,
		 mdfio_fnv1a(run_id, strlen(run_id)));
	snprintf(rf->run_id, sizeof(rf->run_id), "%s", run_id);
}

/* The failure record of a named run starts with its digest. */
#define RUN_PREFIX "run-id "
#define RUN_PREFIX_LEN (sizeof(RUN_PREFIX) - 1 + MDFIO_RANKFILE_ID_LEN - 1 + 2)

/* Why the last barrier given up failed, and the digest of the named run
 * that gave it up into run (may be NULL; "" if unnamed). */
static void read_failure(int fd, char *why, size_t len, char *run)
{
	char buf[FAILURE_LEN];
	const char *p = buf;
	size_t n;

	if (read_rec(fd, FAILURE_OFF, buf, sizeof(buf)))
		buf[0] = '\0';
	for (n = strlen(buf); n && buf[n - 1] == ' '; n--)
		buf[n - 1] = '\0';
	if (run)
		run[0] = '\0';
	/* the reason's trailing spaces are gone, and an empty one's too */
	if (n >= RUN_PREFIX_LEN - 1 && !strncmp(buf, RUN_PREFIX, sizeof(RUN_PREFIX) - 1) &&
	    buf[RUN_PREFIX_LEN - 2] == ':') {
		if (run) {
			memcpy(run, buf + sizeof(RUN_PREFIX) - 1, MDFIO_RANKFILE_ID_LEN - 1);
			run[MDFIO_RANKFILE_ID_LEN - 1] = '\0';
		}
		p += n >= RUN_PREFIX_LEN ? RUN_PREFIX_LEN : n;
	}
	if (why)
		snprintf(why, len, "%s", p);
}

/* Whether h (read under the header lock) shows a failure of rf's named
 * run: 1 with the reason in why, else 0. */
static int failed_run(struct mdfio_rankfile *rf, const struct header *h, char *why, size_t len)
{
	char run[MDFIO_RANKFILE_ID_LEN];

	if (!rf->run_digest[0] || !h->failed)
		return 0;
	read_failure(rf->fd, why, len, run);
	return !strcmp(run, rf->run_digest);
}

/* A fio of a named run that failed comes to reserve its ranks: it came too
 * late to join the run, which cannot start again under its name. */
static int refuse_failed_run(struct mdfio_rankfile *rf, const struct header *h,
			     char *msg, size_t msglen)
{
	char why[FAILURE_LEN];

	if (!failed_run(rf, h, why, sizeof(why)))
		return 0;
	return mdfio_reason(msg, msglen, "run_id=%s stopped before this fio joined it: %s "
			    "(another run here needs another run_id, or %s removed once no fio of this run is left)",
			    rf->run_id, why, MDFIO_RANKFILE_NAME);
}

/* Whether the file must outlive its last rank: a named run failed, and its
 * fio processes that come later are to be refused with the reason. */
static int failed_run_kept(int fd)
{
	struct header h;
	char run[MDFIO_RANKFILE_ID_LEN];

	if (read_header(fd, &h) || !h.failed)
		return 0;
	read_failure(fd, NULL, 0, run);
	return run[0] != '\0';
}

/* Rank rank's record in line: 0, or -1 with r as a record of no one's. */
static int parse_rank(const char *line, uint32_t rank, struct rank_rec *r)
{
	const char *p = line;
	uint64_t n, pid, fio_pid;

	memset(r, 0, sizeof(*r));
	if (field_u64(&p, "rank", rank, rank, &n) ||
	    field_u64(&p, "value", 0, COUNT_MAX, &r->value) ||
	    field_word(&p, "host", r->host, sizeof(r->host)) ||
	    field_u64(&p, "pid", 1, INT_MAX, &pid) ||
	    field_u64(&p, "arrived", 0, COUNT_MAX, &r->arrived) ||
	    field_word(&p, "phase", r->phase, sizeof(r->phase)) ||
	    field_u64(&p, "fio", 1, INT_MAX, &fio_pid) || record_end(p)) {
		memset(r, 0, sizeof(*r));
		snprintf(r->host, sizeof(r->host), "?");
		r->pid = r->fio_pid = -1;
		return -1;
	}
	r->pid = (long)pid;
	r->fio_pid = (long)fio_pid;
	return 0;
}

static void read_rank(int fd, uint32_t rank, struct rank_rec *r)
{
	char buf[REC];

	if (read_rec(fd, rec_off(rank), buf, REC))
		buf[0] = '\0';
	parse_rank(buf, rank, r);
}

/* value comes before the host, whose length varies: a record cut short
 * fails to parse rather than carrying a value cut short */
static int write_rank_value(struct mdfio_rankfile *rf, uint64_t arrived,
			    const char *phase, uint64_t value)
{
	return write_rec(rf->fd, rec_off(rf->rank), REC,
			 "rank %" PRIu32 " value %" PRIu64 " host %s pid %ld arrived %" PRIu64
			 " phase %s fio %ld", rf->rank, value, rf->host, (long)getpid(),
			 arrived, phase, rf->fio_pid);
}

static int write_rank(struct mdfio_rankfile *rf, uint64_t arrived, const char *phase)
{
	return write_rank_value(rf, arrived, phase, 0);
}

/* The first rank of [0, total) that another open file holds, or total if
 * there is none. */
static uint32_t first_claimed(int fd, uint32_t total)
{
	uint32_t r;

	for (r = 0; r < total; r++)
		if (claimed(fd, r))
			return r;
	return total;
}

/* Whether fd is still the file named name in dirfd (a last rank out may
 * have removed it between our open and our claim). */
static int still_named(int dirfd, int fd)
{
	struct stat a, b;

	return !fstat(fd, &a) &&
	       !fstatat(dirfd, MDFIO_RANKFILE_NAME, &b, AT_SYMLINK_NOFOLLOW) &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Whether h (read under the header lock) shows a barrier failed since rf's
 * fio reserved its ranks in this file, where no other run can take them: a
 * barrier of its own run, which the other fios gave up and left while this
 * one was still busy in the phase before (1, with the reason in why). Its
 * later phases meet that failure, as a named run's do, rather than start a
 * run afresh that waits join_timeout for fios that have ended, to call them
 * gone. */
static int failed_since_reserved(const struct mdfio_rankfile *rf, const struct header *h,
				 char *why, size_t len)
{
	if (rf->reserved_fd < 0 || !h->failed || h->total != rf->total ||
	    !strcmp(h->id, rf->failed_before))
		return 0;
	read_failure(rf->fd, why, len, NULL);
	return 1;
}

static int claim_once(struct mdfio_rankfile *rf, char *msg, size_t msglen)
{
	struct header h;
	struct rank_rec holder;
	int fd = rf->fd, got, err;
	uint32_t r;

	err = lock(fd, F_WRLCK, 0, REC, 1);
	if (err)
		return mdfio_reason(msg, msglen, "cannot lock %s: %s", MDFIO_RANKFILE_NAME, strerror(err));
	got = read_header(fd, &h);
	if (got < 0) {
		unlock(fd, 0, REC);
		return mdfio_reason(msg, msglen, "%s is not mdfio's rank file: refusing to touch it",
			    MDFIO_RANKFILE_NAME);
	}
	r = got ? 0 : first_claimed(fd, h.total);
	if (!got && r < h.total && h.total != rf->total) {
		read_rank(fd, r, &holder);
		unlock(fd, 0, REC);
		return mdfio_reason(msg, msglen, "another fio run with %" PRIu32 " ranks is using this namespace (rank %" PRIu32 ": host %s, pid %ld); this job has %" PRIu32,
			    h.total, r, holder.host, holder.pid, rf->total);
	}
	if (!got && r == h.total &&
	    (failed_run(rf, &h, msg, msglen) || failed_since_reserved(rf, &h, msg, msglen))) {
		/* a later phase of a run that failed, in a fio that joined
		 * it before: the run stopped, as at a failed barrier */
		unlock(fd, 0, REC);
		return 2;
	}
	if (got || r == h.total) {
		/* the first rank of a run: nothing of an earlier one counts
		 * (records of ranks nobody claims are never read as live). The
		 * file keeps its size: a cleanup on a full file system must
		 * still be able to write its records. */
		new_id(h.id);
		h.total = rf->total;
		h.released = h.failed = h.max = 0;
		h.root_goes = 0;
		err = write_header(fd, &h);
		if (!err)
			err = write_rec(fd, FAILURE_OFF, FAILURE_LEN, "-");
		if (err) {
			unlock(fd, 0, REC);
			return mdfio_reason(msg, msglen, "cannot write %s: %s", MDFIO_RANKFILE_NAME, strerror(err));
		}
	}
	if (reserved_elsewhere(rf, rf->rank)) {
		read_rank(fd, rf->rank, &holder);
		unlock(fd, 0, REC);
		return mdfio_reason(msg, msglen, "another fio run is using this namespace (rank %" PRIu32
				    ": host %s, fio pid %ld)", rf->rank, holder.host, holder.fio_pid);
	}
	err = lock(fd, F_WRLCK, rec_off(rf->rank), CLAIM_LEN, 0);
	if (err) {
		read_rank(fd, rf->rank, &holder);
		unlock(fd, 0, REC);
		if (err == EAGAIN || err == EACCES)
			return mdfio_reason(msg, msglen, "rank %" PRIu32 " is taken by a live fio (host %s, pid %ld): another fio run is using this namespace, or two hosts took the same ranks",
				    rf->rank, holder.host, holder.pid);
		return mdfio_reason(msg, msglen, "cannot lock rank %" PRIu32 " in %s: %s", rf->rank,
			    MDFIO_RANKFILE_NAME, strerror(err));
	}
	err = write_rank(rf, h.released, "-");
	memcpy(rf->id, h.id, sizeof(rf->id));
	unlock(fd, 0, REC);
	if (err)
		return mdfio_reason(msg, msglen, "cannot write %s: %s", MDFIO_RANKFILE_NAME, strerror(err));
	return 0;
}

/* Opens (creating) the rank file in dirfd into rf->fd: never through a
 * symlink, never anything but a regular file. */
/* The descriptor kept is never the one that created the file: GlusterFS's
 * FUSE client marks opens for direct I/O on a direct-io-mode mount, but not
 * creates, and each later open of the file on that mount takes the mark of
 * one still open, so a creating descriptor kept open would make every rank
 * on its host read the others' records through its page cache, stale for
 * ever (docs/hosts.md). */
static int open_file(struct mdfio_rankfile *rf, int dirfd, char *msg, size_t msglen)
{
	struct stat sb;
	int tries, made;

	for (tries = 0;; tries++) {
		rf->fd = openat(dirfd, MDFIO_RANKFILE_NAME, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (rf->fd >= 0 || errno != ENOENT || tries == 100)
			break;
		made = openat(dirfd, MDFIO_RANKFILE_NAME, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			      0644);
		if (made >= 0)
			close(made);
		else if (errno != EEXIST)
			break;
		/* made, or by another fio: open it anew (unless the last rank
		 * out of a run removed it meanwhile) */
	}
	if (rf->fd < 0)
		return mdfio_reason(msg, msglen, "cannot open %s: %s%s", MDFIO_RANKFILE_NAME,
			    strerror(errno), errno == ELOOP ? " (a symlink: refusing to follow it)" : "");
	if (fstat(rf->fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_nlink != 1) {
		close(rf->fd);
		rf->fd = -1;
		/* a hard link would let mdfio write into another file */
		return mdfio_reason(msg, msglen, "%s is not a regular file of one link: refusing to touch it",
			    MDFIO_RANKFILE_NAME);
	}
	return 0;
}

int mdfio_rankfile_reserve(struct mdfio_rankfile *rf, int dirfd, uint32_t first,
			   uint32_t n, const char *host, const char *run_id,
			   char *msg, size_t msglen)
{
	struct header h;
	struct rank_rec holder;
	uint32_t r;
	int err, tries;

	snprintf(rf->host, sizeof(rf->host), "%s", host);
	rf->fio_pid = (long)getpid();
	rf->reserved_fd = -1;
	rf->fence = NULL;
	name_run(rf, run_id);
	/* before fio forks its jobs, so that they all share it */
	rf->waiter = mmap(NULL, sizeof(*rf->waiter), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (rf->waiter == MAP_FAILED) {
		rf->waiter = NULL;	/* each of its ranks polls alone */
	} else if (waiter_init(rf->waiter)) {
		munmap(rf->waiter, sizeof(*rf->waiter));
		rf->waiter = NULL;
	}
	for (tries = 0; tries < 100; tries++) {
		if (open_file(rf, dirfd, msg, msglen))
			return 1;
		err = lock(rf->fd, F_WRLCK, 0, REC, 1);
		if (err) {
			mdfio_reason(msg, msglen, "cannot lock %s: %s", MDFIO_RANKFILE_NAME, strerror(err));
			goto fail;
		}
		err = read_header(rf->fd, &h);
		if (err < 0) {
			mdfio_reason(msg, msglen, "%s is not mdfio's rank file: refusing to touch it",
				     MDFIO_RANKFILE_NAME);
			goto fail_locked;
		}
		if (!err && refuse_failed_run(rf, &h, msg, msglen))
			goto fail_locked;
		snprintf(rf->failed_before, sizeof(rf->failed_before), "%s", !err && h.failed ? h.id : "");
		err = 0;	/* a new file's header is its first claim's to write */
		for (r = first; r < first + n; r++) {
			err = lock(rf->fd, F_WRLCK, reservation_off(r), 1, 0);
			if (!err)
				continue;
			read_rank(rf->fd, r, &holder);
			if (err == EAGAIN || err == EACCES)
				mdfio_reason(msg, msglen, "another fio run is using this namespace (rank %" PRIu32
					     ": host %s, fio pid %ld)", r, holder.host, holder.fio_pid);
			else
				mdfio_reason(msg, msglen, "cannot lock rank %" PRIu32 " in %s: %s", r,
					     MDFIO_RANKFILE_NAME, strerror(err));
			goto fail_locked;
		}
		/* the holder's name for a refusal, until its job claims */
		for (r = first; r < first + n && !err; r++) {
			if (claimed(rf->fd, r))
				continue;
			rf->rank = r;
			err = write_rank(rf, 0, "-");
		}
		unlock(rf->fd, 0, REC);
		if (err) {
			mdfio_reason(msg, msglen, "cannot write %s: %s", MDFIO_RANKFILE_NAME, strerror(err));
			goto fail;
		}
		if (still_named(dirfd, rf->fd))
			return 0;
		close(rf->fd);	/* removed under us: reserve in the new one */
	}
	rf->fd = -1;
	return mdfio_reason(msg, msglen, "%s keeps being replaced: is another run removing it?",
			    MDFIO_RANKFILE_NAME);
fail_locked:
	unlock(rf->fd, 0, REC);
fail:
	close(rf->fd);
	rf->fd = -1;
	return 1;
}

int mdfio_rankfile_claim(struct mdfio_rankfile *rf, int dirfd, uint32_t rank,
			 uint32_t total, uint32_t block, const char *host,
			 char *msg, size_t msglen)
{
	return mdfio_rankfile_claim_reserved(rf, dirfd, rank, total, block, host, NULL, NULL, msg, msglen);
}

int mdfio_rankfile_claim_reserved(struct mdfio_rankfile *rf, int dirfd, uint32_t rank,
				  uint32_t total, uint32_t block, const char *host,
				  const struct mdfio_rankfile *reserved, const char *run_id,
				  char *msg, size_t msglen)
{
	int tries;

	rf->reserved_fd = reserved ? reserved->fd : -1;
	snprintf(rf->failed_before, sizeof(rf->failed_before), "%s", reserved ? reserved->failed_before : "");
	rf->fio_pid = reserved ? reserved->fio_pid : (long)getpid();
	rf->stopped = NULL;
	rf->waiting = NULL;
	rf->stalled = NULL;
	rf->arrive_by_us = 0;
	rf->waiter = reserved ? reserved->waiter : NULL;
	rf->fence = reserved ? reserved->fence : NULL;
	if (reserved) {
		memcpy(rf->run_digest, reserved->run_digest, sizeof(rf->run_digest));
		memcpy(rf->run_id, reserved->run_id, sizeof(rf->run_id));
	} else {
		name_run(rf, run_id);
	}

	rf->rank = rank;
	rf->total = total;
	rf->block = block ? block : 1;
	snprintf(rf->host, sizeof(rf->host), "%s", host);
	for (tries = 0; tries < 100; tries++) {
		if (open_file(rf, dirfd, msg, msglen))
			return 1;
		int err = claim_once(rf, msg, msglen);

		if (err) {
			close(rf->fd);
			rf->fd = -1;
			return err;
		}
		if (still_named(dirfd, rf->fd))
			return 0;
		close(rf->fd);	/* removed under us: claim in the new one */
	}
	rf->fd = -1;
	return mdfio_reason(msg, msglen, "%s keeps being replaced: is another run removing it?",
		    MDFIO_RANKFILE_NAME);
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void waiter_lock(struct mdfio_rankfile_waiter *w)
{
	mdfio_robust_lock(&w->lock, 1);
}

static void waiter_unlock(struct mdfio_rankfile_waiter *w)
{
	mdfio_robust_unlock(&w->lock);
}

/* Tells the waiting siblings what the header of the file with id says.
 * A header read earlier than the one published last never takes back what
 * that one told: a rank publishes the header of its arrival only after it
 * has entered the fence, by which time the poller may have published the
 * release and left for the next barrier, and a sibling still waiting would
 * then see its barrier unreleased with nobody left to poll for it (the
 * poller waits for the next fence, which needs that sibling). */
static void publish(struct mdfio_rankfile_waiter *w, const char *id, const struct header *h)
{
	if (!w)
		return;
	waiter_lock(w);
	if (memcmp(w->id, id, sizeof(w->id))) {
		memcpy(w->id, id, sizeof(w->id));
		w->released = w->failed = 0;
	}
	if (h->released >= w->released) {
		w->released = h->released;
		w->max = h->max;
	}
	if (h->failed > w->failed)
		w->failed = h->failed;
	waiter_unlock(w);
	__atomic_add_fetch(&w->seq, 1, __ATOMIC_RELEASE);
	syscall(RF_SYS_FUTEX, &w->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* What the poller last published about barrier b of rf's file: 1 released
 * (with the maximum), -1 failed, 0 neither. */
static int published(struct mdfio_rankfile_waiter *w, const struct mdfio_rankfile *rf,
		     uint64_t b, uint64_t *max)
{
	int state = 0;

	waiter_lock(w);
	if (!memcmp(w->id, rf->id, sizeof(w->id))) {
		if (w->released >= b) {
			state = 1;
			*max = w->max;
		} else if (w->failed == b) {
			state = -1;
		}
	}
	waiter_unlock(w);
	return state;
}

/* Whether this rank now polls for its siblings: nobody does, or the one
 * who did is gone (its process or thread ended without leaving). A poller
 * that is only slow, or waits for a lock, stays the only one: a second
 * would wait for the same lock. */
static int take_poller(struct mdfio_rankfile_waiter *w)
{
	return mdfio_robust_lock(&w->poller, 0);
}

/* Called by the thread that took the poller, and only by it. */
static void leave_poller(struct mdfio_rankfile_waiter *w)
{
	mdfio_robust_unlock(&w->poller);
	/* a sibling asleep takes over at once, not at its next answer */
	__atomic_add_fetch(&w->seq, 1, __ATOMIC_RELEASE);
	syscall(RF_SYS_FUTEX, &w->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* This rank has arrived at barrier b: the round of the fence it waits for
 * (0: none, the ranks poll), and in *last whether it is the last of its
 * fio's ranks to arrive, which enters the launcher's collective for all of
 * them (enter_fence). Called under the file's lock, right after the rank's
 * record: were a rank counted only after the lock, a sibling could pass b
 * (released by a third) and count itself at b + 1 first, starting a new
 * count that b's latecomer would then restart, and no fence would be
 * entered for either barrier. */
static uint64_t count_arrival(struct mdfio_rankfile *rf, uint64_t b, int *last)
{
	struct mdfio_rankfile_waiter *w = rf->waiter;
	uint64_t round;

	*last = 0;
	if (!w || !rf->fence)
		return 0;
	waiter_lock(w);
	if (w->arrive_b != b || memcmp(w->arrive_id, rf->id, sizeof(w->arrive_id))) {
		memcpy(w->arrive_id, rf->id, sizeof(w->arrive_id));
		w->arrive_b = b;
		w->arrived = 0;
		w->round++;
	}
	round = w->round;
	*last = ++w->arrived == rf->block;
	waiter_unlock(w);
	return round;
}

/* The last rank of a fio to arrive enters round's fence, after the lock:
 * the collective may take long to enter. */
static void enter_fence(struct mdfio_rankfile *rf, uint64_t round)
{
	struct mdfio_rankfile_waiter *w = rf->waiter;

	if (rf->fence->enter(rf->fence->arg, round, &w->fenced, &w->seq)) {
		/* no collective to wait for: look at the file now */
		__atomic_store_n(&w->fenced, round, __ATOMIC_RELEASE);
		__atomic_add_fetch(&w->seq, 1, __ATOMIC_RELEASE);
		syscall(RF_SYS_FUTEX, &w->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
}

/* Every rank record in one read: rec[r] for r < total. 0 or an errno. */
static int read_ranks(const struct mdfio_rankfile *rf, struct rank_rec *recs)
{
	size_t len = (size_t)rf->total * REC;
	char *buf = malloc(len ? len : 1), line[REC];
	ssize_t got;
	uint32_t r;

	if (!buf)
		return ENOMEM;
	got = pread(rf->fd, buf, len, rec_off(0));
	if (got < 0) {
		free(buf);
		return errno;
	}
	for (r = 0; r < rf->total; r++) {
		line[0] = '\0';
		if ((size_t)got >= (size_t)(r + 1) * REC) {
			memcpy(line, buf + (size_t)r * REC, REC);
			line[REC - 1] = '\0';
		}
		parse_rank(line, r, &recs[r]);
	}
	free(buf);
	return 0;
}

/* Under the header lock: whether every rank has arrived at barrier b (or
 * passed it) while still claimed; if so releases it. A rank that arrived
 * at b to enter another phase is written into why (returns -1). The
 * records come in one read, and the claims are looked at only once every
 * record shows its rank arrived: the last rank to arrive, not every one,
 * asks the lock manager about every rank. */
static int try_release(struct mdfio_rankfile *rf, struct header *h, uint64_t b,
		       const char *phase, uint64_t value, char *why, size_t len)
{
	struct rank_rec *recs = calloc(rf->total ? rf->total : 1, sizeof(*recs));
	uint64_t max = value;
	uint32_t r;
	int all = 1;

	if (!recs || read_ranks(rf, recs)) {
		free(recs);
		return 0;	/* as if no other rank had arrived */
	}
	for (r = 0; r < rf->total; r++) {
		struct rank_rec *rec = &recs[r];

		if (r == rf->rank)
			continue;
		if (rec->arrived == b && strcmp(rec->phase, phase) && claimed(rf->fd, r)) {
			mdfio_reason(why, len, "rank %" PRIu32 " (host %s) entered %s where rank %" PRIu32
				     " (host %s) entered %s: the hosts do not run the same jobs",
				     r, rec->host, rec->phase, rf->rank, rf->host, phase);
			free(recs);
			return -1;
		}
		if (rec->arrived < b)
			all = 0;
		else if (rec->value > max)
			max = rec->value;
	}
	for (r = 0; all && r < rf->total; r++)
		if (r != rf->rank && !claimed(rf->fd, r))
			all = 0;
	free(recs);
	if (!all)
		return 0;
	/* the header keeps it until the next barrier, which no rank can
	 * release before every rank has read it from here */
	h->released = b;
	h->max = max;
	return !write_header(rf->fd, h);
}

/* Whether nobody claims any rank of the block (one fio process's ranks)
 * that holds rank r: its fio has not started the phase, or is gone. */
static int block_unclaimed(struct mdfio_rankfile *rf, uint32_t r)
{
	uint32_t first = r / rf->block * rf->block, k;

	for (k = first; k < first + rf->block && k < rf->total; k++)
		if (k == rf->rank || claimed(rf->fd, k))
			return 0;
	return 1;
}

/* The first rank of the first unclaimed block, or total. */
static uint32_t first_unclaimed(struct mdfio_rankfile *rf)
{
	uint32_t first;

	for (first = 0; first < rf->total; first += rf->block)
		if (block_unclaimed(rf, first))
			return first;
	return rf->total;
}
/* Appends to msg the ranks that have not arrived at barrier b, as ranges
 * (each with the phase it entered last), at most 8 of them. */
static void name_absent(struct mdfio_rankfile *rf, uint64_t b, char *msg, size_t msglen)
{
	struct rank_rec *recs = calloc(rf->total ? rf->total : 1, sizeof(*recs));
	uint32_t r, first = UINT32_MAX, n = 0;
	size_t len;

	if (!recs || read_ranks(rf, recs)) {
		free(recs);
		snprintf(msg + strlen(msg), msglen - strlen(msg), "(%s unreadable)", MDFIO_RANKFILE_NAME);
		return;
	}
	for (r = 0; r <= rf->total; r++) {
		int absent = r < rf->total && r != rf->rank && recs[r].arrived < b &&
			     (first == UINT32_MAX || !strcmp(recs[r].phase, recs[first].phase));

		if (absent && first == UINT32_MAX)
			first = r;
		if (absent || first == UINT32_MAX)
			continue;
		len = strlen(msg);
		if (n++ < 8) {
			if (r - 1 > first)
				snprintf(msg + len, msglen - len, "%s%" PRIu32 "-%" PRIu32 " (busy since it entered %s)",
					 n > 1 ? ", " : "", first, r - 1, recs[first].phase);
			else
				snprintf(msg + len, msglen - len, "%s%" PRIu32 " (busy since it entered %s)",
					 n > 1 ? ", " : "", first, recs[first].phase);
		}
		/* r may start the next range */
		first = UINT32_MAX;
		if (r < rf->total && r != rf->rank && recs[r].arrived < b)
			first = r;
	}
	free(recs);
	if (n > 8) {
		len = strlen(msg);
		snprintf(msg + len, msglen - len, ", ...");
	}
}

/* Appends the ranks of unclaimed blocks to msg, as ranges. */
static void name_missing(struct mdfio_rankfile *rf, char *msg, size_t msglen)
{
	uint32_t r, first = UINT32_MAX, n = 0;
	size_t len;

	for (r = 0; r <= rf->total; r++) {
		int missing = r < rf->total && block_unclaimed(rf, r);

		if (missing && first == UINT32_MAX)
			first = r;
		if (missing || first == UINT32_MAX)
			continue;
		len = strlen(msg);
		if (n++ < 8)
			snprintf(msg + len, msglen - len, "%s%" PRIu32, n > 1 ? "," : "", first);
		len = strlen(msg);
		if (n <= 8 && r - 1 > first)
			snprintf(msg + len, msglen - len, "-%" PRIu32, r - 1);
		first = UINT32_MAX;
	}
	if (n > 8) {
		len = strlen(msg);
		snprintf(msg + len, msglen - len, ",...");
	}
}

int mdfio_rankfile_claimed(const struct mdfio_rankfile *rf, uint32_t rank)
{
	return claimed(rf->fd, rank);
}

int mdfio_rankfile_reserved_elsewhere(const struct mdfio_rankfile *rf, uint32_t rank)
{
	return reserved_elsewhere(rf, rank);
}

/* Under the header lock: barrier b fails for why, and for good (see
 * rankfile.h); this rank withdraws from it. */
static void fail_barrier(struct mdfio_rankfile *rf, struct header *h, uint64_t b,
			 const char *why)
{
	if (rf->run_digest[0])
		write_rec(rf->fd, FAILURE_OFF, FAILURE_LEN, RUN_PREFIX "%s: %s", rf->run_digest, why);
	else
		write_rec(rf->fd, FAILURE_OFF, FAILURE_LEN, "%s", why);
	h->failed = b;
	write_header(rf->fd, h);
	write_rank(rf, b - 1, "-");
}

int mdfio_rankfile_barrier(struct mdfio_rankfile *rf, const char *phase,
			   unsigned int timeout_ms, uint64_t *barrier,
			   mdfio_rankfile_describe describe, void *arg,
			   char *msg, size_t msglen)
{
	return mdfio_rankfile_barrier_max(rf, phase, 0, NULL, timeout_ms, barrier,
					  describe, arg, msg, msglen);
}

/* What a range of missing ranks that starts at first is: its host, if its
 * record names one, and busy (state 1: claimed, in the phase it entered
 * last) or claimed by nobody (2). */
static void describe_group(const struct rank_rec *recs, uint32_t first, int state,
			   char *what, size_t len)
{
	const struct rank_rec *rec = &recs[first];
	size_t n = 0;

	what[0] = '\0';
	if (strcmp(rec->host, "?"))
		n = (size_t)snprintf(what, len, "host %s, ", rec->host);
	if (n >= len)
		return;
	if (state == 2)
		snprintf(what + n, len - n, "claimed by nobody");
	else if (rec->phase[0] && strcmp(rec->phase, "-"))
		snprintf(what + n, len - n, "busy since it entered %s", rec->phase);
	else
		snprintf(what + n, len - n, "busy");
}

/* One line for rf->stalled: how long this rank has waited at barrier b, and
 * the ranks that have not arrived, as ranges of one host and state (busy
 * in the phase it last entered, or claimed by nobody). One read of the
 * records, and one lock probe per missing rank. */
static void say_stalled(struct mdfio_rankfile *rf, uint64_t b, const char *phase,
			uint64_t waited_us)
{
	struct rank_rec *recs;
	char ranges[FAILURE_LEN / 2], what[128];
	uint32_t r, first = 0, missing = 0, groups = 0;
	int state, prev = 0;	/* 0 arrived, 1 busy, 2 claimed by nobody */
	size_t n = 0;

	if (!rf->stalled)
		return;
	recs = calloc(rf->total ? rf->total : 1, sizeof(*recs));
	if (!recs || read_ranks(rf, recs)) {
		free(recs);
		return;
	}
	ranges[0] = '\0';
	for (r = 0; r <= rf->total; r++) {
		state = 0;
		if (r < rf->total && r != rf->rank && recs[r].arrived < b) {
			missing++;
			state = claimed(rf->fd, r) ? 1 : 2;
		}
		/* a range goes on while host, state and phase stay */
		if (prev && state == prev && !strcmp(recs[r].host, recs[first].host) &&
		    !strcmp(recs[r].phase, recs[first].phase))
			continue;
		if (prev && ++groups <= 8 && n < sizeof(ranges)) {
			describe_group(recs, first, prev, what, sizeof(what));
			if (r - 1 > first)
				n += (size_t)snprintf(ranges + n, sizeof(ranges) - n, "%s%" PRIu32 "-%" PRIu32 " (%s)",
						      groups > 1 ? ", " : "", first, r - 1, what);
			else
				n += (size_t)snprintf(ranges + n, sizeof(ranges) - n, "%s%" PRIu32 " (%s)",
						      groups > 1 ? ", " : "", first, what);
		} else if (prev && groups == 9 && n < sizeof(ranges)) {
			n += (size_t)snprintf(ranges + n, sizeof(ranges) - n, ", ...");
		}
		prev = state;
		first = r;
	}
	free(recs);
	if (missing)
		snprintf(what, sizeof(what), "%" PRIu32 " of %" PRIu32 " ranks %s not arrived: ", missing,
			 rf->total, missing == 1 ? "has" : "have");
	else
		snprintf(what, sizeof(what), "every rank has arrived, but none has released it");
	{
		char line[FAILURE_LEN];

		snprintf(line, sizeof(line), "has waited %" PRIu64 " s to enter %s (barrier %" PRIu64 "): %s%s",
			 waited_us / 1000000, phase, b, what, ranges);
		rf->stalled(rf->stalled_arg, line);
	}
}

int mdfio_rankfile_barrier_max(struct mdfio_rankfile *rf, const char *phase,
			       uint64_t value, uint64_t *max, unsigned int timeout_ms,
			       uint64_t *barrier, mdfio_rankfile_describe describe,
			       void *arg, char *msg, size_t msglen)
{
	struct mdfio_rankfile_waiter *w = rf->waiter;
	struct header h;
	uint64_t b, lonely_since = 0, start, next_poll, next_probe, next_say, max_seen = 0, round;
	uint64_t timeout_us = (uint64_t)timeout_ms * 1000;
	/* how long a wait goes without looking at the other ranks' claims:
	 * half the timeout, so that a block gone is named within one and a
	 * half of it, and a long wait probes the lock manager rarely */
	uint64_t probe_us = timeout_us / 2 > 1000 ? timeout_us / 2 : 1000;
	uint64_t say_us = timeout_us > 1000000 ? timeout_us : 1000000;
	unsigned int sleep_us = POLL_FIRST_US;
	char why[FAILURE_LEN], stop_why[FAILURE_LEN];
	int err, got = 0, polling = 0, header_read = 0, last = 0, late = 0;

	err = lock(rf->fd, F_WRLCK, 0, REC, 1);
	if (err)
		return mdfio_reason(msg, msglen, "cannot lock %s: %s", MDFIO_RANKFILE_NAME, strerror(err));
	if (read_header(rf->fd, &h) || strcmp(h.id, rf->id)) {
		unlock(rf->fd, 0, REC);
		return mdfio_reason(msg, msglen, "%s was changed under a live run", MDFIO_RANKFILE_NAME);
	}
	b = h.released + 1;
	if (h.failed) {
		read_failure(rf->fd, why, sizeof(why), NULL);
		unlock(rf->fd, 0, REC);
		return mdfio_reason(msg, msglen, "this run stopped before this phase (%s)", why);
	}
	*barrier = b;
	err = write_rank_value(rf, b, phase, value);
	if (!err)
		got = try_release(rf, &h, b, phase, value, why, sizeof(why));
	if (got < 0)
		fail_barrier(rf, &h, b, why);
	/* also when this rank released it: every fio process enters the
	 * launcher's collective once for every barrier, in the same order */
	round = err || got < 0 ? 0 : count_arrival(rf, b, &last);
	unlock(rf->fd, 0, REC);
	if (last)
		enter_fence(rf, round);
	if (err)
		return mdfio_reason(msg, msglen, "cannot write %s: %s", MDFIO_RANKFILE_NAME, strerror(err));
	/* siblings already waiting learn it without a look at the file */
	publish(w, rf->id, &h);
	if (got < 0)
		return mdfio_reason(msg, msglen, "%s", why);
	start = now_us();
	/* with a fence, the file is read when it completes (or at a probe),
	 * not polled */
	next_poll = round ? UINT64_MAX : start;
	next_probe = start + probe_us;
	next_say = start + say_us;
	for (;;) {
		int released = 0, failed = 0, gone, stopped;
		uint32_t seq = w ? __atomic_load_n(&w->seq, __ATOMIC_ACQUIRE) : 0;
		uint64_t now = now_us(), until;

		if (w && !polling)
			polling = take_poller(w);
		if (round && __atomic_load_n(&w->fenced, __ATOMIC_ACQUIRE) >= round) {
			/* one look now; if the fence did not mean the
			 * release (fio processes that entered different
			 * barriers), the file is polled from here on */
			round = 0;
			next_poll = now;
		}
		if (w) {
			/* a sibling's arrival may have released it */
			int state = published(w, rf, b, &max_seen);

			released = state > 0;
			failed = state < 0;
		}
		if (!released && !failed && (!w || polling) && now >= next_poll) {
			/* a shared lock also makes a network file system read
			 * the file afresh */
			err = lock(rf->fd, F_RDLCK, 0, REC, 1);
			if (err) {
				if (polling)
					leave_poller(w);
				return mdfio_reason(msg, msglen, "cannot lock %s: %s", MDFIO_RANKFILE_NAME,
						    strerror(err));
			}
			if (!read_header(rf->fd, &h)) {
				released = h.released >= b;
				failed = !released && h.failed == b;
				max_seen = h.max;
				publish(w, rf->id, &h);
			}
			unlock(rf->fd, 0, REC);
			if (round) {
				next_poll = UINT64_MAX;
			} else {
				next_poll = now + sleep_us;
				if (sleep_us < POLL_MAX_US)
					sleep_us = sleep_us * 2 < POLL_MAX_US ? sleep_us * 2 : POLL_MAX_US;
			}
		}
		if (released) {
			if (polling)
				leave_poller(w);
			if (max)
				*max = max_seen;
			return 0;
		}
		/* the job's siblings, present or not, look claimed through
		 * the open file a dead fio shares with them, so no wait of
		 * it would ever time out */
		gone = !failed && mdfio_fio_gone(rf->fio_pid);
		stopped = !failed && !gone && rf->stopped &&
			  rf->stopped(rf->stopped_arg, stop_why, sizeof(stop_why));
		if (!failed && !gone && !stopped) {
			int timed_out = 0;

			/* the claims are looked at only when the wait has gone
			 * on for a while: time counts only while a whole block
			 * is claimed by nobody, as one claimed rank of it shows
			 * its fio busy with the previous phase */
			if ((!w || polling) && now >= next_probe) {
				/* and, with a fence that has not completed, the
				 * file itself: a failure, or a release whose
				 * fence is late, is seen */
				if (round)
					next_poll = now;
				if (first_unclaimed(rf) == rf->total) {
					lonely_since = 0;
					next_probe = now + probe_us;
				} else {
					if (!lonely_since)
						lonely_since = now;
					timed_out = now - lonely_since > timeout_us;
					next_probe = lonely_since + timeout_us + 1000;
				}
			}
			/* past the time by which all must have come, a
			 * claimed rank that has not is stuck */
			late = rf->arrive_by_us && now >= rf->arrive_by_us && (!w || polling);
			timed_out |= late;
			if (!timed_out) {
				if ((!w || polling) && now >= next_say) {
					say_stalled(rf, b, phase, now - start);
					next_say = now + say_us;
				}
				if (rf->waiting)
					rf->waiting(rf->waiting_arg);
				until = now + ANSWER_US;
				if (!w || polling) {
					if (next_poll < until)
						until = next_poll;
					if (next_probe < until)
						until = next_probe;
					if (rf->arrive_by_us && rf->arrive_by_us < until)
						until = rf->arrive_by_us;
				}
				if (until > now) {
					struct timespec ts = { .tv_sec = (time_t)((until - now) / 1000000),
							       .tv_nsec = (long)((until - now) % 1000000) * 1000 };

					/* a sibling's publication wakes it early */
					if (w)
						syscall(RF_SYS_FUTEX, &w->seq, FUTEX_WAIT, seq, &ts, NULL, 0);
					else
						nanosleep(&ts, NULL);
				}
				continue;
			}
		}
		if (polling) {
			leave_poller(w);
			polling = 0;
		}
		err = lock(rf->fd, F_WRLCK, 0, REC, 1);
		if (err)
			return mdfio_reason(msg, msglen, "cannot lock %s: %s", MDFIO_RANKFILE_NAME,
					    strerror(err));
		header_read = !read_header(rf->fd, &h);
		if (header_read && h.released >= b) {
			unlock(rf->fd, 0, REC);
			if (max)
				*max = h.max;
			return 0;
		}
		if (h.failed == b) {
			/* the first rank to give up said why for all */
			read_failure(rf->fd, why, sizeof(why), NULL);
			write_rank(rf, b - 1, "-");
			break;
		}
		if (gone) {
			snprintf(why, sizeof(why), "fio's main process (pid %ld, host %s) is gone",
				 rf->fio_pid, rf->host);
			fail_barrier(rf, &h, b, why);
			break;
		}
		if (stopped) {
			snprintf(why, sizeof(why), "%s", stop_why);
			fail_barrier(rf, &h, b, why);
			break;
		}
		if (late) {
			snprintf(why, sizeof(why), "ranks ");
			name_absent(rf, b, why, sizeof(why));
			snprintf(why + strlen(why), sizeof(why) - strlen(why),
				 " of %" PRIu32 " have not arrived by the time all must have", rf->total);
			fail_barrier(rf, &h, b, why);
			break;
		}
		if (failed || first_unclaimed(rf) == rf->total) {
			/* the missing block came after all (or a sibling's
			 * view of a failure was not this file's) */
			unlock(rf->fd, 0, REC);
			lonely_since = 0;
			next_probe = now_us() + probe_us;
			continue;
		}
		snprintf(why, sizeof(why), "ranks ");
		name_missing(rf, why, sizeof(why));
		snprintf(why + strlen(why), sizeof(why) - strlen(why),
			 " of %" PRIu32 " did not join within %g s", rf->total, timeout_ms / 1000.0);
		if (describe)
			describe(arg, rf, why, sizeof(why));
		fail_barrier(rf, &h, b, why);
		break;
	}
	/* the siblings waiting at it fail with the same reason at once */
	if (header_read)
		publish(w, rf->id, &h);
	unlock(rf->fd, 0, REC);
	return mdfio_reason(msg, msglen, "%s", why);
}

int mdfio_rankfile_abort(struct mdfio_rankfile *rf, const char *why)
{
	struct header h;
	int err = lock(rf->fd, F_WRLCK, 0, REC, 1);

	if (err)
		return err;
	/* a run already failed keeps its first reason */
	if (!read_header(rf->fd, &h) && !strcmp(h.id, rf->id) && !h.failed)
		fail_barrier(rf, &h, h.released + 1, why);
	unlock(rf->fd, 0, REC);
	return 0;
}

int mdfio_rankfile_mark_root(struct mdfio_rankfile *rf)
{
	struct header h;
	int err = lock(rf->fd, F_WRLCK, 0, REC, 1);

	if (err)
		return err;
	if (read_header(rf->fd, &h) || strcmp(h.id, rf->id))
		err = ESTALE;
	else if (!h.root_goes) {
		h.root_goes = 1;
		err = write_header(rf->fd, &h);
	}
	unlock(rf->fd, 0, REC);
	return err;
}

/* Removes the file if no other open file holds a lock in it (only the last
 * one out can tell, and only then, whether it is still needed), and closes
 * it, dropping every lock of rf. Returns 1 if it removed the file and a
 * cleanup had marked the root to go with it. */
static int remove_if_last(struct mdfio_rankfile *rf, int dirfd,
			  int (*keep)(void *arg), void *arg)
{
	struct header h;
	int root_goes = 0;

	if (!lock(rf->fd, F_WRLCK, 0, 0, 0) && still_named(dirfd, rf->fd) &&
	    !failed_run_kept(rf->fd) && !(keep && keep(arg))) {
		root_goes = !read_header(rf->fd, &h) && h.root_goes;
		if (unlinkat(dirfd, MDFIO_RANKFILE_NAME, 0))
			root_goes = 0;
	}
	close(rf->fd);
	rf->fd = -1;
	return root_goes;
}

int mdfio_rankfile_release(struct mdfio_rankfile *rf, int dirfd,
			   int (*keep)(void *arg), void *arg)
{
	if (rf->fd < 0)
		return 0;
	/* Holding every record shows that no other rank is left. The own
	 * claim goes first: of ranks leaving at once, each then finds the
	 * others' claims gone or is found by them, so the last one removes it
	 * (holding on to its claim, each could see the other's and neither). */
	unlock(rf->fd, rec_off(rf->rank), CLAIM_LEN);
	return remove_if_last(rf, dirfd, keep, arg);
}

int mdfio_rankfile_unreserve(struct mdfio_rankfile *rf, int dirfd, uint32_t first,
			     uint32_t n, int (*keep)(void *arg), void *arg)
{
	uint32_t r;

	if (rf->fd < 0)
		return 0;
	for (r = first; r < first + n; r++)
		unlock(rf->fd, reservation_off(r), 1);
	return remove_if_last(rf, dirfd, keep, arg);
}
