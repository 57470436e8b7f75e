#include "oplog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "namespace.h"

#define HEADER "time,runtime\n"

size_t mdfio_oplog_path(char *buf, size_t len, const char *prefix, float factor,
			uint64_t iteration, const char *name, const char *suffix)
{
	int n = snprintf(buf, len, "%s-%.2f-%llu-%s%s.csv", prefix, (double)factor,
			 (unsigned long long)iteration, name, suffix);

	return n < 0 || (size_t)n >= len ? 0 : (size_t)n;
}

static size_t seconds(char *p, uint64_t ns)
{
	uint64_t frac = ns % 1000000000u;
	size_t n = mdfio_utoa(p, ns / 1000000000u);
	int i;

	p[n++] = '.';
	for (i = 8; i >= 0; i--) {
		p[n + (size_t)i] = (char)('0' + frac % 10);
		frac /= 10;
	}
	return n + 9;
}

size_t mdfio_oplog_format(char *p, uint64_t since_ns, uint64_t ns)
{
	size_t n = seconds(p, since_ns);

	p[n++] = ',';
	n += seconds(p + n, ns);
	p[n++] = '\n';
	return n;
}

FILE *mdfio_oplog_create(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	if (!f) {
		int err = errno;

		close(fd);
		unlink(path);
		errno = err;
		return NULL;
	}
	/* rows are written through this buffer only: constant memory */
	setvbuf(f, NULL, _IOFBF, 1 << 16);
	fputs(HEADER, f);
	return f;
}

int mdfio_oplog_close(FILE *f)
{
	int err = fflush(f) ? errno : 0;

	/* a write that failed earlier lost rows, though this flush worked */
	if (!err && ferror(f))
		err = EIO;
	if (fclose(f) && !err)
		err = errno;
	return err;
}

struct head {
	FILE *f;
	char line[128];
	uint64_t t;	/* the row's time in ns, the merge key */
	int live;
};

static void advance(struct head *h)
{
	const char *p;
	uint64_t sec = 0, frac = 0;
	int digits = 0;

	h->live = fgets(h->line, sizeof(h->line), h->f) != NULL;
	if (!h->live)
		return;
	for (p = h->line; *p >= '0' && *p <= '9'; p++)
		sec = sec * 10 + (uint64_t)(*p - '0');
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++, digits++)
			if (digits < 9)
				frac = frac * 10 + (uint64_t)(*p - '0');
	for (; digits < 9; digits++)
		frac *= 10;
	h->t = sec * 1000000000u + frac;
}

int mdfio_oplog_merge(const char *out, char *const *in, unsigned int n)
{
	struct head *h = calloc(n ? n : 1, sizeof(*h));
	FILE *o;
	unsigned int i;
	int err = 0;

	if (!h)
		return ENOMEM;
	o = mdfio_oplog_create(out);
	if (!o) {
		free(h);
		return errno;
	}
	for (i = 0; i < n && !err; i++) {
		h[i].f = fopen(in[i], "re");
		if (!h[i].f) {
			err = errno;
			break;
		}
		setvbuf(h[i].f, NULL, _IOFBF, 1 << 16);
		advance(&h[i]);		/* the header */
		advance(&h[i]);
	}
	while (!err) {
		struct head *min = NULL;

		for (i = 0; i < n; i++)
			if (h[i].live && (!min || h[i].t < min->t))
				min = &h[i];
		if (!min)
			break;
		fputs(min->line, o);
		advance(min);
	}
	for (i = 0; i < n; i++)
		if (h[i].f)
			fclose(h[i].f);
	free(h);
	if (err)
		fclose(o);
	else
		err = mdfio_oplog_close(o);
	if (err)
		unlink(out);
	return err;
}
