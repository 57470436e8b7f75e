/* S3's text besides the objects (s3wire.h). */
#define _GNU_SOURCE	/* memmem */
#include "s3wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

int mdfio_s3_valid_bucket(const char *b)
{
	size_t n = strlen(b), i;

	if (n < 3 || n > MDFIO_S3_BUCKET_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9') || b[i] == '-' || b[i] == '.'))
			return 0;
	return 1;
}

int mdfio_s3_valid_prefix(const char *p)
{
	size_t i;

	if (p[0] == '/' || strstr(p, "//") || strlen(p) > MDFIO_S3_PREFIX_MAX)
		return 0;
	for (i = 0; p[i]; i++)
		if (!alnum(p[i]) && p[i] != '-' && p[i] != '_' && p[i] != '.' && p[i] != '/')
			return 0;
	return 1;
}

void mdfio_s3_encode(char *out, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (alnum((char)ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
			*out++ = (char)ch;
		} else {
			*out++ = '%';
			*out++ = hex[ch >> 4];
			*out++ = hex[ch & 15];
		}
	}
	*out = 0;
}

char *mdfio_s3_element(const char *body, size_t len, const char *tag, const char **next)
{
	static const struct { const char *ent; char ch; } ents[] = {
		{ "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' },
	};
	char open[64], close[64];
	const char *p, *q, *end = body + len;
	char *out, *o;

	if (snprintf(open, sizeof(open), "<%s>", tag) >= (int)sizeof(open))
		return NULL;
	snprintf(close, sizeof(close), "</%s>", tag);
	p = memmem(body, len, open, strlen(open));
	if (!p)
		return NULL;
	p += strlen(open);
	q = memmem(p, (size_t)(end - p), close, strlen(close));
	if (!q)
		return NULL;
	if (next)
		*next = q + strlen(close);
	out = o = malloc((size_t)(q - p) + 1);
	if (!out)
		return NULL;
	while (p < q) {
		size_t k, n = 0;

		for (k = 0; k < sizeof(ents) / sizeof(ents[0]); k++) {
			n = strlen(ents[k].ent);
			if ((size_t)(q - p) >= n && !memcmp(p, ents[k].ent, n))
				break;
		}
		if (k < sizeof(ents) / sizeof(ents[0])) {
			*o++ = ents[k].ch;
			p += n;
		} else {
			*o++ = *p++;
		}
	}
	*o = 0;
	return out;
}

void mdfio_s3_code(const char *body, size_t len, char *out)
{
	const char *p = body && len ? memmem(body, len, "<Code>", 6) : NULL;
	size_t n = 0;

	if (p) {
		p += 6;
		while (p + n < body + len && n < MDFIO_S3_CODE_MAX && alnum(p[n]))
			n++;
		memcpy(out, p, n);
	}
	out[n] = 0;
}

int mdfio_s3_dataset_named(const char *s, const char *head, char sep, char end, unsigned long *rank,
			   unsigned long *d)
{
	size_t n = strlen(head), k;
	unsigned long v[2];
	int part;

	if (strncmp(s, head, n))
		return 0;
	s += n;
	for (part = 0; part < 2; part++) {
		v[part] = 0;
		for (k = 0; s[k] >= '0' && s[k] <= '9'; k++) {
			if (k == 9)
				return 0;	/* more digits than any rank or index */
			v[part] = 10 * v[part] + (unsigned long)(s[k] - '0');
		}
		if (!k || s[k] != (part ? end : sep))
			return 0;
		s += k + (s[k] ? 1 : 0);
	}
	if (end && *s)
		return 0;
	*rank = v[0];
	*d = v[1];
	return 1;
}

void mdfio_s3_claim_field(const char *body, size_t len, const char *name, char *out, size_t out_len)
{
	size_t n = strlen(name), i = 0, o = 0;

	out[0] = 0;
	while (i < len) {
		size_t eol = i;

		while (eol < len && body[eol] != '\n')
			eol++;
		/* a field starts a line, or follows "; " in one: the one-line
		 * claim "mdfio-s3 namespace; directory=..." of earlier builds */
		for (; i + n < eol; i++) {
			if ((i && body[i - 1] != '\n' && (i < 2 || memcmp(body + i - 2, "; ", 2))) ||
			    memcmp(body + i, name, n) || body[i + n] != '=')
				continue;
			for (i += n + 1; i < eol && o + 1 < out_len; i++)
				out[o++] = body[i] >= 0x20 && body[i] < 0x7f ? body[i] : '?';
			out[o] = 0;
			return;
		}
		i = eol + 1;
	}
}

int mdfio_s3_status_errno(long status)
{
	if (status >= 200 && status < 300)
		return 0;
	switch (status) {
	case 403:
		return EACCES;
	case 404:
		return ENOENT;
	case 412:
		return EEXIST;
	case 503:
		return EAGAIN;
	default:
		return EIO;
	}
}
