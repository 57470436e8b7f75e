/* Whether a job's calls wait for the device or a server, as mdfio-uring's
 * issue=auto asks before it moves a job from system calls to the ring:
 * judged per window of requests from two counts of the job's thread that
 * the caller reads at each window's end (getrusage): its voluntary context
 * switches (sleeps) and the 512-byte blocks it read from a block device.
 * Pure, so that the rule is tested apart from any kernel. */
#ifndef MDFIO_WAITS_H
#define MDFIO_WAITS_H

/* requests a window holds */
#define MDFIO_WAITS_WINDOW 64u
/* windows in a row that must wait */
#define MDFIO_WAITS_IN_A_ROW 4u

struct mdfio_waits {
	/* reads count as well: the file system sits on a block device, whose
	 * reads the thread's count shows (else a server's replies, which it
	 * does not) */
	int reads_count;
	int started;		/* sleeps and reads hold a window's start */
	unsigned int in_a_row;	/* windows that waited, up to the last */
	long sleeps, reads;
};

/* Ends a window (the first call only starts one) with the thread's counts
 * now. A window waited if the thread slept at least once per 8 requests
 * and, where reads count, read at least a page per 8 requests. Returns 1
 * once MDFIO_WAITS_IN_A_ROW windows in a row have; then it counts no
 * further and keeps returning 1. */
int mdfio_waits_window(struct mdfio_waits *w, long sleeps, long reads);

/* What the last window's end returned. */
static inline int mdfio_waits_due(const struct mdfio_waits *w)
{
	return w->in_a_row >= MDFIO_WAITS_IN_A_ROW;
}

#endif
