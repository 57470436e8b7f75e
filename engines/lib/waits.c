#include "waits.h"

/* A sleep per 8 requests: a call that waits for the device, a server or
 * memory, or for a lock another rank holds. A page per 8 requests read
 * from the device tells the device's waits from the locks': with every
 * object cached, ranks still read some metadata back now and then, in
 * bursts, mostly below that (docs/design.md, issue=auto). */
/* long, as the counts are: where long is 32 bits, an unsigned int would
 * make the comparisons unsigned */
#define SLEEPS ((long)(MDFIO_WAITS_WINDOW / 8))
#define BLOCKS ((long)(MDFIO_WAITS_WINDOW / 8 * (4096 / 512)))

int mdfio_waits_window(struct mdfio_waits *w, long sleeps, long reads)
{
	if (mdfio_waits_due(w))
		return 1;
	if (w->started)
		w->in_a_row = sleeps - w->sleeps >= SLEEPS &&
			      (!w->reads_count || reads - w->reads >= BLOCKS) ? w->in_a_row + 1 : 0;
	w->started = 1;
	w->sleeps = sleeps;
	w->reads = reads;
	return mdfio_waits_due(w);
}
