/* rank/offset/naming math of engines/lib/namespace.c, checked against
 * md-workbench's formulas (the object pattern: test_pattern.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "namespace.h"
#include "check.h"


/* md-workbench: readRank = (r - O*(d+1)) % N, made non-negative */
static int ref_read(int r, int d, int o, int n)
{
	int x = (r - o * (d + 1)) % n;

	return x < 0 ? x + n : x;
}

static int ref_write(int r, int d, int o, int n)
{
	return (r + o * (d + 1)) % n;
}

static void test_ranks(void)
{
	int n, o, r, d;

	for (n = 1; n <= 7; n++)
		for (o = 0; o <= 3; o++)
			for (r = 0; r < n; r++)
				for (d = 0; d < 20; d++) {
					uint32_t rr = mdfio_read_rank(r, d, o, n);
					uint32_t wr = mdfio_write_rank(r, d, o, n);

					CHECK(rr == (uint32_t)ref_read(r, d, o, n),
					      "read n=%d o=%d r=%d d=%d: %u", n, o, r, d, rr);
					CHECK(wr == (uint32_t)ref_write(r, d, o, n),
					      "write n=%d o=%d r=%d d=%d: %u", n, o, r, d, wr);
					/* what r writes to dataset d of rank wr is read by
					 * the rank whose read neighbour is r */
					CHECK(mdfio_read_rank(wr, d, o, n) == (uint32_t)r,
					      "inverse n=%d o=%d r=%d d=%d", n, o, r, d);
				}
	/* wrap-around with large offsets and dataset numbers */
	CHECK(mdfio_read_rank(0, 4000000000u, 4000000000u, 7) ==
	      (uint32_t)((7 - (uint64_t)4000000000u * 4000000001u % 7) % 7),
	      "64-bit wrap");
	/* N=2, O=1: d=1 wraps onto the rank itself (md-workbench.md) */
	CHECK(mdfio_read_rank(0, 1, 1, 2) == 0 && mdfio_write_rank(1, 1, 1, 2) == 1,
	      "N=2 O=1 d=1 self");
}

static void test_names(void)
{
	char buf[256], ref[256];
	size_t n;
	uint64_t idx;
	uint32_t r, d;

	for (r = 0; r < 12; r += 5)
		for (d = 0; d < 12; d += 7) {
			n = mdfio_dataset_path(buf, sizeof(buf), "/x/out", r, d);
			snprintf(ref, sizeof(ref), "/x/out/%u_%u", r, d);
			CHECK(n == strlen(ref) && !strcmp(buf, ref), "%s != %s", buf, ref);
			n = mdfio_object_path(buf, sizeof(buf), n, 1234567890123ull);
			snprintf(ref, sizeof(ref), "/x/out/%u_%u/file-1234567890123", r, d);
			CHECK(n == strlen(ref) && !strcmp(buf, ref), "%s != %s", buf, ref);
		}
	n = mdfio_dataset_path(buf, sizeof(buf), "o", 4294967295u, 4294967295u);
	CHECK(!strcmp(buf, "o/4294967295_4294967295"), "max: %s", buf);
	n = mdfio_object_path(buf, sizeof(buf), n, 0);
	CHECK(!strcmp(buf, "o/4294967295_4294967295/file-0"), "zero: %s", buf);
	CHECK(!mdfio_dataset_path(buf, 20, "/a/very/long/root", 1, 1), "overflow accepted");
	{
		/* the longest names fill their buffers exactly */
		char ds[MDFIO_DATASET_NAME_MAX], obj[MDFIO_OBJECT_NAME_MAX];

		n = mdfio_dataset_name(ds, 4294967295u, 4294967295u);
		CHECK(n + 1 == sizeof(ds) && !strcmp(ds, "4294967295_4294967295"), "dataset name: %s", ds);
		n = mdfio_object_name(obj, UINT64_MAX);
		CHECK(n + 2 == sizeof(obj) && !strcmp(obj, "file-18446744073709551615"), "object name: %s", obj);
	}

	CHECK(mdfio_parse_object_name("file-0", &idx) && idx == 0, "file-0");
	CHECK(mdfio_parse_object_name("file-3901", &idx) && idx == 3901, "file-3901");
	CHECK(!mdfio_parse_object_name("file-", &idx), "file-");
	CHECK(!mdfio_parse_object_name("file-01", &idx), "leading zero");
	CHECK(!mdfio_parse_object_name("file-1x", &idx), "suffix");
	CHECK(!mdfio_parse_object_name("notes.txt", &idx), "foreign");
	CHECK(!mdfio_parse_object_name("file-99999999999999999999", &idx), "overflow");
}

int main(void)
{
	test_ranks();
	test_names();
	return check_result();
}
