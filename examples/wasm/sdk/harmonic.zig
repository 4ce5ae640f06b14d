//! Harmonic guest SDK for Zig: the host imports of docs/wasm.md and a few helpers.
//!
//! Build a guest with the Zig toolchain from PyPI (`pip install ziglang`):
//!   python -m ziglang build-exe guest.zig -target wasm32-freestanding -O ReleaseSmall -fno-entry \
//!       -rdynamic --export-memory --dep harmonic -Mroot=guest.zig -Mharmonic=examples/wasm/sdk/harmonic.zig
//! (scripts/build_wasm_guests.py does this). Export the extension points you implement, e.g.
//! `export fn score() i32`.
const std = @import("std");

pub const success: i32 = 0;
pub const err: i32 = 1;
pub const unschedulable: i32 = 2;
pub const unresolvable: i32 = 3;
pub const wait: i32 = 4;
pub const skip: i32 = 5;

pub const api = struct {
    pub extern "k8s.io/api" fn pod(buf: u32, limit: u32) i32;
    pub extern "k8s.io/api" fn nodeName(buf: u32, limit: u32) i32;
};

pub const scheduler = struct {
    pub extern "k8s.io/scheduler" fn get_config(buf: u32, limit: u32) i32;
    pub extern "k8s.io/scheduler" fn cycle() i64;
    pub extern "k8s.io/scheduler" fn @"result.status_reason"(buf: u32, len: u32) void;
    pub extern "k8s.io/scheduler" fn @"result.node_names"(buf: u32, len: u32) void;
    pub extern "k8s.io/scheduler" fn @"result.node_codes"(buf: u32, len: u32) void;
    pub extern "k8s.io/scheduler" fn @"result.scores"(buf: u32, len: u32) void;
    pub extern "k8s.io/scheduler" fn nodeScoreList(buf: u32, limit: u32) i32;
    pub extern "k8s.io/scheduler" fn @"result.normalized_score_list"(buf: u32, len: u32) void;
};

pub const nodes = struct {
    pub extern "harmonic.io/nodes" fn count() i32;
    pub extern "harmonic.io/nodes" fn names(buf: u32, limit: u32) i32;
    pub extern "harmonic.io/nodes" fn label(key: u32, key_len: u32, buf: u32, limit: u32) i32;
    pub extern "harmonic.io/nodes" fn unschedulable(buf: u32, limit: u32) i32;
};

pub const pod = struct {
    pub extern "harmonic.io/pod" fn name(buf: u32, limit: u32) i32;
    pub extern "harmonic.io/pod" fn namespace(buf: u32, limit: u32) i32;
    pub extern "harmonic.io/pod" fn uid(buf: u32, limit: u32) i32;
    pub extern "harmonic.io/pod" fn label(key: u32, key_len: u32, buf: u32, limit: u32) i32;
    pub extern "harmonic.io/pod" fn tolerations(buf: u32, limit: u32) i32;
};

/// A wasm32 address of a slice, as the host functions take it.
pub fn ptr(s: anytype) u32 {
    return @intCast(@intFromPtr(s.ptr));
}

/// Scratch memory for one call: `reset` at the start of each export.
var heap: [1 << 20]u8 align(8) = undefined;
var top: usize = 0;
var hint: usize = 4096;

pub fn reset() void {
    top = 0;
}

pub fn alloc(n: usize) ?[]u8 {
    const start = std.mem.alignForward(usize, top, 8);
    if (start + n > heap.len) return null;
    top = start + n;
    return heap[start..top];
}

/// Calls a getter `fn (buf, limit) i32`, growing the buffer once if the value did not fit.
pub fn get(comptime getter: anytype) ?[]u8 {
    var buf = alloc(hint) orelse return null;
    var n: usize = @intCast(getter(ptr(buf), @intCast(buf.len)));
    if (n > buf.len) {
        hint = n;
        buf = alloc(n) orelse return null;
        n = @intCast(getter(ptr(buf), @intCast(buf.len)));
    }
    return buf[0..n];
}

pub fn reason(text: []const u8) void {
    scheduler.@"result.status_reason"(ptr(text), @intCast(text.len));
}

/// A string column: u32 n | u32 end[n] | u8 present[n] | bytes.
pub const Column = struct {
    n: u32,
    ends: []const u8,
    present: []const u8,
    data: []const u8,

    pub fn of(b: []const u8) Column {
        const n = std.mem.readInt(u32, b[0..4], .little);
        const ends = b[4 .. 4 + 4 * n];
        return .{ .n = n, .ends = ends, .present = b[4 + 4 * n .. 4 + 5 * n], .data = b[4 + 5 * n ..] };
    }

    fn end(self: Column, i: u32) u32 {
        return std.mem.readInt(u32, self.ends[4 * i ..][0..4], .little);
    }

    /// Value `i`, or null when absent.
    pub fn at(self: Column, i: u32) ?[]const u8 {
        if (self.present[i] == 0) return null;
        const begin = if (i == 0) 0 else self.end(i - 1);
        return self.data[begin..self.end(i)];
    }
};
