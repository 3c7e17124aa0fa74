"""Tests of the compiled engine, one module per stage of silva/engine/.

Compiled kernels whose signatures are still moving (the growers, the split searches,
the node tables) are called only through :mod:`tests.engine._kernels`.
"""
