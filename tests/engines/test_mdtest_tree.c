/* lib/mdtest_tree.c alone: mdtest's derived counts (its num_dirs_in_tree,
 * items per directory and test directories), its refusals, and a walk's
 * first and last paths. The whole namespace against the real mdtest's is
 * tests/engines/test_mdtest.py's. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "mdtest_tree.h"

struct seen {
	unsigned int n;
	char first[256], last[256], last_to[256];
	enum mdtest_op op;
};

static int see(void *arg, enum mdtest_op op, const char *path, const char *to)
{
	struct seen *s = arg;

	if (!s->n++)
		snprintf(s->first, sizeof(s->first), "%s", path);
	snprintf(s->last, sizeof(s->last), "%s", path);
	snprintf(s->last_to, sizeof(s->last_to), "%s", to ? to : "");
	s->op = op;
	return 0;
}

static int stop_at_third(void *arg, enum mdtest_op op, const char *path, const char *to)
{
	(void)op;
	(void)path;
	(void)to;
	return ++*(int *)arg == 3 ? 7 : 0;
}

int main(void)
{
	struct mdtest_params p = { .items = 10, .branch = 2, .depth = 2, .ranks = 2, .rank = 1 };
	struct mdtest_shape s;
	struct seen w;
	char msg[256];
	int calls = 0;

	/* -n 10 -b 2 -z 2: 7 directories of 1 item, as mdtest derives */
	CHECK(!mdtest_shape_of(&p, &s, msg, sizeof(msg)), "%s", msg);
	CHECK(s.dirs_in_tree == 7 && s.items_per_dir == 1 && s.items == 7 && s.loops == 1,
	      "dirs %llu per dir %llu items %llu loops %llu", (unsigned long long)s.dirs_in_tree,
	      (unsigned long long)s.items_per_dir, (unsigned long long)s.items, (unsigned long long)s.loops);
	memset(&w, 0, sizeof(w));
	mdtest_walk(&p, &s, MDTEST_FILE_CREATE, see, &w);
	CHECK(w.n == 7 && w.op == MDTEST_OP_CREATE, "%u creates", w.n);
	CHECK(!strcmp(w.first, "test-dir.0-0/mdtest_tree.0/file.mdtest.1.0"), "%s", w.first);
	CHECK(!strcmp(w.last, "test-dir.0-0/mdtest_tree.0/mdtest_tree.2/mdtest_tree.6/file.mdtest.1.6"), "%s", w.last);
	/* a stat finds item 6 through its parents' numbers */
	memset(&w, 0, sizeof(w));
	mdtest_walk(&p, &s, MDTEST_FILE_STAT, see, &w);
	CHECK(!strcmp(w.last, "test-dir.0-0/mdtest_tree.0/mdtest_tree.2/mdtest_tree.6/file.mdtest.1.6"), "%s", w.last);
	/* rank 1 makes no tree of a shared one; rank 0 removes its leaves first */
	memset(&w, 0, sizeof(w));
	mdtest_walk(&p, &s, MDTEST_TREE_CREATE, see, &w);
	CHECK(w.n == 0, "rank 1 made %u tree directories", w.n);
	p.rank = 0;
	memset(&w, 0, sizeof(w));
	mdtest_walk(&p, &s, MDTEST_TREE_REMOVE, see, &w);
	CHECK(w.n == 7 && !strcmp(w.first, "test-dir.0-0/mdtest_tree.0/mdtest_tree.1/mdtest_tree.3") &&
	      !strcmp(w.last, "test-dir.0-0/mdtest_tree.0"), "%u: %s ... %s", w.n, w.first, w.last);
	/* a walk stops where its visitor says */
	CHECK(mdtest_walk(&p, &s, MDTEST_FILE_CREATE, stop_at_third, &calls) == 7 && calls == 3, "%d calls", calls);
	/* -n 6 -I 3: two test directories */
	p = (struct mdtest_params){ .items = 6, .items_per_dir = 3, .branch = 1, .ranks = 1 };
	CHECK(!mdtest_shape_of(&p, &s, msg, sizeof(msg)) && s.loops == 2, "loops %llu", (unsigned long long)s.loops);
	/* mdtest's refusals, and a tree too wide for its items */
	p = (struct mdtest_params){ .items = 7, .items_per_dir = 2, .branch = 1, .ranks = 1 };
	CHECK(mdtest_shape_of(&p, &s, msg, sizeof(msg)) && strstr(msg, "not a multiple"), "%s", msg);
	p = (struct mdtest_params){ .items = 3, .branch = 2, .depth = 2, .ranks = 1 };
	CHECK(mdtest_shape_of(&p, &s, msg, sizeof(msg)) && strstr(msg, "fewer than the 7 directories"), "%s", msg);
	p = (struct mdtest_params){ .items = 1, .branch = 1000, .depth = 5, .ranks = 1 };
	CHECK(mdtest_shape_of(&p, &s, msg, sizeof(msg)) && strstr(msg, "more than"), "%s", msg);
	/* -n 9 -b 2 -z 2 -L: the 4 leaves hold 2 items each, numbered past
	 * the 3 upper directories' 6; a stat finds the first in leaf 3 */
	p = (struct mdtest_params){ .items = 9, .branch = 2, .depth = 2, .leaf_only = 1, .ranks = 1 };
	CHECK(!mdtest_shape_of(&p, &s, msg, sizeof(msg)) && s.leaves == 4 && s.items_per_dir == 2 && s.items == 8,
	      "leaves %llu per dir %llu items %llu", (unsigned long long)s.leaves,
	      (unsigned long long)s.items_per_dir, (unsigned long long)s.items);
	memset(&w, 0, sizeof(w));
	mdtest_walk(&p, &s, MDTEST_FILE_STAT, see, &w);
	CHECK(w.n == 8 && !strcmp(w.first, "test-dir.0-0/mdtest_tree.0/mdtest_tree.1/mdtest_tree.3/file.mdtest.0.6"),
	      "%u: %s", w.n, w.first);
	p = (struct mdtest_params){ .items = 3, .branch = 2, .depth = 2, .leaf_only = 1, .ranks = 1 };
	CHECK(mdtest_shape_of(&p, &s, msg, sizeof(msg)) && strstr(msg, "fewer than the 4 deepest directories"), "%s", msg);
	p = (struct mdtest_params){ .items = 4, .items_per_dir = 2, .branch = 1, .leaf_only = 1, .ranks = 1 };
	CHECK(mdtest_shape_of(&p, &s, msg, sizeof(msg)) && strstr(msg, "with leaf_only=1: give one of them"), "%s", msg);
	/* -S: every rank's files under one name; rank 0 alone removes them,
	 * and not with -u */
	p = (struct mdtest_params){ .items = 4, .branch = 1, .shared_file = 1, .ranks = 2, .rank = 1 };
	CHECK(!mdtest_shape_of(&p, &s, msg, sizeof(msg)), "%s", msg);
	memset(&w, 0, sizeof(w));
	mdtest_walk(&p, &s, MDTEST_FILE_STAT, see, &w);
	CHECK(w.n == 4 && !strcmp(w.last, "test-dir.0-0/mdtest_tree.0/file.mdtest.shared.3"), "%u: %s", w.n, w.last);
	memset(&w, 0, sizeof(w));
	mdtest_walk(&p, &s, MDTEST_FILE_REMOVE, see, &w);
	CHECK(w.n == 0, "rank 1 removed %u shared files", w.n);
	p.rank = 0;
	memset(&w, 0, sizeof(w));
	mdtest_walk(&p, &s, MDTEST_FILE_REMOVE, see, &w);
	CHECK(w.n == 4, "rank 0 removed %u shared files", w.n);
	p.unique_dir = 1;
	CHECK(mdtest_shape_of(&p, &s, msg, sizeof(msg)) && strstr(msg, "-u not compatible with -S"), "%s", msg);
	/* -c: rank 0 makes every rank's files empty, the ranks meet, then
	 * each opens its own; the others only open theirs */
	p = (struct mdtest_params){ .items = 2, .branch = 1, .collective = 1, .ranks = 2, .rank = 0 };
	CHECK(!mdtest_shape_of(&p, &s, msg, sizeof(msg)), "%s", msg);
	memset(&w, 0, sizeof(w));
	mdtest_walk(&p, &s, MDTEST_FILE_CREATE, see, &w);
	CHECK(w.n == 7 && w.op == MDTEST_OP_OPEN && !strcmp(w.last, "test-dir.0-0/mdtest_tree.0/file.mdtest.0.1"),
	      "%u: %s", w.n, w.last);
	p.rank = 1;
	memset(&w, 0, sizeof(w));
	mdtest_walk(&p, &s, MDTEST_FILE_REMOVE, see, &w);
	CHECK(w.n == 0, "rank 1 removed %u files of -c", w.n);
	p.unique_dir = 1;
	CHECK(mdtest_shape_of(&p, &s, msg, sizeof(msg)) && strstr(msg, "collective_creates=1 with unique_dir=1"), "%s", msg);
	/* -U: the first name aside, each next one to the name before it,
	 * the first back as the second to last; none for one item, nor for
	 * one item per test directory */
	p = (struct mdtest_params){ .items = 4, .branch = 1, .ranks = 1 };
	CHECK(!mdtest_shape_of(&p, &s, msg, sizeof(msg)), "%s", msg);
	memset(&w, 0, sizeof(w));
	mdtest_walk(&p, &s, MDTEST_DIR_RENAME, see, &w);
	CHECK(w.n == 4 && w.op == MDTEST_OP_RENAME && !strcmp(w.first, "test-dir.0-0/mdtest_tree.0/dir.mdtest.0.0") &&
	      !strcmp(w.last, "test-dir.0-0/mdtest_tree.0/dir.mdtest.0.0-XX") &&
	      !strcmp(w.last_to, "test-dir.0-0/mdtest_tree.0/dir.mdtest.0.2"), "%u: %s ... %s -> %s", w.n, w.first,
	      w.last, w.last_to);
	p.items = 1;
	CHECK(!mdtest_shape_of(&p, &s, msg, sizeof(msg)), "%s", msg);
	memset(&w, 0, sizeof(w));
	mdtest_walk(&p, &s, MDTEST_DIR_RENAME, see, &w);
	CHECK(w.n == 0, "%u renames of one item", w.n);
	p = (struct mdtest_params){ .items = 3, .items_per_dir = 1, .branch = 1, .ranks = 1 };
	CHECK(!mdtest_shape_of(&p, &s, msg, sizeof(msg)), "%s", msg);
	memset(&w, 0, sizeof(w));
	mdtest_walk(&p, &s, MDTEST_DIR_RENAME, see, &w);
	CHECK(w.n == 0, "%u renames of one item per test directory", w.n);
	CHECK(mdtest_phase_parse("dir_rename") == MDTEST_DIR_RENAME, "parse dir_rename");
	CHECK(mdtest_phase_parse("file_read") == MDTEST_FILE_READ && mdtest_phase_parse("read") < 0, "parse");
	return check_result();
}
