/*
 * The link handshake's proofs. With a cluster secret, each end of a control handshake proves it
 * holds the secret by a MAC over both fresh nonces, both cluster ids and the session, under a
 * label naming the direction (a server's proof cannot be reflected as a client's). Both ends then
 * derive a per-link key from the same inputs, and every data connection of the link proves it
 * belongs to that link with a MAC under the link key, so no connection that can touch a cache
 * exists outside an authenticated link.
 */
#ifndef PDRT_AUTH_H
#define PDRT_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define AUTH_NONCE 32
#define AUTH_MAC 32

typedef enum {
    AUTH_LINK_SERVER,   /* the server's proof in the WELCOME */
    AUTH_LINK_CLIENT,   /* the client's proof in the CONFIRM */
    AUTH_LINK_KEY,      /* the per-link key both ends derive */
    AUTH_DATA_HELLO,    /* a data connection's HELLO, under the link key */
    AUTH_DATA_WELCOME,  /* the answer to it */
} auth_label;

/* The inputs every proof binds. */
typedef struct {
    uint8_t client_nonce[AUTH_NONCE];
    uint8_t server_nonce[AUTH_NONCE];
    uint64_t client_id, server_id, session;
    uint32_t kind;      /* connection kind for data proofs, 0 for the control handshake */
} auth_input;

/* HMAC-SHA256 under key of the label and the inputs. */
void auth_mac(const uint8_t *key, size_t key_len, auth_label label, const auth_input *in, uint8_t out[AUTH_MAC]);
/* Checks a received proof in constant time; 1 when it is the expected one. */
int auth_verify(const uint8_t *key, size_t key_len, auth_label label, const auth_input *in,
                const uint8_t got[AUTH_MAC]);
/* The inputs of a data connection's proofs: the client's fresh nonce, the link's ids and session,
 * the connection kind. */
void auth_data_input(auth_input *in, const uint8_t nonce[AUTH_NONCE], uint64_t client_id, uint64_t server_id,
                     uint64_t session, uint32_t kind);
/* Fresh random bytes from the kernel; -1 when none could be had (then nothing may be proved). */
int auth_nonce(uint8_t out[AUTH_NONCE]);

#endif /* PDRT_AUTH_H */
