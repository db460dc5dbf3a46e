/*
 * Small helpers with no knowledge of contexts or the wire: clocks and deadlines, random numbers,
 * a growable vector of descriptors. A leaf, so that the socket helpers (net.c) and the context
 * code can both use it without depending on each other.
 */
#ifndef PDRT_UTIL_H
#define PDRT_UTIL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* ---- time ---- */
int64_t now_ms(void);                 /* CLOCK_MONOTONIC */
int64_t wall_ms(void);                /* CLOCK_REALTIME */
int remaining_ms(int64_t deadline);   /* >= 0; deadline < 0 means "none" and gives -1 */
/* pthread_cond_timedwait against a now_ms() deadline (the context's condvars use CLOCK_MONOTONIC). */
int cv_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline);

uint64_t random_u64(void);

typedef struct fdvec {
    int *v;
    size_t n, cap;
} fdvec;

int fdvec_push(fdvec *fv, int fd);
void fdvec_remove_at(fdvec *fv, size_t i);

#endif /* PDRT_UTIL_H */
