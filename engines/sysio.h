/* The plain system calls md-workbench's POSIX backend makes: mdfio-posix
 * performs every request with them, the other engines the calls their
 * interface does not carry (datasets, recovery, libaio's metadata). */
#ifndef MDFIO_SYSIO_H
#define MDFIO_SYSIO_H

#include "req.h"

/* Performs req; returns its errno value (0: done). */
int mdfio_sys_perform(struct mdfio_req *req);
/* The rest of a read or create whose object fd is open: its transfer and
 * the close (fd is closed either way); 0 or an errno value. */
int mdfio_sys_transfer_close(int fd, struct mdfio_req *req);

/* Object calls: name is a single name in the open directory dfd, and no
 * call follows a symlink (an object replaced by one fails to open with
 * ELOOP; stat and unlink act on the link itself). Each open returns a
 * descriptor, or -1 with errno set; create never opens a name that exists
 * (O_EXCL). */
int mdfio_sys_open_read(int dfd, const char *name, int extra_flags);
int mdfio_sys_open_create(int dfd, const char *name, int extra_flags);
/* 0 or an errno value */
int mdfio_sys_close(int fd);
int mdfio_sys_stat(int dfd, const char *name, uint64_t *size);
int mdfio_sys_unlink(int dfd, const char *name);

#endif
