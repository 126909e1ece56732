"""Optimization passes: small pure graph -> graph functions, run in the order runtime.PASSES lists."""
