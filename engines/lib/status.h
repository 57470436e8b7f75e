/* The namespace status file: md-workbench's run-info file ("pos: <s>"),
 * extended so that separate fio jobs and separate fio invocations agree on
 * the FIFO position, and so that a namespace left by a crashed run is
 * recognised instead of trusted. One line per rank; every reader and writer
 * holds a whole-file OFD lock on it (as the rank file's locks: the kind that
 * reaches every client of a shared file system), so concurrent clones see
 * each other's updates. An update replaces the file (a temporary file
 * renamed over it), so that a failed write leaves the previous status
 * whole; the lock is taken on the file the name holds once it is locked
 * (see mdfio_status_lock). Each file names the root it belongs to and
 * itself (their inode numbers) and ends with a checksum of the rest, so a
 * copy in another directory or an edited one is refused. */
#ifndef MDFIO_STATUS_H
#define MDFIO_STATUS_H

#include <stddef.h>
#include <stdint.h>

#define MDFIO_STATUS_NAME "mdfio.status"
#define MDFIO_RUN_LEN 64

enum mdfio_phase { MDFIO_PRECREATE, MDFIO_BENCHMARK, MDFIO_CLEANUP };

enum mdfio_rank_state {
	MDFIO_RS_PRECREATING,
	MDFIO_RS_READY,
	MDFIO_RS_BENCHMARKING,
	MDFIO_RS_CLEANING,
	MDFIO_RS_CLEANED,
};

/* The version mdfio writes; 1 to 3 are still read (see mdfio_status_read) */
#define MDFIO_STATUS_VERSION 4

/* A rank record's steps when the file predates them (mdfio-status 1) */
#define MDFIO_STEPS_UNKNOWN UINT64_MAX

struct mdfio_rank_rec {
	enum mdfio_rank_state state;
	uint64_t pos;			/* FIFO start index s of this rank */
	/* I of the benchmark it is in, was interrupted in, or is being
	 * recovered from (objects s+P .. s+P+I-1 may exist); else 0 */
	uint64_t steps;
	char run[MDFIO_RUN_LEN];	/* job that last changed the record */
};

/* An object whose create found its name taken (EEXIST): a file mdfio did
 * not make, which no phase may delete. */
struct mdfio_taken {
	uint32_t rank, d;
	uint64_t index;
};

/* The most taken names a status keeps: every update rewrites the file */
#define MDFIO_TAKEN_MAX 4096

struct mdfio_status {
	uint32_t ranks, datasets;
	uint64_t precreate, object_size, start;
	uint32_t left;			/* ranks of job left_run that are done */
	char left_run[MDFIO_RUN_LEN];
	struct mdfio_rank_rec *rank;	/* ranks entries, malloc'd */
	/* the precreate created the root (mdfio-status 3), so the cleanup
	 * that empties the namespace removes it */
	int root_created;
	/* the version the file was read in (MDFIO_STATUS_VERSION for one
	 * made here), and from version 4 on the inode numbers of the root it
	 * was written in and of the file itself */
	int version;
	uint64_t root_ino, file_ino;
	/* made by an engine that creates no object (mdfio-null): no phase
	 * may delete any file in its datasets */
	int no_objects;
	/* sorted by rank, d, index; malloc'd */
	struct mdfio_taken *taken;
	uint32_t nr_taken;
};

const char *mdfio_phase_name(enum mdfio_phase p);

/* Text form. format returns a malloc'd string (version 4, naming st's
 * root_ino and file_ino, its last line a checksum of the rest); parse
 * returns 0 or -1 with a reason in msg: a file of version 4 whose checksum
 * does not match is refused. */
char *mdfio_status_format(const struct mdfio_status *st);
int mdfio_status_parse(const char *text, struct mdfio_status *st,
		       char *msg, size_t msglen);
void mdfio_status_free(struct mdfio_status *st);

/* What a rank does on entering a phase, from the status as found (NULL: no
 * status file). For the benchmark, advance is its steps_per_set I: ranks
 * start at their own positions, which a stonewall_timer may have left
 * apart by up to P-I. Returns 0 and sets *pos (and *recover for cleanup,
 * to read the directories instead of following the FIFO: 1, the status
 * cannot be trusted; 2, the ranks' positions differ) or -1 with a one-line
 * reason in msg. */
int mdfio_status_enter(const struct mdfio_status *st, enum mdfio_phase phase,
		       uint32_t rank, const char *run, uint64_t advance,
		       uint64_t *pos, int *recover, char *msg, size_t msglen);

/* The indices [*lo, *hi) an object mdfio made can have in any dataset of a
 * namespace whose status cannot be trusted: from the namespace's start
 * index (a delete that failed leaves an object below the position) to the
 * furthest any benchmark in progress could have created (its position + P
 * + I). Returns 1 if a record predates the steps field: its I is then taken
 * as P, the most the rule I <= P allows. */
int mdfio_status_window(const struct mdfio_status *st, uint64_t *lo, uint64_t *hi);

/* Records that the object index of dataset (rank, d) is not mdfio's: 0
 * (also if it was recorded already), E2BIG if MDFIO_TAKEN_MAX are, ENOMEM. */
int mdfio_status_add_taken(struct mdfio_status *st, uint32_t rank, uint32_t d,
			   uint64_t index);
/* Whether list (n entries, sorted as a status keeps them) holds it. */
int mdfio_taken_find(const struct mdfio_taken *list, uint32_t n, uint32_t rank,
		     uint32_t d, uint64_t index);

/* File operations on the status in directory dirfd (the root), never
 * through a symlink. create writes a new status atomically (temporary file +
 * link, both in dirfd) and fails with EEXIST if one is there. lock opens and
 * locks an existing one: 0, ENOENT if there is none, else an errno value
 * with a one-line reason in msg (a symlink or anything but a regular file is
 * refused); shared: read-only, a shared lock. read reads the locked fd and
 * refuses (-1, a reason in msg) a file that fails its checksum or names
 * another root or another file than itself. write replaces the status
 * under an exclusive lock on fd: a temporary file in dirfd, fsync'ed, then
 * renamed over it; 0 or an errno value, the previous status whole. create
 * and write set st's root_ino and file_ino to what they wrote. */
int mdfio_status_create(int dirfd, struct mdfio_status *st);
int mdfio_status_lock(int dirfd, int shared, int *fd, char *msg, size_t msglen);
int mdfio_status_read(int dirfd, int fd, struct mdfio_status *st, char *msg,
		      size_t msglen);
int mdfio_status_write(int dirfd, int fd, struct mdfio_status *st);
void mdfio_status_unlock(int fd);

/* Whether a namespace is left in the root dirfd: a status file mdfio can
 * read. The rank file stays as long as there is one. */
int mdfio_namespace_left(int dirfd);

/* Removes the temporary files of updates that killed ranks left beside the
 * status in dirfd: only those that prove to be mdfio's, a regular file of
 * one link whose text begins as a status of this root naming the file's
 * own inode (a copy, a planted or an empty file does not). Called under
 * the status's exclusive lock, when a cleanup removes the status. Returns
 * how many such names stay, the first in kept. */
unsigned int mdfio_status_remove_leftovers(int dirfd, char *kept, size_t keptlen);

/* md-workbench's run-info file (--run-info-file): "pos: <n>\n", the FIFO
 * position its next benchmark or cleanup starts from. parse takes exactly
 * what md-workbench writes (the final newline may be missing); format
 * writes it. */
int mdfio_run_info_parse(const char *text, uint64_t *pos);
int mdfio_run_info_format(char *buf, size_t len, uint64_t pos);
/* The file at path (the user's own path, as md-workbench's): 0 and *pos,
 * ENOENT if there is none, else an errno value and a one-line reason in
 * msg (anything but a regular file holding "pos: <n>" is refused). */
int mdfio_run_info_read(const char *path, uint64_t *pos, char *msg, size_t msglen);
/* Replaces it atomically (a temporary file beside it, then rename), and
 * only if it is missing or a run-info file: 0, or an errno value and a
 * one-line reason in msg. */
int mdfio_run_info_write(const char *path, uint64_t pos, char *msg, size_t msglen);

#endif
