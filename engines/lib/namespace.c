#include "namespace.h"

#include <string.h>

size_t mdfio_utoa(char *p, uint64_t v)
{
	size_t n = 1, i;
	uint64_t x;

	for (x = v; x >= 10; x /= 10)
		n++;
	for (i = n; i-- > 0; v /= 10)
		p[i] = (char)('0' + v % 10);
	return n;
}

size_t mdfio_dataset_name(char *buf, uint32_t rank, uint32_t d)
{
	size_t n = mdfio_utoa(buf, rank);

	buf[n++] = '_';
	n += mdfio_utoa(buf + n, d);
	buf[n] = '\0';
	return n;
}

size_t mdfio_object_name(char *buf, uint64_t index)
{
	size_t n = 5;

	memcpy(buf, "file-", 5);
	n += mdfio_utoa(buf + n, index);
	buf[n] = '\0';
	return n;
}

size_t mdfio_dataset_path(char *buf, size_t len, const char *root,
			  uint32_t rank, uint32_t d)
{
	size_t rl = strlen(root);

	if (MDFIO_OBJECT_PATH_MAX(rl) > len)
		return 0;
	memcpy(buf, root, rl);
	buf[rl] = '/';
	return rl + 1 + mdfio_dataset_name(buf + rl + 1, rank, d);
}

size_t mdfio_object_path(char *buf, size_t len, size_t dlen, uint64_t index)
{
	if (dlen + MDFIO_OBJECT_NAME_MAX > len)
		return 0;
	buf[dlen] = '/';
	return dlen + 1 + mdfio_object_name(buf + dlen + 1, index);
}

int mdfio_parse_object_name(const char *name, uint64_t *index)
{
	const char *p;
	uint64_t v = 0;

	if (strncmp(name, "file-", 5))
		return 0;
	p = name + 5;
	if (*p < '0' || *p > '9' || (*p == '0' && p[1]))
		return 0;
	for (; *p; p++) {
		if (*p < '0' || *p > '9' || v > (UINT64_MAX >> 1) / 10)
			return 0;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*index = v;
	return 1;
}
