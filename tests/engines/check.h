/* The unit tests' one assertion: reports and counts a failure, goes on. */
#ifndef MDFIO_TEST_CHECK_H
#define MDFIO_TEST_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++;		\
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);		\
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

/* main()'s return value. */
static inline int check_result(void)
{
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}

#endif
