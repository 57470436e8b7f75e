/* "value|default" (pick.h). */
#include <string.h>

#include "pick.h"

const char *mdfio_pick(const char *s, char *buf, size_t len)
{
	const char *bar = s ? strchr(s, '|') : NULL;
	size_t n;

	if (!s)
		return "";
	if (!bar)
		return s;
	if (bar == s)
		return bar + 1;
	n = (size_t)(bar - s);
	if (n >= len)
		n = 0;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return buf;
}
