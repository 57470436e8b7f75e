/* mdfio-s3's claim of a namespace: the key <prefix>.mdfio-namespace in
 * bucket= (with bucket_per_dataset=1, .mdfio-namespace-buckets at its
 * top), which holds the coordination directory= of the run that made it,
 * so that a second run on the same bucket and prefix from another
 * directory= is refused whatever its own status says. The claim goes with
 * the namespace's last dataset. */
#ifndef MDFIO_S3CLAIM_H
#define MDFIO_S3CLAIM_H

#include <stddef.h>

#include "s3http.h"

/* A precreate claims the namespace (phase is 1 + an enum mdfio_phase)
 * for run_id ("": unnamed), this host and directory=, open in root_fd;
 * every phase refuses a claim for another directory=. 0, or 1 with one
 * line in msg that names the holder's run, host and directory=. */
int mdfio_s3_claim(struct mdfio_s3_client *c, int root_fd, unsigned int phase, const char *run_id, char *msg,
		   size_t len);

/* Whether the endpoint honours If-None-Match: *, on which every claim,
 * marker and object mdfio makes relies so as never to replace a key: a
 * key of the check's own, made under the prefix, PUT again with it must
 * be refused (412). 0, the key kept for mdfio_s3_check_remove, or 1 with
 * one line in msg, the key deleted. */
int mdfio_s3_check_if_none_match(struct mdfio_s3_client *c, char *msg, size_t len);

/* Deletes the check's key, and only it, once the claim is made: until
 * then it keeps the prefix non-empty, for a store over a file system
 * (versitygw) removes a prefix's directory with its last key, under
 * another rank's PUT that has just made it. 0, or 1 with one line in msg. */
int mdfio_s3_check_remove(struct mdfio_s3_client *c, char *msg, size_t len);

/* Whether a dataset of the namespace is left (any rank's, index below
 * c->datasets, its marker there): 1, 0, or minus an errno value with one
 * line in msg. */
int mdfio_s3_datasets_left(struct mdfio_s3_client *c, char *msg, size_t len);

/* Deletes the claim if this job's phase may and no dataset is left: 0,
 * or 1 with one line in msg. */
int mdfio_s3_release(struct mdfio_s3_client *c, char *msg, size_t len);

#endif
