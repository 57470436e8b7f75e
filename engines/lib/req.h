/* One md-workbench operation as an I/O interface performs it. The spans are
 * md-workbench's: create = open, write, close; read = open, read, close;
 * stat; delete = unlink. */
#ifndef MDFIO_REQ_H
#define MDFIO_REQ_H

#include <stddef.h>
#include <stdint.h>

/* md-workbench's four operation types. Each lands in its own slot of fio's
 * JSON (see README "Where the numbers are"). */
enum mdfio_op { MDFIO_OP_CREATE, MDFIO_OP_STAT, MDFIO_OP_READ,
		MDFIO_OP_DELETE, MDFIO_OP_NR };

struct mdfio_req {
	enum mdfio_op op;
	/* the object: a single name ("file-<i>") in its dataset's directory,
	 * which is open for the phase; every call on it is relative to dfd
	 * and follows no symlink, so it stays beneath the root. A store whose
	 * datasets are not directories names the object by the dataset's
	 * single name ("<rank>_<d>") and the object's; dfd is then the
	 * handle that store gave the dataset. */
	int dfd;
	const char *dataset;
	const char *name;
	void *buf;		/* read: where to; create: the object's bytes */
	size_t size;
	uint64_t st_size;	/* stat: the size found */
	uint64_t t0;		/* ns, set by the backend when it issues it */
	int err;		/* 0, an errno value or MDFIO_ERR_NOT_OBJECT;
				 * a short object is EIO */
	/* with err, what the backend can say beyond the errno value (an
	 * HTTP status and the server's code), else NULL; the backend's,
	 * until the unit's next request starts */
	const char *why;
};

/* err when the object's name holds something no mdfio create makes: not a
 * regular file, or one of other than one link. No errno value says that,
 * so these lie above them all: the base or'ed with the file's type bits
 * (S_IFMT >> 12; S_IFREG for the links). The step stops there, so nothing
 * but a regular file of one link is ever read or deleted by a step. */
#define MDFIO_ERR_NOT_OBJECT 0x100000
#define MDFIO_IS_NOT_OBJECT(err) (((err) & ~0xf) == MDFIO_ERR_NOT_OBJECT)

#endif
