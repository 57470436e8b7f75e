/* Object content of engines/pattern.c: the filler is the same every time,
 * a stamped object verifies as itself and as nothing else, short objects
 * carry a cut header. */
#include <stdint.h>
#include <string.h>

#include "pattern.h"
#include "check.h"

#define SIZE 3901

int main(void)
{
	static uint8_t ref[SIZE], again[SIZE], obj[SIZE];
	size_t i, zeros = 0;

	mdfio_pattern_fill(ref, SIZE);
	mdfio_pattern_fill(again, SIZE);
	CHECK(!memcmp(ref, again, SIZE), "the filler differs between calls");
	for (i = 0; i < SIZE; i++)
		zeros += !ref[i];
	CHECK(zeros < SIZE / 64, "the filler is mostly zeros (%zu)", zeros);

	memcpy(obj, ref, SIZE);
	mdfio_pattern_stamp(obj, SIZE, 3, 7, 123456789012ull);
	CHECK(!memcmp(obj + MDFIO_HEADER_SIZE, ref + MDFIO_HEADER_SIZE, SIZE - MDFIO_HEADER_SIZE),
	      "the stamp wrote past the header");
	CHECK(!mdfio_pattern_check(obj, ref, SIZE, 3, 7, 123456789012ull), "own object refused");
	CHECK(mdfio_pattern_check(obj, ref, SIZE, 4, 7, 123456789012ull), "wrong rank accepted");
	CHECK(mdfio_pattern_check(obj, ref, SIZE, 3, 8, 123456789012ull), "wrong dataset accepted");
	CHECK(mdfio_pattern_check(obj, ref, SIZE, 3, 7, 123456789013ull), "wrong index accepted");
	obj[SIZE - 1] ^= 1;
	CHECK(mdfio_pattern_check(obj, ref, SIZE, 3, 7, 123456789012ull), "damaged filler accepted");

	/* an object shorter than the header holds the start of it */
	memset(obj, 0, SIZE);
	mdfio_pattern_stamp(obj, 10, 3, 7, 5);
	CHECK(!obj[10], "a short stamp wrote past the object");
	CHECK(!mdfio_pattern_check(obj, ref, 10, 3, 7, 5), "short object refused");
	CHECK(mdfio_pattern_check(obj, ref, 10, 3, 7, 6) == 0,
	      "the index is beyond a 10-byte object's header part");
	CHECK(!mdfio_pattern_check(obj, ref, 0, 1, 2, 3), "empty object refused");
	return check_result();
}
