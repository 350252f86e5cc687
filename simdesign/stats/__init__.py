"""Pure statistics: pairwise contrasts, reliability, annotation time (no model fitting, no simulation)."""
