/*
 * C-level test of the host reference runtime, through the public ABI only.
 * Contexts live in this process on distinct loopback addresses; fault cases use a forked child
 * process as the server, stopped (SIGSTOP) or killed to play a stuck or dead peer.
 * Exit code = number of failed checks.
 */
#define _GNU_SOURCE
#include "testing.h"

int main(void) {
    /* Fork before any thread exists, so the child starts from a clean process. */
    child_t ch = start_child(900, "127.0.0.9");
    if (ch.pid < 0 || ch.port == 0) {
        fprintf(stderr, "cannot start the child server\n");
        return 100;
    }
    test_links();
    test_blocks();
    test_lifecycle();
    test_auth();
    test_caps();
    test_calls();
    test_faults(ch);
    if (failures == 0) printf("test_pdrt: all checks passed\n");
    else printf("test_pdrt: %d check(s) failed\n", failures);
    return failures > 125 ? 125 : failures;
}
