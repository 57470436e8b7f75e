/* What a read's open and a stat make of a name that holds no object: a
 * FIFO, a socket, a device, a directory, a symlink, a hard link. Neither
 * waits (a FIFO with no writer would hold a blocking open for ever), and
 * only a regular file of one link is opened, then blocking again. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"
#include "sysio.h"

static int dfd;

static void make_socket(const char *name)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM, 0);

	/* relative to the test's directory, its working directory */
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", name);
	CHECK(s >= 0 && !bind(s, (struct sockaddr *)&a, sizeof(a)), "socket %s: %s", name, strerror(errno));
	close(s);
}

/* name holds kind (S_IFMT bits): the stat and the read's open both refuse
 * it as that, without opening it for good. */
static void refused(const char *name, unsigned int kind)
{
	int want = MDFIO_ERR_NOT_OBJECT | (int)(kind >> 12);
	uint64_t size = 1234;
	int err = mdfio_sys_stat(dfd, name, &size), fd;

	CHECK(err == want, "%s: stat says %#x, expected %#x", name, err, want);
	fd = mdfio_sys_open_read(dfd, name, 0);
	if (kind == S_IFLNK || kind == S_IFSOCK) {
		/* never opened at all: O_NOFOLLOW, and no socket opens */
		CHECK(fd == -ELOOP || fd == -ENXIO, "%s: open gives %d", name, fd);
		return;
	}
	CHECK(fd == -want, "%s: open gives %d, expected %d", name, fd, -want);
	CHECK(MDFIO_IS_NOT_OBJECT(-fd), "%s: not taken for an object", name);
}

int main(void)
{
	char dir[] = "/tmp/mdfio-test-sysio-XXXXXX";
	uint64_t size = 0;
	int fd, flags;

	if (!mkdtemp(dir) || chdir(dir))
		return 1;
	dfd = open(".", O_RDONLY | O_DIRECTORY);

	/* an object: opened, and blocking for its read */
	fd = open("file-0", O_WRONLY | O_CREAT | O_EXCL, 0664);
	CHECK(fd >= 0 && write(fd, "abc", 3) == 3, "cannot make file-0");
	close(fd);
	CHECK(!mdfio_sys_stat(dfd, "file-0", &size) && size == 3, "stat of an object: size %llu",
	      (unsigned long long)size);
	fd = mdfio_sys_open_read(dfd, "file-0", 0);
	CHECK(fd >= 0, "open of an object: %d", fd);
	flags = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
	CHECK(flags >= 0 && !(flags & O_NONBLOCK), "the object's descriptor is left O_NONBLOCK: %#x", flags);
	if (fd >= 0)
		close(fd);

	CHECK(!mkfifo("file-1", 0600), "mkfifo: %s", strerror(errno));
	refused("file-1", S_IFIFO);
	make_socket("file-2");
	refused("file-2", S_IFSOCK);
	CHECK(!mkdir("file-3", 0700), "mkdir: %s", strerror(errno));
	refused("file-3", S_IFDIR);
	CHECK(!symlink("file-0", "file-4"), "symlink: %s", strerror(errno));
	refused("file-4", S_IFLNK);
	/* a hard link: both names refused, the object's too */
	CHECK(!link("file-0", "file-5"), "link: %s", strerror(errno));
	refused("file-5", S_IFREG);
	refused("file-0", S_IFREG);
	/* /dev/zero's numbers: read as an object, it would give bs zeros */
	if (!mknod("file-6", S_IFCHR | 0600, makedev(1, 5)))
		refused("file-6", S_IFCHR);
	else
		fprintf(stderr, "SKIP a character device: mknod: %s\n", strerror(errno));
	if (!mknod("file-7", S_IFBLK | 0600, makedev(7, 0)))
		refused("file-7", S_IFBLK);
	else
		fprintf(stderr, "SKIP a block device: mknod: %s\n", strerror(errno));

	for (fd = 0; fd <= 7; fd++) {
		char name[16];

		snprintf(name, sizeof(name), "file-%d", fd);
		if (unlink(name))
			rmdir(name);
	}
	close(dfd);
	if (chdir("/") || rmdir(dir))
		fprintf(stderr, "cannot remove %s\n", dir);
	return check_result();
}
