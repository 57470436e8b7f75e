/* Datasets as directories of one directory, the root: the store of every
 * engine whose objects are files (mdfio-posix, -uring, -aio, -null). A
 * dataset is a single name in the root, an object a single name in its
 * dataset; every call is relative to the root's descriptor or a dataset's
 * and follows no symlink, so nothing it touches lies outside the root,
 * whatever is renamed or replaced meanwhile.
 *
 * The functions fit the core's store table (struct mdfio_store in
 * core/backend.h): store points to the root's descriptor (an int). */
#ifndef MDFIO_DIRSTORE_H
#define MDFIO_DIRSTORE_H

#include <dirent.h>

#include "namespace.h"

/* What name holds in the root (enum mdfio_probe), or minus an errno value
 * when it cannot tell; *what names a thing that is not a directory. */
int mdfio_dirstore_probe(void *store, const char *name, const char **what);
/* mkdir: 0 or an errno value (EEXIST for a name that holds anything) */
int mdfio_dirstore_make(void *store, const char *name);
/* The directory name, open for a phase in *handle: 0 or an errno value
 * (a symlink or anything but a directory is never opened: ENOTDIR, ELOOP) */
int mdfio_dirstore_open(void *store, const char *name, int *handle);
void mdfio_dirstore_close(void *store, int handle);
/* rmdir: 0 or an errno value (ENOTEMPTY: it holds names) */
int mdfio_dirstore_remove(void *store, const char *name);
/* The directory open in handle as a DIR of its own (not a dup, which would
 * share its read position with every listing before it); NULL if it
 * cannot be read. For any store that lists a directory. */
DIR *mdfio_dirstore_opendir(int handle);
/* A listing of the dataset open in handle, with a read position of its
 * own; NULL if it cannot be read. */
void *mdfio_dirstore_list(void *store, const char *name, int handle);
/* The next name listed, without "." and ".."; NULL at the end. */
const char *mdfio_dirstore_next(void *listing);
/* Whether name, the one listed last, is a regular file of one link: what
 * every object mdfio makes is (a hard link's name is the user's). */
int mdfio_dirstore_listed_object(void *listing, const char *name);
void mdfio_dirstore_rewind(void *listing);
void mdfio_dirstore_list_close(void *listing);
/* unlink object name of the dataset open in handle: 0 or an errno value */
int mdfio_dirstore_unlink(void *store, int handle, const char *dataset, const char *name);

#endif
