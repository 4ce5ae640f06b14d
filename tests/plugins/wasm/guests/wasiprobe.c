/* target: wasm32-wasi
 * A guest that tries to read a file and an environment variable: the host grants neither unless
 * the operator configures preopens / env. Filter rejects every node with a reason telling what it saw.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harmonic_guest.h"

static char reason[512];

HG_EXPORT("filter") int32_t filter(void) {
    char content[128] = "DENIED";
    FILE *f = fopen("/data/secret.txt", "r");
    if (f) {
        size_t n = fread(content, 1, sizeof content - 1, f);
        content[n] = 0;
        fclose(f);
    }
    const char *env = getenv("SECRET");
    snprintf(reason, sizeof reason, "file=%s env=%s", content, env ? env : "UNSET");
    hg_set_reason(HG_PTR(reason), (uint32_t)strlen(reason));
    return HG_UNSCHEDULABLE;
}
