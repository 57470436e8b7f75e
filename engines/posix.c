/* mdfio-posix: the md-workbench cycle with plain synchronous system calls,
 * the same calls md-workbench's POSIX backend makes. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"

static int posix_create(const char *path, const void *buf, size_t size)
{
	/* O_EXCL: an object name that exists is never written over */
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0664);
	size_t done = 0;
	int err = 0;

	if (fd < 0)
		return errno;
	while (done < size) {
		ssize_t n = write(fd, (const char *)buf + done, size - done);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			err = n < 0 ? errno : EIO;
			break;
		}
		done += (size_t)n;
	}
	if (close(fd) && !err)
		err = errno;
	return err;
}

static int posix_stat(const char *path, uint64_t *size)
{
	struct stat sb;

	if (stat(path, &sb))
		return errno;
	*size = (uint64_t)sb.st_size;
	return 0;
}

static int posix_read(const char *path, void *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t done = 0;
	int err = 0;

	if (fd < 0)
		return errno;
	while (done < size) {
		ssize_t n = read(fd, (char *)buf + done, size - done);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			err = n < 0 ? errno : EIO;	/* short object */
			break;
		}
		done += (size_t)n;
	}
	close(fd);
	return err;
}

static int posix_unlink(const char *path)
{
	return unlink(path) ? errno : 0;
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
