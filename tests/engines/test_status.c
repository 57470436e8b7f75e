/* The status file of engines/lib/status.c: its text form, and the decision each
 * rank takes on entering a phase. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "status.h"
#include "check.h"


/* The next stale_fstats fstat() calls fail with ESTALE, as a shared file
 * system's client fails one on a file another client has just replaced
 * (GlusterFS's, tests/engines/test_gluster.py). The executable's fstat is
 * the one status.c, linked in statically, calls. */
static int stale_fstats;

int fstat(int fd, struct stat *sb)
{
	if (stale_fstats > 0) {
		stale_fstats--;
		errno = ESTALE;
		return -1;
	}
	return fstatat(fd, "", sb, AT_EMPTY_PATH);
}

static struct mdfio_status make(uint32_t ranks, enum mdfio_rank_state s,
				uint64_t pos, const char *run)
{
	struct mdfio_status st = { .ranks = ranks, .datasets = 3, .precreate = 100,
				   .object_size = 3901, .left = 2, .left_run = "j7" };
	uint32_t r;

	st.rank = calloc(ranks, sizeof(*st.rank));
	for (r = 0; r < ranks; r++) {
		st.rank[r].state = s;
		st.rank[r].pos = pos;
		snprintf(st.rank[r].run, MDFIO_RUN_LEN, "%s", run);
	}
	return st;
}

static void test_roundtrip(void)
{
	struct mdfio_status st = make(3, MDFIO_RS_READY, 40, "11.22.3"), back;
	char msg[256], *text;

	st.rank[1].state = MDFIO_RS_BENCHMARKING;
	st.rank[2].run[0] = '\0';
	text = mdfio_status_format(&st);
	CHECK(!mdfio_status_parse(text, &back, msg, sizeof(msg)), "parse: %s", msg);
	CHECK(back.ranks == 3 && back.datasets == 3 && back.precreate == 100 &&
	      back.object_size == 3901 && back.left == 2 && !strcmp(back.left_run, "j7"),
	      "header");
	CHECK(back.rank[1].state == MDFIO_RS_BENCHMARKING && back.rank[0].pos == 40 &&
	      !strcmp(back.rank[0].run, "11.22.3") && !back.rank[2].run[0], "ranks");
	mdfio_status_free(&back);
	text[strlen(text) - 3] = '\0';	/* truncated mid-line */
	CHECK(mdfio_status_parse(text, &back, msg, sizeof(msg)), "garbled accepted");
	CHECK(mdfio_status_parse("pos: 3000\n", &back, msg, sizeof(msg)) &&
	      strstr(msg, "not an mdfio status file"), "foreign: %s", msg);
	free(text);
	mdfio_status_free(&st);
}

static void test_steps(void)
{
	struct mdfio_status st = make(3, MDFIO_RS_READY, 40, "r"), back;
	char msg[256], *text;
	uint64_t lo, hi;

	st.rank[1].state = MDFIO_RS_BENCHMARKING;
	st.rank[1].steps = 7;
	st.rank[2].steps = MDFIO_STEPS_UNKNOWN;
	text = mdfio_status_format(&st);
	CHECK(!strncmp(text, "mdfio-status 4\n", 15), "version: %s", text);
	CHECK(!mdfio_status_parse(text, &back, msg, sizeof(msg)), "parse: %s", msg);
	CHECK(back.rank[0].steps == 0 && back.rank[1].steps == 7 &&
	      back.rank[2].steps == MDFIO_STEPS_UNKNOWN, "steps round trip");
	free(text);
	mdfio_status_free(&back);
	CHECK(mdfio_status_parse("mdfio-status 2\nranks 1\ndatasets 1\nprecreate-per-set 4\n"
				 "object-size 1\nstart-index 0\nleft 0 -\nrank 0 ready 0 x7 r\n",
				 &back, msg, sizeof(msg)) && strstr(msg, "steps"), "bad steps: %s", msg);

	/* a field beyond what mdfio writes: no count or position read back
	 * can make a loop over it, or a sum with it, run away */
	{
		static const char *const bad[] = {
			"ranks 18446744073709551615\ndatasets 1\nprecreate-per-set 4\nobject-size 1\nstart-index 0\n",
			"ranks 1048577\ndatasets 1\nprecreate-per-set 4\nobject-size 1\nstart-index 0\n",
			"ranks -1\ndatasets 1\nprecreate-per-set 4\nobject-size 1\nstart-index 0\n",
			"ranks 1\ndatasets 4294967296\nprecreate-per-set 4\nobject-size 1\nstart-index 0\n",
			"ranks 1\ndatasets 1\nprecreate-per-set -4\nobject-size 1\nstart-index 0\n",
			"ranks 1\ndatasets 1\nprecreate-per-set 0\nobject-size 1\nstart-index 0\n",
			"ranks 1\ndatasets 1\nprecreate-per-set 1099511627777\nobject-size 1\nstart-index 0\n",
			"ranks 1\ndatasets 1\nprecreate-per-set 4\nobject-size 1073741825\nstart-index 0\n",
			"ranks 1\ndatasets 1\nprecreate-per-set 4\nobject-size 1\nstart-index +0\n",
			"ranks 1\ndatasets 1\nprecreate-per-set 4\nobject-size 1\nstart-index 1152921504606846977\n",
		};
		static const char *const bad_lines[] = {
			"left -1 -\nrank 0 ready 0 0 r\n",
			"left 4294967296 -\nrank 0 ready 0 0 r\n",
			"left 0 -\nrank -0 ready 0 0 r\n",
			"left 0 -\nrank 0 ready -1 0 r\n",
			"left 0 -\nrank 0 ready 18446744073709551615 0 r\n",
			"left 0 -\nrank 0 ready 0 -1 r\n",
			"left 0 -\nrank 0 ready 0 1099511627777 r\n",
		};
		char text[512];
		size_t k;

		for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			snprintf(text, sizeof(text), "mdfio-status 2\n%sleft 0 -\nrank 0 ready 0 0 r\n", bad[k]);
			CHECK(mdfio_status_parse(text, &back, msg, sizeof(msg)), "accepted: %s", text);
		}
		for (k = 0; k < sizeof(bad_lines) / sizeof(bad_lines[0]); k++) {
			snprintf(text, sizeof(text), "mdfio-status 2\nranks 1\ndatasets 1\nprecreate-per-set 4\n"
				 "object-size 1\nstart-index 0\n%s", bad_lines[k]);
			CHECK(mdfio_status_parse(text, &back, msg, sizeof(msg)), "accepted: %s", text);
		}
		snprintf(text, sizeof(text), "mdfio-status 2\nranks 1048576\ndatasets 4294967295\n"
			 "precreate-per-set 1099511627776\nobject-size 1073741824\nstart-index 1152921504606846976\n"
			 "left 0 -\n");
		CHECK(mdfio_status_parse(text, &back, msg, sizeof(msg)) && strstr(msg, "rank 0"),
		      "the largest values are taken (then rank 0's line is missing): %s", msg);
	}

	/* a namespace started at 5, with a benchmark at 40 with I = 7
	 * interrupted in every rank: objects 5 .. 40+100+7-1 (those below 40
	 * are left by deletes that failed); the same when the others finished
	 * theirs (at 47) */
	st.start = 5;
	st.rank[0].state = st.rank[2].state = MDFIO_RS_BENCHMARKING;
	st.rank[0].steps = st.rank[2].steps = 7;
	CHECK(!mdfio_status_window(&st, &lo, &hi) && lo == 5 && hi == 147, "window %llu %llu",
	      (unsigned long long)lo, (unsigned long long)hi);
	st.rank[0].state = st.rank[2].state = MDFIO_RS_READY;
	st.rank[0].pos = st.rank[2].pos = 47;
	st.rank[0].steps = st.rank[2].steps = 0;
	CHECK(!mdfio_status_window(&st, &lo, &hi) && lo == 5 && hi == 147, "window, others done");
	/* an interrupted precreate at the start index */
	st.rank[0].pos = st.rank[1].pos = st.rank[2].pos = 5;
	st.rank[1].state = MDFIO_RS_PRECREATING;
	st.rank[1].steps = 0;
	CHECK(!mdfio_status_window(&st, &lo, &hi) && lo == 5 && hi == 105, "precreate window");
	mdfio_status_free(&st);

	/* a file of version 1: steps unknown, a benchmarking rank's taken as P */
	CHECK(!mdfio_status_parse("mdfio-status 1\nranks 2\ndatasets 1\nprecreate-per-set 4\n"
				  "object-size 1\nstart-index 0\nleft 0 -\nrank 0 ready 3 r\n"
				  "rank 1 benchmarking 0 r\n", &back, msg, sizeof(msg)), "v1: %s", msg);
	CHECK(back.rank[0].steps == MDFIO_STEPS_UNKNOWN, "v1 steps unknown");
	CHECK(mdfio_status_window(&back, &lo, &hi) && lo == 0 && hi == 8, "v1 window %llu %llu",
	      (unsigned long long)lo, (unsigned long long)hi);
	back.rank[1].state = MDFIO_RS_READY;
	CHECK(!mdfio_status_window(&back, &lo, &hi) && lo == 0 && hi == 7, "v1 all ready");
	mdfio_status_free(&back);
}

static void test_enter(void)
{
	char msg[256];
	uint64_t pos = 0;
	int rec;
	struct mdfio_status st;

	/* precreate of a fresh namespace; a sibling's namespace; a stale one */
	CHECK(!mdfio_status_enter(NULL, MDFIO_PRECREATE, 0, "a", 0, &pos, &rec, msg, sizeof(msg)), "fresh");
	st = make(2, MDFIO_RS_PRECREATING, 5, "a");
	st.start = 5;
	CHECK(!mdfio_status_enter(&st, MDFIO_PRECREATE, 1, "a", 0, &pos, &rec, msg, sizeof(msg)) && pos == 5, "sibling");
	CHECK(mdfio_status_enter(&st, MDFIO_PRECREATE, 1, "b", 0, &pos, &rec, msg, sizeof(msg)) &&
	      strstr(msg, "already exists"), "stale: %s", msg);
	mdfio_status_free(&st);

	/* benchmark: no namespace; all ready; a sibling already finished */
	CHECK(mdfio_status_enter(NULL, MDFIO_BENCHMARK, 0, "a", 10, &pos, &rec, msg, sizeof(msg)) &&
	      strstr(msg, "precreate first"), "missing: %s", msg);
	st = make(3, MDFIO_RS_READY, 0, "p");
	CHECK(!mdfio_status_enter(&st, MDFIO_BENCHMARK, 2, "b1", 10, &pos, &rec, msg, sizeof(msg)) && pos == 0, "ready");
	st.rank[0].pos = 10;
	snprintf(st.rank[0].run, MDFIO_RUN_LEN, "b1");
	st.rank[1].state = MDFIO_RS_BENCHMARKING;
	snprintf(st.rank[1].run, MDFIO_RUN_LEN, "b1");
	CHECK(!mdfio_status_enter(&st, MDFIO_BENCHMARK, 2, "b1", 10, &pos, &rec, msg, sizeof(msg)) && pos == 0,
	      "sibling finished: %s", msg);
	/* the same record seen from the next job: rank 0 ahead of the rest */
	CHECK(mdfio_status_enter(&st, MDFIO_BENCHMARK, 2, "b2", 10, &pos, &rec, msg, sizeof(msg)) &&
	      strstr(msg, "interrupted"), "interrupted: %s", msg);
	st.rank[1].state = MDFIO_RS_READY;
	/* positions a stonewall_timer left apart: each rank goes on from its
	 * own while no step can read beyond what its writer made (P-I) */
	CHECK(!mdfio_status_enter(&st, MDFIO_BENCHMARK, 2, "b2", 10, &pos, &rec, msg, sizeof(msg)) && pos == 0,
	      "apart, rank 2: %s", msg);
	CHECK(!mdfio_status_enter(&st, MDFIO_BENCHMARK, 0, "b2", 90, &pos, &rec, msg, sizeof(msg)) && pos == 10,
	      "apart by P-I, rank 0: %s", msg);
	CHECK(mdfio_status_enter(&st, MDFIO_BENCHMARK, 2, "b2", 91, &pos, &rec, msg, sizeof(msg)) &&
	      strstr(msg, "differ by 10 (rank 1 at 0, rank 0 at 10") && strstr(msg, "use steps_per_set=90 at most"),
	      "apart by more than P-I: %s", msg);
	st.rank[0].pos = 100;
	CHECK(mdfio_status_enter(&st, MDFIO_BENCHMARK, 2, "b2", 1, &pos, &rec, msg, sizeof(msg)) &&
	      strstr(msg, "as much as precreate_per_set=100") && strstr(msg, "run phase=cleanup"),
	      "apart by P: %s", msg);
	/* cleanup trusts a consistent status, reads the directories of one
	 * whose positions differ, recovers from the rest */
	CHECK(!mdfio_status_enter(&st, MDFIO_CLEANUP, 2, "c", 10, &pos, &rec, msg, sizeof(msg)) && rec == 2,
	      "positions apart");
	st.rank[1].state = MDFIO_RS_BENCHMARKING;
	CHECK(!mdfio_status_enter(&st, MDFIO_CLEANUP, 2, "c", 10, &pos, &rec, msg, sizeof(msg)) && rec == 1,
	      "recover");
	st.rank[1].state = MDFIO_RS_READY;
	st.rank[0].pos = st.rank[1].pos = st.rank[2].pos = 10;
	CHECK(!mdfio_status_enter(&st, MDFIO_CLEANUP, 2, "c", 10, &pos, &rec, msg, sizeof(msg)) && !rec && pos == 10,
	      "clean at 10");
	mdfio_status_free(&st);
}

static void test_file(void)
{
	char dir[] = "/tmp/mdfio-status-XXXXXX", victim[300], msg[256];
	struct mdfio_status st = make(2, MDFIO_RS_READY, 7, "r"), back;
	struct stat sb;
	int fd, dfd, vfd;

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(mdfio_status_lock(dfd, 0, &fd, msg, sizeof(msg)) == ENOENT, "lock missing");
	{
		/* a file at this thread's temporary name (a copy left by a
		 * thread of this host that died, or anyone's) stays as it is */
		char host[65] = "", stale[256], kept[8] = "";

		gethostname(host, sizeof(host) - 1);
		snprintf(stale, sizeof(stale), "%s.%s.%ld.0.tmp", MDFIO_STATUS_NAME, host,
			 (long)syscall(SYS_gettid));
		vfd = openat(dfd, stale, O_WRONLY | O_CREAT | O_EXCL, 0644);
		CHECK(vfd >= 0 && write(vfd, "USER\n", 5) == 5, "stale copy");
		close(vfd);
		CHECK(!mdfio_status_create(dfd, &st), "create beside a stale copy");
		vfd = openat(dfd, stale, O_RDONLY);
		CHECK(vfd >= 0 && read(vfd, kept, sizeof(kept)) == 5 && !strcmp(kept, "USER\n"),
		      "the file at the temporary name is kept as it was");
		close(vfd);
		CHECK(!unlinkat(dfd, stale, 0), "unlink the stale copy");
		CHECK(!unlinkat(dfd, MDFIO_STATUS_NAME, 0), "unlink");
	}
	CHECK(!mdfio_status_create(dfd, &st), "create");
	CHECK(mdfio_status_create(dfd, &st) == EEXIST, "create twice");
	CHECK(!mdfio_status_lock(dfd, 0, &fd, msg, sizeof(msg)), "lock: %s", msg);
	CHECK(!mdfio_status_read(dfd, fd, &back, msg, sizeof(msg)) && back.rank[1].pos == 7, "read: %s", msg);
	back.rank[1].pos = 1234567;
	CHECK(!mdfio_status_write(dfd, fd, &back), "write");
	mdfio_status_free(&back);
	mdfio_status_unlock(fd);
	CHECK(!mdfio_status_lock(dfd, 0, &fd, msg, sizeof(msg)), "lock: %s", msg);
	CHECK(!mdfio_status_read(dfd, fd, &back, msg, sizeof(msg)) && back.rank[1].pos == 1234567, "reread");
	mdfio_status_unlock(fd);
	mdfio_status_free(&back);
	/* the file opened was replaced before it could be looked at: the
	 * lock looks again and finds the status the name now holds */
	stale_fstats = 2;
	CHECK(!mdfio_status_lock(dfd, 0, &fd, msg, sizeof(msg)), "lock after ESTALE: %s", msg);
	CHECK(!stale_fstats, "both stale looks taken");
	mdfio_status_unlock(fd);
	CHECK(!mdfio_status_lock(dfd, 1, &fd, msg, sizeof(msg)), "shared lock: %s", msg);
	CHECK(!mdfio_status_read(dfd, fd, &back, msg, sizeof(msg)) && back.rank[1].pos == 1234567, "shared read");
	CHECK(mdfio_status_write(dfd, fd, &back) != 0, "a shared lock writes");
	mdfio_status_unlock(fd);
	mdfio_status_free(&back);
	CHECK(!unlinkat(dfd, MDFIO_STATUS_NAME, 0), "unlink");

	/* never through a symlink, never anything but a regular file */
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	vfd = open(victim, O_WRONLY | O_CREAT | O_EXCL, 0644);
	CHECK(write(vfd, "keep", 4) == 4, "victim");
	close(vfd);
	CHECK(!symlinkat("victim", dfd, MDFIO_STATUS_NAME), "symlink");
	CHECK(mdfio_status_lock(dfd, 0, &fd, msg, sizeof(msg)) == ELOOP && strstr(msg, "symlink"),
	      "a symlinked status: %s", msg);
	CHECK(mdfio_status_create(dfd, &st) == EEXIST, "created over a symlink");
	CHECK(!stat(victim, &sb) && sb.st_size == 4, "the victim was written");
	unlinkat(dfd, MDFIO_STATUS_NAME, 0);
	unlink(victim);
	CHECK(!mkfifoat(dfd, MDFIO_STATUS_NAME, 0644), "fifo");
	CHECK(mdfio_status_lock(dfd, 0, &fd, msg, sizeof(msg)) && strstr(msg, "not a regular file"),
	      "a FIFO: %s", msg);
	unlinkat(dfd, MDFIO_STATUS_NAME, 0);
	mdfio_status_free(&st);
	close(dfd);
	CHECK(!rmdir(dir), "only the status file was left behind");
}

/* Version 3 only where the precreate created the root; 1 and 2 still read */
static void test_root_created(void)
{
	struct mdfio_status st = make(1, MDFIO_RS_READY, 0, "r"), back;
	char msg[256], *text;

	text = mdfio_status_format(&st);
	CHECK(!strncmp(text, "mdfio-status 4\n", 15) && !strstr(text, "root created"), "a root given: %s", text);
	CHECK(!mdfio_status_parse(text, &back, msg, sizeof(msg)) && !back.root_created, "parse: %s", msg);
	mdfio_status_free(&back);
	free(text);
	st.root_created = 1;
	text = mdfio_status_format(&st);
	CHECK(!strncmp(text, "mdfio-status 4\n", 15) && strstr(text, "\nroot created-by-mdfio\nleft "),
	      "a root created: %s", text);
	CHECK(!mdfio_status_parse(text, &back, msg, sizeof(msg)) && back.root_created, "parse 4: %s", msg);
	mdfio_status_free(&back);
	free(text);
	CHECK(!mdfio_status_parse("mdfio-status 3\nranks 1\ndatasets 1\nprecreate-per-set 4\n"
				  "object-size 1\nstart-index 0\nroot created-by-mdfio\nleft 0 -\nrank 0 ready 0 0 -\n",
				  &back, msg, sizeof(msg)) && back.root_created && back.version == 3,
	      "version 3 still read: %s", msg);
	mdfio_status_free(&back);
	CHECK(mdfio_status_parse("mdfio-status 3\nranks 1\ndatasets 1\nprecreate-per-set 4\n"
				 "object-size 1\nstart-index 0\nleft 0 -\nrank 0 ready 0 0 -\n",
				 &back, msg, sizeof(msg)) && strstr(msg, "root created-by-mdfio"),
	      "version 3 without its root line: %s", msg);
	mdfio_status_free(&st);
}

/* md-workbench's run-info file: exactly "pos: <n>", and never replacing
 * anything else */
static void test_run_info(void)
{
	char dir[] = "/tmp/mdfio-runinfo-XXXXXX", path[300], target[300], msg[256], buf[64];
	uint64_t pos = 1;
	int fd;
	ssize_t n;

	CHECK(!mdfio_run_info_parse("pos: 0\n", &pos) && pos == 0, "pos: 0");
	CHECK(!mdfio_run_info_parse("pos: 3000", &pos) && pos == 3000, "no newline");
	CHECK(mdfio_run_info_parse("pos: -1\n", &pos), "negative");
	CHECK(mdfio_run_info_parse("pos: 1\n\n", &pos), "two newlines");
	CHECK(mdfio_run_info_parse("pos:1\n", &pos), "no space");
	CHECK(mdfio_run_info_parse("mdfio-status 2\n", &pos), "a status file");
	CHECK(mdfio_run_info_parse("pos: 99999999999999999999\n", &pos), "overflow");
	CHECK(mdfio_run_info_format(buf, sizeof(buf), 42) == 8 && !strcmp(buf, "pos: 42\n"), "format");

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(path, sizeof(path), "%s/info", dir);
	CHECK(mdfio_run_info_read(path, &pos, msg, sizeof(msg)) == ENOENT, "missing");
	CHECK(!mdfio_run_info_write(path, 7, msg, sizeof(msg)), "write: %s", msg);
	CHECK(!mdfio_run_info_read(path, &pos, msg, sizeof(msg)) && pos == 7, "read: %s", msg);
	CHECK(!mdfio_run_info_write(path, 12, msg, sizeof(msg)), "rewrite: %s", msg);
	fd = open(path, O_RDONLY);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	CHECK(n == 8 && !memcmp(buf, "pos: 12\n", 8), "the bytes md-workbench writes");
	/* a foreign file and a symlink stay as they are */
	fd = open(path, O_WRONLY | O_TRUNC);
	CHECK(write(fd, "keep me\n", 8) == 8, "foreign");
	close(fd);
	CHECK(mdfio_run_info_write(path, 1, msg, sizeof(msg)) == EINVAL &&
	      strstr(msg, "not an md-workbench run-info file"), "foreign replaced: %s", msg);
	fd = open(path, O_RDONLY);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	CHECK(n == 8 && !memcmp(buf, "keep me\n", 8), "foreign file changed");
	unlink(path);
	snprintf(target, sizeof(target), "%s/target", dir);
	fd = open(target, O_WRONLY | O_CREAT | O_EXCL, 0644);
	CHECK(write(fd, "pos: 1\n", 7) == 7, "target");
	close(fd);
	CHECK(!symlink(target, path), "symlink");
	CHECK(mdfio_run_info_write(path, 2, msg, sizeof(msg)) == EINVAL, "written through a symlink");
	CHECK(readlink(path, buf, sizeof(buf)) > 0, "the symlink was replaced");
	unlink(path);
	unlink(target);
	CHECK(!rmdir(dir), "a temporary file was left behind");
}

/* Version 4's checksum: every change of one byte, and every cut, is
 * refused; so are the lines it adds where they do not belong */
static void test_checksum(void)
{
	struct mdfio_status st = make(3, MDFIO_RS_READY, 40, "r1"), back;
	char msg[256], *text, *copy;
	size_t n, i, cut;
	int v;

	st.root_ino = 5;
	st.file_ino = 77;
	st.no_objects = 1;
	CHECK(!mdfio_status_add_taken(&st, 1, 2, 140), "taken");
	CHECK(!mdfio_status_add_taken(&st, 0, 0, 141), "taken");
	text = mdfio_status_format(&st);
	CHECK(!mdfio_status_parse(text, &back, msg, sizeof(msg)), "parse: %s", msg);
	CHECK(back.version == 4 && back.root_ino == 5 && back.file_ino == 77 && back.no_objects &&
	      back.nr_taken == 2 && back.taken[0].index == 141 && back.taken[1].rank == 1 &&
	      back.taken[1].d == 2 && back.taken[1].index == 140, "round trip: %s", text);
	mdfio_status_free(&back);
	n = strlen(text);
	copy = malloc(n + 1);
	for (i = 0; i < n; i++) {
		for (v = 1; v < 256; v += 37) {
			memcpy(copy, text, n + 1);
			copy[i] = (char)((unsigned char)copy[i] ^ v);
			CHECK(mdfio_status_parse(copy, &back, msg, sizeof(msg)), "byte %zu ^ %d accepted", i, v);
		}
	}
	for (cut = 0; cut < n; cut++) {
		memcpy(copy, text, n + 1);
		copy[cut] = '\0';
		CHECK(mdfio_status_parse(copy, &back, msg, sizeof(msg)), "cut at %zu accepted", cut);
	}
	/* a widened position, the checksum left as it was */
	memcpy(copy, text, n + 1);
	*strstr(copy, "ready 40") = 'X';
	CHECK(mdfio_status_parse(copy, &back, msg, sizeof(msg)) && strstr(msg, "checksum"), "edited: %s", msg);
	free(copy);
	free(text);
	/* the taken names stay sorted and unique, and are bounded */
	CHECK(!mdfio_status_add_taken(&st, 0, 0, 141) && st.nr_taken == 2, "recorded twice");
	CHECK(mdfio_taken_find(st.taken, st.nr_taken, 1, 2, 140) &&
	      !mdfio_taken_find(st.taken, st.nr_taken, 1, 2, 141), "find");
	for (i = 0; st.nr_taken < MDFIO_TAKEN_MAX; i++)
		CHECK(!mdfio_status_add_taken(&st, 2, 1, i), "add %zu", i);
	CHECK(mdfio_status_add_taken(&st, 2, 2, 0) == E2BIG, "more than MDFIO_TAKEN_MAX");
	mdfio_status_free(&st);
}

/* A status belongs to its root and is its own file: a copy in another
 * directory, one hard-linked there, and a copy put in its place are each
 * refused */
static void test_identity(void)
{
	char a[] = "/tmp/mdfio-status-a-XXXXXX", b[] = "/tmp/mdfio-status-b-XXXXXX", msg[256], buf[4096];
	struct mdfio_status st = make(1, MDFIO_RS_READY, 7, "r"), back;
	int da, db, fd, cfd;
	ssize_t n;

	CHECK(mkdtemp(a) && mkdtemp(b), "mkdtemp");
	da = open(a, O_RDONLY | O_DIRECTORY);
	db = open(b, O_RDONLY | O_DIRECTORY);
	CHECK(!mdfio_status_create(da, &st), "create");
	fd = openat(da, MDFIO_STATUS_NAME, O_RDONLY);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	/* a copy in b, and the same bytes put in a's status's place */
	cfd = openat(db, MDFIO_STATUS_NAME, O_WRONLY | O_CREAT | O_EXCL, 0644);
	CHECK(n > 0 && write(cfd, buf, (size_t)n) == n, "copy");
	close(cfd);
	CHECK(!mdfio_status_lock(db, 0, &fd, msg, sizeof(msg)), "lock the copy: %s", msg);
	CHECK(mdfio_status_read(db, fd, &back, msg, sizeof(msg)) && strstr(msg, "another directory"),
	      "a copy in another directory: %s", msg);
	mdfio_status_unlock(fd);
	unlinkat(db, MDFIO_STATUS_NAME, 0);
	CHECK(!linkat(da, MDFIO_STATUS_NAME, db, MDFIO_STATUS_NAME, 0), "link");
	CHECK(!mdfio_status_lock(db, 1, &fd, msg, sizeof(msg)), "lock the link: %s", msg);
	CHECK(mdfio_status_read(db, fd, &back, msg, sizeof(msg)) && strstr(msg, "another directory"),
	      "a hard link in another directory: %s", msg);
	mdfio_status_unlock(fd);
	unlinkat(db, MDFIO_STATUS_NAME, 0);
	cfd = openat(da, "copy", O_WRONLY | O_CREAT | O_EXCL, 0644);
	CHECK(write(cfd, buf, (size_t)n) == n, "copy");
	close(cfd);
	CHECK(!renameat(da, "copy", da, MDFIO_STATUS_NAME), "rename");
	CHECK(!mdfio_status_lock(da, 0, &fd, msg, sizeof(msg)), "lock: %s", msg);
	CHECK(mdfio_status_read(da, fd, &back, msg, sizeof(msg)) && strstr(msg, "another file"),
	      "a copy in its place: %s", msg);
	mdfio_status_unlock(fd);
	/* an older mdfio's status names no root: read as this root's, and
	 * bound to it by the next update */
	fd = openat(da, MDFIO_STATUS_NAME, O_WRONLY | O_TRUNC);
	snprintf(buf, sizeof(buf), "mdfio-status 2\nranks 1\ndatasets 3\nprecreate-per-set 100\n"
		 "object-size 3901\nstart-index 0\nleft 0 -\nrank 0 ready 7 0 r\n");
	CHECK(write(fd, buf, strlen(buf)) == (ssize_t)strlen(buf), "old status");
	close(fd);
	CHECK(!mdfio_status_lock(da, 0, &fd, msg, sizeof(msg)), "lock: %s", msg);
	CHECK(!mdfio_status_read(da, fd, &back, msg, sizeof(msg)) && back.version == 2, "version 2: %s", msg);
	CHECK(!mdfio_status_write(da, fd, &back), "upgrade");
	mdfio_status_free(&back);
	mdfio_status_unlock(fd);
	CHECK(!mdfio_status_lock(da, 0, &fd, msg, sizeof(msg)), "lock: %s", msg);
	CHECK(!mdfio_status_read(da, fd, &back, msg, sizeof(msg)) && back.version == 4 && back.rank[0].pos == 7,
	      "upgraded: %s", msg);
	mdfio_status_free(&back);
	mdfio_status_unlock(fd);
	unlinkat(da, MDFIO_STATUS_NAME, 0);
	mdfio_status_free(&st);
	close(da);
	close(db);
	CHECK(!rmdir(a) && !rmdir(b), "files left behind");
}

/* An update that fails at any byte of its write (a file size limit, as a
 * full file system does) leaves the previous status whole, and no
 * temporary file */
static void test_update_fails_at_any_byte(void)
{
	char dir[] = "/tmp/mdfio-status-fsize-XXXXXX", msg[256], *before, *after;
	struct mdfio_status st = make(40, MDFIO_RS_READY, 7, "r"), back;
	struct rlimit old, lim;
	struct stat sb;
	size_t len, limit;
	int dfd, fd, err;
	ssize_t n;

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(!mdfio_status_create(dfd, &st), "create");
	before = mdfio_status_format(&st);
	len = strlen(before);
	for (n = 0; n < 40; n++)
		st.rank[n].state = MDFIO_RS_BENCHMARKING;	/* longer */
	after = mdfio_status_format(&st);
	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &old);
	for (limit = 0; limit < strlen(after); limit++) {
		char *now = malloc(len + 1);

		CHECK(!mdfio_status_lock(dfd, 0, &fd, msg, sizeof(msg)), "lock: %s", msg);
		lim = old;
		lim.rlim_cur = limit;
		setrlimit(RLIMIT_FSIZE, &lim);
		err = mdfio_status_write(dfd, fd, &st);
		setrlimit(RLIMIT_FSIZE, &old);
		mdfio_status_unlock(fd);
		CHECK(err == EFBIG, "a write cut at byte %zu: %s", limit, strerror(err));
		fd = openat(dfd, MDFIO_STATUS_NAME, O_RDONLY);
		n = pread(fd, now, len + 1, 0);
		close(fd);
		CHECK(n == (ssize_t)len && !memcmp(now, before, len), "the previous status changed at byte %zu", limit);
		free(now);
	}
	CHECK(!mdfio_status_lock(dfd, 0, &fd, msg, sizeof(msg)), "lock: %s", msg);
	CHECK(!mdfio_status_write(dfd, fd, &st), "without a limit");
	mdfio_status_unlock(fd);
	CHECK(!mdfio_status_lock(dfd, 0, &fd, msg, sizeof(msg)) &&
	      !mdfio_status_read(dfd, fd, &back, msg, sizeof(msg)) &&
	      back.rank[39].state == MDFIO_RS_BENCHMARKING, "written: %s", msg);
	mdfio_status_unlock(fd);
	mdfio_status_free(&back);
	CHECK(!unlinkat(dfd, MDFIO_STATUS_NAME, 0) && !fstat(dfd, &sb), "unlink");
	close(dfd);
	CHECK(!rmdir(dir), "a temporary file was left behind");
	free(before);
	free(after);
	mdfio_status_free(&st);
}

/* Writes name in dfd as an update's temporary file would begin: version,
 * root inode and the file's inode (self_delta added: a copy names another
 * file), then rest. 0 or -1. */
static int leftover(int dfd, const char *name, int version, uint64_t root_ino, long self_delta,
		    const char *rest)
{
	struct stat sb;
	char text[256];
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL, 0644), n;

	if (fd < 0 || fstat(fd, &sb))
		return -1;
	n = snprintf(text, sizeof(text), "mdfio-status %d\nidentity root-inode %" PRIu64 " file-inode %" PRIu64 "\n%s",
		     version, root_ino, (uint64_t)sb.st_ino + (uint64_t)self_delta, rest);
	n = write(fd, text, (size_t)n) == n ? 0 : -1;
	close(fd);
	return n;
}

static void test_leftovers(void)
{
	char dir[] = "/tmp/mdfio-status-XXXXXX", kept[256], path[300];
	struct mdfio_status st = make(2, MDFIO_RS_READY, 7, "r");
	struct stat root, sb;
	int dfd, fd;

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	fstat(dfd, &root);
	CHECK(!mdfio_status_create(dfd, &st), "create");
	/* mdfio's: cut after its identity (killed mid-write), or whole */
	CHECK(!leftover(dfd, "mdfio.status.h.1.0.tmp", 4, root.st_ino, 0, ""), "cut");
	CHECK(!leftover(dfd, "mdfio.status.h.2.0.tmp", 4, root.st_ino, 0, "ranks 2\ndatasets 3\n"), "whole");
	/* not provably: a copy (another file's inode), another root's, an
	 * older version, empty, hard-linked, a symlink, a FIFO, another name */
	CHECK(!leftover(dfd, "mdfio.status.h.3.0.tmp", 4, root.st_ino, 1, ""), "copy");
	CHECK(!leftover(dfd, "mdfio.status.h.4.0.tmp", 4, root.st_ino + 1, 0, ""), "other root");
	CHECK(!leftover(dfd, "mdfio.status.h.5.0.tmp", 3, root.st_ino, 0, ""), "version 3");
	fd = openat(dfd, "mdfio.status.h.6.0.tmp", O_WRONLY | O_CREAT | O_EXCL, 0644);
	close(fd);
	CHECK(!leftover(dfd, "mdfio.status.h.7.0.tmp", 4, root.st_ino, 0, ""), "linked");
	CHECK(!linkat(dfd, "mdfio.status.h.7.0.tmp", dfd, "user-link", 0), "link");
	CHECK(!leftover(dfd, "victim", 4, root.st_ino, 0, ""), "victim");
	CHECK(!symlinkat("victim", dfd, "mdfio.status.h.8.0.tmp"), "symlink");
	CHECK(!mkfifoat(dfd, "mdfio.status.h.9.0.tmp", 0644), "fifo");
	CHECK(!leftover(dfd, "mdfio.status.h.10.0.bak", 4, root.st_ino, 0, ""), "other name");
	CHECK(mdfio_status_remove_leftovers(dfd, kept, sizeof(kept)) == 7 &&
	      !strncmp(kept, "mdfio.status.h.", 15), "kept %s", kept);
	CHECK(fstatat(dfd, "mdfio.status.h.1.0.tmp", &sb, 0) && errno == ENOENT, "cut one removed");
	CHECK(fstatat(dfd, "mdfio.status.h.2.0.tmp", &sb, 0) && errno == ENOENT, "whole one removed");
	CHECK(!fstatat(dfd, MDFIO_STATUS_NAME, &sb, 0), "the status itself stays");
	for (int i = 3; i <= 9; i++) {
		snprintf(path, sizeof(path), "mdfio.status.h.%d.0.tmp", i);
		CHECK(!fstatat(dfd, path, &sb, AT_SYMLINK_NOFOLLOW), "%s stays", path);
		unlinkat(dfd, path, 0);
	}
	CHECK(!fstatat(dfd, "victim", &sb, 0) && sb.st_size > 0, "the victim stays");
	unlinkat(dfd, "victim", 0);
	unlinkat(dfd, "user-link", 0);
	unlinkat(dfd, "mdfio.status.h.10.0.bak", 0);
	unlinkat(dfd, MDFIO_STATUS_NAME, 0);
	CHECK(mdfio_status_remove_leftovers(dfd, kept, sizeof(kept)) == 0 && !kept[0], "none left");
	mdfio_status_free(&st);
	close(dfd);
	CHECK(!rmdir(dir), "rmdir");
}

/* test_status replace DIR SECONDS: replace the status in DIR (made if
 * missing) under its lock for SECONDS, as the ranks of a phase do; run from
 * clients of a shared file system at once (tests/engines/test_gluster.py),
 * every lock must find the status another client has just replaced. */
static int replace(const char *dir, double seconds)
{
	struct mdfio_status st = make(2, MDFIO_RS_READY, 7, "r"), back;
	struct timespec start, now;
	unsigned long n = 0;
	char msg[256];
	int dfd, fd, err;

	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (dfd < 0 || ((err = mdfio_status_create(dfd, &st)) && err != EEXIST)) {
		fprintf(stderr, "%s: cannot make the status: %s\n", dir, strerror(dfd < 0 ? errno : err));
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		if ((err = mdfio_status_lock(dfd, 0, &fd, msg, sizeof(msg)))) {
			fprintf(stderr, "lock %lu: %s (%s)\n", n, msg, strerror(err));
			return 1;
		}
		if (mdfio_status_read(dfd, fd, &back, msg, sizeof(msg))) {
			fprintf(stderr, "read %lu: %s\n", n, msg);
			return 1;
		}
		back.rank[1].pos++;
		if ((err = mdfio_status_write(dfd, fd, &back))) {
			fprintf(stderr, "write %lu: %s\n", n, strerror(err));
			return 1;
		}
		mdfio_status_free(&back);
		mdfio_status_unlock(fd);
		n++;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
	mdfio_status_free(&st);
	close(dfd);
	printf("%lu\n", n);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "replace"))
		return replace(argv[2], atof(argv[3]));
	test_checksum();
	test_identity();
	test_update_fails_at_any_byte();
	test_root_created();
	test_run_info();
	test_roundtrip();
	test_steps();
	test_enter();
	test_file();
	test_leftovers();
	return check_result();
}
