/* NodeUnschedulable, reimplemented as a guest: must decide exactly as the in-tree plugin.
 *
 * Extension point: Filter. Nodes with spec.unschedulable are UnschedulableAndUnresolvable
 * ("node(s) were unschedulable") unless the pod tolerates the node.kubernetes.io/unschedulable:NoSchedule
 * taint (v1helper.TolerationsTolerateTaint). No guestConfig.
 */
#include "harmonic_guest.h"

#define TAINT_KEY "node.kubernetes.io/unschedulable"

static int tolerates_unschedulable(void) {
    int32_t len;
    hg_column tols = hg_column_of(hg_get(hg_pod_tolerations, &len));
    /* Four strings per toleration: key, operator, value, effect. */
    for (uint32_t i = 0; i + 3 < tols.n; i += 4) {
        uint32_t klen = 0, olen = 0, vlen = 0, elen = 0;
        const char *key = hg_column_at(&tols, i, &klen);
        const char *op = hg_column_at(&tols, i + 1, &olen);
        const char *val = hg_column_at(&tols, i + 2, &vlen);
        const char *eff = hg_column_at(&tols, i + 3, &elen);
        (void)val;
        if (elen > 0 && !hg_eq(eff, elen, "NoSchedule", 10)) continue;
        if (klen > 0 && !hg_eq(key, klen, TAINT_KEY, sizeof(TAINT_KEY) - 1)) continue;
        if (hg_eq(op, olen, "Exists", 6)) return 1;
        if ((olen == 0 || hg_eq(op, olen, "Equal", 5)) && vlen == 0) return 1;
    }
    return 0;
}

HG_EXPORT("filter") int32_t filter(void) {
    hg_reset();
    int32_t n;
    const uint8_t *unsched = hg_get(hg_nodes_unschedulable, &n);
    int any = 0;
    for (int32_t i = 0; i < n; i++) any |= unsched[i];
    if (!any || tolerates_unschedulable()) return HG_SUCCESS;
    uint8_t *codes = hg_alloc((uint32_t)n);
    for (int32_t i = 0; i < n; i++) codes[i] = unsched[i] ? HG_UNRESOLVABLE : HG_SUCCESS;
    hg_reason("node(s) were unschedulable");
    hg_set_node_codes(HG_PTR(codes), (uint32_t)n);
    return HG_SUCCESS;
}
