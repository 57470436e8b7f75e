/* The directory store (engines/lib/dirstore.c): what a probe says each
 * kind of name holds, that a dataset is made, opened and removed by its
 * single name without following a symlink, that a removal keeps a dataset
 * that holds names, and that a listing shows every name and takes as an
 * object only a regular file of one link. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dirstore.h"

static int root;

static void probe_is(const char *name, int want, const char *want_what)
{
	const char *what = "unset";
	int kind = mdfio_dirstore_probe(&root, name, &what);

	CHECK(kind == want, "%s: probe says %d, expected %d", name, kind, want);
	CHECK(want_what ? what && !strcmp(what, want_what) : !what,
	      "%s: probe's word is %s", name, what ? what : "(none)");
}

/* Lists dataset 0_0, open in handle, whose names are names[0..n): returns
 * how many it showed (dots never), with a bit per name shown in *seen and
 * per name taken for an object in *objects; a rewind lists again. */
static unsigned int list_all(int handle, const char *const *names, unsigned int n,
			     unsigned int *seen, unsigned int *objects)
{
	void *l = mdfio_dirstore_list(&root, "0_0", handle);
	const char *name;
	unsigned int count = 0, i;

	*seen = *objects = 0;
	CHECK(l != NULL, "no listing: %s", strerror(errno));
	if (!l)
		return 0;
	while ((name = mdfio_dirstore_next(l))) {
		count++;
		for (i = 0; i < n && strcmp(names[i], name); i++)
			;
		CHECK(i < n, "listed %s, which is not there", name);
		if (i == n)
			continue;
		*seen |= 1u << i;
		if (mdfio_dirstore_listed_object(l, name))
			*objects |= 1u << i;
	}
	mdfio_dirstore_rewind(l);
	CHECK(mdfio_dirstore_next(l) != NULL, "nothing listed after a rewind");
	mdfio_dirstore_list_close(l);
	return count;
}

int main(void)
{
	char dir[] = "/tmp/mdfio-test-dirstore-XXXXXX";
	static const char *const names[] = { "file-1", "file-2", "file-3", "file-4", "file-5" };
	unsigned int seen, objects;
	void *a, *b;
	int handle, other, fd, err;

	if (!mkdtemp(dir) || chdir(dir))
		return 1;
	root = open(".", O_RDONLY | O_DIRECTORY);

	probe_is("0_0", MDFIO_PROBE_ABSENT, NULL);
	CHECK(!mdfio_dirstore_make(&root, "0_0"), "make: %s", strerror(errno));
	probe_is("0_0", MDFIO_PROBE_DATASET, NULL);
	err = mdfio_dirstore_make(&root, "0_0");
	CHECK(err == EEXIST, "make over a dataset: %d", err);

	/* a symlink to a dataset is never followed, nor opened */
	CHECK(!symlink("0_0", "1_0"), "symlink: %s", strerror(errno));
	probe_is("1_0", MDFIO_PROBE_SYMLINK, NULL);
	handle = 0;
	err = mdfio_dirstore_open(&root, "1_0", &handle);
	CHECK((err == ENOTDIR || err == ELOOP) && handle < 0, "a symlink opened: %d", err);
	err = mdfio_dirstore_remove(&root, "1_0");
	CHECK(err == ENOTDIR, "rmdir of a symlink: %d", err);
	probe_is("1_0", MDFIO_PROBE_SYMLINK, NULL);
	/* a file where a dataset belongs */
	fd = open("2_0", O_WRONLY | O_CREAT | O_EXCL, 0664);
	CHECK(fd >= 0, "cannot make 2_0");
	close(fd);
	probe_is("2_0", MDFIO_PROBE_OTHER, "is not a directory");
	err = mdfio_dirstore_open(&root, "2_0", &handle);
	CHECK(err == ENOTDIR, "a file opened as a dataset: %d", err);
	err = mdfio_dirstore_open(&root, "3_0", &handle);
	CHECK(err == ENOENT, "a missing dataset opened: %d", err);

	err = mdfio_dirstore_open(&root, "0_0", &handle);
	CHECK(!err && handle >= 0, "open: %s", strerror(err));
	/* an object, a hard link's two names, a symlink, a directory */
	fd = openat(handle, "file-1", O_WRONLY | O_CREAT | O_EXCL, 0664);
	CHECK(fd >= 0, "cannot make file-1");
	close(fd);
	fd = openat(handle, "file-2", O_WRONLY | O_CREAT | O_EXCL, 0664);
	CHECK(fd >= 0, "cannot make file-2");
	close(fd);
	CHECK(!linkat(handle, "file-2", handle, "file-3", 0), "link: %s", strerror(errno));
	CHECK(!symlinkat("file-1", handle, "file-4"), "symlink: %s", strerror(errno));
	CHECK(!mkdirat(handle, "file-5", 0700), "mkdir: %s", strerror(errno));
	CHECK(list_all(handle, names, 5, &seen, &objects) == 5 && seen == 0x1f,
	      "listing shows %#x", seen);
	CHECK(objects == 0x1, "taken for objects: %#x, expected file-1 alone", objects);

	/* two listings read on their own */
	a = mdfio_dirstore_list(&root, "0_0", handle);
	b = mdfio_dirstore_list(&root, "0_0", handle);
	CHECK(a && b, "two listings");
	if (a && b) {
		unsigned int na = 0, nb = 0;

		while (mdfio_dirstore_next(a))
			na++;
		while (mdfio_dirstore_next(b))
			nb++;
		CHECK(na == 5 && nb == 5, "listings of their own: %u and %u names", na, nb);
	}
	if (a)
		mdfio_dirstore_list_close(a);
	if (b)
		mdfio_dirstore_list_close(b);

	/* a dataset that holds names stays */
	CHECK(!mdfio_dirstore_unlink(&root, handle, "0_0", "file-1"), "unlink: %s", strerror(errno));
	CHECK(faccessat(handle, "file-1", F_OK, AT_SYMLINK_NOFOLLOW) && errno == ENOENT,
	      "file-1 still there");
	err = mdfio_dirstore_remove(&root, "0_0");
	CHECK(err == ENOTEMPTY, "rmdir of a dataset that holds names: %d", err);
	probe_is("0_0", MDFIO_PROBE_DATASET, NULL);
	for (fd = 2; fd <= 4; fd++) {
		char name[16];

		snprintf(name, sizeof(name), "file-%d", fd);
		CHECK(!unlinkat(handle, name, 0), "unlink %s", name);
	}
	CHECK(!unlinkat(handle, "file-5", AT_REMOVEDIR), "rmdir file-5");
	other = handle;
	mdfio_dirstore_close(&root, handle);
	CHECK(fcntl(other, F_GETFD) < 0 && errno == EBADF, "close left the handle open");
	CHECK(!mdfio_dirstore_remove(&root, "0_0"), "remove: %s", strerror(errno));
	probe_is("0_0", MDFIO_PROBE_ABSENT, NULL);

	unlink("1_0");
	unlink("2_0");
	close(root);
	if (chdir("/") || rmdir(dir))
		fprintf(stderr, "cannot remove %s\n", dir);
	return check_result();
}
