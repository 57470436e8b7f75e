/* IOR's mdtest namespace: which directories and items a rank makes, stats,
 * reads and removes in each of mdtest's phases, in mdtest's order and under
 * mdtest's names (test-dir.<iteration>-<loop>/mdtest_tree.0/...,
 * file.mdtest.<rank>.<i>, dir.mdtest.<rank>.<i>). Pure: no fio, no I/O;
 * the mdtest engine (workloads/mdtest.c) performs what this lists. */
#ifndef MDFIO_MDTEST_TREE_H
#define MDFIO_MDTEST_TREE_H

#include <stddef.h>
#include <stdint.h>

/* mdtest's phases, in the order mdtest runs them in one iteration. The
 * directory read phase is left out: mdtest times it but does nothing in it
 * and never prints it. MDTEST_DIR_RENAME is mdtest's -U. */
enum mdtest_phase {
	MDTEST_TREE_CREATE, MDTEST_DIR_CREATE, MDTEST_DIR_STAT, MDTEST_DIR_RENAME, MDTEST_DIR_REMOVE,
	MDTEST_FILE_CREATE, MDTEST_FILE_STAT, MDTEST_FILE_READ, MDTEST_FILE_REMOVE,
	MDTEST_TREE_REMOVE, MDTEST_PHASE_NR
};

/* MDTEST_OP_TOUCH and MDTEST_OP_OPEN are -c's file create: rank 0 makes
 * every rank's file empty (a create and a close), then each rank opens its
 * own to write it. MDTEST_OP_BARRIER is no operation: the ranks meet there
 * in the middle of a phase (its path is ""). MDTEST_OP_RENAME alone has a
 * second path, the name it renames to. */
enum mdtest_op {
	MDTEST_OP_MKDIR, MDTEST_OP_RMDIR, MDTEST_OP_CREATE, MDTEST_OP_STAT,
	MDTEST_OP_READ, MDTEST_OP_UNLINK, MDTEST_OP_TOUCH, MDTEST_OP_OPEN,
	MDTEST_OP_RENAME, MDTEST_OP_BARRIER, MDTEST_OP_NR
};

/* The phase= spelling of each phase ("file_create"), and mdtest's name of it
 * in its report ("File creation"). */
extern const char *const mdtest_phase_names[MDTEST_PHASE_NR];
extern const char *const mdtest_phase_titles[MDTEST_PHASE_NR];
/* What one unit of each phase is. */
extern const enum mdtest_op mdtest_phase_op[MDTEST_PHASE_NR];
int mdtest_phase_parse(const char *s);	/* -1 if s names none */

/* mdtest's options, as given, and the rank. */
struct mdtest_params {
	uint64_t items;		/* -n (0: unset) */
	uint64_t items_per_dir;	/* -I (0: unset) */
	uint32_t branch;	/* -b */
	uint32_t depth;		/* -z */
	int unique_dir;		/* -u */
	int leaf_only;		/* -L: items in the deepest directories alone */
	int shared_file;	/* -S: every rank's files are file.mdtest.shared.<i> */
	int collective;		/* -c: rank 0 makes and removes every rank's items */
	uint32_t random_seed;	/* -R --random-seed: stats and reads in random order (0: in order) */
	uint32_t stride;	/* -N */
	uint32_t iteration;	/* which of -i's iterations: test-dir.<it>-... */
	uint32_t rank, ranks;
};

/* What mdtest derives from them (mdtest_run): the items of a rank per
 * phase (its o.items), per directory, the directories of a tree, and the
 * test directories (-n with -I makes n/I of them, test-dir.<it>-<k>). */
struct mdtest_shape {
	uint64_t items, items_per_dir, dirs_in_tree, loops;
	uint64_t leaves;	/* the tree's deepest directories, b^z */
};

/* 0, or 1 with one line in msg naming the option at fault, for a set of
 * options mdtest refuses or mdfio cannot hold. */
int mdtest_shape_of(const struct mdtest_params *p, struct mdtest_shape *s,
		    char *msg, size_t len);

/* Calls fn for each operation rank p->rank performs in phase ph, in
 * mdtest's order, with the path relative to the root (-d): every
 * component separated by one '/'; to is a rename's new path, else NULL. -1 if a path does not fit, or if the
 * order of -R cannot be held in memory. The tree's own directories of a tree
 * phase are its units; the test directories themselves are not (mdtest
 * makes and removes them outside the timed part). Stops and returns what
 * fn returns if that is not 0. */
typedef int (*mdtest_visit)(void *arg, enum mdtest_op op, const char *path, const char *to);
int mdtest_walk(const struct mdtest_params *p, const struct mdtest_shape *s,
		enum mdtest_phase ph, mdtest_visit fn, void *arg);

/* Whether rank p->rank makes (and removes) a tree: every rank with -u,
 * else rank 0 alone. */
static inline int mdtest_makes_tree(const struct mdtest_params *p)
{
	return p->unique_dir || p->rank == 0;
}

/* Whether rank p->rank removes the files: with -S rank 0 alone removes
 * the names every rank made (mdtest's remove_file). */
static inline int mdtest_removes_files(const struct mdtest_params *p)
{
	return !p->shared_file || p->rank == 0;
}

/* The renames rank p->rank makes per test directory in the rename phase:
 * mdtest's rename_dir_test goes through its stat names, none if there
 * are fewer than two, and mdtest skips the phase with one item */
static inline uint64_t mdtest_renames_per_loop(const struct mdtest_shape *s)
{
	uint64_t stop = s->loops != 1 ? s->items_per_dir : s->items;

	return s->items > 1 && stop > 1 ? stop : 0;
}

/* The test directory of loop k: "test-dir.<iteration>-<k>". */
void mdtest_test_dir(char *out, size_t len, const struct mdtest_params *p, uint64_t k);

#endif
