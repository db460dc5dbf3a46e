/*
 * pdrt: the device runtime C ABI that pdlink drives over bun:ffi.
 *
 * Shape: an opaque context per device endpoint (one LLM-DataDist cluster id), int32_t status
 * returns carrying LLMStatusCode values, caller-provided buffers, no exceptions, and no callbacks
 * but the completion callback of the optional call queue at the end.
 * Every call that can wait takes a deadline and returns by it. All functions are thread-safe:
 * several threads may call into one context at once.
 *
 * Another runtime (an NPU transfer library, say) plugs in by implementing this header in a
 * shared library and pointing PDLINK_RUNTIME at it. A runtime whose threads outlive its calls (an
 * I/O thread, the call queue's threads) must never be unmapped while they run: link it with
 * `-Wl,-z,nodelete` as the reference runtime is (Deno closes the libraries a program opened when
 * the program or one of its workers ends; pdlink also pins the library it loads, where it can).
 */
#ifndef PDRT_H
#define PDRT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any incompatible change of a signature, a struct layout or a constant below. */
#define PDRT_ABI_VERSION 2

/* ---- Status codes: the numeric values of LLM-DataDist's LLMStatusCode (0x5010B000 + n). ---- */
#define PDRT_SUCCESS                          ((int32_t)0)
#define PDRT_FAILED                           ((int32_t)0xFFFFFFFF)
#define PDRT_WAIT_PROC_TIMEOUT                ((int32_t)0x5010B001)
#define PDRT_KV_CACHE_NOT_EXIST               ((int32_t)0x5010B002)
#define PDRT_PARAM_INVALID                    ((int32_t)0x5010B005)
#define PDRT_NOT_YET_LINK                     ((int32_t)0x5010B007)
#define PDRT_ALREADY_LINK                     ((int32_t)0x5010B008)
#define PDRT_LINK_FAILED                      ((int32_t)0x5010B009)
#define PDRT_UNLINK_FAILED                    ((int32_t)0x5010B00A)
#define PDRT_NOTIFY_PROMPT_UNLINK_FAILED      ((int32_t)0x5010B00B)
#define PDRT_CLUSTER_NUM_EXCEED_LIMIT         ((int32_t)0x5010B00C)
#define PDRT_PROCESSING_LINK                  ((int32_t)0x5010B00D)
#define PDRT_EXIST_LINK                       ((int32_t)0x5010B018)
#define PDRT_TIMEOUT                          ((int32_t)0x5010B01A)
#define PDRT_LINK_BUSY                        ((int32_t)0x5010B01B)
#define PDRT_OUT_OF_MEMORY                    ((int32_t)0x5010B01C)

/* ---- Limits ---- */
#define PDRT_MAX_CLUSTERS_PER_CALL 16   /* link/unlink: more → PDRT_CLUSTER_NUM_EXCEED_LIMIT */
#define PDRT_IP_MAX 64                  /* bytes of an IP text field, NUL included */
#define PDRT_MAX_BLOCKS_PER_TRANSFER 16777216 /* blocks of one pull or push (2^24); more → PDRT_PARAM_INVALID */

/* ---- Roles (informational; carried in the handshake) ---- */
#define PDRT_ROLE_PROMPT  0u            /* prefill */
#define PDRT_ROLE_DECODER 1u            /* decode */
#define PDRT_ROLE_MIX     2u

typedef struct pdrt_ctx pdrt_ctx;

/* One remote endpoint to link to or unlink from. Fixed layout: 144 bytes, 8-byte aligned. */
typedef struct pdrt_cluster {
    uint64_t remote_cluster_id;
    uint16_t remote_port;               /* 1..65535 */
    uint16_t local_port;                /* 0 = any */
    uint32_t reserved;                  /* must be 0 */
    char     remote_ip[PDRT_IP_MAX];    /* NUL-terminated IPv4 or IPv6 text */
    char     local_ip[PDRT_IP_MAX];     /* "" = any local address */
} pdrt_cluster;

/* Event kinds reported by pdrt_poll_events. */
#define PDRT_EVENT_PEER_LOST       1u   /* a linked peer's connection broke; the link is gone */
#define PDRT_EVENT_PEER_LINKED     2u   /* server side: a client completed a link */
#define PDRT_EVENT_PEER_UNLINKED   3u   /* the peer unlinked normally (usually seen by the server; a
                                           client sees it when the server unlinked it) */
#define PDRT_EVENT_LINK_UNUSABLE   4u   /* a transfer timed out; unlink then relink */

#define PDRT_SIDE_CLIENT 0u             /* this context initiated the link */
#define PDRT_SIDE_SERVER 1u             /* the peer initiated the link */

/* Fixed layout: 32 bytes. */
typedef struct pdrt_event {
    uint32_t kind;                      /* PDRT_EVENT_* */
    uint32_t side;                      /* PDRT_SIDE_* of this context on that link */
    uint64_t remote_cluster_id;
    int32_t  code;                      /* status behind the event (PDRT_SUCCESS if none) */
    uint32_t reserved;
    uint64_t time_ms;                   /* CLOCK_REALTIME, milliseconds */
} pdrt_event;

/* Link states reported by pdrt_list_links. */
#define PDRT_LINK_LINKING   1u
#define PDRT_LINK_LINKED    2u
#define PDRT_LINK_UNLINKING 3u
#define PDRT_LINK_UNUSABLE  4u

/* Fixed layout: 88 bytes. */
typedef struct pdrt_link_info {
    uint64_t remote_cluster_id;
    uint32_t side;                      /* PDRT_SIDE_* */
    uint32_t state;                     /* PDRT_LINK_* */
    uint32_t transfers_in_flight;       /* pulls/pushes this context is running on the link */
    uint16_t remote_port;
    uint16_t same_host;                 /* 1 when transfers use the shared-memory path */
    char     remote_ip[PDRT_IP_MAX];
} pdrt_link_info;

/* Options for pdrt_set_option. */
#define PDRT_OPT_SAME_HOST_FASTPATH 1u  /* 1 (default) = negotiate shared memory with same-host peers;
                                           0 = always TCP. Applies to links made afterwards. */

/* Settings of a context, fixed at pdrt_create. Fixed layout: 48 bytes, 8-byte aligned. A zero
 * field takes its default. */
typedef struct pdrt_config {
    /* The cluster secret (copied; the caller may free it after pdrt_create). With one, every link
     * is a mutual challenge-response (HMAC-SHA256 over fresh nonces of both ends, both cluster ids
     * and a direction label): a peer without the same secret gets PDRT_LINK_FAILED on either side,
     * and every data connection (and so the same-host path) must prove it belongs to such a link.
     * NULL with length 0: links are not authenticated. */
    const uint8_t *link_secret;
    uint32_t link_secret_len;           /* 0, or PDRT_SECRET_MIN..PDRT_SECRET_MAX bytes */
    uint32_t handshake_timeout_ms;      /* an unfinished incoming handshake is dropped (default 5000) */
    uint32_t idle_timeout_ms;           /* a served data connection idle this long is closed (default 60000) */
    uint32_t max_links;                 /* links this context serves, in total (default 1024) */
    uint32_t max_links_per_peer;        /* ... from one peer address (default 64) */
    uint32_t max_handshakes;            /* incoming handshakes in progress, in total (default 256) */
    uint32_t max_handshakes_per_peer;   /* ... from one peer address (default 32) */
    uint32_t max_conns_per_peer;        /* data connections served to one peer address (default 256) */
    uint32_t max_conns;                 /* data connections served in total (default 1024) */
    uint32_t reserved;                  /* must be 0 */
} pdrt_config;

#define PDRT_SECRET_MIN 16u
#define PDRT_SECRET_MAX 4096u

/* ---- Lifecycle ---- */

/* Returns PDRT_ABI_VERSION of the library; callers refuse a library whose value differs. */
int32_t pdrt_abi_version(void);

/* Creates a context for one cluster id and starts its background I/O thread. config NULL: defaults,
 * no secret.
 * listen_port > 0: also listen on listen_ip:listen_port (server side, SO_REUSEADDR).
 * listen_port 0 with a non-empty listen_ip: listen on an ephemeral port (see pdrt_listen_port).
 * listen_port 0 with listen_ip NULL or "": client only.
 * Errors: PDRT_PARAM_INVALID (role, listen_ip text, out NULL, a secret length out of range or a
 * NULL secret with a length, reserved != 0), PDRT_LINK_FAILED (cannot bind or listen, e.g. the
 * address is in use), PDRT_OUT_OF_MEMORY. */
int32_t pdrt_create(uint64_t cluster_id, uint32_t role, const char *listen_ip, uint16_t listen_port,
                    const pdrt_config *config, pdrt_ctx **out);

/* The port the context listens on (0 for a client-only context). */
int32_t pdrt_listen_port(pdrt_ctx *ctx, uint16_t *port);

/* Closes every connection and the listener, frees all caches. Blocks until background work ends
 * and until calls in progress on other threads have returned (each by its own deadline). Peers
 * see their links to this context break (PDRT_EVENT_PEER_LOST). Any later call with the handle
 * gets PDRT_PARAM_INVALID. */
int32_t pdrt_destroy(pdrt_ctx *ctx);

/* PDRT_PARAM_INVALID for an unknown option or value. */
int32_t pdrt_set_option(pdrt_ctx *ctx, uint32_t option, int64_t value);

/* ---- Links (LLM-DataDist link_clusters / unlink_clusters) ----
 *
 * A link is one TCP control connection from a client context to a server context's listen port,
 * keyed on each side by the other's cluster id (one link per remote cluster id per context).
 * Either side notices a dead peer by itself (EOF, reset, TCP keepalive): it drops the link and
 * queues PDRT_EVENT_PEER_LOST. A server that still holds a link from a cluster id refuses a new
 * link from that id (PDRT_ALREADY_LINK) until it unlinks or sees the old connection die; a
 * restarted client's handshake asks the server to probe the old connection and drop it if dead.
 *
 * Force unlink clears the local end only and tells nobody (both sides must call it):
 * - on the client, the link is forgotten at once (not listed, not usable, a new link may be
 *   attempted) but its connection is parked, silent, so the server's end stays linked: the
 *   server keeps the entry (and answers a new link from that client with PDRT_ALREADY_LINK)
 *   until the server unlinks it itself; the parked connection closes when the server lets go
 *   (or at pdrt_destroy);
 * - on the server, the link is forgotten and its connection closed; a client that still holds
 *   the link then sees the connection drop (PDRT_EVENT_PEER_LOST).
 * The server drops its entry only on an unlink message from the client, its own unlink (normal or
 * force), or connection loss (with PDRT_EVENT_PEER_LOST).
 */

/* Links to up to 16 clusters concurrently. rets[i] receives the code of clusters[i]. Returns
 * PDRT_SUCCESS only when every cluster succeeded; PDRT_CLUSTER_NUM_EXCEED_LIMIT or
 * PDRT_PARAM_INVALID (without touching rets) for a bad call (n == 0 or > 16, NULL arrays,
 * timeout_ms <= 0); otherwise PDRT_FAILED. Per-cluster codes: PDRT_SUCCESS; PDRT_PARAM_INVALID
 * (bad IP text, port 0, reserved != 0, the context's own cluster id); PDRT_ALREADY_LINK (this
 * context, or the server, already holds that link); PDRT_PROCESSING_LINK (a link or unlink of that
 * cluster id is in progress, or it appears twice in the call); PDRT_LINK_FAILED (refused,
 * unreachable, handshake rejected, wrong cluster id at that address, no or another cluster secret,
 * the server at its link caps); PDRT_TIMEOUT (no complete
 * handshake by the deadline). Returns by the deadline. */
int32_t pdrt_link(pdrt_ctx *ctx, const pdrt_cluster *clusters, uint32_t n, int32_t timeout_ms,
                  int32_t *rets);

/* Unlinks; works on either side of a link (a server cleaning up a client that vanished), keyed by
 * remote_cluster_id (remote_ip may be "" and is ignored when valid). Per-cluster codes:
 * PDRT_NOT_YET_LINK (no such link), PDRT_PROCESSING_LINK, PDRT_LINK_BUSY (force = 0 while a
 * transfer on the link runs), PDRT_PARAM_INVALID.
 * force = 0: tells the peer and tears down both ends (PDRT_NOTIFY_PROMPT_UNLINK_FAILED when the
 * peer could not be told or did not acknowledge by the deadline; the local end is cleared anyway).
 * force != 0: clears the local end only (see above) and aborts running transfers on the link,
 * which return PDRT_LINK_FAILED. */
int32_t pdrt_unlink(pdrt_ctx *ctx, const pdrt_cluster *clusters, uint32_t n, int32_t timeout_ms,
                    int32_t force, int32_t *rets);

/* Copies up to cap queued events into out and removes them from the queue; *n receives the count. */
int32_t pdrt_poll_events(pdrt_ctx *ctx, pdrt_event *out, uint32_t cap, uint32_t *n);

/* Waits until at least one event is queued (PDRT_SUCCESS) or timeout_ms (>= 0) passes
 * (PDRT_TIMEOUT); PDRT_FAILED when the context is being destroyed. The queue holds the latest
 * 4096 events. */
int32_t pdrt_wait_events(pdrt_ctx *ctx, int32_t timeout_ms);

/* Copies up to cap current links into out; *n receives the number copied, *total the number held. */
int32_t pdrt_list_links(pdrt_ctx *ctx, pdrt_link_info *out, uint32_t cap, uint32_t *n,
                        uint32_t *total);

/* ---- KV block caches and transfers ---- */

/* Registers num_blocks blocks of block_bytes each (zero-filled, shared memory) under cache_id.
 * PDRT_PARAM_INVALID for zero sizes or an id already registered; PDRT_OUT_OF_MEMORY. Caches
 * registered after a link are visible to the peer too. */
int32_t pdrt_register_blocks(pdrt_ctx *ctx, uint64_t cache_id, uint32_t num_blocks,
                             uint32_t block_bytes);

/* PDRT_KV_CACHE_NOT_EXIST for an unknown id. Transfers already running finish on the old memory. */
int32_t pdrt_unregister_blocks(pdrt_ctx *ctx, uint64_t cache_id);

/* Copies src (n * block_bytes bytes, block after block) into the listed local blocks.
 * PDRT_KV_CACHE_NOT_EXIST for an unknown cache or block index; PDRT_PARAM_INVALID for n == 0,
 * NULL pointers or a length other than n * block_bytes. Same for pdrt_read_blocks. */
int32_t pdrt_write_blocks(pdrt_ctx *ctx, uint64_t cache_id, const uint32_t *blocks, uint32_t n,
                          const uint8_t *src, uint64_t src_len);

/* Copies the listed local blocks into dst (n * block_bytes bytes, block after block). */
int32_t pdrt_read_blocks(pdrt_ctx *ctx, uint64_t cache_id, const uint32_t *blocks, uint32_t n,
                         uint8_t *dst, uint64_t dst_len);

/* Reads remote blocks src[i] of the peer's remote_cache_id into local blocks dst[i] of
 * dst_cache_id, over the link to remote_cluster_id (either side of the link may pull or push).
 * Same-host peers copy through shared memory, others over a data connection of the link.
 * Errors: PDRT_PARAM_INVALID (n == 0, NULL lists, timeout_ms <= 0, block sizes differ);
 * PDRT_NOT_YET_LINK; PDRT_KV_CACHE_NOT_EXIST (local or remote cache or block index unknown);
 * PDRT_TIMEOUT (deadline passed: the link turns PDRT_LINK_UNUSABLE with a
 * PDRT_EVENT_LINK_UNUSABLE event; unlink, then link again); PDRT_LINK_FAILED (peer lost or
 * transfer aborted by a force unlink, or the link is unusable). Returns by the deadline. */
int32_t pdrt_pull_blocks(pdrt_ctx *ctx, uint64_t remote_cluster_id, uint64_t remote_cache_id,
                         const uint32_t *src, uint64_t dst_cache_id, const uint32_t *dst, uint32_t n,
                         int32_t timeout_ms);

/* Writes local blocks src[i] of src_cache_id into the peer's blocks dst[i] of remote_cache_id. */
int32_t pdrt_push_blocks(pdrt_ctx *ctx, uint64_t remote_cluster_id, uint64_t src_cache_id,
                         const uint32_t *src, uint64_t remote_cache_id, const uint32_t *dst,
                         uint32_t n, int32_t timeout_ms);

/* ---- Call queue (optional) ----
 *
 * Threads of the runtime that make link and unlink calls handed to them, and say each one is done
 * through a callback, so a caller with an event loop (JavaScript over FFI) makes those calls
 * without a thread of its own waiting in them. A runtime may leave this part out: pdlink looks the
 * three symbols up apart from the others and, without them, makes link calls on worker threads.
 *
 * The caller owns an array of call slots (pdrt_call, fixed layout) for the queue's life and fills
 * one before submitting it; the runtime writes the outcome into the slot, then calls done(slot)
 * from one of its threads. A slot is the caller's again once done has been called for it.
 */
#define PDRT_CALL_LINK   1u
#define PDRT_CALL_UNLINK 2u
#define PDRT_CALLS_MAX_THREADS 64u

/* Fixed layout: 2496 bytes, 8-byte aligned. */
typedef struct pdrt_call {
    /* in */
    uint64_t ctx;                       /* the pdrt_ctx pointer */
    int64_t  deadline_ms;               /* CLOCK_REALTIME ms: the timeout is cut to what is left of it when the
                                           call starts; a call that starts after it is not made (ret
                                           PDRT_FAILED, every rets[i] PDRT_TIMEOUT) */
    uint32_t op;                        /* PDRT_CALL_LINK or PDRT_CALL_UNLINK */
    uint32_t n;                         /* clusters, as for pdrt_link */
    int32_t  timeout_ms;
    int32_t  force;                     /* unlink only */
    /* out */
    int32_t  ret;                       /* what pdrt_link / pdrt_unlink returned */
    uint32_t holders_known;             /* 1 when holders[] was filled (see below) */
    uint8_t  reserved[24];
    pdrt_cluster clusters[PDRT_MAX_CLUSTERS_PER_CALL];
    int32_t  rets[PDRT_MAX_CLUSTERS_PER_CALL];
    /* After a link with some rets[i] == PDRT_ALREADY_LINK: 1 + PDRT_SIDE_* of this context on the
     * link to clusters[i] when the context holds it linked right after the call, 0 when it does not
     * (the peer alone holds it, or it is unusable). Read on the same thread just after the call. */
    uint32_t holders[PDRT_MAX_CLUSTERS_PER_CALL];
} pdrt_call;

typedef struct pdrt_calls pdrt_calls;
typedef void (*pdrt_calls_done)(uint32_t slot);

/* Starts `threads` (1..PDRT_CALLS_MAX_THREADS) threads serving calls in slots[0..nslots). Calls
 * start in the order they were submitted. PDRT_PARAM_INVALID for a bad argument;
 * PDRT_OUT_OF_MEMORY, or PDRT_FAILED when a thread cannot be started. */
int32_t pdrt_calls_create(uint32_t threads, pdrt_call *slots, uint32_t nslots, pdrt_calls_done done,
                          pdrt_calls **out);

/* Queues the call in slots[slot] and returns at once. PDRT_PARAM_INVALID for a slot out of range
 * or one already queued or running; PDRT_FAILED once pdrt_calls_destroy has begun. */
int32_t pdrt_calls_submit(pdrt_calls *q, uint32_t slot);

/* Refuses new calls, lets the queued and running ones finish (each by its deadline) and answer,
 * stops the threads and frees the queue. The caller keeps the slots and the callback until then. */
int32_t pdrt_calls_destroy(pdrt_calls *q);

#ifdef __cplusplus
}
#endif

#endif /* PDRT_H */
