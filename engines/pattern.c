#include "pattern.h"

#include <endian.h>
#include <string.h>

static const uint8_t magic[8] = { 'm', 'd', 'f', 'i', 'o', 'o', 'b', '1' };

void mdfio_pattern_fill(uint8_t *buf, size_t size)
{
	uint32_t x = 0x9e3779b9u;
	size_t i;

	/* xorshift: incompressible enough that a deduplicating or compressing
	 * file system cannot turn object writes into no-ops */
	for (i = 0; i < size; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		buf[i] = (uint8_t)x;
	}
}

static void header(uint8_t h[MDFIO_HEADER_SIZE], uint32_t rank,
		   uint32_t dataset, uint64_t index)
{
	/* little-endian on every host, so objects verify across machines */
	uint32_t r = htole32(rank), d = htole32(dataset);
	uint64_t i = htole64(index);

	memcpy(h, magic, 8);
	memcpy(h + 8, &r, 4);
	memcpy(h + 12, &d, 4);
	memcpy(h + 16, &i, 8);
}

void mdfio_pattern_stamp(uint8_t *buf, size_t size, uint32_t rank,
			 uint32_t dataset, uint64_t index)
{
	uint8_t h[MDFIO_HEADER_SIZE];

	header(h, rank, dataset, index);
	memcpy(buf, h, size < MDFIO_HEADER_SIZE ? size : MDFIO_HEADER_SIZE);
}

int mdfio_pattern_check(const uint8_t *buf, const uint8_t *ref, size_t size,
			uint32_t rank, uint32_t dataset, uint64_t index)
{
	uint8_t h[MDFIO_HEADER_SIZE];
	size_t hl = size < MDFIO_HEADER_SIZE ? size : MDFIO_HEADER_SIZE;

	header(h, rank, dataset, index);
	if (memcmp(buf, h, hl))
		return 1;
	return size > hl && memcmp(buf + hl, ref + hl, size - hl) ? 1 : 0;
}
