"""Solvers shared by several families (pure algorithms over explicit state)."""
