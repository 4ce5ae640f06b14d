/* NodeNumber: prefers nodes whose name ends in the same digit as the pod's name.
 *
 * Extension points: PreScore (reads the pod's last digit once per cycle; Skip when the pod's name does
 * not end in a digit), Score (10 on a match, else 0, over all candidates in one call).
 * guestConfig: "reverse" scores 10 on a mismatch instead.
 */
#include "harmonic_guest.h"

static int64_t seen_cycle = -1;
static int pod_digit;
static int reverse = -1; /* guestConfig never changes: read it on first use */

static int last_digit(const char *s, uint32_t len) {
    if (len == 0) return -1;
    char c = s[len - 1];
    return (c >= '0' && c <= '9') ? c - '0' : -1;
}

HG_EXPORT("prescore") int32_t prescore(void) {
    hg_reset();
    int32_t len;
    const char *name = (const char *)hg_get(hg_pod_name, &len);
    int d = last_digit(name, (uint32_t)len);
    if (d < 0) return HG_SKIP;
    pod_digit = d;
    seen_cycle = hg_cycle();
    return HG_SUCCESS;
}

HG_EXPORT("score") int32_t score(void) {
    hg_reset();
    if (seen_cycle != hg_cycle()) {
        hg_reason("reading PreScore state: not found");
        return HG_ERROR;
    }
    if (reverse < 0) {
        int32_t clen;
        const char *cfg = (const char *)hg_get(hg_get_config, &clen);
        reverse = hg_eq(cfg, (uint32_t)clen, "reverse", 7);
    }
    int32_t len;
    hg_column names = hg_column_of(hg_get(hg_nodes_names, &len));
    int64_t *scores = hg_alloc(8 * names.n);
    for (uint32_t i = 0; i < names.n; i++) {
        uint32_t nlen = 0;
        const char *name = hg_column_at(&names, i, &nlen);
        int match = name && last_digit(name, nlen) == pod_digit;
        scores[i] = (match != reverse) ? 10 : 0;
    }
    hg_set_scores(HG_PTR(scores), 8 * names.n);
    return HG_SUCCESS;
}
