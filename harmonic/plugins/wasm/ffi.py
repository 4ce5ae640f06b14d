"""The two hot crossings of the guest boundary, through wasmtime's C API directly.

wasmtime-py's ``Func.__call__`` and host-function trampoline rebuild types and box every value on each
call, which is most of the cost of a cheap guest call. Guest exports take no parameters and host
functions take and return only i32/i64, so both crossings can use raw values instead. This leans on
``wasmtime._ffi`` (the package's own ctypes bindings), which is why wasmtime is pinned to one version.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import wasmtime
import wasmtime._func as wfunc
from wasmtime import _ffi as wffi


def invoke(store: wasmtime.Store, func: wasmtime.Func, result: str | None) -> int | None:
    """Call a parameterless export; ``result`` is its result type ("i32", "i64") or ``None``."""
    results = (wffi.wasmtime_val_t * 1)()
    with wfunc.enter_wasm(store) as trap:
        err = wffi.wasmtime_func_call(
            store._context(), ctypes.byref(func._func), None, 0, results, 1 if result else 0, trap
        )
        if err:
            raise wasmtime.WasmtimeError._from_ptr(err)
    if result is None:
        return None
    of = results[0].of
    return int(of.i32 if result == "i32" else of.i64)


_NO_FINALIZER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _env: None)


def define(
    linker: wasmtime.Linker,
    module: str,
    name: str,
    params: list[str],
    results: list[str],
    f: Callable[..., Any],
    keep: list[Any],
) -> None:
    """Define host function ``module.name`` calling ``f`` with i32 parameters as unsigned ints (they
    are pointers and lengths) and i64 as signed. An exception in ``f`` traps the guest and is raised
    again from the export call, as wasmtime-py does. ``keep`` holds the callback alive."""
    unsigned = [p == "i32" for p in params]
    ret = results[0] if results else None

    def callback(env: Any, caller: Any, vals: Any, n: int) -> int:
        try:
            args = [vals[i].i32 & 0xFFFFFFFF if u else vals[i].i64 for i, u in enumerate(unsigned)]
            r = f(*args)
            if ret == "i32":
                vals[0].i32 = r
            elif ret == "i64":
                vals[0].i64 = r
            return 0
        except BaseException as e:
            wfunc.LAST_EXCEPTION = e  # type: ignore[assignment]
            trap = wasmtime.Trap("host function failed")._consume()
            return ctypes.cast(trap, ctypes.c_void_p).value or 0

    cb = wffi.wasmtime_func_unchecked_callback_t(callback)
    keep.append(cb)
    kinds = {"i32": wasmtime.ValType.i32, "i64": wasmtime.ValType.i64}
    ty = wasmtime.FuncType([kinds[p]() for p in params], [kinds[r]() for r in results])
    m, nm = module.encode(), name.encode()
    err = wffi.wasmtime_linker_define_func_unchecked(
        linker.ptr(), m, len(m), nm, len(nm), ty.ptr(), cb, None, _NO_FINALIZER
    )
    if err:
        raise wasmtime.WasmtimeError._from_ptr(err)
