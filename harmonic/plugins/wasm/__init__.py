"""WebAssembly guest plugins: a sandboxed host (wasmtime) for plugins written in any language.

``plugin`` holds the plugin and its config template, ``args`` its args, ``guest`` loading and limits,
``host`` the host functions, ``abi`` the ABI's names and layouts (specified in ``docs/wasm.md``).
"""

from harmonic.plugins.wasm.args import WasmPluginArgs
from harmonic.plugins.wasm.plugin import TEMPLATE, WasmPlugin

__all__ = ["TEMPLATE", "WasmPlugin", "WasmPluginArgs"]
