#include "dirstore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sysio.h"

struct dir_listing {
	DIR *dir;
	const struct dirent *last;	/* the entry next returned last */
};

int mdfio_dirstore_probe(void *store, const char *name, const char **what)
{
	struct stat sb;

	*what = NULL;
	if (fstatat(*(const int *)store, name, &sb, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? MDFIO_PROBE_ABSENT : -errno;
	if (S_ISLNK(sb.st_mode))
		return MDFIO_PROBE_SYMLINK;
	if (S_ISDIR(sb.st_mode))
		return MDFIO_PROBE_DATASET;
	*what = "is not a directory";
	return MDFIO_PROBE_OTHER;
}

int mdfio_dirstore_make(void *store, const char *name)
{
	return mkdirat(*(const int *)store, name, 0775) ? errno : 0;
}

int mdfio_dirstore_open(void *store, const char *name, int *handle)
{
	*handle = openat(*(const int *)store, name,
			 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return *handle < 0 ? errno : 0;
}

void mdfio_dirstore_close(void *store, int handle)
{
	(void)store;
	close(handle);
}

int mdfio_dirstore_remove(void *store, const char *name)
{
	return unlinkat(*(const int *)store, name, AT_REMOVEDIR) ? errno : 0;
}

DIR *mdfio_dirstore_opendir(int handle)
{
	int fd = openat(handle, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir;

	if (fd < 0)
		return NULL;
	dir = fdopendir(fd);
	if (!dir)
		close(fd);
	return dir;
}

void *mdfio_dirstore_list(void *store, const char *name, int handle)
{
	struct dir_listing *l = calloc(1, sizeof(*l));

	(void)store;
	(void)name;
	if (l)
		l->dir = mdfio_dirstore_opendir(handle);
	if (l && !l->dir) {
		free(l);
		return NULL;
	}
	return l;
}

static int dot(const char *name)
{
	return name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
}

const char *mdfio_dirstore_next(void *listing)
{
	struct dir_listing *l = listing;
	const struct dirent *de;

	while ((de = readdir(l->dir)) && dot(de->d_name))
		;
	l->last = de;
	return de ? de->d_name : NULL;
}

int mdfio_dirstore_listed_object(void *listing, const char *name)
{
	const struct dir_listing *l = listing;
	struct stat sb;

	if (l->last && l->last->d_type != DT_UNKNOWN && l->last->d_type != DT_REG)
		return 0;
	return !fstatat(dirfd(l->dir), name, &sb, AT_SYMLINK_NOFOLLOW) &&
	       !mdfio_sys_not_object(sb.st_mode, sb.st_nlink);
}

void mdfio_dirstore_rewind(void *listing)
{
	rewinddir(((struct dir_listing *)listing)->dir);
}

void mdfio_dirstore_list_close(void *listing)
{
	struct dir_listing *l = listing;

	closedir(l->dir);
	free(l);
}

int mdfio_dirstore_unlink(void *store, int handle, const char *dataset, const char *name)
{
	(void)store;
	(void)dataset;
	return mdfio_sys_unlink(handle, name);
}
