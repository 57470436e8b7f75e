/* The shared core of every mdfio engine: options, namespace, phases, FIFO
 * status and per-operation statistics. A backend (posix.c, ...) supplies only
 * the object operations of one I/O interface. */
#ifndef MDFIO_CORE_H
#define MDFIO_CORE_H

#include <stdint.h>
#include <time.h>

#include "fio.h"
#include "optgroup.h"

#include "status.h"

/* md-workbench's four operation types. Each lands in its own slot of fio's
 * JSON (see README "Where the numbers are"). */
enum mdfio_op { MDFIO_OP_CREATE, MDFIO_OP_STAT, MDFIO_OP_READ,
		MDFIO_OP_DELETE, MDFIO_OP_NR };

/* Object operations of one I/O interface. Each returns 0 or an errno value;
 * a short transfer is EIO. */
struct mdfio_backend {
	const char *name;
	int (*create)(const char *path, const void *buf, size_t size);
	int (*stat)(const char *path, uint64_t *size);
	int (*read)(const char *path, void *buf, size_t size);
	int (*unlink)(const char *path);
	int (*mkdir)(const char *path);
	int (*rmdir)(const char *path);
};

struct mdfio_options {
	void *pad;		/* fio keeps its thread_data pointer here */
	unsigned int phase;	/* 0: unset, else enum mdfio_phase + 1 */
	unsigned int datasets;
	unsigned int rank_offset;
	unsigned int read_only;
	unsigned int verify_read;
	unsigned long long precreate;
	unsigned long long steps;
	unsigned long long start_index;
	unsigned int repeat, repeats;
	char *latency_log;	/* md-workbench -L prefix; "" or unset: off */
};

extern struct fio_option mdfio_options[];

int mdfio_init(struct thread_data *td, const struct mdfio_backend *be);
int mdfio_setup(struct thread_data *td);
enum fio_q_status mdfio_queue(struct thread_data *td, struct io_u *io_u);
void mdfio_cleanup(struct thread_data *td);
int mdfio_open_file(struct thread_data *td, struct fio_file *f);
int mdfio_close_file(struct thread_data *td, struct fio_file *f);

/* Refuses (one line, ops left NULL) when the loading fio is not the release
 * this engine was compiled against. */
void mdfio_get_ioengine(struct ioengine_ops **ops, struct ioengine_ops *mine);

#endif
