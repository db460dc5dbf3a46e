/*
 * Server-side handshakes of a context's link port, run by its I/O thread: accepting connections
 * within the port's caps, reading a client's HELLO and CONFIRM, admitting or refusing the link, and
 * handing a data connection to a serving thread or a link's pool. The I/O thread owns the table of
 * handshakes in progress and calls in here when the listener or a pending socket is ready.
 */
#ifndef PDRT_HANDSHAKE_H
#define PDRT_HANDSHAKE_H

#include "internal.h"
#include "auth.h"
#include "wire.h"

#include <sys/socket.h>

/* A server-side handshake in progress (this thread only). */
typedef struct pending {
    struct pending *prev, *next;  /* oldest first: deadlines are accept time + a constant */
    int fd;
    int registered;               /* in the epoll set */
    int64_t deadline;
    int stage;                    /* 0: want HELLO, 1: want CONFIRM */
    uint8_t buf[HELLO_SIZE + CONFIRM_SIZE];
    size_t have;
    link_t *lk;                   /* the LINKING placeholder after an accepted HELLO */
    int peer_readable;
    int early;                    /* the CONFIRM comes unasked; the WELCOME waits for it */
    wire_welcome w;
    int auth;                     /* authenticated handshake: no link until the client's proof */
    auth_input in;                /* what the proofs of this handshake bind */
    uint32_t hello_flags;
    int32_t peer_pid;
    int32_t probe_pid;            /* the client's probe object, from the HELLO */
    uint32_t probe_fd;
    uint64_t probe_token;
    struct sockaddr_storage addr; /* the peer's, from accept */
} pending;

typedef struct {
    pending *head, *tail;
    pending **by_fd;
    size_t cap, count;
    int64_t resume_at;            /* the listener is out of the epoll set until then (0: it is in) */
    int backoff_ms;
    int told;                     /* the descriptor shortage was logged */
} pendings;


/* The listener is ready: accept one connection, if there is room for its handshake. */
void hs_listen(pdrt_ctx *ctx, pendings *ps);
/* p's socket is ready: read what its handshake needs next, and finish or drop it. */
void hs_advance(pdrt_ctx *ctx, pendings *ps, pending *p);
/* Puts p in the table of handshakes in progress; -1 when the table cannot grow. */
int hs_add(pendings *ps, pending *p);
/* Takes p out of the table and frees it; its socket now belongs to someone else or is about to close. */
void hs_forget(pendings *ps, pending *p);
/* Ends p's handshake and closes its socket (its deadline passed, or the thread stops). */
void hs_drop(pdrt_ctx *ctx, pendings *ps, pending *p);
/* Puts the listener back in the epoll set once a pause for lack of descriptors is over. */
void hs_resume(pdrt_ctx *ctx, pendings *ps);

#endif
