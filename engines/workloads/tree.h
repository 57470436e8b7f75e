/* mdfio-tree's parts (tree.c is the engine): the job every phase works
 * in, and what each file of the engine gives the others. */
#ifndef MDFIO_TREE_H
#define MDFIO_TREE_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "fio_compat.h"
#include "job.h"
#include "rankfile.h"
#include "tree_manifest.h"
#include "world.h"

#define TREE_NAME "tree"
#define TREE_MANIFEST "mdfio.tree"
#define TREE_COPY_BUF (128 * 1024)
/* the default tree: Perl's modules as Debian's perl-modules package
 * installs them (./setup installs perl) */
#define TREE_DEFAULT_SOURCE "/usr/share/perl"
/* the study's search: find -iname '*a*' once cold, then '*a*' .. '*j*' */
#define TREE_DEFAULT_INAME "*a*"
/* the study's value: 6 KiB (dd bs=1K count=6 of /dev/urandom) */
#define TREE_DEFAULT_REWRITE 6144
#define TREE_MAX_PATTERNS 64

enum tree_phase { TP_COPY, TP_FIND, TP_READ, TP_REWRITE, TP_DELETE, TP_NR };

/* The values of the options given as text, picked ("value|default";
 * NULL: not given). */
struct tree_values {
	const char *source, *iname, *rewrite_size, *drop_caches, *hosts, *join_timeout;
};

/* One directory of the copy's walk: its entries, sorted by name (the
 * study reads "in an alphabetic way"), and the one handed out next. */
struct level {
	int src, dst;		/* the source directory and its copy */
	struct stat st;		/* the source's, for the copy's mode and times */
	char **names;
	size_t n, i;
	size_t path_len;	/* the relative path up to this directory */
};

struct tree_job {
	enum tree_phase phase;
	enum fio_ddir ddir;
	/* the global rank and the run's ranks over every fio and host
	 * (hosts=, lib/world.c); numjobs of them in this fio */
	uint32_t rank, ranks, numjobs;
	struct mdfio_world world;
	char host[HOST_NAME_MAX + 1];
	struct mdfio_rankfile rf;	/* the barrier's; fd -1 until claimed */
	int claimed;
	int root_fd;		/* directory= */
	uint64_t units, next, finished;
	uint64_t t0;		/* the release of the barrier that starts the phase */
	unsigned long long bs;
	/* copy */
	char source[PATH_MAX];
	struct level *levels;
	size_t depth, max_depth;
	FILE *manifest;
	uint64_t specials;	/* FIFOs, sockets, devices: not copied */
	/* find */
	char *patterns[TREE_MAX_PATTERNS];
	unsigned int nr_patterns;
	uint64_t names_seen, names_matched;
	/* read, rewrite, delete: what the copy made */
	struct tree_manifest man;
	int tree_fd;
	char parent[PATH_MAX];	/* the directory parent_fd holds */
	int parent_fd;
	uint64_t left;		/* delete: names left (not ours, or not empty) */
	char first_left[PATH_MAX];
	/* rewrite */
	unsigned char *value;
	size_t value_len;
	unsigned char *buf;
	/* errors */
	uint64_t errors;
	char first_error[PATH_MAX + 256];
	char path[PATH_MAX];
};

/* What a name holds: its type bits, inode number and birth time (0 where
 * the file system tells none); name "" for dir itself. */
struct tree_id {
	unsigned int mode;
	uint64_t ino, btime;
};

struct tree_job;

/* A phase: its name, the slot its count is in, and its two steps over
 * small functions, one table for all (tree.c). */
struct tree_phase_info {
	const char *name;
	enum fio_ddir ddir;
	enum td_ddir rw;
	const char *rw_name;
	/* rank 0 alone works (numjobs=1), as the study's command does; the
	 * run's other ranks only meet it at the barriers */
	int one_rank;
	/* in the job's init: what its units are (j->units), from the
	 * options; 0, or 1 with the error said */
	int (*start)(struct tree_job *j, const char *root, const struct tree_values *o);
	/* unit k: the bytes it moved, or -1 (counted as the job's error) */
	int64_t (*unit)(struct thread_data *td, struct tree_job *j, uint64_t k);
};

extern const struct tree_phase_info phases[TP_NR];

/* tree_names.c */
int open_beneath(int dir, const char *path, int flags);
int id_of(int dir, const char *name, struct tree_id *id);
int same_file(const struct tree_entry *e, const struct tree_id *id);
int list_dir(int fd, char ***names, size_t *n);
void free_names(char **names, size_t n);
int enter_parent(struct tree_job *j, const char *path, const char **name);
int open_tree(struct tree_job *j, const char *root);

/* tree_account.c */
void one_line(char *s);
void op_error(struct tree_job *j, const char *what, const char *path, int err);
void record(struct thread_data *td, enum fio_ddir dd, uint64_t start, uint64_t end);
void failed_sync(struct thread_data *td);

/* tree_copy.c: phase=copy */
void pop_level(struct tree_job *j);
int start_copy(struct tree_job *j, const char *root, const struct tree_values *o);
int64_t copy_unit(struct thread_data *td, struct tree_job *j, uint64_t k);

/* tree_find.c: phase=find */
int start_find(struct tree_job *j, const char *root, const struct tree_values *o);
int64_t find_unit(struct thread_data *td, struct tree_job *j, uint64_t k);

/* tree_entries.c: phase=read, rewrite and delete */
int start_entries(struct tree_job *j, const char *root, const struct tree_values *o);
int start_rewrite(struct tree_job *j, const char *root, const struct tree_values *o);
int64_t read_unit(struct thread_data *td, struct tree_job *j, uint64_t k);
int64_t rewrite_unit(struct thread_data *td, struct tree_job *j, uint64_t k);
int64_t delete_unit(struct thread_data *td, struct tree_job *j, uint64_t k);

#endif
