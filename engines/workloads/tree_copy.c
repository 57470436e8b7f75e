/* phase=copy: the source tree walked in name order, one name per unit,
 * into <directory>/tree as cp -a copies it (files, directories, symlinks,
 * with their modes and times), each name listed in the manifest. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tree.h"

/* The entries below directory fd, counted (the copy's units). */
static int count_tree(int fd, const char *path, uint64_t *count)
{
	char **names;
	size_t n, i;
	int err = 0;

	if (list_dir(fd, &names, &n))
		return mdfio_error("tree_source: cannot list %s: %s", path, strerror(errno));
	for (i = 0; i < n && !err; i++) {
		struct stat st;
		int sub;
		char sub_path[PATH_MAX];

		(*count)++;
		if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
			continue;
		snprintf(sub_path, sizeof(sub_path), "%s/%s", path, names[i]);
		sub = openat(fd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			err = mdfio_error("tree_source: cannot open %s: %s", sub_path, strerror(errno));
			break;
		}
		err = count_tree(sub, sub_path, count);
		close(sub);
	}
	free_names(names, n);
	return err;
}

static int push_level(struct tree_job *j, int src, int dst, const struct stat *st, size_t path_len)
{
	struct level *l;

	if (j->depth == j->max_depth) {
		struct level *more = realloc(j->levels, (j->max_depth += 16) * sizeof(*more));

		if (!more)
			return ENOMEM;
		j->levels = more;
	}
	l = &j->levels[j->depth];
	memset(l, 0, sizeof(*l));
	l->src = src;
	l->dst = dst;
	l->st = *st;
	l->path_len = path_len;
	if (list_dir(src, &l->names, &l->n))
		return errno;
	j->depth++;
	return 0;
}

/* A directory's copy gets its mode and times once its entries are in it,
 * as cp -a gives them (a read-only directory could not take them before). */
void pop_level(struct tree_job *j)
{
	struct level *l = &j->levels[--j->depth];
	struct timespec ts[2] = { l->st.st_atim, l->st.st_mtim };

	if (fchmod(l->dst, l->st.st_mode & 07777) || futimens(l->dst, ts))
		op_error(j, "copy: cannot set the mode and times of", *j->path ? j->path : TREE_NAME, errno);
	close(l->src);
	close(l->dst);
	free_names(l->names, l->n);
}

static int copy_file(int src_dir, int dst_dir, const char *name, const struct stat *st,
		     unsigned char *buf, uint64_t *bytes, struct tree_id *made)
{
	int in, out, err = 0;
	struct timespec ts[2] = { st->st_atim, st->st_mtim };

	in = openat(src_dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in < 0)
		return errno;
	out = openat(dst_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		err = errno;
		close(in);
		return err;
	}
	*bytes = 0;
	for (;;) {
		ssize_t got = read(in, buf, TREE_COPY_BUF), put = 0;

		if (got < 0) {
			err = errno;
			break;
		}
		if (!got)
			break;
		while (put < got) {
			ssize_t w = write(out, buf + put, (size_t)(got - put));

			if (w < 0) {
				err = errno;
				break;
			}
			put += w;
		}
		if (err)
			break;
		*bytes += (uint64_t)got;
	}
	if (!err && (fchmod(out, st->st_mode & 07777) || futimens(out, ts) || id_of(out, "", made)))
		err = errno;
	close(in);
	if (close(out) && !err)
		err = errno;
	return err;
}

/* One unit of the copy: the next name of the walk (the first: the tree's
 * top directory). Returns the bytes copied, or -1 on an error. */
static int64_t copy_one(struct thread_data *td, struct tree_job *j)
{
	struct level *l;
	struct stat st;
	const char *name;
	uint64_t t0, t1, bytes = 0;
	struct tree_id made;
	int err = 0, sub_src, sub_dst;
	size_t len;

	if (!j->next) {
		int src = open(j->source, O_RDONLY | O_DIRECTORY | O_CLOEXEC), dst;
		struct tree_id made;

		if (src < 0 || fstat(src, &st))
			return op_error(j, "copy: cannot open tree_source", j->source, errno), -1;
		t0 = mdfio_now();
		err = mkdirat(j->root_fd, TREE_NAME, 0700) ? errno : 0;
		t1 = mdfio_now();
		if (err) {
			failed_sync(td);
			close(src);
			return op_error(j, "copy: mkdir", TREE_NAME, err), -1;
		}
		record(td, DDIR_SYNC, t0, t1);
		dst = openat(j->root_fd, TREE_NAME, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dst < 0 || id_of(dst, "", &made) ||
		    tree_manifest_add(j->manifest, 'd', made.ino, made.btime, ".")) {
			err = errno;
			close(src);
			if (dst >= 0)
				close(dst);
			return op_error(j, "copy: make", TREE_NAME, err), -1;
		}
		j->path[0] = 0;
		if ((err = push_level(j, src, dst, &st, 0)))
			return op_error(j, "copy: cannot list", j->source, err), -1;
		return 0;
	}
	/* the directories whose every name is handed out are done */
	while (j->depth && j->levels[j->depth - 1].i == j->levels[j->depth - 1].n) {
		pop_level(j);
		if (j->depth) {
			char *slash = strrchr(j->path, '/');

			if (slash)
				*slash = 0;
			else
				j->path[0] = 0;
		}
	}
	if (!j->depth)
		return op_error(j, "copy:", "the source", ENOENT), -1;	/* it changed since counted */
	l = &j->levels[j->depth - 1];
	name = l->names[l->i++];
	len = strlen(j->path);
	snprintf(j->path + len, sizeof(j->path) - len, "%s%s", len ? "/" : "", name);
	t0 = mdfio_now();
	if (fstatat(l->src, name, &st, AT_SYMLINK_NOFOLLOW)) {
		err = errno;
		j->path[len] = 0;
		failed_sync(td);
		return op_error(j, "copy: stat of the source's", name, err), -1;
	}
	if (S_ISREG(st.st_mode)) {
		err = copy_file(l->src, l->dst, name, &st, j->buf, &bytes, &made);
		t1 = mdfio_now();
		if (err) {
			td->ts.drop_io_u[DDIR_WRITE]++;
			op_error(j, "copy: create", j->path, err);
		} else {
			mdfio_add_clat(td, DDIR_WRITE, t1 - t0, bytes);
			if (tree_manifest_add(j->manifest, 'f', made.ino, made.btime, j->path))
				op_error(j, "copy: write", TREE_MANIFEST, errno), err = 1;
		}
		j->path[len] = 0;
		return err ? -1 : (int64_t)bytes;
	}
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(l->src, name, target, sizeof(target) - 1);
		struct timespec ts[2] = { st.st_atim, st.st_mtim };

		if (n < 0 || (target[n] = 0, symlinkat(target, l->dst, name)))
			err = errno;
		t1 = mdfio_now();
		if (!err) {
			record(td, DDIR_SYNC, t0, t1);
			utimensat(l->dst, name, ts, AT_SYMLINK_NOFOLLOW);
			if (id_of(l->dst, name, &made) ||
			    tree_manifest_add(j->manifest, 'l', made.ino, made.btime, j->path))
				op_error(j, "copy: write", TREE_MANIFEST, errno), err = 1;
		} else {
			failed_sync(td);
			op_error(j, "copy: symlink", j->path, err);
		}
		j->path[len] = 0;
		return err ? -1 : 0;
	}
	if (!S_ISDIR(st.st_mode)) {
		/* what the tree study's sources hold no example of */
		j->specials++;
		j->path[len] = 0;
		return 0;
	}
	err = mkdirat(l->dst, name, 0700) ? errno : 0;
	t1 = mdfio_now();
	if (err) {
		failed_sync(td);
		op_error(j, "copy: mkdir", j->path, err);
		j->path[len] = 0;
		return -1;
	}
	record(td, DDIR_SYNC, t0, t1);
	sub_src = openat(l->src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	sub_dst = openat(l->dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub_src < 0 || sub_dst < 0) {
		err = errno;
		if (sub_src >= 0)
			close(sub_src);
		if (sub_dst >= 0)
			close(sub_dst);
		op_error(j, "copy: open", j->path, err);
		j->path[len] = 0;
		return -1;
	}
	{
		if (id_of(sub_dst, "", &made) ||
		    tree_manifest_add(j->manifest, 'd', made.ino, made.btime, j->path)) {
			op_error(j, "copy: write", TREE_MANIFEST, errno);
			close(sub_src);
			close(sub_dst);
			j->path[len] = 0;
			return -1;
		}
	}
	if ((err = push_level(j, sub_src, sub_dst, &st, len))) {
		op_error(j, "copy: cannot list the source's", j->path, err);
		j->path[len] = 0;
		return -1;
	}
	/* j->path stays: the walk is in this directory now */
	return 0;
}

int start_copy(struct tree_job *j, const char *root, const struct tree_values *o)
{
	struct stat st;
	int src, fd;
	uint64_t count = 0;

	snprintf(j->source, sizeof(j->source), "%s", o->source && *o->source ? o->source : TREE_DEFAULT_SOURCE);
	src = open(j->source, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (src < 0)
		return mdfio_error("tree_source=%s: not a directory that can be read: %s", j->source, strerror(errno));
	if (count_tree(src, j->source, &count)) {
		close(src);
		return 1;
	}
	close(src);
	if (!fstatat(j->root_fd, TREE_NAME, &st, AT_SYMLINK_NOFOLLOW) ||
	    !fstatat(j->root_fd, TREE_MANIFEST, &st, AT_SYMLINK_NOFOLLOW))
		return mdfio_error("directory=%s: %s/%s or %s/%s already exists: refusing to copy over it (run phase=delete after a copy; nothing was touched)",
				   root, root, TREE_NAME, root, TREE_MANIFEST);
	fd = openat(j->root_fd, TREE_MANIFEST, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || !(j->manifest = fdopen(fd, "w")))
		return mdfio_error("directory=%s: cannot create %s: %s", root, TREE_MANIFEST, strerror(errno));
	if (tree_manifest_header(j->manifest))
		return mdfio_error("directory=%s: cannot write %s: %s", root, TREE_MANIFEST, strerror(errno));
	j->units = count + 1;
	return 0;
}

int64_t copy_unit(struct thread_data *td, struct tree_job *j, uint64_t k)
{
	(void)k;	/* the walk's own next name */
	return copy_one(td, j);
}
