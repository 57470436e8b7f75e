/* The status file of engines/status.c: its text form, and the decision each
 * rank takes on entering a phase. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "status.h"
#include "check.h"


static struct mdfio_status make(uint32_t ranks, enum mdfio_rank_state s,
				uint64_t pos, const char *run)
{
	struct mdfio_status st = { ranks, 3, 100, 3901, 0, 2, "j7", NULL };
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
	CHECK(mdfio_status_enter(&st, MDFIO_BENCHMARK, 2, "b2", 10, &pos, &rec, msg, sizeof(msg)) &&
	      strstr(msg, "disagree"), "disagree: %s", msg);
	/* cleanup trusts a consistent status, recovers from the rest */
	CHECK(!mdfio_status_enter(&st, MDFIO_CLEANUP, 2, "c", 10, &pos, &rec, msg, sizeof(msg)) && rec, "recover");
	st.rank[1].pos = st.rank[2].pos = 10;
	CHECK(!mdfio_status_enter(&st, MDFIO_CLEANUP, 2, "c", 10, &pos, &rec, msg, sizeof(msg)) && !rec && pos == 10,
	      "clean at 10");
	mdfio_status_free(&st);
}

static void test_file(void)
{
	char dir[] = "/tmp/mdfio-status-XXXXXX", path[256], msg[256];
	struct mdfio_status st = make(2, MDFIO_RS_READY, 7, "r"), back;
	int fd;

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(path, sizeof(path), "%s/%s", dir, MDFIO_STATUS_NAME);
	CHECK(mdfio_status_lock(path, &fd) == ENOENT, "lock missing");
	CHECK(!mdfio_status_create(path, &st), "create");
	CHECK(mdfio_status_create(path, &st) == EEXIST, "create twice");
	CHECK(!mdfio_status_lock(path, &fd), "lock");
	CHECK(!mdfio_status_read(fd, &back, msg, sizeof(msg)) && back.rank[1].pos == 7, "read: %s", msg);
	back.rank[1].pos = 1234567;
	CHECK(!mdfio_status_write(fd, &back), "write");
	mdfio_status_free(&back);
	CHECK(!mdfio_status_read(fd, &back, msg, sizeof(msg)) && back.rank[1].pos == 1234567, "reread");
	mdfio_status_unlock(fd);
	mdfio_status_free(&back);
	mdfio_status_free(&st);
	unlink(path);
	CHECK(!rmdir(dir), "only the status file was left behind");
}

int main(void)
{
	test_roundtrip();
	test_enter();
	test_file();
	return check_result();
}
