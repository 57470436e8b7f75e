/* Per-operation latency logs in md-workbench's CSV layout (-L):
 * <prefix>-<waitfactor>-<iteration>-<op>.csv, a "time,runtime" header, then
 * one row per operation in seconds (here with nanosecond digits). */
#ifndef MDFIO_OPLOG_H
#define MDFIO_OPLOG_H

#include <stdint.h>
#include <stdio.h>

/* "<prefix>-<factor>-<iteration>-<name><suffix>.csv", the factor as
 * md-workbench prints its float waiting factor (%.2f); 0 if it does not
 * fit. */
size_t mdfio_oplog_path(char *buf, size_t len, const char *prefix, float factor,
			uint64_t iteration, const char *name, const char *suffix);

/* Creates a new log (never replaces a file) with its header; NULL and errno
 * on failure. */
FILE *mdfio_oplog_create(const char *path);

/* Closes a log: 0, or an errno value when any row was not written
 * (EIO where the failed write's own error is gone). */
int mdfio_oplog_close(FILE *f);

/* Formats one row into p (at least 48 bytes); returns its length. */
size_t mdfio_oplog_format(char *p, uint64_t since_ns, uint64_t ns);

/* Appends one row: start time since the phase began, and duration. */
static inline void mdfio_oplog_row(FILE *f, uint64_t since_ns, uint64_t ns)
{
	char row[64];

	fwrite_unlocked(row, 1, mdfio_oplog_format(row, since_ns, ns), f);
}

/* Merges logs sorted by time into a new file sorted by time, streaming:
 * memory does not grow with the rows. 0 or an errno value. */
int mdfio_oplog_merge(const char *out, char *const *in, unsigned int n);

#endif
