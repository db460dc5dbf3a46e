/* The handshake's proofs (see auth.h). */
#define _GNU_SOURCE
#include "auth.h"
#include "hmac.h"
#include "wire.h"

#include <errno.h>
#include <sys/random.h>

static const char *const LABELS[] = {
    [AUTH_LINK_SERVER] = "pdrt link server",   [AUTH_LINK_CLIENT] = "pdrt link client",
    [AUTH_LINK_KEY] = "pdrt link key",         [AUTH_DATA_HELLO] = "pdrt data hello",
    [AUTH_DATA_WELCOME] = "pdrt data welcome",
};

void auth_mac(const uint8_t *key, size_t key_len, auth_label label, const auth_input *in, uint8_t out[AUTH_MAC]) {
    /* label with its NUL, then fixed-size fields: no two inputs encode alike */
    uint8_t fields[2 * AUTH_NONCE + 3 * 8 + 4];
    memcpy(fields, in->client_nonce, AUTH_NONCE);
    memcpy(fields + AUTH_NONCE, in->server_nonce, AUTH_NONCE);
    put64(fields + 2 * AUTH_NONCE, in->client_id);
    put64(fields + 2 * AUTH_NONCE + 8, in->server_id);
    put64(fields + 2 * AUTH_NONCE + 16, in->session);
    put32(fields + 2 * AUTH_NONCE + 24, in->kind);
    hmac_ctx h;
    hmac_init(&h, key, key_len);
    hmac_update(&h, LABELS[label], strlen(LABELS[label]) + 1);
    hmac_update(&h, fields, sizeof fields);
    hmac_final(&h, out);
    wipe(&h, sizeof h);
}

int auth_verify(const uint8_t *key, size_t key_len, auth_label label, const auth_input *in,
                const uint8_t got[AUTH_MAC]) {
    uint8_t want[AUTH_MAC];
    auth_mac(key, key_len, label, in, want);
    int ok = ct_equal(want, got, AUTH_MAC);
    wipe(want, sizeof want);
    return ok;
}

int auth_nonce(uint8_t out[AUTH_NONCE]) {
    size_t have = 0;
    while (have < AUTH_NONCE) {
        ssize_t r = getrandom(out + have, AUTH_NONCE - have, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        have += (size_t)r;
    }
    return 0;
}

void auth_data_input(auth_input *in, const uint8_t nonce[AUTH_NONCE], uint64_t client_id, uint64_t server_id,
                     uint64_t session, uint32_t kind) {
    memset(in, 0, sizeof *in);
    memcpy(in->client_nonce, nonce, AUTH_NONCE);
    in->client_id = client_id;
    in->server_id = server_id;
    in->session = session;
    in->kind = kind;
}
