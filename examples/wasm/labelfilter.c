/* LabelFilter: keeps the nodes whose label KEY has one of the listed values.
 *
 * Extension point: Filter (all candidates in one call); a node without the label, or with another
 * value, is Unschedulable. guestConfig: "KEY=VALUE[,VALUE...]" (a malformed config is an Error).
 */
#include "harmonic_guest.h"

HG_EXPORT("filter") int32_t filter(void) {
    hg_reset();
    int32_t clen;
    const char *cfg = (const char *)hg_get(hg_get_config, &clen);
    int32_t eq = -1;
    for (int32_t i = 0; i < clen; i++)
        if (cfg[i] == '=') { eq = i; break; }
    if (eq <= 0 || eq == clen - 1) {
        hg_reason("guestConfig: want KEY=VALUE[,VALUE...]");
        return HG_ERROR;
    }
    hg_column col = hg_nodes_label_column(cfg, (uint32_t)eq);
    uint8_t *codes = hg_alloc(col.n ? col.n : 1);
    for (uint32_t i = 0; i < col.n; i++) {
        uint32_t vlen = 0;
        const char *v = hg_column_at(&col, i, &vlen);
        int ok = 0;
        if (v) {
            int32_t start = eq + 1;
            for (int32_t j = start; j <= clen && !ok; j++) {
                if (j == clen || cfg[j] == ',') {
                    ok = hg_eq(v, vlen, cfg + start, (uint32_t)(j - start));
                    start = j + 1;
                }
            }
        }
        codes[i] = ok ? HG_SUCCESS : HG_UNSCHEDULABLE;
    }
    hg_reason("node(s) didn't match the label filter");
    hg_set_node_codes(HG_PTR(codes), col.n);
    return HG_SUCCESS;
}
