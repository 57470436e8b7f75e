/* The rule issue=auto waits by: windows of sleeps and, where reads count,
 * device reads, 4 in a row. */
#include "check.h"
#include "waits.h"

/* Feeds windows of (sleeps, blocks read) each; returns the window (1, 2,
 * ...) that made the rule say 1, or 0 if none did. */
static int feed(int reads_count, const long (*win)[2], int n)
{
	struct mdfio_waits w = { .reads_count = reads_count };
	long sleeps = 1000, reads = 5000;	/* the thread's counts so far */
	int i;

	if (mdfio_waits_window(&w, sleeps, reads))
		return -1;	/* the first call only starts a window */
	for (i = 0; i < n; i++) {
		sleeps += win[i][0];
		reads += win[i][1];
		if (mdfio_waits_window(&w, sleeps, reads))
			return i + 1;
	}
	return 0;
}

int main(void)
{
	static const long cold[][2] = { { 16, 128 }, { 20, 160 }, { 18, 128 }, { 17, 192 }, { 16, 128 } };
	static const long locks[][2] = { { 30, 0 }, { 40, 8 }, { 25, 40 }, { 33, 16 }, { 28, 0 }, { 30, 0 } };
	static const long edge[][2] = { { 8, 64 }, { 8, 64 }, { 8, 64 }, { 8, 64 } };
	static const long short_sleeps[][2] = { { 8, 64 }, { 8, 64 }, { 7, 64 }, { 8, 64 }, { 8, 64 }, { 8, 64 },
						{ 8, 64 } };
	static const long short_reads[][2] = { { 8, 64 }, { 8, 64 }, { 8, 63 }, { 8, 64 }, { 8, 64 } };
	static const long reads_alone[][2] = { { 0, 512 }, { 2, 512 }, { 0, 512 }, { 7, 512 }, { 1, 512 } };
	struct mdfio_waits w = { .reads_count = 1 };
	int i;

	CHECK(feed(1, cold, 5) == 4, "a cold cache: the 4th window: %d", feed(1, cold, 5));
	CHECK(feed(1, locks, 6) == 0, "sleeps on locks with a few reads: %d", feed(1, locks, 6));
	CHECK(feed(0, locks, 6) == 4, "on a server, sleeps alone: %d", feed(0, locks, 6));
	CHECK(feed(1, edge, 4) == 4, "8 sleeps and 64 blocks a window are enough: %d", feed(1, edge, 4));
	CHECK(feed(1, short_sleeps, 7) == 7, "7 sleeps break the row: %d", feed(1, short_sleeps, 7));
	CHECK(feed(1, short_reads, 5) == 0, "63 blocks break the row: %d", feed(1, short_reads, 5));
	CHECK(feed(1, reads_alone, 5) == 0, "reads without sleeps (readahead): %d", feed(1, reads_alone, 5));

	/* once due, it stays due whatever follows */
	for (i = 0; i < 5; i++)
		mdfio_waits_window(&w, 100L * i, 1000L * i);
	CHECK(mdfio_waits_window(&w, 400, 4000) && w.in_a_row == MDFIO_WAITS_IN_A_ROW,
	      "due stays due: %u", w.in_a_row);
	return check_result();
}
