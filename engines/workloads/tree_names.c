/* Names beneath the tree study's directory: opened one component at a
 * time following no symlink, told apart by what they hold (the manifest's
 * type, inode number and birth time), and listed in name order. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tree.h"

/* Opens beneath dir, following no symlink on the way (nor at the end). */
int open_beneath(int dir, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};

	return (int)syscall(SYS_openat2, dir, path, &how, sizeof(how));
}

/* What a name holds: its type bits, inode number and birth time (0 where
 * the file system tells none); name "" for dir itself. */

int id_of(int dir, const char *name, struct tree_id *id)
{
	struct statx sx;

	if (statx(dir, name, AT_SYMLINK_NOFOLLOW | (*name ? 0 : AT_EMPTY_PATH),
		  STATX_TYPE | STATX_INO | STATX_BTIME, &sx))
		return -1;
	id->mode = sx.stx_mode;
	id->ino = sx.stx_ino;
	id->btime = sx.stx_mask & STATX_BTIME ?
		    (uint64_t)sx.stx_btime.tv_sec * 1000000000u + sx.stx_btime.tv_nsec : 0;
	return 0;
}

int same_file(const struct tree_entry *e, const struct tree_id *id)
{
	unsigned int type = e->type == 'd' ? S_IFDIR : e->type == 'l' ? S_IFLNK : S_IFREG;

	return (id->mode & S_IFMT) == type && id->ino == e->ino &&
	       (!e->btime || !id->btime || e->btime == id->btime);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in directory fd (kept open), sorted; -1 with errno if it
 * cannot be read. */
int list_dir(int fd, char ***names, size_t *n)
{
	int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	DIR *d;
	struct dirent *e;
	size_t cap = 0;

	*names = NULL;
	*n = 0;
	if (dup_fd < 0)
		return -1;
	d = fdopendir(dup_fd);
	if (!d) {
		close(dup_fd);
		return -1;
	}
	rewinddir(d);
	while ((errno = 0, e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (*n == cap) {
			char **more = realloc(*names, (cap = cap ? 2 * cap : 64) * sizeof(char *));

			if (!more)
				break;
			*names = more;
		}
		if (!((*names)[*n] = strdup(e->d_name)))
			break;
		(*n)++;
	}
	if (errno) {
		int err = errno;

		closedir(d);
		while (*n)
			free((*names)[--*n]);
		free(*names);
		*names = NULL;
		errno = err;
		return -1;
	}
	closedir(d);
	if (*n)
		qsort(*names, *n, sizeof(char *), cmp_names);
	return 0;
}

void free_names(char **names, size_t n)
{
	while (n)
		free(names[--n]);
	free(names);
}

/* The directory the manifest's entry path is in, open (O_PATH) in
 * j->parent_fd, and the entry's own name. The top directory's parent is
 * directory= itself. */
int enter_parent(struct tree_job *j, const char *path, const char **name)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0;
	int fd;

	if (!strcmp(path, ".")) {
		*name = TREE_NAME;
		return j->root_fd;
	}
	*name = slash ? slash + 1 : path;
	if (j->parent_fd >= 0 && strlen(j->parent) == len && !strncmp(j->parent, path, len))
		return j->parent_fd;
	if (j->parent_fd >= 0)
		close(j->parent_fd);
	j->parent_fd = -1;
	memcpy(j->parent, path, len);
	j->parent[len] = 0;
	if (!len)
		fd = fcntl(j->tree_fd, F_DUPFD_CLOEXEC, 0);
	else
		fd = open_beneath(j->tree_fd, j->parent, O_PATH | O_DIRECTORY);
	if (fd < 0)
		return -1;
	j->parent_fd = fd;
	return fd;
}

int open_tree(struct tree_job *j, const char *root)
{
	struct tree_id id;

	if (tree_manifest_read(j->root_fd, TREE_MANIFEST, &j->man))
		return mdfio_error("directory=%s: %s", root, j->man.why);
	j->tree_fd = openat(j->root_fd, TREE_NAME, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (j->tree_fd < 0)
		return mdfio_error("directory=%s: cannot open %s: %s", root, TREE_NAME, strerror(errno));
	if (id_of(j->tree_fd, "", &id) || !same_file(&j->man.entry[0], &id))
		return mdfio_error("directory=%s: %s/%s is not the tree %s lists (it was replaced); refusing to touch it",
				   root, root, TREE_NAME, TREE_MANIFEST);
	return 0;
}
