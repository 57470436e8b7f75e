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
 * without it; strace sees exactly what md-workbench's calls produce. */
static inline long sys_ret(long r)
{
	return r < 0 ? -1 : r;
}
#define sys_openat(p, f, m) sys_ret(syscall(SYS_openat, AT_FDCWD, (p), (f), (m)))
#define sys_read(fd, b, n) sys_ret(syscall(SYS_read, (fd), (b), (n)))
#define sys_write(fd, b, n) sys_ret(syscall(SYS_write, (fd), (b), (n)))
#define sys_close(fd) sys_ret(syscall(SYS_close, (fd)))
#define sys_stat(p, sb) sys_ret(syscall(SYS_newfstatat, AT_FDCWD, (p), (sb), 0))
#ifdef SYS_unlink
#define sys_unlink(p) sys_ret(syscall(SYS_unlink, (p)))
#else
#define sys_unlink(p) sys_ret(syscall(SYS_unlinkat, AT_FDCWD, (p), 0))
#endif

static int posix_create(const char *path, const void *buf, size_t size)
{
	/* O_EXCL: an object name that exists is never written over */
	int fd = (int)sys_openat(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0664);
	size_t done = 0;
	int err = 0;

	if (fd < 0)
		return errno;
	while (done < size) {
		ssize_t n = sys_write(fd, (const char *)buf + done, size - done);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			err = n < 0 ? errno : EIO;
			break;
		}
		done += (size_t)n;
	}
	if (sys_close(fd) && !err)
		err = errno;
	return err;
}

static int posix_stat(const char *path, uint64_t *size)
{
	struct stat sb;

	if (sys_stat(path, &sb))
		return errno;
	*size = (uint64_t)sb.st_size;
	return 0;
}

static int posix_read(const char *path, void *buf, size_t size)
{
	int fd = (int)sys_openat(path, O_RDONLY | O_CLOEXEC, 0);
	size_t done = 0;
	int err = 0;

	if (fd < 0)
		return errno;
	while (done < size) {
		ssize_t n = sys_read(fd, (char *)buf + done, size - done);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			err = n < 0 ? errno : EIO;	/* short object */
			break;
		}
		done += (size_t)n;
	}
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
