/* IOR's mdtest namespace (mdtest_tree.h). Each walk follows the mdtest
 * function it stands for: create_remove_directory_tree (the tree phases),
 * create_remove_items (creates and removes: depth first, a directory's
 * items before its subtrees), mdtest_stat / mdtest_read (items by
 * number, each found from its number) and rename_dir_test (the stat
 * names by number, each renamed to the one before it). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mdtest_tree.h"

/* The most directories one tree may have: mdtest numbers them in an int. */
#define MDTEST_DIRS_MAX (1u << 24)
#define MDTEST_PATH_MAX 4096

const char *const mdtest_phase_names[MDTEST_PHASE_NR] = {
	"tree_create", "dir_create", "dir_stat", "dir_rename", "dir_remove", "file_create",
	"file_stat", "file_read", "file_remove", "tree_remove",
};

const char *const mdtest_phase_titles[MDTEST_PHASE_NR] = {
	"Tree creation", "Directory creation", "Directory stat", "Directory rename", "Directory removal",
	"File creation", "File stat", "File read", "File removal", "Tree removal",
};

const enum mdtest_op mdtest_phase_op[MDTEST_PHASE_NR] = {
	MDTEST_OP_MKDIR, MDTEST_OP_MKDIR, MDTEST_OP_STAT, MDTEST_OP_RENAME, MDTEST_OP_RMDIR,
	MDTEST_OP_CREATE, MDTEST_OP_STAT, MDTEST_OP_READ, MDTEST_OP_UNLINK,
	MDTEST_OP_RMDIR,
};

int mdtest_phase_parse(const char *s)
{
	int ph;

	for (ph = 0; ph < MDTEST_PHASE_NR; ph++)
		if (!strcmp(s, mdtest_phase_names[ph]))
			return ph;
	return -1;
}

int mdtest_shape_of(const struct mdtest_params *p, struct mdtest_shape *s,
		    char *msg, size_t len)
{
	uint64_t dirs = 1, level = 1, holding, d;

	memset(s, 0, sizeof(*s));
	if (!p->items && !p->items_per_dir) {
		snprintf(msg, len, "items= (mdtest -n) or items_per_dir= (-I) is required");
		return 1;
	}
	if (p->items && p->items_per_dir && p->unique_dir) {
		snprintf(msg, len, "items=%" PRIu64 " and items_per_dir=%" PRIu64 " with unique_dir=1: give one of them (mdtest -u takes -n or -I)",
			 p->items, p->items_per_dir);
		return 1;
	}
	if (p->shared_file && p->unique_dir) {
		snprintf(msg, len, "shared_file=1 with unique_dir=1: give one of them (mdtest: -u not compatible with -S)");
		return 1;
	}
	if (p->collective && (p->unique_dir || p->shared_file || (p->items && p->items_per_dir))) {
		snprintf(msg, len, "collective_creates=1 with %s: not taken together (%s)",
			 p->shared_file ? "shared_file=1" : p->unique_dir ? "unique_dir=1" : "both items and items_per_dir",
			 p->shared_file ? "mdtest: -c not compatible with -S" :
			 p->unique_dir ? "after its collective pass mdtest names every rank's tree mdtest_tree.0" :
			 "mdfio-mdtest takes -c with one test directory");
		return 1;
	}
	if (p->items && p->items_per_dir && p->leaf_only) {
		snprintf(msg, len, "items=%" PRIu64 " and items_per_dir=%" PRIu64 " with leaf_only=1: give one of them (mdfio-mdtest does not take -n, -I and -L together)",
			 p->items, p->items_per_dir);
		return 1;
	}
	if (p->items && p->items_per_dir && p->items % p->items_per_dir) {
		snprintf(msg, len, "items=%" PRIu64 " is not a multiple of items_per_dir=%" PRIu64 " (as mdtest requires of -n and -I)",
			 p->items, p->items_per_dir);
		return 1;
	}
	if (p->depth && p->branch) {
		/* mdtest's num_dirs_in_tree: 1 + b + b^2 + ... + b^z */
		for (d = 0; d < p->depth; d++) {
			level *= p->branch;
			dirs += level;
			if (dirs > MDTEST_DIRS_MAX) {
				snprintf(msg, len, "branching_factor=%" PRIu32 " and depth=%" PRIu32 " make more than %u directories in a tree",
					 p->branch, p->depth, MDTEST_DIRS_MAX);
				return 1;
			}
		}
	}
	s->dirs_in_tree = dirs;
	s->leaves = level;
	s->loops = p->items && p->items_per_dir && !p->unique_dir ? p->items / p->items_per_dir : 1;
	/* the directories that hold items (mdtest_run): with -L the
	 * deepest ones alone */
	holding = p->leaf_only ? level : dirs;
	if (p->items_per_dir) {
		s->items_per_dir = p->items_per_dir;
		s->items = p->items ? p->items : p->items_per_dir * holding;
	} else {
		s->items_per_dir = p->items / holding;
		s->items = s->items_per_dir * holding;
		if (!s->items) {
			snprintf(msg, len, "items=%" PRIu64 " is fewer than the %" PRIu64 " %sdirectories of the tree: each would hold none",
				 p->items, holding, p->leaf_only ? "deepest " : "");
			return 1;
		}
	}
	return 0;
}

void mdtest_test_dir(char *out, size_t len, const struct mdtest_params *p, uint64_t k)
{
	snprintf(out, len, "test-dir.%" PRIu32 "-%" PRIu64, p->iteration, k);
}

struct walk {
	const struct mdtest_params *p;
	const struct mdtest_shape *s;
	enum mdtest_op op;
	int dirs;		/* items are directories (dir.) rather than files */
	char base[32];		/* mdtest's base_tree_name */
	char name[32];		/* the item names' middle: "mdtest.<rank>." */
	mdtest_visit fn;
	void *arg;
};

/* path + "/" + a + n, into out; 1 if it does not fit */
static int join(char *out, const char *path, const char *a, uint64_t n)
{
	int w = snprintf(out, MDTEST_PATH_MAX, "%s/%s%" PRIu64, path, a, n);

	return w < 0 || w >= MDTEST_PATH_MAX;
}

static int item(struct walk *w, const char *dir, uint64_t num)
{
	char path[MDTEST_PATH_MAX], prefix[48];

	snprintf(prefix, sizeof(prefix), "%s.%s", w->dirs ? "dir" : "file", w->name);
	if (join(path, dir, prefix, num))
		return -1;
	return w->fn(w->arg, w->op, path, NULL);
}

/* create_remove_items_helper: the items of one directory */
static int items_of(struct walk *w, const char *dir, uint64_t first)
{
	uint64_t i;
	int err;

	for (i = 0; i < w->s->items_per_dir; i++)
		if ((err = item(w, dir, first + i)))
			return err;
	return 0;
}

/* create_remove_items */
static int items_below(struct walk *w, uint32_t depth, const char *path, uint64_t dir)
{
	char child[MDTEST_PATH_MAX], base[48];
	uint32_t i;
	int err;

	if (depth == 0) {
		/* -L: the top directory holds items only as the tree's one leaf */
		if ((!w->p->leaf_only || w->p->depth == 0) && (err = items_of(w, path, 0)))
			return err;
		return w->p->depth > 0 ? items_below(w, 1, path, 1) : 0;
	}
	if (depth > w->p->depth)
		return 0;
	snprintf(base, sizeof(base), "%s.", w->base);
	for (i = 0; i < w->p->branch; i++, dir++) {
		if (join(child, path, base, dir))
			return -1;
		if ((!w->p->leaf_only || depth == w->p->depth) &&
		    (err = items_of(w, child, dir * w->s->items_per_dir)))
			return err;
		if ((err = items_below(w, depth + 1, child, dir * w->p->branch + 1)))
			return err;
	}
	return 0;
}

/* mdtest's rand_array of -R: 0 .. n-1 shuffled as mdtest_run shuffles it,
 * with its rank's seed (the seed plus the rank) and the C library's
 * rand(); random_r on a state of rand()'s size gives rand()'s numbers
 * without touching the process's own (fio's ranks may be threads).
 * NULL if out of memory. */
static uint64_t *random_order(uint64_t n, unsigned int seed)
{
	struct random_data data;
	char state[128];
	uint64_t *a = malloc((n ? n : 1) * sizeof(*a)), k, i;
	int32_t r;

	if (!a)
		return NULL;
	memset(&data, 0, sizeof(data));
	initstate_r(seed, state, sizeof(state), &data);
	for (i = 0; i < n; i++)
		a[i] = i;
	while (n > 1) {
		n--;
		random_r(&data, &r);
		k = (uint64_t)(((double)r / (double)RAND_MAX) * (double)n);
		i = a[k];
		a[k] = a[n];
		a[n] = i;
	}
	return a;
}

/* mdtest_stat, mdtest_read and rename_dir_test: the path of item num of
 * the phase's name, under the directory its number puts it in, as mdtest
 * finds it (its parents are prepended while their number exceeds the
 * branching factor); 1 if it does not fit */
static int item_path(struct walk *w, const char *path, uint64_t num, char *full)
{
	char rel[MDTEST_PATH_MAX], tmp[MDTEST_PATH_MAX];
	uint64_t parent = num / w->s->items_per_dir;
	int n;

	snprintf(rel, sizeof(rel), "%s.%s%" PRIu64, w->dirs ? "dir" : "file", w->name, num);
	if (parent > 0) {
		n = snprintf(tmp, sizeof(tmp), "%s.%" PRIu64 "/%s", w->base, parent, rel);
		if (n < 0 || n >= (int)sizeof(tmp))
			return 1;
		memcpy(rel, tmp, sizeof(rel));
		while (parent > w->p->branch) {
			parent = (parent - 1) / w->p->branch;
			n = snprintf(tmp, sizeof(tmp), "%s.%" PRIu64 "/%s", w->base, parent, rel);
			if (n < 0 || n >= (int)sizeof(tmp))
				return 1;
			memcpy(rel, tmp, sizeof(rel));
		}
	}
	n = snprintf(full, MDTEST_PATH_MAX, "%s/%s", path, rel);
	return n < 0 || n >= MDTEST_PATH_MAX;
}

/* -L: numbers start past the items the upper directories would hold
 * (the "leaf only mode" adjustment of mdtest_stat and rename_dir_test) */
static uint64_t first_number(const struct walk *w)
{
	return w->p->leaf_only ? w->s->items_per_dir * (w->s->dirs_in_tree - w->s->leaves) : 0;
}

/* The items of a stat or read phase, in order or in -R's */
static int items_by_number(struct walk *w, const char *path)
{
	char full[MDTEST_PATH_MAX];
	uint64_t stop = w->s->loops != 1 ? w->s->items_per_dir : w->s->items, i;
	uint64_t skip = first_number(w);
	uint64_t *order = NULL;
	int err = 0;

	if (w->p->random_seed &&
	    !(order = random_order(w->s->items, w->p->random_seed + w->p->rank)))
		return -1;
	for (i = 0; i < stop && !err; i++)
		err = item_path(w, path, (order ? order[i] : i) + skip, full) ? -1 :
		      w->fn(w->arg, w->op, full, NULL);
	free(order);
	return err;
}

/* rename_dir_test in one test directory: the first stat name moves aside
 * to "<it>-XX", each next one takes the name before it, and the first
 * comes back under the second to last's name; the last keeps its own */
static int items_renamed(struct walk *w, const char *path)
{
	char first[MDTEST_PATH_MAX], aside[MDTEST_PATH_MAX], prev[MDTEST_PATH_MAX], cur[MDTEST_PATH_MAX];
	uint64_t stop = mdtest_renames_per_loop(w->s), skip = first_number(w), i;
	int err, n;

	if (!stop)
		return 0;
	if (item_path(w, path, skip, first))
		return -1;
	n = snprintf(aside, sizeof(aside), "%s-XX", first);
	if (n < 0 || n >= (int)sizeof(aside))
		return -1;
	if ((err = w->fn(w->arg, w->op, first, aside)))
		return err;
	memcpy(prev, first, sizeof(prev));
	for (i = 1; i + 1 < stop; i++) {
		if (item_path(w, path, i + skip, cur))
			return -1;
		if ((err = w->fn(w->arg, w->op, cur, prev)))
			return err;
		memcpy(prev, cur, sizeof(prev));
	}
	return w->fn(w->arg, w->op, aside, prev);
}

/* create_remove_directory_tree below its root: pre-order for a create,
 * each directory removed after its subtree */
static int tree_below(struct walk *w, uint32_t depth, const char *path, uint64_t dir)
{
	char child[MDTEST_PATH_MAX], base[48];
	uint32_t i;
	int err;

	if (depth > w->p->depth)
		return 0;
	snprintf(base, sizeof(base), "%s.", w->base);
	for (i = 0; i < w->p->branch; i++, dir++) {
		if (join(child, path, base, dir))
			return -1;
		if (w->op == MDTEST_OP_MKDIR && (err = w->fn(w->arg, w->op, child, NULL)))
			return err;
		if ((err = tree_below(w, depth + 1, child, w->p->branch * dir + 1)))
			return err;
		if (w->op == MDTEST_OP_RMDIR && (err = w->fn(w->arg, w->op, child, NULL)))
			return err;
	}
	return 0;
}

static int tree(struct walk *w, const char *testdir)
{
	char root[MDTEST_PATH_MAX];
	int err;

	snprintf(root, sizeof(root), "%s/%s.0", testdir, w->base);
	if (w->op == MDTEST_OP_MKDIR && (err = w->fn(w->arg, w->op, root, NULL)))
		return err;
	if ((err = tree_below(w, 1, root, 1)))
		return err;
	return w->op == MDTEST_OP_RMDIR ? w->fn(w->arg, w->op, root, NULL) : 0;
}

/* collective_create_remove: rank 0 makes (or removes) every rank's items,
 * rank after rank, under each one's names; a file create then has every
 * rank meet (mdtest's MPI_Barrier) and open its own files to write them */
static int collective(struct walk *w, uint32_t k)
{
	const struct mdtest_params *p = w->p;
	char testdir[64], work[MDTEST_PATH_MAX];
	uint32_t i;
	int err, files = w->op == MDTEST_OP_CREATE;

	mdtest_test_dir(testdir, sizeof(testdir), p, 0);
	snprintf(work, sizeof(work), "%s/mdtest_tree.0", testdir);
	if (p->rank == 0) {
		if (files)
			w->op = MDTEST_OP_TOUCH;
		for (i = 0; i < p->ranks; i++) {
			snprintf(w->name, sizeof(w->name), "mdtest.%" PRIu64 ".",
				 ((uint64_t)i + (uint64_t)k * p->stride) % p->ranks);
			if ((err = items_below(w, 0, work, 0)))
				return err;
		}
	}
	if (!files)
		return 0;
	if ((err = w->fn(w->arg, MDTEST_OP_BARRIER, "", NULL)))
		return err;
	w->op = MDTEST_OP_OPEN;
	snprintf(w->name, sizeof(w->name), "mdtest.%" PRIu32 ".", p->rank);
	return items_below(w, 0, work, 0);
}

int mdtest_walk(const struct mdtest_params *p, const struct mdtest_shape *s,
		enum mdtest_phase ph, mdtest_visit fn, void *arg)
{
	struct walk w = { .p = p, .s = s, .op = mdtest_phase_op[ph], .fn = fn, .arg = arg };
	/* the rank whose names a phase uses (mdtest's mk_name, stat_name,
	 * read_name, rm_name: rank + k * stride; a rename the stat's), and
	 * whose tree it works in with -u (unique_chdir_dir for a create, then
	 * the stat, read and rm dirs: rank + (k + 1) * stride) */
	uint32_t k = ph == MDTEST_DIR_STAT || ph == MDTEST_DIR_RENAME || ph == MDTEST_FILE_STAT ? 1 :
		     ph == MDTEST_FILE_READ ? 2 :
		     ph == MDTEST_DIR_REMOVE || ph == MDTEST_FILE_REMOVE ? 3 : 0;
	uint64_t name_rank = ((uint64_t)p->rank + (uint64_t)k * p->stride) % p->ranks;
	uint64_t dir_rank = ((uint64_t)p->rank + (uint64_t)(k + 1) * p->stride) % p->ranks;
	char testdir[64], work[MDTEST_PATH_MAX];
	uint64_t loop;
	int err;

	/* mdtest's directory read phase reads nothing; its file read phase
	 * works in the read dir (k = 2 + 1) */
	w.dirs = ph == MDTEST_DIR_CREATE || ph == MDTEST_DIR_STAT || ph == MDTEST_DIR_RENAME ||
		 ph == MDTEST_DIR_REMOVE;
	if (p->unique_dir)
		snprintf(w.base, sizeof(w.base), "mdtest_tree.%" PRIu32, p->rank);
	else
		snprintf(w.base, sizeof(w.base), "mdtest_tree");
	/* -S: one name for all ranks, whatever the stride */
	if (p->shared_file)
		snprintf(w.name, sizeof(w.name), "mdtest.shared.");
	else
		snprintf(w.name, sizeof(w.name), "mdtest.%" PRIu64 ".", name_rank);
	if (ph == MDTEST_FILE_REMOVE && !mdtest_removes_files(p))
		return 0;
	if (p->collective && ph != MDTEST_TREE_CREATE && ph != MDTEST_TREE_REMOVE &&
	    ph != MDTEST_DIR_STAT && ph != MDTEST_DIR_RENAME && ph != MDTEST_FILE_STAT &&
	    ph != MDTEST_FILE_READ)
		return collective(&w, k);
	for (loop = 0; loop < s->loops; loop++) {
		mdtest_test_dir(testdir, sizeof(testdir), p, loop);
		if (ph == MDTEST_TREE_CREATE || ph == MDTEST_TREE_REMOVE) {
			if (mdtest_makes_tree(p) && (err = tree(&w, testdir)))
				return err;
			continue;
		}
		if (p->unique_dir)
			snprintf(work, sizeof(work), "%s/mdtest_tree.%" PRIu64 ".0", testdir, dir_rank);
		else
			snprintf(work, sizeof(work), "%s/mdtest_tree.0", testdir);
		if (ph == MDTEST_DIR_STAT || ph == MDTEST_FILE_STAT || ph == MDTEST_FILE_READ)
			err = items_by_number(&w, work);
		else if (ph == MDTEST_DIR_RENAME)
			err = items_renamed(&w, work);
		else
			err = items_below(&w, 0, work, 0);
		if (err)
			return err;
	}
	return 0;
}
