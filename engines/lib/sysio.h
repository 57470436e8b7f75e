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
 * call follows a symlink (stat and unlink act on the link itself).
 * create returns a descriptor, or -1 with errno set; it never opens a name
 * that exists (O_EXCL). read returns a descriptor, or minus an errno value
 * or MDFIO_ERR_NOT_OBJECT: its open never waits for a FIFO's writer, and
 * only a regular file of one link stays open (a symlink fails with ELOOP). */
int mdfio_sys_open_read(int dfd, const char *name, int extra_flags);
int mdfio_sys_open_create(int dfd, const char *name, int extra_flags);
/* 0 or an errno value */
int mdfio_sys_close(int fd);
/* also MDFIO_ERR_NOT_OBJECT, with *size set, for anything but a regular
 * file of one link */
int mdfio_sys_stat(int dfd, const char *name, uint64_t *size);
/* 0, or the MDFIO_ERR_NOT_OBJECT of a file of that type and link count */
int mdfio_sys_not_object(unsigned int mode, uint64_t nlink);
/* For a read's descriptor opened O_NONBLOCK (by a ring): 0 when it is a
 * regular file of one link, made blocking again with extra_flags (the
 * open's O_DIRECT) kept; else an errno value or MDFIO_ERR_NOT_OBJECT. */
int mdfio_sys_opened_object(int fd, int extra_flags);
int mdfio_sys_unlink(int dfd, const char *name);

#endif
