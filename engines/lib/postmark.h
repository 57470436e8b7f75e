/* PostMark's workload (Katcher, NetApp; Debian's postmark 1.53) as a
 * sequence of file operations, without doing any of them: a pool of
 * files, transactions over it, then the deletion of what is left.
 *
 * The sequence is PostMark's own for the same parameters and seed: the
 * same generator (MT19937 with PostMark's 1998 seeding), drawn in the same
 * order for the same decisions, so the files made, read, appended and
 * deleted, their names and sizes, are those postmark makes. Whoever
 * performs the operations replays this; a later phase in another process
 * replays the earlier ones without I/O to reach the same state. */
#ifndef MDFIO_POSTMARK_H
#define MDFIO_POSTMARK_H

#include <stddef.h>
#include <stdint.h>

/* PostMark's `set` commands; the defaults are postmark's. */
struct mdfio_pm_params {
	uint32_t size_low, size_high;	/* set size: bytes, low <= high */
	uint32_t number;		/* set number: files in the pool */
	uint32_t transactions;		/* set transactions */
	uint32_t subdirectories;	/* set subdirectories: s0 .. s<n-1> if n > 1 */
	int bias_read, bias_create;	/* set bias: -1 (off) .. 10, in tenths */
	uint32_t read_block, write_block;	/* set read, set write: bytes */
	int buffered;			/* set buffering: 1 stdio, 0 system calls */
	uint32_t seed;			/* set seed */
};

#define MDFIO_PM_DEFAULTS { .size_low = 500, .size_high = 10000,	\
	.number = 500, .transactions = 500, .subdirectories = 0,	\
	.bias_read = 5, .bias_create = 5, .read_block = 512,		\
	.write_block = 512, .buffered = 1, .seed = 42 }

/* The largest number and size_high: postmark doubles both in an int. */
#define MDFIO_PM_MAX ((1u << 30) - 1)

enum mdfio_pm_phase { MDFIO_PM_POOL, MDFIO_PM_TRANSACTIONS, MDFIO_PM_DELETION,
		      MDFIO_PM_DONE };
enum mdfio_pm_kind { MDFIO_PM_CREATE, MDFIO_PM_READ, MDFIO_PM_APPEND,
		     MDFIO_PM_DELETE, MDFIO_PM_KIND_NR };

extern const char *const mdfio_pm_kind_names[MDFIO_PM_KIND_NR];

/* One operation of the sequence. */
struct mdfio_pm_op {
	enum mdfio_pm_phase phase;
	enum mdfio_pm_kind kind;
	uint32_t file;		/* its number: the name's last component */
	uint32_t subdir;	/* "s<subdir>/" when subdirectories > 1 */
	uint32_t bytes;		/* create, read: the file's size; append: the
				 * bytes added; delete: 0 */
	uint32_t transaction;	/* the transaction's index (transactions phase) */
	/* Its place in the whole sequence (1, 2, ...), and that of the last
	 * operation before it on the same file (0: none). Operations on
	 * different files commute; one that starts only once its after has
	 * ended keeps every file's own order, which is all postmark's
	 * sequence depends on, so that several may be in flight. */
	uint64_t seq, after;
};

struct mdfio_pm_slot {
	uint32_t size;		/* 0: free */
	uint32_t file, subdir;
	uint64_t last;		/* seq of the file's last operation */
};

struct mdfio_pm {
	struct mdfio_pm_params p;
	uint32_t mt[624];
	unsigned int mti;
	struct mdfio_pm_slot *table;	/* 2 * number slots, as postmark's */
	uint32_t allocated;	/* where the search for a free slot starts */
	enum mdfio_pm_phase phase;
	uint32_t i;		/* pool: files made; transactions: the current
				 * one; deletion: the next slot */
	int half;		/* transactions: 0 read/append next, 1 create/delete */
	int out_of_files;	/* the transactions stopped: no file was left */
	/* postmark's counters, its byte totals accumulated in float as its
	 * are (so that its report's Data lines come out the same) */
	uint64_t seq;		/* operations handed out */
	uint32_t created, read, appended, deleted;
	uint32_t deleted_alone;	/* by the deletion phase */
	float bytes_read, bytes_written;
};

/* A one-line reason the parameters are not postmark's, or NULL. */
const char *mdfio_pm_check(const struct mdfio_pm_params *p);

/* Starts the sequence. source: NULL, or 2 * size_high bytes that get
 * postmark's file content (every create and append writes a prefix of it);
 * postmark draws them first either way. 0 or ENOMEM. */
int mdfio_pm_init(struct mdfio_pm *pm, const struct mdfio_pm_params *p, char *source);
void mdfio_pm_free(struct mdfio_pm *pm);

/* The next operation into *op: 1, or 0 once the deletion is over. A phase
 * ends where op->phase changes (pm->phase is the phase of the next). */
int mdfio_pm_next(struct mdfio_pm *pm, struct mdfio_pm_op *op);

/* The operation's path below the location: "s2/17" or "17". */
int mdfio_pm_name(char *buf, size_t len, const struct mdfio_pm_params *p,
		  const struct mdfio_pm_op *op);

#endif
