/* phase=find: the tree walked once per name pattern, as find -iname walks
 * it, each directory's listing timed as one operation. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tree.h"

/* One directory of a search: listed (open and every entry read, the
 * readdir latency), each name matched, and its directories walked. */
static void find_dir(struct thread_data *td, struct tree_job *j, int parent, const char *name,
		     const char *pattern)
{
	uint64_t t0 = mdfio_now(), t1;
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char **names = NULL;
	unsigned char *types = NULL;
	size_t n = 0, cap = 0, i;
	DIR *d;
	struct dirent *e;

	if (fd < 0 || !(d = fdopendir(fd))) {
		td->ts.drop_io_u[DDIR_READ]++;
		op_error(j, "find: open", name, errno);
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((errno = 0, e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			names = realloc(names, cap * sizeof(*names));
			types = realloc(types, cap);
			if (!names || !types)
				abort();
		}
		names[n] = strdup(e->d_name);
		types[n++] = e->d_type;
	}
	t1 = mdfio_now();
	if (errno) {
		td->ts.drop_io_u[DDIR_READ]++;
		op_error(j, "find: readdir", name, errno);
	} else {
		mdfio_add_clat(td, DDIR_READ, t1 - t0, 0);
	}
	fd = dirfd(d);
	for (i = 0; i < n; i++) {
		unsigned char type = types[i];

		j->names_seen++;
		if (!fnmatch(pattern, names[i], FNM_CASEFOLD))
			j->names_matched++;
		if (type == DT_UNKNOWN) {
			struct stat st;

			t0 = mdfio_now();
			if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW)) {
				failed_sync(td);
				op_error(j, "find: stat", names[i], errno);
				continue;
			}
			record(td, DDIR_SYNC, t0, mdfio_now());
			type = S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
		}
		if (type == DT_DIR)
			find_dir(td, j, fd, names[i], pattern);
	}
	free_names(names, n);
	free(types);
	closedir(d);
}

int start_find(struct tree_job *j, const char *root, const struct tree_values *o)
{
	char *s, *save = NULL, *p;

	(void)root;
	s = strdup(o->iname && *o->iname ? o->iname : TREE_DEFAULT_INAME);
	for (p = strtok_r(s, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
		if (j->nr_patterns == TREE_MAX_PATTERNS) {
			free(s);
			return mdfio_error("find_iname: at most %d patterns", TREE_MAX_PATTERNS);
		}
		j->patterns[j->nr_patterns++] = strdup(p);
	}
	free(s);
	if (!j->nr_patterns)
		return mdfio_error("find_iname=%s: expected one or more name patterns separated by ':'", o->iname);
	j->units = j->nr_patterns;
	return 0;
}

/* unit k: a whole walk for the k-th pattern */
int64_t find_unit(struct thread_data *td, struct tree_job *j, uint64_t k)
{
	find_dir(td, j, j->root_fd, TREE_NAME, j->patterns[k]);
	return 0;
}
