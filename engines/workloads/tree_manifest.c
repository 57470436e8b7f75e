/* The tree study's manifest (tree_manifest.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tree_manifest.h"

#define MANIFEST_MAGIC "mdfio-tree 1\n"

int tree_manifest_header(FILE *f)
{
	return fputs(MANIFEST_MAGIC, f) < 0 ? -1 : 0;
}

int tree_manifest_add(FILE *f, char type, uint64_t ino, uint64_t btime, const char *path)
{
	const char *p;

	if (fprintf(f, "%c %" PRIu64 " %" PRIu64 " ", type, ino, btime) < 0)
		return -1;
	for (p = path; *p; p++) {
		int r = *p == '%' ? fputs("%25", f) : *p == '\n' ? fputs("%0a", f) : fputc(*p, f);

		if (r < 0)
			return -1;
	}
	return fputc('\n', f) < 0 ? -1 : 0;
}

/* Undoes the escapes of tree_manifest_add in place: 0, or -1 for one it
 * never writes. */
static int unescape(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (*s != '%') {
			*out++ = *s;
			continue;
		}
		if (!strncmp(s, "%25", 3))
			*out++ = '%';
		else if (!strncmp(s, "%0a", 3))
			*out++ = '\n';
		else
			return -1;
		s += 2;
	}
	*out = 0;
	return 0;
}

static int refuse(struct tree_manifest *man, const char *fmt, const char *name, const char *what)
{
	snprintf(man->why, sizeof(man->why), fmt, name, what);
	tree_manifest_free(man);
	return 1;
}

int tree_manifest_read(int dir, const char *name, struct tree_manifest *man)
{
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	FILE *f;
	char *line = NULL;
	size_t cap = 0, room = 0, k;
	ssize_t len;
	int first = 1;

	memset(man, 0, sizeof(*man));
	if (fd < 0 && errno == ENOENT)
		return refuse(man, "no %s here: run phase=copy first (%s)", name, "the copy lists what it made in it");
	if (fd < 0)
		return refuse(man, "cannot open %s: %s", name, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !(f = fdopen(fd, "r"))) {
		close(fd);
		return refuse(man, "%s: %s", name, "not a regular file, so not the copy's manifest");
	}
	while ((len = getline(&line, &cap, f)) > 0) {
		struct tree_entry *e;
		char type, *end;
		uint64_t ino, btime;

		if (first) {
			first = 0;
			if (strcmp(line, MANIFEST_MAGIC))
				break;
			continue;
		}
		if (line[len - 1] != '\n' || len < 5 || line[1] != ' ')
			break;
		line[len - 1] = 0;
		type = line[0];
		if (type != 'd' && type != 'f' && type != 'l')
			break;
		errno = 0;
		ino = strtoull(line + 2, &end, 10);
		if (errno || *end != ' ')
			break;
		btime = strtoull(end + 1, &end, 10);
		if (errno || *end != ' ' || !end[1] || unescape(end + 1))
			break;
		if (man->n == room) {
			struct tree_entry *more = realloc(man->entry, (room = room ? 2 * room : 1024) * sizeof(*more));

			if (!more)
				break;
			man->entry = more;
		}
		e = &man->entry[man->n];
		e->type = type;
		e->ino = ino;
		e->btime = btime;
		if (!(e->path = strdup(end + 1)))
			break;
		man->n++;
	}
	if (first || !feof(f) || ferror(f)) {
		free(line);
		fclose(f);
		return refuse(man, "%s: %s", name, "not a manifest mdfio-tree wrote (its header or a line is not as the copy writes them)");
	}
	free(line);
	fclose(f);
	if (!man->n || strcmp(man->entry[0].path, ".") || man->entry[0].type != 'd')
		return refuse(man, "%s: %s", name, "it does not begin with the tree's own directory");
	for (k = 0; k < man->n; k++)
		man->files += man->entry[k].type == 'f';
	man->file = calloc(man->files ? man->files : 1, sizeof(*man->file));
	if (!man->file)
		return refuse(man, "%s: %s", name, "out of memory");
	man->files = 0;
	for (k = 0; k < man->n; k++)
		if (man->entry[k].type == 'f')
			man->file[man->files++] = &man->entry[k];
	return 0;
}

void tree_manifest_free(struct tree_manifest *man)
{
	size_t k;

	for (k = 0; k < man->n; k++)
		free(man->entry[k].path);
	free(man->entry);
	free(man->file);
	man->entry = NULL;
	man->file = NULL;
	man->n = man->files = 0;
}
