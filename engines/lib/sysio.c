/* O_DIRECT */
#define _GNU_SOURCE
#include "sysio.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* fio forks its jobs from a multi-threaded process, and glibc's open, read,
 * write and close keep taking their thread-cancellation path in the child
 * (its cost per step: bench/run --only callgrind). syscall() makes the same
 * system calls without it (and, like them, returns -1 and sets errno);
 * strace sees md-workbench's calls in md-workbench's order, on names
 * relative to the dataset's descriptor instead of full paths. Only calls
 * whose number every Linux architecture has go through syscall(). */

int mdfio_sys_not_object(unsigned int mode, uint64_t nlink)
{
	if (S_ISREG(mode) && nlink == 1)
		return 0;
	return MDFIO_ERR_NOT_OBJECT | (int)((mode & S_IFMT) >> 12);
}

int mdfio_sys_opened_object(int fd, int extra_flags)
{
	struct stat sb;
	int err;

	if (fstat(fd, &sb))
		return errno;
	err = mdfio_sys_not_object(sb.st_mode, sb.st_nlink);
	if (err)
		return err;
	/* a read of an object blocks, as md-workbench's does: io_uring would
	 * fail a cold read of a file left O_NONBLOCK with EAGAIN, and a file
	 * system may refuse to wait for its locks */
	return fcntl(fd, F_SETFL, extra_flags & O_DIRECT) ? errno : 0;
}

/* O_NONBLOCK: a FIFO put where an object belongs would hold the open until
 * a writer came; the check that follows refuses it */
int mdfio_sys_open_read(int dfd, const char *name, int extra_flags)
{
	int fd = (int)syscall(SYS_openat, dfd, name,
			      O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | extra_flags, 0);
	int err;

	if (fd < 0)
		return -errno;
	err = mdfio_sys_opened_object(fd, extra_flags);
	if (!err)
		return fd;
	mdfio_sys_close(fd);
	return -err;
}

int mdfio_sys_open_create(int dfd, const char *name, int extra_flags)
{
	return (int)syscall(SYS_openat, dfd, name,
			    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | extra_flags,
			    0664);
}

int mdfio_sys_close(int fd)
{
	return syscall(SYS_close, fd) ? errno : 0;
}

int mdfio_sys_stat(int dfd, const char *name, uint64_t *size)
{
	struct stat sb;

	/* glibc's fstatat is no cancellation point: it makes the same
	 * newfstatat as syscall() did, in fewer instructions, and on 32-bit
	 * architectures, which have no newfstatat, their statx or fstatat64 */
	if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW))
		return errno;
	*size = (uint64_t)sb.st_size;
	return mdfio_sys_not_object(sb.st_mode, sb.st_nlink);
}

int mdfio_sys_unlink(int dfd, const char *name)
{
	return syscall(SYS_unlinkat, dfd, name, 0) ? errno : 0;
}

/* Transfers all size bytes with SYS_read or SYS_write: 0, an errno value,
 * or EIO for a short object. */
static int transfer(long nr, int fd, const void *buf, size_t size)
{
	size_t done = 0;

	while (done < size) {
		long n = syscall(nr, fd, (const char *)buf + done, size - done);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return n < 0 ? errno : EIO;
		}
		done += (size_t)n;
	}
	return 0;
}

int mdfio_sys_transfer_close(int fd, struct mdfio_req *req)
{
	int create = req->op == MDFIO_OP_CREATE;
	int err = transfer(create ? SYS_write : SYS_read, fd, req->buf, req->size);
	int cerr = mdfio_sys_close(fd);

	/* a failed close of a new object loses its data; of a read, nothing */
	return err ? err : create ? cerr : 0;
}

static int open_transfer_close(struct mdfio_req *req)
{
	int fd = req->op == MDFIO_OP_CREATE ? mdfio_sys_open_create(req->dfd, req->name, 0)
					    : mdfio_sys_open_read(req->dfd, req->name, 0);

	if (fd >= 0)
		return mdfio_sys_transfer_close(fd, req);
	return req->op == MDFIO_OP_CREATE ? errno : -fd;
}

int mdfio_sys_perform(struct mdfio_req *req)
{
	switch (req->op) {
	case MDFIO_OP_STAT:
		return mdfio_sys_stat(req->dfd, req->name, &req->st_size);
	case MDFIO_OP_DELETE:
		return mdfio_sys_unlink(req->dfd, req->name);
	default:
		return open_transfer_close(req);
	}
}
