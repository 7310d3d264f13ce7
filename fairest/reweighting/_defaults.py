"""Defaults of the reweighting family (badr spec sections 2 and 6)."""

ALPHA = 1e-3  # badr spec section 2: default l2_reg of every model
NEWTON_TOL = 1e-10  # badr spec section 2: relative inner tolerance
NEWTON_MAX_ITER = 100  # spec caps at 50 inside BADR's loop; a standalone fit may take more
