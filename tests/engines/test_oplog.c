/* Latency log rows, names, creation and the streaming merge of
 * engines/lib/oplog.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oplog.h"
#include "check.h"


static char *slurp(const char *path)
{
	static char buf[1 << 16];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	return buf;
}

int main(void)
{
	char dir[] = "/tmp/mdfio-oplog-XXXXXX", path[512], row[64], *in[3];
	const uint64_t times[3][4] = { { 5, 9, 30, 31 }, { 1, 10, 11, 12 }, { 2, 3, 40, 50 } };
	FILE *f;
	int r, i;

	CHECK(mdfio_oplog_format(row, 0, 1) == 24 &&
	      !strncmp(row, "0.000000000,0.000000001\n", 24), "zero: %.24s", row);
	row[mdfio_oplog_format(row, 3123456789ull, 12000000000ull)] = '\0';
	CHECK(!strcmp(row, "3.123456789,12.000000000\n"), "format: %s", row);
	CHECK(mdfio_oplog_path(path, sizeof(path), "/x/lat", 0, 3, "read", "-all") &&
	      !strcmp(path, "/x/lat-0.00-3-read-all.csv"), "path: %s", path);
	/* md-workbench's %.2f of its float factor: -T's 0.0625 and 0.125 */
	CHECK(mdfio_oplog_path(path, sizeof(path), "/x/lat", 0.0625f, 1, "stat", "") &&
	      !strcmp(path, "/x/lat-0.06-1-stat.csv"), "path: %s", path);
	CHECK(mdfio_oplog_path(path, sizeof(path), "/x/lat", 0.125f, 1, "stat", "") &&
	      !strcmp(path, "/x/lat-0.12-1-stat.csv"), "path: %s", path);
	CHECK(mdfio_oplog_path(path, sizeof(path), "/x/lat", 4, 0, "create", "") &&
	      !strcmp(path, "/x/lat-4.00-0-create.csv"), "path: %s", path);
	CHECK(!mdfio_oplog_path(path, 10, "/x/lat", 0, 3, "read", ""), "overflow accepted");

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	for (r = 0; r < 3; r++) {
		in[r] = malloc(512);
		snprintf(in[r], 512, "%s/r%d.csv", dir, r);
		f = mdfio_oplog_create(in[r]);
		CHECK(f != NULL, "create %s", in[r]);
		for (i = 0; i < 4; i++)
			mdfio_oplog_row(f, times[r][i] * 1000000000ull, (uint64_t)r);
		fclose(f);
	}
	errno = 0;
	CHECK(!mdfio_oplog_create(in[0]) && errno == EEXIST, "an existing log was replaced");
	snprintf(path, sizeof(path), "%s/all.csv", dir);
	CHECK(!mdfio_oplog_merge(path, in, 3), "merge");
	CHECK(!strcmp(slurp(path), "time,runtime\n"
		"1.000000000,0.000000001\n2.000000000,0.000000002\n3.000000000,0.000000002\n"
		"5.000000000,0.000000000\n9.000000000,0.000000000\n10.000000000,0.000000001\n"
		"11.000000000,0.000000001\n12.000000000,0.000000001\n30.000000000,0.000000000\n"
		"31.000000000,0.000000000\n40.000000000,0.000000002\n50.000000000,0.000000002\n"),
	      "merged:\n%s", slurp(path));
	CHECK(mdfio_oplog_merge(path, in, 3) == EEXIST, "merge replaced its output");
	unlink(path);
	snprintf(in[2], 512, "%s/missing.csv", dir);
	CHECK(mdfio_oplog_merge(path, in, 3) == ENOENT && access(path, F_OK), "missing input");
	for (r = 0; r < 3; r++) {
		snprintf(path, sizeof(path), "%s/r%d.csv", dir, r);
		unlink(path);
		free(in[r]);
	}
	CHECK(!rmdir(dir), "files left behind");
	return check_result();
}
