/* The md-workbench namespace: which rank a step reads from and writes to, and
 * how datasets and objects are named. Pure functions, no fio, no I/O. */
#ifndef MDFIO_NAMESPACE_H
#define MDFIO_NAMESPACE_H

#include <stddef.h>
#include <stdint.h>

/* (rank - offset*(d+1)) mod ranks, kept non-negative. */
static inline uint32_t mdfio_read_rank(uint32_t rank, uint32_t d,
				       uint32_t offset, uint32_t ranks)
{
	uint64_t back = ((uint64_t)offset * (d + 1)) % ranks;

	return (uint32_t)((rank + ranks - back) % ranks);
}

/* (rank + offset*(d+1)) mod ranks. */
static inline uint32_t mdfio_write_rank(uint32_t rank, uint32_t d,
					uint32_t offset, uint32_t ranks)
{
	uint64_t fwd = ((uint64_t)offset * (d + 1)) % ranks;

	return (uint32_t)((rank + fwd) % ranks);
}

/* The longest name a dataset adds to the root: "/<rank>_<d>", two 32-bit
 * numbers */
#define MDFIO_DATASET_NAME_MAX (sizeof("/_") - 1 + 2 * 10)
/* The longest name an object adds to its dataset, with the terminator:
 * "/file-<index>", a 64-bit index */
#define MDFIO_OBJECT_NAME_MAX (sizeof("/file-") + 20)
/* The room an object path under a root of root_len bytes needs. */
#define MDFIO_OBJECT_PATH_MAX(root_len) \
	((root_len) + MDFIO_DATASET_NAME_MAX + MDFIO_OBJECT_NAME_MAX)

/* Writes the decimal digits of v at p (no terminator); returns their count. */
size_t mdfio_utoa(char *p, uint64_t v);

/* "<rank>_<d>" into buf (MDFIO_DATASET_NAME_MAX bytes): a dataset's name in
 * the root. Returns its length. */
size_t mdfio_dataset_name(char *buf, uint32_t rank, uint32_t d);

/* "file-<index>" into buf (MDFIO_OBJECT_NAME_MAX bytes): an object's name in
 * its dataset. Returns its length. */
size_t mdfio_object_name(char *buf, uint64_t index);

/* "<root>/<rank>_<d>" into buf; returns its length, or 0 if buf cannot
 * also hold an object path in it (MDFIO_OBJECT_PATH_MAX). */
size_t mdfio_dataset_path(char *buf, size_t len, const char *root,
			  uint32_t rank, uint32_t d);

/* Appends "file-<index>" to a dataset path already in buf[0..dlen) plus '/'.
 * Returns the total length, or 0 if it does not fit. */
size_t mdfio_object_path(char *buf, size_t len, size_t dlen, uint64_t index);

/* What a dataset's name holds in a store (struct mdfio_store's probe):
 * nothing, a dataset, a symlink (which mdfio never follows), or something
 * else that is not a dataset. */
enum mdfio_probe { MDFIO_PROBE_ABSENT, MDFIO_PROBE_DATASET, MDFIO_PROBE_SYMLINK,
		   MDFIO_PROBE_OTHER };

/* If name is "file-<digits>" (no leading zeros, fits in 63 bits), stores the
 * index and returns 1; else 0. Recognises objects when reading a directory. */
int mdfio_parse_object_name(const char *name, uint64_t *index);

#endif
