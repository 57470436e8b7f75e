/* The project's error printer: mdfio_error's one line on fio's error
 * stream (a fio server sends it to its client), printed once per job
 * section in this fio, the last line a thread printed (what a rank tells
 * the run when it stops it), and notices. Every layer above lib/ reports
 * through it; it needs fio (log_err, is_backend), so it is core's. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fnv.h"
#include "job.h"
#include "robust.h"

/* per thread: clones run as threads with thread=1; room for two paths and
 * the reason after them, which a long path must not push out of the line */
static __thread char last_error[2 * PATH_MAX + 1024];

/* The lines this fio has printed, shared by the processes it forks for its
 * jobs: a refusal every clone of a job meets alike (a symlinked status
 * file) is printed once, not once per clone. Only within one job section
 * (scope): each repeat reports its own errors. A line is kept as its
 * length and digest, so that one naming a long path is recognised too. */
struct said {
	pthread_mutex_t lock;	/* robust: a job killed holding it blocks nobody */
	unsigned int n;
	int scope[32];
	size_t len[32];
	uint64_t digest[32];
};
static struct said *said;
static __thread int scope;

void mdfio_error_scope(int job)
{
	scope = job;
}

void mdfio_share_errors(void)
{
	void *p;

	if (said)
		return;
	p = mmap(NULL, sizeof(*said), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	if (mdfio_robust_init(&((struct said *)p)->lock))
		munmap(p, sizeof(*said));
	else
		said = p;
}

/* Whether this fio has printed line already; if not, remembers it. */
static int said_before(const char *line)
{
	size_t len = strlen(line);
	uint64_t digest = mdfio_fnv1a(line, len);
	unsigned int k;
	int found = 0;

	if (!said)
		return 0;
	mdfio_robust_lock(&said->lock, 1);
	for (k = 0; k < said->n && !found; k++)
		found = said->scope[k] == scope && said->len[k] == len && said->digest[k] == digest;
	if (!found && said->n < sizeof(said->scope) / sizeof(said->scope[0])) {
		said->scope[said->n] = scope;
		said->len[said->n] = len;
		said->digest[said->n++] = digest;
	}
	mdfio_robust_unlock(&said->lock);
	return found;
}

/* One line on fio's error stream. A fio server sends it to its client, as
 * fio's own messages. Otherwise it goes to stderr alone, in one write:
 * fio's log_err also copies it into the --output file, from the job's
 * process, whose stdio buffer can land a long line across fio's JSON. */
static void say(const char *raw)
{
	/* a name holding a newline or another control character (a path,
	 * a host) stays on the line, escaped: one line per message */
	char line[4 * sizeof(last_error)], out[sizeof(line) + 8];
	size_t k = 0;
	int n;

	for (; *raw && k + 5 < sizeof(line); raw++) {
		unsigned char c = (unsigned char)*raw;

		if (c == '\n' || c == '\t' || c == '\r')
			k += (size_t)snprintf(line + k, sizeof(line) - k, "\\%c",
					      c == '\n' ? 'n' : c == '\t' ? 't' : 'r');
		else if (c < 0x20 || c == 0x7f)
			k += (size_t)snprintf(line + k, sizeof(line) - k, "\\x%02x", c);
		else
			line[k++] = (char)c;
	}
	line[k] = '\0';
	if (is_backend) {
		log_err("mdfio: %s\n", line);
		return;
	}
	n = snprintf(out, sizeof(out), "mdfio: %s\n", line);
	if (n > 0 && write(STDERR_FILENO, out, (size_t)n < sizeof(out) ? (size_t)n : sizeof(out) - 1) < 0)
		return;	/* nowhere left to say it */
}

int mdfio_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	if (!said_before(last_error))
		say(last_error);
	return 1;
}

int mdfio_error_said(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return 1;
}

void mdfio_notice(const char *fmt, ...)
{
	char line[sizeof(last_error)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	say(line);
}

const char *mdfio_last_error(void)
{
	return last_error;
}
