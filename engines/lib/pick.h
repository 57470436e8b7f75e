/* "value|default": how every mdfio engine option takes its value. A
 * jobfile writes datasets=${MDW_D}|10 because fio turns an unset variable
 * into "" and refuses an empty value; the part before '|' is the value,
 * the part after it the default, used when the value is empty. */
#ifndef MDFIO_PICK_H
#define MDFIO_PICK_H

#include <stddef.h>

/* The value s stands for: s itself without a '|', else the text before
 * it (copied into buf), or after it when nothing stands before. A value
 * longer than buf becomes "", which every parser refuses, naming the whole
 * option: cut short, 000...05 would have been taken for 0. NULL (an
 * option not given): "". */
const char *mdfio_pick(const char *s, char *buf, size_t len);

#endif
