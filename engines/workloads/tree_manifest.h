/* The tree study's manifest (<directory>/mdfio.tree): every name its copy
 * made, in the order it made them (a directory before its entries), with
 * its type and inode number, so that later phases touch only those names,
 * and only while they still hold what the copy made there. Pure: no fio. */
#ifndef MDFIO_TREE_MANIFEST_H
#define MDFIO_TREE_MANIFEST_H

#include <stdint.h>
#include <stdio.h>

struct tree_entry {
	char type;		/* 'd' directory, 'f' regular file, 'l' symlink */
	uint64_t ino;
	/* its birth time in ns (0: the file system tells none): with the
	 * inode number, what tells the file the copy made from a new one
	 * that got a freed inode number at its name */
	uint64_t btime;
	char *path;		/* relative to the tree; "." the tree itself */
};

struct tree_manifest {
	struct tree_entry *entry;	/* in the copy's order */
	size_t n;
	struct tree_entry **file;	/* the regular files, in that order */
	size_t files;
	char why[512];		/* what tree_manifest_read refused */
};

/* Writing, during the copy: 0, or -1 with errno. A path is written with
 * '%' and newlines escaped, so that any name fits on its line. */
int tree_manifest_header(FILE *f);
int tree_manifest_add(FILE *f, char type, uint64_t ino, uint64_t btime, const char *path);
/* Reads manifest name in directory dir (never through a symlink): 0, or 1
 * with man->why saying in words what is wrong. */
int tree_manifest_read(int dir, const char *name, struct tree_manifest *man);
void tree_manifest_free(struct tree_manifest *man);

#endif
