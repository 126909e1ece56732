"""Kernels: the ckernel ABI, compile (cached in memory and on disk) -> bind (arrmeta -> kernel data, bounds checked) -> execute.

Imports every stage up to the backend; never the runtime.
"""
