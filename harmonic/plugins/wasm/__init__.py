"""WebAssembly guest plugins: a sandboxed host (wasmtime) for plugins written in any language.

``plugin`` holds the plugin and its config template, ``args`` its args, ``guest`` loading and limits,
``host`` the batched ABI's host functions (``node_fields`` the whole Node), ``abi`` the ABIs' names and
layouts (specified in ``docs/wasm.md``), ``output`` the guest's stdout/stderr. Guests written for
kube-scheduler-wasm-extension run through ``upstream_plugin`` and ``upstream_host``, with pods and
nodes encoded by ``proto``.
"""

from harmonic.plugins.wasm.args import WasmPluginArgs
from harmonic.plugins.wasm.plugin import TEMPLATE, WasmPlugin

__all__ = ["TEMPLATE", "WasmPlugin", "WasmPluginArgs"]
