/* FNV-1a, 64 bits: a digest of a string for telling strings apart (run
 * names, status files, lines already printed), not a defence against
 * anyone who means to collide with it. */
#ifndef MDFIO_FNV_H
#define MDFIO_FNV_H

#include <stddef.h>
#include <stdint.h>

/* Each step is a bijection of the state, so any change of one byte
 * changes the digest. */
static inline uint64_t mdfio_fnv1a(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (n--) {
		h ^= (unsigned char)*p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

#endif
