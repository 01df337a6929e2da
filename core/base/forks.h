/* Fork detection (forks.c): whether this process is a fork of the one that
 * made something, without a system call unless a fork happened. */
#ifndef SYMHEAP_FORKS_H
#define SYMHEAP_FORKS_H

#include <sys/types.h>

/* Start counting forks (once); the count now, to pass back later. */
unsigned symheap__forks_watch(void);
/* Whether this process is not `pid`, which had seen `forks_then` forks. */
int symheap__forked_since(pid_t pid, unsigned forks_then);

#endif
