/* mdfio-flat, built for the tests only (tests/meson.build; never
 * installed): a backend whose datasets are not directories, proving that
 * the core reaches datasets through the store table alone. Its store is a
 * flat key space, as an object store's bucket is: one directory, flat_dir=
 * (an existing directory other than directory=), where object file-<i> of
 * dataset <ds> is the key "<ds>@file-<i>", made, stat'ed, read and deleted
 * with the system calls of sysio.c relative to flat_dir's descriptor.
 *
 * A key prefix needs nothing made for it (IOR's S3 backends make nothing),
 * but a namespace must be told apart from none: making dataset <ds> writes
 * an empty marker key "<ds>" (a regular file of one link). The probe reads
 * the marker, a removal deletes it only while no key "<ds>@..." is left,
 * and a listing shows the keys of the prefix without it. directory= holds
 * only the run's coordination: the status file, the rank file, their lock. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "dirstore.h"
#include "sysio.h"

#define FLAT_SEP '@'
/* "<rank>_<d>@file-<i>" and its terminator */
#define FLAT_KEY_MAX (MDFIO_DATASET_NAME_MAX + MDFIO_OBJECT_NAME_MAX)

struct flat_options {
	struct mdfio_options core;
	char *flat_dir;
};

struct flat_store {
	int fd;			/* flat_dir, open: every key is relative to it */
	char *dir;		/* its path, for messages */
};

struct flat_listing {
	DIR *dir;
	char prefix[MDFIO_DATASET_NAME_MAX + 1];	/* "<ds>@" */
	size_t len;
	const struct dirent *last;
};

/* "<dataset>@<name>" into key (FLAT_KEY_MAX bytes) */
static void flat_key(char *key, const char *dataset, const char *name)
{
	size_t n = strlen(dataset);

	memcpy(key, dataset, n);
	key[n++] = FLAT_SEP;
	strcpy(key + n, name);
}

static int flat_open(struct thread_data *td, int root_fd, void **state, const char **where)
{
	const struct flat_options *o = td->eo;
	struct flat_store *s;
	struct stat fs, rs;
	int fd;

	if (!o->flat_dir || !o->flat_dir[0])
		return mdfio_error("flat_dir= is required: the existing directory mdfio-flat keeps its datasets in, other than directory=");
	fd = open(o->flat_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return mdfio_error("flat_dir=%s: cannot open it: %s", o->flat_dir, strerror(errno));
	/* the run's coordination lives in directory=: a listing of the
	 * store must never meet the status or rank file */
	if (fstat(fd, &fs) || fstat(root_fd, &rs) || (fs.st_dev == rs.st_dev && fs.st_ino == rs.st_ino)) {
		close(fd);
		return mdfio_error("flat_dir=%s: is directory= (or cannot be told apart from it); the datasets and the run's coordination live apart",
				   o->flat_dir);
	}
	s = calloc(1, sizeof(*s));
	if (s)
		s->dir = strdup(o->flat_dir);
	if (!s || !s->dir) {
		free(s);
		close(fd);
		return mdfio_error("out of memory");
	}
	s->fd = fd;
	*state = s;
	*where = s->dir;
	return 0;
}

static void flat_close(void *state)
{
	struct flat_store *s = state;

	close(s->fd);
	free(s->dir);
	free(s);
}

static int flat_probe(void *state, const char *name, const char **what)
{
	const struct flat_store *s = state;
	struct stat sb;

	*what = NULL;
	if (fstatat(s->fd, name, &sb, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? MDFIO_PROBE_ABSENT : -errno;
	if (S_ISLNK(sb.st_mode))
		return MDFIO_PROBE_SYMLINK;
	if (S_ISREG(sb.st_mode) && sb.st_nlink == 1 && !sb.st_size)
		return MDFIO_PROBE_DATASET;
	*what = "is not mdfio-flat's dataset marker (an empty regular file of one link)";
	return MDFIO_PROBE_OTHER;
}

static int flat_make(void *state, const char *name)
{
	const struct flat_store *s = state;
	int fd = mdfio_sys_open_create(s->fd, name, 0);

	if (fd < 0)
		return errno;
	return mdfio_sys_close(fd);
}

/* 0 if name is a dataset of the store, else the errno value a directory
 * store gives for what is there: ENOENT, ENOTDIR, or the probe's own. */
static int dataset_there(void *state, const char *name)
{
	const char *what;
	int kind = flat_probe(state, name, &what);

	if (kind < 0)
		return -kind;
	if (kind == MDFIO_PROBE_ABSENT)
		return ENOENT;
	return kind == MDFIO_PROBE_DATASET ? 0 : ENOTDIR;
}

/* A dataset's handle is the store's descriptor: its objects' keys are
 * relative to it. */
static int flat_open_dataset(void *state, const char *name, int *handle)
{
	const struct flat_store *s = state;
	int err = dataset_there(state, name);

	*handle = err ? -1 : s->fd;
	return err;
}

static void flat_close_dataset(void *state, int handle)
{
	(void)state;
	(void)handle;	/* the store's, closed with it */
}

static void *flat_list(void *state, const char *name, int handle)
{
	struct flat_listing *l = calloc(1, sizeof(*l));

	(void)state;
	if (l)
		l->dir = mdfio_dirstore_opendir(handle);
	if (l && !l->dir) {
		free(l);
		return NULL;
	}
	if (!l)
		return NULL;
	l->len = strlen(name);
	memcpy(l->prefix, name, l->len);
	l->prefix[l->len++] = FLAT_SEP;
	return l;
}

static const char *flat_next(void *listing)
{
	struct flat_listing *l = listing;
	const struct dirent *de;

	while ((de = readdir(l->dir)) && (strncmp(de->d_name, l->prefix, l->len) || !de->d_name[l->len]))
		;
	l->last = de;
	return de ? de->d_name + l->len : NULL;
}

static int flat_listed_object(void *listing, const char *name)
{
	const struct flat_listing *l = listing;
	struct stat sb;

	(void)name;
	if (!l->last || (l->last->d_type != DT_UNKNOWN && l->last->d_type != DT_REG))
		return 0;
	return !fstatat(dirfd(l->dir), l->last->d_name, &sb, AT_SYMLINK_NOFOLLOW) &&
	       !mdfio_sys_not_object(sb.st_mode, sb.st_nlink);
}

static void flat_rewind(void *listing)
{
	rewinddir(((struct flat_listing *)listing)->dir);
}

static void flat_list_close(void *listing)
{
	struct flat_listing *l = listing;

	closedir(l->dir);
	free(l);
}

/* The marker goes only with the last key of its prefix, as rmdir removes
 * only an empty directory. */
static int flat_remove(void *state, const char *name)
{
	const struct flat_store *s = state;
	struct flat_listing *l;
	int err = dataset_there(state, name), left;

	if (err)
		return err;
	l = flat_list(state, name, s->fd);
	if (!l)
		return errno ? errno : ENOMEM;
	left = flat_next(l) != NULL;
	flat_list_close(l);
	if (left)
		return ENOTEMPTY;
	return mdfio_sys_unlink(s->fd, name);
}

static int flat_unlink(void *state, int handle, const char *dataset, const char *name)
{
	char key[FLAT_KEY_MAX];

	(void)state;
	flat_key(key, dataset, name);
	return mdfio_sys_unlink(handle, key);
}

static const struct mdfio_store flat_store = {
	.open = flat_open,
	.close = flat_close,
	.probe = flat_probe,
	.make = flat_make,
	.open_dataset = flat_open_dataset,
	.close_dataset = flat_close_dataset,
	.remove = flat_remove,
	.list = flat_list,
	.next = flat_next,
	.listed_object = flat_listed_object,
	.rewind = flat_rewind,
	.list_close = flat_list_close,
	.unlink = flat_unlink,
};

/* The request on the object's key: the same system calls as mdfio-posix's. */
static int flat_start(void *priv, struct mdfio_unit *u)
{
	char key[FLAT_KEY_MAX];
	struct mdfio_req r = u->req;

	(void)priv;
	flat_key(key, r.dataset, r.name);
	r.name = key;
	u->req.t0 = mdfio_now();
	u->req.err = mdfio_sys_perform(&r);
	u->req.st_size = r.st_size;
	return 1;
}

static const struct fio_option flat_options[] = {
	MDFIO_STR_OPT("flat_dir", struct flat_options, flat_dir,
		      "The existing directory whose keys <rank>_<d>@file-<i> are the objects (not directory=, which holds the run's coordination)"),
	{ .name = NULL },
};

static const struct mdfio_backend flat_backend = {
	.name = "mdfio-flat",
	.start = flat_start,
	.sync = 1,
	.options = flat_options,
	.option_struct_size = sizeof(struct flat_options),
	.store = &flat_store,
};

MDFIO_EXPORT void get_ioengine(struct ioengine_ops **ops);
void get_ioengine(struct ioengine_ops **ops)
{
	mdfio_get_ioengine(ops, &flat_backend);
}
