//! NodeNumber in Zig: the same rule as nodenumber.c, through the Zig SDK (sdk/harmonic.zig).
//!
//! Extension points: PreScore (the pod's last digit, Skip when there is none), Score (10 for nodes
//! whose name ends in that digit, else 0). guestConfig: "reverse" scores 10 on a mismatch instead.
const std = @import("std");
const h = @import("harmonic");

var seen_cycle: i64 = -1;
var pod_digit: u8 = 0;
var reverse: ?bool = null;

fn lastDigit(s: []const u8) ?u8 {
    if (s.len == 0) return null;
    const c = s[s.len - 1];
    return if (c >= '0' and c <= '9') c - '0' else null;
}

export fn prescore() i32 {
    h.reset();
    const name = h.get(h.pod.name) orelse return h.err;
    pod_digit = lastDigit(name) orelse return h.skip;
    seen_cycle = h.scheduler.cycle();
    return h.success;
}

export fn score() i32 {
    h.reset();
    if (seen_cycle != h.scheduler.cycle()) {
        h.reason("reading PreScore state: not found");
        return h.err;
    }
    if (reverse == null) {
        const cfg = h.get(h.scheduler.get_config) orelse return h.err;
        reverse = std.mem.eql(u8, cfg, "reverse");
    }
    const col = h.Column.of(h.get(h.nodes.names) orelse return h.err);
    const bytes = h.alloc(8 * @as(usize, col.n)) orelse return h.err;
    const scores: []i64 = @alignCast(std.mem.bytesAsSlice(i64, bytes));
    for (scores, 0..) |*s, i| {
        const name = col.at(@intCast(i)) orelse "";
        const match = lastDigit(name) == pod_digit;
        s.* = if (match != reverse.?) 10 else 0;
    }
    h.scheduler.@"result.scores"(h.ptr(bytes), @intCast(bytes.len));
    return h.success;
}
