/*
 * The wire protocol between two pdrt contexts: fixed-size little-endian messages.
 *
 * Control connection (client → server listen port):
 *   HELLO(kind=CTL) → WELCOME → CONFIRM → ACK, then CTL messages both ways until close.
 *   The CONFIRM carries the token the client read from the server's probe object, which proves
 *   the client can open the server's shared memory; the server itself checked the client's probe
 *   while answering the HELLO. Both proofs together enable the same-host path.
 *   Early CONFIRM: a client may send its CONFIRM right behind the HELLO (HELLO_EARLY_CONFIRM), with
 *   the token it remembers from an earlier link to that server, or none. The server then answers
 *   WELCOME and ACK together, one round trip instead of two, unless the early CONFIRM proves less
 *   than a fresh one could (the server can read the client's probe but the token is missing or
 *   stale): then it sends the WELCOME alone with WELCOME_CONFIRM_AGAIN, and the client sends a
 *   CONFIRM made from that WELCOME, as without the flag. The outcome is the same either way.
 * Data connection (always opened by the link's client; kind=DATA when the client will send
 *   requests, kind=REVERSE when the client will serve them): HELLO → WELCOME, then requests.
 * Authenticated links (both ends hold the cluster secret, HELLO_AUTH; see auth.h): the client sends
 *   no early CONFIRM; the WELCOME carries the server's nonce and proof and asks for a CONFIRM
 *   (WELCOME_CONFIRM_AGAIN), which carries the client's proof; the server creates the link only
 *   once that proof checks out. A data connection's HELLO carries a fresh nonce and a proof under
 *   the link key, and its WELCOME a proof over that nonce. An end with a secret refuses a peer
 *   without one and the other way round.
 */
#ifndef PDRT_WIRE_H
#define PDRT_WIRE_H

#include <stdint.h>
#include <string.h>

#define WIRE_MAGIC 0x54524450u       /* "PDRT" */
#define WIRE_VERSION 2u

enum { CONN_CTL = 1, CONN_DATA = 2, CONN_REVERSE = 3 };
enum { CTL_UNLINK = 1, CTL_UNLINK_ACK = 2, CTL_OPEN_REVERSE = 3 };
enum { OP_PULL = 1, OP_PUSH = 2, OP_INFO = 3 };

#define HELLO_FORCE_LINK 1u          /* the client holds no state for the server */
#define HELLO_FASTPATH 2u            /* the client wants the same-host path */
#define HELLO_EARLY_CONFIRM 4u       /* a CONFIRM follows the HELLO without waiting for the WELCOME */
#define HELLO_AUTH 8u                /* the client holds a cluster secret and proves it */
#define WELCOME_PEER_READABLE 1u     /* the server could read the client's probe object */
#define WELCOME_CONFIRM_AGAIN 2u     /* the early CONFIRM proved too little: send one made from this */
#define WELCOME_AUTH 4u              /* the server's nonce and proof follow */
#define CONFIRM_READ 1u              /* the client could read the server's probe object */

#define HELLO_SIZE 160
#define WELCOME_SIZE 104
#define CONFIRM_SIZE 48
#define WIRE_NONCE 32
#define WIRE_MAC 32
#define ACK_SIZE 16
#define CTL_SIZE 16
#define REQ_SIZE 32
#define RESP_SIZE 32

typedef struct {
    uint32_t version, kind;
    uint64_t client_id, server_id;
    uint32_t role, flags;
    uint64_t session;
    uint32_t pid, probe_fd;
    uint64_t probe_token;
    char boot_id[40];
    uint8_t nonce[WIRE_NONCE];       /* HELLO_AUTH: the client's fresh nonce */
    uint8_t mac[WIRE_MAC];           /* HELLO_AUTH on a data connection: its proof */
} wire_hello;

typedef struct {
    int32_t status;
    uint32_t flags;
    uint64_t server_id, session;
    uint32_t pid, probe_fd;
    uint8_t nonce[WIRE_NONCE];       /* WELCOME_AUTH: the server's fresh nonce (control) */
    uint8_t mac[WIRE_MAC];           /* WELCOME_AUTH: the server's proof */
} wire_welcome;

typedef struct {
    uint32_t flags;
    uint64_t token;
    uint8_t mac[WIRE_MAC];           /* authenticated links: the client's proof */
} wire_confirm;

typedef struct {
    int32_t status;
    uint32_t same_host;
} wire_ack;

typedef struct {
    uint32_t type;
    uint64_t arg;
} wire_ctl;

typedef struct {
    uint32_t op;
    uint32_t n;
    uint64_t cache_id;
    uint32_t block_bytes;
    uint32_t timeout_ms;             /* the requester's remaining time, bounds the server's waits */
} wire_req;

typedef struct {
    int32_t status;
    uint32_t num_blocks, block_bytes, fd;
    uint64_t gen;
} wire_resp;

static inline void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)v); put32(p + 4, (uint32_t)(v >> 32)); }
static inline uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

/* Encoders write exactly *_SIZE bytes; decoders return 0 when the magic matches. */
void wire_put_hello(uint8_t *b, const wire_hello *m);
int wire_get_hello(const uint8_t *b, wire_hello *m);
void wire_put_welcome(uint8_t *b, const wire_welcome *m);
int wire_get_welcome(const uint8_t *b, wire_welcome *m);
void wire_put_confirm(uint8_t *b, const wire_confirm *m);
int wire_get_confirm(const uint8_t *b, wire_confirm *m);
void wire_put_ack(uint8_t *b, const wire_ack *m);
int wire_get_ack(const uint8_t *b, wire_ack *m);
void wire_put_ctl(uint8_t *b, const wire_ctl *m);
int wire_get_ctl(const uint8_t *b, wire_ctl *m);
void wire_put_req(uint8_t *b, const wire_req *m);
int wire_get_req(const uint8_t *b, wire_req *m);
void wire_put_resp(uint8_t *b, const wire_resp *m);
int wire_get_resp(const uint8_t *b, wire_resp *m);

#endif /* PDRT_WIRE_H */
