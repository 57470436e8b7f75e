/* The plain system calls md-workbench's POSIX backend makes: mdfio-posix
 * performs every request with them, the other engines the calls their
 * interface does not carry (datasets, recovery, libaio's metadata). */
#ifndef MDFIO_SYSIO_H
#define MDFIO_SYSIO_H

#include "req.h"

/* Performs req; returns its errno value (0: done). */
int mdfio_sys_perform(struct mdfio_req *req);

/* Each returns a descriptor, or -1 with errno set. create never opens a
 * name that exists (O_EXCL). */
int mdfio_sys_open_read(const char *path, int extra_flags);
int mdfio_sys_open_create(const char *path, int extra_flags);
/* 0 or an errno value */
int mdfio_sys_close(int fd);
int mdfio_sys_stat(const char *path, uint64_t *size);
int mdfio_sys_unlink(const char *path);

#endif
