/* mdfio-posix: the md-workbench cycle with plain synchronous system calls,
 * the same calls md-workbench's POSIX backend makes. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core.h"

/* fio forks its jobs from a multi-threaded process, and glibc's open, read,
 * write and close keep taking their thread-cancellation path in the child
 * (some 190 instructions a step). syscall() makes the same system calls
 * without it (and, like them, returns -1 and sets errno); strace sees exactly
 * what md-workbench's calls produce. */
#define sys_openat(p, f, m) ((int)syscall(SYS_openat, AT_FDCWD, (p), (f), (m)))
#define sys_close(fd) syscall(SYS_close, (fd))
#ifdef SYS_unlink
#define sys_unlink(p) syscall(SYS_unlink, (p))
#else
#define sys_unlink(p) syscall(SYS_unlinkat, AT_FDCWD, (p), 0)
#endif

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

static int posix_create(const char *path, const void *buf, size_t size)
{
	/* O_EXCL: an object name that exists is never written over */
	int fd = sys_openat(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0664);
	int err;

	if (fd < 0)
		return errno;
	err = transfer(SYS_write, fd, buf, size);
	if (sys_close(fd) && !err)
		err = errno;
	return err;
}

static int posix_stat(const char *path, uint64_t *size)
{
	struct stat sb;

	if (syscall(SYS_newfstatat, AT_FDCWD, path, &sb, 0))
		return errno;
	*size = (uint64_t)sb.st_size;
	return 0;
}

static int posix_read(const char *path, void *buf, size_t size)
{
	int fd = sys_openat(path, O_RDONLY | O_CLOEXEC, 0);
	int err;

	if (fd < 0)
		return errno;
	err = transfer(SYS_read, fd, buf, size);
	sys_close(fd);
	return err;
}

static int posix_unlink(const char *path)
{
	return sys_unlink(path) ? errno : 0;
}

static int posix_mkdir(const char *path)
{
	return mkdir(path, 0775) ? errno : 0;
}

static int posix_rmdir(const char *path)
{
	return rmdir(path) ? errno : 0;
}

static const struct mdfio_backend posix_backend = {
	.name = "posix",
	.create = posix_create,
	.stat = posix_stat,
	.read = posix_read,
	.unlink = posix_unlink,
	.mkdir = posix_mkdir,
	.rmdir = posix_rmdir,
};

static int posix_init(struct thread_data *td)
{
	return mdfio_init(td, &posix_backend);
}

static struct ioengine_ops posix_ops = {
	.name = "mdfio-posix",
	.version = FIO_IOOPS_VERSION,
	.flags = FIO_SYNCIO | FIO_DISKLESSIO | FIO_NOSTATS | FIO_NOFILEHASH,
	.init = posix_init,
	.setup = mdfio_setup,
	.queue = mdfio_queue,
	.cleanup = mdfio_cleanup,
	.open_file = mdfio_open_file,
	.close_file = mdfio_close_file,
	.options = mdfio_options,
	.option_struct_size = sizeof(struct mdfio_options),
};

void get_ioengine(struct ioengine_ops **ops);
void get_ioengine(struct ioengine_ops **ops)
{
	mdfio_get_ioengine(ops, &posix_ops);
}
